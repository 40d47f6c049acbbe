#!/usr/bin/env python3
"""Runs nkic over a local checkout of AWS's nki-library (issue 13 item 6).

    python3 tools/nkilib_corpus.py PATH/TO/nki-library [--nkic target/debug/nkic] [-v]

For each case below (a library kernel with argument shapes, dtypes and
compile-time arguments written for this project from the parameter sets of
the library's published integration tests, `test/integration/nkilib/...`),
it runs `nkic check` (specialize), then `nkic run` (compile and simulate),
and, when NumPy is importable and the case has a reference, compares the
outputs with it. It prints one line per case and the counts
`specialize/run/match out of N`. Nothing of the library is copied or
vendored: the path is given on the command line. Not run by CI.
"""

import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time

SRC = "src/nkilib_src"

# name, kernel file (under src/nkilib_src), kernel function, args, consts,
# grid, target, reference (a function of the inputs dict -> list of outputs,
# or None).
CASES = [
    dict(name="cumsum_1x256_f32", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[1,256]"], ref="cumsum"),
    dict(name="cumsum_64x4x1024_bf16", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=bfloat16[64,4,1024]"], ref="cumsum", tol=(1e-2, 1e-3)),
    dict(name="cumsum_128x2048_f32", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[128,2048]"], ref="cumsum"),
    dict(name="rope_64_1_1_16", file="nkilib/core/embeddings/rope.py", kernel="RoPE",
         args=["x_in=float32[64,1,1,16]", "cos=float32[32,1,16]", "sin=float32[32,1,16]"]),
    dict(name="rope_128_8_8_128", file="nkilib/core/embeddings/rope.py", kernel="RoPE",
         args=["x_in=bfloat16[128,8,8,128]", "cos=bfloat16[64,8,128]", "sin=bfloat16[64,8,128]"]),
    dict(name="rmsnorm_quant_row_lnc2", file="nkilib/core/rmsnorm/rmsnorm_quant.py",
         kernel="rmsnorm_quant_kernel",
         args=["hidden=bfloat16[1,2,16384]", "ln_w=bfloat16[1,16384]"],
         consts=["kargs=nkilib.core.rmsnorm.rmsnorm_quant.RmsNormQuantKernelArgs("
                 "quantization_type=nkilib.core.utils.common_types.QuantizationType.ROW, "
                 "lower_bound=0.0, norm_type=nkilib.core.utils.common_types.NormType.RMS_NORM, eps=1e-6)"],
         grid="2", target="trn2"),
    dict(name="rmsnorm_quant_only_lnc2", file="nkilib/core/rmsnorm/rmsnorm_quant.py",
         kernel="rmsnorm_quant_kernel",
         args=["hidden=bfloat16[1,2,16384]", "ln_w=bfloat16[1,16384]"],
         consts=["kargs=nkilib.core.rmsnorm.rmsnorm_quant.RmsNormQuantKernelArgs("
                 "quantization_type=nkilib.core.utils.common_types.QuantizationType.ROW, "
                 "lower_bound=0.5, norm_type=nkilib.core.utils.common_types.NormType.NO_NORM, eps=1e-6)"],
         grid="2", target="trn2"),
    dict(name="cascaded_max_1x1x32000", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[1,1,32000]"], target="trn2", ref="max_last"),
    # core/max/test_cascaded_max.py: (lnc, batch, seqlen, vocab).
    dict(name="cascaded_max_8x5x4058", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[8,5,4058]"], target="trn2", ref="max_last"),
    dict(name="cascaded_max_8x5x4058_lnc2", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[8,5,4058]"], grid="2", target="trn2",
         ref="max_last"),
    dict(name="cascaded_max_5x5x8192_lnc2", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[5,5,8192]"], grid="2", target="trn2",
         ref="max_last"),
    dict(name="cascaded_max_1x1x16000_lnc2", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[1,1,16000]"], grid="2", target="trn2",
         ref="max_last"),
    dict(name="cross_entropy_fwd_lnc2", file="nkilib/experimental/loss/cross_entropy.py",
         kernel="cross_entropy_forward",
         args=["logits_hbm=bfloat16[64,32768]", "targets_hbm=int32[64]"],
         grid="2", target="trn2", inputs={"targets_hbm": ("randint", 0, 32768)}, ref="cross_entropy",
         tol=(1e-2, 1e-2)),
    dict(name="conv1d_small", file="nkilib/experimental/conv/conv1d.py", kernel="conv1d",
         args=["x_in=bfloat16[1,128,256]", "filters=bfloat16[128,128,3]"],
         consts=["padding=(1, 1)"]),
    # test/integration/nkilib/core/subkernels/test_find_nonzero_indices.py
    # (T, E, top_k, chunk_size, dtype) at LNC=2.
    dict(name="find_nonzero_4096x128_i32", file="nkilib/core/subkernels/find_nonzero_indices.py",
         kernel="find_nonzero_indices", args=["input_tensor=int32[4096,128]"],
         consts=["chunk_size=4096"], grid="2", target="trn2", inputs={"input_tensor": ("sparse", 1 / 16)},
         ref="find_nonzero:0:", tol=(0, 0)),
    dict(name="find_nonzero_10240x128_f32", file="nkilib/core/subkernels/find_nonzero_indices.py",
         kernel="find_nonzero_indices", args=["input_tensor=float32[10240,128]"],
         consts=["chunk_size=10240"], grid="2", target="trn2", inputs={"input_tensor": ("sparse", 1 / 16)},
         ref="find_nonzero:0:", tol=(0, 0)),
    # test_indexed_flatten.py: (T, E, f_len), output_len = E*T + 1024
    # rounded up to 128.
    dict(name="indexed_flatten_4096_2_128", file="nkilib/core/subkernels/indexed_flatten.py",
         kernel="indexed_flatten", args=["input_tensor=int32[2,4096]", "row_offsets=int32[2]"],
         consts=["f_len=128", "output_len=9216"], grid="2", target="trn2"),
    # experimental/benchmark/test_find_nonzero_indices_with_count.py (T).
    dict(name="find_nonzero_count_256", file="nkilib/experimental/benchmark/find_nonzero_indices_with_count.py",
         kernel="find_nonzero_indices_with_count", args=["input_tensor=float32[1,256]"], target="trn2"),
    # experimental/conv/test_depthwise_conv1d.py: (batch, channels, width,
    # kernel_size, stride, padding).
    dict(name="depthwise_conv1d_16x512_k64", file="nkilib/experimental/conv/depthwise_conv1d.py",
         kernel="depthwise_conv1d_implicit_gemm",
         args=["img_ref=bfloat16[1,16,1,512]", "filter_ref=bfloat16[16,1,1,64]"],
         consts=["feature_group_count=16"], target="trn2", ref="dwconv:1:0", tol=(2.0 ** -8, 0.0)),
    dict(name="depthwise_conv1d_256_pad10", file="nkilib/experimental/conv/depthwise_conv1d.py",
         kernel="depthwise_conv1d_implicit_gemm",
         args=["img_ref=bfloat16[1,256,1,512]", "filter_ref=bfloat16[256,1,1,64]"],
         consts=["feature_group_count=256", "padding=((0, 0), (10, 10))"], target="trn2", ref="dwconv:1:10", tol=(2.0 ** -8, 0.0)),
    dict(name="depthwise_conv1d_256_stride2", file="nkilib/experimental/conv/depthwise_conv1d.py",
         kernel="depthwise_conv1d_implicit_gemm",
         args=["img_ref=bfloat16[1,256,1,512]", "filter_ref=bfloat16[256,1,1,64]"],
         consts=["feature_group_count=256", "stride=(1, 2)"], target="trn2", ref="dwconv:2:0", tol=(2.0 ** -8, 0.0)),
    # core/embeddings/test_rope_hf.py: (batch, q heads, kv heads, seq,
    # head_dim, dtype, backward), q_out/k_out passed in by the caller.
    dict(name="rope_hf_lnc2_bf16", file="nkilib/core/embeddings/rope_hf.py", kernel="rope_hf",
         args=["q=bfloat16[1,32,256,128]", "k=bfloat16[1,8,256,128]", "q_out=bfloat16[1,32,256,128]",
               "k_out=bfloat16[1,8,256,128]", "cos=bfloat16[1,256,128]", "sin=bfloat16[1,256,128]"],
         grid="2", target="trn2", ref="rope_hf:False", tol=(1e-6, 1e-6)),
    dict(name="rope_hf_lnc2_f32_bwd", file="nkilib/core/embeddings/rope_hf.py", kernel="rope_hf",
         args=["q=float32[1,32,256,128]", "k=float32[1,8,256,128]", "q_out=float32[1,32,256,128]",
               "k_out=float32[1,8,256,128]", "cos=float32[1,256,128]", "sin=float32[1,256,128]"],
         consts=["backward=True"], grid="2", target="trn2", ref="rope_hf:True", tol=(1e-6, 1e-6)),
    dict(name="rope_hf_b4_gpt_f32", file="nkilib/core/embeddings/rope_hf.py", kernel="rope_hf",
         args=["q=float32[1,32,512,64]", "k=float32[1,8,512,64]", "q_out=float32[1,32,512,64]",
               "k_out=float32[1,8,512,64]", "cos=float32[1,512,64]", "sin=float32[1,512,64]"],
         grid="2", target="trn2", ref="rope_hf:False", tol=(1e-6, 1e-6)),
    # core/output_projection/test_output_proj_tkg.py: (B, n_heads, S_tkg,
    # d_head, H, quantization, bias, transpose_out); attention is
    # [d_head, B, n_heads, S_tkg].
    dict(name="out_proj_tkg_4_8_4_64", file="nkilib/core/output_projection/output_projection_tkg.py",
         kernel="output_projection_tkg", args=["attention=bfloat16[64,4,8,4]", "weight=bfloat16[512,3072]",
                                               "bias=bfloat16[1,3072]"],
         grid="2", target="trn2"),
    dict(name="out_proj_tkg_transpose_out", file="nkilib/core/output_projection/output_projection_tkg.py",
         kernel="output_projection_tkg", args=["attention=bfloat16[64,4,8,4]", "weight=bfloat16[512,3072]",
                                               "bias=bfloat16[1,3072]"],
         consts=["TRANSPOSE_OUT=True"], grid="2", target="trn2"),
    # core/output_projection/test_output_proj_cte.py: (batch, seqlen,
    # hidden, n_head, d_head, bias); attention is [batch, n_head, d_head,
    # seqlen].
    dict(name="out_proj_cte_128_3072", file="nkilib/core/output_projection/output_projection_cte/output_projection_cte.py",
         kernel="output_projection_cte", args=["attention=bfloat16[1,16,64,128]", "weight=bfloat16[1024,3072]",
                                               "bias=bfloat16[1,3072]"],
         grid="2", target="trn2"),
    # experimental/dynamic_shapes/test_dynamic_elementwise_add.py (M, H);
    # ends with the LNC "HBM fence" `dma_copy(dst=result, src=result)`.
    dict(name="dynamic_add_256x1024_lnc2", file="nkilib/experimental/dynamic_shapes/dynamic_elementwise_add.py",
         kernel="dynamic_elementwise_add",
         args=["input_a=bfloat16[256,1024]", "input_b=bfloat16[256,1024]", "num_m_tiles=int32[1,1]"],
         grid="2", target="trn2"),
    # experimental/loss/test_cross_entropy_backward.py (B, T, V, dtype, PB,
    # CS): the minimal case splits one position over two cores (an empty
    # `nl.ds` on one of them).
    dict(name="cross_entropy_bwd_1x1", file="nkilib/experimental/loss/cross_entropy.py",
         kernel="cross_entropy_backward",
         args=["logits_hbm=bfloat16[1,32128]", "targets_hbm=int32[1]", "lse_state_hbm=bfloat16[1]"],
         consts=["positions_per_batch=1", "chunk_size=16384"], grid="2", target="trn2"),
    # core/attention/test_attention_cte.py at a reduced length (the tests'
    # 9216 x 4096 is slow to simulate): q [bs, seq_q, d] (tp_q), k [bs, d,
    # seq_kv], v [bs, seq_kv, d].
    dict(name="attention_cte_1024_d64", file="nkilib/core/attention/attention_cte.py",
         kernel="attention_cte", args=["q=bfloat16[1,1024,64]", "k=bfloat16[1,64,1024]", "v=bfloat16[1,1024,64]"],
         consts=["scale=0.134"], target="trn2"),
    # core/attention/test_attention_bwd.py (bs, q heads, kv heads, seq,
    # head_dim, causal) at a reduced length: q/k/v/o/dy [bs, heads, d, seq],
    # lse [bs, heads, 128, seq / 128].
    dict(name="attention_bwd_2_1_512", file="nkilib/core/attention/attention_bwd.py",
         kernel="attention_bwd",
         args=["q_ref=bfloat16[1,2,128,512]", "k_ref=bfloat16[1,1,128,512]", "v_ref=bfloat16[1,1,128,512]",
               "o_ref=bfloat16[1,2,128,512]", "dy_ref=bfloat16[1,2,128,512]", "lse_ref=float32[1,2,128,4]"],
         consts=["use_causal_mask=True"], grid="2", target="trn2"),
    # core/qkv/test_qkv_cte.py: (vnc, batch, seqlen, hidden, fused_qkv_dim,
    # norm, ...); input [batch, seqlen, hidden], weights [hidden, qkv_dim].
    dict(name="qkv_cte_128x3072_bias", file="nkilib/core/qkv/qkv.py", kernel="qkv",
         args=["input=bfloat16[1,128,3072]", "fused_qkv_weights=bfloat16[3072,1280]", "bias=bfloat16[1,1280]"],
         target="trn2"),
    dict(name="qkv_cte_1024x3072_lnc2", file="nkilib/core/qkv/qkv.py", kernel="qkv",
         args=["input=bfloat16[1,1024,3072]", "fused_qkv_weights=bfloat16[3072,1280]", "bias=bfloat16[1,1280]"],
         grid="2", target="trn2"),
    dict(name="qkv_cte_rmsnorm_512", file="nkilib/core/qkv/qkv.py", kernel="qkv",
         args=["input=bfloat16[1,128,512]", "fused_qkv_weights=bfloat16[512,512]",
               "gamma_norm_weights=bfloat16[1,512]"],
         consts=["fused_norm_type=nkilib.core.utils.common_types.NormType.RMS_NORM"], target="trn2"),
    # experimental/mxfp_subkernels/test_mxfp_load.py: M = 128, K from 1024
    # to 4096 (MX formats are trn3's).
    dict(name="mxfp_load_128x1024", file="nkilib/experimental/mxfp_subkernels/mxfp_load_utils.py",
         kernel="mxfp_load_performance_wrapper", args=["tensor=bfloat16[128,1024]"], target="trn3"),
    dict(name="mxfp_load_128x4096", file="nkilib/experimental/mxfp_subkernels/mxfp_load_utils.py",
         kernel="mxfp_load_performance_wrapper", args=["tensor=bfloat16[128,4096]"], target="trn3"),
]

# core/moe/moe_tkg/test_moe_tkg.py: (vnc, tokens, hidden, intermediate,
# expert, top_k, act_fn, scale_mode, all_expert, q_dtype, q_type, dtype,
# clamp, bias); weights [E, H, 2, I] and [E, I, H], affinities [T, E]
# (bfloat16 all-expert, float32 selective), the clamp limits 7 / 8 / -6.
CT = "nkilib.core.utils.common_types"
CLAMP = ["gate_clamp_upper_limit=7.0", "up_clamp_upper_limit=8.0", "up_clamp_lower_limit=-6.0"]


def moe_tkg_case(name, t, h, i, e, k, act, all_expert, dtype="float16", bias=True, clamp=True,
                 scale="POST_SCALE", quant=None, mx=None):
    """A moe_tkg case with the library's tests' tensor shapes."""
    kk = e if k is None else k
    wdt = quant or dtype
    args = [f"hidden_input={dtype}[{t},{h}]"]
    if mx:
        ip = -(-i // 32) * 8 if i < 512 else 128
        nh, ni = h // 512, -(-i // 512)
        args += [f"expert_gate_up_weights={mx}[{e},128,2,{nh},{i}]",
                 f"expert_down_weights={mx}[{e},{ip},{ni},{h}]"]
    else:
        args += [f"expert_gate_up_weights={wdt}[{e},{h},2,{i}]", f"expert_down_weights={wdt}[{e},{i},{h}]"]
    args += [f"expert_affinities={'bfloat16' if all_expert else 'float32'}[{t},{e}]",
             f"expert_index=int32[{t},{kk}]"]
    if all_expert and scale != "NO_SCALE":
        args.append("rank_id=uint32[1,1]")
    if bias:
        if mx:
            args.append(f"expert_gate_up_bias={dtype}[{e},{ip},2,{ni},4]")
        else:
            args.append(f"expert_gate_up_bias={dtype}[{e},2,{i}]")
        args.append(f"expert_down_bias={dtype}[{e},{h}]")
    if mx:
        args += [f"expert_gate_up_weights_scale=uint8[{e},16,2,{nh},{i}]",
                 f"expert_down_weights_scale=uint8[{e},{-(-ip // 8)},{ni},{h}]"]
    elif quant:
        args += [f"expert_gate_up_weights_scale=float32[{e},2,{i}]", f"expert_down_weights_scale=float32[{e},{h}]"]
    consts = [f"is_all_expert={all_expert}", f"expert_affinities_scaling_mode={CT}.ExpertAffinityScaleMode.{scale}",
              f"activation_fn={CT}.ActFnType.{act}"] + (CLAMP if clamp else [])
    inputs = {"expert_index": ("topk", e), "expert_affinities": ("affinities_of", "expert_index")}
    if all_expert and scale != "NO_SCALE":
        inputs["rank_id"] = ("const", 0)
    case = dict(name=name, file="nkilib/core/moe/moe_tkg/moe_tkg.py", kernel="moe_tkg", args=args,
                consts=consts, grid="2", target="trn3" if mx else "trn2", inputs=inputs)
    if not mx:
        case |= dict(ref=f"moe_tkg:{all_expert}:{scale}:{act}:{clamp}", tol=(5e-2 if quant else 2e-2, 1e-5))
    return case


CASES += [
    moe_tkg_case("moe_tkg_all_4x3072_i64_e4", 4, 3072, 64, 4, None, "Swish", True),
    moe_tkg_case("moe_tkg_all_32x3072_noscale", 32, 3072, 512, 1, None, "SiLU", True, bias=False,
                 scale="NO_SCALE"),
    moe_tkg_case("moe_tkg_all_300x256_e2", 300, 256, 128, 2, None, "SiLU", True, bias=False),
    moe_tkg_case("moe_tkg_sel_4x512_e2_k1", 4, 512, 128, 2, 1, "Swish", False),
    moe_tkg_case("moe_tkg_sel_5x512_e4_k2", 5, 512, 128, 4, 2, "Swish", False),
    moe_tkg_case("moe_tkg_sel_4x3072_e128_k4", 4, 3072, 192, 128, 4, "Swish", False),
    moe_tkg_case("moe_tkg_fp8row_all_4x512", 4, 512, 64, 2, None, "SiLU", True, quant="float8_e4m3"),
    moe_tkg_case("moe_tkg_fp8row_sel_4x512", 4, 512, 64, 4, 2, "Swish", False, quant="float8_e4m3"),
    moe_tkg_case("moe_tkg_mxfp4_all_32x3072", 32, 3072, 3072, 1, None, "Swish", True, dtype="bfloat16",
                 mx="float4_e2m1fn_x4"),
    moe_tkg_case("moe_tkg_mxfp4_all_128x3072_i192", 128, 3072, 192, 1, None, "Swish", True, dtype="bfloat16",
                 mx="float4_e2m1fn_x4"),
    moe_tkg_case("moe_tkg_mxfp4_sel_4x3072_e128", 4, 3072, 192, 128, 4, "Swish", False, dtype="bfloat16",
                 mx="float4_e2m1fn_x4"),
]


# The largest finite float8_e4m3 value: the tests' fp8 quantization
# divides by a scale of amax / FP8_MAX or clips to +-FP8_MAX.
FP8_MAX = 240.0


def fp8_static(np, x, scale):
    """Static fp8 quantization as the tests' references do it: `x` over
    its scale, clipped to +-FP8_MAX (not yet rounded to fp8)."""
    return np.clip(x / scale, -FP8_MAX, FP8_MAX)


def sigmoid(np, x):
    """1 / (1 + exp(-x)), written with tanh so that no exp overflows."""
    return 0.5 * (1 + np.tanh(0.5 * x))


def reference(name, inputs):
    """The expected outputs of reference `name` for `inputs` (NumPy)."""
    import numpy as np

    if name.startswith("mlp:"):
        # core/mlp's tests (norm_mlp_ref): the hidden states (+ the
        # fused-add tensor), normalized (RMS: x / sqrt(mean(x^2) + eps);
        # LayerNorm with its bias; eps 1e-6) times gamma, then act(x Wg +
        # bg) * (x Wu + bu), or act(x Wu + bu) without the gate, times Wd
        # (+ bd). Outputs: that, and the sum when it is stored.
        import math

        norm, act = name.split(":")[1:3]
        f = lambda n: inputs[n].astype(np.float64) if n in inputs else None  # noqa: E731
        x = f("hidden_tensor") + (f("fused_add_tensor") if "fused_add_tensor" in inputs else 0)
        summed = x
        if norm == "RMS_NORM":
            x = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        elif norm == "LAYER_NORM":
            x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-6)
        if norm != "NO_NORM":
            x = x * f("normalization_weights_tensor").reshape(-1)
        if "normalization_bias_tensor" in inputs:
            x = x + f("normalization_bias_tensor").reshape(-1)
        erf = np.frompyfunc(math.erf, 1, 1)
        fn = {"SiLU": lambda v: v * sigmoid(np, v),
              "GELU": lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2)).astype(np.float64))}[act]
        bias = lambda n: f(n).reshape(-1) if n in inputs else 0  # noqa: E731
        up = x @ f("up_proj_weights_tensor") + bias("up_proj_bias_tensor")
        if "skip_gate" in name:
            mid = fn(up)
        else:
            mid = fn(x @ f("gate_proj_weights_tensor") + bias("gate_proj_bias_tensor")) * up
        out = mid @ f("down_proj_weights_tensor") + bias("down_proj_bias_tensor")
        return [out, summed] if "store" in name else [out]
    if name.startswith("rmsnorm_quant:"):
        # core/rmsnorm/test_rmsnorm_quant.py's semantics: RMSNorm times
        # the weight (none with quant_only), then per row (ROW) the
        # largest magnitude (capped at lower_bound, the values clipped to
        # it, when it is positive) over 240 is the dequantization scale and
        # the values are divided by it, or (STATIC) divided by the input's
        # dequantization scale and clipped to +-240; the values rounded to
        # float8_e4m3.
        import ml_dtypes

        _, qtype, lb, quant_only = name.split(":")
        lb = float(lb)
        x = inputs["hidden"].astype(np.float64)
        norm = x
        if quant_only != "True":
            norm = x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + 1e-6)
            norm = norm * inputs["ln_w"].astype(np.float64).reshape(-1)
        fp8 = lambda v: v.astype(ml_dtypes.float8_e4m3).astype(np.float64)  # noqa: E731
        if qtype == "STATIC":
            return [fp8(fp8_static(np, norm, float(inputs["input_dequant_scale"][0, 0])))]
        amax = np.abs(norm).max(axis=-1, keepdims=True)
        if lb > 0:
            amax, norm = np.minimum(amax, lb), np.clip(norm, -lb, lb)
        scale = (amax / FP8_MAX).astype(np.float32).astype(np.float64)
        return [fp8(norm / (amax / FP8_MAX)), scale]
    if name.startswith("bwmm:"):
        # Blockwise MoE matmul (experimental/moe/test_bwmm_shard_on_H.py,
        # core/moe/moe_cte's tests; "bwmm:B:MODE[:cores]"): per block, its tokens' hidden rows
        # (scaled by their affinity to the block's expert first with
        # PRE_SCALE) through the expert's gate and up projections,
        # SiLU(gate) * up through its down projection (scaled by the
        # affinity after with POST_SCALE), rounded to bf16 and added into
        # the tokens' output rows; -1 places are skipped, and the padding
        # token's zero row adds nothing.
        import ml_dtypes

        _, b, mode, *separate = name.split(":")
        x = inputs["hidden_states"].astype(np.float64)
        gate_up = inputs["gate_up_proj_weight"].astype(np.float64)
        down = inputs["down_proj_weight"].astype(np.float64)
        e, i = gate_up.shape[0], gate_up.shape[-1]
        affinity = inputs["expert_affinities_masked"].astype(np.float64).reshape(-1, e)
        out = np.zeros(x.shape)
        blocks = inputs["token_position_to_id"].reshape(-1, int(b))
        for ids, expert in zip(blocks, inputs["block_to_expert"].reshape(-1)):
            ids = ids[ids >= 0]
            h, a = x[ids], affinity[ids, expert][:, None]
            if mode == "PRE_SCALE":
                h = h * a
            gate, up = h @ gate_up[expert, :, 0, :], h @ gate_up[expert, :, 1, :]
            y = (gate * sigmoid(np, gate) * up) @ down[expert, :i, :]
            if mode == "POST_SCALE":
                y = y * a
            np.add.at(out, ids, y.astype(ml_dtypes.bfloat16).astype(np.float64))
        if separate:
            # shard_on_block with top_k > 1: [T+1, cores, H], the tests'
            # sums in core 0's slot and zeros in the others.
            return [np.stack([out] + [np.zeros_like(out)] * (int(separate[0]) - 1), axis=1)]
        return [out]
    if name.startswith("attn_tkg:"):
        # attention_tkg with use_pos_id and fuse_rope, as
        # core/attention/test_attention_tkg.py checks it: q and the active
        # keys rotated (RoPE with the halves swapped) by inv_freqs times
        # their position ids, q scaled by 1/sqrt(d); the active keys and
        # values take the last s_active of the first `cur` prior places;
        # prior place k is visible below its batch row's position id, the
        # active keys as the mask input says; softmax over the places.
        # Outputs: [B, H, d, s_active] and the rotated keys [B, 1, d,
        # s_active].
        _, cur, tp = name.split(":")
        cur, tp = int(cur), tp == "True"
        q, ka, va, kp, vp, inv, pos = (inputs[n].astype(np.float64) for n in (
            "q", "k_active", "v_active", "k_prior", "v_prior", "inv_freqs", "rope_pos_ids"))
        b, h, s, d = q.shape
        angle = inv[None, None, :, 0] * pos[:, :, None]
        angle = np.concatenate([angle, angle], axis=-1)[:, None]

        def rope(x):
            turned = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
            return x * np.cos(angle) + turned * np.sin(angle)

        q = rope(q) / np.sqrt(d)
        k_rot = rope(ka)
        keys = (kp[:, 0, :cur, :] if tp else kp[:, 0, :, :cur].transpose(0, 2, 1)).copy()
        values = vp[:, 0, :cur, :].copy()
        keys[:, cur - s:], values[:, cur - s:] = k_rot[:, 0], va[:, 0]
        score = np.einsum("bkd,bhid->bhki", keys, q)
        visible = np.broadcast_to((np.arange(cur)[None, :] < pos[:, :1])[:, None, :, None], score.shape).copy()
        visible[:, :, cur - s:, :] = inputs["mask"].transpose(1, 2, 0, 3) != 0
        score = np.where(visible, score, -np.inf)
        p = np.exp(score - score.max(axis=2, keepdims=True))
        p /= p.sum(axis=2, keepdims=True)
        return [np.einsum("bhki,bkd->bhdi", p, values), k_rot.transpose(0, 1, 3, 2)]
    if name == "cumsum":
        x = inputs["x"].astype(np.float64)
        return [np.cumsum(x, axis=-1)]
    if name == "max_last":
        # cascaded_max: the maximum of the last dim and its index, both
        # [..., 1] (random normal inputs have no ties).
        x = inputs["input_tensor"]
        return [x.max(axis=-1, keepdims=True).astype(np.float64),
                x.argmax(axis=-1)[..., None].astype(np.float64)]
    if name == "gather8":
        x = inputs["inp"].astype(np.float64)
        return [np.concatenate([x] * 8, axis=1)]
    if name == "topk_reduce":
        # Row r of the buffer holds H values and, in its last two 16-bit
        # columns, the int32 token id it belongs to (-1: padding); the
        # output row t sums the rows of token t.
        buf = inputs["input"]
        ids = np.ascontiguousarray(buf[:, -2:]).view(np.int32)[:, 0]
        vals = buf[:, :-2].astype(np.float64)
        t = int(ids.max()) + 1
        return [np.stack([vals[ids == i].sum(axis=0) for i in range(t)])]
    if name == "cross_entropy":
        # cross_entropy_forward: per position, the loss (log-sum-exp of the
        # row less the target's logit) and the log-sum-exp itself.
        # In blocks of rows, so that the float64 copy stays small.
        logits, targets = inputs["logits_hbm"], inputs["targets_hbm"]
        lse = np.empty(logits.shape[0])
        for r0 in range(0, logits.shape[0], 256):
            x = logits[r0: r0 + 256].astype(np.float64)
            m = x.max(axis=1)
            lse[r0: r0 + 256] = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
        return [lse - logits[np.arange(logits.shape[0]), targets].astype(np.float64), lse]
    if name.startswith("topk:"):
        # rotational_topk with sorted=True: per row, the k largest values
        # in descending order and their column indices (random normal
        # inputs have no ties), as torch.topk gives them.
        k = int(name.split(":")[1])
        x = inputs["inp"]
        idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return [np.take_along_axis(x, idx, axis=-1).astype(np.float64), idx.astype(np.float64)]
    if name.startswith(("rmsnorm:", "layernorm:")):
        # rmsnorm_tkg / layernorm_tkg (eps 1e-6) in float64, laid out as
        # the tests' references lay it out: [128, B*S, H/128].
        kind, layout, actual = name.split(":")
        x = inputs["input"].astype(np.float64)
        x = x.reshape(-1, x.shape[-1])
        gamma = inputs["gamma"].astype(np.float64)
        if kind == "rmsnorm":
            # With a padded hidden dim, the sum of squares over all of it
            # divided by the actual size.
            n = int(actual) if actual else x.shape[1]
            r = x / np.sqrt((x * x).sum(axis=1, keepdims=True) / n + 1e-6) * gamma
        else:
            mean = x.mean(axis=1, keepdims=True)
            r = (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-6) * gamma
            r = r + inputs["beta"].astype(np.float64)
        t, h = r.shape
        if layout == "tp":
            return [r.reshape(t, h // 128, 128).transpose(2, 0, 1)]
        if layout == "lnc2":
            halves = [half.reshape(t, 128, h // 256).transpose(1, 0, 2) for half in (r[:, : h // 2], r[:, h // 2:])]
            return [np.concatenate(halves, axis=2)]
        return [r.reshape(t, 128, h // 128).transpose(1, 0, 2)]
    if name.startswith("rope:"):
        # RoPE on x [d, B, heads, S] with cos, sin [d/2, B, S]: each pair
        # (x_r, x_i) rotated by its angle; a pair is rows (k, k + d/2)
        # in the contiguous layout, rows (2k, 2k + 1) otherwise.
        x = inputs["x_in"].astype(np.float64)
        cos = inputs["cos"].astype(np.float64)[:, :, None, :]
        sin = inputs["sin"].astype(np.float64)[:, :, None, :]
        half = x.shape[0] // 2
        contiguous = name.split(":")[1] == "True"
        xr, xi = (x[:half], x[half:]) if contiguous else (x[0::2], x[1::2])
        out_r, out_i = xr * cos - xi * sin, xr * sin + xi * cos
        if contiguous:
            return [np.concatenate([out_r, out_i])]
        out = np.empty_like(x)
        out[0::2], out[1::2] = out_r, out_i
        return [out]
    if name.startswith("conv1d:"):
        # conv1d: x [B, Ci, L] zero-padded, filters [K, Ci, Co], optional
        # bias [Co]; out [B, Co, L_out], then SiLU or (erf) GELU.
        stride, pl, pr, dil = (int(v) for v in name.split(":")[1:5])
        act = name.split(":")[5]
        x = np.pad(inputs["x_in"].astype(np.float64), ((0, 0), (0, 0), (pl, pr)))
        w = inputs["filters"].astype(np.float64)
        k = w.shape[0]
        l_out = (x.shape[2] - dil * (k - 1) - 1) // stride + 1
        out = sum(np.einsum("bcl,co->bol", x[:, :, j * dil: j * dil + (l_out - 1) * stride + 1: stride], w[j])
                  for j in range(k))
        if "bias" in inputs:
            out = out + inputs["bias"].astype(np.float64)[None, :, None]
        if act == "SiLU":
            out = out * sigmoid(np, out)
        elif act == "GELU":
            from scipy.special import erf
            out = 0.5 * out * (1 + erf(out / np.sqrt(2)))
        return [out]
    if name.startswith("find_nonzero:"):
        # Per column (n_cols of them from col_start_id, or all): the rows
        # of its nonzero elements in order, padded with -1, and their count.
        start, n = name.split(":")[1:]
        x = inputs["input_tensor"]
        cols = x[:, int(start): int(start) + int(n)] if n else x
        t = x.shape[0]
        indices = np.full((cols.shape[1], t), -1.0)
        counts = np.zeros(cols.shape[1])
        for c in range(cols.shape[1]):
            nz = np.flatnonzero(cols[:, c])
            indices[c, : nz.size] = nz
            counts[c] = nz.size
        return [indices, counts]
    if name.startswith("router:"):
        # router_topk: logits x.T @ w (+ bias) [T, E]; the indices of the
        # k largest per token; affinities: softmax or sigmoid of all the
        # logits (pre-norm; then, with norm_topk_prob, only the top k,
        # scaled to sum 1) or of the top k alone, scattered into [T, E].
        act, k, pre_norm, norm_prob = name.split(":")[1:]
        k = int(k)
        logits = inputs["x"].astype(np.float64).T @ inputs["w"].astype(np.float64)
        if "w_bias" in inputs:
            logits = logits + inputs["w_bias"].astype(np.float64).reshape(1, -1)
        index = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
        rows = np.arange(logits.shape[0])[:, None]

        def activate(v):
            if act == "SOFTMAX":
                e = np.exp(v - v.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            return sigmoid(np, v)

        affinities = np.zeros_like(logits)
        if pre_norm == "True":
            full = activate(logits)
            if norm_prob == "True":
                affinities[rows, index] = full[rows, index]
                affinities /= affinities.sum(axis=1, keepdims=True)
            else:
                affinities = full
        else:
            affinities[rows, index] = activate(logits[rows, index])
        return [logits, index.astype(np.float64), affinities]
    if name.startswith("dwconv:"):
        # Depthwise conv1d: img [B, C, 1, W] padded by p on both sides,
        # filter [C, 1, 1, K]; out [B, C, 1, W_out], each channel's
        # cross-correlation with its own filter at the stride.
        stride, pad = (int(v) for v in name.split(":")[1:])
        x = np.pad(inputs["img_ref"].astype(np.float64)[:, :, 0, :], ((0, 0), (0, 0), (pad, pad)))
        f = inputs["filter_ref"].astype(np.float64)[:, 0, 0, :]
        windows = np.lib.stride_tricks.sliding_window_view(x, f.shape[1], axis=2)[:, :, ::stride, :]
        return [np.einsum("bcwk,ck->bcw", windows, f)[:, :, None, :]]
    if name.startswith("out_proj_"):
        # Output projection: the heads' outputs as rows of [tokens, N*D]
        # times weight [N*D, H] (+ bias). TKG's attention is [D, B, N, S]
        # and, transposed, its output [128, lnc, H/(lnc*128), B*S]; CTE's
        # is [B, N, D, S] and its output [B, S, H].
        a = inputs["attention"].astype(np.float64)
        w = inputs["weight"].astype(np.float64)
        if name == "out_proj_cte":
            b, n, d, s = a.shape
            out = a.transpose(0, 3, 1, 2).reshape(b, s, n * d) @ w
        else:
            d, b, n, s = a.shape
            a = a.transpose(1, 3, 2, 0).reshape(b * s, n * d)
            if name.endswith(":static"):
                # fp8 static quantization, as the test's reference: the
                # input over its scale clipped to +-240, times the fp8
                # weight, times both scales.
                ws, ins = (float(inputs[n][0, 0]) for n in ("weight_scale", "input_scale"))
                out = (fp8_static(np, a, ins) @ w) * (ws * ins)
            else:
                out = a @ w
        if "bias" in inputs:
            out = out + inputs["bias"].astype(np.float64).reshape(-1)
        if name.startswith("out_proj_tkg:True"):
            h = out.shape[1]
            lnc = 2 if h % 256 == 0 else 1
            out = out.reshape(out.shape[0], lnc, 128, h // (lnc * 128)).transpose(2, 1, 3, 0)
        return [out]
    if name.startswith("qkv:"):
        # QKV projection: input (+ mlp_prev + attention_prev), normalized
        # (RMS over the actual hidden size, or LayerNorm with its bias),
        # times the fused weights (+ bias); [B, S, I], or [N, B, S, d].
        # Only the projection is compared (the token-generation path also
        # returns the residual sum, the context path does not).
        norm, actual, eps, d, *extra = name.split(":")[1:]
        extra = dict(e.split("=") for e in extra)
        x = inputs["input"].astype(np.float64)
        if "mlp_prev" in inputs:
            x = x + inputs["mlp_prev"].astype(np.float64) + inputs["attention_prev"].astype(np.float64)
        eps = float(eps)
        if norm == "RMS_NORM":
            n = int(actual) if actual else x.shape[-1]
            x = x / np.sqrt((x * x).sum(axis=-1, keepdims=True) / n + eps)
        elif norm == "LAYER_NORM":
            x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
        if norm != "NO_NORM":
            x = x * inputs["gamma_norm_weights"].astype(np.float64).reshape(-1)
        if "layer_norm_bias" in inputs:
            x = x + inputs["layer_norm_bias"].astype(np.float64).reshape(-1)
        if "static" in extra:
            # fp8 static quantization (the test's golden): the normalized
            # input over the input scale, clipped to +-240, times the fp8
            # weights, then each of the q, k and v columns times its
            # weight scale and all times the input scale (the scales'
            # first row).
            x = fp8_static(np, x, float(inputs["qkv_in_scale"][0, 0]))
        out = x @ inputs["fused_qkv_weights"].astype(np.float64)
        if "static" in extra:
            nq, nkv, dh = (int(v) for v in extra["static"].split(","))
            for part, (c0, c1) in enumerate([(0, nq), (nq, nq + nkv), (nq + nkv, nq + 2 * nkv)]):
                out[..., c0 * dh: c1 * dh] *= float(inputs["qkv_w_scale"][0, part])
            out *= float(inputs["qkv_in_scale"][0, 0])
        if "bias" in inputs:
            out = out + inputs["bias"].astype(np.float64).reshape(-1)
        if "rope" in extra:
            # Fused RoPE on the q and k heads (v as it is), halves
            # rotated: [x1 cos - x2 sin, x1 sin + x2 cos] with cos and sin
            # the first half of each cache row [B, S, d].
            heads, dh = (int(v) for v in extra["rope"].split(","))
            cos, sin = (inputs[n].astype(np.float64)[..., : dh // 2] for n in ("cos_cache", "sin_cache"))
            for h0 in range(0, heads * dh, dh):
                x1, x2 = out[..., h0: h0 + dh // 2].copy(), out[..., h0 + dh // 2: h0 + dh].copy()
                out[..., h0: h0 + dh // 2] = x1 * cos - x2 * sin
                out[..., h0 + dh // 2: h0 + dh] = x1 * sin + x2 * cos
        if d:
            b, s_, i = out.shape
            out = out.reshape(b, s_, i // int(d), int(d)).transpose(2, 0, 1, 3)
        return [out]
    if name.startswith("attn_cte:"):
        # attention_cte: per batch, softmax(scale * q k^T (causal: key j
        # <= query i)) v, q [S, d] (tp_q) or [d, S], k [S_kv, d] (tp_k) or
        # [d, S_kv], v [S_kv, d]; out [S, d], or [d, S] with tp_out. With
        # a prefix cache, the first prior_used_len prior keys and values
        # come before the current ones at positions -used..-1; a sliding
        # window (the name's last field) hides keys window or more
        # positions before the query; a sink [B, 1] is one more logit of
        # the softmax (unscaled) whose weight is dropped. In blocks of
        # query rows.
        scale, causal, tp_q, tp_k, tp_out, *window = name.split(":")[1:]
        window = int(window[0]) if window else 0
        q = inputs["q"].astype(np.float64)
        k = inputs["k"].astype(np.float64)
        v = inputs["v"].astype(np.float64)
        q = q if tp_q == "True" else q.transpose(0, 2, 1)
        k = k if tp_k == "True" else k.transpose(0, 2, 1)
        used = 0
        if "k_prior" in inputs:
            used = int(inputs["prior_used_len"].reshape(-1)[0])
            kp = inputs["k_prior"].astype(np.float64)
            kp = kp if tp_k == "True" else kp.transpose(0, 2, 1)
            k = np.concatenate([kp[:, :used], k], axis=1)
            v = np.concatenate([inputs["v_prior"].astype(np.float64)[:, :used], v], axis=1)
        out = np.empty(q.shape)
        for b in range(q.shape[0]):
            for r0 in range(0, q.shape[1], 1024):
                scores = float(scale) * q[b, r0: r0 + 1024] @ k[b].T
                # Key position minus query position.
                ahead = (np.arange(k.shape[1])[None, :] - used) - np.arange(r0, r0 + scores.shape[0])[:, None]
                if causal == "True":
                    scores = np.where(ahead <= 0, scores, -np.inf)
                if window:
                    scores = np.where(ahead > -window, scores, -np.inf)
                top = scores.max(axis=1, keepdims=True)
                total = 0.0
                if "sink" in inputs:
                    top = np.maximum(top, float(inputs["sink"][b, 0]))
                    total = np.exp(float(inputs["sink"][b, 0]) - top)
                p = np.exp(scores - top)
                out[b, r0: r0 + 1024] = (p / (p.sum(axis=1, keepdims=True) + total)) @ v[b]
        return [out.transpose(0, 2, 1) if tp_out == "True" else out]
    if name.startswith("rope_hf:"):
        # HF RoPE on q, k [B, H, S, d] with cos, sin [B, S, d], in the
        # inputs' dtype as the test's reference computes it (each product
        # and the sum rounded): x cos + rotate_half(x) sin, rotate_half(x)
        # = [-x2, x1]; backward: x cos + [(x sin)2, -(x sin)1].
        dt = inputs["q"].dtype
        r = lambda a: a.astype(np.float32).astype(dt).astype(np.float32)  # noqa: E731
        cos, sin = (inputs[n].astype(np.float32)[:, None] for n in ("cos", "sin"))
        outs = []
        for n in ("q", "k"):
            x = inputs[n].astype(np.float32)
            half = x.shape[-1] // 2
            if name == "rope_hf:True":
                xs = r(x * sin)
                rotated = np.concatenate([xs[..., half:], -xs[..., :half]], axis=-1)
            else:
                rotated = r(np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin)
            outs.append(r(r(x * cos) + rotated).astype(np.float64))
        return outs
    if name.startswith("bcast:"):
        # tp_broadcast: column src_offset of the source (of its slice at
        # `select` along dim 1 when given), as a row repeated count times.
        offset, count, select = name.split(":")[1:]
        x = inputs["src_hbm"].astype(np.float64)
        if select:
            x = x[:, int(select)]
        return [np.tile(x[:, int(offset)], (int(count), 1))]
    if name.startswith("xpart:"):
        # cross_partition_copy into zeros: n partitions from src_start to
        # dst_start.
        src, dst, n = (int(v) for v in name.split(":")[1:])
        x = inputs["x"].astype(np.float64)
        out = np.zeros_like(x)
        out[dst: dst + n] = x[src: src + n]
        return [out]
    if name.startswith("ce_bwd:"):
        # The gradient of the cross-entropy loss over the logits:
        # softmax(row) less one at the target, over the positions' count
        # for the mean. In blocks of rows.
        logits, targets = inputs["logits_hbm"], inputs["targets_hbm"]
        n = logits.shape[0] if name == "ce_bwd:mean" else 1
        grad = np.empty(logits.shape)
        for r0 in range(0, logits.shape[0], 256):
            x = logits[r0: r0 + 256].astype(np.float64)
            e = np.exp(x - x.max(axis=1, keepdims=True))
            g = e / e.sum(axis=1, keepdims=True)
            g[np.arange(g.shape[0]), targets[r0: r0 + 256]] -= 1
            grad[r0: r0 + 256] = g / n
        return [grad]
    if name.startswith("moe_tkg:"):
        # moe_tkg: each expert's MLP, down((act(min(x Wg + bg, 7)) *
        # clamp(x Wu + bu, -6, 8))) + bd (FP8 row weights times their
        # scales), rounded to the hidden dtype; all-expert: summed over
        # every expert, selective: over each token's k experts, times the
        # token's affinity for it with POST_SCALE.
        all_expert, scale, act, clamp = name.split(":")[1:]
        x = inputs["hidden_input"].astype(np.float64)
        w = inputs["expert_gate_up_weights"].astype(np.float64)
        down = inputs["expert_down_weights"].astype(np.float64)
        if "expert_gate_up_weights_scale" in inputs:
            w = w * inputs["expert_gate_up_weights_scale"].astype(np.float64)[:, None]
            down = down * inputs["expert_down_weights_scale"].astype(np.float64)[:, None]
        aff = inputs["expert_affinities"].astype(np.float64)
        index = inputs["expert_index"].astype(np.int64)
        gu_bias = inputs.get("expert_gate_up_bias")
        d_bias = inputs.get("expert_down_bias")
        dt = inputs["hidden_input"].dtype

        def act_fn(g):
            if act == "SiLU":
                return g * sigmoid(np, g)
            if act == "Swish":
                return g * sigmoid(np, 1.702 * g)
            from scipy.special import erf
            return 0.5 * g * (1 + erf(g / np.sqrt(2)))

        def mlp(rows, e):
            g, u = rows @ w[e, :, 0], rows @ w[e, :, 1]
            if gu_bias is not None:
                g, u = g + gu_bias[e, 0].astype(np.float64), u + gu_bias[e, 1].astype(np.float64)
            if clamp == "True":
                g, u = np.minimum(g, 7.0), np.clip(u, -6.0, 8.0)
            y = (act_fn(g) * u) @ down[e]
            if d_bias is not None:
                y = y + d_bias[e].astype(np.float64)
            return y.astype(dt).astype(np.float64)

        out = np.zeros(x.shape)
        for e in range(w.shape[0]):
            rows = np.arange(x.shape[0]) if all_expert == "True" else np.flatnonzero((index == e).any(axis=1))
            if rows.size == 0:
                continue
            y = mlp(x[rows], e)
            if scale == "POST_SCALE":
                y = y * aff[rows, e][:, None]
            out[rows] += y
        return [out]
    if name.startswith("attn_bwd:"):
        # attention_bwd: with P the forward probabilities and dP = dy^T v
        # (zero for sink columns), dS = P * (dP - rowsum(dP * P)); dq =
        # k dS^T * scale, dk = q scale dS, dv = dy P, kv gradients summed
        # over each group of query heads, dsinks the column sums of dS's
        # sink columns. Every step rounded to the inputs' dtype as the
        # test's mixed-precision reference rounds it (products and
        # differences in that dtype, sums and matmuls in float32 then
        # rounded): with bfloat16, dP - rowsum cancels, and the kernel
        # and the test's reference both lose what an exact computation
        # keeps (up to a tenth of the largest gradient).
        causal, window, scale = name.split(":")[1:]
        dt = inputs["q_ref"].dtype
        r = lambda a: a.astype(np.float32).astype(dt).astype(np.float64)  # noqa: E731
        q, k, v, dy = (inputs[n].astype(np.float64) for n in ("q_ref", "k_ref", "v_ref", "dy_ref"))
        probs = attention_forward(np, inputs, causal, window, scale)[2]
        b_n, hq, d, s = q.shape
        group = hq // k.shape[1]
        scale = r(np.float64(scale))
        dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
        dsinks = np.zeros((b_n, hq, probs[0, 0].shape[1] - s))
        for (b, h), p in probs.items():
            kv = h // group
            dp = np.zeros(p.shape)
            dp[:, :s] = r(dy[b, h].T @ v[b, kv])
            ds = r(r(dp - r(r(dp * p).sum(axis=1, keepdims=True))) * p)
            dsinks[b, h] = ds[:, s:].sum(axis=0)
            ds = ds[:, :s]
            dq[b, h] = r(r(k[b, kv] @ ds.T) * scale)
            dk[b, kv] += r(r(q[b, h] * scale) @ ds)
            dv[b, kv] += r(dy[b, h] @ p[:, :s])
        outs = [dq, dk, dv]
        if "sinks_ref" in inputs:
            outs.append(dsinks.reshape(inputs["sinks_ref"].shape))
        return outs
    if name == "fg_allgather4":
        # fine_grained_allgather over 4 replica ranks: [4, LNC, channels,
        # rows, K], each rank's slot the whole input.
        x = inputs["lhs"].astype(np.float64)
        return [np.stack([x.reshape(2, 2, -1, x.shape[1])] * 4)]
    raise KeyError(name)

# experimental/collectives/test_sb2sb_allgather.py: (m, k, dtype,
# tp_degree[, lnc]), ReplicaGroup([list(range(tp_degree))]); the ranks
# beyond the launch are simulated as replicas (docs/language.md), so the
# reference is tp_degree copies of the input side by side.
AG = "nkilib/experimental/collectives/sb2sb_allgather.py"
CASES += [
    dict(name="allgather_sb2sb_128x512_tp8", file=AG, kernel="allgather_sb2sb",
         args=["inp=float32[128,512]"], consts=["replica_groups=ReplicaGroup([list(range(8))])", "tp_degree=8"],
         target="trn2", ref="gather8"),
    dict(name="allgather_sb2sb_96x512_tp16_bf16", file=AG, kernel="allgather_sb2sb",
         args=["inp=bfloat16[96,512]"], consts=["replica_groups=ReplicaGroup([list(range(16))])", "tp_degree=16"],
         target="trn2"),
    dict(name="allgather_tiled_256x512_tp4_lnc2", file=AG, kernel="allgather_sb2sb_tiled",
         args=["inp=bfloat16[256,512]"], consts=["replica_groups=ReplicaGroup([list(range(4))])", "tp_degree=4"],
         grid="2", target="trn2"),
    dict(name="allgather_tiled_256x512_tp8_f32", file=AG, kernel="allgather_sb2sb_tiled",
         args=["inp=float32[256,512]"], consts=["replica_groups=ReplicaGroup([list(range(8))])", "tp_degree=8"],
         target="trn2", ref="gather8"),
]

# core/subkernels/test_rmsnorm_tkg.py and test_layernorm_tkg.py: (lnc,
# batch, seqlen, hidden, [hidden_actual, hidden_dim_tp,] shard_on_h,
# dtype); input [B, S, H], gamma (and beta) [1, H], output
# [128, B*S, H/128] passed in by the caller.


def norm_tkg_case(kind, lnc, b, s, h, consts=(), beta=False):
    args = [f"input=float16[{b},{s},{h}]", f"gamma=float16[1,{h}]",
            f"output=float16[128,{b * s},{h // 128}]"] + ([f"beta=float16[1,{h}]"] if beta else [])
    name = f"{kind}_lnc{lnc}_{b}x{s}x{h}" + ("_" + "_".join(c.split("=")[0] for c in consts) if consts else "")
    given = dict(c.split("=", 1) for c in consts)
    # The test's reference and its output layout: the hidden dim split
    # [128, H/128] (TP-sharded: [H/128, 128]), each half apart at LNC=2.
    if given.get("hidden_dim_tp") == "True":
        layout = "tp"
    elif lnc == 2 or (kind == "layernorm_tkg" and given.get("shard_on_h") == "True"):
        layout = "lnc2"
    else:
        layout = "lnc1"
    ref = f"{kind.split('_')[0]}:{layout}:{given.get('hidden_actual', '')}"
    return dict(name=name, file=f"nkilib/core/subkernels/{kind}.py", kernel=kind, args=args,
                consts=list(consts), grid="2" if lnc == 2 else None, target="trn2",
                ref=ref, tol=(2e-2, 1e-5))


CASES += [
    norm_tkg_case("rmsnorm_tkg", 1, 1, 8, 8192),
    norm_tkg_case("rmsnorm_tkg", 2, 2, 8, 8192),
    norm_tkg_case("rmsnorm_tkg", 2, 63, 32, 3072),
    norm_tkg_case("rmsnorm_tkg", 2, 2, 8, 3072, consts=("hidden_actual=2880", "hidden_dim_tp=True")),
    norm_tkg_case("rmsnorm_tkg", 2, 1, 1, 8192, consts=("shard_on_h=True",)),
    norm_tkg_case("layernorm_tkg", 2, 4, 8, 8192, beta=True),
    norm_tkg_case("layernorm_tkg", 2, 128, 1, 8192, consts=("shard_on_h=True",), beta=True),
]


def moe_inputs(t, k, e, blk, skip_token):
    """The routed inputs of a blockwise MoE matmul (special_input "moe")."""
    kind = lambda what: ("moe", what, t, k, e, blk, skip_token)  # noqa: E731
    return {"token_position_to_id": kind("positions"), "block_to_expert": kind("experts"),
            "expert_affinities_masked": kind("affinities"), "hidden_states": kind("hidden"),
            "gate_up_proj_weight": ("uniform", -0.1, 0.1), "down_proj_weight": ("uniform", -0.1, 0.1)}


# core/moe/moe_cte/test_moe_cte_unified.py: (impl, hidden, tokens,
# experts, block size, top_k, intermediate, dtype, ...); hidden [T+1, H],
# affinities [(T+1)*E, 1], weights [E, H, 2, I] and [E, I, H], N blocks;
# block_to_expert and token_position_to_id are made valid (experts in
# range(E), positions in range(T + 1), T being the padding row); with the
# row's top_k, routed as the tests route them (`moe_inputs`) and checked.


def moe_cte_case(name, impl, h, t, e, blk, i, n, grid=None, k=None):
    spec = f"spec=MoECTESpec(implementation=MoECTEImplementation.{impl}" + (
        ", shard_on_block=ShardOnBlockConfig())" if "block" in impl else ", shard_on_I=ShardOnIConfig())")
    return dict(name=name, file="nkilib/core/moe/moe_cte/moe_cte.py", kernel="moe_cte",
                args=[f"hidden_states=bfloat16[{t + 1},{h}]", f"expert_affinities_masked=bfloat16[{(t + 1) * e},1]",
                      f"gate_up_proj_weight=bfloat16[{e},{h},2,{i}]", f"down_proj_weight=bfloat16[{e},{i},{h}]",
                      f"token_position_to_id=int32[{n * blk}]", f"block_to_expert=int32[{n}]"],
                consts=[f"block_size={blk}", spec], grid=grid, target="trn2",
                **(dict(inputs=moe_inputs(t, k, e, blk, False), tol=(2e-2, 1e-5),
                        ref=f"bwmm:{blk}:POST_SCALE" + (":2" if "block" in impl else ""),
                        # shard_on_block adds into the padding token's
                        # output row, which no instruction writes first;
                        # the tests expect zero there (zeroed device
                        # memory), so never-written memory reads zero.
                        run_flags=["--poison", "zero"] if "block" in impl else [])
                   if k else dict(inputs={"token_position_to_id": ("randint", 0, t + 1),
                                          "block_to_expert": ("randint", 0, e)})))


CASES += [
    moe_cte_case("moe_cte_shard_I_3072_1024_e8", "shard_on_i", 3072, 1024, 8, 512, 2048, 16, grid="2", k=4),
    moe_cte_case("moe_cte_shard_block_3072_1024_e8", "shard_on_block", 3072, 1024, 8, 512, 2048, 16, grid="2", k=4),
]


# core/router_topk/test_router_topk.py: (T, H, E, k, act_fn, has_bias,
# router_pre_norm, norm_topk_prob, use_column_tiling,
# use_indirect_dma_scatter, use_PE_broadcast_w_bias, shard_on_tokens,
# output_in_sbuf) with x in HBM as [H, T]; the three outputs are passed in
# by the caller (router_logits [T, E], expert_affinities [T, E],
# expert_index uint32 [T, k]).


def router_topk_case(t, h, e, k, bias=True, act="SOFTMAX", consts=()):
    args = [f"x=bfloat16[{h},{t}]", f"w=bfloat16[{h},{e}]", f"router_logits=bfloat16[{t},{e}]",
            f"expert_affinities=bfloat16[{t},{e}]", f"expert_index=uint32[{t},{k}]"]
    args += [f"w_bias=bfloat16[1,{e}]"] if bias else []
    name = f"router_topk_{t}x{h}_e{e}_k{k}" + ("" if bias else "_nobias") + "".join(
        "_" + c.split("=")[0] for c in consts)
    return dict(name=name, file="nkilib/core/router_topk/router_topk.py", kernel="router_topk", args=args,
                consts=[f"act_fn=nkilib.core.utils.common_types.RouterActFnType.{act}", f"k={k}",
                        "x_hbm_layout=0", "x_sb_layout=0"] + ([] if bias else ["w_bias=None"]) + list(consts),
                grid="2", target="trn2", tol=(2e-2, 1e-5),
                # The test's values, uniform in [-0.1, 0.1]: with normal ones
                # the logits spread so far that every softmax affinity but
                # the largest is 0 in f32 and the top k ties.
                inputs={n: ("uniform", -0.1, 0.1) for n in ("x", "w", "w_bias")},
                ref=f"router:{act}:{k}:{'router_pre_norm=False' not in consts}:{'norm_topk_prob=True' in consts}")


CASES += [
    router_topk_case(32, 3072, 128, 4),
    router_topk_case(2, 4096, 128, 8, bias=False),
    router_topk_case(4, 3072, 128, 4, consts=("use_indirect_dma_scatter=True",)),
    router_topk_case(8, 8192, 128, 8, act="SIGMOID", consts=("router_pre_norm=True", "use_indirect_dma_scatter=True")),
    router_topk_case(640, 3072, 128, 4, consts=("shard_on_tokens=True",)),
]

# experimental/subkernels/test_topk_reduce.py: (lnc, src_ranks, T, K, H);
# the input buffer is [src_ranks * T, H + 2] bf16 (special input
# "topk_reduce"), the output [T, H] sums each token's K rows (bf16 sums,
# compared with the test's rtol = atol = 5e-2).


def topk_reduce_case(ranks, t, k, h):
    return dict(name=f"topk_reduce_r{ranks}_t{t}_k{k}_h{h}", file="nkilib/experimental/collectives/topk_reduce.py",
                kernel="topk_reduce", args=[f"input=bfloat16[{ranks * t},{h + 2}]"], consts=[f"T={t}", f"K={k}"],
                grid="2", target="trn2", inputs={"input": ("topk_reduce", t, k)}, ref="topk_reduce",
                tol=(5e-2, 5e-2))


CASES += [topk_reduce_case(8, 4, 4, 2880), topk_reduce_case(8, 128, 8, 4096)]

# core/attention/test_attention_tkg.py calls attention_tkg from a wrapper
# kernel of its own that makes the SBUF allocator and the output tensors;
# this is the project's equivalent. Configs (bs, q_head, s_active,
# curr_sprior, full_sprior, d_head, block_len, ...) from its parameter
# list, with use_pos_id and fuse_rope: q, k_active, v_active [B, 1|H,
# s_active, d], k_prior [B, 1, full_sprior, d] (tp_k_prior) or [B, 1, d,
# full_sprior], v_prior [B, 1, full_sprior, d], mask [s_active, B, H,
# s_active] uint8, inv_freqs [d/2, 1], rope_pos_ids [B, s_active].
ATTN_TKG_WRAPPER = """import nki
import nki.language as nl
from nkilib.core.attention.attention_tkg import attention_tkg
from nkilib.core.attention.attention_tkg_utils import AttnTKGConfig
from nkilib.core.utils.allocator import SbufManager
from nkilib.core.utils.logging import Logger


@nki.jit
def attn_tkg(q, k_active, v_active, k_prior, v_prior, mask, inv_freqs, rope_pos_ids, cfg: AttnTKGConfig):
    sbm = SbufManager(0, nl.tile_size.total_available_sbuf_size - 16 * 1024, Logger("SBM"))
    sbm.open_scope()
    out = nl.ndarray((cfg.bs, cfg.q_head, cfg.d_head, cfg.s_active), dtype=q.dtype, buffer=nl.shared_hbm)
    k_out = nl.ndarray((cfg.bs, 1, cfg.d_head, cfg.s_active), dtype=q.dtype, buffer=nl.shared_hbm)
    o, k = attention_tkg(q, k_active, v_active, k_prior, v_prior, mask, out, cfg, sbm,
                         inv_freqs, rope_pos_ids, None, None, None, k_out)
    sbm.close_scope()
    return o, k
"""


def attn_tkg_case(bs, qh, sa, cur, full, d, tp_k_prior):
    kp = f"k_prior=bfloat16[{bs},1,{full},{d}]" if tp_k_prior else f"k_prior=bfloat16[{bs},1,{d},{full}]"
    return dict(name=f"attention_tkg_b{bs}_h{qh}_s{sa}_{cur}of{full}_d{d}" + ("_tpk" if tp_k_prior else ""),
                file="attn_tkg_wrapper.py", wrapper=ATTN_TKG_WRAPPER, kernel="attn_tkg",
                args=[f"q=bfloat16[{bs},{qh},{sa},{d}]", f"k_active=bfloat16[{bs},1,{sa},{d}]",
                      f"v_active=bfloat16[{bs},1,{sa},{d}]", kp, f"v_prior=bfloat16[{bs},1,{full},{d}]",
                      f"mask=uint8[{sa},{bs},{qh},{sa}]", f"inv_freqs=float32[{d // 2},1]",
                      f"rope_pos_ids=float32[{bs},{sa}]"],
                consts=[f"cfg=AttnTKGConfig({bs}, {qh}, {sa}, {cur}, {full}, {d}, 0, tp_k_prior={tp_k_prior}, "
                        "use_pos_id=True, fuse_rope=True)"],
                grid="2", target="trn2",
                inputs={"mask": ("active_causal",), "inv_freqs": ("uniform", 0, 1), "rope_pos_ids": ("pos_ids", cur)},
                ref=f"attn_tkg:{cur}:{tp_k_prior}", tol=(1e-2, 1e-5))


CASES += [
    attn_tkg_case(4, 1, 5, 1024, 10240, 128, True),
    attn_tkg_case(4, 2, 7, 512, 16384, 64, True),
    attn_tkg_case(4, 1, 5, 3072, 10240, 128, False),
]

# core/moe_block/test_moe_block_tkg.py: (lnc, is_all_expert, batch,
# seqlen, hidden, hidden_actual, intermediate, global experts, local
# experts, top_k, router_fn, hidden_act_fn, scaling mode, weight dtype,
# input dtype, shared expert, bias, clamp, router_act_first,
# norm_topk_prob, skip_router_logits, router_mm_dtype); the float16
# selective-expert GPT-OSS row, without the clamp limits.
CASES += [
    dict(name="moe_block_tkg_1x1x3072_i384_e128_k4_f16", file="nkilib/core/moe_block/moe_block_tkg.py",
         kernel="moe_block_tkg",
         args=["inp=float16[1,1,3072]", "gamma=float16[1,3072]", "router_weights=float16[3072,128]",
               "expert_gate_up_weights=float16[128,3072,2,384]", "expert_down_weights=float16[128,384,3072]",
               "router_bias=float16[1,128]", "expert_gate_up_bias=float16[128,2,384]",
               "expert_down_bias=float16[128,3072]"],
         consts=["top_k=4", "router_act_fn=RouterActFnType.SOFTMAX", "router_pre_norm=False",
                 "expert_affinities_scaling_mode=ExpertAffinityScaleMode.POST_SCALE",
                 "hidden_act_fn=ActFnType.Swish", "router_mm_dtype=nl.float16"],
         grid="2", target="trn2"),
]

# experimental/moe/test_bwmm_shard_on_H.py: (hidden, tokens, experts,
# block size, top_k, intermediate, dtype, skip, scaling mode, checkpoint)
# at LNC=2; N = ceil((T * top_k - (E - 1)) / B) + E - 1 blocks; with
# skip_weight (skip 2) hidden states and affinities have T + 1 rows.


def bwmm_h_case(h, t, e, blk, k, i, skip, mode):
    n = -(-(t * k - (e - 1)) // blk) + e - 1
    i_pad = -(-i // 16) * 16
    skips = {0: "SkipMode(False, False)", 1: "SkipMode(True, False)", 2: "SkipMode(False, True)"}
    rows = t if skip == 1 else t + 1
    return dict(name=f"bwmm_shard_on_H_{h}_{t}_e{e}_b{blk}_k{k}_i{i}_skip{skip}",
                file="nkilib/experimental/moe/forward/bwmm_shard_on_H.py",
                kernel="blockwise_mm_baseline_shard_hidden",
                args=[f"hidden_states=bfloat16[{rows},{h}]", f"expert_affinities_masked=bfloat16[{rows * e},1]",
                      f"gate_up_proj_weight=bfloat16[{e},{h},2,{i}]", f"down_proj_weight=bfloat16[{e},{i_pad},{h}]",
                      f"token_position_to_id=int32[{n * blk}]", f"block_to_expert=int32[{n},1]"],
                consts=[f"block_size={blk}", f"skip_dma={skips[skip]}", "compute_dtype=nl.bfloat16",
                        f"is_tensor_update_accumulating={k != 1}",
                        f"expert_affinities_scaling_mode=ExpertAffinityScaleMode.{mode}"],
                grid="2", target="trn2", inputs=moe_inputs(t, k, e, blk, skip == 1),
                ref=f"bwmm:{blk}:{mode}", tol=(2e-2, 1e-5))


# experimental/moe/test_bwmm_bwd.py: (hidden, tokens, experts, block size,
# top_k, intermediate, dtype, skip, clamp limits, bias, activation) at
# LNC=2, with the forward pass's activation checkpoints as inputs.


def bwmm_bwd_case(h, t, e, blk, k, i, clamp):
    n = -(-(t * k - (e - 1)) // blk) + e - 1
    return dict(name=f"bwmm_bwd_{h}_{t}_e{e}_b{blk}_k{k}_i{i}",
                file="nkilib/experimental/moe/bwd/blockwise_mm_backward.py", kernel="blockwise_mm_bwd",
                args=[f"hidden_states=bfloat16[{t + 1},{h}]", f"expert_affinities_masked=bfloat16[{(t + 1) * e},1]",
                      f"gate_up_proj_weight=bfloat16[{e},{h},2,{i}]", f"down_proj_weight=bfloat16[{e},{i},{h}]",
                      f"gate_up_proj_act_checkpoint_T=bfloat16[{n},2,{i},{blk}]",
                      f"down_proj_act_checkpoint=bfloat16[{n},{blk},{h}]", f"token_position_to_id=int32[{n * blk}]",
                      f"block_to_expert=int32[{n}]", f"output_hidden_states_grad=bfloat16[{t + 1},{h}]"],
                consts=[f"block_size={blk}", "skip_dma=SkipMode(False, False)", "compute_dtype=nl.bfloat16",
                        f"is_tensor_update_accumulating={k != 1}", f"clamp_limits=ClampLimits({clamp})",
                        "bias=False", "activation_type=ActFnType.SiLU"],
                grid="2", target="trn2",
                inputs={"token_position_to_id": ("randint", 0, t + 1), "block_to_expert": ("randint", 0, e)})


# experimental/collectives/test_fg_allgather.py and test_fgcc.py: (m, K[,
# N], dtype, tp_degree, lnc, force_hbm_cc), the rows their tests enable;
# the other ranks are replicas (docs/language.md), so the gather holds
# tp_degree copies of lhs.
CASES += [
    dict(name="fg_allgather_1024x4096_tp4_lnc2", file="nkilib/experimental/collectives/fg_allgather.py",
         kernel="fine_grained_allgather", args=["lhs=bfloat16[1024,4096]"],
         consts=["tp_degree=4", "num_groups=1"], grid="2", target="trn2", ref="fg_allgather4"),
    dict(name="fgcc_1024x4096x4096_tp4_lnc2", file="nkilib/experimental/collectives/fgcc.py",
         kernel="allgather_compute_matmul", args=["lhs=bfloat16[1024,4096]", "rhs=bfloat16[4096,1024]"],
         consts=["tp_degree=4", "num_groups=1"], grid="2", target="trn2"),
]

CASES += [
    bwmm_h_case(5120, 8192, 16, 256, 1, 128, 2, "POST_SCALE"),
    bwmm_bwd_case(6144, 4096, 1, 512, 1, 128, "7, -7, 7, -7"),
]


# experimental/transformer/test_attention_block_tkg.py: AttnBlkTestConfig
# (batch, q_heads, d_head, H, H_actual, S_ctx, S_max_ctx, S_tkg, ...) at
# LNC=2 with one KV head, the kernel called directly with the tensors its
# input builder makes: X [B, S_tkg, H], W_qkv [H, (q + 2) d], cos/sin
# [d/2, B, S_tkg], K/V caches [B, 1, S_max_ctx, d] (K transposed:
# [B, 1, d, S_max_ctx]), the mask [S_ctx, B, q, S_tkg] uint8,
# kv_cache_update_idx [B, 1] uint32 and W_out [q d, H]; eps 1e-3 (bf16).


def attn_block_case(b, q, d, h, h_actual, s_ctx, s_tkg, k_transposed=False, update_cache=True,
                    rmsnorm_x=True, skip_rope=False, bias=False):
    k_shape = f"[{b},1,{d},{s_ctx}]" if k_transposed else f"[{b},1,{s_ctx},{d}]"
    args = [f"X=bfloat16[{b},{s_tkg},{h}]", f"W_qkv=bfloat16[{h},{(q + 2) * d}]",
            f"K_cache=bfloat16{k_shape}", f"V_cache=bfloat16[{b},1,{s_ctx},{d}]",
            f"attention_mask=uint8[{s_ctx},{b},{q},{s_tkg}]", f"kv_cache_update_idx=uint32[{b},1]",
            f"W_out=bfloat16[{q * d},{h}]"]
    consts = [f"X_hidden_dim_actual={h_actual}", f"rmsnorm_X_enabled={rmsnorm_x}", "rmsnorm_X_eps=1e-3",
              "quantization_type_qkv=QuantizationType.NONE", "weight_dequant_scale_qkv=None",
              "input_dequant_scale_qkv=None", "rmsnorm_QK_pre_rope_enabled=False", "rmsnorm_QK_pre_rope_eps=1e-3",
              "rmsnorm_QK_pre_rope_W_Q=None", "rmsnorm_QK_pre_rope_W_K=None", "rope_contiguous_layout=True",
              "rmsnorm_QK_post_rope_enabled=False", "rmsnorm_QK_post_rope_eps=1e-3",
              "rmsnorm_QK_post_rope_W_Q=None", "rmsnorm_QK_post_rope_W_K=None",
              f"K_cache_transposed={k_transposed}", "active_blocks_table=None", "sink=None",
              f"update_cache={update_cache}", "quantization_type_out=QuantizationType.NONE",
              "weight_dequant_scale_out=None", "input_dequant_scale_out=None", "transposed_out=False",
              "out_in_sb=False"]
    args += [f"rmsnorm_X_gamma=bfloat16[1,{h}]"] if rmsnorm_x else []
    consts += [] if rmsnorm_x else ["rmsnorm_X_gamma=None"]
    args += [] if skip_rope else [f"cos=bfloat16[{d // 2},{b},{s_tkg}]", f"sin=bfloat16[{d // 2},{b},{s_tkg}]"]
    consts += ["cos=None", "sin=None"] if skip_rope else []
    args += [f"bias_qkv=bfloat16[1,{(q + 2) * d}]", f"bias_out=bfloat16[1,{h}]"] if bias else []
    consts += [] if bias else ["bias_qkv=None", "bias_out=None"]
    return dict(name=f"attn_block_tkg_b{b}_q{q}_d{d}_h{h}_s{s_ctx}_t{s_tkg}" + ("_kT" if k_transposed else ""),
                file="nkilib/experimental/transformer/attention_block_tkg.py", kernel="attention_block_tkg",
                args=args, consts=consts, grid="2", target="trn2",
                inputs={"attention_mask": ("attn_mask",), "kv_cache_update_idx": ("cache_len",)})


CASES += [
    attn_block_case(4, 8, 64, 6144, 2880, 11264, 1),
    attn_block_case(8, 8, 64, 3072, 2880, 10240, 5, bias=True),
    attn_block_case(4, 8, 64, 3072, None, 10240, 4, k_transposed=True, bias=True),
]


# experimental/transformer/test_transformer_tkg.py calls transformer_tkg
# from a wrapper of its own taking every layer's tensors as separate
# arguments (the kernel takes lists of them); this is the project's
# equivalent, for L layers of which the middle ones carry the test's FP8
# MLP scales. Configs [tp, global batch, S_tkg, S_ctx, q heads, d_head, H,
# I] at LNC=2 with one KV head: per core B = global batch / (64 / tp),
# q / tp heads and I / tp (rounded up to 128) MLP columns; the collective
# runs over (0, 1, 2, 3) as the test's does on a 4-core instance.
LAYER_TENSORS = ["W_qkv", "W_out", "W_gate", "W_up", "W_down", "W_gamma_qkv", "W_gamma_mlp", "K_cache", "V_cache"]
SCALES = ["W_gate_scale", "W_up_scale", "W_down_scale"]


def transformer_wrapper(layers):
    per_layer = [f"{t}_{i}" for t in LAYER_TENSORS + SCALES for i in range(layers)]
    lists = ",\n".join(f"        {t}s=[{', '.join(f'{t}_{i}' for i in range(layers))}]"
                        for t in LAYER_TENSORS + SCALES)
    return f"""import nki
from nkilib.experimental.transformer.transformer_tkg import transformer_tkg


@nki.jit
def transformer(X, {', '.join(per_layer)}, RoPE_cos, RoPE_sin, mask_cache, position_ids, replica_groups):
    return transformer_tkg(
        X=X,
{lists},
        RoPE_cos=RoPE_cos, RoPE_sin=RoPE_sin, mask_cache=mask_cache, mask_active=None,
        position_ids=position_ids, num_layers={layers}, eps=1e-6, replica_groups=replica_groups,
        sbuf_residual_and_cc=False)
"""


def transformer_case(tp, global_batch, s_ctx, layers=4, q=64, d=128, h=8192, i=28672):
    b = global_batch // (64 // tp)
    qc, fd = q // tp, -(-(i // tp) // 128) * 128
    args, consts = [f"X=bfloat16[{b},1,{h}]"], []
    shapes = {"W_qkv": [h, d * (qc + 2)], "W_out": [qc * d, h], "W_gate": [h, fd], "W_up": [h, fd],
              "W_down": [fd, h], "W_gamma_qkv": [1, h], "W_gamma_mlp": [1, h], "K_cache": [b, 1, d, s_ctx],
              "V_cache": [b, 1, s_ctx, d]}
    scales = {"W_gate_scale": [128, fd], "W_up_scale": [128, fd], "W_down_scale": [128, h]}
    for t, shape in shapes.items():
        args += [f"{t}_{n}=bfloat16[{','.join(map(str, shape))}]" for n in range(layers)]
    for t, shape in scales.items():
        for n in range(layers):
            if 0 < n < layers - 1:
                args.append(f"{t}_{n}=float32[{','.join(map(str, shape))}]")
            else:
                consts.append(f"{t}_{n}=None")
    args += [f"RoPE_cos=bfloat16[{d // 2},{b},1]", f"RoPE_sin=bfloat16[{d // 2},{b},1]",
             f"mask_cache=uint8[{s_ctx},{b},{qc},1]", f"position_ids=uint32[{b},1]"]
    consts.append("replica_groups=((0, 1, 2, 3),)")
    return dict(name=f"transformer_tkg_tp{tp}_gb{global_batch}_s{s_ctx}_l{layers}",
                file=f"transformer_tkg_wrapper_l{layers}.py", wrapper=transformer_wrapper(layers),
                kernel="transformer", args=args, consts=consts, grid="2", target="trn2",
                inputs={"mask_cache": ("const", 1), "position_ids": ("randint", 0, s_ctx - 1)})


CASES += [transformer_case(32, 8, 1024), transformer_case(8, 8, 10240)]


# core/moe/moe_cte/test_moe_bwmm_mx_cte.py: (lnc, hidden, tokens,
# intermediate, experts, block size, top_k, activation, scaling mode,
# dtype, weight dtype, skip mode, bias, dynamic, clamp limits, uint
# weights, static blocks), the shard-on-I rows that are not dynamic, with
# its input builder's layouts: weights [E, 128, 2, H/512, I] and
# [E, I_par, I/512, H] in the x4 dtype (or its uint16/uint32 view),
# e8m0 scales [E, 16, 2, H/512, I] and [E, I_par/8, I/512, H], bias
# [E, I_par, 2, I/512, 4] and [E, H]; N = ceil((T k - (E - 1)) / B) + E - 1.


def bwmm_mx_case(h, t, i, e, blk, k, act, wdt, skip, bias, uint=False, variant="I"):
    per_iter = 1 if variant == "I" else 2
    n = -(-(t * k - (e - 1)) // blk) + e - 1
    n = per_iter * -(-n // per_iter)
    n_h = h // 512
    n_i, r_i = divmod(i, 512)
    i_par = 128
    if r_i:
        n_i, i_par = 1, r_i // 4
    rows = t if skip == 1 else t + 1
    w = {"float4_e2m1fn_x4": "uint16", "float8_e4m3fn_x4": "uint32", "float8_e5m2_x4": "uint32"}[wdt] \
        if uint else wdt
    skips = {0: "SkipMode(False, False)", 1: "SkipMode(True, False)"}
    args = [f"hidden_states=bfloat16[{rows},{h}]", f"expert_affinities_masked=bfloat16[{rows * e},1]",
            f"gate_up_proj_weight={w}[{e},128,2,{n_h},{i}]", f"down_proj_weight={w}[{e},{i_par},{n_i},{h}]",
            f"token_position_to_id=int32[{n * blk}]", f"block_to_expert=int32[{n},1]",
            f"gate_up_proj_scale=uint8[{e},16,2,{n_h},{i}]", f"down_proj_scale=uint8[{e},{i_par // 8},{n_i},{h}]"]
    consts = [f"block_size={blk}", f"skip_dma={skips[skip]}", "compute_dtype=nl.bfloat16",
              f"weight_dtype=nl.{wdt}", f"is_tensor_update_accumulating={k != 1}",
              "expert_affinities_scaling_mode=ExpertAffinityScaleMode.POST_SCALE",
              f"activation_function=ActFnType.{act}", "gate_clamp_upper_limit=7.0",
              "up_clamp_upper_limit=7.0", "up_clamp_lower_limit=-7.0"]
    if bias:
        args += [f"gate_and_up_proj_bias=bfloat16[{e},{i_par},2,{n_i},4]", f"down_proj_bias=bfloat16[{e},{h}]"]
    kernel, file = (("blockwise_mm_shard_intermediate_mx", "bwmm_shard_on_I_mx.py") if variant == "I"
                    else ("bwmm_shard_on_block_mx", "bwmm_shard_on_block_mx.py"))
    return dict(name=f"bwmm_mx_{variant}_{h}_{t}_i{i}_e{e}_k{k}_{wdt.split('_')[0]}" + ("_uint" if uint else ""),
                file=f"nkilib/core/moe/moe_cte/{file}", kernel=kernel, args=args, consts=consts,
                grid="2", target="trn3",
                inputs={"token_position_to_id": ("randint", 0, rows), "block_to_expert": ("randint", 0, e)})


CASES += [
    bwmm_mx_case(3072, 1024, 2048, 8, 256, 4, "Swish", "float4_e2m1fn_x4", 1, True),
    bwmm_mx_case(7168, 1024, 1024, 8, 256, 8, "Swish", "float8_e4m3fn_x4", 1, True),
    bwmm_mx_case(3072, 1024, 2048, 8, 256, 8, "Swish", "float8_e5m2_x4", 1, True, uint=True),
    bwmm_mx_case(3072, 1024, 384, 128, 256, 2, "Swish", "float8_e4m3fn_x4", 1, True, uint=True, variant="block"),
]

# Further rows of the tests above, chosen where a compiler is most likely
# to break (other dtypes, LNC=1 vs 2, sizes that are not multiples of 128,
# other enum options); the tests run at CompilerArgs()'s default LNC,
# 2 on trn2.
# core/cumsum/test_cumsum.py coverage sweep (batch, hidden, ndim,
# seq_len, dtype): x [batch, hidden] or [batch, seq_len, hidden].
CASES += [
    dict(name="cumsum_256x8192_bf16", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=bfloat16[256,8192]"], grid="2", target="trn2", ref="cumsum", tol=(1e-2, 1e-2)),
    dict(name="cumsum_2048x3x6144_f32", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[2048,3,6144]"], grid="2", target="trn2", ref="cumsum", tol=(1e-3, 1e-2)),
    dict(name="cumsum_1x1x512_f32_lnc2", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[1,1,512]"], grid="2", target="trn2", ref="cumsum"),
]


# core/embeddings/test_rope.py (d_head, B, n_heads, S, contiguous_layout,
# relayout_in_sbuf) with lnc_shard=True: x_in [d, B, n, S], cos/sin
# [d/2, B, S].
def rope_case(d, b, n, s, contiguous, dtype="bfloat16", relayout=False):
    return dict(name=f"rope_lnc2_d{d}_b{b}_n{n}_s{s}" + ("" if contiguous else "_noncontig")
                + ("_relayout" if relayout else "") + f"_{dtype}",
                file="nkilib/core/embeddings/rope.py", kernel="RoPE",
                args=[f"x_in={dtype}[{d},{b},{n},{s}]", f"cos={dtype}[{d // 2},{b},{s}]",
                      f"sin={dtype}[{d // 2},{b},{s}]"],
                consts=["lnc_shard=True", f"contiguous_layout={contiguous}", f"relayout_in_sbuf={relayout}"],
                grid="2", target="trn2", ref=f"rope:{contiguous}", tol=(2.0 ** -7, 1e-3))


CASES += [
    rope_case(128, 32, 4, 64, False),
    rope_case(64, 255, 8, 6, False),
    rope_case(128, 1, 32, 2048, True),
    rope_case(64, 8192, 1, 8, True),
    rope_case(128, 4, 8, 1024, True, relayout=True),
    rope_case(64, 3, 5, 6, True, dtype="float32"),
]


# core/rmsnorm/test_rmsnorm_quant.py lnc and vnc rows (seqlen, quant_only,
# quant_type, lower_bound, lnc, batch, hidden): hidden [B, S, H], gamma
# [H] at LNC=1 and [1, H] at LNC=2, STATIC's input_dequant_scale [128, 1].
def rmsnorm_quant_case(s, quant_only, qtype, lb, lnc, b, h):
    args = [f"hidden=bfloat16[{b},{s},{h}]", f"ln_w=bfloat16[{h}]" if lnc == 1 else f"ln_w=bfloat16[1,{h}]"]
    args += ["input_dequant_scale=float32[128,1]"] if qtype == "STATIC" else []
    return dict(name=f"rmsnorm_quant_{qtype.lower()}_lnc{lnc}_{b}x{s}x{h}" + ("_qonly" if quant_only else "")
                + (f"_lb{lb}" if lb else ""),
                file="nkilib/core/rmsnorm/rmsnorm_quant.py", kernel="rmsnorm_quant_kernel", args=args,
                consts=["kargs=nkilib.core.rmsnorm.rmsnorm_quant.RmsNormQuantKernelArgs("
                        f"quantization_type={CT}.QuantizationType.{qtype}, lower_bound={lb}, "
                        f"norm_type={CT}.NormType.{'NO_NORM' if quant_only else 'RMS_NORM'}, eps=1e-6)"],
                grid="2" if lnc == 2 else None, target="trn2",
                **rmsnorm_quant_check(qtype, lb, quant_only, h))


def rmsnorm_quant_check(qtype, lb, quant_only, h):
    """The inputs core/rmsnorm/test_rmsnorm_quant.py draws (uniform in [0,
    10); the static dequantization scale its generator draws first from
    normal(0.5, 0.1) with seed 0, 0.512573) and its check: the fp8 values
    within rtol 0.072, each row's scale within 0.007. (The kernel rounds
    the scaled values to bf16 before fp8, so a value just above an fp8
    midpoint may round down, a whole fp8 step: above 32 that step, 4, is
    more than the tolerance; with the tests' scale no value reaches 34.)"""
    inputs = {"hidden": ("uniform", 0, 10), "ln_w": ("uniform", 0, 10)}
    if qtype == "STATIC":
        inputs["input_dequant_scale"] = ("const", 0.512573)
    return dict(inputs=inputs, ref=f"rmsnorm_quant:{qtype}:{lb}:{quant_only}",
                packed_fp8=(h, qtype == "ROW"), tols=[(0.072, 1e-8), (0.007, 1e-8)][: 2 if qtype == "ROW" else 1])


CASES += [
    rmsnorm_quant_case(160, False, "ROW", 0.0, 2, 1, 16384),
    rmsnorm_quant_case(2, False, "STATIC", 0.0, 2, 1, 16384),
    rmsnorm_quant_case(160, True, "STATIC", 0.0, 2, 1, 16384),
    rmsnorm_quant_case(128, False, "ROW", 0.5, 1, 1, 16384),
    rmsnorm_quant_case(256, False, "ROW", 0.0, 2, 1, 8192),
]
# The first two rows of the list, checked the same way.
for case, check in [("rmsnorm_quant_row_lnc2", ("ROW", 0.0, False)), ("rmsnorm_quant_only_lnc2", ("ROW", 0.5, True))]:
    next(c for c in CASES if c["name"] == case).update(rmsnorm_quant_check(*check, 16384))


# experimental/conv/test_conv1d.py (batch, in_channels, out_channels,
# length, filter_size, stride, pad_left, pad_right, dilation, use_bias,
# activation_fn, lnc_shard, dtype): x_in [B, Cin, L], filters [K, Cin,
# Cout], bias [Cout].
def conv1d_case(b, ci, co, length, k, stride, pl, pr, dil, bias, act, lnc, dtype="float32"):
    args = [f"x_in={dtype}[{b},{ci},{length}]", f"filters={dtype}[{k},{ci},{co}]"]
    args += [f"bias={dtype}[{co}]"] if bias else []
    return dict(name=f"conv1d_{b}x{ci}x{length}_co{co}_k{k}_s{stride}_p{pl}{pr}_d{dil}" + ("_bias" if bias else "")
                + (f"_{act}" if act else "") + ("_lnc2" if lnc else "") + f"_{dtype}",
                file="nkilib/experimental/conv/conv1d.py", kernel="conv1d", args=args,
                consts=[f"stride={stride}", f"padding=({pl}, {pr})", f"dilation={dil}",
                        f"activation_fn={CT}.ActFnType.{act}" if act else "activation_fn=None",
                        f"lnc_shard={lnc}"], grid="2", target="trn2",
                ref=f"conv1d:{stride}:{pl}:{pr}:{dil}:{act}",
                tol=(5e-2, 5e-2) if dtype == "bfloat16" else (1e-5, 1e-5))


CASES += [
    conv1d_case(1, 16, 32, 20, 3, 1, 0, 0, 1, True, "SiLU", False),
    conv1d_case(2, 64, 128, 40, 5, 2, 2, 2, 2, True, "GELU", False),
    conv1d_case(1, 48, 64, 128, 100, 1, 1, 1, 1, True, None, False),
    conv1d_case(1, 64, 128, 100, 5, 10, 2, 2, 1, True, "GELU", False),
    conv1d_case(1, 128, 256, 200, 5, 2, 2, 2, 1, True, "GELU", True),
    conv1d_case(2, 96, 192, 150, 7, 1, 3, 3, 1, False, "SiLU", True),
    conv1d_case(1, 64, 128, 100, 5, 1, 2, 2, 1, True, "GELU", False, dtype="bfloat16"),
]


# experimental/loss/test_cross_entropy_forward.py test_grid (B, T, V,
# dtype, positions_per_batch, chunk_size): logits [B*T, V], targets
# [B*T] int32.
def ce_fwd_case(b, t, v, dtype, pb, cs):
    case = dict(name=f"cross_entropy_fwd_{b}x{t}_v{v}_{dtype}_pb{pb}_cs{cs}",
                file="nkilib/experimental/loss/cross_entropy.py", kernel="cross_entropy_forward",
                args=[f"logits_hbm={dtype}[{b * t},{v}]", f"targets_hbm=int32[{b * t}]"],
                consts=[f"positions_per_batch={pb}", f"chunk_size={cs}", f"dtype=nl.{dtype}"],
                grid="2", target="trn2", inputs={"targets_hbm": ("randint", 0, v)})
    # Compared with NumPy's log-sum-exp by the library's rule at its
    # test's tolerances (1e-2 for bfloat16: the kernel sums tens of
    # thousands of bfloat16 terms); not the two largest bfloat16 rows,
    # whose float64 copy of the logits NumPy would need (10-16 GB).
    if dtype == "float32":
        case["ref"] = "cross_entropy"
    elif b * t * v <= 1 << 30:
        case |= dict(ref="cross_entropy", tol=(1e-2, 1e-2))
    return case


CASES += [
    ce_fwd_case(1, 1, 32128, "bfloat16", 1, 32128),
    ce_fwd_case(4, 4096, 32128, "bfloat16", 64, 32128),
    ce_fwd_case(1, 4096, 129280, "float32", 64, 32768),
    ce_fwd_case(5, 2047, 202408, "bfloat16", 64, 65535),
    ce_fwd_case(2, 4096, 129280, "bfloat16", 64, 65535),
]


# core/qkv/test_qkv_tkg.py (lnc, batch, seqlen, hidden, hidden_actual,
# fused_qkv_dim, n_q_heads, n_kv_heads, d_head, norm_type,
# quantization_type, fused_add, norm_bias, qkv_bias, eps, output_layout)
# and test_qkv_cte.py (vnc, batch, seqlen, hidden, hidden_actual,
# fused_qkv_dim, dtype, norm_type, fused_add, norm_bias, eps; fused RoPE
# rows with n_q/n_kv heads and d_head), the `qkv` entry point with the
# tensors test_qkv_common.build_qkv_input makes: input [B, S, H], weights
# [H, I] (float8_e4m3 for STATIC, with qkv_w_scale [128, 3] and
# qkv_in_scale [128, 1]), bias [1, I], gamma and layer-norm bias [1, H],
# mlp_prev / attention_prev [B, S, H], cos/sin caches [B, S, d].
def qkv_case(lnc, b, s, h, i, norm="NO_NORM", quant="NONE", fused_add=False, norm_bias=False, qkv_bias=False,
             layout="BSD", h_actual=None, heads=None, eps=1e-6, dtype="bfloat16", rope=False):
    wdt = "float8_e4m3" if quant == "STATIC" else dtype
    args = [f"input={dtype}[{b},{s},{h}]", f"fused_qkv_weights={wdt}[{h},{i}]"]
    args += [f"bias={dtype}[1,{i}]"] if qkv_bias else []
    args += ["qkv_w_scale=float32[128,3]", "qkv_in_scale=float32[128,1]"] if quant == "STATIC" else []
    args += [f"mlp_prev={dtype}[{b},{s},{h}]", f"attention_prev={dtype}[{b},{s},{h}]"] if fused_add else []
    args += [f"gamma_norm_weights={dtype}[1,{h}]"] if norm != "NO_NORM" else []
    args += [f"layer_norm_bias={dtype}[1,{h}]"] if norm_bias else []
    args += [f"cos_cache={dtype}[{b},{s},{heads[2]}]", f"sin_cache={dtype}[{b},{s},{heads[2]}]"] if rope else []
    consts = [f"output_layout=QKVOutputLayout.{layout}", f"quantization_type=QuantizationType.{quant}",
              f"fused_residual_add={fused_add}", f"fused_norm_type=NormType.{norm}", f"norm_eps={eps}",
              f"hidden_actual={h_actual}", f"fused_rope={rope}"]
    if heads:
        consts += [f"num_q_heads={heads[0]}", f"num_kv_heads={heads[1]}", f"d_head={heads[2]}"]
    name = (f"qkv_lnc{lnc}_{b}x{s}x{h}_i{i}_{norm.lower()}" + (f"_{quant.lower()}" if quant != "NONE" else "")
            + ("_add" if fused_add else "") + ("_nbias" if norm_bias else "") + ("_bias" if qkv_bias else "")
            + (f"_{layout}" if layout != "BSD" else "") + (f"_ha{h_actual}" if h_actual else "")
            + ("_rope" if rope else "") + (f"_{dtype}" if dtype != "bfloat16" else ""))
    case = dict(name=name, file="nkilib/core/qkv/qkv.py", kernel="qkv", args=args, consts=consts,
                grid="2" if lnc == 2 else None, target="trn2")
    d = heads[2] if heads and layout == "NBSd" else ""
    case |= dict(ref=f"qkv:{norm}:{h_actual or ''}:{eps}:{d}", tol=(2e-2, 1e-5), inputs={})
    if rope:
        # The test's caches: normal values for half a row, tiled twice.
        case["ref"] += f":rope={heads[0] + heads[1]},{heads[2]}"
        case["inputs"] |= {"cos_cache": ("tiled_normal",), "sin_cache": ("tiled_normal",)}
    if quant == "STATIC":
        # The test's static rows: input and weights normal clipped to
        # [-1, 1] (the weights then fp8), scales 1/240; rtol 4e-2.
        case["ref"] += f":static={heads[0]},{heads[1]},{heads[2]}"
        case["tol"] = (4e-2, 1e-5)
        case["inputs"] |= {"input": ("clipped_normal", 1.0), "fused_qkv_weights": ("clipped_normal", 1.0),
                           "qkv_w_scale": ("const", 1 / FP8_MAX), "qkv_in_scale": ("const", 1 / FP8_MAX)}
    return case


CASES += [
    # test_qkv_tkg.py
    qkv_case(1, 4, 1, 4096, 896, "RMS_NORM", h_actual=3072, heads=(5, 1, 128)),
    qkv_case(1, 1, 5, 8192, 384, "LAYER_NORM", norm_bias=True, heads=(1, 1, 128)),
    qkv_case(2, 1, 1, 8448, 1920, layout="NBSd", heads=(5, 5, 128)),
    qkv_case(2, 1, 5, 8192, 1280, "RMS_NORM", quant="STATIC", heads=(8, 1, 128)),
    qkv_case(2, 2, 1, 3840, 10240, heads=(64, 8, 128)),
    qkv_case(1, 1, 4, 16384, 384, "RMS_NORM", fused_add=True, heads=(1, 1, 128)),
    qkv_case(1, 4, 1, 32768, 384, fused_add=True, heads=(1, 1, 128)),
    qkv_case(1, 1, 4, 8192, 4608, "RMS_NORM", heads=(34, 1, 128)),
    # test_qkv_cte.py
    qkv_case(1, 1, 127, 512, 512, "RMS_NORM", fused_add=True),
    qkv_case(1, 1, 128, 512, 512, "RMS_NORM", fused_add=True, dtype="float32"),
    qkv_case(1, 1, 512, 1024, 256, "RMS_NORM", fused_add=True, h_actual=768),
    qkv_case(1, 1, 128, 16384, 512, "RMS_NORM", h_actual=15104),
    qkv_case(2, 1, 192, 8320, 1280, heads=(8, 1, 128), rope=True),
    qkv_case(2, 1, 128, 8192, 640, fused_add=True, qkv_bias=True, heads=(8, 1, 64), rope=True),
]


# core/mlp/test_mlp_tkg.py and test_mlp_cte.py (vnc, batch, seqlen,
# hidden, intermediate, dtype, quant dtype, quant type, norm type,
# fused_add, store_add, act_fn, skip_gate, gate/up/down/norm bias, column
# tiling options), the `mlp` entry point with test_mlp_common's tensors:
# hidden [B, S, H] (ROW-quantized inputs are not used here), gate/up [H, I]
# and down [I, H] (float8_e4m3 when quantized, with ROW scales [128, I] /
# [128, H] or STATIC scales [128, 1] and input scales [128, 1]), gamma,
# norm bias and down bias [1, H], gate/up bias [1, I], fused_add [B, S,
# H]; the gate weights are passed even with skip_gate_proj, as the test
# does. core/mlp/mlp.py imports only in the fixed checkout (its stray
# docstring lines removed): run these with /work/co/nki-library-fixed.
def mlp_case(lnc, b, s, h, i, norm="NO_NORM", quant="NONE", fused_add=False, store_add=False, act="SiLU",
             skip_gate=False, biases=(False, False, False, False), dtype="bfloat16", consts=()):
    wdt = dtype if quant == "NONE" else "float8_e4m3"
    args = [f"hidden_tensor={dtype}[{b},{s},{h}]", f"up_proj_weights_tensor={wdt}[{h},{i}]",
            f"down_proj_weights_tensor={wdt}[{i},{h}]"]
    args += [f"gate_proj_weights_tensor={wdt}[{h},{i}]"]
    args += [f"normalization_weights_tensor={dtype}[1,{h}]"] if norm in ("RMS_NORM", "LAYER_NORM") else []
    gb, ub, db, nb = biases
    args += ([f"gate_proj_bias_tensor={dtype}[1,{i}]"] if gb else []) + ([f"up_proj_bias_tensor={dtype}[1,{i}]"]
                                                                         if ub else [])
    args += ([f"down_proj_bias_tensor={dtype}[1,{h}]"] if db else []) + (
        [f"normalization_bias_tensor={dtype}[1,{h}]"] if nb else [])
    args += [f"fused_add_tensor={dtype}[{b},{s},{h}]"] if fused_add else []
    if quant == "ROW":
        args += [f"gate_w_scale=float32[128,{i}]", f"up_w_scale=float32[128,{i}]", f"down_w_scale=float32[128,{h}]"]
    elif quant == "STATIC":
        args += [f"{n}=float32[128,1]" for n in ("gate_w_scale", "up_w_scale", "down_w_scale", "gate_up_in_scale",
                                                  "down_in_scale")]
    cst = [f"normalization_type=NormType.{norm}", f"quantization_type=QuantizationType.{quant}",
           f"activation_fn=ActFnType.{act}", f"skip_gate_proj={skip_gate}", f"store_fused_add_result={store_add}"]
    name = (f"mlp_lnc{lnc}_{b}x{s}x{h}_i{i}_{norm.lower()}" + (f"_{quant.lower()}" if quant != "NONE" else "")
            + ("_add" if fused_add else "") + ("_store" if store_add else "") + f"_{act}"
            + ("_nogate" if skip_gate else "") + ("_b" + "".join(str(int(x)) for x in biases) if any(biases) else "")
            + "".join("_" + c.split("=")[0] for c in consts))
    case = dict(name=name, file="nkilib/core/mlp/mlp.py", kernel="mlp", args=args, consts=cst + list(consts),
                grid="2" if lnc == 2 else None, target="trn2")
    if quant == "NONE":
        # The tests' normal inputs and default tolerance.
        case |= dict(ref=f"mlp:{norm}:{act}" + (":skip_gate" if skip_gate else "")
                     + (":store" if fused_add and store_add else ""), tol=(2e-2, 1e-5))
    return case


CASES += [
    # test_mlp_tkg.py
    mlp_case(2, 1, 1, 4096, 128, consts=("use_tkg_gate_up_proj_column_tiling=False",)),
    mlp_case(2, 4, 5, 8192, 1560, biases=(True, True, True, False),
             consts=("use_tkg_gate_up_proj_column_tiling=False", "use_tkg_down_proj_column_tiling=False")),
    mlp_case(2, 8, 5, 8192, 512, "RMS_NORM", quant="ROW"),
    mlp_case(2, 4, 5, 1024, 512, "RMS_NORM", quant="STATIC", consts=("use_tkg_gate_up_proj_column_tiling=False",)),
    mlp_case(1, 4, 1, 5120, 256, "RMS_NORM", fused_add=True, store_add=True),
    # test_mlp_cte.py
    mlp_case(2, 1, 128, 8192, 896, "LAYER_NORM"),
    mlp_case(1, 1, 578, 1408, 352, act="GELU", skip_gate=True, biases=(False, True, True, False)),
    mlp_case(2, 1, 578, 1408, 352, "RMS_NORM", fused_add=True, act="GELU", biases=(False, True, True, False)),
    mlp_case(2, 1, 1024, 1024, 448, fused_add=True),
    mlp_case(2, 2, 1024, 16384, 416, fused_add=True, store_add=True),
]


# core/output_projection/test_output_proj_tkg.py (B, n_heads, S_tkg,
# d_head, H, quantization_type, test_bias, transpose_out): attention [d,
# B, n, S], weight [n d, H] (float8_e4m3 for STATIC with weight_scale and
# input_scale [128, 1]), bias [1, H].
def out_proj_tkg_case(b, n, s, d, h, quant="NONE", bias=True, transpose=False):
    wdt = "float8_e4m3" if quant == "STATIC" else "bfloat16"
    args = [f"attention=bfloat16[{d},{b},{n},{s}]", f"weight={wdt}[{n * d},{h}]"]
    args += [f"bias=bfloat16[1,{h}]"] if bias else []
    args += ["weight_scale=float32[128,1]", "input_scale=float32[128,1]"] if quant == "STATIC" else []
    return dict(name=f"out_proj_tkg_{b}x{n}x{s}_d{d}_h{h}" + ("_static" if quant == "STATIC" else "")
                + ("" if bias else "_nobias") + ("_T" if transpose else ""),
                file="nkilib/core/output_projection/output_projection_tkg.py", kernel="output_projection_tkg",
                args=args, consts=[f"quantization_type=QuantizationType.{quant}", f"TRANSPOSE_OUT={transpose}"],
                grid="2", target="trn2",
                **(dict(ref=f"out_proj_tkg:{transpose}", tol=(2e-2, 1e-5)) if quant == "NONE" else dict(
                    # The test's static inputs: attention uniform in [-1,
                    # 1), the weight such values over their scale (about
                    # 1/240) in fp8, both scales about 1/240; rtol 5e-2.
                    ref=f"out_proj_tkg:{transpose}:static", tol=(5e-2, 1e-5),
                    inputs={"attention": ("uniform", -1, 1), "weight": ("uniform", -FP8_MAX, FP8_MAX),
                            "weight_scale": ("const", 1 / FP8_MAX), "input_scale": ("const", 1 / FP8_MAX)})))


CASES += [
    out_proj_tkg_case(512, 8, 4, 32, 3072, transpose=True),
    out_proj_tkg_case(4, 8, 4, 64, 5378, bias=False),
    out_proj_tkg_case(4, 10, 8, 128, 8192),
    out_proj_tkg_case(64, 8, 5, 128, 8192, quant="STATIC", transpose=True),
    out_proj_tkg_case(32, 6, 3, 128, 3072, quant="STATIC", bias=False),
]


# core/output_projection/test_output_proj_cte.py (batch, seqlen, hidden,
# n_head, d_head, bias): attention [B, n, d, S], weight [n d, H].
def out_proj_cte_case(b, s, h, n, d, bias):
    args = [f"attention=bfloat16[{b},{n},{d},{s}]", f"weight=bfloat16[{n * d},{h}]"]
    args += [f"bias=bfloat16[1,{h}]"] if bias else []
    return dict(name=f"out_proj_cte_{b}x{s}_h{h}_n{n}_d{d}" + ("" if bias else "_nobias"),
                file="nkilib/core/output_projection/output_projection_cte/output_projection_cte.py",
                kernel="output_projection_cte", args=args, grid="2", target="trn2",
                ref="out_proj_cte", tol=(2e-2, 1e-5))


CASES += [
    out_proj_cte_case(1, 16, 5120, 10, 128, True),
    out_proj_cte_case(1, 128, 3072, 17, 10, True),
    out_proj_cte_case(1, 128, 3072, 8, 32, True),
    out_proj_cte_case(1, 2048, 8192, 1, 128, False),
]


# More rows of core/router_topk/test_router_topk.py (T, H, E, k, act_fn,
# has_bias, router_pre_norm, norm_topk_prob, use_column_tiling,
# use_indirect_dma_scatter, use_PE_broadcast_w_bias, shard_on_tokens),
# every flag written out (the kernel's router_pre_norm defaults to True,
# the tests' rows mostly say False).
def router_row(t, h, e, k, act, bias, pre_norm, norm_prob, col_tiling, scatter, pe_bcast, shard_tokens):
    flags = [f"router_pre_norm={pre_norm}", f"norm_topk_prob={norm_prob}", f"use_column_tiling={col_tiling}",
             f"use_indirect_dma_scatter={scatter}", f"use_PE_broadcast_w_bias={pe_bcast}",
             f"shard_on_tokens={shard_tokens}"]
    case = router_topk_case(t, h, e, k, bias=bias, act=act, consts=flags)
    on = [f.split("=")[0] for f in flags if f.endswith("True")]
    case["name"] = f"router_topk_row_{t}x{h}_e{e}_k{k}_{act.lower()}" + ("" if bias else "_nobias") + "".join(
        "_" + n for n in on)
    return case


CASES += [
    router_row(4, 3072, 256, 4, "SOFTMAX", True, False, False, False, False, False, False),
    router_row(4, 3072, 128, 4, "SOFTMAX", True, False, False, False, False, True, False),
    router_row(16, 3072, 128, 4, "SOFTMAX", True, False, False, True, False, False, False),
    router_row(48, 3072, 128, 4, "SOFTMAX", True, False, False, False, False, False, True),
    router_row(8, 8192, 128, 8, "SIGMOID", True, True, True, False, True, False, False),
    router_row(4, 3072, 128, 1, "SOFTMAX", False, False, False, False, False, False, False),
    router_row(2, 5120, 16, 1, "SOFTMAX", False, True, False, False, True, False, False),
    router_row(32, 256, 128, 4, "SIGMOID", True, False, False, True, True, False, False),
    router_row(1024, 8192, 128, 8, "SOFTMAX", True, True, False, False, True, False, False),
]


# core/topk/test_topk.py (lnc, batch, seqlen, vocab, K, dtype): the test
# builds the RotationalTopkConfig on the host (create_topk_config,
# create_rotational_topk_config, prepare_rotational_constants, which fills
# a cache of NumPy constants) and calls rotational_topk(inp [B*S, V],
# config) at that LNC; the const below is the same expression.
def topk_case(lnc, b, s, v, k):
    cfg = (f"config=prepare_rotational_constants(create_rotational_topk_config(inp_shape=({b * s}, {v}), "
           f"topk_config=create_topk_config(inp_shape=({b}, {s}, {v}), inp_dtype=nl.float32, k={k}, sorted=True, "
           f"num_programs={lnc})))")
    return dict(name=f"rotational_topk_lnc{lnc}_{b}x{s}x{v}_k{k}", file="nkilib/core/topk/rotational_topk.py",
                kernel="rotational_topk", args=[f"inp=float32[{b * s},{v}]"], consts=[cfg],
                grid="2" if lnc == 2 else None, target="trn2", ref=f"topk:{k}")


CASES += [
    topk_case(2, 8, 5, 4058, 256),
    topk_case(1, 4, 5, 8192, 256),
    topk_case(2, 65, 1, 3168, 256),
    topk_case(2, 1, 1, 3168, 7),
    topk_case(1, 1, 63, 3999, 20),
]


# core/attention/test_attention_cte.py: the no-CP rows (bs, seqlen_kv,
# seqlen_q, d, softmax_scale, dtype, causal_mask, tp_q, tp_out) at the
# default LNC and the prefix-cache rows (vnc, bs, seqlen_kv, seqlen_q,
# prior_len, prior_used_len, d, scale, dtype, causal, tp_q, tp_k, tp_out,
# sink, sliding_window): q [bs, Sq, d] (tp_q) or [bs, d, Sq], k [bs, Skv,
# d] (tp_k) or [bs, d, Skv], v [bs, Skv, d], k/v_prior likewise with the
# prior length, prior_used_len int32 [1], sink float32 [bs, 1].
def attn_cte_case(lnc, bs, skv, sq, d, scale, dtype, causal, tp_q, tp_out, tp_k=False, prior=None, sink=False,
                  window=0):
    args = [f"q={dtype}[{bs},{sq},{d}]" if tp_q else f"q={dtype}[{bs},{d},{sq}]",
            f"k={dtype}[{bs},{skv},{d}]" if tp_k else f"k={dtype}[{bs},{d},{skv}]", f"v={dtype}[{bs},{skv},{d}]"]
    inputs = {}
    if prior:
        plen, used = prior
        args += [f"k_prior={dtype}[{bs},{plen},{d}]" if tp_k else f"k_prior={dtype}[{bs},{d},{plen}]",
                 f"v_prior={dtype}[{bs},{plen},{d}]", "prior_used_len=int32[1]"]
        inputs["prior_used_len"] = ("const", used)
    args += [f"sink=float32[{bs},1]"] if sink else []
    consts = [f"scale={scale}", f"causal_mask={causal}", f"tp_q={tp_q}", f"tp_k={tp_k}", f"tp_out={tp_out}"]
    consts += [f"sliding_window={window}"] if window else []
    name = (f"attention_cte_lnc{lnc}_b{bs}_kv{skv}_q{sq}_d{d}_{dtype}" + ("_causal" if causal else "")
            + ("" if tp_q else "_qT") + ("_kT" if tp_k else "") + ("_outT" if tp_out else "")
            + (f"_prior{prior[0]}u{prior[1]}" if prior else "") + ("_sink" if sink else "")
            + (f"_sw{window}" if window else ""))
    case = dict(name=name, file="nkilib/core/attention/attention_cte.py", kernel="attention_cte", args=args,
                consts=consts, grid="2" if lnc == 2 else None, target="trn2", inputs=inputs)
    # The test's inputs are uniform in [0, 1).
    inputs |= {n: ("uniform", 0.0, 1.0) for n in ("q", "k", "v", "k_prior", "v_prior", "sink")}
    case |= dict(ref=f"attn_cte:{scale}:{causal}:{tp_q}:{tp_k}:{tp_out}" + (f":{window}" if window else ""),
                 tol=(2e-2, 1e-5))
    return case


CASES += [
    attn_cte_case(2, 3, 1024, 512, 128, 1.0, "float16", False, False, True),
    attn_cte_case(2, 1, 128, 128, 128, 1.0, "bfloat16", True, False, True),
    attn_cte_case(2, 1, 16384, 16384, 8, 1.0, "float32", True, False, False),
    attn_cte_case(1, 3, 2048, 2048, 128, 1.0, "bfloat16", False, False, False, prior=(512, 500)),
    attn_cte_case(2, 2, 2048, 2048, 64, 1.0, "bfloat16", True, True, True, prior=(512, 500), window=1024),
    attn_cte_case(2, 1, 2001, 2001, 64, 1.0, "bfloat16", True, False, True, prior=(3555, 3000)),
    attn_cte_case(2, 2, 2048, 2048, 64, 1.0, "bfloat16", True, True, True, tp_k=True, prior=(4096, 2048), sink=True),
    attn_cte_case(2, 3, 10240, 10240, 64, 1.0, "bfloat16", True, False, True, prior=(1, 1)),
]


# More rows of core/moe/moe_tkg/test_moe_tkg.py (same columns as above;
# its H = 378 row is a negative test, nkic rejects it too):
# a large or odd hidden size, many tokens, many experts, k = 1 without
# bias, FP8 row quantization and MXFP4 with odd intermediate sizes.
CASES += [
    moe_tkg_case("moe_tkg_all_4x32768_i256_e4", 4, 32768, 256, 4, None, "SiLU", True, bias=False),
    moe_tkg_case("moe_tkg_all_512x5120_e128", 512, 5120, 128, 128, None, "SiLU", True, bias=False),
    moe_tkg_case("moe_tkg_all_1024x3072_i3072_e8", 1024, 3072, 3072, 8, None, "SiLU", True),
    moe_tkg_case("moe_tkg_sel_7x512_e4_k2", 7, 512, 128, 4, 2, "Swish", False),
    moe_tkg_case("moe_tkg_sel_2x5120_e128_k1", 2, 5120, 128, 128, 1, "Swish", False, bias=False),
    moe_tkg_case("moe_tkg_sel_32x3072_i1536_e128_k4", 32, 3072, 1536, 128, 4, "Swish", False),
    moe_tkg_case("moe_tkg_sel_4x384_e4_k2", 4, 384, 128, 4, 2, "Swish", False, bias=False),
    moe_tkg_case("moe_tkg_fp8row_all_4x1024_e4", 4, 1024, 128, 4, None, "SiLU", True, quant="float8_e4m3"),
    moe_tkg_case("moe_tkg_fp8row_sel_32x3072_e8_k4", 32, 3072, 192, 8, 4, "Swish", False, quant="float8_e4m3"),
    moe_tkg_case("moe_tkg_mxfp4_all_128x3072_i90", 128, 3072, 90, 1, None, "Swish", True, dtype="bfloat16",
                 mx="float4_e2m1fn_x4"),
    moe_tkg_case("moe_tkg_mxfp4_all_128x3072_i360", 128, 3072, 360, 1, None, "Swish", True, dtype="bfloat16",
                 mx="float4_e2m1fn_x4"),
]


# core/attention/test_attention_bwd.py (batch, q heads, kv heads, seq,
# head_dim, dtype, causal, sliding_window, num_sinks) at the test's LNC (2
# when the KV head count is even, else 1): q/o/dy [B, Hq, d, S], k/v [B,
# Hkv, d, S], lse [B, Hq, 128, S / 128] float32, sinks [B, Hq] (one sink)
# or [B, Hq, n]; softmax_scale 1.0 when causal.
def attn_bwd_case(b, hq, hkv, s, d, dtype, causal, window=None, sinks=0):
    args = [f"q_ref={dtype}[{b},{hq},{d},{s}]", f"k_ref={dtype}[{b},{hkv},{d},{s}]", f"v_ref={dtype}[{b},{hkv},{d},{s}]",
            f"o_ref={dtype}[{b},{hq},{d},{s}]", f"dy_ref={dtype}[{b},{hq},{d},{s}]",
            f"lse_ref=float32[{b},{hq},128,{s // 128}]"]
    args += [] if not sinks else [f"sinks_ref={dtype}[{b},{hq}]" if sinks == 1 else f"sinks_ref={dtype}[{b},{hq},{sinks}]"]
    # mixed_precision=True as the test passes it (the kernel's default is
    # False: bfloat16 intermediates).
    consts = [f"use_causal_mask={causal}", f"softmax_scale={1.0 if causal else None}", f"sliding_window={window}",
              "mixed_precision=True"]
    case = dict(name=f"attention_bwd_b{b}_q{hq}_kv{hkv}_s{s}_d{d}_{dtype}" + ("_causal" if causal else "")
                + (f"_sw{window}" if window else "") + (f"_sinks{sinks}" if sinks else ""),
                file="nkilib/core/attention/attention_bwd.py", kernel="attention_bwd", args=args, consts=consts,
                grid="2" if hkv % 2 == 0 else None, target="trn2")
    # The forward pass's output and log-sum-exp are made from q, k and v
    # (as the test makes them), and a reference where NumPy takes less
    # than a minute (not the two 275G multiply-add rows).
    if b * hq * s * s * d <= 1 << 37:
        fwd = f"{causal}:{window or 0}:{1.0 if causal else d ** -0.5}"
        case |= dict(inputs={"o_ref": ("attn_fwd", "o", fwd), "lse_ref": ("attn_fwd", "lse", fwd)},
                     ref=f"attn_bwd:{fwd}", tol=(2e-2, 1e-5))
    return case


CASES += [
    attn_bwd_case(1, 12, 12, 1024, 64, "bfloat16", True),
    attn_bwd_case(1, 16, 16, 1024, 64, "bfloat16", False),
    attn_bwd_case(1, 8, 1, 8192, 96, "bfloat16", True),
    attn_bwd_case(1, 64, 8, 4096, 64, "bfloat16", True, window=128, sinks=1),
    attn_bwd_case(2, 3, 3, 2048, 128, "float32", False, sinks=2),
    attn_bwd_case(1, 1, 1, 2048, 128, "bfloat16", True, sinks=2),
    attn_bwd_case(1, 16, 8, 8192, 256, "float32", True),
    # The first 8K configuration (llama3.1-8b), marked heavy in the tests.
    attn_bwd_case(1, 32, 8, 8192, 128, "bfloat16", True),
]

# More rows of core/subkernels/test_rmsnorm_tkg.py and test_layernorm_tkg.py
# (same columns as above).
CASES += [
    norm_tkg_case("rmsnorm_tkg", 1, 1, 4, 2048, consts=("hidden_actual=1920",)),
    norm_tkg_case("rmsnorm_tkg", 2, 256, 5, 3072),
    norm_tkg_case("rmsnorm_tkg", 2, 128, 1, 8192, consts=("hidden_dim_tp=True",)),
    norm_tkg_case("rmsnorm_tkg", 2, 4, 1, 3072, consts=("shard_on_h=True",)),
    norm_tkg_case("rmsnorm_tkg", 2, 1, 1, 16384, consts=("shard_on_h=True",)),
    norm_tkg_case("layernorm_tkg", 1, 1, 8, 8192, beta=True),
    norm_tkg_case("layernorm_tkg", 2, 256, 5, 3072, beta=True),
    norm_tkg_case("layernorm_tkg", 2, 63, 32, 3072, beta=True),
    norm_tkg_case("layernorm_tkg", 2, 1, 1, 16384, beta=True),
]


# More rows of core/attention/test_attention_tkg.py that the wrapper above
# covers (HBM inputs with use_pos_id and fuse_rope): d_head 64 with three
# heads, a 24576 prior, a 256 bucket without the transposed K prior.
CASES += [
    attn_tkg_case(4, 3, 7, 16384, 16384, 64, True),
    attn_tkg_case(4, 1, 5, 18432, 24576, 64, False),
    attn_tkg_case(4, 2, 7, 256, 16384, 128, False),
]


# core/subkernels/test_find_nonzero_indices.py subset rows (T, E, top_k,
# E_offset, E_local, chunk_size, dtype): col_start_id int32 [1] and
# n_cols, at LNC=2; and the 65536-token rows.
def find_nonzero_case(t, e, chunk, dtype, offset=None, local=None):
    args = [f"input_tensor={dtype}[{t},{e}]"] + (["col_start_id=int32[1]"] if local else [])
    return dict(name=f"find_nonzero_{t}x{e}_{dtype}" + (f"_cols{offset}+{local}" if local else ""),
                file="nkilib/core/subkernels/find_nonzero_indices.py", kernel="find_nonzero_indices", args=args,
                consts=[f"chunk_size={chunk}"] + ([f"n_cols={local}"] if local else []), grid="2", target="trn2",
                inputs={"input_tensor": ("sparse", 1 / 16)} | ({"col_start_id": ("const", offset)} if local else {}),
                ref=f"find_nonzero:{offset or 0}:{local or ''}", tol=(0, 0))


CASES += [
    find_nonzero_case(65536, 128, 16384, "float32"),
    find_nonzero_case(4096, 128, 4096, "int32", 0, 4),
    find_nonzero_case(10240, 128, 10240, "float32", 120, 8),
    find_nonzero_case(65536, 128, 16384, "int32", 32, 16),
]


# core/embeddings/test_rope_hf.py (batch, q heads, kv heads, seq, head_dim,
# dtype, backward): q/k and their outputs [B, H, S, d], cos/sin [B, S, d].
def rope_hf_case(b, hq, hkv, s, d, dtype, backward=False):
    return dict(name=f"rope_hf_b{b}_q{hq}_kv{hkv}_s{s}_d{d}_{dtype}" + ("_bwd" if backward else ""),
                file="nkilib/core/embeddings/rope_hf.py", kernel="rope_hf",
                args=[f"q={dtype}[{b},{hq},{s},{d}]", f"k={dtype}[{b},{hkv},{s},{d}]",
                      f"q_out={dtype}[{b},{hq},{s},{d}]", f"k_out={dtype}[{b},{hkv},{s},{d}]",
                      f"cos={dtype}[{b},{s},{d}]", f"sin={dtype}[{b},{s},{d}]"],
                consts=[f"backward={backward}"], grid="2", target="trn2",
                ref=f"rope_hf:{backward}", tol=(1e-6, 1e-6))


CASES += [rope_hf_case(2, 16, 4, 512, 128, "bfloat16"), rope_hf_case(4, 1, 1, 512, 128, "bfloat16")]


# experimental/loss/test_cross_entropy_backward.py test_grid (B, T, V,
# dtype, positions_per_batch, chunk_size, reduction): logits [B*T, V],
# targets int32 [B*T], lse_state [B*T].
def ce_bwd_case(b, t, v, dtype, pb, cs, reduction):
    return dict(name=f"cross_entropy_bwd_{b}x{t}_v{v}_{dtype}_pb{pb}_cs{cs}_{reduction}",
                file="nkilib/experimental/loss/cross_entropy.py", kernel="cross_entropy_backward",
                args=[f"logits_hbm={dtype}[{b * t},{v}]", f"targets_hbm=int32[{b * t}]",
                      f"lse_state_hbm={dtype}[{b * t}]"],
                consts=[f"reduction='{reduction}'", f"positions_per_batch={pb}", f"chunk_size={cs}",
                        f"dtype=nl.{dtype}"],
                grid="2", target="trn2",
                inputs={"targets_hbm": ("randint", 0, v), "lse_state_hbm": ("lse_of", "logits_hbm")},
                ref=f"ce_bwd:{reduction}",
                tol=(1e-2, 1e-2) if dtype == "bfloat16" else (1e-5, 1e-5))


CASES += [
    ce_bwd_case(4, 4096, 32128, "bfloat16", 64, 16384, "mean"),
    ce_bwd_case(4, 4096, 32128, "float32", 64, 8192, "sum"),
    ce_bwd_case(8, 512, 32128, "bfloat16", 128, 16384, "mean"),
]


# experimental/conv/test_depthwise_conv1d.py (batch, channels, width,
# kernel_size, stride, padding, dtype): img [B, C, 1, W], filter [C, 1, 1,
# K].
def dwconv_case(c, w, k, stride=(1, 1), padding=((0, 0), (0, 0))):
    case = dict(name=f"depthwise_conv1d_{c}x{w}_k{k}_s{stride[1]}_p{padding[1][0]}",
                file="nkilib/experimental/conv/depthwise_conv1d.py", kernel="depthwise_conv1d_implicit_gemm",
                args=[f"img_ref=bfloat16[1,{c},1,{w}]", f"filter_ref=bfloat16[{c},1,1,{k}]"],
                consts=[f"feature_group_count={c}", f"stride={stride}", f"padding={padding}"], target="trn2")
    # A reference where NumPy computes it in seconds (not the 137G
    # multiply-adds of k = 4093). The test's tolerance is the framework's
    # default 1e-5, which after rounding to bf16 only the hardware's own
    # summation order meets: here one bf16 step of the largest output.
    if c * w * k <= 1 << 28:
        case |= dict(ref=f"dwconv:{stride[1]}:{padding[1][0]}", tol=(2.0 ** -8, 0.0))
    return case


CASES += [
    dwconv_case(256, 512, 64, (1, 2), ((0, 0), (5, 5))),
    dwconv_case(512, 5000, 8),
    dwconv_case(16, 512, 3),
    dwconv_case(256, 1024, 512),
    dwconv_case(8192, 4096, 4093),
]


# core/utils/test_tp_broadcast.py and test_cross_partition_copy.py call
# the utilities from small kernels of their own that load the source to
# SBUF, call the utility and store the result; these are the project's
# equivalents. tp_broadcast rows (src_shape, src_offset, broadcast_count,
# src_select_index) at LNC=1; cross_partition_copy rows (src_start,
# dst_start, partitions, free size, total partitions), float32.
TP_BCAST_WRAPPER = """import nki
import nki.isa as nisa
import nki.language as nl
from nkilib.core.utils.tensor_view import TensorView
from nkilib.core.utils.tp_broadcast import tp_broadcast


@nki.jit
def bcast(src_hbm, src_offset: int, count: int, select):
    src = nl.ndarray(src_hbm.shape, src_hbm.dtype, nl.sbuf)
    nisa.dma_copy(src, src_hbm)
    out_sb = nl.ndarray((count, src_hbm.shape[0]), src_hbm.dtype, nl.sbuf)
    view = src if select == None else TensorView(src).select(1, select)
    tp_broadcast(view, out_sb, src_offset)
    out = nl.ndarray((count, src_hbm.shape[0]), src_hbm.dtype, nl.shared_hbm)
    nisa.dma_copy(out, out_sb)
    return out
"""

XPART_WRAPPER = """import nki
import nki.isa as nisa
import nki.language as nl
from nkilib.core.utils.cross_partition_copy import cross_partition_copy


@nki.jit
def xpart(x, src_start: int, dst_start: int, n: int):
    p, f = x.shape
    src = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=x)
    dst = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=dst, value=0.0)
    cross_partition_copy(src=src, dst=dst, src_start_partition=src_start, dst_start_partition=dst_start,
                         num_partitions_to_copy=n, free_dim_size=f)
    out = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=dst)
    return out
"""


def tp_bcast_case(shape, offset, count, select):
    return dict(name=f"tp_broadcast_{'x'.join(map(str, shape))}_o{offset}_c{count}_sel{select}",
                file="tp_bcast_wrapper.py", wrapper=TP_BCAST_WRAPPER, kernel="bcast",
                args=[f"src_hbm=float32[{','.join(map(str, shape))}]"],
                consts=[f"src_offset={offset}", f"count={count}", f"select={select}"], target="trn2",
                ref=f"bcast:{offset}:{count}:{'' if select is None else select}", tol=(1e-6, 0.0))


def xpart_case(src, dst, n, f, p, target="trn2"):
    return dict(name=f"cross_partition_copy_{src}to{dst}_n{n}_f{f}_p{p}_{target}", file="xpart_wrapper.py",
                wrapper=XPART_WRAPPER, kernel="xpart", args=[f"x=float32[{p},{f}]"],
                consts=[f"src_start={src}", f"dst_start={dst}", f"n={n}"], target=target,
                ref=f"xpart:{src}:{dst}:{n}", tol=(0.0, 0.0))


CASES += [
    tp_bcast_case((5, 7), 0, 1, None),
    tp_bcast_case((3, 8, 11), 1, 2, 4),
    tp_bcast_case((13, 3, 13), 9, 12, 2),
    xpart_case(0, 64, 32, 8, 128),
    xpart_case(0, 28, 20, 8, 128),
    xpart_case(17, 0, 15, 8, 32),
    xpart_case(10, 55, 30, 8, 96),
    xpart_case(25, 5, 20, 8, 64),
    xpart_case(0, 28, 20, 128, 128, target="trn3"),
]


# More rows of core/moe/moe_cte/test_moe_cte_unified.py: the hybrid
# shard-on-I implementation and shard-on-block at I = 384 (without the
# row's bias and clamps, which the helper above does not write). The
# hybrid loop reads conditions int32 [N + 1] (1 for each block the dynamic
# loop is to run, as test_moe_cte_common makes it); all 0 here: only the
# static blocks.
CASES += [
    dict(moe_cte_case("moe_cte_shard_I_hybrid_3072_1024_e8", "shard_on_i_hybrid", 3072, 1024, 8, 512, 2048, 16,
                      grid="2")),
    moe_cte_case("moe_cte_shard_block_3072_1024_e8_i384", "shard_on_block", 3072, 1024, 8, 512, 384, 16, grid="2",
                 k=4),
]
CASES[-2]["args"].append("conditions=int32[17]")
CASES[-2]["inputs"]["conditions"] = ("const", 0)


# More rows of experimental/moe/test_bwmm_shard_on_H.py (256 experts at
# top 8, skip-token mode, block 1024, PRE_SCALE) and test_bwmm_bwd.py (top
# 4 at I = 128, 128 experts; no clamp limits), same columns as above.
CASES += [
    bwmm_h_case(7168, 1024, 256, 512, 8, 32, 0, "POST_SCALE"),
    bwmm_h_case(6144, 4096, 16, 1024, 4, 336, 1, "POST_SCALE"),
    bwmm_h_case(5120, 8192, 16, 256, 1, 128, 0, "PRE_SCALE"),
    bwmm_bwd_case(6144, 4096, 16, 512, 4, 128, "None, None, None, None"),
    bwmm_bwd_case(5120, 8192, 128, 256, 1, 128, "None, None, None, None"),
]


# More rows of core/max/test_cascaded_max.py (lnc, batch, seqlen, vocab,
# float32): a 256 vocabulary, batch 65 and 3168 at LNC=1, with the max /
# argmax reference.
CASES += [
    dict(name=f"cascaded_max_{b}x{s}x{v}" + ("_lnc2" if lnc == 2 else ""), file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=[f"input_tensor=float32[{b},{s},{v}]"], grid="2" if lnc == 2 else None,
         target="trn2", ref="max_last")
    for lnc, b, s, v in [(2, 1, 1, 256), (2, 65, 1, 3168), (1, 1, 1, 3168), (2, 63, 1, 3168)]
]


def parse_arg(a):
    """`name=dtype[d0,d1]` -> (name, dtype, shape)."""
    name, spec = a.split("=", 1)
    dtype, shape = spec.rstrip("]").split("[")
    return name, dtype, [int(d) for d in shape.split(",")]


def special_input(np, rng, kind, dtype, shape):
    """An input the kernel needs to be valid (indices in range), as the
    library's tests make it: ("topk", E) draws each row's indices without
    replacement from range(E); ("randint", lo, hi) is uniform in [lo, hi);
    ("const", v) fills with v; ("uniform", lo, hi) is uniform in
    [lo, hi); ("sparse", p) is 1 with probability p, else 0."""
    if kind[0] == "topk":
        rows = int(np.prod(shape[:-1]))
        x = np.stack([rng.choice(kind[1], size=shape[-1], replace=False) for _ in range(rows)])
        return x.reshape(shape).astype(dtype)
    if kind[0] == "randint":
        return rng.integers(kind[1], kind[2], size=shape).astype(dtype)
    if kind[0] == "const":
        return np.full(shape, kind[1], dtype=dtype)
    if kind[0] == "uniform":
        return rng.uniform(kind[1], kind[2], size=shape).astype(dtype)
    if kind[0] == "sparse":
        # Ones at about a fraction kind[1] of the places, zeros elsewhere
        # (the routing masks of the MoE tests).
        return (rng.random(shape) < kind[1]).astype(dtype)
    if kind[0] in ("cache_len", "attn_mask"):
        # The token-generation tests' cache lengths (about 3/4 of the
        # context, 3 apart per batch row) and the mask they imply for the
        # [s_ctx, B, heads, s_tkg] layout: prior position k is valid below
        # its row's cache length, and the last s_tkg positions hold the
        # causal mask of the active tokens.
        if kind[0] == "cache_len":
            b, (s_ctx, s_tkg) = shape[0], CACHE_CTX
            return (((np.arange(b) * 3 + s_ctx // 4 * 3) % (s_ctx - s_tkg)).reshape(shape)).astype(dtype)
        s_ctx, b, _, s_tkg = shape
        lens = (np.arange(b) * 3 + s_ctx // 4 * 3) % (s_ctx - s_tkg)
        mask = (np.arange(s_ctx)[:, None] < lens[None, :]).astype(dtype)[:, :, None, None]
        mask = np.broadcast_to(mask, shape).copy()
        mask[s_ctx - s_tkg:] = np.tril(np.ones((s_tkg, s_tkg), dtype=dtype)).T[:, None, None, :]
        return mask
    if kind[0] == "moe":
        # Routed MoE inputs as the blockwise-matmul tests make them
        # (`moe_routing`): ("moe", what, T, top_k, E, block, skip_token)
        # with what "positions" (token_position_to_id), "experts"
        # (block_to_expert), "affinities" ([rows * E, 1], uniform in
        # [0, 1) at each token's experts, else 0) or "hidden" (uniform in
        # [0, 1)); without skip_token the padding token T has a zero row.
        what, t, k, e, b, skip = kind[1:]
        chosen = moe_choice(np, t, k, e)
        if what in ("positions", "experts"):
            n = int(np.prod(shape)) // (b if what == "positions" else 1)
            x = moe_routing(np, chosen, b, n, skip)[0 if what == "positions" else 1]
            return x.reshape(shape).astype(dtype)
        rows = shape[0] if what == "hidden" else int(np.prod(shape)) // e
        x = rng.random((rows, shape[1] if what == "hidden" else e))
        if what == "affinities":
            x[:t] *= chosen
        if not skip:
            x[t] = 0
        return x.reshape(shape).astype(dtype)
    if kind[0] == "clipped_normal":
        return np.clip(rng.standard_normal(shape), -kind[1], kind[1]).astype(dtype)
    if kind[0] == "tiled_normal":
        # Normal values for the first half of the last dim, repeated in
        # the second (the RoPE caches of core/qkv's tests).
        half = rng.standard_normal(tuple(shape[:-1]) + (shape[-1] // 2,))
        return np.concatenate([half, half], axis=-1).astype(dtype)
    if kind[0] == "active_causal":
        # The causal mask of the active tokens in the [key, B, heads,
        # query] layout of core/attention's token-generation tests: key j
        # is visible to queries i >= j.
        s = shape[0]
        return np.broadcast_to(np.tril(np.ones((s, s), dtype=dtype)).T[:, None, None, :], shape).copy()
    if kind[0] == "pos_ids":
        # Their position ids [B, s_active]: each batch row's cache length
        # (about 3/4 of the kind[1] prior positions, 3 apart per row) for
        # every active token.
        b, s = shape
        lens = (np.arange(b) * 3 + kind[1] // 4 * 3) % (kind[1] - s)
        return np.broadcast_to(lens[:, None], shape).astype(dtype)
    if kind[0] == "topk_reduce":
        # experimental/subkernels/test_topk_reduce.py's layout: T*K rows of
        # random values, each tagged with its token id (an int32 in the
        # last two 16-bit columns), scattered over the padded rows; the
        # other rows are all -1 bits.
        t, k = kind[1], kind[2]
        rows, cols = shape
        buf = np.full((rows, cols), -1, dtype=dtype)
        real = rng.standard_normal((t * k, cols - 2)).astype(dtype)
        ids = np.repeat(np.arange(t, dtype=np.int32), k).reshape(t * k, 1).view(dtype)
        at = rng.permutation(rows)[: t * k]
        buf[at] = np.concatenate([real, ids], axis=1)
        return buf
    raise KeyError(kind)


def moe_choice(np, t, k, e):
    """Each of t tokens' k distinct experts of e, drawn at random as the
    MoE blockwise-matmul tests draw them (afresh, seed 1, for the same
    arguments), as a token x expert 0/1 array."""
    rng = np.random.default_rng(1)
    chosen = np.zeros((t, e))
    for i in range(t):
        chosen[i, rng.choice(e, size=min(k, e), replace=False)] = 1
    return chosen


def moe_routing(np, chosen, b, n, skip_token):
    """The tests' blocks for the choice `chosen`: each expert's tokens, in
    token order, fill its blocks of b places (the experts' blocks in
    expert order, those left of the n going to the last expert), and an
    empty place holds the padding token T (-1 with skip_token). Returns
    (the places' token ids [n * b], each block's expert [n])."""
    t, e = chosen.shape
    blocks = -(-chosen.sum(axis=0).astype(np.int64) // b)
    blocks[-1] += n - blocks.sum()
    positions = np.full(n * b, -1 if skip_token else t, dtype=np.int64)
    start = 0
    for x in range(e):
        tokens = np.nonzero(chosen[:, x])[0]
        positions[start: start + len(tokens)] = tokens
        start += blocks[x] * b
    return positions, np.repeat(np.arange(e), blocks)


# (s_ctx, s_tkg) of the case whose inputs are being made ("cache_len").
CACHE_CTX = (0, 0)


def attention_forward(np, inputs, causal, window, scale):
    """attention_bwd's forward pass from q_ref, k_ref, v_ref (and
    sinks_ref): o [B, Hq, d, S] and lse [B, Hq, 128, S/128] as float64,
    and each head's probabilities (their sink columns last) rounded to
    the inputs' dtype, as the test's reference rounds them."""
    q, k, v = (inputs[n].astype(np.float64) for n in ("q_ref", "k_ref", "v_ref"))
    sinks = inputs.get("sinks_ref")
    b_n, hq, d, s = q.shape
    group = hq // k.shape[1]
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    masked = (j > i) if causal == "True" else np.zeros((s, s), bool)
    if int(window) > 0:
        masked |= j < i - int(window) + 1
    o, lse, probs = np.empty(q.shape), np.empty((b_n, hq, 128, s // 128)), {}
    for b in range(b_n):
        for h in range(hq):
            scores = float(scale) * q[b, h].T @ k[b, h // group]
            scores[masked] = -np.inf
            if sinks is not None:
                extra = sinks.astype(np.float64)[b, h].reshape(1, -1)
                scores = np.concatenate([scores, np.repeat(extra, s, axis=0)], axis=1)
            m = scores.max(axis=1, keepdims=True)
            e = np.exp(scores - m)
            total = e.sum(axis=1, keepdims=True)
            p = (e / total).astype(inputs["q_ref"].dtype).astype(np.float64)
            probs[b, h] = p
            o[b, h] = (p[:, :s] @ v[b, h // group].T).T
            lse[b, h] = (m + np.log(total)).reshape(s // 128, 128).T
    return o, lse, probs


def make_inputs(case, out_dir, checked):
    """The inputs given to `nkic run` as .npy files: every input of a
    case with a reference (random float32), else only those the case
    names in "inputs" (the rest are nkic's random inputs); returns
    (inputs, the --input flags)."""
    import numpy as np

    if any("bfloat16" in a or "float8" in a for a in case.get("args", [])):
        import ml_dtypes  # noqa: F401  (registers the dtype names with NumPy)
    global CACHE_CTX
    rng = np.random.default_rng(0)
    inputs, flags = {}, []
    masks = [parse_arg(a)[2] for a in case.get("args", []) if a.startswith("attention_mask=")]
    if masks:
        CACHE_CTX = (masks[0][0], masks[0][-1])
    special = case.get("inputs", {})
    # Inputs derived from others are made after every other.
    derived = ("lse_of", "affinities_of", "attn_fwd")
    args = [parse_arg(a) for a in case.get("args", [])]
    args.sort(key=lambda a: a[0] in special and special[a[0]][0] in derived)
    for name, dtype, shape in args:
        kind = special.get(name, ("",))
        if kind[0] == "lse_of":
            # The log-sum-exp of each row of another input (the forward
            # pass's state a backward kernel takes).
            logits = inputs[kind[1]]
            x = np.concatenate([
                (lambda r: r.max(axis=1) + np.log(np.exp(r - r.max(axis=1, keepdims=True)).sum(axis=1)))(
                    logits[r0: r0 + 256].astype(np.float64)) for r0 in range(0, logits.shape[0], 256)
            ]).reshape(shape).astype(np.dtype(dtype))
        elif kind[0] == "attn_fwd":
            # attention_bwd's state from the forward pass: o [B, Hq, d, S]
            # in the inputs' dtype, lse [B, Hq, 128, S/128] (query row
            # j * 128 + p at [p, j]).
            o, lse = attention_forward(np, inputs, *kind[2].split(":"))[:2]
            x = (o if kind[1] == "o" else lse).astype(np.dtype(dtype))
        elif kind[0] == "affinities_of":
            # Router affinities [T, E] as the MoE tests make them: zero
            # but at each token's experts in another input's [T, k]
            # indices, where they are positive and sum to one.
            index = inputs[kind[1]].astype(np.int64)
            weights = rng.random(index.shape)
            x = np.zeros(shape)
            np.put_along_axis(x, index, weights / weights.sum(axis=1, keepdims=True), axis=1)
            x = x.astype(np.dtype(dtype))
        elif name in special:
            x = special_input(np, rng, special[name], np.dtype(dtype), shape)
        elif checked:
            x = rng.standard_normal(shape).astype(np.dtype(dtype))
        else:
            continue
        path = os.path.join(out_dir, f"in_{name}.npy")
        np.save(path, x)
        inputs[name] = x
        flags += ["--input", f"{name}={path}"]
    return inputs, flags


def unpack_fp8(np, raw, h, scale):
    """The outputs of a kernel that writes fp8 bytes (float8_e4m3) and, with
    `scale`, each row's f32 dequantization scale in the row's last 4 bytes
    (core/rmsnorm/rmsnorm_quant.py): [..., h] values, [..., 1] scales."""
    import ml_dtypes

    raw = np.ascontiguousarray(raw.astype(np.uint8))
    values = raw[..., :h].view(ml_dtypes.float8_e4m3).astype(np.float64)
    if not scale:
        return [values]
    return [values, np.ascontiguousarray(raw[..., h:h + 4]).view(np.float32).astype(np.float64)]


def compare(case, inputs, out_dir):
    """True when every output has the reference's shape and matches it
    by the library's own rule (its tests' `maxAllClose` in "max" mode:
    every element within atol + rtol * the reference's largest magnitude),
    with rtol=atol=1e-3 or the case's "tol" = (rtol, atol), the tolerances
    of the library's test ("tols": one per output). A case with
    "packed_fp8" has its one output's bytes unpacked first (`unpack_fp8`)."""
    import numpy as np

    expected = reference(case["ref"], inputs)
    tols = case.get("tols", [case.get("tol", (1e-3, 1e-3))] * len(expected))
    if "packed_fp8" in case:
        outputs = unpack_fp8(np, np.load(os.path.join(out_dir, "out0.npy")), *case["packed_fp8"])
    else:
        outputs = [np.load(os.path.join(out_dir, f"out{i}.npy")) for i in range(len(expected))]
    for i, (e, got, (rtol, atol)) in enumerate(zip(expected, outputs, tols)):
        got = got.astype(np.float64)
        if got.shape != e.shape:
            print(f"  out{i}: shape {got.shape}, the reference's is {e.shape}")
            return False
        scale = np.abs(e).max() if e.size else 0.0
        if not (np.abs(got - e) <= atol + rtol * scale).all():
            return False
    return True


WRAP_DIR = tempfile.mkdtemp(prefix="nkilib_corpus_")


def kernel_file(lib, case):
    """The case's kernel file: a library file, or (for kernels the tests
    call from a wrapper of their own) the project's wrapper written to a
    temporary directory."""
    if "wrapper" in case:
        path = os.path.join(WRAP_DIR, case["file"])
        with open(path, "w") as f:
            f.write(case["wrapper"])
        return path
    return os.path.join(lib, SRC, case["file"])


def nkic_cmd(nkic, sub, lib, case):
    cmd = [nkic, sub, kernel_file(lib, case), "--kernel", case["kernel"],
           "--path", os.path.join(lib, SRC)]
    for a in case.get("args", []):
        cmd += ["--arg", a]
    for c in case.get("consts", []):
        cmd += ["--const", c]
    if case.get("grid"):
        cmd += ["--grid", case["grid"]]
    if case.get("target"):
        cmd += ["--target", case["target"]]
    return cmd + (case.get("run_flags", []) if sub == "run" else [])


def first_error(text):
    for line in text.splitlines():
        if "Error:" in line or line.startswith("error["):
            rest = text[text.index(line):].splitlines()
            where = [w.strip() for w in rest if ",-[" in w][:1]
            return line.strip()[:160] + (" at " + where[0][3:].rsplit("/", 1)[-1].rstrip(" ]") if where else "")
    return text.strip().splitlines()[-1][:160] if text.strip() else ""


def tier_run(opts, case, flags, out, tier):
    """One `nkic run` of `case` on simulator tier `tier`, its outputs in
    `out`: (exit code, JSON report, diagnostics, {output file: bytes}),
    or None on a timeout."""
    cmd = (nkic_cmd(opts.nkic, "run", opts.library, case) + flags
           + ["--out", out, "--report", "json", "--sim-tier", tier])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        return None
    files = {}
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            files[name] = f.read()
    return p.returncode, p.stdout, p.stderr, files


def compare_tiers(opts, cases, have_numpy):
    """`--compare-tiers`: each case run on both simulator tiers with the
    same inputs (the driver's own where it makes them), which must agree
    in everything: exit code, the JSON report (simulated time, engine
    figures), the diagnostics text and every byte of every output."""
    same = timeouts = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            needs = have_numpy and (case.get("ref") or case.get("inputs"))
            _, flags = make_inputs(case, tmp, bool(case.get("ref"))) if needs else ({}, [])
            runs, seconds = [], []
            for tier in ("jit", "interp"):
                out = os.path.join(tmp, tier)
                os.mkdir(out)
                t0 = time.monotonic()
                runs.append(tier_run(opts, case, flags, out, tier))
                seconds.append(time.monotonic() - t0)
        jit, interp = runs
        took = f"jit {seconds[0]:.1f}s, interp {seconds[1]:.1f}s"
        if jit is None or interp is None:
            timeouts += 1
            print(f"{case['name']:28} TIMEOUT ({took})")
            continue
        parts = ["exit code", "report", "diagnostics", "outputs"]
        differ = [what for what, a, b in zip(parts, jit, interp) if a != b]
        if differ:
            print(f"{case['name']:28} DIFFERS in {', '.join(differ)} ({took})")
        else:
            same += 1
            print(f"{case['name']:28} same (exit code {jit[0]}, {len(jit[3])} outputs; {took})")
    print(f"\n{same}/{len(cases)} identical between tiers"
          + (f", {timeouts} timed out" if timeouts else ""))
    return 0 if same + timeouts == len(cases) else 1


def perturbed(rng, case):
    """`case` with one `--arg` or `--const` changed the way a user's
    mistake changes it: a dim one more, one less, halved, doubled, 1, 3,
    127 or 129, a dtype swapped, a dim added or dropped; an integer
    constant one more, one less, doubled or 0, a boolean one flipped.
    Returns the variant and the changed spec (None when there is nothing
    to change)."""
    args, consts = list(case.get("args", [])), list(case.get("consts", []))
    simple = [i for i, c in enumerate(consts)
              if re.fullmatch(r"[^=]+=(-?\d+|True|False)", c)]
    if simple and (not args or rng.random() < 0.3):
        i = rng.choice(simple)
        name, value = consts[i].split("=", 1)
        if value in ("True", "False"):
            value = "False" if value == "True" else "True"
        else:
            v = int(value)
            value = str(rng.choice([v + 1, v - 1, v * 2, 0]))
        consts[i] = f"{name}={value}"
        return dict(case, consts=consts), consts[i]
    if not args:
        return case, None
    i = rng.randrange(len(args))
    name, spec = args[i].split("=", 1)
    dtype, dims = spec.rstrip("]").split("[")
    dims = [int(d) for d in dims.split(",") if d]
    kind = rng.choice(["dim", "dim", "dtype", "rank"])
    if kind == "dim" and dims:
        k = rng.randrange(len(dims))
        d = dims[k]
        dims[k] = rng.choice([d + 1, max(d - 1, 1), max(d // 2, 1), d * 2, 1, 3, 127, 129])
    elif kind == "dtype":
        dtype = rng.choice(["float32", "bfloat16", "float16", "float8_e4m3", "int32", "uint8"])
    elif dims and (len(dims) > 1 and rng.random() < 0.5):
        dims = dims[:-1]
    else:
        dims = dims + [1]
    args[i] = f"{name}={dtype}[{','.join(map(str, dims))}]"
    return dict(case, args=args), args[i]


def crashed(p):
    """Whether a finished `nkic` process crashed rather than answered: a
    signal, Rust's panic exit code or a panic message."""
    return p.returncode < 0 or p.returncode == 101 or "panicked" in p.stderr


def perturb(opts, cases):
    """`--perturb N`: N variants of each case with one argument's shape or
    dtype, or one simple constant, changed (`perturbed`, seeded by
    `--seed`), each checked with
    `nkic check` (and, with `--perturb-run`, run when it checks) and
    reported when nkic crashes or passes the timeout instead of giving a
    diagnostic or a result. Most variants are wrong for their kernel; the
    point is that nkic says so."""
    rng = random.Random(opts.seed)
    tried = crashes = 0
    for case in cases:
        for _ in range(opts.perturb):
            # A change may give back the same value (1 halved is 1): draw
            # again, a few times.
            for _ in range(10):
                variant, changed = perturbed(rng, case)
                if changed is None or variant != case:
                    break
            if changed is None or variant == case:
                continue
            tried += 1
            subs = ["check", "run"] if opts.perturb_run else ["check"]
            for sub in subs:
                cmd = nkic_cmd(opts.nkic, sub, opts.library, variant)
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
                except subprocess.TimeoutExpired:
                    crashes += 1
                    print(f"{case['name']:28} {changed}: {sub} TIMEOUT")
                    break
                if crashed(p):
                    crashes += 1
                    tail = [l for l in p.stderr.splitlines() if "panicked" in l or "invariant" in l]
                    print(f"{case['name']:28} {changed}: {sub} CRASHED (exit {p.returncode}) "
                          + " ".join(tail)[:300])
                    break
                if p.returncode != 0:
                    if opts.verbose:
                        print(f"{case['name']:28} {changed}: {sub} {first_error(p.stderr)}")
                    break
    print(f"\n{tried} variants, {crashes} crashed or timed out")
    return 1 if crashes else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("library", help="a checkout of github.com/aws-neuron/nki-library")
    ap.add_argument("--nkic", default="target/debug/nkic")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--only", metavar="REGEX", help="run only the cases whose name matches REGEX")
    ap.add_argument("--print-cmd", action="store_true",
                    help="print each selected case's `nkic check` command line instead of running it")
    ap.add_argument("--compare-tiers", action="store_true",
                    help="run each selected case with `--sim-tier jit` and `--sim-tier interp` and "
                         "compare exit codes, reports, diagnostics and output bytes (issue 15)")
    ap.add_argument("--perturb", type=int, metavar="N", default=0,
                    help="check N variants of each selected case, one argument's shape or dtype "
                         "changed, and report any that make nkic crash or time out")
    ap.add_argument("--perturb-run", action="store_true",
                    help="with --perturb: also run the variants that check")
    ap.add_argument("--seed", type=int, default=0, help="the seed of --perturb's changes")
    opts = ap.parse_args()
    try:
        import numpy  # noqa: F401
        have_numpy = True
    except ImportError:
        have_numpy = False
    n_spec = n_run = n_match = n_ref = 0
    cases = [c for c in CASES if not opts.only or re.search(opts.only, c["name"])]
    if opts.print_cmd:
        for case in cases:
            print(shlex.join(nkic_cmd(opts.nkic, "check", opts.library, case)))
        return 0
    if opts.compare_tiers:
        return compare_tiers(opts, cases, have_numpy)
    if opts.perturb:
        return perturb(opts, cases)
    for case in cases:
        t0 = time.monotonic()
        try:
            chk = subprocess.run(nkic_cmd(opts.nkic, "check", opts.library, case),
                                 capture_output=True, text=True, timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            print(f"{case['name']:28} TIMEOUT in check")
            continue
        t_check = time.monotonic() - t0
        if chk.returncode != 0:
            print(f"{case['name']:28} specialize FAIL ({t_check:.1f}s): {first_error(chk.stderr)}")
            continue
        n_spec += 1
        with tempfile.TemporaryDirectory() as out:
            checked = bool(case.get("ref")) and have_numpy
            needs = checked or (case.get("inputs") and have_numpy)
            inputs, flags = make_inputs(case, out, checked) if needs else ({}, [])
            t0 = time.monotonic()
            try:
                # float32 copies of float outputs, so a bfloat16 output
                # compares by value (nkic writes it as raw `<u2` bits);
                # packed fp8 bytes stay raw (`unpack_fp8`).
                as_f32 = [] if "packed_fp8" in case else ["--out-dtype", "float32"]
                run = subprocess.run(nkic_cmd(opts.nkic, "run", opts.library, case) + flags
                                     + ["--out", out] + as_f32,
                                     capture_output=True, text=True, timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run TIMEOUT")
                continue
            t_run = time.monotonic() - t0
            if run.returncode != 0:
                print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run FAIL ({t_run:.1f}s): "
                      f"{first_error(run.stderr)}")
                continue
            n_run += 1
            verdict = "no reference"
            if checked:
                n_ref += 1
                ok = compare(case, inputs, out)
                n_match += ok
                verdict = "matches the reference" if ok else "DIFFERS from the reference"
            print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run ok ({t_run:.1f}s), {verdict}")
            if opts.verbose:
                print(run.stdout)
    total = len(cases)
    print(f"\n{n_spec}/{total} specialize, {n_run}/{total} run, {n_match}/{n_ref} match"
          + ("" if have_numpy else " (NumPy not available: no comparisons)"))


if __name__ == "__main__":
    sys.exit(main())

//! Verifier tests: each case is a small `.nkasm` program and the exact
//! messages the verifier must produce for it.

use crate::text::assemble;
use crate::verify::verify;

/// Assembles `body` under a standard header and returns the verifier's
/// messages (empty when the program is valid).
fn check(target: &str, body: &str) -> Vec<String> {
    let text = format!(
        ".target {target}\n.arg a f32[128,512] input\n.arg out f32[128,512] output\n.sem s\n.sem t\n{body}"
    );
    let program = assemble(&text).unwrap_or_else(|e| panic!("does not assemble: {e:?}\n{text}"));
    match verify(&program) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

fn ok(body: &str) {
    assert_eq!(check("trn3", body), Vec::<String>::new(), "{body}");
}

fn fails(body: &str, expected: &[&str]) {
    assert_eq!(check("trn3", body), expected, "{body}");
}

#[test]
fn a_valid_pipeline() {
    ok("
.queue dma0
  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512] signal(s)
  dma_copy dst=hbm.out[0:128*512]:f32[1,512] src=sbuf[0:128]+2048:f32[1,512] wait(t>=1)
.queue scalar
  activation dst=sbuf[0:128]+2048:f32[1,512] src=sbuf[0:128]:f32[1,512] func=exp scale=1.0 wait(s>=1) signal(t)
");
}

#[test]
fn engines_and_targets() {
    fails(
        ".queue vector\n  activation dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] func=exp scale=1.0\n",
        &["vector[0] `activation`: cannot run on the vector queue; it runs on: scalar"],
    );
    assert_eq!(
        check(
            "trn2",
            ".queue vector\n  exponential dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] max_value=0.0\n"
        ),
        vec!["vector[0] `exponential`: needs trn3 or newer; the program targets trn2"]
    );
    assert_eq!(
        check(
            "trn2",
            ".queue vector\n  tensor_copy dst=sbuf[0:128]:f8e4m3fn[1,4] src=sbuf[0:128]:f32[1,4]\n"
        ),
        vec!["vector[0] `tensor_copy`: `dst` has dtype float8_e4m3fn which trn2 does not have"]
    );
    fails(
        ".queue dma16\n  nop\n",
        &["queue dma16 does not exist: trn3 has dma0..dma15"],
    );
}

#[test]
fn partitions_and_bounds() {
    fails(
        ".queue vector\n  tensor_copy dst=sbuf[32:64]:f32[1,4] src=sbuf[0:64]:f32[1,4]\n",
        &[
            "vector[0] `tensor_copy`: `dst` starts at partition 32 with 64 partitions; 33 to 64 partitions must start at partition 0 or 64",
        ],
    );
    fails(
        ".queue vector\n  tensor_copy dst=sbuf[96:64]:f32[1,4] src=sbuf[0:64]:f32[1,4]\n",
        &["vector[0] `tensor_copy`: `dst` covers partitions 96..160, beyond the 128 partitions"],
    );
    // DMA may use any partition range.
    ok(".queue dma0\n  dma_copy dst=sbuf[5:3]:f32[1,4] src=hbm.a[0:3*512]:f32[1,4]\n");
    fails(
        ".queue vector\n  memset dst=sbuf[0:128]+245000:f32[1,512] value=0.0\n",
        &[
            "vector[0] `memset`: `dst` touches bytes 245000..247048 of each partition, outside the 245752 usable SBUF bytes per partition",
        ],
    );
    fails(
        ".queue vector\n  memset dst=psum[0:128]+2:f32[1,4] value=0.0\n",
        &["vector[0] `memset`: `dst` PSUM offset 2 is not 4-byte aligned"],
    );
    fails(
        ".queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,513] src=hbm.a[0:128*512]:f32[1,513]\n",
        &["dma0[0] `dma_copy`: `src` touches bytes 0..262148 of `a`, which has 262144 bytes"],
    );
    fails(
        ".queue vector\n  tensor_copy dst=sbuf[0:1]:f32[4,0] src=sbuf[0:1]:f32[1,0]\n",
        &[
            "vector[0] `tensor_copy`: `dst` dim 0 has count 0",
            "vector[0] `tensor_copy`: `src` dim 0 has count 0",
        ],
    );
}

#[test]
fn memories_per_engine() {
    fails(
        ".queue gpsimd\n  iota dst=psum[0:128]:i32[1,4] pattern=[1,4] offset=0 channel_multiplier=1\n",
        &[
            "gpsimd[0] `iota`: `dst` is in PSUM; GpSimd cannot access PSUM",
            "gpsimd[0] `iota`: `dst` of iota must be in SBUF",
        ],
    );
    fails(
        ".queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,4] src=psum[0:128]:f32[1,4]\n",
        &["dma0[0] `dma_copy`: `src` is in PSUM; DMA can neither read nor write PSUM"],
    );
    fails(
        ".queue vector\n  tensor_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512]\n",
        &[
            "vector[0] `tensor_copy`: `src` is in HBM; the vector engine only accesses SBUF and PSUM (use a DMA)",
        ],
    );
    fails(
        ".queue vector\n  tensor_tensor dst=sbuf[0:128]:f32[1,4] src0=psum[0:128]:f32[1,4] src1=psum[0:128]+16:f32[1,4] op=add\n",
        &[
            "vector[0] `tensor_tensor`: `src0` and `src1` are both in PSUM; at most one input may be",
        ],
    );
    // Registers may load from HBM on any sequencer.
    ok(".queue sync\n  reg_load dst=r0 src=hbm.a[0:1]:f32\n");
}

#[test]
fn matmul_rules() {
    ok(
        ".queue tensor\n  nc_matmul dst=psum[0:128]:f32[1,512] stationary=sbuf[0:128]:bf16[1,128] moving=sbuf[0:128]+256:bf16[1,512]\n",
    );
    fails(
        ".queue tensor\n  nc_matmul dst=psum[0:64]:f32[1,512] stationary=sbuf[0:128]:f32[1,128] moving=psum[0:128]:bf16[1,512]\n",
        &[
            "tensor[0] `nc_matmul`: `moving` is in PSUM; TensorE reads its inputs from SBUF",
            "tensor[0] `nc_matmul`: `dst` must be [128, 512] (stationary columns × moving columns), found [64, 512]",
            "tensor[0] `nc_matmul`: fp32/tf32 inputs cannot be mixed with narrower ones",
        ],
    );
    assert_eq!(
        check(
            "trn2",
            ".queue tensor\n  nc_matmul dst=psum[0:128]+1024:f32[1,512] stationary=sbuf[0:128]:bf16[1,128] moving=sbuf[0:128]+256:bf16[1,512]\n"
        ),
        vec![
            "tensor[0] `nc_matmul`: `dst` spans PSUM banks 0..=1; a matmul result on trn2 may use 1 bank"
        ]
    );
    // Double-row: [P, 2, n] fp8 inputs.
    ok(
        ".queue tensor\n  nc_matmul dst=psum[0:64]:f32[1,256] stationary=sbuf[0:128]:f8e4m3[64,2][1,64] moving=sbuf[0:128]+512:f8e5m2[256,2][1,256] perf_mode=double_row\n",
    );
    assert_eq!(
        check(
            "trn2",
            ".queue tensor\n  nc_matmul dst=psum[0:128]:f32[1,4096] stationary=sbuf[0:128]:bf16[1,128] moving=sbuf[0:128]+256:bf16[1,4096]\n"
        ),
        vec![
            "tensor[0] `nc_matmul`: `moving` has 4096 columns; the limit with a float32 `dst` is 512",
            "tensor[0] `nc_matmul`: `dst` spans PSUM banks 0..=7; a matmul result on trn2 may use 1 bank",
        ]
    );
    fails(
        ".queue tensor\n  nc_matmul dst=psum[32:32]:f32[1,64] stationary=sbuf[32:32]:bf16[1,32] moving=sbuf[32:32]:bf16[1,64] tile_position=[32,32] tile_size=[32,32]\n",
        &[],
    );
    fails(
        ".queue tensor\n  nc_matmul dst=psum[0:32]:f32[1,64] stationary=sbuf[32:32]:bf16[1,32] moving=sbuf[32:32]:bf16[1,64] tile_position=[32,32] tile_size=[32,32]\n",
        &["tensor[0] `nc_matmul`: `dst` must start on partition 32 (the PE tile's first column)"],
    );
}

#[test]
fn mx_layouts() {
    ok(".queue vector
  quantize_mx dst=sbuf[0:128]:f8e4m3fnx4[1,128] src=sbuf[0:128]+1024:bf16[1,512] dst_scale=sbuf[4:100]+4096:e8m0[1,128]
.queue tensor
  nc_matmul_mx dst=psum[0:128]:f32[1,128] stationary=sbuf[0:128]:f8e4m3fnx4[1,128] moving=sbuf[0:128]:f8e4m3fnx4[1,128] stationary_scale=sbuf[0:100]+4096:e8m0[1,128] moving_scale=sbuf[4:100]+4096:e8m0[1,128]
");
    fails(
        ".queue vector\n  quantize_mx dst=sbuf[0:128]:f8e4m3fnx4[1,128] src=sbuf[0:128]+1024:bf16[1,512] dst_scale=sbuf[2:96]+4096:e8m0[1,128]\n",
        &[
            "vector[0] `quantize_mx`: `dst_scale` must start at offset 0, 4, 8 or 12 of the data's first quadrant (partition 0), found partition 2",
            "vector[0] `quantize_mx`: `dst_scale` must cover 100 partitions (4 per quadrant of the 128-partition data), found 96",
        ],
    );
}

#[test]
fn alu_and_reduce_rules() {
    fails(
        ".queue vector\n  tensor_tensor dst=sbuf[0:128]:f32[1,4] src0=sbuf[0:128]:f32[1,4] src1=sbuf[0:128]+16:f32[1,4] op=bitwise_and\n",
        &["vector[0] `tensor_tensor`: bitwise operators need integer operands, found float32"],
    );
    fails(
        ".queue vector\n  tensor_scalar dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] op0=add\n",
        &["vector[0] `tensor_scalar`: `op0=add` needs `operand0`"],
    );
    ok(
        ".queue vector\n  tensor_scalar dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] op0=abs op1=multiply operand1=sbuf[0:128]+64:f32[1,1]\n",
    );
    fails(
        ".queue vector\n  tensor_reduce dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[8,4][1,8] op=add last_dims=1\n",
        &[],
    );
    fails(
        ".queue vector\n  tensor_reduce dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[8,4][1,8] op=power last_dims=2\n",
        &[
            "vector[0] `tensor_reduce`: `power` is not a reduction operator",
            "vector[0] `tensor_reduce`: `dst` must have 1 elements per partition (the kept dims), found 4",
        ],
    );
    fails(
        ".queue vector\n  tensor_scalar_reduce dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] op0=multiply operand0=2.0 reduce_op=add reduce_cmd=load_reduce reduce_res=sbuf[0:128]+64:f32[1,2]\n",
        &[
            "vector[0] `tensor_scalar_reduce`: `reduce_cmd=load_reduce` needs an initial value",
            "vector[0] `tensor_scalar_reduce`: `reduce_res` must be [128, 1], found [128, 2]",
        ],
    );
    fails(
        ".queue scalar\n  activation dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]:f32[1,4] func=exp scale=sbuf[0:64]+64:f32[1,1] reduce_cmd=reset_reduce\n",
        &[
            "scalar[0] `activation`: `scale` covers 64 partitions but the data covers 128",
            "scalar[0] `activation`: `activation` reduces with `reduce_op=add` only",
        ],
    );
}

#[test]
fn control_flow() {
    ok("
.queue sync
  reg_set dst=r0 value=0
L0:
  reg_alu dst=r0 op=add a=r0 b=1
  branch cond=lt a=r0 b=8 target=L0
");
    fails(
        ".queue sync\n  reg_set dst=r64 value=0\n  jump target=L1\nL1:\nL1:\n",
        &[
            "sync[3] `label`: label L1 is defined twice in queue sync",
            "sync[0] `reg_set`: register r64 does not exist: sequencers have r0..r63",
        ],
    );
    fails(
        ".queue sync\n  jump target=L0\n.queue vector\nL0:\n",
        &["sync[0] `jump`: label L0 is not defined in this queue"],
    );
}

#[test]
fn semaphores() {
    fails(
        ".queue vector\n  nop wait(s>=1)\n",
        &["vector[0] `nop`: waits for `s` but no instruction signals `s`"],
    );
    fails(
        ".queue vector\n  nop wait(s>=2)\n.queue scalar\n  nop signal(s)\n",
        &[
            "vector[0] `nop`: waits for `s` >= 2 but at most 1 signals of `s` can happen before it: this queue would wait forever",
        ],
    );
    // A queue cannot wait for its own later signal.
    fails(
        ".queue vector\n  nop wait(s>=1)\n  nop signal(s)\n",
        &[
            "vector[0] `nop`: waits for `s` >= 1 but at most 0 signals of `s` can happen before it: this queue would wait forever",
        ],
    );
    // Earlier own signals count; signals from a looping queue are unbounded.
    ok(".queue vector\n  nop signal(s)\n  nop wait(s>=1)\n");
    ok(".queue vector\n  nop wait(s>=5)\n.queue sync\nL0:\n  nop signal(s)\n  jump target=L0\n");
}

#[test]
fn gathers_and_random_numbers() {
    // An embedding table with fewer rows than the gather: rows come from
    // `index`, so only one row's extent is checked statically.
    let text = ".target trn3\n.arg table f32[50,64] input\n.queue dma0\n  dma_gather dst=sbuf[0:128]:f32[1,64] src=hbm.table[0:128*64]:f32[1,64] index=sbuf[0:128]+4096:i32[1,1]\n";
    let program = assemble(text).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify(&program).expect("verifies");
    // The token names the very program that was verified.
    assert!(std::ptr::eq(verified.get(), &program));
    assert_eq!(verified.hbm.len(), 1);
    ok(
        ".queue dma0\n  dma_gather dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512] index=sbuf[0:128]+4096:i32[1,1]\n",
    );
    fails(
        ".queue dma0\n  dma_gather dst=sbuf[0:128]:f32[1,512] src=sbuf[0:128]+8192:f32[1,512] index=sbuf[0:64]+4096:f32[1,1]\n",
        &[
            "dma0[0] `dma_gather`: `src` of a gather must be an HBM pattern (its rows are chosen by `index`)",
            "dma0[0] `dma_gather`: `index` must be [128, 1] (one row number per transferred row), found [64, 1]",
            "dma0[0] `dma_gather`: `index` must be int32 or uint32, found float32",
        ],
    );
    fails(
        ".queue dma0\n  dma_scatter dst=hbm.out[0:128*512]:i32[1,512] src=sbuf[0:128]:i32[1,512] index=sbuf[0:128]+4096:u32[1,1] accumulate=true\n",
        &["dma0[0] `dma_scatter`: `accumulate` needs a float `dst`"],
    );
    fails(
        ".queue vector\n  rng dst=sbuf[0:128]:f32[1,4]\n  rand2 dst=sbuf[0:128]:f32[1,4] min=1.0 max=1.0\n  set_rng_seed src=sbuf[0:1]:u16[1,2]\n",
        &[
            "vector[0] `rng`: `dst` must be an integer dtype, found float32",
            "vector[1] `rand2`: `min` 1.0 must be below `max` 1.0",
            "vector[2] `set_rng_seed`: `src` must be one 32-bit element, found 2 elements of uint16",
        ],
    );
}

#[test]
fn bool_predicates() {
    // `bool` (a byte holding 0 or 1) is a predicate dtype of both
    // predicated instructions; a float predicate is not.
    ok(
        ".queue vector\n  tensor_copy_predicated dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]+16:f32[1,4] predicate=sbuf[0:128]+64:bool[1,4]\n",
    );
    ok(
        ".queue vector\n  select_reduce dst=sbuf[0:128]:f32[1,4] predicate=sbuf[0:128]+64:bool[1,4] on_true=sbuf[0:128]+16:f32[1,4] on_false=0.0\n",
    );
    fails(
        ".queue vector\n  tensor_copy_predicated dst=sbuf[0:128]:f32[1,4] src=sbuf[0:128]+16:f32[1,4] predicate=sbuf[0:128]+64:f32[1,4]\n",
        &[
            "vector[0] `tensor_copy_predicated`: `predicate` must be uint8, uint16, uint32 or bool, found float32",
        ],
    );
    fails(
        ".queue vector\n  select_reduce dst=sbuf[0:128]:f32[1,4] predicate=sbuf[0:128]+64:f32[1,4] on_true=sbuf[0:128]+16:f32[1,4] on_false=0.0\n",
        &[
            "vector[0] `select_reduce`: `predicate` must be int8, uint8, int16, uint16 or bool, found float32",
        ],
    );
}

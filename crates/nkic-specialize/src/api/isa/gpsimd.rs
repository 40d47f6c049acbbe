//! GpSimd (isa.md §6.6): `tensor_partition_reduce`, the gathers
//! (`local_gather`, `nc_n_gather`, `nl.gather_flattened`),
//! `sequence_bounds`, `nonzero_with_count`, `topk`, and the identity
//! matrix built on `iota` (`nl.shared_identity_matrix`; constants of the
//! host, `nl.shared_constant`, are `api/host.rs`).
//!
//! Choice where the spec is silent: `nl.shared_identity_matrix` is an
//! `iota` of `f - p` compared with 0 into an SBUF tile.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{AluOp, DType, Dim, Engine, Fp32, Target};

use crate::api::check::{self, shape_text};
use crate::api::isa::unsupported;
use crate::api::lower::bitvec_dtypes;
use crate::api::rules::OpIn;
use crate::api::table::{
    ApiDef, Bound, DATA, Kind, NAME, OP, OUT_DTYPE, Param, SRC, instruction, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const GPSIMD: &[Engine] = &[Engine::GpSimd];

/// `indices` of the per-partition gathers.
const INDICES: Param = req("indices", Kind::Tensor);

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.tensor_partition_reduce",
        [OP, DATA],
        "Reduces across partitions on GpSimd: `dst[0, f] = op over p of data[p, f]`.",
        &[
            "`data` and `dst` are SBUF (GpSimd cannot access PSUM); `dst` has one partition and `data`'s free size.",
            "`op` is `nl.add`, `nl.average`, `nl.maximum`, `nl.bitwise_or` or `nl.bitwise_and`.",
        ],
        tensor_partition_reduce,
    )
    .with_value_form(),
    instruction!(
        "nisa.local_gather",
        [
            req("src_buffer", Kind::Tensor),
            req("index", Kind::Tensor),
            opt("num_elem_per_idx", Kind::Int, "1"),
            opt("num_valid_indices", Kind::Int, "None"),
        ],
        "Per GpSimd core (16 partitions): every partition gathers `num_elem_per_idx` elements of its own `src_buffer` row at each of the core's indices (read partition-first from `index`).",
        &[
            "`src_buffer`, `index` and `dst` are SBUF; `src_buffer` and `index` have the same partition count, a multiple of 16.",
            "`index` is uint16; `num_elem_per_idx` is 1, 2, 4, 8, 16 or 32; at most 4096 indices per core.",
            "`dst` has `src_buffer`'s dtype and partitions and `num_valid_indices × num_elem_per_idx` elements per partition.",
        ],
        local_gather,
    )
    .with_value_form(),
    instruction!(
        "nisa.nc_n_gather",
        [
            DATA,
            INDICES,
        ],
        "Per partition, `dst[p, j] = data_flat[p, indices[p, j]]` over `data`'s flattened free dims.",
        &[
            "`data`, `indices` and `dst` are SBUF with equal partition counts (≤ 128).",
            "`indices` is uint32 or int32; `dst` has `indices`' free size and `data`'s dtype.",
        ],
        n_gather,
    )
    .with_value_form(),
    instruction!(
        "nisa.sequence_bounds",
        [
            req("segment_ids", Kind::Tensor),
        ],
        "For sorted segment ids `(1, n)` (0 = padding), the start index and one-past-end index of each element's segment, as `(1, 2, n)`.",
        &[
            "`segment_ids` is SBUF `(1, n)` float32 or int32.",
            "`dst` is SBUF with the same dtype, one partition and `2 × n` elements.",
        ],
        sequence_bounds,
    )
    .with_value_form(),
    instruction!(
        "nisa.nonzero_with_count",
        [
            SRC,
            opt("index_offset", Kind::Int, "0"),
            opt("padding_val", Kind::Int, "-1"),
        ],
        "On the first partition of each GpSimd core: the positions of nonzero elements (plus `index_offset`), padded with `padding_val`, then their count.",
        &[
            "`src` is SBUF float32 or int32; `dst` is SBUF int32 with the same partitions and one more element per partition.",
        ],
        nonzero_with_count,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.topk",
        &[
            req("val_dst", Kind::Tensor),
            req("idx_dst", Kind::Tensor),
            SRC,
            req("n", Kind::Int),
            NAME,
        ],
        GPSIMD,
        "The K largest of `n` values per 16-partition group, with their indices. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    )
    .new_in(Target::Trn3),
    ApiDef::new(
        "nl.gather_flattened",
        &[
            DATA,
            INDICES,
            opt("axis", Kind::Int, "0"),
            OUT_DTYPE,
        ],
        GPSIMD,
        "A new tile with `out[p, j] = data_flat[p, indices[p, j]]` over `data`'s flattened free dims (`nisa.nc_n_gather`).",
        &[
            "`axis` is 0 (the gather is per partition).",
            "The `nisa.nc_n_gather` rules apply.",
        ],
        nl_gather_flattened,
    ),
    ApiDef::new(
        "nl.shared_identity_matrix",
        &[
            req("n", Kind::Int),
            opt("dtype", Kind::DType, "nl.uint8"),
            opt("dst", Kind::Tensor, "None"),
        ],
        GPSIMD,
        "An `n × n` identity matrix in SBUF (in `dst` when given): an `iota` of `f - p` compared with 0.",
        &[
            "`n` is 1 to 128.",
            "`dst`, when given, is an SBUF `(n, n)` tile.",
        ],
        nl_identity,
    ),
];

/// The operators of `tensor_partition_reduce`.
const PARTITION_REDUCE_OP: OpIn = OpIn {
    name: "op",
    allowed: &[
        AluOp::Add,
        AluOp::Average,
        AluOp::Maximum,
        AluOp::BitwiseOr,
        AluOp::BitwiseAnd,
    ],
    message: "`tensor_partition_reduce` takes `nl.add`, `nl.average`, `nl.maximum`, `nl.bitwise_or` or `nl.bitwise_and`",
    label: "unsupported operator",
};

fn tensor_partition_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let sd = b.span_of("data");
    let op = PARTITION_REDUCE_OP.or(ctx, b, AluOp::Add)?;
    let mut shape = data.shape.clone();
    if let Some(p) = shape.first_mut() {
        *p = 1;
    }
    let dst = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &data, sd, "`data`")?;
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::not_psum_on(ctx, &data, Engine::GpSimd, sd, "`data`")?;
    check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
    if check::partitions(&dst) != 1 || check::free_size(&dst) != check::free_size(&data) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must have 1 partition and {} free elements, found {}",
                check::free_size(&data),
                shape_text(&dst.shape)
            ),
            ds,
            "wrong result shape",
        ));
    }
    bitvec_dtypes(ctx, op, &[(&data, sd), (&dst, ds)])?;
    let kind = OpKind::TensorPartitionReduce {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn in_sbuf(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    check::operand(ctx, t, span, what)?;
    check::not_psum_on(ctx, t, Engine::GpSimd, span, what)
}

fn free_size_is(
    ctx: &Ctx<'_>,
    t: &Tensor,
    p: u64,
    f: u64,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if check::partitions(t) == p && check::free_size(t) == f {
        return Ok(());
    }
    Err(ctx.error(
        codes::SHAPE,
        format!(
            "{what} must have {p} partitions of {f} elements, found shape {}",
            shape_text(&t.shape)
        ),
        span,
        format!("not {p} × {f}"),
    ))
}

/// The SBUF `dst` of shape `shape` (its partitions and free size; in the
/// value form a new tile of `dtype`), checked, and its span.
fn sbuf_dst(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    shape: &[u64],
    dtype: DType,
    span: Span,
) -> Result<(Rc<Tensor>, Span), Diagnostic> {
    let dst = emit::dst_or_new(ctx, b, shape, dtype, Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    in_sbuf(ctx, &dst, ds, "`dst`")?;
    let f = shape[1..].iter().product();
    free_size_is(ctx, &dst, shape[0], f, ds, "`dst`")?;
    Ok((dst, ds))
}

/// [`sbuf_dst`] of exactly `dtype` (the instruction does not cast); the
/// error is `message` followed by `dst` described.
fn sbuf_dst_of(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    shape: &[u64],
    dtype: DType,
    message: &str,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let (dst, ds) = sbuf_dst(ctx, b, shape, dtype, span)?;
    check::dtype_is(ctx, &dst, dtype, ds, message)?;
    Ok(dst)
}

/// The float32 or int32 SBUF input `name` of a GpSimd search, checked,
/// and its span.
fn search_input(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<(Rc<Tensor>, Span), Diagnostic> {
    let t = b.tensor(ctx, name)?;
    let (span, what) = (b.span_of(name), format!("`{name}`"));
    in_sbuf(ctx, &t, span, &what)?;
    check::dtype_in(ctx, &t, &[DType::F32, DType::I32], &what, span)?;
    Ok((t, span))
}

fn local_gather(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src_buffer")?;
    let index = b.tensor(ctx, "index")?;
    let (ss, is) = (b.span_of("src_buffer"), b.span_of("index"));
    in_sbuf(ctx, &src, ss, "`src_buffer`")?;
    in_sbuf(ctx, &index, is, "`index`")?;
    let p = check::partitions(&src);
    if check::partitions(&index) != p || !p.is_multiple_of(16) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`src_buffer` and `index` need the same partition count, a multiple of 16, found {} and {}",
                shape_text(&src.shape),
                shape_text(&index.shape)
            ),
            is,
            "partition counts",
        ));
    }
    check::dtype_in(ctx, &index, &[DType::U16], "`index`", is)?;
    let e = b.int_or(ctx, "num_elem_per_idx", 1)?;
    if ![1, 2, 4, 8, 16, 32].contains(&e) {
        return Err(ctx.error(
            codes::VALUE,
            format!("`num_elem_per_idx` is 1, 2, 4, 8, 16 or 32, found {e}"),
            b.span_of("num_elem_per_idx"),
            "bad element count",
        ));
    }
    let per_core = check::free_size(&index) * 16;
    let valid = match b.int(ctx, "num_valid_indices")? {
        None => None,
        Some(v) if v >= 1 && (v as u64) <= per_core => Some(v as u32),
        Some(v) => {
            return Err(check::out_of_range(
                ctx,
                b,
                "num_valid_indices",
                format_args!("`num_valid_indices` is 1 to {per_core} (the indices of one core)"),
                v,
            ));
        }
    };
    let n = valid.map_or(per_core, u64::from);
    if n > 4096 {
        return Err(ctx.error(
            codes::VALUE,
            format!("a GpSimd core gathers at most 4096 indices, found {n}"),
            is,
            "too many indices",
        ));
    }
    let f = n * e as u64;
    let message = format!(
        "`local_gather` does not cast: `dst` must be {}, found",
        src.dtype()
    );
    let dst = sbuf_dst_of(ctx, b, &[p, f], src.dtype(), &message, span)?;
    let kind = OpKind::LocalGather {
        dst: dst.view.clone(),
        src: src.view.clone(),
        index: index.view.clone(),
        elem_per_idx: e as u32,
        valid_indices: valid,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn n_gather_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    data: &Tensor,
    indices: &Tensor,
    dst: &Rc<Tensor>,
    names: (&str, &str),
    span: Span,
) -> Result<Option<nkic_ir::Handle<nkic_ir::Op>>, Diagnostic> {
    let (sd, si) = (b.span_of(names.0), b.span_of(names.1));
    in_sbuf(ctx, data, sd, &format!("`{}`", names.0))?;
    in_sbuf(ctx, indices, si, &format!("`{}`", names.1))?;
    in_sbuf(ctx, dst, span, "the result")?;
    check::dtype_in(
        ctx,
        indices,
        &[DType::U32, DType::I32],
        &format!("`{}`", names.1),
        si,
    )?;
    let p = check::partitions(data);
    free_size_is(
        ctx,
        indices,
        p,
        check::free_size(indices),
        si,
        &format!("`{}`", names.1),
    )?;
    free_size_is(ctx, dst, p, check::free_size(indices), span, "the result")?;
    let kind = OpKind::NGather {
        dst: dst.view.clone(),
        src: data.view.clone(),
        indices: indices.view.clone(),
    };
    emit::push(ctx, b, kind, None, span)
}

fn n_gather(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let indices = b.tensor(ctx, "indices")?;
    let shape = [check::partitions(&data), check::free_size(&indices)];
    let dst = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
    check::dtype_of_data(ctx, &dst, b.span_of("dst"), data.dtype())?;
    let h = n_gather_into(ctx, b, &data, &indices, &dst, ("data", "indices"), span)?;
    Ok(if b.is_value_form() {
        Value::Tensor(emit::masked_result(b, &dst))
    } else {
        Value::Ext(Rc::new(emit::Instruction::new(h)))
    })
}

fn nl_gather_flattened(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let indices = b.tensor(ctx, "indices")?;
    if b.int_or(ctx, "axis", 0)? != 0 {
        return Err(ctx.error(
            codes::AXIS,
            "`nl.gather_flattened` gathers per partition: `axis` must be 0",
            b.span_of("axis"),
            "not 0",
        ));
    }
    let shape = [check::partitions(&data), check::free_size(&indices)];
    let out = emit::new_result(ctx, b, "gather_", &shape, data.dtype(), Buffer::Sbuf, span)?;
    n_gather_into(ctx, b, &data, &indices, &out, ("data", "indices"), span)?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(data.dtype());
    emit::cast_result(ctx, b, ("gather_", &shape), &out, dtype, span)
}

fn sequence_bounds(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (src, ss) = search_input(ctx, b, "segment_ids")?;
    if check::partitions(&src) != 1 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`segment_ids` has one partition, found shape {}",
                shape_text(&src.shape)
            ),
            ss,
            "not (1, n)",
        ));
    }
    let n = check::free_size(&src);
    let message = format!(
        "`dst` must have the dtype of `segment_ids` ({}), found",
        src.dtype()
    );
    let dst = sbuf_dst_of(ctx, b, &[1, 2, n], src.dtype(), &message, span)?;
    emit::src_to_dst(ctx, b, &dst, &src, span, |dst, src| {
        OpKind::SequenceBounds { dst, src }
    })
}

fn nonzero_with_count(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (src, _) = search_input(ctx, b, "src")?;
    let (p, f) = (check::partitions(&src), check::free_size(&src));
    let (dst, ds) = sbuf_dst(ctx, b, &[p, f + 1], DType::I32, span)?;
    check::dtype_in(ctx, &dst, &[DType::I32], "`dst`", ds)?;
    let small = |name: &str, default: i64| -> Result<i32, Diagnostic> {
        let v = b.int_or(ctx, name, default)?;
        i32::try_from(v).map_err(|_| {
            check::out_of_range(ctx, b, name, format_args!("`{name}` must fit in int32"), v)
        })
    };
    let kind = OpKind::NonzeroWithCount {
        dst: dst.view.clone(),
        src: src.view.clone(),
        index_offset: small("index_offset", 0)?,
        padding: small("padding_val", -1)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

/// The size `n` of an identity matrix, 1 to 128; `rule` says so in the
/// error (before ", found …").
fn identity_size(ctx: &Ctx<'_>, b: &Bound, rule: &str) -> Result<u64, Diagnostic> {
    let n = b.int_or(ctx, "n", 0)?;
    if !(1..=128).contains(&n) {
        return Err(check::out_of_range(ctx, b, "n", rule, n));
    }
    Ok(n as u64)
}

fn nl_identity(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let n = identity_size(ctx, b, "`n` is 1 to 128")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(DType::U8);
    let out = match b.opt_tensor(ctx, "dst")? {
        Some(t) => {
            let ds = b.span_of("dst");
            in_sbuf(ctx, &t, ds, "`dst`")?;
            if t.shape != [n, n] {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!("`dst` must be ({n}, {n}), found {}", check::describe(&t)),
                    ds,
                    "not n × n",
                ));
            }
            t
        }
        None => emit::new_result(ctx, b, "identity_", &[n, n], dtype, Buffer::Sbuf, span)?,
    };
    identity_into(ctx, b, &out, n, span)?;
    Ok(Value::Tensor(out))
}

/// `out = (f - p == 0)`: an `iota` of `f - p` into a fresh int32 tile,
/// compared with 0.
fn identity_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    out: &Tensor,
    n: u64,
    span: Span,
) -> Result<(), Diagnostic> {
    let raw = emit::new_result(
        ctx,
        b,
        "identity_iota_",
        &[n, n],
        DType::I32,
        Buffer::Sbuf,
        span,
    )?;
    emit::push(
        ctx,
        b,
        OpKind::Iota {
            dst: raw.view.clone(),
            pattern: vec![Dim {
                stride: 1,
                count: n as u32,
            }],
            offset: 0,
            channel_multiplier: -1,
        },
        None,
        span,
    )?;
    emit::push(
        ctx,
        b,
        crate::api::lower::tensor_scalar1(
            &out.view,
            &raw.view,
            AluOp::Equal,
            Some(Scalar::Imm(Fp32::new(0.0))),
            false,
        ),
        None,
        span,
    )?;
    Ok(())
}

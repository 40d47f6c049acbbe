//! The tensor model (language.md §6): creating tensors (and the legacy
//! `ncc.*` allocation functions, which nkic ignores: it places tensors
//! itself), their attributes, subscripts (plain and legacy index grids) and
//! the view methods, including the reshaping and indirect ones of
//! §6.5–§6.7 (`reshape_dim`, `flatten_dims`, `rearrange`, `vector_select`,
//! `indirect`), `t.broadcast_to` and `nl.expand_dims`.
//!
//! A tensor value is an IR view plus the shape the user sees; for SBUF and
//! PSUM tensors the first dim is the partition dim and its stride is the
//! storage's partition row length. Views never copy: every subscript and
//! view method returns a new view of the same storage, checked against
//! the partition rules (no striding, permuting or broadcasting dim 0 of an
//! on-chip tensor) and, for every buffer, against the tensor's bounds.
//!
//! Choices where the spec is silent:
//! * slices whose explicit bounds leave the dim are errors (E0500) rather
//!   than clamped as in Python, because for HBM arguments they are
//!   out-of-bounds accesses;
//! * `address=(partition, byte)`: the byte offset is in bytes
//!   (language.md §13.1); PSUM addresses must be bank aligned (2 KiB) and
//!   the tile must fit in one bank when it fits in one bank's size;
//! * `zeros_like`/`empty_like` default to the buffer of `x` (§13.12);
//! * `rearrange` patterns are tuples whose items are names or tuples of
//!   names (a group); a group on the source side splits a dim (sizes from
//!   `fixed_sizes`, one inferred), on the destination side merges axes that
//!   must be contiguous in memory in the order written. On-chip tensors
//!   keep their partition axis first and unsplit;
//! * `t.indirect(index, num_elem)` needs contiguous free dims and addresses
//!   their flattened elements: column `i` of the result is free element
//!   `index[i % G, i // G]` of `t` (G = 16, or 32 on TensorE);
//! * `expand_dims(x, axis)` is a view with a size-1 dim inserted (no op).

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Address, Buffer, Indirection, View, ViewDim};
use nkic_isa::insn;
use nkic_isa::{DType, Engine, Imm, Target};

use super::blocks::BlockTensor;
use super::check::{self, shape_text};
use super::codes;
use super::fill;
use super::table::{
    ApiDef, BUFFER, Bound, DIM, DTYPE, Kind, NO_ENGINE, OUT_DTYPE, PATTERN, Param, SELF, SHAPE,
    TENSOR_NAME, X, opt, req, step_num_pairs,
};
use crate::args::Arg;
use crate::ctx::Ctx;
use crate::value::{BoundMethod, IndexExpr, IntOrReg, RegValue, Tensor, Value};

/// The fills (`nl.zeros`, `nl.full`, ...) are `memset`s.
const MEMSET_ENGINES: &[Engine] = insn::Memset::ENGINES;

/// The parameters of `nl.zeros` and `nl.ones`.
const ALLOC: &[Param] = &[SHAPE, DTYPE, BUFFER, TENSOR_NAME];
/// The parameters of `nl.zeros_like` and `nl.empty_like`.
const LIKE: &[Param] = &[
    X,
    OUT_DTYPE,
    opt("buffer", Kind::Buffer, "None"),
    TENSOR_NAME,
];

/// A method of `NkiTensor` (`tensor.<name>`): `self`, then `$params`; it
/// builds a view or value at compile time, on no engine.
macro_rules! method {
    ($name:literal, [$($param:expr),* $(,)?], $summary:literal, $rules:expr, $run:expr $(,)?) => {
        ApiDef::new($name, &[SELF, $($param),*], NO_ENGINE, $summary, $rules, $run)
    };
}

/// The tensor-model functions.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nl.ndarray",
        &[
            SHAPE,
            DTYPE,
            BUFFER,
            TENSOR_NAME,
            opt("address", Kind::Ints, "None"),
        ],
        NO_ENGINE,
        "Allocates an uninitialized tensor; `address=(partition, byte_offset)` places an on-chip tensor manually.",
        &[
            "SBUF/PSUM tensors have at least 2 dims and at most 128 partitions (dim 0).",
            "A tensor has at most 5 dims and every size is a positive int.",
            "The per-partition size fits the buffer (SBUF usable bytes, PSUM 16 KiB).",
            "`address` is only for SBUF/PSUM; PSUM addresses start on a 2 KiB bank boundary; the tile fits from its address.",
        ],
        ndarray,
    ),
    ApiDef::new(
        "nl.zeros",
        ALLOC,
        MEMSET_ENGINES,
        "Allocates a tensor filled with 0 (`ndarray` + `memset`).",
        &["As `nl.ndarray`; the buffer is SBUF or PSUM."],
        zeros,
    ),
    ApiDef::new(
        "nl.ones",
        ALLOC,
        MEMSET_ENGINES,
        "Allocates a tensor filled with 1 (`ndarray` + `memset`).",
        &["As `nl.ndarray`; the buffer is SBUF or PSUM."],
        ones,
    ),
    ApiDef::new(
        "nl.full",
        &[
            SHAPE,
            req("fill_value", Kind::Float),
            DTYPE,
            BUFFER,
            TENSOR_NAME,
        ],
        MEMSET_ENGINES,
        "Allocates a tensor filled with `fill_value` (`ndarray` + `memset`).",
        &[
            "As `nl.ndarray`; the buffer is SBUF or PSUM.",
            "Integer dtypes need an int fill value.",
        ],
        full,
    ),
    ApiDef::new(
        "nl.zeros_like",
        LIKE,
        MEMSET_ENGINES,
        "A zero-filled tensor of `x`'s shape (dtype and buffer default to `x`'s).",
        &["As `nl.zeros`."],
        zeros_like,
    ),
    ApiDef::new(
        "nl.empty_like",
        LIKE,
        NO_ENGINE,
        "An uninitialized tensor of `x`'s shape (dtype and buffer default to `x`'s).",
        &["As `nl.ndarray`."],
        empty_like,
    ),
    ApiDef::new(
        "nl.par_dim",
        &[req("size", Kind::Int)],
        NO_ENGINE,
        "Legacy marker of the partition dim in a shape; the dims before it are block dims, and every block is its own tile (allocated separately, alive from its first write to its last read).",
        &[
            "A block tensor is indexed on its block dims with ints before it is used as an operand (E0519); a slice over a block dim is E0500.",
            "Each block, not the whole block tensor, must fit the buffer's partition size.",
        ],
        par_dim,
    ),
    ApiDef::new(
        "nisa.get_nc_version",
        &[],
        NO_ENGINE,
        "The NeuronCore generation of the target (`nisa.nc_version.gen3` on trn2, `gen4` on trn3).",
        &[],
        get_nc_version,
    ),
    method!(
        "tensor.slice",
        [
            DIM,
            req("start", Kind::Int),
            req("end", Kind::Int),
            opt("step", Kind::Int, "1"),
        ],
        "A view of `start:end:step` along `dim`.",
        &[
            "`0 <= start < end <= shape[dim]` and `step >= 1`.",
            "Dim 0 of an SBUF/PSUM tensor is sliced with step 1.",
        ],
        method_slice,
    ),
    method!(
        "tensor.select",
        [DIM, req("index", Kind::Any)],
        "Removes `dim` by fixing it at `index` (an int, or a register for a run-time index).",
        &[
            "`0 <= index < shape[dim]` for an int index.",
            "A run-time index is not allowed on dim 0 of an SBUF/PSUM tensor.",
        ],
        method_select,
    ),
    method!(
        "tensor.permute",
        [req("dims", Kind::Ints)],
        "Reorders the dims.",
        &[
            "`dims` is a permutation of the dims.",
            "On SBUF/PSUM tensors `dims[0] == 0`.",
        ],
        method_permute,
    ),
    method!(
        "tensor.broadcast",
        [DIM, req("size", Kind::Int)],
        "Stretches a size-1 dim to `size` (stride 0).",
        &["`shape[dim] == 1`.", "Not dim 0 of an SBUF/PSUM tensor."],
        method_broadcast,
    ),
    method!(
        "tensor.expand_dim",
        [DIM],
        "Inserts a size-1 dim at `dim`.",
        &["Not dim 0 of an SBUF/PSUM tensor."],
        method_expand_dim,
    ),
    method!(
        "tensor.squeeze_dim",
        [DIM],
        "Removes a size-1 dim.",
        &[
            "`shape[dim] == 1`.",
            "Not dim 0 of an SBUF/PSUM tensor, and an SBUF/PSUM tensor keeps 2 dims.",
        ],
        method_squeeze_dim,
    ),
    method!(
        "tensor.reshape",
        [SHAPE],
        "A view with a new shape and the same elements in row-major order.",
        &[
            "The element count is unchanged.",
            "On SBUF/PSUM tensors the partition dim is unchanged.",
            "The reshaped dims are contiguous (not after `permute` or a strided slice).",
        ],
        method_reshape,
    ),
    method!(
        "tensor.view",
        [DTYPE],
        "Reinterprets the bits as `dtype`; the last dim scales by the size ratio.",
        &[
            "The last dim is contiguous and its byte size divides by the new element size.",
            "Not on a dynamic or indirect view.",
        ],
        method_view,
    ),
    method!(
        "tensor.reinterpret_cast",
        [DTYPE],
        "Alias of `tensor.view`.",
        &["As `tensor.view`."],
        method_view,
    ),
    method!(
        "tensor.ap",
        [
            PATTERN,
            opt("offset", Kind::Int, "None"),
            opt("scalar_offset", Kind::Any, "None"),
            opt("vector_offset", Kind::Tensor, "None"),
            opt("indirect_dim", Kind::Int, "0"),
            OUT_DTYPE,
        ],
        "A raw access pattern over the tensor's storage: element `(i0, i1, …)` is storage element `offset + Σ step_k · i_k` (language.md §6.6).",
        &[
            "On SBUF/PSUM tensors the first pair's step equals the storage's partition row length and its count is at most 128.",
            "Every element stays inside the storage; a pattern that leaves it is an error (E0500) where an instruction uses it, not where it is made.",
            "`offset=None` keeps the view's offset; an int is relative to the storage start.",
            "`scalar_offset` (a register, or a 1×1 SBUF int tensor read into a register when the view is made) and `vector_offset` (an SBUF (P, 1) int tensor, HBM tensors only, `indirect_dim=0`) are exclusive.",
            "A run-time offset counts elements of `indirect_dim` of the tensor `.ap` is called on (`offset + index · prod(shape[indirect_dim+1:])`), not steps of the pattern: a `vector_offset` gather reads row `index[p]` for partition `p`.",
        ],
        method_ap,
    ),
    method!(
        "tensor.is_contiguous",
        [],
        "True when the view's elements are consecutive in memory (dim 0 ignored on chip).",
        &[],
        method_is_contiguous,
    ),
    method!(
        "tensor.get_pattern",
        [],
        "The view's `[[stride, count], …]` pattern (usable with `.ap`).",
        &[],
        method_get_pattern,
    ),
];

// ------------------------------------------------------------------ creation

fn ndarray(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    match alloc_from(ctx, b, span, "shape")? {
        Allocated::Tile(t) => {
            if let Some(a) = b.get("address") {
                place(ctx, &t, a)?;
            }
            Ok(Value::tensor(t))
        }
        Allocated::Blocks(blocks) => {
            if let Some(a) = b.get("address") {
                return Err(ctx.error(
                    codes::ADDRESS,
                    "`address=` places one tile, but this shape has block dims before its partition dim (one tile per block)",
                    a.span,
                    "a block tensor",
                ));
            }
            Ok(Value::Ext(Rc::new(blocks)))
        }
    }
}

/// What a creation call allocates: one tile, or one tile per block of a
/// legacy block tensor (see [`super::blocks`]).
enum Allocated {
    Tile(Tensor),
    Blocks(BlockTensor),
}

/// Allocates a tensor from the `shape`/`dtype`/`buffer`/`name` arguments.
fn alloc_from(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    span: Span,
    shape_param: &str,
) -> Result<Allocated, Diagnostic> {
    let (shape, par) = shape_with_par_dim(ctx, b, shape_param)?;
    let Some(dtype) = b.dtype(ctx, "dtype")? else {
        return Err(ctx.error(
            crate::codes::BAD_ARGUMENTS,
            format!("`{}` needs a dtype", b.def.name),
            span,
            "no dtype",
        ));
    };
    let buffer = b.buffer(ctx, "buffer")?.unwrap_or(Buffer::Sbuf);
    let name = b.name_arg(ctx)?.unwrap_or_default();
    let shape_span = b.span_of(shape_param);
    match par {
        Some(k) if k > 0 && buffer.is_on_chip() => super::blocks::alloc(
            ctx,
            &shape[..k],
            &shape[k..],
            dtype,
            buffer,
            &name,
            shape_span,
            span,
        )
        .map(Allocated::Blocks),
        _ => alloc(ctx, &shape, dtype, buffer, &name, shape_span, span).map(Allocated::Tile),
    }
}

/// The shape argument and the position of an `nl.par_dim` in it.
fn shape_with_par_dim(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
) -> Result<(Vec<u64>, Option<usize>), Diagnostic> {
    let Some(a) = b.get(name) else {
        return Ok((b.shape(ctx, name)?, None));
    };
    let items: Vec<Value> = match &a.value {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        _ => return Ok((b.shape(ctx, name)?, None)),
    };
    let mut par = None;
    let plain: Vec<Value> = items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Ext(e) => match e.as_any().downcast_ref::<ParDim>() {
                Some(p) => {
                    par = Some(i);
                    Value::Int(p.0)
                }
                None => v.clone(),
            },
            _ => v.clone(),
        })
        .collect();
    let arg = Arg::new(Value::tuple(plain), a.span);
    Ok((super::table::shape_of(ctx, &arg)?, par))
}

/// `nl.par_dim(n)` inside a shape.
#[derive(Debug)]
pub struct ParDim(pub i64);

crate::value::api_object!(ParDim, "par_dim", {
    fn display(&self) -> String {
        format!("par_dim({})", self.0)
    }
});

/// Allocates a tensor after checking the shape against the buffer.
pub fn alloc(
    ctx: &mut Ctx<'_>,
    shape: &[u64],
    dtype: DType,
    buffer: Buffer,
    name: &str,
    shape_span: Span,
    span: Span,
) -> Result<Tensor, Diagnostic> {
    check::tensor_bytes(ctx, shape, dtype, shape_span, "too large")?;
    if buffer.is_on_chip() {
        if shape.len() < 2 {
            return Err(ctx.error(
                codes::PARTITION_SIZE,
                format!(
                    "an {} tensor needs a partition dim and at least one free dim, found shape {}",
                    buffer.name(),
                    shape_text(shape)
                ),
                shape_span,
                "only one dim",
            )
            .with_help(format!("write ({}, 1) for one element per partition", shape[0])));
        }
        if shape[0] > check::PMAX {
            return Err(ctx
                .error(
                    codes::PARTITION_SIZE,
                    format!(
                        "size of partition dimension {} exceeds architecture limitation of 128 (shape {})",
                        shape[0],
                        shape_text(shape)
                    ),
                    shape_span,
                    format!("{} partitions", shape[0]),
                )
                .with_help("tile the partition dim by 128 (`nl.tile_size.pmax`)"));
        }
        let bytes: u64 = shape[1..]
            .iter()
            .fold(u64::from(dtype.size()), |acc, &d| acc.saturating_mul(d));
        let fig = ctx.target().figures();
        let cap = if buffer == Buffer::Psum {
            u64::from(fig.psum_bytes_per_partition)
        } else {
            u64::from(fig.sbuf_usable_bytes_per_partition)
        };
        if bytes > cap {
            return Err(ctx.error(
                codes::FREE_SIZE,
                format!(
                    "a {dtype} {} tile needs {bytes} bytes per partition, but {} has {cap}",
                    shape_text(shape),
                    buffer.name()
                ),
                shape_span,
                "does not fit in one partition",
            ));
        }
    }
    let storage = ctx.alloc_storage(name, buffer, dtype, shape, span);
    let view = ctx.builder().full_view(storage);
    Ok(Tensor {
        view,
        shape: shape.to_vec(),
        buffer,
    })
}

/// Applies `address=(partition, byte_offset)`.
fn place(ctx: &mut Ctx<'_>, t: &Tensor, a: &Arg) -> Result<(), Diagnostic> {
    if !t.buffer.is_on_chip() {
        return Err(ctx.error(
            codes::ADDRESS,
            format!(
                "`address=` places SBUF/PSUM tensors, found a {} tensor",
                t.buffer.name()
            ),
            a.span,
            "not on chip",
        ));
    }
    let ints = super::table::ints_of(ctx, a)?;
    let [p, byte] = ints[..] else {
        return Err(ctx.error(
            codes::ADDRESS,
            format!(
                "`address=` is (partition, byte_offset), found {} values",
                ints.len()
            ),
            a.span,
            "expected two ints",
        ));
    };
    let fig = ctx.target().figures();
    let rows = check::partitions(t) as i64;
    let row_bytes = check::free_size(t) as i64 * i64::from(t.dtype().size());
    if p < 0 || p + rows > 128 {
        return Err(ctx.error(
            codes::ADDRESS,
            format!("a tile of {rows} partitions cannot start at partition {p}"),
            a.span,
            "partitions out of range",
        ));
    }
    let cap = if t.buffer == Buffer::Psum {
        i64::from(fig.psum_bytes_per_partition)
    } else {
        i64::from(fig.sbuf_usable_bytes_per_partition)
    };
    if byte < 0 || byte + row_bytes > cap {
        return Err(ctx.error(
            codes::ADDRESS,
            format!(
                "{row_bytes} bytes per partition at byte offset {byte} leave {} ({cap} bytes per partition)",
                t.buffer.name()
            ),
            a.span,
            "out of the buffer",
        ));
    }
    if t.buffer == Buffer::Psum {
        let bank = i64::from(fig.psum_bank_bytes);
        if byte % bank != 0 {
            return Err(ctx.error(
                codes::PSUM_BANK,
                format!("a PSUM tensor must start on a bank boundary (a multiple of {bank} bytes), found byte offset {byte}"),
                a.span,
                "not bank aligned",
            ));
        }
    }
    let address = Address {
        partition: p as u32,
        byte: byte as u64,
    };
    ctx.builder().set_address(t.storage(), address);
    Ok(())
}

fn filled(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    span: Span,
    value: Value,
    value_span: Span,
) -> Result<Value, Diagnostic> {
    match alloc_from(ctx, b, span, "shape")? {
        Allocated::Tile(t) => {
            fill(ctx, &t, &value, value_span, span)?;
            Ok(Value::tensor(t))
        }
        Allocated::Blocks(blocks) => {
            for t in &blocks.tiles {
                fill(ctx, t, &value, value_span, span)?;
            }
            Ok(Value::Ext(Rc::new(blocks)))
        }
    }
}

/// `memset`s a fresh tensor for `zeros`/`ones`/`full`.
fn fill(
    ctx: &mut Ctx<'_>,
    t: &Tensor,
    value: &Value,
    value_span: Span,
    span: Span,
) -> Result<(), Diagnostic> {
    check::on_chip(ctx, t, span, "a filled tensor")?;
    let imm = fill::fill_imm(ctx, t.dtype(), value, value_span, true)?;
    fill::push_memset(ctx, &t.view, imm, None, None, span)?;
    Ok(())
}

fn zeros(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    filled(ctx, b, span, Value::Int(0), span)
}

fn ones(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    filled(ctx, b, span, Value::Int(1), span)
}

fn full(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let v = b.value("fill_value");
    filled(ctx, b, span, v, b.span_of("fill_value"))
}

fn like(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Tensor, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let buffer = b.buffer(ctx, "buffer")?.unwrap_or(x.buffer);
    let name = b.name_arg(ctx)?.unwrap_or_default();
    alloc(ctx, &x.shape, dtype, buffer, &name, b.span_of("x"), span)
}

fn zeros_like(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let t = like(ctx, b, span)?;
    fill(ctx, &t, &Value::Int(0), span, span)?;
    Ok(Value::tensor(t))
}

fn empty_like(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    like(ctx, b, span).map(Value::tensor)
}

fn par_dim(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let n = b.int_or(ctx, "size", 0)?;
    Ok(Value::Ext(Rc::new(ParDim(n))))
}

fn get_nc_version(ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let member = match ctx.target() {
        Target::Trn1 => "gen2",
        Target::Trn2 => "gen3",
        Target::Trn3 => "gen4",
    };
    Ok(super::consts::enum_value("nc_version", member).unwrap_or(Value::None))
}

// ------------------------------------------------------------------ attributes

/// `t.attr` for a tensor.
pub fn attribute(
    ctx: &mut Ctx<'_>,
    t: &Rc<Tensor>,
    attr: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    let ints = |v: &[i64]| Value::tuple(v.iter().map(|&d| Value::Int(d)).collect());
    match attr {
        "shape" => {
            let s: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
            Ok(ints(&s))
        }
        "dtype" => Ok(Value::DType(t.dtype())),
        "buffer" => Ok(Value::Buffer(t.buffer)),
        "ndim" => Ok(Value::Int(t.shape.len() as i64)),
        "size" => Ok(Value::Int(t.shape.iter().product::<u64>() as i64)),
        "name" => Ok(Value::str(&ctx.storage(t.storage()).name)),
        "strides" => {
            let s: Vec<i64> = t.view.dims.iter().map(|d| d.stride).collect();
            Ok(ints(&s))
        }
        "offset" => Ok(Value::Int(t.view.offset)),
        // The whole tensor a view was taken from (a tensor's own base is
        // itself), as nki-library's kernels read `weight.base_tensor`.
        "base_tensor" => {
            let st = ctx.storage(t.storage());
            let view = View::full(t.storage(), st);
            Ok(Value::Tensor(Rc::new(Tensor {
                view,
                shape: st.shape.clone(),
                buffer: t.buffer,
            })))
        }
        _ => {
            match super::table::find_in("tensor", attr) {
                Some(f) => Ok(Value::BoundMethod(Rc::new(BoundMethod {
                    receiver: Value::Tensor(t.clone()),
                    func: Value::Api(f),
                }))),
                None => Err(ctx.error(
                    crate::codes::NO_ATTRIBUTE,
                    format!("a tensor has no attribute `{attr}`"),
                    span,
                    "unknown attribute",
                )
                .with_note("tensors have shape, dtype, buffer, ndim, size, name, strides, offset, base_tensor and the view methods slice, select, vector_select, permute, broadcast, expand_dim, squeeze_dim, reshape, reshape_dim, flatten_dims, rearrange, view, ap, indirect")),
            }
        }
    }
}

// ------------------------------------------------------------------ subscripts

/// Normalizes a possibly negative dim index.
pub(super) fn dim_index(
    ctx: &Ctx<'_>,
    t: &Tensor,
    dim: i64,
    span: Span,
) -> Result<usize, Diagnostic> {
    let n = t.shape.len() as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(ctx.error(
            codes::AXIS,
            format!(
                "dim {dim} is out of range for a tensor of shape {}",
                shape_text(&t.shape)
            ),
            span,
            "no such dim",
        ));
    }
    Ok(d as usize)
}

pub(super) fn partition_view_error(
    ctx: &Ctx<'_>,
    t: &Tensor,
    what: &str,
    span: Span,
) -> Diagnostic {
    ctx.error(
        codes::PARTITION_VIEW,
        format!(
            "{what} the partition dim of an {} tensor, which a view cannot do",
            t.buffer.name()
        ),
        span,
        "touches the partition dim",
    )
    .with_note("partitions are separate memories: views cannot stride, permute, broadcast or insert dims before them; moving data across partitions needs an instruction (nc_transpose, nc_matmul, DMA)")
}

/// A view of on-chip `t` that `touches` its partition dim is an error
/// ([`partition_view_error`]; `what` says what the view would do to it).
pub(super) fn keeps_partition_dim(
    ctx: &Ctx<'_>,
    t: &Tensor,
    touches: bool,
    what: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    if t.buffer.is_on_chip() && touches {
        return Err(partition_view_error(ctx, t, what, span));
    }
    Ok(())
}

/// One subscript item after normalization.
enum Item {
    /// `start + step·i` for `count` indices; `int` removes the dim.
    Range {
        start: u64,
        count: u64,
        step: u64,
        int: bool,
    },
    /// A run-time start (`nl.ds(reg, n)` or a register index).
    Dyn {
        reg: RegValue,
        count: u64,
        int: bool,
    },
}

/// `t[key]`.
pub fn subscript(
    ctx: &mut Ctx<'_>,
    t: &Rc<Tensor>,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    // Borrow the key's items where possible: subscripts are hot.
    let owned: Vec<Value>;
    let items: &[Value] = match key {
        Value::Tuple(items) => items,
        // `t[nl.mgrid[0:128, 0:512]]` indexes with every grid of the mgrid.
        Value::Object(o) if Rc::ptr_eq(&o.class, &ctx.bases.mgrid) => {
            owned = o.fields.borrow().iter().map(|(_, v)| v.clone()).collect();
            &owned
        }
        k => std::slice::from_ref(k),
    };
    if items
        .iter()
        .any(|v| matches!(v, Value::Index(_) | Value::Tensor(_)))
    {
        return match grid_subscript(ctx, t, items, span) {
            Ok(v) => Ok(Value::tensor(v)),
            // Out of bounds: wait for the call's `mask=` (see `mask`).
            Err(error)
                if error.code == codes::INDEX
                    && items.iter().any(|v| matches!(v, Value::Index(_))) =>
            {
                Ok(Value::Ext(Rc::new(super::mask::PendingGrid {
                    tensor: t.clone(),
                    items: items.to_vec(),
                    span,
                    error,
                })))
            }
            Err(e) => Err(e),
        };
    }
    let ndim = t.shape.len();
    let n_ellipsis = items
        .iter()
        .filter(|v| matches!(v, Value::Ellipsis))
        .count();
    if n_ellipsis > 1 {
        return Err(ctx.error(
            codes::INDEX,
            "a subscript may contain one `...`",
            span,
            "second `...`",
        ));
    }
    if items.len() - n_ellipsis > ndim {
        return Err(ctx.error(
            codes::INDEX,
            format!(
                "too many indices: {} for a tensor of shape {}",
                items.len() - n_ellipsis,
                shape_text(&t.shape)
            ),
            span,
            "too many indices",
        ));
    }
    // Dim `d` takes item `d`, or, after a `...` at position `e` covering
    // `fill` dims, item `d - fill + 1`; missing trailing items are `:`.
    let ellipsis = items.iter().position(|v| matches!(v, Value::Ellipsis));
    let fill = ndim + n_ellipsis - items.len();
    let item_of = |d: usize| -> Option<&Value> {
        match ellipsis {
            Some(e) if d >= e && d < e + fill => None,
            Some(e) if d >= e + fill => items.get(d + 1 - fill),
            _ => items.get(d),
        }
    };
    let mut norm = Vec::with_capacity(ndim);
    for dim in 0..ndim {
        norm.push(normalize_item(ctx, t, dim, item_of(dim), span)?);
    }
    apply_items(ctx, t, &norm, span).map(Value::tensor)
}

fn normalize_item(
    ctx: &Ctx<'_>,
    t: &Tensor,
    dim: usize,
    item: Option<&Value>,
    span: Span,
) -> Result<Item, Diagnostic> {
    let size = t.shape[dim];
    let oob = |what: String| {
        ctx.error(
            codes::INDEX,
            format!(
                "{what} is out of bounds for dim {dim} of size {size} (tensor shape {}, {})",
                shape_text(&t.shape),
                t.buffer.name()
            ),
            span,
            "out of bounds",
        )
    };
    let Some(v) = item else {
        return Ok(Item::Range {
            start: 0,
            count: size,
            step: 1,
            int: false,
        });
    };
    match v {
        Value::Int(_) | Value::Bool(_) => {
            let i = v.as_int().unwrap_or(0);
            let j = if i < 0 { i + size as i64 } else { i };
            if j < 0 || j >= size as i64 {
                return Err(oob(format!("index {i}")));
            }
            Ok(Item::Range {
                start: j as u64,
                count: 1,
                step: 1,
                int: true,
            })
        }
        Value::Register(r) => Ok(Item::Dyn {
            reg: *r,
            count: 1,
            int: true,
        }),
        Value::Slice(s) => {
            // A slice part `v` that is not an int of the kind `what` says.
            let bad = |what: &str, v: &Value, label: &str| {
                let found = crate::format::short_repr(v);
                ctx.error(
                    codes::INDEX,
                    format!("slice {what}, found {found}"),
                    span,
                    label,
                )
            };
            let step = match (&s.step, s.step.as_int()) {
                (Value::None, _) => 1,
                (_, Some(st)) if st >= 1 => st,
                _ => return Err(bad("steps must be positive ints", &s.step, "bad step")),
            };
            let bound = |b: &Value, default: i64| -> Result<i64, Diagnostic> {
                if b.is_none() {
                    return Ok(default);
                }
                let Some(i) = b.as_int() else {
                    return Err(bad("bounds must be ints", b, "bad slice"));
                };
                Ok(if i < 0 { i + size as i64 } else { i })
            };
            let a = bound(&s.lower, 0)?;
            let z = bound(&s.upper, size as i64)?;
            if a < 0 || z > size as i64 {
                return Err(oob(format!("the slice {a}:{z}")));
            }
            if a > z {
                return Err(ctx.error(
                    codes::INDEX,
                    format!("the slice {a}:{z} of dim {dim} (size {size}) ends before it starts"),
                    span,
                    "reversed slice",
                ));
            }
            let count = ((z - a) as u64).div_ceil(step as u64);
            Ok(Item::Range {
                start: a as u64,
                count,
                step: step as u64,
                int: false,
            })
        }
        Value::Ds(ds) => {
            if ds.size < 0 {
                return Err(ctx.error(
                    codes::INDEX,
                    format!("nl.ds size must not be negative, found {}", ds.size),
                    span,
                    "bad size",
                ));
            }
            let n = ds.size as u64;
            match ds.start {
                IntOrReg::Int(s) => {
                    if s < 0 || s as u64 + n > size {
                        return Err(oob(format!("nl.ds({s}, {n})")));
                    }
                    Ok(Item::Range {
                        start: s as u64,
                        count: n,
                        step: 1,
                        int: false,
                    })
                }
                IntOrReg::Reg(_) if n == 0 => Ok(Item::Range {
                    start: 0,
                    count: 0,
                    step: 1,
                    int: false,
                }),
                IntOrReg::Reg(r) => {
                    if n > size {
                        return Err(oob(format!("nl.ds(<register>, {n})")));
                    }
                    Ok(Item::Dyn {
                        reg: r,
                        count: n,
                        int: false,
                    })
                }
            }
        }
        other => Err(ctx.error(
            codes::INDEX,
            format!("a {} cannot index a tensor", other.type_name()),
            span,
            "bad index",
        )),
    }
}

fn apply_items(
    ctx: &Ctx<'_>,
    t: &Tensor,
    items: &[Item],
    span: Span,
) -> Result<Tensor, Diagnostic> {
    let on_chip = t.buffer.is_on_chip();
    // Legacy block dims come before the partition dim; ints remove them.
    let pdim = if on_chip {
        check::partition_dim(ctx, t)
    } else {
        0
    };
    let mut view = t.view.clone();
    let mut keep = [false; nkic_ir::MAX_VIEW_DIMS];
    let keep = &mut keep[..items.len().min(nkic_ir::MAX_VIEW_DIMS)];
    let mut dyn_seen = false;
    for (dim, item) in items.iter().enumerate() {
        match *item {
            Item::Range {
                start,
                count,
                step,
                int,
            } => {
                if on_chip && dim == pdim && step != 1 {
                    return Err(partition_view_error(ctx, t, "a strided slice of", span));
                }
                if count == 0 {
                    // An empty slice (`a:a`, `nl.ds(a, 0)`): ops whose
                    // access is empty are not recorded (`Ctx::push_op`).
                    let d = view.dims[dim];
                    if start > d.count {
                        return Err(ctx.error(
                            codes::INDEX,
                            "index out of bounds",
                            span,
                            "out of bounds",
                        ));
                    }
                    view.offset += start as i64 * d.stride;
                    view.dims[dim] = nkic_ir::ViewDim::new(d.stride, 0);
                } else if !view.slice_in_place(dim, start, start + (count - 1) * step + 1, step) {
                    return Err(ctx.error(
                        codes::INDEX,
                        "index out of bounds",
                        span,
                        "out of bounds",
                    ));
                }
                if let Some(k) = keep.get_mut(dim) {
                    *k = !int || (on_chip && dim == pdim);
                }
            }
            Item::Dyn { reg, count, int } => {
                if on_chip && dim == pdim {
                    return Err(partition_view_error(ctx, t, "a run-time index into", span));
                }
                if dyn_seen || view.dyn_offset.is_some() {
                    return Err(ctx.error(
                        codes::INDEX,
                        "a view may have only one run-time index",
                        span,
                        "second run-time index",
                    ));
                }
                dyn_seen = true;
                let Some(v) = view.slice(dim, 0, count, 1) else {
                    return Err(ctx.error(
                        codes::INDEX,
                        "index out of bounds",
                        span,
                        "out of bounds",
                    ));
                };
                let stride = v.dims[dim].stride;
                view = v;
                view.offset += reg.offset * stride;
                view = view.with_dyn_offset(reg.reg, reg.scale * stride);
                if let Some(k) = keep.get_mut(dim) {
                    *k = !int;
                }
            }
        }
    }
    let min_dims = if on_chip { 2 } else { 1 };
    let mut kept = keep.iter().filter(|&&k| k).count();
    for k in keep.iter_mut().rev() {
        if kept >= min_dims {
            break;
        }
        if !*k {
            *k = true;
            kept += 1;
        }
    }
    let mut k = keep.iter();
    view.dims.retain(|_| k.next().copied().unwrap_or(true));
    let shape = view.dims.iter().map(|d| d.count).collect();
    Ok(Tensor {
        view,
        shape,
        buffer: t.buffer,
    })
}

/// A legacy index-grid subscript (language.md §10): every item is an
/// affine expression of `nl.arange` grids (or an int); the result has the
/// broadcast grid shape and is still a view.
fn grid_subscript(
    ctx: &Ctx<'_>,
    t: &Tensor,
    items: &[Value],
    span: Span,
) -> Result<Tensor, Diagnostic> {
    if items.len() != t.shape.len() {
        return Err(ctx.error(
            codes::LEGACY,
            format!(
                "an index-grid subscript must index every dim: {} indices for a tensor of shape {}",
                items.len(),
                shape_text(&t.shape)
            ),
            span,
            "index every dim",
        ));
    }
    // A tensor on dim 0 of an HBM tensor gathers rows at run time
    // (legacy indirect load/store): it acts as `nl.arange(P)[:, None]`
    // whose rows are replaced by the index values.
    let mut index_tile = None;
    let mut items = items.to_vec();
    if let Some(Value::Tensor(idx)) = items.first().cloned() {
        if t.buffer.is_on_chip() {
            return Err(check::tensor_error(
                ctx,
                codes::BUFFER,
                "run-time row indices select rows of HBM tensors, found",
                t,
                span,
                "not HBM",
            ));
        }
        check::row_index(ctx, &idx, span, "the row index")?;
        // The rows vary along the grid's partition axis (axis 0) whatever
        // the rank of the other grids (`src[idx[i_p, 0], iy, iz]` with
        // 3-D `iy`, `iz`), so the index takes their rank.
        let ndim = items[1..]
            .iter()
            .filter_map(|v| match v {
                Value::Index(e) => Some(e.ndim),
                _ => None,
            })
            .max()
            .unwrap_or(2)
            .max(2);
        items[0] = Value::Index(Rc::new(IndexExpr {
            ndim,
            constant: 0,
            terms: vec![crate::value::IndexTerm {
                axis: 0,
                size: check::partitions(&idx),
                coef: 1,
            }],
        }));
        index_tile = Some(idx);
    }
    let base = items
        .iter()
        .filter_map(|v| match v {
            Value::Index(e) => Some(e.ndim),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let n_slices = items
        .iter()
        .filter(|v| matches!(v, Value::Slice(_)))
        .count() as u8;
    let total = base + n_slices;
    let mut next_axis = base;
    let exprs: Vec<IndexExpr> = items
        .iter()
        .enumerate()
        .map(|(dim, v)| match v {
            Value::Index(e) => Ok(IndexExpr {
                ndim: total,
                ..e.aligned(base)
            }),
            Value::Slice(_) => {
                let Item::Range {
                    start, count, step, ..
                } = normalize_item(ctx, t, dim, Some(v), span)?
                else {
                    return Err(ctx.error(codes::INDEX, "bad slice", span, "here"));
                };
                let axis = next_axis;
                next_axis += 1;
                Ok(IndexExpr {
                    ndim: total,
                    constant: start as i64,
                    terms: vec![crate::value::IndexTerm {
                        axis,
                        size: count,
                        coef: step as i64,
                    }],
                })
            }
            Value::Tensor(_) => Err(ctx.error(
                codes::LEGACY,
                "only the first index may be a tensor of row indices",
                span,
                "tensor index",
            )),
            _ => match v.as_int() {
                Some(c) if !matches!(v, Value::Bool(_)) => Ok(IndexExpr {
                    ndim: total,
                    constant: c,
                    terms: Vec::new(),
                }),
                _ => Err(ctx.error(
                    codes::LEGACY,
                    format!(
                        "an index-grid subscript mixes grids with a {}",
                        v.type_name()
                    ),
                    span,
                    "use grids, slices or ints",
                )),
            },
        })
        .collect::<Result<_, _>>()?;
    let g = total;
    let mut grid = vec![1u64; usize::from(g)];
    let mut strides = vec![0i64; usize::from(g)];
    let mut offset = t.view.offset;
    for (dim, e) in exprs.iter().enumerate() {
        let e = e.aligned(g);
        let size = t.shape[dim] as i64;
        let (lo, hi) = e.bounds();
        if lo < 0 || hi >= size {
            return Err(ctx.error(
                codes::INDEX,
                format!(
                    "index expression on dim {dim} takes values {lo}..={hi}, out of bounds for size {size} (tensor shape {}, {})",
                    shape_text(&t.shape),
                    t.buffer.name()
                ),
                span,
                "out of bounds",
            ));
        }
        let dstride = t.view.dims[dim].stride;
        offset += e.constant * dstride;
        for term in &e.terms {
            let a = usize::from(term.axis);
            if grid[a] != 1 && term.size != 1 && grid[a] != term.size {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "index grids of sizes {} and {} do not broadcast on axis {a}",
                        grid[a], term.size
                    ),
                    span,
                    "grid sizes differ",
                ));
            }
            grid[a] = grid[a].max(term.size);
            strides[a] += term.coef * dstride;
        }
    }
    let mut dims: Vec<ViewDim> = grid
        .iter()
        .zip(&strides)
        .map(|(&c, &s)| ViewDim::new(if c == 1 { 0 } else { s }, c))
        .collect();
    if t.buffer.is_on_chip() {
        let pstride = t.view.dims[0].stride;
        // The partition axis is grid axis 0, fed by dim 0 alone with unit steps.
        let feeds_axis0 = |dim: usize, e: &IndexExpr| {
            e.aligned(g)
                .terms
                .iter()
                .any(|term| term.axis == 0 && term.size > 1 && (dim != 0 || term.coef != 1))
        };
        let dim0_leaves = exprs[0]
            .aligned(g)
            .terms
            .iter()
            .any(|term| term.axis != 0 && term.size > 1);
        let bad = dim0_leaves || exprs.iter().enumerate().any(|(d, e)| feeds_axis0(d, e));
        if bad {
            return Err(partition_view_error(
                ctx,
                t,
                "this index grid moves or strides",
                span,
            ));
        }
        dims[0].stride = pstride;
        if dims.len() < 2 {
            dims.push(ViewDim::new(1, 1));
        }
    }
    let shape = dims.iter().map(|d| d.count).collect();
    let indirect = index_tile.map(|idx| Indirection::Rows {
        index: Box::new(idx.view.clone()),
    });
    Ok(Tensor {
        view: View {
            offset,
            dims,
            indirect,
            ..t.view.clone()
        },
        shape,
        buffer: t.buffer,
    })
}

// ------------------------------------------------------------------ view methods

pub(super) fn this(ctx: &Ctx<'_>, b: &Bound) -> Result<Rc<Tensor>, Diagnostic> {
    b.tensor(ctx, "self")
}

pub(super) fn req_int(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<i64, Diagnostic> {
    b.int(ctx, name)?.ok_or_else(|| {
        ctx.error(
            crate::codes::BAD_ARGUMENTS,
            format!("`{}` needs `{name}`", b.def.name),
            b.span,
            "missing",
        )
    })
}

pub(super) fn with_view(t: &Tensor, view: View) -> Value {
    let shape = view.dims.iter().map(|d| d.count).collect();
    Value::tensor(Tensor {
        view,
        shape,
        buffer: t.buffer,
    })
}

fn method_slice(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    let (start, end, step) = (
        req_int(ctx, b, "start")?,
        req_int(ctx, b, "end")?,
        b.int_or(ctx, "step", 1)?,
    );
    let size = t.shape[dim] as i64;
    if !(0 <= start && start < end && end <= size) || step < 1 {
        return Err(ctx.error(
            codes::INDEX,
            format!("slice({dim}, {start}, {end}, {step}) is out of bounds for dim {dim} of size {size} (shape {})", shape_text(&t.shape)),
            b.span,
            "needs 0 <= start < end <= size and step >= 1",
        ));
    }
    if t.buffer.is_on_chip() && dim == 0 && step != 1 {
        return Err(partition_view_error(ctx, &t, "a strided slice of", b.span));
    }
    let Some(v) = t.view.slice(dim, start as u64, end as u64, step as u64) else {
        return Err(ctx.error(codes::INDEX, "slice out of bounds", b.span, "out of bounds"));
    };
    Ok(with_view(&t, v))
}

fn method_select(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    let key = b.value("index");
    let item = normalize_item(ctx, &t, dim, Some(&key), b.span_of("index"))?;
    let mut items: Vec<Item> = t
        .shape
        .iter()
        .map(|&s| Item::Range {
            start: 0,
            count: s,
            step: 1,
            int: false,
        })
        .collect();
    let item = match item {
        Item::Range { start, .. } => Item::Range {
            start,
            count: 1,
            step: 1,
            int: true,
        },
        Item::Dyn { reg, .. } => Item::Dyn {
            reg,
            count: 1,
            int: true,
        },
    };
    items[dim] = item;
    // `select` always removes the dim, even on chip.
    let res = apply_items(ctx, &t, &items, b.span)?;
    if t.buffer.is_on_chip() && dim == 0 {
        return Err(partition_view_error(ctx, &t, "`select` removes", b.span));
    }
    let mut dims = res.view.dims.clone();
    if dims.len() >= t.shape.len() {
        dims.remove(dim.min(dims.len() - 1));
    }
    if t.buffer.is_on_chip() && dims.len() < 2 {
        return Err(ctx.error(
            codes::VIEW,
            format!(
                "selecting dim {dim} of shape {} leaves fewer than 2 dims",
                shape_text(&t.shape)
            ),
            b.span,
            "too few dims",
        ));
    }
    Ok(with_view(&t, View { dims, ..res.view }))
}

fn method_permute(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dims = b.ints(ctx, "dims")?.unwrap_or_default();
    let n = t.shape.len() as i64;
    let perm: Vec<usize> = dims
        .iter()
        .map(|&d| if d < 0 { d + n } else { d })
        .filter(|&d| d >= 0)
        .map(|d| d as usize)
        .collect();
    let Some(v) = (perm.len() == dims.len())
        .then(|| t.view.permute(&perm))
        .flatten()
    else {
        return Err(ctx.error(
            codes::VIEW,
            format!(
                "{dims:?} is not a permutation of the {n} dims of shape {}",
                shape_text(&t.shape)
            ),
            b.span_of("dims"),
            "not a permutation",
        ));
    };
    keeps_partition_dim(
        ctx,
        &t,
        perm.first() != Some(&0),
        "this permutation moves",
        b.span_of("dims"),
    )?;
    Ok(with_view(&t, v))
}

fn method_broadcast(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    let size = req_int(ctx, b, "size")?;
    keeps_partition_dim(ctx, &t, dim == 0, "`broadcast` stretches", b.span)?;
    if t.shape[dim] != 1 || size < 1 {
        return Err(ctx.error(
            codes::VIEW,
            format!("`broadcast` stretches a size-1 dim to a positive size; dim {dim} of shape {} has size {}", shape_text(&t.shape), t.shape[dim]),
            b.span,
            "not a size-1 dim",
        ));
    }
    let v = t
        .view
        .broadcast(dim, size as u64)
        .unwrap_or_else(|| t.view.clone());
    Ok(with_view(&t, v))
}

fn method_expand_dim(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let d = req_int(ctx, b, "dim")?;
    let n = t.shape.len() as i64;
    let dim = if d < 0 { d + n + 1 } else { d };
    if dim < 0 || dim > n || t.shape.len() >= nkic_ir::MAX_VIEW_DIMS {
        return Err(ctx.error(
            codes::AXIS,
            format!("cannot insert dim {d} into shape {}", shape_text(&t.shape)),
            b.span_of("dim"),
            "bad dim",
        ));
    }
    keeps_partition_dim(
        ctx,
        &t,
        dim == 0,
        "`expand_dim` inserts a dim before",
        b.span,
    )?;
    let v = t
        .view
        .insert_dim(dim as usize)
        .unwrap_or_else(|| t.view.clone());
    Ok(with_view(&t, v))
}

fn method_squeeze_dim(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    keeps_partition_dim(ctx, &t, dim == 0, "`squeeze_dim` removes", b.span)?;
    if t.shape[dim] != 1 {
        return Err(ctx.error(
            codes::VIEW,
            format!(
                "dim {dim} of shape {} has size {}, not 1",
                shape_text(&t.shape),
                t.shape[dim]
            ),
            b.span,
            "not a size-1 dim",
        ));
    }
    if (t.buffer.is_on_chip() && t.shape.len() <= 2) || t.shape.len() <= 1 {
        return Err(ctx.error(
            codes::VIEW,
            format!(
                "squeezing shape {} leaves too few dims",
                shape_text(&t.shape)
            ),
            b.span,
            "too few dims",
        ));
    }
    let mut v = t.view.clone();
    v.dims.remove(dim);
    Ok(with_view(&t, v))
}

/// Row-major dims of `shape` over contiguous elements starting at `offset`
/// with innermost stride 1.
fn row_major(shape: &[u64]) -> Vec<ViewDim> {
    let mut dims = vec![ViewDim::new(1, 1); shape.len()];
    let mut stride = 1i64;
    for (i, &c) in shape.iter().enumerate().rev() {
        dims[i] = ViewDim::new(stride, c);
        stride *= c as i64;
    }
    dims
}

/// True when `dims` are row-major contiguous (ignoring size-1 dims).
pub(super) fn is_contiguous(dims: &[ViewDim]) -> bool {
    let mut expect = 1i64;
    for d in dims.iter().rev() {
        if d.count == 1 {
            continue;
        }
        if d.stride != expect {
            return false;
        }
        expect *= d.count as i64;
    }
    true
}

fn method_reshape(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let a = b.needed(ctx, "shape", "`reshape` needs a shape")?;
    // `-1` is allowed once.
    let raw = super::table::ints_of(ctx, &a)?;
    let total: u64 = t.shape.iter().product();
    let known: i64 = raw.iter().filter(|&&d| d != -1).product();
    let mut shape = Vec::with_capacity(raw.len());
    let n_infer = raw.iter().filter(|&&d| d == -1).count();
    for &d in &raw {
        if d == -1 && n_infer == 1 && known > 0 && total as i64 % known == 0 {
            shape.push(total / known as u64);
        } else if d > 0 {
            shape.push(d as u64);
        } else {
            return Err(ctx.error(
                codes::VIEW,
                format!("bad reshape size {d}"),
                a.span,
                "sizes are positive (one -1 allowed)",
            ));
        }
    }
    let new_total: u64 = shape.iter().product();
    if new_total != total {
        return Err(ctx.error(
            codes::VIEW,
            format!(
                "cannot reshape {} ({total} elements) into {} ({new_total} elements)",
                shape_text(&t.shape),
                shape_text(&shape)
            ),
            a.span,
            "element count differs",
        ));
    }
    let mut v = t.view.clone();
    if t.buffer.is_on_chip() {
        if shape.len() < 2 || shape[0] != t.shape[0] {
            return Err(partition_view_error(
                ctx,
                &t,
                &format!(
                    "reshaping {} into {} changes",
                    shape_text(&t.shape),
                    shape_text(&shape)
                ),
                a.span,
            ));
        }
        if !is_contiguous(&t.view.dims[1..]) {
            return Err(ctx.error(codes::VIEW, format!("the free dims of this {} view are not contiguous, so it cannot be reshaped", shape_text(&t.shape)), a.span, "not contiguous").with_help("reshape before `permute` or strided slicing"));
        }
        let mut dims = vec![t.view.dims[0]];
        dims.extend(row_major(&shape[1..]));
        v.dims = dims;
    } else {
        if !is_contiguous(&t.view.dims) {
            return Err(ctx.error(
                codes::VIEW,
                format!(
                    "this {} view is not contiguous, so it cannot be reshaped",
                    shape_text(&t.shape)
                ),
                a.span,
                "not contiguous",
            ));
        }
        v.dims = row_major(&shape);
    }
    Ok(with_view(&t, v))
}

fn method_view(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let Some(dt) = b.dtype(ctx, "dtype")? else {
        return Err(ctx.error(
            crate::codes::BAD_ARGUMENTS,
            "`view` needs a dtype",
            b.span,
            "missing",
        ));
    };
    match t.view.reinterpret(dt) {
        Some(v) => Ok(with_view(&t, v)),
        None => Err(ctx.error(
            codes::VIEW,
            format!("cannot view a {} {} tensor as {dt}: the last dim must be contiguous and its bytes divisible by {} ", t.dtype(), shape_text(&t.shape), dt.size()),
            b.span,
            "not reinterpretable",
        )),
    }
}

/// An access pattern (`t.ap(...)`) that leaves its storage: an error
/// where it is used, not where it is made ([`super::materialize`]).
#[derive(Debug)]
pub struct OutOfBoundsView {
    pub error: Diagnostic,
}

crate::value::api_object!(OutOfBoundsView, "tensor");

fn method_ap(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let pat_arg = b.needed(ctx, "pattern", "`ap` needs a pattern")?;
    let dims = pattern_of(ctx, &pat_arg)?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(t.dtype());
    let st = ctx.storage(t.storage());
    let storage_bytes: i64 = st.shape.iter().product::<u64>() as i64 * i64::from(st.dtype.size());
    let row_bytes: i64 =
        st.shape.iter().skip(1).product::<u64>() as i64 * i64::from(st.dtype.size());
    let esize = i64::from(dtype.size());
    let offset = match b.int(ctx, "offset")? {
        Some(o) => o,
        None => {
            if dtype == t.dtype() {
                t.view.offset
            } else {
                t.view.offset * i64::from(t.dtype().size()) / esize
            }
        }
    };
    if t.buffer.is_on_chip() {
        let pstride = row_bytes / esize;
        let first = dims.first().copied().unwrap_or(ViewDim::new(0, 1));
        if dims.len() < 2 || first.stride != pstride || first.count > 128 {
            return Err(ctx.error(
                codes::PARTITION_VIEW,
                format!(
                    "the first pair of an access pattern on an {} tensor must be [{pstride}, P] (the partition row length, P <= 128), found [{}, {}]",
                    t.buffer.name(), first.stride, first.count
                ),
                pat_arg.span,
                "bad partition pair",
            ));
        }
    }
    let mut view = View::new(t.storage(), dtype, offset, &dims);
    // Static bounds: every element inside the storage.
    let (mut lo, mut hi) = (offset, offset);
    for d in &dims {
        let span = d.stride.saturating_mul(d.count as i64 - 1);
        if span < 0 { lo += span } else { hi += span }
    }
    let vector = b.opt_tensor(ctx, "vector_offset")?;
    let scalar = b.get("scalar_offset").cloned();
    if vector.is_some() && scalar.is_some() {
        return Err(ctx.error(
            codes::VIEW,
            "`scalar_offset` and `vector_offset` are exclusive",
            b.span,
            "both given",
        ));
    }
    let dynamic = vector.is_some() || scalar.is_some();
    let indirect_dim = b.int_or(ctx, "indirect_dim", 0)?;
    if let Some(a) = scalar {
        let r = match &a.value {
            Value::Register(r) => *r,
            // A 1×1 SBUF int tensor is read into a register here, when the
            // view is made (the value the tensor holds at this point).
            Value::Tensor(off)
                if off.buffer == Buffer::Sbuf
                    && off.dtype().is_int()
                    && off.dtype().size() <= 4
                    && off.shape.iter().product::<u64>() == 1 =>
            {
                ctx.check_budget(b.span)?;
                let name = ctx.fresh_name("offset");
                let loc = ctx.loc(a.span);
                let reg = ctx.builder().alloc_register(&name, None, loc);
                let load = nkic_ir::OpKind::RegLoad {
                    dst: reg,
                    src: off.view.clone(),
                };
                ctx.push_op(nkic_ir::Op::new(load), a.span)?;
                RegValue::plain(reg)
            }
            v => {
                return Err(ctx.error(
                    codes::ARG_TYPE,
                    format!(
                        "`scalar_offset` must be a register or a 1×1 SBUF int tensor, found {}",
                        match v {
                            Value::Tensor(t) => check::describe(t),
                            v => format!("a {}", v.type_name()),
                        }
                    ),
                    a.span,
                    "not a run-time offset",
                ));
            }
        };
        let d = dim_index(ctx, &t, indirect_dim, b.span_of("indirect_dim"))?;
        let mult: i64 = t.shape[d + 1..].iter().product::<u64>() as i64;
        view.offset += r.offset * mult;
        view = view.with_dyn_offset(r.reg, r.scale * mult);
    }
    if let Some(idx) = vector {
        if t.buffer.is_on_chip() {
            return Err(check::tensor_error(
                ctx,
                codes::BUFFER,
                "`vector_offset` gathers rows of HBM tensors, found",
                &t,
                b.span,
                "not HBM",
            ));
        }
        if indirect_dim != 0 {
            return Err(ctx.error(
                codes::AXIS,
                "`vector_offset` needs `indirect_dim=0`",
                b.span_of("indirect_dim"),
                "not 0",
            ));
        }
        if idx.buffer != Buffer::Sbuf || !idx.dtype().is_int() || check::free_size(&idx) != 1 {
            return Err(check::tensor_error(
                ctx,
                codes::ARG_TYPE,
                "`vector_offset` must be an SBUF (P, 1) int tensor, found",
                &idx,
                b.span_of("vector_offset"),
                "bad index tensor",
            ));
        }
        // As with `scalar_offset`, an index counts rows of the tensor
        // `.ap` is called on (`prod(shape[1:])` elements), whatever step
        // the pattern's first pair gives (NKI's access-pattern guide,
        // "Dynamic Access"): nki-library's `topk_reduce` gathers rows of
        // an `[N, H + 2]` tensor with the pattern `[[H, T], [1, H]]`.
        if let Some(d0) = view.dims.first_mut() {
            d0.stride = t.shape[1..].iter().product::<u64>() as i64;
        }
        view.indirect = Some(Indirection::Rows {
            index: Box::new(idx.view.clone()),
        });
    }
    // The bounds the IR verifier asks of every view (`nkic_ir::verify::
    // bounds`): every element inside the storage, and for a run-time
    // offset its static part, for row indices one row. Making an access
    // pattern moves no data: NKI checks it where an instruction uses it,
    // and library kernels build patterns in a loop that only some
    // iterations use (`if h < n: nc_matmul(...)`). (A 1×1 tile offset's
    // `reg_load` is already in the program then.)
    let st = ctx.storage(t.storage());
    if let Some(why) = nkic_ir::verify::bounds(&view, st, &StorageName(&st.name))
        .into_iter()
        .next()
    {
        let message = if dynamic || t.buffer.is_on_chip() {
            format!("the access pattern leaves its tensor: {why}")
        } else {
            format!(
                "the access pattern reaches elements {lo}..={hi} of a storage of {} {dtype} elements",
                storage_bytes / esize
            )
        };
        let error = ctx.error(codes::INDEX, message, pat_arg.span, "out of bounds");
        return Ok(Value::Ext(Rc::new(OutOfBoundsView { error })));
    }
    Ok(with_view(&t, view))
}

/// How a bounds error names a storage: `` `name` ``, or "the tensor" when
/// it has none (written only when there is an error).
struct StorageName<'a>(&'a str);

impl std::fmt::Display for StorageName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("the tensor")
        } else {
            write!(f, "`{}`", self.0)
        }
    }
}

/// `[[step, num], …]`.
fn pattern_of(ctx: &Ctx<'_>, a: &Arg) -> Result<Vec<ViewDim>, Diagnostic> {
    let bad = || {
        ctx.error(
            codes::ARG_TYPE,
            format!(
                "an access pattern is a list of [step, num] pairs, found {}",
                crate::format::short_repr(&a.value)
            ),
            a.span,
            "bad pattern",
        )
    };
    let pairs =
        step_num_pairs(&a.value, nkic_ir::MAX_VIEW_DIMS, 1..=i64::MAX).map_err(|_| bad())?;
    Ok(pairs
        .into_iter()
        .map(|(s, n)| ViewDim::new(s, n as u64))
        .collect())
}

fn method_is_contiguous(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dims = if t.buffer.is_on_chip() {
        &t.view.dims[1..]
    } else {
        &t.view.dims[..]
    };
    Ok(Value::Bool(is_contiguous(dims)))
}

fn method_get_pattern(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    Ok(Value::list(
        t.view
            .dims
            .iter()
            .map(|d| Value::list(vec![Value::Int(d.stride), Value::Int(d.count as i64)]))
            .collect(),
    ))
}

/// Converts an immediate for messages.
pub fn imm_text(imm: Imm) -> String {
    match imm {
        Imm::Int(i) => i.to_string(),
        Imm::Float(f) => f.to_text(),
    }
}

// ------------------------------------------------------------------ reshaping and indirect views

/// The reshaping and indirect view methods (language.md §6.5–§6.7),
/// registered in `table::REGISTRY` after `nl_math`'s functions.
pub const VIEW_METHOD_DEFS: &[ApiDef] = &[
    method!(
        "tensor.reshape_dim",
        [
            DIM,
            req("shape", Kind::Ints),
        ],
        "Splits dim `dim` into the dims `shape` (row-major; one size may be -1).",
        &[
            "The sizes multiply to the dim's size.",
            "On-chip tensors cannot split the partition dim (except trivially, with size-1 dims).",
        ],
        reshape_dim,
    ),
    method!(
        "tensor.flatten_dims",
        [
            req("start", Kind::Int),
            req("end", Kind::Int),
        ],
        "Merges dims `start..end` (inclusive) into one.",
        &[
            "The merged dims are contiguous in memory.",
            "On-chip tensors keep their partition dim: `start > 0`.",
        ],
        flatten_dims,
    ),
    method!(
        "tensor.rearrange",
        [
            req("src_pattern", Kind::Any),
            req("dst_pattern", Kind::Any),
            opt("fixed_sizes", Kind::Any, "None"),
        ],
        "einops-style split, permute and merge: `t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})`.",
        &[
            "`src_pattern` names every dim (a tuple of names splits one dim; its sizes come from `fixed_sizes`, one may be inferred).",
            "`dst_pattern` uses every name once; a tuple of names merges axes that are contiguous in that order.",
            "On-chip tensors keep their partition dim first and unsplit.",
        ],
        rearrange,
    ),
    method!(
        "tensor.vector_select",
        [
            DIM,
            req("vector_offset", Kind::Tensor),
        ],
        "A per-partition row gather of an HBM tensor: row `p` of the result is row `vector_offset[p]` (an indirect view, read or written by DMA).",
        &[
            "`dim` is 0 and the tensor is in HBM.",
            "`vector_offset` is an SBUF `(P, 1)` int tensor; the result has P rows.",
        ],
        vector_select,
    ),
    method!(
        "tensor.indirect",
        [
            req("index", Kind::Tensor),
            opt("num_elem", Kind::Int, "None"),
        ],
        "Tensor indirection (trn3): a `(P, num_elem)` view whose columns are free positions read at run time from `index` (snake order across partition groups).",
        &[
            "trn3 only; the tensor is SBUF or PSUM with contiguous free dims.",
            "`index` is an SBUF int tensor with the tensor's partition count; `num_elem` (default `index.size`) is at most `index.size`.",
        ],
        indirect,
    )
    .new_in(Target::Trn3),
];

fn view_error(ctx: &Ctx<'_>, message: String, span: Span, label: &str) -> Diagnostic {
    ctx.error(codes::VIEW, message, span, label)
}

/// A view that is already indirect is not made indirect again.
fn not_indirect(ctx: &Ctx<'_>, t: &Tensor, span: Span) -> Result<(), Diagnostic> {
    if t.view.indirect.is_none() {
        return Ok(());
    }
    let message = "this view is already indirect".to_owned();
    Err(view_error(ctx, message, span, "indirect twice"))
}

/// Row-major `[stride, count]` dims splitting one dim of stride `stride`.
fn split(stride: i64, sizes: &[u64]) -> Vec<ViewDim> {
    let mut out = vec![ViewDim::new(0, 1); sizes.len()];
    let mut s = stride;
    for (i, &c) in sizes.iter().enumerate().rev() {
        out[i] = ViewDim::new(s, c);
        s *= c as i64;
    }
    out
}

/// Resolves one `-1` in `sizes` so they multiply to `total`.
fn resolve_sizes(sizes: &[i64], total: u64) -> Option<Vec<u64>> {
    let known: i64 = sizes.iter().filter(|&&d| d != -1).product();
    let infer = sizes.iter().filter(|&&d| d == -1).count();
    if sizes.iter().any(|&d| d == 0 || d < -1) || known <= 0 || infer > 1 {
        return None;
    }
    let out: Vec<u64> = sizes
        .iter()
        .map(|&d| {
            if d == -1 {
                total / known as u64
            } else {
                d as u64
            }
        })
        .collect();
    (out.iter().product::<u64>() == total).then_some(out)
}

fn reshape_dim(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    let raw = b.ints(ctx, "shape")?.unwrap_or_default();
    let Some(sizes) = resolve_sizes(&raw, t.shape[dim]) else {
        return Err(view_error(
            ctx,
            format!(
                "cannot split dim {dim} (size {}) of shape {} into {raw:?}",
                t.shape[dim],
                shape_text(&t.shape)
            ),
            b.span_of("shape"),
            "sizes do not multiply to the dim",
        ));
    };
    keeps_partition_dim(
        ctx,
        &t,
        dim == 0 && sizes.iter().filter(|&&c| c > 1).count() > 1,
        "`reshape_dim` splits",
        b.span,
    )?;
    let mut v = t.view.clone();
    let d = v.dims[dim];
    let new = split(d.stride, &sizes);
    if v.dims.len() - 1 + new.len() > nkic_ir::MAX_VIEW_DIMS {
        return Err(view_error(
            ctx,
            format!(
                "the result would have {} dims, more than {}",
                v.dims.len() - 1 + new.len(),
                nkic_ir::MAX_VIEW_DIMS
            ),
            b.span,
            "too many dims",
        ));
    }
    v.dims.splice(dim..=dim, new);
    if t.buffer.is_on_chip() && dim == 0 {
        // A trivial split keeps the partition dim first: put the size-1
        // dims after it.
        let p = v
            .dims
            .iter()
            .position(|d| d.count > 1)
            .unwrap_or(0)
            .min(sizes.len() - 1);
        let pd = v.dims.remove(p);
        v.dims.insert(0, pd);
    }
    Ok(with_view(&t, v))
}

fn flatten_dims(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let start = dim_index(ctx, &t, req_int(ctx, b, "start")?, b.span_of("start"))?;
    let end = dim_index(ctx, &t, req_int(ctx, b, "end")?, b.span_of("end"))?;
    if start > end {
        return Err(ctx.error(
            codes::AXIS,
            format!("`start` ({start}) is after `end` ({end})"),
            b.span_of("end"),
            "empty range",
        ));
    }
    keeps_partition_dim(
        ctx,
        &t,
        start == 0 && end > 0,
        "`flatten_dims` merges",
        b.span,
    )?;
    let mut v = t.view.clone();
    let group = &v.dims[start..=end];
    if !mergeable(group) {
        return Err(view_error(
            ctx,
            format!(
                "dims {start}..{end} of this {} view are not contiguous, so they cannot be merged",
                shape_text(&t.shape)
            ),
            b.span,
            "not contiguous",
        ));
    }
    let merged = merge(group);
    v.dims.splice(start..=end, [merged]);
    Ok(with_view(&t, v))
}

/// True when `dims` can be one dim: each (non-size-1) dim steps over
/// exactly the next one's extent.
fn mergeable(dims: &[ViewDim]) -> bool {
    let live: Vec<&ViewDim> = dims.iter().filter(|d| d.count > 1).collect();
    live.windows(2)
        .all(|w| w[0].stride == w[1].stride * w[1].count as i64)
}

/// One dim covering contiguous `dims` (checked by the caller).
fn merge(dims: &[ViewDim]) -> ViewDim {
    let count: u64 = dims.iter().map(|d| d.count).product();
    let stride = dims
        .iter()
        .rev()
        .find(|d| d.count > 1)
        .map_or(1, |d| d.stride);
    ViewDim::new(stride, count)
}

/// A pattern item: one name or a group of names.
enum RearrangeItem {
    Name(String),
    Group(Vec<String>),
}

fn pattern_items(ctx: &Ctx<'_>, v: &Value, span: Span) -> Result<Vec<RearrangeItem>, Diagnostic> {
    let bad = || {
        ctx.error(
            codes::ARG_TYPE,
            format!(
                "a rearrange pattern is a tuple of names and tuples of names, found {}",
                crate::format::short_repr(v)
            ),
            span,
            "bad pattern",
        )
    };
    let items: Vec<Value> = match v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        _ => return Err(bad()),
    };
    items
        .iter()
        .map(|it| match it {
            Value::Str(s) => Ok(RearrangeItem::Name(s.to_string())),
            Value::Tuple(_) | Value::List(_) => {
                let inner: Vec<Value> = match it {
                    Value::Tuple(t) => t.to_vec(),
                    Value::List(l) => l.borrow().clone(),
                    _ => Vec::new(),
                };
                inner
                    .iter()
                    .map(|n| match n {
                        Value::Str(s) => Ok(s.to_string()),
                        _ => Err(bad()),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(RearrangeItem::Group)
            }
            _ => Err(bad()),
        })
        .collect()
}

fn rearrange(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let (ss, ds) = (b.span_of("src_pattern"), b.span_of("dst_pattern"));
    let src = pattern_items(ctx, &b.value("src_pattern"), ss)?;
    let dst = pattern_items(ctx, &b.value("dst_pattern"), ds)?;
    let mut fixed: Vec<(String, u64)> = Vec::new();
    if let Value::Dict(d) = b.value("fixed_sizes") {
        for (k, v) in d.borrow().entries.iter() {
            let (Value::Str(name), Some(n)) = (k, v.as_int()) else {
                continue;
            };
            fixed.push((name.to_string(), n.max(0) as u64));
        }
    }
    if src.len() != t.shape.len() {
        return Err(view_error(
            ctx,
            format!(
                "`src_pattern` names {} dims but the tensor has shape {}",
                src.len(),
                shape_text(&t.shape)
            ),
            ss,
            "wrong number of dims",
        ));
    }
    // Elementary axes (name, dim) after splitting the source groups.
    let mut axes: Vec<(String, ViewDim)> = Vec::new();
    for (i, item) in src.iter().enumerate() {
        let d = t.view.dims[i];
        match item {
            RearrangeItem::Name(n) => axes.push((n.clone(), d)),
            RearrangeItem::Group(names) => {
                let raw: Vec<i64> = names
                    .iter()
                    .map(|n| {
                        fixed
                            .iter()
                            .find(|(f, _)| f == n)
                            .map_or(-1, |(_, s)| *s as i64)
                    })
                    .collect();
                let Some(sizes) = resolve_sizes(&raw, d.count) else {
                    return Err(view_error(
                        ctx,
                        format!(
                            "cannot split dim {i} (size {}) into ({}) with fixed_sizes {raw:?}",
                            d.count,
                            names.join(", ")
                        ),
                        ss,
                        "sizes do not fit",
                    ));
                };
                if t.buffer.is_on_chip() && i == 0 && sizes.iter().filter(|&&c| c > 1).count() > 1 {
                    return Err(partition_view_error(ctx, &t, "`rearrange` splits", ss));
                }
                for (n, sd) in names.iter().zip(split(d.stride, &sizes)) {
                    axes.push((n.clone(), sd));
                }
            }
        }
    }
    let mut used = vec![false; axes.len()];
    let mut take = |name: &str| -> Result<ViewDim, Diagnostic> {
        match axes.iter().position(|(n, _)| n == name) {
            Some(i) if !used[i] => {
                used[i] = true;
                Ok(axes[i].1)
            }
            Some(_) => Err(view_error(
                ctx,
                format!("`{name}` appears twice in `dst_pattern`"),
                ds,
                "repeated name",
            )),
            None => Err(view_error(
                ctx,
                format!("`{name}` is not a name of `src_pattern`"),
                ds,
                "unknown name",
            )),
        }
    };
    let mut dims = Vec::new();
    let mut first_is_partition = false;
    for (k, item) in dst.iter().enumerate() {
        match item {
            RearrangeItem::Name(n) => {
                let d = take(n)?;
                if k == 0 {
                    first_is_partition = matches!(&src[0], RearrangeItem::Name(s) if s == n);
                }
                dims.push(d);
            }
            RearrangeItem::Group(names) => {
                let group = names
                    .iter()
                    .map(|n| take(n))
                    .collect::<Result<Vec<_>, _>>()?;
                if !mergeable(&group) {
                    return Err(view_error(
                        ctx,
                        format!(
                            "({}) are not contiguous in memory in this order, so they cannot be merged",
                            names.join(", ")
                        ),
                        ds,
                        "not contiguous",
                    ));
                }
                dims.push(merge(&group));
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(view_error(
            ctx,
            format!(
                "`{}` of `src_pattern` is missing from `dst_pattern`",
                axes[i].0
            ),
            ds,
            "name dropped",
        ));
    }
    if t.buffer.is_on_chip() && !first_is_partition {
        return Err(partition_view_error(ctx, &t, "this `rearrange` moves", ds));
    }
    if dims.is_empty() || dims.len() > nkic_ir::MAX_VIEW_DIMS {
        return Err(view_error(
            ctx,
            format!("the result would have {} dims", dims.len()),
            ds,
            "bad rank",
        ));
    }
    let mut v = t.view.clone();
    v.dims = dims;
    Ok(with_view(&t, v))
}

fn vector_select(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    if req_int(ctx, b, "dim")? != 0 {
        return Err(ctx.error(
            codes::AXIS,
            "`vector_select` gathers along dim 0",
            b.span_of("dim"),
            "not 0",
        ));
    }
    if t.buffer.is_on_chip() {
        return Err(check::tensor_error(
            ctx,
            codes::BUFFER,
            "`vector_select` gathers rows of HBM tensors, found",
            &t,
            b.span,
            "not HBM",
        ));
    }
    not_indirect(ctx, &t, b.span)?;
    let idx = b.tensor(ctx, "vector_offset")?;
    let si = b.span_of("vector_offset");
    check::row_index(ctx, &idx, si, "`vector_offset`")?;
    let mut v = t.view.clone();
    v.dims[0] = ViewDim::new(v.dims[0].stride, check::partitions(&idx));
    v.indirect = Some(Indirection::Rows {
        index: Box::new(idx.view.clone()),
    });
    Ok(with_view(&t, v))
}

fn indirect(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    check::on_chip(ctx, &t, b.span, "the indirect tensor")?;
    not_indirect(ctx, &t, b.span)?;
    if !is_contiguous(&t.view.dims[1..]) {
        return Err(view_error(
            ctx,
            format!(
                "the free dims of this {} view are not contiguous",
                shape_text(&t.shape)
            ),
            b.span,
            "not contiguous",
        ));
    }
    let idx = b.tensor(ctx, "index")?;
    let si = b.span_of("index");
    if idx.buffer != Buffer::Sbuf
        || !idx.dtype().is_int()
        || check::partitions(&idx) != check::partitions(&t)
    {
        return Err(ctx.error(
            codes::ARG_TYPE,
            format!(
                "`index` must be an SBUF int tensor with {} partitions, found {}",
                check::partitions(&t),
                check::describe(&idx)
            ),
            si,
            "bad index tensor",
        ));
    }
    let size: u64 = idx.shape.iter().product();
    let n = match b.int(ctx, "num_elem")? {
        None => size,
        Some(n) if n >= 1 && (n as u64) <= size => n as u64,
        Some(n) => {
            return Err(check::out_of_range(
                ctx,
                b,
                "num_elem",
                format_args!("`num_elem` is 1 to {size} (the size of `index`)"),
                n,
            ));
        }
    };
    let mut v = t.view.clone();
    v.dims = vec![v.dims[0], ViewDim::new(1, n)];
    v.indirect = Some(Indirection::Columns {
        index: Box::new(idx.view.clone()),
    });
    Ok(with_view(&t, v))
}

// ------------------------------------------------------------------ broadcast_to and expand_dims

/// `t.broadcast_to` and `nl.expand_dims`, registered in `table::REGISTRY`
/// after `nl_math`'s composed functions.
pub const EXPAND_DEFS: &[ApiDef] = &[
    ApiDef::new(
        "tensor.broadcast_to",
        &[X, SHAPE, OUT_DTYPE],
        &[Engine::Vector, Engine::Tensor],
        "`t.broadcast_to(shape)` is `nl.broadcast_to(t, shape)`.",
        &["The `nl.broadcast_to` rules apply."],
        super::nl_math::broadcast_to,
    ),
    ApiDef::new(
        "nl.expand_dims",
        &[X, req("axis", Kind::Int)],
        NO_ENGINE,
        "A view of `x` with a size-1 dim inserted at `axis` (no data moves).",
        &["On-chip tiles keep their partition dim first: `axis ≥ 1`."],
        expand_dims,
    ),
];

fn expand_dims(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let n = x.shape.len() as i64;
    let a = b.int(ctx, "axis")?.unwrap_or(0);
    let axis = if a < 0 { a + n + 1 } else { a };
    if axis < 0 || axis > n || x.shape.len() >= nkic_ir::MAX_VIEW_DIMS {
        return Err(ctx.error(
            codes::AXIS,
            format!(
                "cannot insert axis {a} into shape {}",
                check::shape_text(&x.shape)
            ),
            b.span_of("axis"),
            "bad axis",
        ));
    }
    if x.buffer.is_on_chip() && axis == 0 {
        return Err(check::tensor_error(
            ctx,
            codes::PARTITION_VIEW,
            "`expand_dims` at axis 0 would move the partition dim of",
            &x,
            b.span_of("axis"),
            "partition dim first",
        ));
    }
    let Some(view) = x.view.insert_dim(axis as usize) else {
        return Err(ctx.error(
            codes::AXIS,
            "cannot insert the axis",
            b.span_of("axis"),
            "bad axis",
        ));
    };
    let shape = view.dims.iter().map(|d| d.count).collect();
    Ok(Value::tensor(Tensor {
        view,
        shape,
        buffer: x.buffer,
    }))
}

// ------------------------------------------------------------------ legacy ncc.* allocation

/// The parameters of a legacy decorator or direct allocation: `func`.
const FUNC_PARAMS: &[Param] = &[req("func", Kind::Any)];
/// The partition and tiling parameters of a legacy modulo allocation.
const BASE_PARTITION: Param = opt("base_partition", Kind::Int, "0");
const NUM_PAR_TILES: Param = opt("num_par_tiles", Kind::Ints, "()");
const NUM_FREE_TILES: Param = opt("num_free_tiles", Kind::Ints, "()");

/// A legacy `ncc.*` function: it runs on no engine and checks nothing.
macro_rules! legacy {
    ($name:literal, $params:expr, $summary:literal, $run:expr) => {
        ApiDef::new($name, $params, NO_ENGINE, $summary, &[], $run)
    };
}

/// The legacy `ncc.*` allocation functions, registered in
/// `table::REGISTRY` after `nl.loop_reduce`.
pub const LEGACY_ALLOC_DEFS: &[ApiDef] = &[
    legacy!(
        "ncc.sbuf.alloc",
        FUNC_PARAMS,
        "Legacy direct allocation (`buffer=ncc.sbuf.alloc(func)`): nkic allocates the tensor itself, so this is `nl.sbuf` (see the module doc).",
        legacy_sbuf
    ),
    legacy!(
        "ncc.sbuf.mod_alloc",
        &[
            req("base_addr", Kind::Int),
            BASE_PARTITION,
            NUM_PAR_TILES,
            NUM_FREE_TILES,
        ],
        "Legacy modulo allocation in SBUF: nkic allocates the tensor itself, so this is `nl.sbuf`.",
        legacy_sbuf
    ),
    legacy!(
        "ncc.sbuf.auto_alloc",
        &[],
        "Legacy automatic SBUF allocation: `nl.sbuf`.",
        legacy_sbuf
    ),
    legacy!(
        "ncc.psum.alloc",
        FUNC_PARAMS,
        "Legacy direct allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        legacy_psum
    ),
    legacy!(
        "ncc.psum.mod_alloc",
        &[
            req("base_bank", Kind::Int),
            opt("base_addr", Kind::Int, "0"),
            BASE_PARTITION,
            opt("num_bank_tiles", Kind::Ints, "()"),
            NUM_PAR_TILES,
            NUM_FREE_TILES,
        ],
        "Legacy modulo allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        legacy_psum
    ),
    legacy!(
        "ncc.psum.auto_alloc",
        &[],
        "Legacy automatic PSUM allocation: `nl.psum`.",
        legacy_psum
    ),
    legacy!(
        "ncc.skip_middle_end_transformations",
        FUNC_PARAMS,
        "A legacy compiler-pass decorator; nkic has no such passes, so it returns the function unchanged.",
        identity_decorator
    ),
];

fn legacy_sbuf(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Sbuf))
}

fn legacy_psum(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Psum))
}

fn identity_decorator(_ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(b.value("func"))
}

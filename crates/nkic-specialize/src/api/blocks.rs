//! Legacy block tensors: SBUF/PSUM tensors whose shape puts block dims
//! before the partition dim, `nl.ndarray((B, nl.par_dim(P), F), …)`.
//!
//! Real NKI allocates every block of such a tensor on its own: a block is
//! an ordinary `(P, F…)` tile that lives from its first write to its last
//! read, so a `(32, 8, nl.par_dim(128), 512)` float32 PSUM tensor is fine
//! as long as only a few of its 2 KiB blocks are alive at a time, although
//! all of them together (512 KiB per partition) are far more than PSUM's
//! 16 KiB. nkic models this directly: a block tensor is a value holding
//! one storage per block (row-major over the block dims), and the backend
//! sees each block's own live range.
//!
//! Block dims are selected with integers (`qk[i, j]`, `qk[i, j, :, :]`,
//! `acc[b, 0:64, :]`); the items after the block dims index the selected
//! tile as usual. Selecting fewer than all block dims (`qk[i]` of a tensor
//! with two block dims) gives a smaller block tensor. Slices over block
//! dims would need one view across several storages, which the IR cannot
//! express, so they are errors (E0500) that say so; NKI kernels index
//! block dims with loop indices. The whole block tensor can be filled
//! (`nl.zeros((B, nl.par_dim(P), F), …)` memsets every block) and has the
//! attributes `shape`, `dtype`, `buffer`, `ndim` and `size`; any other use
//! as one operand is an error naming the block tensor.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::DType;

use super::check::shape_text;
use super::codes;
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// A tensor with `dims` leading block dims, each block its own storage.
#[derive(Debug)]
pub struct BlockTensor {
    /// The sizes of the leading block dims.
    pub dims: Vec<u64>,
    /// One tile per block, row-major over `dims`.
    pub tiles: Vec<Rc<Tensor>>,
    /// The shape of one block (partition dim first).
    pub block_shape: Vec<u64>,
    pub dtype: DType,
    pub buffer: Buffer,
}

impl BlockTensor {
    /// The shape the kernel sees: block dims, then the block's shape.
    pub fn shape(&self) -> Vec<u64> {
        let mut s = self.dims.clone();
        s.extend(&self.block_shape);
        s
    }

    /// The shape with the partition dim marked, for messages.
    fn shape_text(&self) -> String {
        let mut parts: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        for (i, d) in self.block_shape.iter().enumerate() {
            parts.push(if i == 0 {
                format!("par_dim({d})")
            } else {
                d.to_string()
            });
        }
        format!("({})", parts.join(", "))
    }
}

crate::value::api_object!(BlockTensor, "block tensor", {
    fn display(&self) -> String {
        format!(
            "block tensor(shape={}, dtype={}, buffer={})",
            self.shape_text(),
            self.dtype,
            self.buffer.name()
        )
    }
});

/// The block tensor inside `v`, if it is one.
pub fn as_blocks(v: &Value) -> Option<&BlockTensor> {
    match v {
        Value::Ext(e) => e.as_any().downcast_ref::<BlockTensor>(),
        _ => None,
    }
}

/// Allocates a block tensor of `dims` blocks of `block_shape`: one
/// storage per block, each checked like any tile.
#[allow(clippy::too_many_arguments)]
pub fn alloc(
    ctx: &mut Ctx<'_>,
    dims: &[u64],
    block_shape: &[u64],
    dtype: DType,
    buffer: Buffer,
    name: &str,
    shape_span: Span,
    span: Span,
) -> Result<BlockTensor, Diagnostic> {
    let count = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let limit = ctx.config.max_ops;
    let Some(count) = count.filter(|&c| c <= limit) else {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "a block tensor with block dims {} has more blocks than the op budget ({limit})",
                shape_text(dims)
            ),
            shape_span,
            "too many blocks",
        ));
    };
    let mut tiles = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let t = super::tensor::alloc(ctx, block_shape, dtype, buffer, name, shape_span, span)?;
        tiles.push(Rc::new(t));
    }
    Ok(BlockTensor {
        dims: dims.to_vec(),
        tiles,
        block_shape: block_shape.to_vec(),
        dtype,
        buffer,
    })
}

/// `blocks.attr`.
pub fn attribute(
    ctx: &Ctx<'_>,
    b: &BlockTensor,
    attr: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    let shape = b.shape();
    match attr {
        "shape" => Ok(Value::tuple(
            shape.iter().map(|&d| Value::Int(d as i64)).collect(),
        )),
        "dtype" => Ok(Value::DType(b.dtype)),
        "buffer" => Ok(Value::Buffer(b.buffer)),
        "ndim" => Ok(Value::Int(shape.len() as i64)),
        "size" => Ok(Value::Int(shape.iter().product::<u64>() as i64)),
        _ => Err(ctx
            .error(
                crate::codes::NO_ATTRIBUTE,
                format!("a block tensor has no attribute `{attr}`"),
                span,
                "unknown attribute",
            )
            .with_note(format!(
                "{} has block dims {} before its partition dim; each block is its own tile: select one with integers (`t[{}]`) and use the tile's attributes and methods",
                b.shape_text(),
                shape_text(&b.dims),
                vec!["i"; b.dims.len()].join(", ")
            ))),
    }
}

/// `blocks[key]`: integers select blocks, the remaining items index the
/// selected tile.
pub fn subscript(
    ctx: &mut Ctx<'_>,
    b: &BlockTensor,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let items: Vec<Value> = match key {
        Value::Tuple(items) => items.to_vec(),
        k => vec![k.clone()],
    };
    let mut index = 0u64;
    let mut taken = 0;
    for (d, &size) in b.dims.iter().enumerate() {
        let Some(item) = items.get(d) else { break };
        let i = match item {
            Value::Int(_) | Value::Bool(_) => item.as_int().unwrap_or(0),
            Value::Ellipsis if d == 0 && items.len() == 1 => {
                return Err(whole_use(ctx, b, span, "`t[...]`"));
            }
            _ => {
                return Err(ctx
                    .error(
                        codes::INDEX,
                        format!(
                            "block dim {d} of the block tensor {} is indexed with {}, but block dims take integers",
                            b.shape_text(),
                            match item {
                                Value::Slice(_) => "a slice".to_owned(),
                                v => crate::format::a_type(v),
                            }
                        ),
                        span,
                        "not an integer",
                    )
                    .with_note(
                        "every block of a `(B, nl.par_dim(P), F)` tensor is a separate tile, so one view cannot span several blocks",
                    )
                    .with_help("select blocks one at a time, e.g. in an `nl.affine_range` loop"));
            }
        };
        let j = if i < 0 { i + size as i64 } else { i };
        if j < 0 || j >= size as i64 {
            return Err(ctx.error(
                codes::INDEX,
                format!(
                    "index {i} is out of bounds for block dim {d} of size {size} (block tensor {}, {})",
                    b.shape_text(),
                    b.buffer.name()
                ),
                span,
                "out of bounds",
            ));
        }
        index = index * size + j as u64;
        taken += 1;
    }
    if taken < b.dims.len() {
        // Fewer block indices than block dims: the rest stay blocks.
        let rest: u64 = b.dims[taken..].iter().product();
        let first = (index * rest) as usize;
        let tiles = b.tiles[first..first + rest as usize].to_vec();
        return Ok(Value::Ext(Rc::new(BlockTensor {
            dims: b.dims[taken..].to_vec(),
            tiles,
            block_shape: b.block_shape.clone(),
            dtype: b.dtype,
            buffer: b.buffer,
        })));
    }
    let tile = b.tiles[index as usize].clone();
    let rest = &items[taken..];
    if rest.is_empty() {
        return Ok(Value::Tensor(tile));
    }
    super::tensor::subscript(ctx, &tile, &Value::tuple(rest.to_vec()), span)
}

/// The error for a block tensor used where one tile is needed; `what`
/// names the use (`` `dst` ``, "the target").
pub fn whole_use(ctx: &Ctx<'_>, b: &BlockTensor, span: Span, what: &str) -> Diagnostic {
    ctx.error(
        codes::LEGACY,
        format!(
            "{what} still has block dims before its partition dim (block tensor {})",
            b.shape_text()
        ),
        span,
        "a block tensor",
    )
    .with_note(format!(
        "each block of the block dims {} is a separate tile",
        shape_text(&b.dims)
    ))
    .with_help(format!(
        "index the block dims first, e.g. `t[{}]`",
        vec!["b"; b.dims.len()].join(", ")
    ))
}

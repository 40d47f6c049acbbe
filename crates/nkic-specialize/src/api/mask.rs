//! Legacy `mask=` predicates (language.md §10): a conjunction of
//! comparisons of index-grid expressions with constants, such as
//! `(i_p < 64) & (i_f < 256)`, that shrinks an instruction to a
//! rectangular part of its tile.
//!
//! nkic applies a mask at compile time by slicing the operands: the mask's
//! grid axes are the dims of the instruction's tiles (axis 0 the partition
//! dim), every tensor argument whose shape is the grid shape is sliced to
//! the kept ranges, an operand with other free sizes (a `(P, 1)` scalar
//! column, the `(P, 8)` values of `max8`) only on its partition dim, and
//! a result tile created by the call keeps the full grid shape with only
//! the kept part written.
//!
//! A grid subscript that leaves its tensor (`out[i_p, i_f]` with a grid
//! larger than `out`) is kept pending ([`PendingGrid`]) instead of failing
//! at once: legacy kernels pass such views to calls whose `mask=` keeps
//! only the in-bounds part. The call restricts the grids to the mask's
//! rectangle first; used any other way the view reports its
//! out-of-bounds error where it is used.
//!
//! Clauses over two grid axes at once (triangular masks such as
//! `mask=(i_p >= i_f)`) are not rectangles. A call whose result is a
//! fresh tile computes the whole bounding rectangle: the elements the mask
//! leaves out are unspecified in NKI, so any value is faithful. A call
//! that writes an existing tensor (`dst=`, `nl.store`) or a matmul (which
//! may accumulate) with such a mask is not supported yet (E0524): nkic
//! never writes elements the mask excludes.

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};

use super::codes;
use crate::args::{Arg, CallArgs};
use crate::ctx::Ctx;
use crate::value::{IndexPred, PredOp, Tensor, Value};

/// The rectangle a mask keeps: per grid axis, `[lo, hi)` of `size`.
#[derive(Clone, Debug)]
pub struct Mask {
    pub ranges: Vec<(u64, u64)>,
    pub grid: Vec<u64>,
    /// False when some clause compares several grids (a triangular mask):
    /// the ranges are then only its bounding rectangle.
    pub exact: bool,
    pub span: Span,
    /// The full-size result tile of a value-form call (set by
    /// [`super::emit::new_result`]), returned instead of the sliced view.
    pub full_result: RefCell<Option<Rc<Tensor>>>,
}

/// A grid subscript that went out of bounds, waiting for a `mask=` that
/// keeps it in bounds (module doc).
#[derive(Debug)]
pub struct PendingGrid {
    pub tensor: Rc<Tensor>,
    pub items: Vec<Value>,
    pub span: Span,
    pub error: Diagnostic,
}

crate::value::api_object!(PendingGrid, "tensor");

/// Resolves the pending grid subscripts among `args` with the call's
/// `mask=` rectangle (left in place for [`take`]); without a usable mask
/// they stay pending and report their error when materialized.
pub fn resolve_pending(ctx: &mut Ctx<'_>, args: &mut CallArgs) -> Result<(), Diagnostic> {
    let has_pending = args
        .positional
        .iter()
        .chain(args.keywords.iter().map(|(_, a)| a))
        .any(|a| matches!(&a.value, Value::Ext(e) if e.as_any().is::<PendingGrid>()));
    if !has_pending {
        return Ok(());
    }
    let Some(mask_arg) = args
        .keywords
        .iter()
        .find(|(k, _)| &**k == "mask")
        .map(|(_, a)| a.clone())
    else {
        return Ok(());
    };
    let Value::IndexPred(pred) = &mask_arg.value else {
        return Ok(());
    };
    let mask = rectangle(ctx, pred, &mask_arg)?;
    let fix = |ctx: &mut Ctx<'_>, a: &mut Arg| -> Result<(), Diagnostic> {
        let Value::Ext(e) = &a.value else {
            return Ok(());
        };
        let Some(p) = e.as_any().downcast_ref::<PendingGrid>() else {
            return Ok(());
        };
        let items: Vec<Value> = p.items.iter().map(|v| restrict(v, &mask)).collect();
        let t = p.tensor.clone();
        let span = p.span;
        a.value = super::tensor::subscript(ctx, &t, &Value::tuple(items), span)?;
        Ok(())
    };
    for a in args.positional.iter_mut() {
        fix(ctx, a)?;
    }
    for (_, a) in args.keywords.iter_mut() {
        fix(ctx, a)?;
    }
    Ok(())
}

/// An index grid restricted to the mask's rectangle: axis `a` runs over
/// `lo..hi` instead of `0..size`.
fn restrict(v: &Value, mask: &Mask) -> Value {
    let Value::Index(e) = v else {
        return v.clone();
    };
    let ndim = mask.grid.len() as u8;
    let mut e = e.aligned(ndim);
    for t in e.terms.iter_mut() {
        let Some(&(lo, hi)) = mask.ranges.get(usize::from(t.axis)) else {
            continue;
        };
        if t.size == mask.grid[usize::from(t.axis)] && (lo, hi) != (0, t.size) {
            e.constant += t.coef * lo as i64;
            t.size = hi - lo;
        }
    }
    Value::Index(Rc::new(e))
}

/// Removes the `mask=` keyword from `args` and, when it is a predicate,
/// slices the tensor arguments to it.
pub fn take(ctx: &Ctx<'_>, args: &mut CallArgs) -> Result<Option<Mask>, Diagnostic> {
    let Some(arg) = args.take_keyword("mask") else {
        return Ok(None);
    };
    let pred = match &arg.value {
        Value::None => return Ok(None),
        Value::IndexPred(p) => p.clone(),
        Value::Bool(true) => return Ok(None),
        v => {
            return Err(ctx.error(
                codes::LEGACY,
                format!(
                    "`mask=` takes a predicate over index grids such as `(i_p < 64) & (i_f < 256)`, found a {}",
                    v.type_name()
                ),
                arg.span,
                "not a mask",
            ));
        }
    };
    let mask = rectangle(ctx, &pred, &arg)?;
    for a in args.positional.iter_mut() {
        a.value = slice_value(ctx, &a.value, &mask, a.span)?;
    }
    for (_, a) in args.keywords.iter_mut() {
        a.value = slice_value(ctx, &a.value, &mask, a.span)?;
    }
    Ok(Some(mask))
}

fn rectangle(ctx: &Ctx<'_>, pred: &IndexPred, arg: &Arg) -> Result<Mask, Diagnostic> {
    let ndim = pred
        .clauses
        .iter()
        .map(|(e, _)| e.ndim)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut grid = vec![1u64; usize::from(ndim)];
    for (e, _) in &pred.clauses {
        let e = e.aligned(ndim);
        for t in &e.terms {
            let g = &mut grid[usize::from(t.axis)];
            *g = (*g).max(t.size);
        }
    }
    let mut ranges: Vec<(u64, u64)> = grid.iter().map(|&s| (0, s)).collect();
    let mut exact = true;
    for (e, op) in &pred.clauses {
        let e = e.aligned(ndim);
        let terms: Vec<_> = e.terms.iter().filter(|t| t.size > 1).collect();
        let [term] = terms[..] else {
            // A clause over several grids (`i_p >= i_f`) is not a
            // rectangle: the call computes its whole bounding rectangle,
            // which is only right for a fresh result (see the module doc).
            exact = false;
            continue;
        };
        let holds = |i: u64| {
            let v = e.constant + term.coef * i as i64;
            match op {
                PredOp::Lt => v < 0,
                PredOp::Le => v <= 0,
                PredOp::Gt => v > 0,
                PredOp::Ge => v >= 0,
                PredOp::Eq => v == 0,
                PredOp::Ne => v != 0,
            }
        };
        let kept: Vec<u64> = (0..term.size).filter(|&i| holds(i)).collect();
        let (lo, hi) = match (kept.first(), kept.last()) {
            (Some(&a), Some(&b)) if (b - a + 1) as usize == kept.len() => (a, b + 1),
            (None, _) | (_, None) => (0, 0),
            _ => {
                return Err(ctx.error(
                    codes::LEGACY,
                    "this mask keeps a non-contiguous set of indices",
                    arg.span,
                    "not a rectangle",
                ));
            }
        };
        let r = &mut ranges[usize::from(term.axis)];
        *r = (r.0.max(lo), r.1.min(hi));
    }
    if ranges.iter().any(|&(lo, hi)| lo >= hi) {
        return Err(ctx.error(
            codes::LEGACY,
            "this mask keeps no element at all",
            arg.span,
            "empty mask",
        ));
    }
    Ok(Mask {
        ranges,
        grid,
        exact,
        span: arg.span,
        full_result: RefCell::new(None),
    })
}

/// Slices a tensor argument to the mask's rectangle.
fn slice_value(ctx: &Ctx<'_>, v: &Value, mask: &Mask, span: Span) -> Result<Value, Diagnostic> {
    let Value::Tensor(t) = v else {
        return Ok(v.clone());
    };
    match apply(t, mask) {
        Some(s) => Ok(Value::tensor(s)),
        None => Err(ctx.error(
            codes::SHAPE,
            format!(
                "the mask covers a grid of shape {:?} but this operand has shape {:?}",
                mask.grid, t.shape
            ),
            span,
            "does not match the mask grid",
        )),
    }
}

/// `t` restricted to the mask: every restricted axis of the grid is
/// sliced where `t` has the grid's size and left alone where `t` has size
/// 1 (a broadcast operand) or, on a free dim, another size (a dim the
/// mask's grid does not describe); a partition dim of another size gives
/// `None`.
pub fn apply(t: &Tensor, mask: &Mask) -> Option<Tensor> {
    let mut view = t.view.clone();
    for (axis, &(lo, hi)) in mask.ranges.iter().enumerate() {
        let full = mask.grid[axis];
        if lo == 0 && hi == full {
            continue;
        }
        match t.shape.get(axis) {
            Some(&s) if s == full => view = view.slice(axis, lo, hi, 1)?,
            // Size 1 broadcasts; size `hi - lo` was restricted already
            // (a pending grid subscript resolved with this mask).
            Some(&s) if s == 1 || s == hi - lo => {}
            // A free dim that is not a grid dim (the `(P, 8)` `vals` of
            // `nc_match_replace8` masked over its `(P, F)` data) is not
            // masked; the instruction's own shape rules check it.
            Some(_) if axis > 0 => {}
            _ => return None,
        }
    }
    let shape = view.dims.iter().map(|d| d.count).collect();
    Some(Tensor {
        view,
        shape,
        buffer: t.buffer,
    })
}

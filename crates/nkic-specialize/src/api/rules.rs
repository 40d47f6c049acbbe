//! Compile-time rules as data. Each rule value writes its constraint
//! sentence (the `constraints:` text of the API table, and so the hover
//! text and the reference in `docs/language.md`) and runs its check, with
//! one message at the span of the parameter it names: the prose and the
//! check are one value and cannot drift apart.
//!
//! A rule is declared once as a `const` next to its function's entry
//! (`const TT_TILES: Tiles = tiles!("data1", "data2", "dst");`), listed by
//! its `text` in the entry's `constraints`, and checked by the run
//! function with `TT_TILES.check(...)`.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::AluOp;

use super::table::Bound;
use super::{check, codes, emit};
use crate::ctx::Ctx;
use crate::value::Tensor;

/// Element-wise tiles: each is SBUF/PSUM with at most 128 partitions and
/// a legal start partition, all have the first's partition count and
/// free size, and the first fits the engines' free-size limit.
#[derive(Clone, Copy, Debug)]
pub struct Tiles {
    /// The parameters, the input that sets the shape first.
    pub names: &'static [&'static str],
    pub text: &'static str,
}

/// [`Tiles`] over two or three parameters, with its sentence.
macro_rules! tiles {
    ($a:literal, $b:literal) => {
        $crate::api::rules::Tiles {
            names: &[$a, $b],
            text: concat!(
                "`",
                $a,
                "` and `",
                $b,
                "` are SBUF/PSUM with equal partition counts (≤ 128) and free sizes."
            ),
        }
    };
    ($a:literal, $b:literal, $c:literal) => {
        $crate::api::rules::Tiles {
            names: &[$a, $b, $c],
            text: concat!(
                "`",
                $a,
                "`, `",
                $b,
                "` and `",
                $c,
                "` are SBUF/PSUM with equal partition counts (≤ 128) and free sizes."
            ),
        }
    };
}
pub(crate) use tiles;

/// `data` and `dst` of a one-input element-wise instruction.
pub const DATA_DST: Tiles = tiles!("data", "dst");
/// `src` and `dst` of a one-input element-wise instruction.
pub const SRC_DST: Tiles = tiles!("src", "dst");

impl Tiles {
    /// The first parameter (the input that sets the shape).
    pub fn first(&self) -> &'static str {
        self.names[0]
    }

    /// The tiles: the inputs by name, then `dst` (the last name; in the
    /// value form a new SBUF tile of the first input's shape and dtype),
    /// checked. `N` is the number of names.
    pub fn bind<const N: usize>(
        &self,
        ctx: &mut Ctx<'_>,
        b: &Bound,
        span: Span,
    ) -> Result<[Rc<Tensor>; N], Diagnostic> {
        let (dst_name, inputs) = self.names.split_last().expect("a rule names its tiles");
        debug_assert_eq!(*dst_name, "dst", "the last tile of a rule is `dst`");
        let mut tiles = Vec::with_capacity(N);
        for name in inputs {
            tiles.push(b.tensor(ctx, name)?);
        }
        let first = &tiles[0];
        let dst = emit::dst_or_new(ctx, b, &first.shape, first.dtype(), Buffer::Sbuf, span)?;
        tiles.push(dst);
        let refs: Vec<&Tensor> = tiles.iter().map(|t| &**t).collect();
        self.check(ctx, b, &refs)?;
        Ok(tiles
            .try_into()
            .unwrap_or_else(|_| panic!("`{}` has {N} tiles", self.text)))
    }

    /// Checks `tiles`, given in the order of [`Tiles::names`].
    pub fn check(&self, ctx: &Ctx<'_>, b: &Bound, tiles: &[&Tensor]) -> Result<(), Diagnostic> {
        let what = |name: &str| format!("`{name}`");
        for (name, t) in self.names.iter().zip(tiles) {
            check::operand(ctx, t, b.span_of(name), &what(name))?;
        }
        let (first, rest) = (tiles[0], &tiles[1..]);
        for (name, t) in self.names[1..].iter().zip(rest) {
            check::same_pf(ctx, (first, self.first()), (t, name, b.span_of(name)))?;
        }
        let name = self.first();
        check::engine_free_size(ctx, first, b.span_of(name), &what(name))
    }
}

/// The one input tile `name` of an element-wise function, checked as
/// [`Tiles`] checks its first tile (SBUF/PSUM, at most 128 partitions, a
/// legal start partition, the engines' free-size limit).
pub fn input_tile(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Rc<Tensor>, Diagnostic> {
    let (t, span) = operand_tile(ctx, b, name)?;
    check::engine_free_size(ctx, &t, span, &format!("`{name}`"))?;
    Ok(t)
}

/// The tile `name` of an instruction and its span, checked as an operand
/// ([`check::operand`]: SBUF/PSUM, at most 128 partitions, a legal start
/// partition).
pub fn operand_tile(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
) -> Result<(Rc<Tensor>, Span), Diagnostic> {
    let t = b.tensor(ctx, name)?;
    let span = b.span_of(name);
    check::operand(ctx, &t, span, &format!("`{name}`"))?;
    Ok((t, span))
}

/// Two inputs of one instruction are not both in PSUM (an engine reads at
/// most one PSUM operand); reported at the second.
#[derive(Clone, Copy, Debug)]
pub struct NotBothPsum {
    pub names: [&'static str; 2],
    pub text: &'static str,
}

/// [`NotBothPsum`] of two parameters, with its sentence.
macro_rules! not_both_psum {
    ($a:literal, $b:literal) => {
        $crate::api::rules::NotBothPsum {
            names: [$a, $b],
            text: concat!("`", $a, "` and `", $b, "` are not both in PSUM."),
        }
    };
}
pub(crate) use not_both_psum;

impl NotBothPsum {
    /// Checks the two inputs, given in the order of [`NotBothPsum::names`].
    pub fn check(
        &self,
        ctx: &Ctx<'_>,
        b: &Bound,
        x: &Tensor,
        y: &Tensor,
    ) -> Result<(), Diagnostic> {
        if x.buffer == Buffer::Psum && y.buffer == Buffer::Psum {
            return Err(both_psum(ctx, b.span_of(self.names[1])));
        }
        Ok(())
    }
}

/// Two PSUM inputs at `span` (also what two PSUM tiles of an `nl.*`
/// element-wise call get).
pub fn both_psum(ctx: &Ctx<'_>, span: Span) -> Diagnostic {
    ctx.error(
        codes::BUFFER,
        "both inputs are in PSUM; a two-input Vector instruction reads at most one PSUM operand",
        span,
        "two PSUM inputs",
    )
    .with_help("copy one of them to SBUF first")
}

/// ALU operator parameters that take binary arithmetic operators only (no
/// bitwise, unary or `nl.average`).
#[derive(Clone, Copy, Debug)]
pub struct BinaryArith {
    pub names: &'static [&'static str],
    pub text: &'static str,
}

/// [`BinaryArith`] of one or two parameters, with its sentence.
macro_rules! binary_arith {
    ($a:literal) => {
        $crate::api::rules::BinaryArith {
            names: &[$a],
            text: concat!("`", $a, "` is a binary arithmetic operator."),
        }
    };
    ($a:literal, $b:literal) => {
        $crate::api::rules::BinaryArith {
            names: &[$a, $b],
            text: concat!("`", $a, "` and `", $b, "` are binary arithmetic operators."),
        }
    };
}
pub(crate) use binary_arith;

impl BinaryArith {
    /// The operators of every parameter, in order, checked.
    pub fn ops<const N: usize>(&self, ctx: &Ctx<'_>, b: &Bound) -> Result<[AluOp; N], Diagnostic> {
        debug_assert_eq!(self.names.len(), N, "`{}` names {N} operators", self.text);
        let mut ops = [AluOp::Add; N];
        for (i, op) in ops.iter_mut().enumerate() {
            *op = self.op(ctx, b, i)?;
        }
        Ok(ops)
    }

    /// The operator of parameter `i` (`nl.add` when absent), checked.
    pub fn op(&self, ctx: &Ctx<'_>, b: &Bound, i: usize) -> Result<AluOp, Diagnostic> {
        let name = self.names[i];
        let op = b.alu_op(ctx, name)?.unwrap_or(AluOp::Add);
        if op.is_bitvec() || op.is_unary() || op == AluOp::Average {
            return Err(ctx.error(
                codes::BAD_ENUM,
                format!(
                    "`{name}` must be a binary arithmetic operator, found `nl.{}`",
                    op.name()
                ),
                b.span_of(name),
                "not a binary arithmetic operator",
            ));
        }
        Ok(op)
    }
}

/// An ALU operator parameter that takes only some operators, with the
/// message that says which (before ", found `nl.<op>`") and its label.
#[derive(Clone, Copy, Debug)]
pub struct OpIn {
    pub name: &'static str,
    pub allowed: &'static [AluOp],
    pub message: &'static str,
    pub label: &'static str,
}

/// [`OpIn`] of a `reduce_op` that takes one operator, with its message.
macro_rules! reduces_with_only {
    ($api:literal, $op:ident, $nl:literal) => {
        $crate::api::rules::OpIn {
            name: "reduce_op",
            allowed: &[nkic_isa::AluOp::$op],
            message: concat!("`", $api, "` reduces with `", $nl, "` only"),
            label: concat!("not ", $nl),
        }
    };
}
pub(crate) use reduces_with_only;

impl OpIn {
    /// The operator given, if any, checked.
    pub fn opt(&self, ctx: &Ctx<'_>, b: &Bound) -> Result<Option<AluOp>, Diagnostic> {
        let Some(op) = b.alu_op(ctx, self.name)? else {
            return Ok(None);
        };
        if self.allowed.contains(&op) {
            return Ok(Some(op));
        }
        Err(ctx.error(
            codes::BAD_ENUM,
            format!("{}, found `nl.{}`", self.message, op.name()),
            b.span_of(self.name),
            self.label,
        ))
    }

    /// The operator given, checked, or `default` (an allowed operator).
    pub fn or(&self, ctx: &Ctx<'_>, b: &Bound, default: AluOp) -> Result<AluOp, Diagnostic> {
        debug_assert!(
            self.allowed.contains(&default),
            "`{}`'s default is allowed",
            self.name
        );
        Ok(self.opt(ctx, b)?.unwrap_or(default))
    }
}

/// `reduce_res=`: the tile an accumulating reduction is read into.
#[derive(Clone, Copy, Debug)]
pub struct ReduceRes {
    pub text: &'static str,
}

/// The one `reduce_res` rule (isa.md: every instruction's reduction
/// result is float).
pub const REDUCE_RESULT: ReduceRes = ReduceRes {
    text: "`reduce_res` is an SBUF/PSUM `(P, 1)` tensor of a float dtype.",
};

impl ReduceRes {
    /// The `reduce_res` argument for data with `p` partitions, checked.
    pub fn check(
        &self,
        ctx: &Ctx<'_>,
        b: &Bound,
        p: u64,
    ) -> Result<Option<Rc<Tensor>>, Diagnostic> {
        let Some(t) = b.opt_tensor(ctx, "reduce_res")? else {
            return Ok(None);
        };
        let sp = b.span_of("reduce_res");
        check::operand(ctx, &t, sp, "`reduce_res`")?;
        if check::partitions(&t) != p || check::free_size(&t) != 1 {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "`reduce_res` must be ({p}, 1), found {}",
                    check::shape_text(&t.shape)
                ),
                sp,
                "not (P, 1)",
            ));
        }
        check::float_dtype(ctx, &t, sp, "`reduce_res`")?;
        Ok(Some(t))
    }
}

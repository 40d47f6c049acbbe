//! The `nki.isa` instructions, one file per engine or domain as in
//! isa.md §6: [`dma`] (data movement: the DMAs, `tensor_copy`, `memset`
//! and `iota`, and the LNC=2 exchange and barrier), [`tensor_engine`],
//! [`scalar_engine`], [`vector`], [`select`], [`random`], [`gpsimd`] and
//! [`collective`] (`nki.collectives`).
//!
//! Every rule of isa.md §2 and §4 for these instructions is checked at
//! compile time. All but `tensor_copy_predicated` (which updates `dst` in
//! place) and the trn3 microscaling instructions accept the legacy value
//! form (no `dst`; the result is a new SBUF tile, of the input's dtype
//! unless `dtype=` is given).
//! Operations the IR has no counterpart for (`topk`, `rand_set_state`,
//! `rand_get_state`) are in the table, so hover and the reference show
//! them, but calling one is a "not supported by nkic yet" error (E0524) at
//! the call ([`unsupported`]).

use nkic_diag::{Diagnostic, Span};

use crate::api::codes;
use crate::api::table::Bound;
use crate::ctx::Ctx;
use crate::value::Value;

pub mod collective;
pub mod dma;
pub mod gpsimd;
pub mod random;
pub mod scalar_engine;
pub mod select;
pub mod tensor_engine;
pub mod vector;

/// The run function of a table entry nkic cannot lower yet (E0524).
pub(crate) fn unsupported(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    Err(ctx
        .error(
            codes::UNSUPPORTED,
            format!("`{}` is not supported by nkic yet", b.def.name),
            span,
            "not supported yet",
        )
        .with_note(format!(
            "nkic's IR has no operation for `{}`; see docs/language.md",
            b.def.name
        )))
}

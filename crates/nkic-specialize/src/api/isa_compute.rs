//! The remaining `nki.isa` compute instructions (owned by helper
//! `spec-api-2`): every `nisa` op not defined in `isa_core.rs`.

use super::table::ApiDef;

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[];

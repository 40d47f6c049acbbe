//! `nki.language` element-wise math, comparisons, reductions, softmax and
//! rms_norm (owned by helper `spec-api-2`).

use super::table::ApiDef;

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[];

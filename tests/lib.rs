//! The cross-crate golden suite of nkic: the tests live in the `tests` targets of this package.

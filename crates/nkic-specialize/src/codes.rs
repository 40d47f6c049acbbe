//! Stable diagnostic codes of the evaluator (E0200–E0499).
//!
//! The API layer (`api/`) uses E0500–E0899. Every code is listed with its
//! meaning in the crate's `DIAGNOSTICS.md`; codes are never reused.

/// A name that is not defined.
pub const UNDEFINED_NAME: &str = "E0200";
/// A Python feature the NKI meta-language does not have.
pub const UNSUPPORTED: &str = "E0201";
/// An operation applied to a value of the wrong type.
pub const TYPE_ERROR: &str = "E0202";
/// Wrong arguments to a call: missing, extra, unknown keyword, duplicate.
pub const BAD_ARGUMENTS: &str = "E0203";
/// Calling something that is not callable.
pub const NOT_CALLABLE: &str = "E0204";
/// An attribute that does not exist.
pub const NO_ATTRIBUTE: &str = "E0205";
/// An index out of range or a missing dict key.
pub const INDEX_ERROR: &str = "E0206";
/// An int result outside the 32-bit range of the meta-language.
pub const INT_OVERFLOW: &str = "E0207";
/// Division or modulo by zero.
pub const DIV_BY_ZERO: &str = "E0208";
/// A failed `assert`.
pub const ASSERT_FAILED: &str = "E0209";
/// A value of the right type but a wrong value (bad unpacking, `int("x")`).
pub const VALUE_ERROR: &str = "E0210";
/// A run-time value (tensor, register) used where a compile-time value is
/// needed (an `if` condition, `int()`, a `range` bound).
pub const RUNTIME_VALUE: &str = "E0211";
/// The kernel unrolls to more ops than the budget allows.
pub const OP_BUDGET: &str = "E0212";
/// Calls nested too deeply (usually unbounded recursion).
pub const CALL_DEPTH: &str = "E0213";
/// A compile-time `while` loop ran too many iterations.
pub const LOOP_LIMIT: &str = "E0214";
/// An imported module that cannot be found.
pub const IMPORT_ERROR: &str = "E0215";
/// No kernel function, or more than one candidate.
pub const NO_KERNEL: &str = "E0216";
/// A kernel argument that is missing, unknown or malformed.
pub const KERNEL_ARGS: &str = "E0217";
/// A kernel return value that cannot be an output.
pub const BAD_RETURN: &str = "E0218";
/// A malformed `# nkic:` directive comment.
pub const DIRECTIVE: &str = "E0219";
/// `raise` reached at compile time.
pub const RAISED: &str = "E0220";
/// `@nki.jit` on a helper, or a removed `jit` keyword.
pub const JIT_MISUSE: &str = "E0221";
/// A dynamic loop inside `nl.no_reorder()`.
pub const DYN_IN_NO_REORDER: &str = "E0222";
/// A format spec that cannot be applied to the value.
pub const FORMAT_SPEC: &str = "E0223";
/// A dict key that is not hashable.
pub const UNHASHABLE: &str = "E0224";
/// A bad SPMD grid.
pub const GRID: &str = "E0225";
/// A value that cannot be iterated at compile time.
pub const NOT_ITERABLE: &str = "E0226";
/// Misuse of a dynamic loop or its register.
pub const DYNAMIC_LOOP: &str = "E0227";
/// The source file has syntax errors, so it is not specialized.
pub const SYNTAX_ERRORS: &str = "E0228";
/// A warning: a returned tensor not in `shared_hbm`.
pub const OUTPUT_BUFFER: &str = "E0229";
/// `break`/`continue` outside a loop or `return` outside a function.
pub const MISPLACED: &str = "E0230";
/// A warning: the kernel returns nothing and writes no argument, so the
/// HBM tensors it writes are discarded (a forgotten `return`).
pub const DISCARDED: &str = "E0231";
/// A warning: a name read in a dynamic loop body is rebound there, which
/// does not carry to the next iteration.
pub const CARRIED_REBIND: &str = "E0232";
/// A compile-time argument (`--const`, `nkic.toml`, a directive, the
/// Python API) whose expression does not parse, or that creates tensors.
pub const CONST_ARG: &str = "E0233";
/// Compile-time evaluation ran out of steps (`max_steps`).
pub const STEP_BUDGET: &str = "E0260";
/// Compile-time values outgrew the bytes budget (`max_value_bytes`).
pub const BYTES_BUDGET: &str = "E0261";
/// Compile-time evaluation nested deeper than `max_nesting`.
pub const NESTING_BUDGET: &str = "E0262";

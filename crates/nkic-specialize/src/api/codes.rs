//! Stable diagnostic codes of the API layer (E0500–E0899).
//!
//! Codes are grouped by the rule they enforce, not by the function that
//! checks them, so one code means one kind of mistake everywhere. Codes are
//! never reused; new ones are appended.

/// An index or slice outside a tensor's dims (HBM out-of-bounds included).
pub const INDEX: &str = "E0500";
/// An argument of the wrong kind for an API parameter (a float where a
/// tensor is needed, a raw int for an enum, a string buffer name).
pub const ARG_TYPE: &str = "E0501";
/// Shapes or element counts that do not agree.
pub const SHAPE: &str = "E0502";
/// A partition dim above 128, or an on-chip tensor without a free dim.
pub const PARTITION_SIZE: &str = "E0503";
/// A tensor in a buffer the operation cannot use (PSUM into DMA, HBM into
/// a compute engine, GpSimd touching PSUM, matmul operands outside SBUF).
pub const BUFFER: &str = "E0504";
/// A dtype the operation or the target does not accept.
pub const DTYPE: &str = "E0505";
/// An operation or option the selected target does not have.
pub const TARGET: &str = "E0506";
/// A free size above an engine's or an instruction's limit.
pub const FREE_SIZE: &str = "E0507";
/// A PSUM tile that crosses a bank, or PSUM placement rules.
pub const PSUM_BANK: &str = "E0508";
/// A matmul operand beyond the TensorE tile limits.
pub const MATMUL_TILE: &str = "E0509";
/// A bad `axis` (partition axis, non-trailing axes, out of range).
pub const AXIS: &str = "E0510";
/// A matmul accumulation rule broken (`+=` on a non-PSUM tile, …).
pub const ACCUMULATE: &str = "E0511";
/// A view that touches the partition dim of an on-chip tensor illegally
/// (strided partitions, permuting dim 0, broadcasting partitions).
pub const PARTITION_VIEW: &str = "E0512";
/// An operand whose partitions start where the hardware cannot start
/// (the 0/32/64/96 quadrant rule).
pub const PARTITION_START: &str = "E0513";
/// An enum, operator or activation value that is not valid here.
pub const BAD_ENUM: &str = "E0514";
/// A `memset`/`full` value whose type does not match the dtype.
pub const FILL_VALUE: &str = "E0515";
/// A bad manual placement (`address=`).
pub const ADDRESS: &str = "E0516";
/// A view method's own rule broken (reshape count, squeeze of a non-1 dim).
pub const VIEW: &str = "E0517";
/// An engine that cannot run the operation (`engine=` choice).
pub const ENGINE: &str = "E0518";
/// A legacy construct that nkic does not support in this position.
pub const LEGACY: &str = "E0519";
/// A scalar operand that must be a compile-time number or a `(P, 1)` tensor.
pub const SCALAR_OPERAND: &str = "E0520";
/// An operator (`+`, `*`, `>`, …) applied to tiles in a way NKI does not define.
pub const OPERATOR: &str = "E0521";
/// An argument value outside its allowed range (priority, pattern sizes).
pub const VALUE: &str = "E0522";
/// A DMA mode rule broken (hwdge with a cast, oob_mode without indirection).
pub const DMA_MODE: &str = "E0523";
/// An NKI operation nkic does not support yet (no IR counterpart); an
/// error, or a warning for operations without effect on results
/// (`nl.device_print`).
pub const UNSUPPORTED: &str = "E0524";
/// A cross-core operation (`nisa.core_barrier`, `nisa.sendrecv`) outside
/// an LNC=2 launch (a grid of exactly 2 instances), with `cores` other than
/// `(0, 1)` or a rank other than the other core's, or one the two
/// instances do not both issue.
pub const CORES: &str = "E0525";
/// A tensor (a kernel argument or an HBM allocation) whose size in bytes
/// does not fit the IR's 63-bit byte offsets.
pub const TENSOR_SIZE: &str = "E0526";

/// Every code with a one-line meaning, in order (for docs/diagnostics).
pub const ALL: &[(&str, &str)] = &[
    (INDEX, "index or slice out of bounds"),
    (ARG_TYPE, "wrong kind of argument"),
    (SHAPE, "shapes do not agree"),
    (
        PARTITION_SIZE,
        "partition dim above 128 or missing free dim",
    ),
    (BUFFER, "tensor in a buffer the operation cannot use"),
    (DTYPE, "dtype not accepted"),
    (TARGET, "not available on the target"),
    (FREE_SIZE, "free size above the limit"),
    (PSUM_BANK, "PSUM bank rule broken"),
    (MATMUL_TILE, "matmul tile limit exceeded"),
    (AXIS, "bad axis"),
    (ACCUMULATE, "accumulation rule broken"),
    (PARTITION_VIEW, "illegal view of the partition dim"),
    (PARTITION_START, "partition start breaks the quadrant rule"),
    (BAD_ENUM, "enum or operator value not valid here"),
    (FILL_VALUE, "fill value does not match the dtype"),
    (ADDRESS, "bad manual placement"),
    (VIEW, "view method rule broken"),
    (ENGINE, "engine cannot run the operation"),
    (LEGACY, "legacy construct not supported here"),
    (
        SCALAR_OPERAND,
        "scalar operand must be a number or a (P, 1) tensor",
    ),
    (OPERATOR, "operator not defined on these tiles"),
    (VALUE, "argument value out of range"),
    (DMA_MODE, "DMA mode rule broken"),
    (UNSUPPORTED, "operation not supported by nkic yet"),
    (CORES, "cross-core operation outside an LNC=2 launch"),
    (TENSOR_SIZE, "tensor larger than 2^63 bytes"),
];

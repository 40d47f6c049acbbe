//! `Rule`: the name of each rule the program and launch verifiers check.
//!
//! Every `VerifyError` names the rule it breaks, so callers and tests match
//! on the rule instead of the message text. Each rule has a stable
//! kebab-case name (`Rule::name`) that the verifier fixtures
//! (`crates/nkic-isa/tests/verify/*.nkasm`) write in their expected-error
//! lines; `Rule::ALL` lists every rule, generated from the table below so a
//! test can check that each one has a fixture.

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// A rule of the verifier (see the module doc of `verify`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// Every rule, in table order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The rule's stable kebab-case name.
            pub fn name(self) -> &'static str {
                match self {
                    $( Rule::$variant => $name, )*
                }
            }

            /// The rule called `name`.
            pub fn from_name(name: &str) -> Option<Rule> {
                match name {
                    $( $name => Some(Rule::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

rules! {
    // ------------------------------------------------------------ declarations

    /// An HBM tensor's name is not an identifier.
    TensorName = "tensor-name",
    /// Two HBM tensors have one name.
    TensorDeclaredTwice = "tensor-declared-twice",
    /// An HBM tensor's dtype does not exist on the target.
    TensorDtype = "tensor-dtype",
    /// A kernel argument with data (only internal tensors hold constant
    /// bytes on entry).
    TensorDataArgument = "tensor-data-argument",
    /// An HBM tensor whose data is not exactly its size in bytes.
    TensorDataSize = "tensor-data-size",
    /// A semaphore's name is not an identifier.
    SemaphoreName = "semaphore-name",
    /// Two semaphores have one name.
    SemaphoreDeclaredTwice = "semaphore-declared-twice",
    /// A line-table entry names a file the program does not have.
    LineFile = "line-file",
    /// A queue has two streams.
    QueueTwoStreams = "queue-two-streams",
    /// A DMA queue the target does not have.
    QueueExists = "queue-exists",

    // ------------------------------------------------------------ streams

    /// A label is defined twice in one stream.
    LabelDefinedTwice = "label-defined-twice",
    /// The queue's engine may not execute the instruction (`Op::engines`).
    QueueEngine = "queue-engine",
    /// The target is older than the instruction (`Op::since`).
    SinceTarget = "since-target",
    /// An instruction names a line-table entry that does not exist.
    LineEntry = "line-entry",
    /// A wait or signal names a semaphore that is not declared.
    SemaphoreDeclared = "semaphore-declared",
    /// A register at or above the target's `sequencer_registers`.
    Register = "register",
    /// A branch or jump target that is not a label of its stream.
    BranchTarget = "branch-target",

    // ------------------------------------------------------------ access patterns

    /// An operand's dtype does not exist on the target.
    DtypeOnTarget = "dtype-on-target",
    /// More than `MAX_DIMS` free dims.
    MaxDims = "max-dims",
    /// A pattern that covers no partitions.
    NoPartitions = "no-partitions",
    /// A free dim of count 0.
    ZeroCount = "zero-count",
    /// A free dim count above 65535.
    CountLimit = "count-limit",
    /// A DMA operand in PSUM.
    DmaPsum = "dma-psum",
    /// A GpSimd operand in PSUM.
    GpSimdPsum = "gpsimd-psum",
    /// A compute-engine operand in HBM.
    ComputeHbm = "compute-hbm",
    /// A TensorE input outside SBUF.
    TensorReadsSbuf = "tensor-reads-sbuf",
    /// A TensorE result outside PSUM.
    TensorWritesPsum = "tensor-writes-psum",
    /// An on-chip pattern with a partition stride.
    PartitionStride = "partition-stride",
    /// Partitions beyond the 128 of the chip.
    PartitionRange = "partition-range",
    /// A compute-engine operand's partition start breaks isa.md §2.1.
    PartitionStart = "partition-start",
    /// Bytes outside the usable SBUF or the PSUM of each partition.
    OnChipBytes = "on-chip-bytes",
    /// A PSUM offset that is not aligned.
    PsumAlignment = "psum-alignment",
    /// More elements per partition than a Vector/Scalar/GpSimd operand may have.
    FreeSizeLimit = "free-size-limit",
    /// A pattern names an HBM tensor that is not declared.
    TensorExists = "tensor-exists",
    /// An HBM pattern that does not start at partition 0.
    HbmPartitionStart = "hbm-partition-start",
    /// Bytes outside the HBM tensor.
    HbmBytes = "hbm-bytes",

    // ------------------------------------------------------------ operands of one instruction

    /// An operand in a memory the instruction does not accept there.
    OperandMemory = "operand-memory",
    /// An operand's dtype is not one the instruction accepts there.
    OperandDtype = "operand-dtype",
    /// Two operands that must cover the same partitions do not.
    SamePartitions = "same-partitions",
    /// Two operands that must have the same elements per partition do not.
    SameFreeSize = "same-free-size",
    /// Two operands that must have one dtype do not.
    SameDtype = "same-dtype",
    /// Two operands that must start on the same partition do not.
    SameStart = "same-start",
    /// Both inputs of a two-input instruction are in PSUM.
    BothPsum = "both-psum",
    /// An operand has the wrong number of elements per partition.
    FreeSize = "free-size",
    /// An operand covers the wrong number of partitions.
    PartitionCount = "partition-count",
    /// A `(P,1)` vector operand of the wrong shape.
    VectorOperand = "vector-operand",
    /// A `pattern` attribute that does not produce `dst`'s elements.
    PatternSize = "pattern-size",
    /// An attribute value outside its range.
    AttributeValue = "attribute-value",
    /// A feature the target does not have (hardware DGE, double row, …).
    TargetFeature = "target-feature",

    // ------------------------------------------------------------ operators and reductions

    /// An ALU operator the instruction does not accept there.
    OperatorAllowed = "operator-allowed",
    /// A non-binary operator where a binary one is needed.
    BinaryOperator = "binary-operator",
    /// A bitwise operator where an arithmetic one is needed.
    ArithmeticOperator = "arithmetic-operator",
    /// Bitwise operators on non-integer operands.
    IntegerOperands = "integer-operands",
    /// A bitwise and an arithmetic operator in one instruction.
    OperatorKindsMixed = "operator-kinds-mixed",
    /// An operator the queue's engine cannot run in this instruction.
    OperatorEngine = "operator-engine",
    /// An `(op0, op1)` pair `activate2` does not have.
    OperatorPair = "operator-pair",
    /// An operator without the operand it needs.
    OperandNeeded = "operand-needed",
    /// An operand without an operator that uses it.
    OperandUnused = "operand-unused",
    /// `reverse` on a bypassed stage.
    ReverseBypass = "reverse-bypass",
    /// A `reduce_cmd` the instruction does not accept.
    ReduceCmd = "reduce-cmd",
    /// A reduction without `reduce_op`.
    ReduceOpNeeded = "reduce-op-needed",
    /// An initial value missing with `load_reduce` or given without it.
    ReduceInit = "reduce-init",
    /// A `reduce_res` of the wrong shape.
    ReduceRes = "reduce-res",
    /// `tensor_reduce`'s `last_dims` out of range.
    LastDims = "last-dims",

    // ------------------------------------------------------------ per-instruction rules

    /// `accumulate` into a non-float `dst`.
    AccumulateFloat = "accumulate-float",
    /// A DMA's two sides have different element counts.
    DmaElements = "dma-elements",
    /// A DMA cast the DMA engine cannot do.
    DmaCast = "dma-cast",
    /// A gather or scatter row index of the wrong shape.
    IndexShape = "index-shape",
    /// A DMA transpose of a rank it does not have.
    DmaTransposeRank = "dma-transpose-rank",
    /// A transpose whose `dst` is not `src` transposed.
    TransposeShape = "transpose-shape",
    /// A transpose larger than the engine can do.
    TransposeSize = "transpose-size",
    /// A `memset` value of the other kind than `dst`'s dtype.
    MemsetValue = "memset-value",
    /// `rand2` with `min` not below `max`.
    RandRange = "rand-range",
    /// `set_rng_seed` from something other than one 32-bit element.
    RngSeed = "rng-seed",
    /// A register load or store of a pattern that is not one 32-bit element.
    RegisterOperand = "register-operand",
    /// Matmul operands larger than the PE array or the moving limit.
    MatmulSize = "matmul-size",
    /// A matmul `dst` that is not stationary columns × moving columns.
    MatmulDstShape = "matmul-dst-shape",
    /// A matmul result that needs more PSUM banks than the target allows.
    PsumBanks = "psum-banks",
    /// Matmul input dtypes that cannot be mixed.
    InputDtypeMix = "input-dtype-mix",
    /// Double-row operands not laid out `[P, 2, n]`.
    DoubleRowLayout = "double-row-layout",
    /// Double-row mode combined with transpose mode or PE tiling.
    DoubleRowExclusive = "double-row-exclusive",
    /// A PE tile position, size or placement that breaks the tiling rules.
    PeTile = "pe-tile",
    /// An MX scale operand that breaks the quadrant layout.
    MxScaleLayout = "mx-scale-layout",

    // ------------------------------------------------------------ semaphores

    /// A wait on a semaphore nothing signals.
    WaitUnsignalled = "wait-unsignalled",
    /// A static wait that can never be satisfied.
    Deadlock = "deadlock",

    // ------------------------------------------------------------ launches (`verify_launch`)

    /// A launch of no cores or more than the target's `max_lnc`.
    LaunchCores = "launch-cores",
    /// Cores of one launch compiled for different targets.
    LaunchTarget = "launch-target",
    /// `core_barrier` or `sendrecv` in a launch of one core.
    PairedOneCore = "paired-one-core",
    /// Cores that declare different kernel arguments.
    LaunchArguments = "launch-arguments",
    /// Cores that declare different `shared` HBM tensors.
    LaunchShared = "launch-shared",
    /// Cores that give a `shared` HBM tensor different data.
    LaunchSharedData = "launch-shared-data",
    /// A queue whose paired instructions differ between cores.
    LaunchPairing = "launch-pairing",
}

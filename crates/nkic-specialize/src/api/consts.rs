//! Names that are values rather than functions: dtypes, buffers,
//! `nl.tile_size`, the `nisa` enums (`engine`, `reduce_cmd`, `dge_mode`,
//! `oob_mode`, `matmul_perf_mode`, `nc_version`, `dma_engine`), ALU
//! operator and activation constants, and `nki.typing` annotations.
//!
//! ALU operators and activation functions are normally the `nl.*`
//! functions themselves (`op=nl.add` passes the function `nl.add`); the
//! conversion goes by name ([`alu_op_by_name`], [`act_func_by_name`]). A
//! name with no table entry yet (for example `nl.bypass`) is an
//! [`OpValue`] constant.

use std::any::Any;

use nkic_ir::Buffer;
use nkic_isa::{ActFunc, AluOp, DType, Target};

use super::table;
use crate::ctx::Ctx;
use crate::value::{ApiObject, Namespace, Value};

/// A member of a `nisa` enum (`nisa.engine.vector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumValue {
    pub enum_name: &'static str,
    pub member: &'static str,
    pub value: i64,
}

impl ApiObject for EnumValue {
    fn type_name(&self) -> &'static str {
        self.enum_name
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn display(&self) -> String {
        format!("{}.{}", self.enum_name, self.member)
    }
    fn equals(&self, other: &dyn ApiObject) -> Option<bool> {
        other
            .as_any()
            .downcast_ref::<EnumValue>()
            .map(|o| o == self)
    }
}

/// An ALU operator or activation constant without a function entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpValue {
    /// `nl.bypass`.
    pub name: &'static str,
}

crate::value::api_object!(OpValue, "operator", {
    fn display(&self) -> String {
        format!("<operator {}>", self.name)
    }
    fn equals(&self, other: &dyn ApiObject) -> Option<bool> {
        other.as_any().downcast_ref::<OpValue>().map(|o| o == self)
    }
});

/// `nt.tensor[...]` and friends: annotations, accepted and ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypingMarker;

crate::value::api_object!(TypingMarker, "annotation");

/// The `nisa` enums: name, members with values (isa.md §1).
pub const ENUMS: &[(&str, &[(&str, i64)])] = &[
    (
        "engine",
        &[
            ("unknown", 0),
            ("tensor", 1),
            ("scalar", 2),
            ("gpsimd", 3),
            ("dma", 4),
            ("vector", 5),
            ("sync", 6),
        ],
    ),
    (
        "reduce_cmd",
        &[
            ("idle", 0),
            ("reset", 1),
            ("reduce", 2),
            ("reset_reduce", 3),
            ("load_reduce", 4),
        ],
    ),
    (
        "dge_mode",
        &[("unknown", 0), ("swdge", 1), ("hwdge", 2), ("none", 3)],
    ),
    ("oob_mode", &[("error", 0), ("skip", 1)]),
    ("matmul_perf_mode", &[("none", 0), ("double_row", 1)]),
    ("nc_version", &[("gen2", 2), ("gen3", 3), ("gen4", 4)]),
    ("dma_engine", &[("dma", 1), ("gpsimd_dma", 2)]),
];

/// The member names of enum `enum_name`.
pub fn enum_members(enum_name: &str) -> Option<Vec<&'static str>> {
    ENUMS
        .iter()
        .find(|(n, _)| *n == enum_name)
        .map(|(_, ms)| ms.iter().map(|(m, _)| *m).collect())
}

/// The member of `nisa.<enum_name>` numbered `value` (isa.md numbering).
pub fn enum_member_by_value(enum_name: &str, value: i64) -> Option<&'static str> {
    let (_, members) = ENUMS.iter().find(|(n, _)| *n == enum_name)?;
    members.iter().find(|(_, v)| *v == value).map(|(m, _)| *m)
}

/// The NeuronCore generation of `v` when it is a member of
/// `nisa.nc_version`, the one ordered `nisa` enum (`gen2 < gen3 < gen4`;
/// kernels test `nisa.get_nc_version() >= nisa.nc_version.gen3`).
pub fn nc_generation(v: &Value) -> Option<i64> {
    let Value::Ext(e) = v else { return None };
    let e = e.as_any().downcast_ref::<EnumValue>()?;
    (e.enum_name == "nc_version").then_some(e.value)
}

/// The value `nisa.<enum_name>.<member>`.
pub fn enum_value(enum_name: &str, member: &str) -> Option<Value> {
    let (name, members) = ENUMS.iter().find(|(n, _)| *n == enum_name)?;
    let (m, v) = members.iter().find(|(m, _)| *m == member)?;
    Some(Value::Ext(std::rc::Rc::new(EnumValue {
        enum_name: name,
        member: m,
        value: *v,
    })))
}

/// The ALU operator named by an `nl.*` function or constant.
pub fn alu_op_by_name(name: &str) -> Option<AluOp> {
    match name.strip_prefix("nl.")? {
        // The reductions `nl.max`/`nl.min` name the same operators.
        "max" => Some(AluOp::Maximum),
        "min" => Some(AluOp::Minimum),
        other => AluOp::from_name(other),
    }
}

/// The activation function named by an `nl.*` function or constant.
pub fn act_func_by_name(name: &str) -> Option<ActFunc> {
    ActFunc::from_name(name.strip_prefix("nl.")?)
}

/// The interned `nl.<attr>` spelling of an operator or activation name.
fn op_constant(attr: &str) -> Option<&'static str> {
    OP_NAMES
        .iter()
        .copied()
        .find(|full| full.strip_prefix("nl.") == Some(attr))
}

/// `nl.` spellings of every ALU operator and activation function, and
/// the reduction names `nl.max`/`nl.min` used as operators.
const OP_NAMES: &[&str] = &[
    "nl.invert",
    "nl.bitwise_and",
    "nl.bitwise_or",
    "nl.bitwise_xor",
    "nl.left_shift",
    "nl.right_shift",
    "nl.add",
    "nl.subtract",
    "nl.multiply",
    "nl.maximum",
    "nl.minimum",
    "nl.equal",
    "nl.not_equal",
    "nl.greater_equal",
    "nl.greater",
    "nl.less_equal",
    "nl.less",
    "nl.logical_and",
    "nl.logical_or",
    "nl.logical_xor",
    "nl.power",
    "nl.abs_max",
    "nl.abs_min",
    "nl.abs",
    "nl.square",
    "nl.relu",
    "nl.rsqrt",
    "nl.reciprocal",
    "nl.bypass",
    "nl.average",
    "nl.copy",
    "nl.sigmoid",
    "nl.prelu",
    "nl.gelu",
    "nl.gelu_dx",
    "nl.gelu_apprx_tanh",
    "nl.gelu_apprx_sigmoid",
    "nl.gelu_apprx_sigmoid_dx",
    "nl.silu",
    "nl.silu_dx",
    "nl.tanh",
    "nl.softplus",
    "nl.mish",
    "nl.erf",
    "nl.erf_dx",
    "nl.exp",
    "nl.log",
    "nl.sin",
    "nl.arctan",
    "nl.sqrt",
    "nl.sign",
    "nl.max",
    "nl.min",
];

/// `nl.tile_size.<attr>` on `target` (language.md §8).
pub fn tile_size(target: Target, attr: &str) -> Option<i64> {
    let fig = target.figures();
    let usable = i64::from(fig.sbuf_usable_bytes_per_partition);
    Some(match attr {
        "pmax" => 128,
        "psum_fmax" | "psum_bank_fmax" => 512,
        "psum_bank_fmax_bytes" => i64::from(fig.psum_bank_bytes),
        "psum_num_banks" => i64::from(fig.psum_banks),
        "gemm_stationary_fmax" => 128,
        "gemm_moving_fmax" => 512,
        "bn_stats_fmax" => i64::from(fig.bn_stats_fmax),
        "psum_min_align" => i64::from(fig.psum_min_align),
        "sbuf_min_align" => 1,
        "sbuf_fmax_bytes" | "total_available_sbuf_size" => usable,
        "sbuf_fmax" => usable / 4,
        "sbuf_size_bytes" => {
            i64::from(fig.sbuf_partitions) * i64::from(fig.sbuf_bytes_per_partition)
        }
        _ => return None,
    })
}

/// The names of `nl.tile_size`, in documentation order.
pub const TILE_SIZE_NAMES: &[&str] = &[
    "pmax",
    "psum_fmax",
    "psum_bank_fmax",
    "psum_bank_fmax_bytes",
    "psum_num_banks",
    "gemm_stationary_fmax",
    "gemm_moving_fmax",
    "bn_stats_fmax",
    "psum_min_align",
    "sbuf_min_align",
    "sbuf_fmax_bytes",
    "sbuf_fmax",
    "sbuf_size_bytes",
    "total_available_sbuf_size",
];

const SUBS: &[&str] = &[
    "nl.tile_size",
    "nisa.engine",
    "nisa.reduce_cmd",
    "nisa.dge_mode",
    "nisa.oob_mode",
    "nisa.matmul_perf_mode",
    "nisa.nc_version",
    "nisa.dma_engine",
    "ncc.sbuf",
    "ncc.psum",
];

fn sub(name: &str) -> Option<Value> {
    SUBS.iter()
        .find(|s| **s == name)
        .map(|s| Value::Namespace(Namespace::Sub(s)))
}

/// `sub("prefix.attr")` without building the dotted name.
fn sub_in(prefix: &str, attr: &str) -> Option<Value> {
    let name: &'static str = match (prefix, attr) {
        ("nl", "tile_size") => "nl.tile_size",
        ("nisa", "engine") => "nisa.engine",
        ("nisa", "reduce_cmd") => "nisa.reduce_cmd",
        ("nisa", "dge_mode") => "nisa.dge_mode",
        ("nisa", "oob_mode") => "nisa.oob_mode",
        ("nisa", "matmul_perf_mode") => "nisa.matmul_perf_mode",
        ("nisa", "nc_version") => "nisa.nc_version",
        ("nisa", "dma_engine") => "nisa.dma_engine",
        ("ncc", "sbuf") => "ncc.sbuf",
        ("ncc", "psum") => "ncc.psum",
        _ => return None,
    };
    debug_assert!(SUBS.contains(&name));
    Some(Value::Namespace(Namespace::Sub(name)))
}

/// The value of `ns.attr` (the contract's `lookup`).
pub fn lookup(ctx: &Ctx<'_>, ns: Namespace, attr: &str) -> Option<Value> {
    match ns {
        Namespace::Language => {
            if let Some(dt) = DType::ALL.iter().find(|d| d.name() == attr) {
                return Some(Value::DType(ctx.config.held_dtype(*dt)));
            }
            match attr {
                "hbm" => return Some(Value::Buffer(Buffer::PrivateHbm)),
                "tile_size" => return sub("nl.tile_size"),
                "fp32" => return Some(Value::DType(DType::F32)),
                "bfp16" => return Some(Value::DType(ctx.config.held_dtype(DType::BF16))),
                _ => {}
            }
            if let Some(b) = Buffer::from_name(attr) {
                return Some(Value::Buffer(b));
            }
            table::find_in("nl", attr).map(Value::Api).or_else(|| {
                op_constant(attr).map(|name| Value::Ext(std::rc::Rc::new(OpValue { name })))
            })
        }
        Namespace::Isa => {
            if let Some(s) = sub_in("nisa", attr) {
                return Some(s);
            }
            let deprecated = match attr {
                "tensor_engine" => Some("tensor"),
                "vector_engine" => Some("vector"),
                "scalar_engine" => Some("scalar"),
                "gpsimd_engine" => Some("gpsimd"),
                "unknown_engine" => Some("unknown"),
                _ => None,
            };
            if let Some(m) = deprecated {
                return enum_value("engine", m);
            }
            table::find_in("nisa", attr).map(Value::Api)
        }
        Namespace::Typing => match attr {
            "tensor" | "sbuf" | "psum" | "hbm" | "shared_hbm" | "private_hbm" | "scalar" => {
                Some(Value::Ext(std::rc::Rc::new(TypingMarker)))
            }
            _ => None,
        },
        // NumPy operator functions double as ALU operators and activation
        // functions in legacy kernels (`op=np.add`, `op=np.exp`).
        Namespace::Numpy => {
            if let Some(f) = table::find_in("np", attr) {
                return Some(Value::Api(f));
            }
            let attr = if attr == "absolute" { "abs" } else { attr };
            op_constant(attr).map(|name| {
                table::find(name)
                    .map(Value::Api)
                    .unwrap_or_else(|| Value::Ext(std::rc::Rc::new(OpValue { name })))
            })
        }
        Namespace::Sub("nl.tile_size") => tile_size(ctx.target(), attr).map(Value::Int),
        Namespace::Collectives => table::find_in("collectives", attr).map(Value::Api),
        // Legacy direct allocation: `ncc.sbuf.mod_alloc(...)` and friends.
        Namespace::Sub(name) if name.starts_with("ncc.") => {
            table::find_in(name, attr).map(Value::Api)
        }
        Namespace::Compiler => match attr {
            "sbuf" | "psum" => sub_in("ncc", attr),
            _ => table::find_in("ncc", attr).map(Value::Api),
        },
        Namespace::Sub(name) => {
            let enum_name = name.strip_prefix("nisa.")?;
            enum_value(enum_name, attr)
        }
        _ => None,
    }
}

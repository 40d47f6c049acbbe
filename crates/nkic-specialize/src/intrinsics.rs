//! Functions and constants of the compiler namespaces that the evaluator
//! implements itself, because they shape control flow or the launch:
//! the loop iterators, dynamic loops, SPMD queries, `no_reorder`, `nl.ds`,
//! legacy index grids, `nki.jit`, and the small NumPy / `math` subset.
//!
//! Everything else in `nl`/`nisa` belongs to the API layer (`api/`).

use crate::value::{Namespace, Value};

/// A function the evaluator implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `nl.affine_range`, `nl.sequential_range`, `nl.static_range`.
    AffineRange,
    SequentialRange,
    StaticRange,
    /// `nl.dynamic_range`.
    DynamicRange,
    /// `nl.fori_loop(lower, upper, body_fun, step=1)`.
    ForiLoop,
    /// `nl.while_loop(init, body_fun)`.
    WhileLoop,
    ProgramId,
    NumPrograms,
    ProgramNdim,
    /// `nl.no_reorder()`: a context manager.
    NoReorder,
    /// `nl.ds(start, size)`.
    Ds,
    /// `nl.arange(...)`.
    Arange,
    /// `nki.jit` and the other kernel decorators.
    Jit,
}

/// The value of `ns.attr` if the evaluator implements it.
pub fn lookup(ns: Namespace, attr: &str) -> Option<Value> {
    use Intrinsic as I;
    let f = |i| Some(Value::Intrinsic(i));
    match ns {
        Namespace::Nki => match attr {
            "language" => Some(Value::Namespace(Namespace::Language)),
            "isa" => Some(Value::Namespace(Namespace::Isa)),
            "typing" => Some(Value::Namespace(Namespace::Typing)),
            "collectives" => Some(Value::Namespace(Namespace::Collectives)),
            "compiler" => Some(Value::Namespace(Namespace::Compiler)),
            "jit" | "baremetal" | "benchmark" | "profile" | "simulate_kernel" | "trace" => {
                f(I::Jit)
            }
            _ => None,
        },
        Namespace::Neuronxcc => match attr {
            "nki" => Some(Value::Namespace(Namespace::Nki)),
            _ => None,
        },
        Namespace::Language => match attr {
            "affine_range" => f(I::AffineRange),
            "sequential_range" => f(I::SequentialRange),
            "static_range" => f(I::StaticRange),
            "dynamic_range" => f(I::DynamicRange),
            "fori_loop" => f(I::ForiLoop),
            "while_loop" => f(I::WhileLoop),
            "program_id" => f(I::ProgramId),
            "num_programs" => f(I::NumPrograms),
            "program_ndim" => f(I::ProgramNdim),
            "no_reorder" => f(I::NoReorder),
            "ds" => f(I::Ds),
            "arange" => f(I::Arange),
            _ => None,
        },
        _ => None,
    }
}

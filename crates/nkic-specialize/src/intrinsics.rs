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
    /// `nl.mgrid`: subscripted, not called (`nl.mgrid[0:128, 0:512]`).
    Mgrid,
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
            // `nl.range` (used by nki-library) iterates like
            // `sequential_range`: in order, iterations may depend on each
            // other.
            "range" => f(I::SequentialRange),
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
            "mgrid" => f(I::Mgrid),
            _ => None,
        },
        // `nki.compiler.no_reorder()`, the legacy spelling (used as a loop
        // directive, `sequential_range(n, directives=...)`).
        Namespace::Compiler => match attr {
            "no_reorder" => f(I::NoReorder),
            _ => None,
        },
        _ => None,
    }
}

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_isa::Target;

use crate::args::{Arg, CallArgs};
use crate::codes;
use crate::ctx::Ctx;
use crate::value::{DsValue, DynRangeValue, IndexExpr, IntOrReg, RangeKind};

/// The value of `nl.no_reorder()`, used by `with`.
#[derive(Debug)]
pub(crate) struct NoReorderMarker;

crate::value::api_object!(NoReorderMarker, "no_reorder");

impl Ctx<'_> {
    fn int_or_reg(&self, a: &Arg, func: &str) -> Result<IntOrReg, Diagnostic> {
        match &a.value {
            Value::Register(r) => Ok(IntOrReg::Reg(*r)),
            v => v.as_int().map(IntOrReg::Int).ok_or_else(|| {
                self.arg_needs(a, func, "an int or a register", "not an int or register")
            }),
        }
    }

    fn const_int(&self, a: &Arg, func: &str) -> Result<i64, Diagnostic> {
        match &a.value {
            Value::Register(_) => Err(self.error(
                codes::DYNAMIC_LOOP,
                format!("`{func}` needs a compile-time int here, found a register"),
                a.span,
                "a run-time value",
            )),
            _ => self.int_arg(a, func),
        }
    }

    fn positive_step(&self, a: Option<Arg>, func: &str) -> Result<u32, Diagnostic> {
        let Some(a) = a else { return Ok(1) };
        let step = self.const_int(&a, func)?;
        u32::try_from(step).ok().filter(|&s| s > 0).ok_or_else(|| {
            self.error(
                codes::DYNAMIC_LOOP,
                format!("the step of `{func}` must be a positive int, found {step}"),
                a.span,
                "not positive",
            )
        })
    }

    fn axis(&self, a: Option<Arg>, func: &str, limit: usize) -> Result<usize, Diagnostic> {
        let Some(a) = a else { return Ok(0) };
        let i = self.const_int(&a, func)?;
        if i < 0 || (i as usize >= limit && !(limit == 0 && i == 0)) {
            return Err(self.error(
                codes::GRID,
                format!("axis {i} is outside the launch grid of {limit} dims"),
                a.span,
                "bad axis",
            ));
        }
        Ok(i as usize)
    }

    /// Calls intrinsic `i`.
    pub(crate) fn call_intrinsic(
        &mut self,
        i: Intrinsic,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        use Intrinsic as I;
        match i {
            I::AffineRange => self.make_range(RangeKind::AffineRange, args, span),
            I::SequentialRange => self.make_range(RangeKind::SequentialRange, args, span),
            I::StaticRange => self.make_range(RangeKind::StaticRange, args, span),
            I::DynamicRange => {
                let [a, b, c] =
                    args.bind(self, "nl.dynamic_range", ["start", "stop", "step"], 1, span)?;
                let a = a.expect("bound");
                let (start, stop) = match &b {
                    Some(b) => (
                        self.int_or_reg(&a, "nl.dynamic_range")?,
                        self.int_or_reg(b, "nl.dynamic_range")?,
                    ),
                    None => (IntOrReg::Int(0), self.int_or_reg(&a, "nl.dynamic_range")?),
                };
                let step = self.positive_step(c, "nl.dynamic_range")?;
                Ok(Value::DynRange(Rc::new(DynRangeValue {
                    start,
                    stop,
                    step,
                })))
            }
            I::ForiLoop => {
                let [lo, hi, body, step] = args.bind(
                    self,
                    "nl.fori_loop",
                    ["lower", "upper", "body_fun", "step"],
                    3,
                    span,
                )?;
                let lo = self.int_or_reg(&lo.expect("bound"), "nl.fori_loop")?;
                let hi = self.int_or_reg(&hi.expect("bound"), "nl.fori_loop")?;
                let step = self.positive_step(step, "nl.fori_loop")?;
                self.fori_loop(lo, hi, body.expect("bound").value, step, span)
            }
            I::WhileLoop => {
                let [init, body] =
                    args.bind(self, "nl.while_loop", ["init", "body_fun"], 2, span)?;
                let init = self.int_or_reg(&init.expect("bound"), "nl.while_loop")?;
                self.while_loop(init, body.expect("bound").value, span)
            }
            I::ProgramId | I::NumPrograms => {
                let name = if i == I::ProgramId {
                    "nl.program_id"
                } else {
                    "nl.num_programs"
                };
                let key = if i == I::ProgramId { "axis" } else { "axes" };
                let [axis] = args.bind(self, name, [key], 0, span)?;
                let axis = self.axis(axis, name, self.program_ndim())?;
                let v = if i == I::ProgramId {
                    self.program_id(axis)
                } else {
                    self.num_programs(axis)
                };
                Ok(Value::Int(i64::from(v.unwrap_or(0))))
            }
            I::ProgramNdim => {
                args.bind(self, "nl.program_ndim", [], 0, span)?;
                Ok(Value::Int(self.program_ndim() as i64))
            }
            I::NoReorder => {
                args.bind(self, "nl.no_reorder", [], 0, span)?;
                Ok(Value::Ext(Rc::new(NoReorderMarker)))
            }
            I::Ds => {
                let [start, size] = args.bind(self, "nl.ds", ["start", "size"], 2, span)?;
                let start = self.int_or_reg(&start.expect("bound"), "nl.ds")?;
                let size_arg = size.expect("bound");
                let size = self.const_int(&size_arg, "nl.ds")?;
                // `nl.ds(start, 0)` is an empty slice (a degenerate split
                // of work between cores); ops on it do nothing.
                if size < 0 {
                    return Err(self.error(
                        codes::VALUE_ERROR,
                        format!("`nl.ds` size must not be negative, found {size}"),
                        size_arg.span,
                        "negative",
                    ));
                }
                Ok(Value::Ds(Rc::new(DsValue { start, size })))
            }
            I::Arange => {
                let [a, b, c, _dtype] = args.bind(
                    self,
                    "nl.arange",
                    ["start", "stop", "step", "dtype"],
                    1,
                    span,
                )?;
                let a = a.expect("bound");
                let (start, stop) = match &b {
                    Some(b) => (
                        self.const_int(&a, "nl.arange")?,
                        self.const_int(b, "nl.arange")?,
                    ),
                    None => (0, self.const_int(&a, "nl.arange")?),
                };
                let step = match &c {
                    Some(c) => self.const_int(c, "nl.arange")?,
                    None => 1,
                };
                let Some(e) = arange(start, stop, step) else {
                    return Err(self.error(
                        codes::VALUE_ERROR,
                        "`nl.arange` needs a non-empty range with a positive step",
                        span,
                        "empty or bad range",
                    ));
                };
                Ok(Value::Index(Rc::new(e)))
            }
            I::Mgrid => Err(self.error(
                codes::NOT_CALLABLE,
                "`nl.mgrid` is indexed, not called: `nl.mgrid[0:128, 0:512]`",
                span,
                "called here",
            )),
            I::Jit => {
                // `mode=` has no effect in nkic and is accepted, as the
                // public kernels use it (`@nki.jit(mode="simulation")`);
                // `platform_target=` is checked against the target.
                if let Some((_, a)) = args
                    .keywords
                    .iter()
                    .find(|(k, _)| &**k == "platform_target")
                {
                    self.check_platform_target(a)?;
                }
                self.jit_decorator(args)
            }
        }
    }

    /// `@nki.jit(platform_target=...)`: NKI 0.3 removed the parameter,
    /// but public kernels still pass it. A name that is no target is an
    /// error; one that differs from the target nkic compiles for is a
    /// warning (the kernel is compiled for `--target`, or its default).
    fn check_platform_target(&mut self, arg: &Arg) -> Result<(), Diagnostic> {
        let target = self.target();
        let named = match &arg.value {
            Value::Str(name) => Target::from_name(name).ok_or_else(|| format!("\"{name}\"")),
            other => Err(other.type_name()),
        };
        match named {
            Ok(t) if t == target => Ok(()),
            // Another kernel of the file is not compiled by this run.
            Ok(_)
                if self
                    .defining
                    .as_deref()
                    .is_some_and(|d| d != self.builder.kernel().name) =>
            {
                Ok(())
            }
            Ok(t) => {
                let d = Diagnostic::warning(
                    codes::JIT_MISUSE,
                    format!(
                        "`platform_target=\"{t}\"` is ignored: this run compiles for {target}"
                    ),
                )
                .with_primary(self.file, arg.span, format!("not {target}"))
                .with_help(format!(
                    "choose the target with `--target {t}` or a `# nkic: target {t}` line above the kernel (NKI 0.3 removed this parameter)"
                ));
                self.warn(d);
                Ok(())
            }
            Err(found) => Err(self
                .error(
                    codes::JIT_MISUSE,
                    format!("`platform_target=` names no target: expected \"trn2\" or \"trn3\", found {found}"),
                    arg.span,
                    "not a target",
                )
                .with_help("remove it and choose the target with `--target` or a `# nkic: target` line (NKI 0.3 removed this parameter)")),
        }
    }

    /// `nki.jit(f)`: `f` marked as a kernel; `nki.jit(...)` with keywords
    /// only: the decorator itself.
    fn jit_decorator(&self, args: CallArgs) -> Result<Value, Diagnostic> {
        use Intrinsic as I;
        match args.positional.first() {
            Some(Arg {
                value: Value::Function(f),
                ..
            }) => {
                let f = f.clone();
                Ok(Value::Function(Rc::new(crate::value::Function {
                    name: f.name.clone(),
                    body: f.body.clone(),
                    module: f.module,
                    env: f.env.clone(),
                    defaults: f.defaults.clone(),
                    kw_defaults: f.kw_defaults.clone(),
                    param_names: f.param_names.clone(),
                    locals: f.locals.clone(),
                    owner: std::cell::RefCell::new(None),
                    method_kind: f.method_kind,
                    jit: true,
                })))
            }
            // `@nki.jit(...)` with keywords: the decorator itself.
            _ => Ok(Value::Intrinsic(I::Jit)),
        }
    }
}

impl Ctx<'_> {
    /// `nl.mgrid[a:b, c:d, ...]`: one legacy index expression per axis of
    /// an n-dimensional grid (at most 5, the IR's view rank), as an object
    /// with fields `p`, `x`, `y`, `z`, `w` that also unpacks as a tuple (`i_p, i_f = nl.mgrid[...]`).
    pub(crate) fn mgrid(&self, key: &Value, span: Span) -> Result<Value, Diagnostic> {
        let items: Vec<Value> = match key {
            Value::Tuple(t) => t.to_vec(),
            k => vec![k.clone()],
        };
        if items.is_empty() || items.len() > 5 {
            return Err(self
                .error(
                    codes::VALUE_ERROR,
                    format!("`nl.mgrid` takes 1 to 5 slices, found {}", items.len()),
                    span,
                    "here",
                )
                .with_note(
                    "an index grid has at most 5 dims, the rank of an access pattern; nkic does not combine several grid dims into one tensor dim",
                )
                .with_help("loop over some of the dims with `nl.affine_range` so that the grid has at most 5"));
        }
        let n = items.len() as u8;
        let mut fields = Vec::new();
        for (axis, it) in items.iter().enumerate() {
            let Value::Slice(s) = it else {
                return Err(self.type_error(
                    "`nl.mgrid` takes slices such as `0:128`",
                    it,
                    span,
                    "not a slice",
                ));
            };
            let start = if s.lower.is_none() {
                Some(0)
            } else {
                s.lower.as_int()
            };
            let step = if s.step.is_none() {
                Some(1)
            } else {
                s.step.as_int()
            };
            let (Some(start), Some(stop), Some(step)) = (start, s.upper.as_int(), step) else {
                return Err(self.error(
                    codes::TYPE_ERROR,
                    "`nl.mgrid` slices need int bounds and a stop",
                    span,
                    "bad slice",
                ));
            };
            let Some(mut e) = arange(start, stop, step) else {
                return Err(self.error(
                    codes::VALUE_ERROR,
                    "`nl.mgrid` slices must be non-empty with a positive step",
                    span,
                    "empty slice",
                ));
            };
            e.ndim = n;
            e.terms[0].axis = axis as u8;
            let name = ["p", "x", "y", "z", "w"][axis];
            fields.push((Rc::<str>::from(name), Value::Index(Rc::new(e))));
        }
        Ok(Value::Object(Rc::new(crate::value::Object {
            class: self.bases.mgrid.clone(),
            fields: std::cell::RefCell::new(fields),
        })))
    }
}

/// The index expression of `start:stop:step` (`nl.arange`, one axis of
/// `nl.mgrid`), or `None` for an empty range or a step that is not
/// positive.
fn arange(start: i64, stop: i64, step: i64) -> Option<IndexExpr> {
    if step <= 0 || stop <= start {
        return None;
    }
    let size = (stop - start + step - 1) / step;
    Some(IndexExpr::arange(start, size as u64, step))
}

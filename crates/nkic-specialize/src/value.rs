//! Compile-time values: everything a kernel's meta-language can compute.
//!
//! A [`Value`] is cheap to clone: scalars are inline and everything else is
//! behind an `Rc`. Mutable containers (lists, dicts, objects) share their
//! contents between clones, as Python references do.
//!
//! Numbers follow the language spec (language.md §4.1) with these choices:
//! * ints are stored as `i64`; every arithmetic result must lie in
//!   `[-2^31, 2^32)` (32-bit signed, widened to admit unsigned 32-bit bit
//!   masks), otherwise the evaluator reports an overflow;
//! * floats are computed in `f64` as Python does and rounded to `f32` only
//!   where they reach the IR (immediates), so `1 / math.sqrt(d)` gives the
//!   same immediate NumPy code would.
//!
//! Run-time things appear as handles: [`Tensor`] (an `nkic_ir` view plus
//! the NKI shape the user sees), [`RegValue`] (a sequencer register, maybe
//! scaled and offset), [`DsValue`] (`nl.ds`), and the legacy index grids
//! [`IndexExpr`] / [`IndexPred`].
//!
//! Objects owned by the NKI API layer (`api/`) that need no support from
//! the evaluator live behind [`ApiObject`] in [`Value::Ext`].

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use nkic_ir::{Buffer, Handle, RegHandle, Storage, View};
use nkic_isa::DType;
use nkic_syntax::ast;

use crate::api::ApiFn;
use crate::builtins::Builtin;
use crate::intrinsics::Intrinsic;

/// A compile-time value.
#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Tuple(Rc<[Value]>),
    List(Rc<RefCell<Vec<Value>>>),
    Dict(Rc<RefCell<Dict>>),
    /// A `a:b:c` slice inside a subscript (or from `slice(...)`).
    Slice(Rc<SliceValue>),
    /// `...`.
    Ellipsis,
    /// `range(...)`, `nl.affine_range(...)`, … (unrolled when iterated).
    Range(Rc<RangeValue>),
    /// `nl.dynamic_range(...)`: a hardware loop when iterated.
    DynRange(Rc<DynRangeValue>),
    /// A user function, method or lambda.
    Function(Rc<Function>),
    /// A callable with its receiver: `obj.method`, `tensor.ap`, `list.append`.
    BoundMethod(Rc<BoundMethod>),
    /// A Python builtin function or type (`len`, `int`, `dataclass`, …).
    Builtin(Builtin),
    /// A user class (also `Enum`, `NKIObject` and other bases).
    Class(Rc<Class>),
    /// An instance of a user class, or an enum member.
    Object(Rc<Object>),
    /// An imported user module.
    Module(Rc<ModuleValue>),
    /// A namespace provided by the compiler: `nki`, `nl`, `nisa`, `math`, …
    Namespace(Namespace),
    /// An NKI API function (owned by the `api` module).
    Api(ApiFn),
    /// A function the evaluator implements itself (loop iterators, SPMD
    /// queries, `no_reorder`, …).
    Intrinsic(Intrinsic),
    DType(DType),
    Buffer(Buffer),
    Tensor(Rc<Tensor>),
    Register(RegValue),
    Ds(Rc<DsValue>),
    /// A legacy affine index expression (`nl.arange(128)[:, None] * 2 + 1`).
    Index(Rc<IndexExpr>),
    /// A legacy mask predicate (`(i_p < n) & (i_f < m)`).
    IndexPred(Rc<IndexPred>),
    /// An object of the API layer that the evaluator treats as opaque.
    Ext(Rc<dyn ApiObject>),
    /// `super()` inside a method: attribute lookups start after `class`.
    Super(Rc<SuperValue>),
}

/// The value of `super()`.
#[derive(Clone, Debug)]
pub struct SuperValue {
    /// The class whose method called `super()`.
    pub class: Rc<Class>,
    /// The instance (or class, in a classmethod).
    pub receiver: Value,
}

/// An object owned by the API layer (`api/`): instruction handles, enum
/// namespaces, constants, … The evaluator only prints and compares them and
/// sends attribute accesses, calls and subscripts to the API layer.
pub trait ApiObject: fmt::Debug {
    /// The type name used in messages (`NkiInstruction`, `engine`).
    fn type_name(&self) -> &'static str;
    /// For downcasting in the API layer.
    fn as_any(&self) -> &dyn Any;
    /// The text `str()` and `print` show.
    fn display(&self) -> String {
        format!("<{}>", self.type_name())
    }
    /// Python `==`; by default identity (see [`Value::py_eq`]).
    fn equals(&self, _other: &dyn ApiObject) -> Option<bool> {
        None
    }
    /// Calling the object (`obj(args)`), for API values that are also
    /// functions (an operator constant usable as `nl.square(x)` and as
    /// `op=nl.square`). `None`: not callable.
    fn call(
        &self,
        _ctx: &mut crate::ctx::Ctx<'_>,
        _args: crate::args::CallArgs,
        _span: nkic_diag::Span,
    ) -> Option<Result<Value, nkic_diag::Diagnostic>> {
        None
    }
}

/// Implements [`ApiObject`] for a type with a fixed type name: `as_any`
/// is the value itself, and the other methods keep their defaults unless
/// written in the braces (`display`, `equals`, `call`).
macro_rules! api_object {
    ($ty:ty, $name:literal) => {
        $crate::value::api_object!($ty, $name, {});
    };
    ($ty:ty, $name:literal, { $($method:tt)* }) => {
        impl $crate::value::ApiObject for $ty {
            fn type_name(&self) -> &'static str {
                $name
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
            $($method)*
        }
    };
}
pub(crate) use api_object;

/// An insertion-ordered dict. Keys are hashable compile-time values
/// (str, int, bool, None, dtypes, enum members and tuples of those); the
/// spec only requires string keys. Entries keep insertion order; an index
/// from a hash consistent with [`Value::key_eq`] ([`key_hash`]) makes
/// lookups and inserts constant-time, so a dict filled in a loop costs time
/// linear in its size. Mutate it only through its methods (they keep the
/// index).
#[derive(Clone, Debug, Default)]
pub struct Dict {
    pub entries: Vec<(Value, Value)>,
    /// Positions in `entries` by key hash.
    index: HashMap<u64, Vec<usize>>,
}

impl Dict {
    fn position(&self, key: &Value) -> Option<usize> {
        self.index
            .get(&key_hash(key))?
            .iter()
            .copied()
            .find(|&i| self.entries[i].0.key_eq(key))
    }

    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    pub fn insert(&mut self, key: Value, value: Value) {
        match self.position(&key) {
            Some(i) => self.entries[i].1 = value,
            None => {
                self.index
                    .entry(key_hash(&key))
                    .or_default()
                    .push(self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    pub fn remove(&mut self, key: &Value) -> Option<Value> {
        let pos = self.position(key)?;
        let (_, value) = self.entries.remove(pos);
        self.reindex();
        Some(value)
    }

    /// Removes and returns the last inserted entry (`popitem`).
    pub fn pop_last(&mut self) -> Option<(Value, Value)> {
        let last = self.entries.pop()?;
        let bucket = self.index.entry(key_hash(&last.0)).or_default();
        bucket.retain(|&i| i != self.entries.len());
        Some(last)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    fn reindex(&mut self) {
        self.index.clear();
        for (i, (k, _)) in self.entries.iter().enumerate() {
            self.index.entry(key_hash(k)).or_default().push(i);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A hash of a dict key that agrees with [`Value::key_eq`]: numbers that
/// compare equal (`1`, `1.0`, `True`) hash alike, tuples hash their items,
/// and keys compared by identity or by other rules share one bucket (they
/// are rare and compared one by one).
fn key_hash(key: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    fn feed(v: &Value, h: &mut std::collections::hash_map::DefaultHasher, depth: u32) {
        if let Some(f) = v.as_float() {
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                (1u8, f as i64).hash(h);
            } else {
                (2u8, f.to_bits()).hash(h);
            }
            return;
        }
        match v {
            Value::None => 0u8.hash(h),
            Value::Str(s) => (4u8, &**s).hash(h),
            Value::Tuple(items) if depth < 8 => {
                (5u8, items.len()).hash(h);
                for it in items.iter() {
                    feed(it, h, depth + 1);
                }
            }
            _ => 6u8.hash(h),
        }
    }
    feed(key, &mut h, 0);
    h.finish()
}

/// `lower:upper:step` with absent parts as `None`.
#[derive(Clone, Debug)]
pub struct SliceValue {
    pub lower: Value,
    pub upper: Value,
    pub step: Value,
}

/// Which iterator made a compile-time range; recorded in the IR's static
/// loop kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    Range,
    AffineRange,
    SequentialRange,
    StaticRange,
}

impl RangeKind {
    /// The Python spelling.
    pub fn name(self) -> &'static str {
        match self {
            RangeKind::Range => "range",
            RangeKind::AffineRange => "affine_range",
            RangeKind::SequentialRange => "sequential_range",
            RangeKind::StaticRange => "static_range",
        }
    }
}

/// A compile-time range.
#[derive(Clone, Debug)]
pub struct RangeValue {
    pub kind: RangeKind,
    pub start: i64,
    pub stop: i64,
    /// Never 0.
    pub step: i64,
    /// `directives=no_reorder()`: the loop runs as one `no_reorder` block.
    pub no_reorder: bool,
}

impl RangeValue {
    /// The number of elements.
    pub fn len(&self) -> i64 {
        if self.step > 0 {
            if self.stop > self.start {
                (self.stop - self.start + self.step - 1) / self.step
            } else {
                0
            }
        } else if self.start > self.stop {
            (self.start - self.stop + (-self.step) - 1) / (-self.step)
        } else {
            0
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` (no bounds check).
    pub fn at(&self, i: i64) -> i64 {
        self.start + i * self.step
    }
}

/// A bound of a dynamic loop: a compile-time int or a register.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IntOrReg {
    Int(i64),
    Reg(RegValue),
}

/// `nl.dynamic_range(start, stop, step)`.
#[derive(Clone, Debug)]
pub struct DynRangeValue {
    pub start: IntOrReg,
    pub stop: IntOrReg,
    pub step: u32,
}

/// How a function value was written.
#[derive(Clone, Debug)]
pub enum FunctionBody {
    Def(Rc<ast::FunctionDef>),
    Lambda(Rc<LambdaDef>),
}

/// A `lambda params: body` expression, shared by every closure made from it.
#[derive(Clone, Debug)]
pub struct LambdaDef {
    pub params: ast::Params,
    pub body: ast::Expr,
    pub span: nkic_diag::Span,
}

/// A user function or lambda with its environment.
#[derive(Debug)]
pub struct Function {
    pub name: Rc<str>,
    pub body: FunctionBody,
    /// The module whose globals the function sees.
    pub module: ModuleId,
    /// The scope of the enclosing function, for closures.
    pub env: Option<Rc<Scope>>,
    /// Defaults of the positional parameters (`posonly` then `args`),
    /// aligned with them; `None` where there is no default.
    pub defaults: Vec<Option<Value>>,
    /// Defaults of the keyword-only parameters, aligned with them.
    pub kw_defaults: Vec<Option<Value>>,
    /// The interned names of the positional then keyword-only parameters
    /// (`Ctx::param_names`), so binding arguments compares and allocates
    /// no strings.
    pub param_names: Rc<[Rc<str>]>,
    /// How many variables the last call bound: the next call's scope is
    /// made that large at once.
    pub locals: std::cell::Cell<usize>,
    /// Set for methods: the class the `def` appeared in (for `super()`).
    pub owner: RefCell<Option<std::rc::Weak<Class>>>,
    /// `@staticmethod`, `@classmethod` or `@property`.
    pub method_kind: MethodKind,
    /// Decorated with `@nki.jit` (calling it from a kernel is an error).
    pub jit: bool,
}

/// How a function found on a class binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    Plain,
    Static,
    ClassMethod,
    Property,
}

impl Function {
    /// The parameters of the function.
    pub fn params(&self) -> &ast::Params {
        match &self.body {
            FunctionBody::Def(d) => &d.params,
            FunctionBody::Lambda(l) => &l.params,
        }
    }
}

/// A callable with its receiver, passed as the first argument.
#[derive(Clone, Debug)]
pub struct BoundMethod {
    pub receiver: Value,
    pub func: Value,
}

/// What a class is, which decides how it is instantiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    /// An ordinary class (`NKIObject`, `object` or user bases).
    Plain,
    /// `class E(Enum)`: members are the instances.
    Enum,
    /// `class E(IntEnum)`: members also compare equal to their ints.
    IntEnum,
}

/// A field of a dataclass-style class, in declaration order.
#[derive(Clone, Debug)]
pub struct FieldDef {
    pub name: Rc<str>,
    pub default: Option<Value>,
    /// `field(default_factory=f)`: called per instance.
    pub default_factory: Option<Value>,
}

/// A class.
#[derive(Debug)]
pub struct Class {
    pub name: Rc<str>,
    pub bases: Vec<Rc<Class>>,
    pub kind: ClassKind,
    /// Class attributes and methods, in definition order.
    pub attrs: RefCell<Vec<(Rc<str>, Value)>>,
    /// Annotated fields (`x: int = 0`) of this class and its bases.
    pub fields: RefCell<Vec<FieldDef>>,
    /// Enum members in definition order (`Enum` classes only).
    pub members: RefCell<Vec<Rc<Object>>>,
    /// True for the compiler-provided bases (`NKIObject`, `object`, `Enum`).
    pub builtin: bool,
    /// True for a `@dataclass` class: its instances compare equal field
    /// by field; other classes' instances by identity (unless `__eq__`).
    pub dataclass: bool,
}

impl Class {
    /// Looks `name` up on the class and its bases (depth first, left to
    /// right, which equals Python's MRO for the single-inheritance classes
    /// kernels use).
    pub fn lookup(&self, name: &str) -> Option<Value> {
        if let Some((_, v)) = self.attrs.borrow().iter().find(|(k, _)| &**k == name) {
            return Some(v.clone());
        }
        self.bases.iter().find_map(|b| b.lookup(name))
    }

    /// True when `self` is `other` or derives from it.
    pub fn is_subclass_of(&self, other: &Class) -> bool {
        std::ptr::eq(self, other) || self.bases.iter().any(|b| b.is_subclass_of(other))
    }

    pub fn set_attr(&self, name: Rc<str>, value: Value) {
        let mut attrs = self.attrs.borrow_mut();
        match attrs.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => attrs.push((name, value)),
        }
    }
}

/// An instance: its class and its fields in assignment order.
#[derive(Debug)]
pub struct Object {
    pub class: Rc<Class>,
    pub fields: RefCell<Vec<(Rc<str>, Value)>>,
}

impl Object {
    pub fn get(&self, name: &str) -> Option<Value> {
        self.fields
            .borrow()
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| v.clone())
    }

    pub fn set(&self, name: Rc<str>, value: Value) {
        let key = name.clone();
        self.set_with(&name, value, || key);
    }

    /// Sets field `name`; `key` makes the name of a new field (an interned
    /// name, so that assigning an existing field allocates nothing).
    pub fn set_with(&self, name: &str, value: Value, key: impl FnOnce() -> Rc<str>) {
        let mut fields = self.fields.borrow_mut();
        match fields.iter_mut().find(|(k, _)| &**k == name) {
            Some(slot) => slot.1 = value,
            None => fields.push((key(), value)),
        }
    }
}

/// The index of a loaded module in the evaluator's module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub u32);

/// An imported user module, seen as a value.
#[derive(Debug)]
pub struct ModuleValue {
    pub id: ModuleId,
    pub name: Rc<str>,
    pub globals: Rc<Scope>,
}

/// An interner: one shared `Rc<str>` per name (see `Ctx::intern`), found
/// by its [`name_hash`], which a parsed name carries: interning the name
/// of a fresh local at every call hashes nothing.
#[derive(Debug, Default)]
pub struct Names(hashbrown::HashTable<(u64, Rc<str>)>);

impl Names {
    /// The shared `Rc<str>` spelling `name`.
    pub fn intern(&mut self, name: &str) -> Rc<str> {
        self.intern_hashed(name_hash(name), name)
    }

    /// [`Names::intern`] with `hash` the name's [`name_hash`].
    pub fn intern_hashed(&mut self, hash: u64, name: &str) -> Rc<str> {
        let entry = self
            .0
            .entry(hash, |(h, k)| *h == hash && **k == *name, |(h, _)| *h);
        entry
            .or_insert_with(|| (hash, Rc::from(name)))
            .get()
            .1
            .clone()
    }
}

pub use nkic_syntax::ast::name_hash;

/// The variables of one scope. A name is found by its [`name_hash`],
/// computed once however many scopes it is looked up in (a global or a
/// builtin is looked up in every enclosing scope first).
#[derive(Debug, Default)]
pub struct Vars(hashbrown::HashTable<(u64, Rc<str>, Value)>);

impl Vars {
    pub fn with_capacity(vars: usize) -> Vars {
        Vars(hashbrown::HashTable::with_capacity(vars))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.get_hashed(name_hash(name), name)
    }

    /// Whether an entry is the variable `name` of hash `hash`.
    fn is(hash: u64, name: &str) -> impl Fn(&(u64, Rc<str>, Value)) -> bool {
        move |(h, k, _)| *h == hash && **k == *name
    }

    /// [`Vars::get`] with `hash` the name's [`name_hash`].
    pub fn get_hashed(&self, hash: u64, name: &str) -> Option<&Value> {
        self.0.find(hash, Vars::is(hash, name)).map(|(_, _, v)| v)
    }

    /// Binds `name` to `value`; `key` makes the key of a new variable.
    pub fn set_with(&mut self, name: &str, value: Value, key: impl FnOnce() -> Rc<str>) {
        self.set_hashed(name_hash(name), name, value, key);
    }

    /// [`Vars::set_with`] with `hash` the name's [`name_hash`].
    pub fn set_hashed(
        &mut self,
        hash: u64,
        name: &str,
        value: Value,
        key: impl FnOnce() -> Rc<str>,
    ) {
        match self.0.entry(hash, Vars::is(hash, name), |(h, _, _)| *h) {
            hashbrown::hash_table::Entry::Occupied(mut slot) => slot.get_mut().2 = value,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert((hash, key(), value));
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let hash = name_hash(name);
        match self.0.find_entry(hash, Vars::is(hash, name)) {
            Ok(slot) => Some(slot.remove().0.2),
            Err(_) => None,
        }
    }

    /// The names, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &Rc<str>> {
        self.0.iter().map(|(_, k, _)| k)
    }

    /// The variables, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Rc<str>, &Value)> {
        self.0.iter().map(|(_, k, v)| (k, v))
    }
}

/// A variable scope: a function call's locals, a comprehension's, or a
/// module's globals. `parent` is the lexically enclosing function scope.
#[derive(Debug, Default)]
pub struct Scope {
    pub vars: RefCell<Vars>,
    pub parent: Option<Rc<Scope>>,
}

impl Scope {
    pub fn new(parent: Option<Rc<Scope>>) -> Rc<Scope> {
        Scope::with_capacity(parent, 0)
    }

    /// A scope with room for `vars` variables before it grows.
    pub fn with_capacity(parent: Option<Rc<Scope>>, vars: usize) -> Rc<Scope> {
        Rc::new(Scope {
            vars: RefCell::new(Vars::with_capacity(vars)),
            parent,
        })
    }

    /// Looks `name` up here and in the enclosing scopes.
    pub fn lookup(&self, name: &str) -> Option<Value> {
        self.lookup_hashed(name_hash(name), name)
    }

    /// [`Scope::lookup`] with `hash` the name's [`name_hash`].
    pub fn lookup_hashed(&self, hash: u64, name: &str) -> Option<Value> {
        let mut cur = Some(self);
        while let Some(s) = cur {
            if let Some(v) = s.vars.borrow().get_hashed(hash, name) {
                return Some(v.clone());
            }
            cur = s.parent.as_deref();
        }
        None
    }

    /// Binds `name` in this scope.
    pub fn set(&self, name: &str, value: Value) {
        self.set_hashed(name_hash(name), name, value, || Rc::from(name));
    }

    /// Binds `name`, whose [`name_hash`] is `hash` (a parsed name
    /// carries it), in this scope; `key` makes the key of a new variable
    /// (an interned name, so that binding allocates nothing).
    pub fn set_hashed(&self, hash: u64, name: &str, value: Value, key: impl FnOnce() -> Rc<str>) {
        self.vars.borrow_mut().set_hashed(hash, name, value, key);
    }

    pub fn get_local(&self, name: &str) -> Option<Value> {
        self.vars.borrow().get(name).cloned()
    }

    /// [`Scope::get_local`] with `hash` the name's [`name_hash`].
    pub fn get_local_hashed(&self, hash: u64, name: &str) -> Option<Value> {
        self.vars.borrow().get_hashed(hash, name).cloned()
    }

    pub fn remove(&self, name: &str) -> Option<Value> {
        self.vars.borrow_mut().remove(name)
    }
}

/// A namespace provided by the compiler rather than by a source file.
///
/// `Sub` names a nested namespace of the API layer (`nl.tile_size`,
/// `nisa.engine`, …) by its dotted spelling; the API layer answers
/// attribute lookups on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// `nki` (also `neuronxcc.nki`).
    Nki,
    /// `nki.language` (`nl`).
    Language,
    /// `nki.isa` (`nisa`).
    Isa,
    /// `nki.typing` (`nt`).
    Typing,
    /// `nki.collectives`.
    Collectives,
    /// `nki.compiler`.
    Compiler,
    /// `neuronxcc`.
    Neuronxcc,
    /// `numpy` (`np`): dtypes and a few functions.
    Numpy,
    /// Python's `math`.
    Math,
    /// Python's `dataclasses`.
    Dataclasses,
    /// Python's `enum`.
    Enum,
    /// Python's `typing` (annotations only).
    PyTyping,
    /// Python's `functools`.
    Functools,
    /// Python's `operator`.
    Operator,
    /// Python's `itertools`.
    Itertools,
    /// Python's `os`: an empty, read-only environment (deterministic
    /// compiles), so host-side logging setup in kernel libraries evaluates.
    Os,
    /// Python's `sys`: `sys.stdout` / `sys.stderr` for `print(file=...)`.
    Sys,
    /// A nested API namespace, by dotted name (`"nl.tile_size"`).
    Sub(&'static str),
}

impl Namespace {
    /// The dotted module name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Namespace::Nki => "nki",
            Namespace::Language => "nki.language",
            Namespace::Isa => "nki.isa",
            Namespace::Typing => "nki.typing",
            Namespace::Collectives => "nki.collectives",
            Namespace::Compiler => "nki.compiler",
            Namespace::Neuronxcc => "neuronxcc",
            Namespace::Numpy => "numpy",
            Namespace::Math => "math",
            Namespace::Dataclasses => "dataclasses",
            Namespace::Enum => "enum",
            Namespace::PyTyping => "typing",
            Namespace::Functools => "functools",
            Namespace::Operator => "operator",
            Namespace::Itertools => "itertools",
            Namespace::Os => "os",
            Namespace::Sys => "sys",
            Namespace::Sub(name) => name,
        }
    }
}

/// A tensor as the kernel sees it: a view of a storage plus the NKI shape.
///
/// `shape` is the user-visible shape (`t.shape`); `view` addresses the same
/// elements in IR terms. They normally agree dim for dim; the API layer
/// keeps them consistent.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub view: View,
    pub shape: Vec<u64>,
    /// The storage's buffer (cached; the builder has it too).
    pub buffer: Buffer,
}

impl Tensor {
    pub fn storage(&self) -> Handle<Storage> {
        self.view.storage
    }

    pub fn dtype(&self) -> DType {
        self.view.dtype
    }
}

/// A run-time 32-bit value in a sequencer register, as `reg · scale +
/// offset` so that `i * 128 + 64` on a dynamic loop variable needs no
/// run-time arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegValue {
    pub reg: RegHandle,
    pub scale: i64,
    pub offset: i64,
}

impl RegValue {
    /// The plain register.
    pub fn plain(reg: RegHandle) -> RegValue {
        RegValue {
            reg,
            scale: 1,
            offset: 0,
        }
    }

    pub fn is_plain(&self) -> bool {
        self.scale == 1 && self.offset == 0
    }
}

/// `nl.ds(start, size)`: `start:start + size` where `start` may be a register.
#[derive(Clone, Debug)]
pub struct DsValue {
    pub start: IntOrReg,
    pub size: i64,
}

/// One variable of a legacy index grid: `size` consecutive indices placed on
/// axis `axis` of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexTerm {
    pub axis: u8,
    pub size: u64,
    pub coef: i64,
}

/// A legacy affine index expression over an `ndim`-dimensional grid:
/// `constant + Σ coef · iota(axis, size)`, broadcast NumPy-style.
///
/// `nl.arange(n)` is `ndim = 1` with one term on axis 0; `[:, None]` keeps
/// the term on axis 0 of a 2-D grid and `[None, :]` moves it to axis 1.
/// Arithmetic with ints and other expressions keeps the form affine;
/// expressions of different rank align on their last axes, as NumPy
/// broadcasting does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexExpr {
    pub ndim: u8,
    pub constant: i64,
    pub terms: Vec<IndexTerm>,
}

impl IndexExpr {
    /// `nl.arange(start, stop, step)` as a 1-D expression.
    pub fn arange(start: i64, size: u64, step: i64) -> IndexExpr {
        IndexExpr {
            ndim: 1,
            constant: start,
            terms: vec![IndexTerm {
                axis: 0,
                size,
                coef: step,
            }],
        }
    }

    /// The grid shape: per axis, the size of its variable (1 when the
    /// expression does not vary along it).
    pub fn shape(&self) -> Vec<u64> {
        let mut shape = vec![1u64; usize::from(self.ndim)];
        for t in &self.terms {
            if let Some(s) = shape.get_mut(usize::from(t.axis)) {
                *s = (*s).max(t.size);
            }
        }
        shape
    }

    /// The same expression seen as an `ndim`-dimensional grid (axes move
    /// right by `ndim - self.ndim`, NumPy alignment). `ndim` must not be
    /// smaller than `self.ndim`.
    pub fn aligned(&self, ndim: u8) -> IndexExpr {
        let shift = ndim.saturating_sub(self.ndim);
        IndexExpr {
            ndim: ndim.max(self.ndim),
            constant: self.constant,
            terms: self
                .terms
                .iter()
                .map(|t| IndexTerm {
                    axis: t.axis + shift,
                    ..*t
                })
                .collect(),
        }
    }

    /// The smallest and largest value the expression takes.
    pub fn bounds(&self) -> (i64, i64) {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for t in &self.terms {
            let span = t.coef.saturating_mul(t.size.saturating_sub(1) as i64);
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        (lo, hi)
    }
}

/// A comparison of a legacy index expression with 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// A legacy mask: the conjunction of `expr op 0` over the grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexPred {
    pub clauses: Vec<(IndexExpr, PredOp)>,
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }

    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::from(items))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }

    pub fn tensor(t: Tensor) -> Value {
        Value::Tensor(Rc::new(t))
    }

    /// The Python type name for messages (`int`, `list`, `tensor`, …).
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "NoneType".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::List(_) => "list".into(),
            Value::Dict(_) => "dict".into(),
            Value::Slice(_) => "slice".into(),
            Value::Ellipsis => "ellipsis".into(),
            Value::Range(r) => r.kind.name().into(),
            Value::DynRange(_) => "dynamic_range".into(),
            Value::Function(_) => "function".into(),
            Value::BoundMethod(_) => "method".into(),
            Value::Builtin(b) => {
                if b.is_type() {
                    "type".into()
                } else {
                    "builtin_function".into()
                }
            }
            Value::Class(_) => "type".into(),
            Value::Object(o) => o.class.name.to_string(),
            Value::Module(_) | Value::Namespace(_) => "module".into(),
            Value::Api(_) | Value::Intrinsic(_) => "function".into(),
            Value::DType(_) => "dtype".into(),
            Value::Buffer(_) => "buffer".into(),
            Value::Tensor(_) => "tensor".into(),
            Value::Register(_) => "register".into(),
            Value::Ds(_) => "ds".into(),
            Value::Index(_) => "index expression".into(),
            Value::IndexPred(_) => "index predicate".into(),
            Value::Ext(e) => e.type_name().into(),
            Value::Super(_) => "super".into(),
        }
    }

    /// The Python `int` of a value that is an int or a bool.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            Value::Bool(b) => Some(i64::from(b)),
            Value::Object(ref o) if o.class.kind == ClassKind::IntEnum => {
                o.get("value").and_then(|v| v.as_int())
            }
            _ => None,
        }
    }

    /// The float of an int, bool or float.
    pub fn as_float(&self) -> Option<f64> {
        match *self {
            Value::Float(f) => Some(f),
            _ => self.as_int().map(|i| i as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_tensor(&self) -> Option<&Rc<Tensor>> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }

    /// True for values whose identity is their content, so that `is`
    /// compares them by value (`None`, bools, small ints, strings, dtypes).
    fn is_value_like(&self) -> bool {
        matches!(
            self,
            Value::None
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Str(_)
                | Value::DType(_)
                | Value::Buffer(_)
                | Value::Ellipsis
                | Value::Builtin(_)
                | Value::Namespace(_)
                | Value::Api(_)
                | Value::Intrinsic(_)
        )
    }

    /// Python `is`: identity for shared values, equality for value-like ones.
    pub fn is_same(&self, other: &Value) -> bool {
        if self.is_value_like() || other.is_value_like() {
            return std::mem::discriminant(self) == std::mem::discriminant(other)
                && self.py_eq(other) == Some(true);
        }
        match (self, other) {
            // Equal constant tuples are one object in CPython (a code
            // object's constants are merged), so `(1, 2) is (1, 2)`.
            (Value::Tuple(a), Value::Tuple(b)) => {
                Rc::ptr_eq(a, b)
                    || (is_constant(self) && is_constant(other) && self.py_eq(other) == Some(true))
            }
            (Value::List(a), Value::List(b)) => Rc::ptr_eq(a, b),
            (Value::Dict(a), Value::Dict(b)) => Rc::ptr_eq(a, b),
            (Value::Function(a), Value::Function(b)) => Rc::ptr_eq(a, b),
            (Value::Class(a), Value::Class(b)) => Rc::ptr_eq(a, b),
            (Value::Object(a), Value::Object(b)) => Rc::ptr_eq(a, b),
            (Value::Module(a), Value::Module(b)) => Rc::ptr_eq(a, b),
            (Value::Tensor(a), Value::Tensor(b)) => Rc::ptr_eq(a, b),
            (Value::Ext(a), Value::Ext(b)) => Rc::ptr_eq(a, b),
            (Value::Register(a), Value::Register(b)) => a == b,
            _ => false,
        }
    }

    /// Python `==` for values that need no user code (`__eq__` methods are
    /// the evaluator's). `None` when the comparison is not defined at
    /// compile time (tensors, registers: those are run-time values).
    pub fn py_eq(&self, other: &Value) -> Option<bool> {
        self.py_eq_at(other, 0)
    }

    /// `py_eq` at nesting `depth`; containers nested deeper than 64 (only
    /// self-referential ones in practice) compare as undefined.
    fn py_eq_at(&self, other: &Value, depth: u32) -> Option<bool> {
        use Value as V;
        if depth > 64 {
            return None;
        }
        let d = depth + 1;
        Some(match (self, other) {
            (V::None, V::None) | (V::Ellipsis, V::Ellipsis) => true,
            (V::Str(a), V::Str(b)) => a == b,
            (V::Float(_), _) | (_, V::Float(_))
                if self.as_float().is_some() && other.as_float().is_some() =>
            {
                self.as_float() == other.as_float()
            }
            (V::Bool(_) | V::Int(_), V::Bool(_) | V::Int(_)) => self.as_int() == other.as_int(),
            (V::Tuple(a), V::Tuple(b)) => seq_eq(a, b, d)?,
            (V::List(a), V::List(b)) => {
                if Rc::ptr_eq(a, b) {
                    return Some(true);
                }
                seq_eq(&a.borrow(), &b.borrow(), d)?
            }
            (V::Dict(a), V::Dict(b)) => {
                let (a, b) = (a.borrow(), b.borrow());
                if a.len() != b.len() {
                    return Some(false);
                }
                for (k, v) in &a.entries {
                    match b.get(k) {
                        Some(w) if v.py_eq_at(w, d)? => {}
                        _ => return Some(false),
                    }
                }
                true
            }
            (V::DType(a), V::DType(b)) => a == b,
            (V::Buffer(a), V::Buffer(b)) => a == b,
            (V::Builtin(a), V::Builtin(b)) => a == b,
            (V::Namespace(a), V::Namespace(b)) => a == b,
            (V::Api(a), V::Api(b)) => a == b,
            (V::Intrinsic(a), V::Intrinsic(b)) => a == b,
            (V::Class(a), V::Class(b)) => Rc::ptr_eq(a, b),
            (V::Function(a), V::Function(b)) => Rc::ptr_eq(a, b),
            (V::Module(a), V::Module(b)) => Rc::ptr_eq(a, b),
            (V::Range(a), V::Range(b)) => {
                a.len() == b.len() && (a.is_empty() || (a.start == b.start && a.step == b.step))
            }
            (V::Object(a), V::Object(b)) => object_eq(a, b, d)?,
            // An IntEnum member equals its int.
            (V::Object(o), x) | (x, V::Object(o)) if o.class.kind == ClassKind::IntEnum => {
                match (o.get("value"), x.as_float()) {
                    (Some(v), Some(_)) => v.py_eq_at(x, d)?,
                    _ => false,
                }
            }
            (V::Ext(a), V::Ext(b)) => {
                if Rc::ptr_eq(a, b) {
                    true
                } else {
                    a.equals(b.as_ref()).unwrap_or(false)
                }
            }
            (V::Tensor(_) | V::Register(_) | V::Index(_), _)
            | (_, V::Tensor(_) | V::Register(_) | V::Index(_)) => return None,
            _ => false,
        })
    }

    /// Equality of dict keys: like `==`, but never undefined.
    pub fn key_eq(&self, other: &Value) -> bool {
        self.py_eq(other).unwrap_or(false)
    }

    /// True for values usable as dict keys.
    pub fn is_hashable(&self) -> bool {
        match self {
            Value::None
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Str(_)
            | Value::DType(_)
            | Value::Buffer(_)
            | Value::Builtin(_)
            | Value::Class(_)
            | Value::Function(_)
            | Value::Api(_)
            | Value::Ext(_) => true,
            Value::Object(o) => o.class.kind != ClassKind::Plain || o.class.builtin,
            Value::Tuple(items) => items.iter().all(Value::is_hashable),
            _ => false,
        }
    }
}

fn seq_eq(a: &[Value], b: &[Value], depth: u32) -> Option<bool> {
    if a.len() != b.len() {
        return Some(false);
    }
    for (x, y) in a.iter().zip(b) {
        if !x.py_eq_at(y, depth)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Structural equality of objects (language.md §4.1): same class and equal
/// fields. Enum members are equal only to themselves.
/// True for values a Python code object can hold as one constant:
/// `None`, bools, numbers, strings and tuples of those.
fn is_constant(v: &Value) -> bool {
    match v {
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => true,
        Value::Tuple(items) => items.iter().all(is_constant),
        _ => false,
    }
}

fn object_eq(a: &Rc<Object>, b: &Rc<Object>, depth: u32) -> Option<bool> {
    if Rc::ptr_eq(a, b) {
        return Some(true);
    }
    if !Rc::ptr_eq(&a.class, &b.class) || a.class.kind != ClassKind::Plain || !a.class.dataclass {
        return Some(false);
    }
    let (fa, fb) = (a.fields.borrow(), b.fields.borrow());
    if fa.len() != fb.len() {
        return Some(false);
    }
    for (k, v) in fa.iter() {
        match fb.iter().find(|(k2, _)| k2 == k) {
            Some((_, w)) if v.py_eq_at(w, depth)? => {}
            _ => return Some(false),
        }
    }
    Some(true)
}

impl fmt::Display for PredOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PredOp::Lt => "<",
            PredOp::Le => "<=",
            PredOp::Gt => ">",
            PredOp::Ge => ">=",
            PredOp::Eq => "==",
            PredOp::Ne => "!=",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scope's variables: set, overwrite, find (with the hash a name
    /// carries or one computed here), remove, list; names of every length
    /// (a parsed name keeps short ones inline) and with shared prefixes.
    #[test]
    fn vars_find_what_was_set_by_the_hash_names_carry() {
        let names: Vec<String> = (0..200)
            .map(|i| format!("{}{i}", "x".repeat(i % 30)))
            .collect();
        let mut vars = Vars::with_capacity(4);
        for (i, n) in names.iter().enumerate() {
            vars.set_with(n, Value::Int(i as i64), || Rc::from(n.as_str()));
        }
        vars.set_with(&names[7], Value::Int(-7), || panic!("bound already"));
        assert_eq!(vars.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            let parsed = nkic_syntax::ast::Name::new(n);
            assert_eq!(parsed.key_hash(), name_hash(n));
            let want = if i == 7 { -7 } else { i as i64 };
            let got = vars
                .get_hashed(parsed.key_hash(), n)
                .and_then(Value::as_int);
            assert_eq!(got, Some(want), "{n}");
            assert_eq!(vars.get(n).and_then(Value::as_int), Some(want));
        }
        assert!(vars.get("x").is_none() && vars.get("").is_none());
        assert_eq!(vars.remove(&names[3]).and_then(|v| v.as_int()), Some(3));
        assert!(vars.remove(&names[3]).is_none() && vars.get(&names[3]).is_none());
        let mut keys: Vec<&str> = vars.keys().map(|k| &**k).collect();
        keys.sort_unstable();
        let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
        want.retain(|&n| n != names[3]);
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(vars.iter().count(), names.len() - 1);
    }
}

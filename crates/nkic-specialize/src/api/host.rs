//! Host-side NumPy at compile time, and the constants a kernel embeds.
//!
//! Kernel libraries build small constant arrays in plain Python while the
//! kernel is traced (a permutation matrix, a table of indices), save them
//! to a temporary `.npy` file and embed the file with
//! `nl.shared_constant(path)`. nkic runs that code in the specializer:
//!
//! * [`HostArray`] is a NumPy array of the host: a shape, a host dtype and
//!   its elements as `f64` (every value of the dtypes it holds is exact in
//!   `f64`, 64-bit integers up to 2⁵³). It is mutable and shared like a
//!   NumPy array: `a[i] = 1` writes the array every name of it sees.
//!   `np.zeros`, `np.ones`, `np.full`, `np.eye`, `np.identity`,
//!   `np.arange`, `np.array`, `np.kron`, `np.tile` and
//!   `scipy.linalg.circulant` make one; `.astype`, `.reshape`, `.copy`,
//!   `.tolist`, `.shape`, `.dtype`, `.ndim`, `.size` and `.T` read it;
//!   indexing takes one integer per dimension. Every array is charged to
//!   the value budget (8 bytes an element, `budget.rs`).
//! * Files are virtual: `tempfile.NamedTemporaryFile` names a file of the
//!   specialization (`/tmp/nkic-host-<n><suffix>`), `np.save` stores a
//!   copy of an array under a name, and `np.load`, `os.path.exists`,
//!   `os.remove` and `nl.shared_constant` see only those files. Nothing is
//!   written to or read from the machine's disk: the specializer does no
//!   IO (architecture.md, invariant 6), and a compile is the same on every
//!   machine. A path the kernel did not save is an error (E0524), never a
//!   guess.
//! * `nl.shared_constant` allocates an HBM tensor (a copy per program
//!   instance, so per core: it is only read) whose bytes are the
//!   array's, encoded in the tensor's dtype (`nkic_ir::Storage::data`),
//!   which the program carries as a data section (`.data` in `.nkasm`).
//!
//! Choices where NumPy is not the model: values are rounded to a narrow
//! float dtype through `f32` (`float64 → bfloat16` or `float16` rounds
//! twice); an operation of two dtypes gives the common one, else `float64`
//! when either is a float and `int64` otherwise; elements read back are
//! Python numbers (a float32 element is a Python float); an array prints
//! its elements up to 1000 of them and lists, else only its shape; arrays
//! have at most 64 dims whose product (zero dims counted as one) fits the
//! address space, as NumPy's. The machine has neither `float64` nor
//! `int64`, so `nl.shared_constant` embeds a `float64` array as `float32`
//! and an `int64` one as `int32` when every value fits (else E0505),
//! unless `dtype=` says otherwise.

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::{DType, numerics};

use crate::api::codes;
use crate::api::table::{ApiDef, Bound, Kind, NO_ENGINE, OUT_DTYPE, Param, opt, req};
use crate::args::Arg;
use crate::builtins::Builtin;
use crate::codes as eval_codes;
use crate::ctx::Ctx;
use crate::value::{BoundMethod, Namespace, Value};

/// The dtype of a host array: the machine's dtypes, and NumPy's 64-bit
/// defaults, which only the host has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostDType {
    /// `float64`, NumPy's default float.
    F64,
    /// `int64`, NumPy's default integer.
    I64,
    /// A dtype the machine has too.
    Of(DType),
}

impl HostDType {
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            HostDType::F64 => "float64",
            HostDType::I64 => "int64",
            HostDType::Of(DType::Bool) => "bool",
            HostDType::Of(d) => d.name(),
        }
    }

    /// The host dtype NumPy's name `name` names: `float64` (or `double`),
    /// `int64`, or a machine dtype of one lane.
    pub fn from_name(name: &str) -> Option<HostDType> {
        match name {
            "float64" | "double" => Some(HostDType::F64),
            "int64" => Some(HostDType::I64),
            _ => match name.parse::<DType>() {
                Ok(d) if numerics::lanes(d) == 1 => Some(HostDType::Of(d)),
                _ => None,
            },
        }
    }

    fn is_float(self) -> bool {
        match self {
            HostDType::F64 => true,
            HostDType::I64 => false,
            HostDType::Of(d) => d.is_float(),
        }
    }

    /// `x` as an element of this dtype, as NumPy's `astype` converts it:
    /// floats round (through `f32` to the narrow ones), integers truncate
    /// toward zero and wrap to their width, booleans are `x != 0`.
    fn convert(self, x: f64) -> f64 {
        match self {
            HostDType::F64 => x,
            HostDType::I64 => wrap_int(x, 64, true),
            HostDType::Of(DType::Bool) => f64::from(u8::from(x != 0.0)),
            HostDType::Of(DType::F32) => f64::from(x as f32),
            HostDType::Of(d) if d.is_float() => f64::from(numerics::quantize(d, x as f32)),
            HostDType::Of(d) => wrap_int(x, d.size() * 8, d.is_signed_int()),
        }
    }

    /// The dtype of an operation of `self` and `other` (module doc).
    fn promote(self, other: HostDType) -> HostDType {
        if self == other {
            self
        } else if self.is_float() || other.is_float() {
            HostDType::F64
        } else {
            HostDType::I64
        }
    }

    /// A Python number of this dtype.
    fn scalar(self, x: f64) -> Value {
        match self {
            HostDType::Of(DType::Bool) => Value::Bool(x != 0.0),
            d if d.is_float() => Value::Float(x),
            _ => Value::Int(x as i64),
        }
    }
}

/// `x` truncated toward zero and wrapped to a `bits`-bit integer.
fn wrap_int(x: f64, bits: u32, signed: bool) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    let t = x.trunc();
    if bits >= 64 {
        return t;
    }
    let modulus = (1u64 << bits) as f64;
    let v = t.rem_euclid(modulus);
    if signed && v >= modulus / 2.0 {
        v - modulus
    } else {
        v
    }
}

/// The bytes of the value budget one host element is charged: its f64
/// (`HostArray::data`), whatever its NumPy dtype.
pub(crate) const ELEMENT_BYTES: u64 = std::mem::size_of::<f64>() as u64;

/// A NumPy array of the host (module doc).
#[derive(Debug)]
pub struct HostArray {
    pub shape: Vec<usize>,
    pub dtype: HostDType,
    /// The elements in row-major order, each exact in its dtype.
    pub data: RefCell<Vec<f64>>,
}

crate::value::api_object!(HostArray, "ndarray", {
    fn display(&self) -> String {
        // NumPy summarizes arrays of more than 1000 elements; nkic then
        // prints the shape only, which also bounds the text.
        if listed(&self.shape).saturating_add(self.numel()) > 1000 {
            return format!(
                "array(..., shape={}, dtype={})",
                shape_repr(&self.shape),
                self.dtype.name()
            );
        }
        let data = self.data.borrow();
        let mut text = String::new();
        nested_text(&self.shape, &data, self.dtype, &mut text);
        format!("array({text}, dtype={})", self.dtype.name())
    }
});

/// How many lists the nested-list form of an array of `shape` has
/// (saturating).
fn listed(shape: &[usize]) -> usize {
    let mut rows = 1usize;
    let mut total = 0usize;
    for &d in shape {
        total = total.saturating_add(rows);
        rows = rows.saturating_mul(d);
    }
    total
}

/// NumPy's nested-list text of `data` with `shape`.
fn nested_text(shape: &[usize], data: &[f64], dtype: HostDType, out: &mut String) {
    let Some((&n, rest)) = shape.split_first() else {
        let x = data.first().copied().unwrap_or(0.0);
        out.push_str(&crate::format::repr(&dtype.scalar(x)));
        return;
    };
    let inner: usize = rest.iter().product();
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        nested_text(rest, &data[i * inner..(i + 1) * inner], dtype, out);
    }
    out.push(']');
}

impl HostArray {
    fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The row-major bytes of the elements in `dtype`.
    fn bytes(&self, dtype: DType) -> Vec<u8> {
        let data = self.data.borrow();
        let mut out = Vec::with_capacity(data.len() * dtype.size() as usize);
        if dtype.is_float() {
            let xs: Vec<f32> = data.iter().map(|&x| x as f32).collect();
            numerics::encode(dtype, &xs, &mut out);
        } else {
            let size = dtype.size() as usize;
            for &x in data.iter() {
                let v = HostDType::Of(dtype).convert(x) as i64;
                out.extend_from_slice(&v.to_le_bytes()[..size]);
            }
        }
        out
    }

    /// The position of the element at a full integer index, or the error
    /// for any other index.
    fn offset(&self, ctx: &Ctx<'_>, key: &Value, span: Span) -> Result<usize, Diagnostic> {
        let items: Vec<Value> = match key {
            Value::Tuple(t) => t.to_vec(),
            other => vec![other.clone()],
        };
        let ints: Option<Vec<i64>> = items.iter().map(Value::as_int).collect();
        let Some(ints) = ints.filter(|i| i.len() == self.shape.len()) else {
            return Err(ctx
                .error(
                    codes::UNSUPPORTED,
                    format!(
                        "a host array of shape {} is indexed with {}",
                        shape_repr(&self.shape),
                        crate::format::repr(key)
                    ),
                    span,
                    "not one integer per dimension",
                )
                .with_note(
                    "nkic's host NumPy arrays take one integer per dimension (no slices or partial indices)",
                ));
        };
        let mut offset = 0usize;
        for (&i, &n) in ints.iter().zip(&self.shape) {
            let j = if i < 0 { i + n as i64 } else { i };
            if j < 0 || j >= n as i64 {
                return Err(ctx.error(
                    eval_codes::INDEX_ERROR,
                    format!("index {i} is out of bounds for an axis of size {n}"),
                    span,
                    "out of bounds",
                ));
            }
            offset = offset * n + j as usize;
        }
        Ok(offset)
    }
}

/// The most dims a host array has (NumPy's limit).
pub const MAX_DIMS: usize = 64;

/// The element count of `shape` when it is an array NumPy could make: at
/// most [`MAX_DIMS`] dims whose product, zero dims counted as 1, fits
/// (so every product of some of its dims does too).
fn size_of(shape: &[usize]) -> Option<usize> {
    if shape.len() > MAX_DIMS {
        return None;
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)))?;
    Some(shape.iter().product())
}

/// The dim-by-dim products of two shapes of one rank (`kron`, `tile`), or
/// the error when one does not fit.
fn dims_times(
    ctx: &Ctx<'_>,
    a: &[usize],
    b: &[usize],
    span: Span,
) -> Result<Vec<usize>, Diagnostic> {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.checked_mul(*y))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| too_big(ctx, &[usize::MAX], span))
}

/// The error for a shape [`size_of`] refuses.
fn too_big(ctx: &Ctx<'_>, shape: &[usize], span: Span) -> Diagnostic {
    let what = if shape.len() > MAX_DIMS {
        format!("a host array of {} dims (at most {MAX_DIMS})", shape.len())
    } else {
        "a host array whose dims multiply past the address space".to_owned()
    };
    ctx.error(
        eval_codes::VALUE_ERROR,
        format!("{what} cannot be made"),
        span,
        "too big",
    )
}

/// A new host array as a value, charged to the value budget before its
/// elements exist (and the rows of its printed or listed forms with them).
fn make(
    ctx: &mut Ctx<'_>,
    shape: Vec<usize>,
    dtype: HostDType,
    fill: impl FnOnce(usize) -> Vec<f64>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let Some(n) = size_of(&shape) else {
        return Err(too_big(ctx, &shape, span));
    };
    ctx.charge_bytes((n as u64).saturating_mul(ELEMENT_BYTES), span)?;
    let data = fill(n);
    debug_assert_eq!(data.len(), n);
    Ok(Value::Ext(Rc::new(HostArray {
        shape,
        dtype,
        data: RefCell::new(data),
    })))
}

/// A new host array of `data` converted to `dtype`.
fn converted(
    ctx: &mut Ctx<'_>,
    shape: Vec<usize>,
    dtype: HostDType,
    data: Vec<f64>,
    span: Span,
) -> Result<Value, Diagnostic> {
    make(
        ctx,
        shape,
        dtype,
        |_| data.into_iter().map(|x| dtype.convert(x)).collect(),
        span,
    )
}

/// `np.float64` and `np.int64`: dtypes of host arrays only.
#[derive(Debug)]
pub struct HostOnlyDType(pub HostDType);

crate::value::api_object!(HostOnlyDType, "dtype", {
    fn display(&self) -> String {
        format!("<class 'numpy.{}'>", self.0.name())
    }
    fn equals(&self, other: &dyn crate::value::ApiObject) -> Option<bool> {
        Some(
            other
                .as_any()
                .downcast_ref::<HostOnlyDType>()
                .is_some_and(|o| o.0 == self.0),
        )
    }
});

/// A file of `tempfile.NamedTemporaryFile` (module doc).
#[derive(Debug)]
pub struct TempFile {
    pub name: Rc<str>,
    /// Removed when its `with` block ends (Python's `delete=True`).
    pub delete: bool,
}

crate::value::api_object!(TempFile, "_TemporaryFileWrapper");

fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The host array `v` is, if it is one.
pub fn as_array(v: &Value) -> Option<&HostArray> {
    match v {
        Value::Ext(e) => e.as_any().downcast_ref::<HostArray>(),
        _ => None,
    }
}

/// The temporary file `v` is, if it is one.
pub fn as_temp_file(v: &Value) -> Option<&TempFile> {
    match v {
        Value::Ext(e) => e.as_any().downcast_ref::<TempFile>(),
        _ => None,
    }
}

/// The host module a dotted import path names (`scipy.linalg`,
/// `tempfile`, `os.path`), if nkic provides it.
pub fn module(path: &str) -> Option<Namespace> {
    Some(Namespace::Sub(match path {
        "scipy" => "scipy",
        "scipy.linalg" => "scipy.linalg",
        "tempfile" => "tempfile",
        "os.path" => "os.path",
        _ => return None,
    }))
}

/// `ns.attr` in a host namespace: NumPy's 64-bit dtypes, `os.path`,
/// `scipy.linalg` and the functions of this file's table.
pub fn lookup(ns: Namespace, attr: &str) -> Option<Value> {
    let prefix = match ns {
        Namespace::Numpy => {
            return match HostDType::from_name(attr) {
                Some(d @ (HostDType::F64 | HostDType::I64)) => {
                    Some(Value::Ext(Rc::new(HostOnlyDType(d))))
                }
                _ => None,
            };
        }
        Namespace::Os if attr == "path" => {
            return Some(Value::Namespace(Namespace::Sub("os.path")));
        }
        Namespace::Os => "os",
        Namespace::Sub("scipy") if attr == "linalg" => {
            return Some(Value::Namespace(Namespace::Sub("scipy.linalg")));
        }
        Namespace::Sub(name @ ("scipy.linalg" | "tempfile" | "os.path")) => name,
        _ => return None,
    };
    crate::api::table::find_in(prefix, attr).map(Value::Api)
}

/// `a.attr` of a host array `value`.
pub fn attribute(
    ctx: &mut Ctx<'_>,
    value: &Value,
    a: &HostArray,
    attr: &str,
    span: Span,
) -> Option<Result<Value, Diagnostic>> {
    let ints = |xs: &[usize]| Value::Tuple(xs.iter().map(|&n| Value::Int(n as i64)).collect());
    Some(Ok(match attr {
        "shape" => ints(&a.shape),
        "ndim" => Value::Int(a.shape.len() as i64),
        "size" => Value::Int(a.numel() as i64),
        "dtype" => dtype_value(a.dtype),
        "T" => {
            // All axes reversed: output element `c` is source element
            // `c` read backwards.
            let data = a.data.borrow();
            let shape: Vec<usize> = a.shape.iter().rev().copied().collect();
            let st = strides(&a.shape);
            return Some(make(
                ctx,
                shape.clone(),
                a.dtype,
                |_| {
                    gather(&shape, |c| {
                        data[c.iter().rev().zip(&st).map(|(i, s)| i * s).sum::<usize>()]
                    })
                },
                span,
            ));
        }
        _ => {
            let f = crate::api::table::find_in("ndarray", attr)?;
            Value::BoundMethod(Rc::new(BoundMethod {
                receiver: value.clone(),
                func: Value::Api(f),
            }))
        }
    }))
}

/// Row-major strides (in elements) of an array of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut st = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        st[k] = st[k + 1] * shape[k + 1];
    }
    st
}

/// The elements of an array of `shape` in row-major order, element `c`
/// (its coordinates) being `value(c)`.
fn gather(shape: &[usize], mut value: impl FnMut(&[usize]) -> f64) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut coord = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(value(&coord));
        for k in (0..shape.len()).rev() {
            coord[k] += 1;
            if coord[k] < shape[k] {
                break;
            }
            coord[k] = 0;
        }
    }
    out
}

fn dtype_value(d: HostDType) -> Value {
    match d {
        HostDType::Of(d) => Value::DType(d),
        other => Value::Ext(Rc::new(HostOnlyDType(other))),
    }
}

/// `a[key]`.
pub fn subscript(
    ctx: &mut Ctx<'_>,
    a: &HostArray,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let at = a.offset(ctx, key, span)?;
    let x = a.data.borrow()[at];
    Ok(a.dtype.scalar(x))
}

/// `a[key] = value`.
pub fn store_subscript(
    ctx: &mut Ctx<'_>,
    a: &HostArray,
    key: &Value,
    value: &Value,
    span: Span,
) -> Result<(), Diagnostic> {
    let at = a.offset(ctx, key, span)?;
    let Some(x) = value.as_float() else {
        return Err(ctx.error(
            eval_codes::TYPE_ERROR,
            crate::format::found("a host array element needs a number", value),
            span,
            "not a number",
        ));
    };
    a.data.borrow_mut()[at] = a.dtype.convert(x);
    Ok(())
}

/// The virtual files a compile starts with: the caller's host files
/// ([`crate::config::HostFile`]) whose dtype and shape are an array's
/// (any other is left out, so reading it is the error of a file the
/// compile does not have).
pub fn preloaded(files: &[crate::config::HostFile]) -> std::collections::BTreeMap<String, Value> {
    let mut out = std::collections::BTreeMap::new();
    for f in files {
        let Some(dtype) = HostDType::from_name(&f.dtype) else {
            continue;
        };
        if size_of(&f.shape) != Some(f.values.len()) {
            continue;
        }
        let array = HostArray {
            shape: f.shape.clone(),
            dtype,
            data: RefCell::new(f.values.iter().map(|&x| dtype.convert(x)).collect()),
        };
        out.insert(f.path.clone(), Value::Ext(Rc::new(array)));
    }
    out
}

/// `bool(a)`, as NumPy: the truth of the one element of a one-element
/// array; any other array's truth is ambiguous (E0210).
pub fn truth(ctx: &Ctx<'_>, a: &HostArray, span: Span) -> Result<bool, Diagnostic> {
    let data = a.data.borrow();
    match data[..] {
        [x] => Ok(x != 0.0),
        _ => Err(ctx
            .error(
                eval_codes::VALUE_ERROR,
                format!(
                    "the truth value of a host array of {} elements is ambiguous",
                    data.len()
                ),
                span,
                "used as a condition",
            )
            .with_help("test one element (`a[i, j]`)")),
    }
}

/// `len(a)`: the length of the first dim (a 0-d array has none: E0202).
pub fn len(ctx: &Ctx<'_>, v: &Value, span: Span) -> Result<usize, Diagnostic> {
    match as_array(v).and_then(|a| a.shape.first().copied()) {
        Some(n) => Ok(n),
        None => Err(ctx.error(
            eval_codes::TYPE_ERROR,
            "`len` of a 0-d host array",
            span,
            "no first dimension",
        )),
    }
}

/// The error for a Python operator on a host array (`a + 1`, `a == b`),
/// which nkic does not evaluate element by element.
pub fn no_operators(ctx: &Ctx<'_>, op: &str, span: Span) -> Diagnostic {
    ctx.error(
        codes::UNSUPPORTED,
        format!("`{op}` on host NumPy arrays is not supported by nkic yet"),
        span,
        "a host array operand",
    )
    .with_note(
        "nkic's host arrays are built by NumPy's constructors, `np.kron`, `np.tile`, `astype`, `reshape` and item writes (docs/language.md)",
    )
}

/// The end of `with NamedTemporaryFile(...) as f:`: the file is removed
/// unless it was made with `delete=False`.
pub fn after_with(ctx: &mut Ctx<'_>, file: &TempFile) {
    if file.delete {
        ctx.host_files.remove(&*file.name);
    }
}

// ---------------------------------------------------------------- arguments

/// A host dtype argument: a machine dtype, `np.float64`/`np.int64`,
/// Python's `float`/`int`/`bool`, or a NumPy dtype name.
fn host_dtype_of(ctx: &Ctx<'_>, a: &Arg) -> Result<HostDType, Diagnostic> {
    match &a.value {
        Value::Builtin(Builtin::Float) => return Ok(HostDType::F64),
        Value::Builtin(Builtin::Int) => return Ok(HostDType::I64),
        Value::Builtin(Builtin::Bool) => return Ok(HostDType::Of(DType::Bool)),
        Value::Ext(e) => {
            if let Some(h) = e.as_any().downcast_ref::<HostOnlyDType>() {
                return Ok(h.0);
            }
        }
        Value::Str(s) => match &**s {
            "float" => return Ok(HostDType::F64),
            "int" => return Ok(HostDType::I64),
            name => {
                if let Some(d @ (HostDType::F64 | HostDType::I64)) = HostDType::from_name(name) {
                    return Ok(d);
                }
            }
        },
        _ => {}
    }
    let d = crate::api::table::dtype_of(ctx, a)?;
    if numerics::lanes(d) != 1 {
        return Err(ctx.error(
            codes::DTYPE,
            format!("host arrays cannot hold the packed dtype {}", d.name()),
            a.span,
            "packed dtype",
        ));
    }
    Ok(HostDType::Of(d))
}

fn opt_dtype(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Option<HostDType>, Diagnostic> {
    b.get(name).map(|a| host_dtype_of(ctx, a)).transpose()
}

/// A host shape: an int or a tuple/list of non-negative ints.
fn host_shape(ctx: &Ctx<'_>, a: &Arg) -> Result<Vec<usize>, Diagnostic> {
    crate::api::table::ints_of(ctx, a)?
        .into_iter()
        .map(|n| {
            usize::try_from(n).map_err(|_| {
                ctx.error(
                    eval_codes::VALUE_ERROR,
                    format!("negative dimensions are not allowed ({n})"),
                    a.span,
                    "negative",
                )
            })
        })
        .collect()
}

/// A count argument (`N` of `np.eye`, `n` of `np.identity`).
fn count(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<usize, Diagnostic> {
    let a = b.needed(ctx, name, &format!("`{}` needs `{name}`", b.def.name))?;
    host_shape(ctx, &a).and_then(|s| match s[..] {
        [n] => Ok(n),
        _ => Err(ctx.error(
            codes::ARG_TYPE,
            format!("`{name}` of `{}` is one int", b.def.name),
            a.span,
            "not an int",
        )),
    })
}

/// The array argument `name`: a host array, or a number or nested
/// list/tuple of numbers made into one, as NumPy's functions accept.
/// Returns its shape, dtype and a copy of its elements.
fn array_arg(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    name: &str,
) -> Result<(Vec<usize>, HostDType, Vec<f64>), Diagnostic> {
    let a = b.needed(ctx, name, &format!("`{}` needs `{name}`", b.def.name))?;
    array_of(ctx, &a)
}

fn array_of(ctx: &mut Ctx<'_>, a: &Arg) -> Result<(Vec<usize>, HostDType, Vec<f64>), Diagnostic> {
    if let Some(h) = as_array(&a.value) {
        let data = h.data.borrow().clone();
        return Ok((h.shape.clone(), h.dtype, data));
    }
    let mut shape = Vec::new();
    let mut data = Vec::new();
    let mut kind = Scalars::Bool;
    nested(ctx, &a.value, 0, &mut shape, &mut data, &mut kind, a.span)?;
    let dtype = match kind {
        _ if data.is_empty() => HostDType::F64,
        Scalars::Bool => HostDType::Of(DType::Bool),
        Scalars::Float => HostDType::F64,
        Scalars::Int => HostDType::I64,
    };
    Ok((shape, dtype, data))
}

/// The widest kind of Python number seen in a nested list.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Scalars {
    Bool,
    Int,
    Float,
}

/// Flattens a nested list/tuple of numbers at `depth`, checking that it
/// is rectangular.
fn nested(
    ctx: &mut Ctx<'_>,
    v: &Value,
    depth: usize,
    shape: &mut Vec<usize>,
    data: &mut Vec<f64>,
    kind: &mut Scalars,
    span: Span,
) -> Result<(), Diagnostic> {
    let items: Option<Vec<Value>> = match v {
        Value::Tuple(t) => Some(t.to_vec()),
        Value::List(l) => Some(l.borrow().clone()),
        _ => None,
    };
    let ragged = |ctx: &Ctx<'_>| {
        ctx.error(
            eval_codes::VALUE_ERROR,
            "the nested sequence is not rectangular (NumPy would make an object array)",
            span,
            "ragged",
        )
    };
    match items {
        Some(_) if depth >= MAX_DIMS => Err(ctx.error(
            eval_codes::VALUE_ERROR,
            format!("the sequence nests more than {MAX_DIMS} deep (NumPy's limit of dims)"),
            span,
            "too deep",
        )),
        Some(items) => {
            if depth == shape.len() {
                if data.is_empty() || depth == 0 {
                    shape.push(items.len());
                } else {
                    return Err(ragged(ctx));
                }
            } else if shape[depth] != items.len() {
                return Err(ragged(ctx));
            }
            ctx.charge_bytes((items.len() as u64).saturating_mul(ELEMENT_BYTES), span)?;
            for item in &items {
                nested(ctx, item, depth + 1, shape, data, kind, span)?;
            }
            Ok(())
        }
        None => {
            if depth != shape.len() {
                return Err(ragged(ctx));
            }
            let (x, k) = match v {
                Value::Bool(b) => (f64::from(u8::from(*b)), Scalars::Bool),
                Value::Float(f) => (*f, Scalars::Float),
                other => match other.as_int() {
                    Some(i) => (i as f64, Scalars::Int),
                    None => {
                        return Err(ctx.error(
                            eval_codes::TYPE_ERROR,
                            crate::format::found("a host array holds numbers", other),
                            span,
                            "not a number",
                        ));
                    }
                },
            };
            *kind = (*kind).max(k);
            data.push(x);
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- the table

const SHAPE: Param = req("shape", Kind::Shape);
const HOST_DTYPE: Param = opt("dtype", Kind::DType, "float");
const SELF: Param = req("self", Kind::Any);

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nl.shared_constant",
        &[req("constant", Kind::Any), OUT_DTYPE],
        NO_ENGINE,
        "An HBM tensor holding a host NumPy array, one copy per program instance (so per core): the array itself, or the path of a `.npy` file the kernel's compile-time code saved with `np.save`. Its bytes are part of the program (a data section).",
        &[
            "`constant` is a host array or the path of a file saved by `np.save` during this compile (nkic reads no file from disk).",
            "The tensor's dtype is `dtype`, else the array's, with `float64` as `float32` and `int64` as `int32` (every value must fit).",
            "The array's shape is a tensor's (1 to 5 positive dims).",
        ],
        shared_constant,
    ),
    ApiDef::new(
        "np.zeros",
        &[SHAPE, HOST_DTYPE],
        NO_ENGINE,
        "A host array of zeros.",
        &[],
        np_zeros,
    ),
    ApiDef::new(
        "np.ones",
        &[SHAPE, HOST_DTYPE],
        NO_ENGINE,
        "A host array of ones.",
        &[],
        np_ones,
    ),
    ApiDef::new(
        "np.full",
        &[SHAPE, req("fill_value", Kind::Float), OUT_DTYPE],
        NO_ENGINE,
        "A host array filled with `fill_value` (of its type's dtype unless `dtype` is given).",
        &[],
        np_full,
    ),
    ApiDef::new(
        "np.eye",
        &[
            req("N", Kind::Int),
            opt("M", Kind::Int, "None"),
            opt("k", Kind::Int, "0"),
            HOST_DTYPE,
        ],
        NO_ENGINE,
        "A host `N × M` array with ones on diagonal `k`.",
        &[],
        np_eye,
    ),
    ApiDef::new(
        "np.identity",
        &[req("n", Kind::Int), HOST_DTYPE],
        NO_ENGINE,
        "The host `n × n` identity array.",
        &[],
        np_identity,
    ),
    ApiDef::new(
        "np.arange",
        &[
            req("start", Kind::Float),
            opt("stop", Kind::Float, "None"),
            opt("step", Kind::Float, "1"),
            OUT_DTYPE,
        ],
        NO_ENGINE,
        "A host array of evenly spaced values in `[start, stop)` (`np.arange(n)` counts from 0).",
        &["`step` is not 0."],
        np_arange,
    ),
    ApiDef::new(
        "np.array",
        &[req("object", Kind::Any), OUT_DTYPE],
        NO_ENGINE,
        "A host array of a nested list or tuple of numbers (or a copy of a host array).",
        &["The nesting is rectangular."],
        np_array,
    ),
    ApiDef::new(
        "np.kron",
        &[req("a", Kind::Any), req("b", Kind::Any)],
        NO_ENGINE,
        "The Kronecker product of two host arrays.",
        &["`a` and `b` have the same number of dims."],
        np_kron,
    ),
    ApiDef::new(
        "np.tile",
        &[req("A", Kind::Any), req("reps", Kind::Ints)],
        NO_ENGINE,
        "A host array of `A` repeated `reps` times along each dim.",
        &[],
        np_tile,
    ),
    ApiDef::new(
        "np.save",
        &[req("file", Kind::Any), req("arr", Kind::Any)],
        NO_ENGINE,
        "Saves a copy of a host array as a virtual file of this compile (a path or a `NamedTemporaryFile`); `.npy` is appended to a path without it, as NumPy does.",
        &["Nothing is written to disk."],
        np_save,
    ),
    ApiDef::new(
        "np.load",
        &[req("file", Kind::Any)],
        NO_ENGINE,
        "A copy of an array saved by `np.save` during this compile.",
        &["The file was saved by this compile (nkic reads no file from disk)."],
        np_load,
    ),
    ApiDef::new(
        "scipy.linalg.circulant",
        &[req("c", Kind::Any)],
        NO_ENGINE,
        "The host circulant matrix whose first column is the 1-D array `c`.",
        &["`c` is one-dimensional."],
        circulant,
    ),
    ApiDef::new(
        "tempfile.NamedTemporaryFile",
        &[
            opt("mode", Kind::Str, "'w+b'"),
            opt("buffering", Kind::Int, "-1"),
            opt("encoding", Kind::Str, "None"),
            opt("newline", Kind::Str, "None"),
            opt("suffix", Kind::Str, "None"),
            opt("prefix", Kind::Str, "None"),
            opt("dir", Kind::Str, "None"),
            opt("delete", Kind::Bool, "True"),
        ],
        NO_ENGINE,
        "A virtual temporary file of this compile, for `np.save` and `nl.shared_constant`; use it as `with NamedTemporaryFile(...) as f:`.",
        &[
            "Nothing is created on disk; the file is named `<dir or /tmp>/<prefix or nkic-host->N<suffix>`.",
        ],
        named_temporary_file,
    ),
    ApiDef::new(
        "os.path.exists",
        &[req("path", Kind::Str)],
        NO_ENGINE,
        "Whether a virtual file saved during this compile exists.",
        &["`path` names a file of this compile (nkic reads no file from disk)."],
        os_path_exists,
    ),
    ApiDef::new(
        "os.remove",
        &[req("path", Kind::Str)],
        NO_ENGINE,
        "Removes a virtual file saved during this compile.",
        &["`path` names a file of this compile (nkic removes no file from disk)."],
        os_remove,
    ),
    ApiDef::new(
        "ndarray.astype",
        &[SELF, req("dtype", Kind::DType)],
        NO_ENGINE,
        "A copy of a host array converted to `dtype` (floats round, integers truncate toward zero and wrap).",
        &[],
        astype,
    ),
    ApiDef::new(
        "ndarray.reshape",
        &[SELF, req("shape", Kind::Ints)],
        NO_ENGINE,
        "A copy of a host array with a new shape and the same elements in row-major order (one dim may be -1).",
        &["The element count is unchanged."],
        reshape,
    ),
    ApiDef::new(
        "ndarray.copy",
        &[SELF],
        NO_ENGINE,
        "A copy of a host array.",
        &[],
        copy,
    ),
    ApiDef::new(
        "ndarray.tolist",
        &[SELF],
        NO_ENGINE,
        "A host array as nested lists of Python numbers.",
        &[],
        tolist,
    ),
];

// ---------------------------------------------------------------- functions

fn filled(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dtype: HostDType,
    x: f64,
    span: Span,
) -> Result<Value, Diagnostic> {
    let shape = host_shape(ctx, &b.needed(ctx, "shape", "a shape is needed")?)?;
    let x = dtype.convert(x);
    make(ctx, shape, dtype, |n| vec![x; n], span)
}

fn np_zeros(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(HostDType::F64);
    filled(ctx, b, dtype, 0.0, span)
}

fn np_ones(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(HostDType::F64);
    filled(ctx, b, dtype, 1.0, span)
}

fn np_full(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let fill = b.needed(ctx, "fill_value", "`np.full` needs `fill_value`")?;
    let (_, own, data) = array_of(ctx, &fill)?;
    let [x] = data[..] else {
        return Err(ctx.error(
            codes::ARG_TYPE,
            "`fill_value` of `np.full` is one number here",
            fill.span,
            "not a number",
        ));
    };
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(own);
    filled(ctx, b, dtype, x, span)
}

fn eye(
    ctx: &mut Ctx<'_>,
    rows: usize,
    cols: usize,
    k: i64,
    dtype: HostDType,
    span: Span,
) -> Result<Value, Diagnostic> {
    make(
        ctx,
        vec![rows, cols],
        dtype,
        |n| {
            (0..n)
                .map(|i| f64::from(u8::from((i % cols) as i64 - (i / cols) as i64 == k)))
                .collect()
        },
        span,
    )
}

fn np_eye(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let rows = count(ctx, b, "N")?;
    let cols = match b.get("M") {
        Some(_) => count(ctx, b, "M")?,
        None => rows,
    };
    let k = b.int_or(ctx, "k", 0)?;
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(HostDType::F64);
    eye(ctx, rows, cols, k, dtype, span)
}

fn np_identity(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let n = count(ctx, b, "n")?;
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(HostDType::F64);
    eye(ctx, n, n, 0, dtype, span)
}

fn np_arange(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let number = |ctx: &Ctx<'_>, name: &str| -> Result<Option<(f64, bool)>, Diagnostic> {
        let Some(a) = b.get(name) else {
            return Ok(None);
        };
        match &a.value {
            Value::Float(f) => Ok(Some((*f, true))),
            v => match v.as_int() {
                Some(i) => Ok(Some((i as f64, false))),
                None => Err(ctx.error(
                    codes::ARG_TYPE,
                    crate::format::found(format_args!("`{name}` of `np.arange` needs a number"), v),
                    a.span,
                    "not a number",
                )),
            },
        }
    };
    let first = number(ctx, "start")?.unwrap_or((0.0, false));
    let (start, stop) = match number(ctx, "stop")? {
        Some(stop) => (first, stop),
        None => ((0.0, false), first),
    };
    let step = number(ctx, "step")?.unwrap_or((1.0, false));
    if step.0 == 0.0 {
        return Err(ctx.error(
            eval_codes::DIV_BY_ZERO,
            "the `step` of `np.arange` is 0",
            b.span_of("step"),
            "zero step",
        ));
    }
    let own = if start.1 || stop.1 || step.1 {
        HostDType::F64
    } else {
        HostDType::I64
    };
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(own);
    let len = ((stop.0 - start.0) / step.0).ceil();
    if len.is_nan() || len.is_infinite() {
        return Err(ctx.error(
            eval_codes::VALUE_ERROR,
            "`np.arange` with an infinite or NaN bound has no length",
            span,
            "no length",
        ));
    }
    let len = len.max(0.0);
    let len = if len > usize::MAX as f64 {
        usize::MAX
    } else {
        len as usize
    };
    make(
        ctx,
        vec![len],
        dtype,
        |n| {
            (0..n)
                .map(|i| dtype.convert(start.0 + i as f64 * step.0))
                .collect()
        },
        span,
    )
}

fn np_array(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (shape, own, data) = array_arg(ctx, b, "object")?;
    let dtype = opt_dtype(ctx, b, "dtype")?.unwrap_or(own);
    converted(ctx, shape, dtype, data, span)
}

fn np_kron(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (sa, da, a) = array_arg(ctx, b, "a")?;
    let (sb, db, bb) = array_arg(ctx, b, "b")?;
    if sa.len() != sb.len() {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "nkic's `np.kron` takes arrays with the same number of dims, not {} and {}",
                shape_repr(&sa),
                shape_repr(&sb)
            ),
            span,
            "different ranks",
        ));
    }
    let shape = dims_times(ctx, &sa, &sb, span)?;
    let dtype = da.promote(db);
    let (ta, tb) = (strides(&sa), strides(&sb));
    make(
        ctx,
        shape.clone(),
        dtype,
        |_| {
            gather(&shape, |c| {
                let ia: usize = (0..c.len()).map(|k| c[k] / sb[k] * ta[k]).sum();
                let ib: usize = (0..c.len()).map(|k| c[k] % sb[k] * tb[k]).sum();
                dtype.convert(a[ia] * bb[ib])
            })
        },
        span,
    )
}

fn np_tile(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (sa, dtype, a) = array_arg(ctx, b, "A")?;
    let reps = host_shape(ctx, &b.needed(ctx, "reps", "`np.tile` needs `reps`")?)?;
    // NumPy pads the shorter of the shape and `reps` with leading ones.
    let rank = sa.len().max(reps.len());
    let pad = |s: &[usize]| {
        let mut p = vec![1usize; rank - s.len()];
        p.extend_from_slice(s);
        p
    };
    let (sa, reps) = (pad(&sa), pad(&reps));
    let shape = dims_times(ctx, &sa, &reps, span)?;
    let st = strides(&sa);
    make(
        ctx,
        shape.clone(),
        dtype,
        |_| {
            gather(&shape, |c| {
                a[(0..c.len()).map(|k| c[k] % sa[k] * st[k]).sum::<usize>()]
            })
        },
        span,
    )
}

fn circulant(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (shape, dtype, c) = array_arg(ctx, b, "c")?;
    let [n] = shape[..] else {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`circulant` takes a 1-D array, not one of shape {}",
                shape_repr(&shape)
            ),
            b.span_of("c"),
            "not 1-D",
        ));
    };
    // Column `j` is `c` rotated down by `j`: `C[i, j] = c[(i - j) mod n]`.
    make(
        ctx,
        vec![n, n],
        dtype,
        |m| (0..m).map(|i| c[(i / n + n - i % n) % n]).collect(),
        span,
    )
}

/// The path a `file` argument names: a temporary file's name, or a
/// string (with `.npy` appended when `npy` and it lacks it, as `np.save`
/// does).
fn path_of(ctx: &Ctx<'_>, b: &Bound, name: &str, npy: bool) -> Result<String, Diagnostic> {
    let a = b.needed(ctx, name, &format!("`{}` needs `{name}`", b.def.name))?;
    if let Some(f) = as_temp_file(&a.value) {
        return Ok(f.name.to_string());
    }
    match a.value.as_str() {
        Some(s) if npy && !s.ends_with(".npy") => Ok(format!("{s}.npy")),
        Some(s) => Ok(s.to_owned()),
        None => Err(ctx.error(
            codes::ARG_TYPE,
            crate::format::found(
                format_args!("`{name}` of `{}` needs a path or a file", b.def.name),
                &a.value,
            ),
            a.span,
            "not a path",
        )),
    }
}

/// The error for a path the compile did not save.
fn no_such_file(ctx: &Ctx<'_>, b: &Bound, name: &str, path: &str) -> Diagnostic {
    ctx.error(
        codes::UNSUPPORTED,
        format!("`{path}` is not a file this compile saved"),
        b.span_of(name),
        "not saved by the kernel's code",
    )
    .with_note(
        "nkic runs host NumPy at compile time with virtual files: only arrays saved by `np.save` during this compile can be read; it reads no file from disk",
    )
}

fn np_save(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let path = path_of(ctx, b, "file", true)?;
    let (shape, dtype, data) = array_arg(ctx, b, "arr")?;
    let saved = make(ctx, shape, dtype, |_| data, span)?;
    ctx.host_files.insert(path, saved);
    Ok(Value::None)
}

fn np_load(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let path = path_of(ctx, b, "file", false)?;
    let Some(a) = ctx.host_files.get(&path).and_then(as_array) else {
        return Err(no_such_file(ctx, b, "file", &path));
    };
    let (shape, dtype, data) = (a.shape.clone(), a.dtype, a.data.borrow().clone());
    make(ctx, shape, dtype, |_| data, span)
}

fn named_temporary_file(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let dir = b.string(ctx, "dir")?.unwrap_or_else(|| "/tmp".to_owned());
    let prefix = b
        .string(ctx, "prefix")?
        .unwrap_or_else(|| "nkic-host-".to_owned());
    let suffix = b.string(ctx, "suffix")?.unwrap_or_default();
    let delete = b.bool_or(ctx, "delete", true)?;
    ctx.host_temp_files += 1;
    let name = format!(
        "{}/{prefix}{}{suffix}",
        dir.trim_end_matches('/'),
        ctx.host_temp_files
    );
    Ok(Value::Ext(Rc::new(TempFile {
        name: Rc::from(name),
        delete,
    })))
}

fn os_path_exists(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let path = path_of(ctx, b, "path", false)?;
    if ctx.host_files.contains_key(&path) {
        return Ok(Value::Bool(true));
    }
    Err(no_such_file(ctx, b, "path", &path))
}

fn os_remove(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let path = path_of(ctx, b, "path", false)?;
    match ctx.host_files.remove(&path) {
        Some(_) => Ok(Value::None),
        None => Err(no_such_file(ctx, b, "path", &path)),
    }
}

fn this(ctx: &mut Ctx<'_>, b: &Bound) -> Result<(Vec<usize>, HostDType, Vec<f64>), Diagnostic> {
    array_arg(ctx, b, "self")
}

fn astype(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (shape, _, data) = this(ctx, b)?;
    let a = b.needed(ctx, "dtype", "`astype` needs a dtype")?;
    let dtype = host_dtype_of(ctx, &a)?;
    converted(ctx, shape, dtype, data, span)
}

fn reshape(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (old, dtype, data) = this(ctx, b)?;
    let a = b.needed(ctx, "shape", "`reshape` needs a shape")?;
    let raw = crate::api::table::ints_of(ctx, &a)?;
    let total = data.len();
    let Some(known) = raw
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize))
    else {
        return Err(too_big(ctx, &[usize::MAX], a.span));
    };
    let infer = raw.iter().filter(|&&d| d == -1).count();
    let mut shape = Vec::with_capacity(raw.len());
    for &d in &raw {
        match d {
            -1 if infer == 1 && known > 0 && total % known == 0 => shape.push(total / known),
            d if d >= 0 => shape.push(d as usize),
            _ => {
                return Err(ctx.error(
                    eval_codes::VALUE_ERROR,
                    format!("bad reshape size {d}"),
                    a.span,
                    "sizes are non-negative (one -1 allowed)",
                ));
            }
        }
    }
    if size_of(&shape).is_none() {
        return Err(too_big(ctx, &shape, a.span));
    }
    if shape.iter().product::<usize>() != total {
        return Err(ctx.error(
            eval_codes::VALUE_ERROR,
            format!(
                "cannot reshape an array of shape {} ({total} elements) into shape {}",
                shape_repr(&old),
                shape_repr(&shape)
            ),
            a.span,
            "element counts differ",
        ));
    }
    make(ctx, shape, dtype, |_| data, span)
}

fn copy(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (shape, dtype, data) = this(ctx, b)?;
    make(ctx, shape, dtype, |_| data, span)
}

fn tolist(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (shape, dtype, data) = this(ctx, b)?;
    let items = listed(&shape).saturating_add(data.len());
    ctx.charge_items(items, span)?;
    fn build(shape: &[usize], data: &[f64], dtype: HostDType) -> Value {
        match shape.split_first() {
            None => dtype.scalar(data.first().copied().unwrap_or(0.0)),
            Some((&n, rest)) => {
                let inner: usize = rest.iter().product();
                let items = (0..n)
                    .map(|i| build(rest, &data[i * inner..(i + 1) * inner], dtype))
                    .collect();
                Value::List(Rc::new(RefCell::new(items)))
            }
        }
    }
    Ok(build(&shape, &data, dtype))
}

fn shared_constant(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let arg = b.needed(ctx, "constant", "`nl.shared_constant` needs `constant`")?;
    let saved;
    let array = match as_array(&arg.value) {
        Some(a) => a,
        None if arg.value.as_str().is_some() || as_temp_file(&arg.value).is_some() => {
            let path = path_of(ctx, b, "constant", false)?;
            saved = ctx.host_files.get(&path).cloned();
            match saved.as_ref().and_then(as_array) {
                Some(a) => a,
                None => return Err(no_such_file(ctx, b, "constant", &path)),
            }
        }
        None => {
            return Err(ctx.error(
                codes::ARG_TYPE,
                crate::format::found(
                    "`nl.shared_constant` needs a host NumPy array or the path of one saved with `np.save`",
                    &arg.value,
                ),
                arg.span,
                "not an array",
            ));
        }
    };
    // The tensor's dtype: `dtype=`, else the array's; NumPy's default
    // float64 becomes float32 and int64 int32 (when every value fits), as
    // the machine has neither.
    let given = b.get("dtype").map(|a| host_dtype_of(ctx, a)).transpose()?;
    let fits_i32 = || {
        let data = array.data.borrow();
        data.iter()
            .all(|&x| f64::from(i32::MIN) <= x && x <= f64::from(i32::MAX))
    };
    let dtype = match (given, array.dtype) {
        (Some(HostDType::Of(d)), _) | (None, HostDType::Of(d)) => d,
        (None, HostDType::F64) => DType::F32,
        (None, HostDType::I64) if fits_i32() => DType::I32,
        (Some(other), _) | (None, other) => {
            let message = if given.is_none() && other == HostDType::I64 {
                "an int64 array with values outside int32 cannot be a kernel tensor".to_owned()
            } else {
                format!("a kernel tensor cannot be {}", other.name())
            };
            return Err(ctx
                .error(
                    codes::DTYPE,
                    message,
                    b.span_of(if given.is_some() { "dtype" } else { "constant" }),
                    format!("{} here", other.name()),
                )
                .with_help(
                    "convert it on the host (`.astype(np.int32)`, `.astype(np.float32)`) or give a machine dtype as `dtype=`",
                ));
        }
    };
    // The rules of every tensor's shape (`nl.ndarray`'s).
    let dims = array.shape.iter().map(|&n| Value::Int(n as i64)).collect();
    let shape = crate::api::table::shape_of(ctx, &Arg::new(Value::Tuple(dims), arg.span))?;
    let bytes = array.bytes(dtype);
    // Each program instance (so each core) holds its own copy: a constant
    // is only read, and instances of an LNC=2 launch may embed different
    // ones (a constant built from `nl.program_id`), which one shared tensor
    // could not hold.
    let name = ctx.fresh_name("shared_constant_");
    let hbm = crate::api::tensor::alloc(ctx, &shape, dtype, Buffer::PrivateHbm, &name, span, span)?;
    ctx.builder()
        .set_data(hbm.storage(), std::sync::Arc::from(bytes));
    Ok(Value::tensor(hbm))
}

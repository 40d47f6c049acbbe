//! Call arguments as the callee receives them: evaluated values with the
//! spans they were written at, and a binder from arguments to a signature.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};

use crate::codes;
use crate::ctx::Ctx;
use crate::value::Value;

/// One evaluated argument and the span of its expression.
#[derive(Clone, Debug)]
pub struct Arg {
    pub value: Value,
    pub span: Span,
}

impl Arg {
    pub fn new(value: Value, span: Span) -> Arg {
        Arg { value, span }
    }
}

/// The arguments of one call: positional in order, then keywords in the
/// order written (`*args` and `**kwargs` at the call site are already
/// expanded).
#[derive(Clone, Debug, Default)]
pub struct CallArgs {
    pub positional: Vec<Arg>,
    pub keywords: Vec<(Rc<str>, Arg)>,
}

impl CallArgs {
    /// Arguments that are all positional.
    pub fn positional(values: Vec<Arg>) -> CallArgs {
        CallArgs {
            positional: values,
            keywords: Vec::new(),
        }
    }

    /// Removes and returns keyword argument `name`.
    pub fn take_keyword(&mut self, name: &str) -> Option<Arg> {
        let pos = self.keywords.iter().position(|(k, _)| &**k == name)?;
        Some(self.keywords.remove(pos).1)
    }

    /// Whether any argument was given.
    pub fn is_empty(&self) -> bool {
        self.positional.is_empty() && self.keywords.is_empty()
    }

    /// Total number of arguments.
    pub fn len(&self) -> usize {
        self.positional.len() + self.keywords.len()
    }

    /// Binds the arguments to the parameters `params` of `func` (its name
    /// for messages, e.g. `nisa.dma_copy`), Python style: positionals fill
    /// parameters in order, keywords by name. The first `required`
    /// parameters must be given. Errors (E0203) name the parameter and
    /// point at the offending argument, or at the call for a missing one.
    pub fn bind<const N: usize>(
        self,
        ctx: &Ctx<'_>,
        func: &str,
        params: [&str; N],
        required: usize,
        call_span: Span,
    ) -> Result<[Option<Arg>; N], Diagnostic> {
        // Only positionals, at least the required ones and no more than
        // the parameters before the first `*` take: what `match_params`
        // gives, without its vectors (most calls of builtins).
        if self.keywords.is_empty()
            && (required..=positional_params(&params, |p| p)).contains(&self.positional.len())
        {
            let mut given = self.positional.into_iter();
            return Ok(std::array::from_fn(|_| given.next()));
        }
        let out = self.match_params(ctx, func, &params, |p| p, |i| i < required, call_span)?;
        Ok(out
            .try_into()
            .unwrap_or_else(|_| unreachable!("one slot per parameter")))
    }

    /// The argument of each of `params` (named by `name`; `None` where not
    /// given), matched Python style: positionals fill the parameters in
    /// order up to the first whose name starts with `*` (those after it
    /// take only keywords), every one takes a keyword by name, and each `i`
    /// with `required(i)` must be given. The one binder of the specializer: [`CallArgs::bind`] and the
    /// API table's binding ([`crate::api::table::bind`]) both use it, so
    /// the rules and messages (E0203) are these for every function.
    pub(crate) fn match_params<P>(
        self,
        ctx: &Ctx<'_>,
        func: &str,
        params: &[P],
        name: impl Fn(&P) -> &str,
        required: impl Fn(usize) -> bool,
        call_span: Span,
    ) -> Result<Vec<Option<Arg>>, Diagnostic> {
        let positional = positional_params(params, &name);
        let mut out: Vec<Option<Arg>> = vec![None; params.len()];
        let n_pos = self.positional.len();
        for (i, arg) in self.positional.into_iter().enumerate() {
            if i >= positional {
                return Err(ctx.error(
                    codes::BAD_ARGUMENTS,
                    format!(
                        "`{func}` takes at most {} positional arguments but {n_pos} were given",
                        params.len()
                    ),
                    arg.span,
                    "unexpected argument",
                ));
            }
            out[i] = Some(arg);
        }
        for (key, arg) in self.keywords {
            let Some(i) = params.iter().position(|p| name(p) == &*key) else {
                let names: Vec<&str> = params.iter().map(&name).collect();
                let mut d = ctx.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{func}` has no parameter named `{key}`"),
                    arg.span,
                    "unknown keyword argument",
                );
                if let Some(close) = closest(&key, &names) {
                    d = d.with_help(format!("did you mean `{close}`?"));
                }
                d = d.with_note(format!("the parameters are: {}", names.join(", ")));
                return Err(d);
            };
            if out[i].is_some() {
                return Err(ctx.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{func}` got multiple values for parameter `{key}`"),
                    arg.span,
                    "already given",
                ));
            }
            out[i] = Some(arg);
        }
        for (i, p) in params.iter().enumerate() {
            if required(i) && out[i].is_none() {
                let p = name(p);
                return Err(ctx.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{func}` is missing required argument `{p}`"),
                    call_span,
                    format!("`{p}` is not given"),
                ));
            }
        }
        Ok(out)
    }
}

/// How many of `params` (named by `name`) take positional arguments: those
/// before the first whose name starts with `*`.
fn positional_params<P>(params: &[P], name: impl Fn(&P) -> &str) -> usize {
    params
        .iter()
        .position(|p| name(p).starts_with('*'))
        .unwrap_or(params.len())
}

/// The parameter closest to `name` by edit distance, when it is close.
pub(crate) fn closest<'p>(name: &str, candidates: &[&'p str]) -> Option<&'p str> {
    candidates
        .iter()
        .map(|c| (edit_distance(name, c), *c))
        .filter(|&(d, c)| d <= 2.max(c.len() / 3))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (names are ASCII in practice).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

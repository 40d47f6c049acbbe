//! Calls: binding arguments to parameters and inlining function bodies.

use nkic_diag::{Diagnostic, Span};

use crate::args::CallArgs;
use crate::ctx::Ctx;
use crate::value::Value;
use crate::{api, codes};

impl Ctx<'_> {
    /// Calls `func` with `args` at `span`.
    pub(crate) fn call(
        &mut self,
        func: &Value,
        mut args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match func {
            Value::Api(f) => api::call(self, *f, args, span),
            Value::BoundMethod(m) => {
                args.positional
                    .insert(0, crate::args::Arg::new(m.receiver.clone(), span));
                let f = m.func.clone();
                self.call(&f, args, span)
            }
            other => Err(self.error(
                codes::NOT_CALLABLE,
                format!("a {} is not callable", other.type_name()),
                span,
                "not callable",
            )),
        }
    }
}

//! The `--emit ir` printer: a stable, line-oriented text form of a kernel.
//!
//! The text lists, in this order: the kernel header, the file table, the
//! registers, the static loops, the storages (all in handle order), the
//! body in program order, and the returned tensors. Every line but the body
//! is one entity; a dynamic loop opens a block with `{` and closes it with
//! a `}` line, and its body is indented by two spaces per level.
//!
//! ```text
//! kernel "tiled_add" target=trn3 program_id=[0] num_programs=[1]
//! file 0 "kernel.py"
//! reg r0 "n"
//! L0 = affine_range trips=2 @ kernel.py:120..180
//! t0 = shared_hbm float32[256, 512] "a" arg=0 input @ kernel.py:40..41
//! t1 = sbuf float32[128, 512] "a_tile" iter=[L0=0] @ kernel.py:130..170
//! op0 = dma_copy dst=t1[0:128, 0:512] src=t0[0:128, 0:512] engine=? iter=[L0=0] @ kernel.py:130..170
//! op1 = reg_alloc dst=r0 init=4 engine=? @ kernel.py:200..220
//! dyn0 = dynamic_range start=0 stop=r0 step=1 iv=r1 @ kernel.py:230..260 {
//!   op2 = tensor_copy dst=t1.ap([[512, 128], [1, 4]], offset=0, scalar_offset=r1*4) src=… engine=vector @ kernel.py:270..290
//! }
//! return t2
//! ```
//!
//! Entity lines:
//! * `kernel "<name>" target=<t> program_id=[…] num_programs=[…]`
//! * `file <id> "<name>"`: a `FileId` and its display name.
//! * `reg r<N> "<name>"`
//! * `L<N> = <kind> trips=<n> [iter=[…]] [@ loc]`: a static loop and the
//!   iteration it ran in.
//! * `t<N> = <buffer> <dtype>[<shape>] "<name>" [arg=<k> <kind>] [addr=[p, byte]] [data=<hex>] [scope=dyn<N>] [iter=[…]] [@ loc]`;
//!   `data` is a constant's bytes on entry in lowercase hexadecimal, two
//!   digits a byte (`nkic_isa::field::write_hex`).
//! * `op<N> = <mnemonic> <field>=<value>… engine=<engine|?> [name="…"] [deps=[op…]] [group=g<N>] [iter=[…]] [via=[loc, …]] [@ loc]`;
//!   field spellings are in the [`field`](crate::field) module.
//! * `dyn<N> = dynamic_range|fori_loop start=<r|int> stop=<r|int> step=<n> iv=r<N> [iter=[…]] [@ loc] {`
//!   or `dyn<N> = while cond=r<N> [iter=[…]] [@ loc] {`
//! * `return t<A>, t<B>` (omitted when nothing is returned).
//!
//! A loop context prints as its whole stack, outermost first:
//! `iter=[L0=1, L3=0]`. A location prints as `<file>:<start>..<end>` in
//! byte offsets (the file name quoted when it is not a plain word); with
//! [`PrintOptions::sources`] the printer adds `# <file>:<line>:<col>`
//! comments, which the reader ignores. `via` lists the inlined call sites,
//! innermost first.

use std::fmt::Write as _;

use nkic_diag::SourceMap;

use crate::arena::Handle;
use crate::field::FieldValue;
use crate::kernel::{DynLoop, DynLoopKind, Item, Kernel, LoopCtx, SrcLoc};
use crate::lex::quote;
use crate::op::{Op, RegOrImm, Role};

/// Printer configuration.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions<'a> {
    /// When given, locations get a `# file:line:col` comment.
    pub sources: Option<&'a SourceMap>,
}

/// Prints `kernel` in the text form.
pub fn print(kernel: &Kernel) -> String {
    print_with(kernel, PrintOptions::default())
}

/// Prints `kernel` in the text form with `options`.
pub fn print_with(kernel: &Kernel, options: PrintOptions<'_>) -> String {
    let mut p = Printer {
        k: kernel,
        options,
        out: String::new(),
    };
    p.kernel();
    p.out
}

struct Printer<'a> {
    k: &'a Kernel,
    options: PrintOptions<'a>,
    out: String,
}

/// True when `name` can be printed as a bare word that reads back as itself.
fn is_plain_word(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-' | '/'))
        && !name.contains("..")
}

fn join_u32(values: &[u32]) -> String {
    let items: Vec<String> = values.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl Printer<'_> {
    fn kernel(&mut self) {
        let k = self.k;
        self.out.push_str("kernel ");
        quote(&k.name, &mut self.out);
        self.out.push_str(&format!(
            " target={} program_id={} num_programs={}\n",
            k.target,
            join_u32(&k.program_id),
            join_u32(&k.num_programs)
        ));
        for f in &k.files {
            let _ = write!(self.out, "file {} ", f.id.0);
            quote(&f.name, &mut self.out);
            self.out.push('\n');
        }
        for (h, reg) in k.registers.iter() {
            let _ = write!(self.out, "reg {h} ");
            quote(&reg.name, &mut self.out);
            self.out.push('\n');
        }
        for (h, lp) in k.static_loops.iter() {
            let _ = write!(self.out, "{h} = {} trips={}", lp.kind.name(), lp.trips);
            self.ctx(lp.parent);
            let loc = k.spans.static_loops.get(h).copied();
            self.end_line(loc);
        }
        for (h, st) in k.storages.iter() {
            let shape: Vec<String> = st.shape.iter().map(u64::to_string).collect();
            self.out.push_str(&format!(
                "{h} = {} {}[{}] ",
                st.buffer,
                st.dtype,
                shape.join(", ")
            ));
            quote(&st.name, &mut self.out);
            if let Some((i, arg)) = k.args.iter().enumerate().find(|(_, a)| a.storage == h) {
                let _ = write!(self.out, " arg={i} {}", arg.kind.name());
            }
            if let Some(addr) = st.address {
                let _ = write!(self.out, " addr=[{}, {}]", addr.partition, addr.byte);
            }
            if let Some(data) = &st.data {
                self.out.push_str(" data=");
                nkic_isa::field::write_hex(data, &mut self.out);
            }
            if let Some(scope) = st.scope {
                let _ = write!(self.out, " scope={scope}");
            }
            self.ctx(st.loop_ctx);
            let loc = k.spans.storages.get(h).copied();
            self.end_line(loc);
        }
        self.block(&k.body, 0);
        if !k.outputs.is_empty() {
            let outs: Vec<String> = k.outputs.iter().map(ToString::to_string).collect();
            let _ = writeln!(self.out, "return {}", outs.join(", "));
        }
    }

    fn block(&mut self, block: &[Item], depth: usize) {
        for &item in block {
            self.indent(depth);
            match item {
                Item::Op(h) => self.op(h),
                Item::Loop(l) => self.dyn_loop(l, depth),
            }
        }
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn op(&mut self, h: Handle<Op>) {
        let k = self.k;
        let Some(op) = k.ops.try_get(h) else {
            let _ = writeln!(self.out, "# dangling {h}");
            return;
        };
        let _ = write!(self.out, "{h} = {}", op.kind.mnemonic());
        let mut fields = String::new();
        op.kind
            .for_each_field(&mut |name, _role: Role, value: &dyn FieldValue| {
                if value.is_omitted() {
                    return;
                }
                let _ = write!(fields, " {name}=");
                value.write_text(&k.storages, &mut fields);
            });
        self.out.push_str(&fields);
        match op.engine {
            Some(e) => self.out.push_str(&format!(" engine={e}")),
            None => self.out.push_str(" engine=?"),
        }
        if let Some(name) = &op.name {
            self.out.push_str(" name=");
            quote(name, &mut self.out);
        }
        if !op.depends_on.is_empty() {
            let deps: Vec<String> = op.depends_on.iter().map(ToString::to_string).collect();
            let _ = write!(self.out, " deps=[{}]", deps.join(", "));
        }
        if let Some(g) = op.no_reorder {
            let _ = write!(self.out, " group={g}");
        }
        self.ctx(op.loop_ctx);
        let chain = k.call_chain(h);
        if !chain.is_empty() {
            self.out.push_str(" via=[");
            for (i, loc) in chain.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.loc_text(*loc);
            }
            self.out.push(']');
        }
        self.end_line(k.spans.ops.get(h).copied());
    }

    fn dyn_loop(&mut self, l: Handle<DynLoop>, depth: usize) {
        let k = self.k;
        let Some(lp) = k.dyn_loops.try_get(l) else {
            let _ = writeln!(self.out, "# dangling {l}");
            return;
        };
        let _ = write!(self.out, "{l} = {}", lp.kind.name());
        let bound = |b: &RegOrImm| match b {
            RegOrImm::Reg(r) => r.to_string(),
            RegOrImm::Imm(v) => v.to_string(),
        };
        match &lp.kind {
            DynLoopKind::Range { start, stop, step } | DynLoopKind::Fori { start, stop, step } => {
                self.out.push_str(&format!(
                    " start={} stop={} step={step}",
                    bound(start),
                    bound(stop)
                ));
            }
            DynLoopKind::While { cond } => self.out.push_str(&format!(" cond={cond}")),
        }
        if let Some(iv) = lp.induction {
            let _ = write!(self.out, " iv={iv}");
        }
        self.ctx(lp.loop_ctx);
        if let Some(loc) = k.spans.dyn_loops.get(l).copied() {
            self.out.push_str(" @ ");
            self.loc_text(loc);
        }
        self.out.push_str(" {");
        self.line_comment(k.spans.dyn_loops.get(l).copied());
        self.out.push('\n');
        self.block(&lp.body, depth + 1);
        self.indent(depth);
        self.out.push_str("}\n");
    }

    /// Prints ` iter=[…]` unless the context is the top level.
    fn ctx(&mut self, ctx: LoopCtx) {
        if ctx.0.is_none() {
            return;
        }
        let frames: Vec<String> = self
            .k
            .loop_stack(ctx)
            .iter()
            .map(|it| format!("{}={}", it.lp, it.index))
            .collect();
        let _ = write!(self.out, " iter=[{}]", frames.join(", "));
    }

    fn loc_text(&mut self, loc: SrcLoc) {
        match self.k.file_name(loc.file) {
            Some(name) if is_plain_word(name) => self.out.push_str(name),
            Some(name) => quote(name, &mut self.out),
            // An unknown file prints as its number; the verifier reports it.
            None => self.out.push_str(&format!("{}", loc.file.0)),
        }
        let _ = write!(self.out, ":{}..{}", loc.span.start, loc.span.end);
    }

    /// Ends an entity line with its location and optional comment.
    fn end_line(&mut self, loc: Option<SrcLoc>) {
        if let Some(loc) = loc {
            self.out.push_str(" @ ");
            self.loc_text(loc);
        }
        self.line_comment(loc);
        self.out.push('\n');
    }

    fn line_comment(&mut self, loc: Option<SrcLoc>) {
        let (Some(sources), Some(loc)) = (self.options.sources, loc) else {
            return;
        };
        if let Some(file) = sources.get(loc.file) {
            let lc = file.line_col(loc.span.start);
            let _ = write!(self.out, "  # {}:{}:{}", file.name(), lc.line, lc.col);
        }
    }
}

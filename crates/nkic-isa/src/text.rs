//! The `.nkasm` text format: a canonical printer and an assembler.
//!
//! ```text
//! .target trn3
//! .file "kernel.py"
//! .line l0 f0 12:5 340..352
//! .arg a f32[128,512] input
//! .arg out f32[128,512] output
//! .hbm spill bf16[128,64]
//! .hbm scale f32[2] shared
//! .data scale 0000803f00000040
//! .sem loaded
//!
//! .queue dma0
//!   dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512] signal(loaded)  # l0 kernel.py:12:5
//!
//! .queue scalar
//!   activation dst=sbuf[0:128]+2048:f32[1,512] src=sbuf[0:128]:f32[1,512] func=exp scale=1.0 wait(loaded>=1)
//! ```
//!
//! Grammar (one item per line; `#` starts a comment except inside the
//! quoted name of `.file`):
//!
//! ```text
//! file        := line*
//! line        := directive | label | instruction | blank | comment
//! directive   := '.target' ('trn1'|'trn2'|'trn3')
//!              | '.file' QUOTED                           files, in order (f0, f1, …)
//!              | '.line' 'l'N 'f'N LINE ':' COL START '..' END   line table, in order
//!              | '.arg' NAME DTYPE '[' dims ']' ('input'|'output'|'inout')
//!              | '.hbm' NAME DTYPE '[' dims ']' 'shared'?    internal HBM tensor
//!              | '.data' NAME HEX?                           bytes of a `.hbm` tensor on entry
//!              | '.sem' NAME                                 semaphores, in order
//!              | '.queue' QUEUE                              starts a stream
//! label       := 'L'N ':'                                    `label label=LN`
//! instruction := MNEMONIC field* header* ('#' 'l'N rest-of-comment)?
//! field       := NAME '=' VALUE                              see `field.rs`
//! header      := 'wait(' SEM '>=' (N | 'r'N '+' N) ')' | 'signal(' SEM ')'
//! ```
//!
//! Declarations may appear anywhere (the assembler reads them first), but
//! the printer writes them in the order above. `.arg` and `.hbm` lines
//! together give `Program::hbm` in order of appearance. The `.data` lines
//! of a tensor, which may come before or after its `.hbm` line, give its
//! `HbmTensor::data` as lowercase hexadecimal, two digits a byte, their
//! bytes concatenated in order; the printer writes at most 64 bytes a line
//! (and one empty `.data NAME` line for empty data). An instruction's
//! trailing comment that starts with `l<N>` names its line-table entry; the
//! printer follows it with the readable `file:line:col`, which the
//! assembler ignores.
//!
//! The printer is canonical: fields in table order, defaults omitted,
//! waits before signals, one space between words and two before the
//! comment. For every program `p`, `assemble(&print(&p)) == Ok(p)` as long
//! as its names are identifiers and its ids are in range (what the verifier
//! checks); for printer output `t`, `print(&assemble(t)?) == t`.

use crate::insn;
use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;

use crate::ap::Reg;
use crate::dtype::DType;
use crate::engine::Queue;
use crate::field::{
    Names, dtype_short_name, parse_dtype, parse_hex, parse_int, parse_label, parse_reg, write_hex,
};
use crate::inst::{FieldSource, Instruction, Op};
use crate::program::{
    HbmTensor, LineEntry, LineId, Program, QueueStream, SemId, Semaphore, TensorKind,
};
use crate::target::Target;

/// An assembler error: a byte range of the input and a message (lowercase,
/// no trailing period). The CLI turns these into diagnostics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// UTF-8 byte offsets into the assembled text.
    pub span: Range<u32>,
    pub message: String,
}

impl std::fmt::Display for AsmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}..{}: {}",
            self.span.start, self.span.end, self.message
        )
    }
}

impl std::error::Error for AsmError {}

// ====================================================================== printer

/// The most bytes the printer writes on one `.data` line.
const DATA_LINE_BYTES: usize = 64;

/// Prints a program in canonical `.nkasm` form.
pub fn print(program: &Program) -> String {
    let mut out = String::new();
    let names = Names::new(program.hbm.iter().map(|t| t.name.clone()).collect());
    let _ = writeln!(out, ".target {}", program.target.name());
    for file in &program.files {
        let _ = writeln!(out, ".file {}", quote(file));
    }
    for (i, entry) in program.line_table.iter().enumerate() {
        let _ = writeln!(
            out,
            ".line l{i} f{} {}:{} {}..{}",
            entry.file, entry.line, entry.col, entry.span.start, entry.span.end
        );
    }
    for tensor in &program.hbm {
        let shape = tensor
            .shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let dtype = dtype_short_name(tensor.dtype);
        if tensor.kind.is_arg() {
            let _ = writeln!(
                out,
                ".arg {} {dtype}[{shape}] {}",
                tensor.name,
                tensor.kind.name()
            );
        } else {
            let shared = if tensor.kind == TensorKind::Shared {
                " shared"
            } else {
                ""
            };
            let _ = writeln!(out, ".hbm {} {dtype}[{shape}]{shared}", tensor.name);
        }
    }
    for tensor in &program.hbm {
        let Some(data) = &tensor.data else {
            continue;
        };
        if data.is_empty() {
            let _ = writeln!(out, ".data {}", tensor.name);
        }
        for line in data.chunks(DATA_LINE_BYTES) {
            let _ = write!(out, ".data {} ", tensor.name);
            write_hex(line, &mut out);
            out.push('\n');
        }
    }
    for sem in &program.semaphores {
        let _ = writeln!(out, ".sem {}", sem.name);
    }
    for stream in &program.queues {
        let _ = writeln!(out, "\n.queue {}", stream.queue);
        for inst in &stream.insts {
            print_instruction(program, &names, inst, &mut out);
        }
    }
    out
}

/// Prints one instruction line (with its newline).
fn print_instruction(program: &Program, names: &Names, inst: &Instruction, out: &mut String) {
    if let Op::Label(insn::Label { label }) = &inst.op
        && inst.waits.is_empty()
        && inst.signals.is_empty()
        && inst.line.is_none()
    {
        let _ = writeln!(out, "{label}:");
        return;
    }
    out.push_str("  ");
    out.push_str(inst.op.mnemonic());
    inst.op.for_each_field(&mut |name, _, value| {
        if !value.is_omitted() {
            out.push(' ');
            out.push_str(name);
            out.push('=');
            value.write_text(names, out);
        }
    });
    let sem = |id: SemId| match program.sem_name(id) {
        Some(name) => name.to_owned(),
        None => format!("?{}", id.0),
    };
    for w in &inst.waits {
        let _ = match w.reg {
            Some(r) => write!(out, " wait({}>={r}+{})", sem(w.sem), w.value),
            None => write!(out, " wait({}>={})", sem(w.sem), w.value),
        };
    }
    for s in &inst.signals {
        let _ = write!(out, " signal({})", sem(*s));
    }
    if let Some(id) = inst.line {
        let _ = write!(out, "  # l{}", id.0);
        if let Some(entry) = program.line(id) {
            let file = program
                .files
                .get(entry.file as usize)
                .map_or("?", String::as_str);
            // The readable location is ignored by the assembler; control
            // characters would break the line, so they are replaced.
            let file: String = file
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            let _ = write!(out, " {file}:{}:{}", entry.line, entry.col);
        }
    }
    out.push('\n');
}

/// Quotes a file name, escaping `\`, `"` and control characters.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses a quoted string at the start of `text`; returns it and the number
/// of bytes consumed.
fn unquote(text: &str) -> Result<(String, usize), String> {
    let mut chars = text.char_indices();
    if !matches!(chars.next(), Some((_, '"'))) {
        return Err("expected a quoted file name".into());
    }
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, i + 1)),
            '\\' => match chars.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'u')) => {
                    let rest = &text[i + 2..];
                    let close = rest.find('}').ok_or("unterminated `\\u{…}` escape")?;
                    let hex = rest
                        .strip_prefix('{')
                        .map(|r| &r[..close - 1])
                        .ok_or("expected `{` after `\\u`")?;
                    let c = u32::from_str_radix(hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("bad escape `\\u{{{hex}}}`"))?;
                    out.push(c);
                    // Skip the escape's remaining characters.
                    for _ in 0..rest[..=close].chars().count() {
                        chars.next();
                    }
                }
                _ => return Err("unknown escape in quoted name".into()),
            },
            c => out.push(c),
        }
    }
    Err("unterminated quoted name".into())
}

// ====================================================================== assembler

/// One whitespace-separated word of a line with its absolute byte range.
#[derive(Clone, Copy, Debug)]
struct Word<'a> {
    text: &'a str,
    start: usize,
}

impl Word<'_> {
    fn span(&self) -> Range<u32> {
        byte_range(self.start, self.start + self.text.len())
    }
}

/// A byte range of the input as `u32` offsets, the form of every offset
/// in nkic. Callers keep texts under 4 GiB (the command line refuses
/// larger files); beyond that an offset saturates rather than wraps.
pub(crate) fn byte_range(start: usize, end: usize) -> Range<u32> {
    let at = |offset: usize| u32::try_from(offset).unwrap_or(u32::MAX);
    at(start)..at(end)
}

/// Splits `line` (starting at byte `base` of the input) into words.
fn words(line: &str, base: usize) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                out.push(Word {
                    text: &line[s..i],
                    start: base + s,
                });
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(Word {
            text: &line[s..],
            start: base + s,
        });
    }
    out
}

/// Assembles `.nkasm` text into a program, reporting every error found.
pub fn assemble(text: &str) -> Result<Program, Vec<AsmError>> {
    let mut asm = Assembler {
        errors: Vec::new(),
        program: Program::new(Target::Trn3),
        sems: std::collections::BTreeMap::new(),
        data: Vec::new(),
    };
    // Split into lines with their byte offsets.
    let mut lines = Vec::new();
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        lines.push((offset, line));
        offset += raw.len();
    }

    // Pass 1: declarations, so instructions may name anything declared.
    let mut target_seen = false;
    for &(base, line) in &lines {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('.') {
            continue;
        }
        let base = base + (line.len() - trimmed.len());
        asm.declaration(trimmed, base, &mut target_seen);
    }
    asm.attach_data();
    if !target_seen {
        asm.error(
            0..0,
            format!("missing `.target` directive ({})", Target::choices()),
        );
    }

    // Pass 2: queues and instructions.
    asm.sems = (0u32..)
        .zip(&asm.program.semaphores)
        .map(|(i, sem)| (sem.name.clone(), SemId(i)))
        .collect();
    let names = Names::new(asm.program.hbm.iter().map(|t| t.name.clone()).collect());
    for &(base, line) in &lines {
        let (code, comment) = split_comment(line);
        let ws = words(code, base);
        let Some(first) = ws.first() else {
            continue;
        };
        if first.text == ".queue" {
            match ws.get(1).map(|w| (w, Queue::from_name(w.text))) {
                Some((_, Some(queue))) => asm.program.queues.push(QueueStream {
                    queue,
                    insts: Vec::new(),
                }),
                Some((w, None)) => asm.error(
                    w.span(),
                    format!(
                        "unknown queue `{}`: expected tensor, vector, scalar, gpsimd, sync or dma<n>",
                        w.text
                    ),
                ),
                None => asm.error(first.span(), "`.queue` needs a queue name".into()),
            }
            if let Some(extra) = ws.get(2) {
                asm.error(
                    extra.span(),
                    format!("unexpected `{}` after the queue name", extra.text),
                );
            }
            continue;
        }
        if first.text.starts_with('.') {
            continue;
        }
        let comment_base = base + code.len();
        let inst = asm.instruction(&ws, comment, comment_base, &names);
        if let Some(inst) = inst {
            match asm.program.queues.last_mut() {
                Some(stream) => stream.insts.push(inst),
                None => asm.error(
                    first.span(),
                    "instruction outside a queue: start a stream with `.queue <name>` first".into(),
                ),
            }
        }
    }
    if asm.errors.is_empty() {
        Ok(asm.program)
    } else {
        Err(asm.errors)
    }
}

/// Splits a line into code and the comment after `#` (without the `#`).
fn split_comment(line: &str) -> (&str, Option<&str>) {
    match line.find('#') {
        Some(i) => (&line[..i], Some(&line[i + 1..])),
        None => (line, None),
    }
}

struct Assembler {
    errors: Vec<AsmError>,
    program: Program,
    /// Semaphore name → id, filled after the declarations are read.
    sems: std::collections::BTreeMap<String, SemId>,
    /// The `.data` lines read so far: the tensor's name and its span, and
    /// the bytes (attached to the tensors once all are declared).
    data: Vec<(String, Range<u32>, Vec<u8>)>,
}

impl Assembler {
    fn error(&mut self, span: Range<u32>, message: String) {
        self.errors.push(AsmError { span, message });
    }

    /// Handles one directive line of pass 1 (`.queue` is left to pass 2).
    fn declaration(&mut self, line: &str, base: usize, target_seen: &mut bool) {
        // `.file` is special: its quoted name may contain `#` and spaces.
        if let Some(rest) = line.strip_prefix(".file") {
            let after = rest.trim_start();
            let at = base + line.len() - after.len();
            match unquote(after) {
                Ok((name, used)) => {
                    let tail = after[used..].trim();
                    if !tail.is_empty() && !tail.starts_with('#') {
                        self.error(
                            byte_range(at + used, base + line.len()),
                            format!("unexpected `{tail}` after the file name"),
                        );
                    }
                    self.program.files.push(name);
                }
                Err(msg) => self.error(byte_range(at, base + line.len()), msg),
            }
            return;
        }
        let (code, _) = split_comment(line);
        let ws = words(code, base);
        let Some(head) = ws.first() else {
            return;
        };
        let args = &ws[1..];
        match head.text {
            ".target" => {
                let [w] = args else {
                    self.error(head.span(), format!("expected `.target` and one of {}", Target::choices()));
                    return;
                };
                match Target::from_name(w.text) {
                    Some(t) if !*target_seen => {
                        self.program.target = t;
                        *target_seen = true;
                    }
                    Some(_) => self.error(w.span(), "`.target` given twice".into()),
                    None => self.error(w.span(), format!("unknown target `{}`: expected {}", w.text, Target::choices())),
                }
            }
            ".line" => self.line_directive(head, args),
            ".arg" | ".hbm" => self.tensor_directive(head, args),
            ".data" => self.data_directive(head, args),
            ".sem" => {
                let [w] = args else {
                    self.error(head.span(), "expected `.sem <name>`".into());
                    return;
                };
                if !is_identifier(w.text) {
                    self.error(w.span(), format!("semaphore name `{}` is not an identifier", w.text));
                } else if self.program.semaphores.iter().any(|s| s.name == w.text) {
                    self.error(w.span(), format!("semaphore `{}` declared twice", w.text));
                } else {
                    self.program.semaphores.push(Semaphore { name: w.text.to_owned() });
                }
            }
            ".queue" => {}
            other => self.error(
                head.span(),
                format!("unknown directive `{other}`: expected .target, .file, .line, .arg, .hbm, .data, .sem or .queue"),
            ),
        }
    }

    /// `.line l<i> f<file> <line>:<col> <start>..<end>`.
    fn line_directive(&mut self, head: &Word<'_>, args: &[Word<'_>]) {
        let [id, file, pos, span] = args else {
            self.error(
                head.span(),
                "expected `.line l<n> f<n> <line>:<col> <start>..<end>`".into(),
            );
            return;
        };
        let expected = self.program.line_table.len();
        match id
            .text
            .strip_prefix('l')
            .and_then(|d| d.parse::<usize>().ok())
        {
            Some(n) if n == expected => {}
            _ => {
                self.error(
                    id.span(),
                    format!("expected line id `l{expected}` (line entries are numbered in order)"),
                );
                return;
            }
        }
        let file_no = file
            .text
            .strip_prefix('f')
            .and_then(|d| d.parse::<u32>().ok());
        let position = pos
            .text
            .split_once(':')
            .and_then(|(l, c)| Some((l.parse::<u32>().ok()?, c.parse::<u32>().ok()?)));
        let range = span
            .text
            .split_once("..")
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
        let Some(file_no) = file_no else {
            self.error(
                file.span(),
                format!("expected a file id like `f0`, found `{}`", file.text),
            );
            return;
        };
        let Some((line, col)) = position else {
            self.error(
                pos.span(),
                format!("expected `<line>:<col>`, found `{}`", pos.text),
            );
            return;
        };
        let Some((start, end)) = range else {
            self.error(
                span.span(),
                format!(
                    "expected a byte range `<start>..<end>`, found `{}`",
                    span.text
                ),
            );
            return;
        };
        self.program.line_table.push(LineEntry {
            file: file_no,
            line,
            col,
            span: start..end,
        });
    }

    /// `.arg name dtype[shape] kind` and `.hbm name dtype[shape] [shared]`.
    fn tensor_directive(&mut self, head: &Word<'_>, args: &[Word<'_>]) {
        let is_arg = head.text == ".arg";
        let (name, ty, kind, shared) = match (is_arg, args) {
            (true, [name, ty, kind]) => (name, ty, Some(kind), false),
            (false, [name, ty]) => (name, ty, None, false),
            (false, [name, ty, word]) if word.text == "shared" => (name, ty, None, true),
            _ => {
                let usage = if is_arg {
                    "expected `.arg <name> <dtype>[<shape>] input|output|inout`"
                } else {
                    "expected `.hbm <name> <dtype>[<shape>]` or `.hbm <name> <dtype>[<shape>] shared`"
                };
                self.error(head.span(), usage.into());
                return;
            }
        };
        let mut ok = true;
        if !is_identifier(name.text) {
            self.error(
                name.span(),
                format!("tensor name `{}` is not an identifier", name.text),
            );
            ok = false;
        } else if self.program.hbm.iter().any(|t| t.name == name.text) {
            self.error(
                name.span(),
                format!("HBM tensor `{}` declared twice", name.text),
            );
            ok = false;
        }
        let parsed = parse_tensor_type(ty.text);
        if let Err(msg) = &parsed {
            self.error(ty.span(), msg.clone());
        }
        let kind = match kind {
            Some(w) => match TensorKind::from_name(w.text).filter(|k| k.is_arg()) {
                Some(k) => Some(k),
                None => {
                    self.error(
                        w.span(),
                        format!(
                            "unknown argument kind `{}`: expected input, output or inout",
                            w.text
                        ),
                    );
                    None
                }
            },
            None if shared => Some(TensorKind::Shared),
            None => Some(TensorKind::Internal),
        };
        if let (true, Ok((dtype, shape)), Some(kind)) = (ok, parsed, kind) {
            self.program.hbm.push(HbmTensor {
                name: name.text.to_owned(),
                dtype,
                shape,
                kind,
                data: None,
            });
        }
    }

    /// `.data name hex`: the bytes are kept until every tensor is declared.
    fn data_directive(&mut self, head: &Word<'_>, args: &[Word<'_>]) {
        let (name, hex) = match args {
            [name] => (name, None),
            [name, hex] => (name, Some(hex)),
            _ => {
                self.error(
                    head.span(),
                    "expected `.data <tensor> <bytes in lowercase hexadecimal>`".into(),
                );
                return;
            }
        };
        let bytes = match hex.map(|w| (w, parse_hex(w.text))) {
            None => Vec::new(),
            Some((_, Ok(bytes))) => bytes,
            Some((w, Err(msg))) => {
                self.error(w.span(), msg);
                return;
            }
        };
        self.data.push((name.text.to_owned(), name.span(), bytes));
    }

    /// Appends the bytes of each `.data` line, in order, to its tensor's
    /// `data`: a `.hbm` tensor declared anywhere in the text.
    fn attach_data(&mut self) {
        let mut data: Vec<Option<Vec<u8>>> = vec![None; self.program.hbm.len()];
        for (name, span, bytes) in std::mem::take(&mut self.data) {
            let Some(i) = self.program.hbm.iter().position(|t| t.name == name) else {
                self.error(
                    span,
                    format!("`.data` of an unknown HBM tensor `{name}` (declare it with `.hbm`)"),
                );
                continue;
            };
            let kind = self.program.hbm[i].kind;
            if kind.is_arg() {
                self.error(
                    span,
                    format!(
                        "`{name}` is an {} argument; `.data` gives the bytes of a `.hbm` tensor only",
                        kind.name()
                    ),
                );
                continue;
            }
            data[i].get_or_insert_with(Vec::new).extend(bytes);
        }
        for (tensor, bytes) in self.program.hbm.iter_mut().zip(data) {
            tensor.data = bytes.map(Arc::from);
        }
    }

    /// Parses one instruction line (already split into words).
    fn instruction(
        &mut self,
        ws: &[Word<'_>],
        comment: Option<&str>,
        comment_base: usize,
        names: &Names,
    ) -> Option<Instruction> {
        let first = ws.first()?;
        let line = self.line_comment(comment, comment_base);
        // `L3:` defines a label.
        if let Some(label_text) = first.text.strip_suffix(':') {
            let label = match parse_label(label_text) {
                Ok(l) => l,
                Err(msg) => {
                    self.error(first.span(), msg);
                    return None;
                }
            };
            if let Some(extra) = ws.get(1) {
                self.error(
                    extra.span(),
                    "nothing may follow a label on its line".into(),
                );
            }
            let mut inst = Instruction::new(Op::Label(insn::Label { label }));
            inst.line = line;
            return Some(inst);
        }
        let mnemonic = first.text;
        let Some(field_names) = Op::field_names(mnemonic) else {
            let hint = suggest(mnemonic, Op::MNEMONICS)
                .map(|m| format!("; did you mean `{m}`?"))
                .unwrap_or_default();
            self.error(
                first.span(),
                format!("unknown instruction `{mnemonic}`{hint}"),
            );
            return None;
        };
        let mut fields = Vec::new();
        let mut waits = Vec::new();
        let mut signals = Vec::new();
        let mut header_ok = true;
        for w in &ws[1..] {
            // `wait(…)` and `signal(…)`: the argument, or `None` for a field.
            let call = |name: &str| {
                w.text
                    .strip_prefix(name)
                    .and_then(|t| t.strip_prefix('('))
                    .and_then(|t| t.strip_suffix(')'))
            };
            let header = if let Some(body) = call("wait") {
                Some(self.parse_wait(body).map(|wait| waits.push(wait)))
            } else {
                call("signal").map(|body| self.sem_id(body).map(|id| signals.push(id)))
            };
            if let Some(result) = header {
                if let Err(msg) = result {
                    self.error(w.span(), msg);
                    header_ok = false;
                }
            } else if let Some((key, value)) = w.text.split_once('=') {
                if fields.iter().any(|f: &FieldText<'_>| f.key == key) {
                    self.error(w.span(), format!("field `{key}` given twice"));
                    header_ok = false;
                    continue;
                }
                fields.push(FieldText {
                    key,
                    value,
                    span: byte_range(w.start + key.len() + 1, w.start + w.text.len()),
                    key_span: byte_range(w.start, w.start + key.len()),
                    used: false,
                });
            } else {
                self.error(
                    w.span(),
                    format!(
                        "expected `name=value`, `wait(sem>=n)` or `signal(sem)`, found `{}`",
                        w.text
                    ),
                );
                header_ok = false;
            }
        }
        let mut source = LineFields {
            fields,
            errors: Vec::new(),
            mnemonic_span: first.span(),
            mnemonic,
            names,
        };
        let op = Op::parse_fields(mnemonic, &mut source);
        let mut unknown_ok = true;
        for f in source.fields.iter().filter(|f| !f.used) {
            unknown_ok = false;
            source.errors.push(AsmError {
                span: f.key_span.clone(),
                message: format!(
                    "`{mnemonic}` has no field `{}`; its fields are: {}",
                    f.key,
                    field_names.join(", ")
                ),
            });
        }
        self.errors.append(&mut source.errors);
        let op = op?;
        if !header_ok || !unknown_ok {
            return None;
        }
        Some(Instruction {
            op,
            waits,
            signals,
            line,
        })
    }

    /// Reads `l<N>` at the start of an instruction's comment.
    fn line_comment(&mut self, comment: Option<&str>, base: usize) -> Option<LineId> {
        let comment = comment?;
        let trimmed = comment.trim_start();
        let word = trimmed.split_whitespace().next()?;
        let digits = word.strip_prefix('l')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let start = base + 1 + (comment.len() - trimmed.len());
        match digits.parse::<u32>() {
            Ok(n) if (n as usize) < self.program.line_table.len() => Some(LineId(n)),
            _ => {
                self.error(
                    byte_range(start, start + word.len()),
                    format!("line entry `{word}` is not declared by a `.line` directive"),
                );
                None
            }
        }
    }

    fn sem_id(&self, name: &str) -> Result<SemId, String> {
        self.sems
            .get(name)
            .copied()
            .ok_or_else(|| format!("unknown semaphore `{name}` (declare it with `.sem {name}`)"))
    }

    /// Parses the inside of `wait(...)`: `sem>=n` or `sem>=r<k>+n`.
    fn parse_wait(&self, body: &str) -> Result<crate::inst::SemWait, String> {
        let (name, value) = body
            .split_once(">=")
            .ok_or_else(|| format!("expected `wait(<sem>>=<count>)`, found `wait({body})`"))?;
        let sem = self.sem_id(name)?;
        let (reg, count): (Option<Reg>, &str) = match value.split_once('+') {
            Some((r, n)) => (Some(parse_reg(r)?), n),
            None => (None, value),
        };
        let count = parse_int(count)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("expected a count in 0..2^32, found `{count}`"))?;
        Ok(crate::inst::SemWait {
            sem,
            value: count,
            reg,
        })
    }
}

/// One `key=value` word of an instruction line.
struct FieldText<'a> {
    key: &'a str,
    value: &'a str,
    span: Range<u32>,
    key_span: Range<u32>,
    used: bool,
}

/// The fields of one instruction line, handed to `Op::parse_fields`.
struct LineFields<'a, 'n> {
    fields: Vec<FieldText<'a>>,
    errors: Vec<AsmError>,
    mnemonic_span: Range<u32>,
    mnemonic: &'a str,
    names: &'n Names,
}

impl<'a> FieldSource<'a> for LineFields<'a, '_> {
    fn take(&mut self, name: &'static str) -> Option<(&'a str, Range<u32>)> {
        let f = self.fields.iter_mut().find(|f| f.key == name)?;
        f.used = true;
        Some((f.value, f.span.clone()))
    }

    fn error(&mut self, span: Range<u32>, message: String) {
        self.errors.push(AsmError { span, message });
    }

    fn missing(&mut self, name: &'static str) {
        self.errors.push(AsmError {
            span: self.mnemonic_span.clone(),
            message: format!("`{}` needs the field `{name}=`", self.mnemonic),
        });
    }

    fn names(&self) -> &Names {
        self.names
    }
}

/// Parses `f32[128,512]` (or `f32[]` for a scalar).
fn parse_tensor_type(text: &str) -> Result<(DType, Vec<u64>), String> {
    let open = text
        .find('[')
        .ok_or_else(|| format!("expected `<dtype>[<shape>]`, found `{text}`"))?;
    let dtype =
        parse_dtype(&text[..open]).ok_or_else(|| format!("unknown dtype `{}`", &text[..open]))?;
    let body = text[open + 1..]
        .strip_suffix(']')
        .ok_or_else(|| format!("missing `]` in `{text}`"))?;
    if body.is_empty() {
        return Ok((dtype, Vec::new()));
    }
    let shape = body
        .split(',')
        .map(|d| {
            d.parse::<u64>()
                .map_err(|_| format!("bad dimension `{d}` in `{text}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dtype, shape))
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(text: &str) -> bool {
    let mut bytes = text.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The closest known word within edit distance 2, for "did you mean".
fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(word, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "\
.target trn3
.file \"kernel.py\"
.line l0 f0 12:5 340..352
.arg a f32[128,512] input
.arg out f32[128,512] output
.hbm spill bf16[128,64]
.sem loaded
.sem done

.queue dma0
  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512] signal(loaded)  # l0 kernel.py:12:5
  dma_copy dst=hbm.out[0:128*512]:f32[1,512] src=sbuf[0:128]+2048:f32[1,512] wait(done>=1)

.queue scalar
  reg_set dst=r1 value=0
L0:
  activation dst=sbuf[0:128]+2048:f32[1,512] src=sbuf[0:128]:f32[1,512] func=exp scale=1.0 wait(loaded>=1) signal(done)
  reg_alu dst=r1 op=add a=r1 b=1
  branch cond=lt a=r1 b=4 target=L0
";

    #[test]
    fn small_program_round_trips() {
        let p = assemble(SMALL).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(p.target, Target::Trn3);
        assert_eq!(p.hbm.len(), 3);
        assert_eq!(p.hbm[2].kind, TensorKind::Internal);
        assert_eq!(p.queues.len(), 2);
        assert_eq!(p.queues[1].insts.len(), 5);
        assert_eq!(p.queues[0].insts[0].line, Some(LineId(0)));
        assert_eq!(print(&p), SMALL);
        assert_eq!(assemble(&print(&p)), Ok(p));
    }

    #[test]
    fn a_shared_internal_tensor_round_trips() {
        let text = ".target trn3\n.hbm scratch f32[4,8] shared\n.hbm spill f32[2]\n";
        let p = assemble(text).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(p.hbm[0].kind, TensorKind::Shared);
        assert_eq!(p.hbm[1].kind, TensorKind::Internal);
        assert!(!TensorKind::Shared.is_arg());
        assert_eq!(print(&p), text);
        let errors = assemble(".target trn3\n.hbm x f32[2] public\n")
            .err()
            .unwrap_or_default();
        assert_eq!(
            errors.first().map(|e| e.message.as_str()),
            Some(
                "expected `.hbm <name> <dtype>[<shape>]` or `.hbm <name> <dtype>[<shape>] shared`"
            )
        );
    }

    #[test]
    fn data_lines_round_trip() {
        // 80 bytes: one line of 64 and one of 16.
        let bytes: Vec<u8> = (0u8..80).map(|b| b.wrapping_mul(37)).collect();
        let mut hex = String::new();
        write_hex(&bytes, &mut hex);
        let text = format!(
            ".target trn3\n.arg a f32[2] input\n.hbm c u8[80]\n.hbm s f32[2] shared\n.hbm e f32[0]\n\
             .data c {}\n.data c {}\n.data s 0000803f00000040\n.data e\n",
            &hex[..128],
            &hex[128..]
        );
        let p = assemble(&text).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(p.hbm[0].data, None);
        assert_eq!(p.hbm[1].data.as_deref(), Some(&bytes[..]));
        assert_eq!(
            p.hbm[2].data.as_deref(),
            Some(&[0, 0, 0x80, 0x3f, 0, 0, 0, 0x40][..])
        );
        assert_eq!(p.hbm[3].data.as_deref(), Some(&[][..]));
        assert_eq!(print(&p), text);
        // `.data` lines may come first, and split anywhere.
        let early = format!(
            ".target trn3\n.data s 0000803f\n.data c {hex}\n.data e\n.data s 00000040\n\
             .arg a f32[2] input\n.hbm c u8[80]\n.hbm s f32[2] shared\n.hbm e f32[0]\n"
        );
        assert_eq!(assemble(&early), Ok(p));
    }

    #[test]
    fn data_errors() {
        let text = ".target trn3\n.arg a f32[1] input\n.hbm c u8[2]\n.data a 0000803f\n.data x 00\n.data c 0g\n.data c 123\n.data c 00 11\n";
        let errors = assemble(text).err().unwrap_or_default();
        let found: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| {
                let at = &text[e.span.start as usize..e.span.end as usize];
                (at, e.message.as_str())
            })
            .collect();
        assert_eq!(
            found,
            vec![
                ("0g", "`g` is not a lowercase hexadecimal digit"),
                ("123", "3 hexadecimal digits, an odd number; a byte is two"),
                (
                    ".data",
                    "expected `.data <tensor> <bytes in lowercase hexadecimal>`"
                ),
                (
                    "a",
                    "`a` is an input argument; `.data` gives the bytes of a `.hbm` tensor only"
                ),
                (
                    "x",
                    "`.data` of an unknown HBM tensor `x` (declare it with `.hbm`)"
                ),
            ]
        );
    }

    #[test]
    fn errors_are_collected_with_spans() {
        let text = ".target trn3\n.sem s\n.queue vector\n  tensor_cpy dst=sbuf[0:1]:f32 src=sbuf[0:1]:f32\n  tensor_copy dst=sbuf[0:1]:f32 sr=sbuf[0:1]:f32 signal(t)\n";
        let errors = assemble(text).err().unwrap_or_default();
        let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "unknown instruction `tensor_cpy`; did you mean `tensor_copy`?",
                "unknown semaphore `t` (declare it with `.sem t`)",
                "`tensor_copy` needs the field `src=`",
                "`tensor_copy` has no field `sr`; its fields are: dst, src",
            ]
        );
        assert_eq!(
            &text[errors[0].span.start as usize..errors[0].span.end as usize],
            "tensor_cpy"
        );
        assert_eq!(
            &text[errors[1].span.start as usize..errors[1].span.end as usize],
            "signal(t)"
        );
        assert_eq!(
            &text[errors[3].span.start as usize..errors[3].span.end as usize],
            "sr"
        );
    }

    #[test]
    fn missing_target_and_bad_directives() {
        let errors = assemble(".arg x f32[2] sideways\n.frob\n")
            .err()
            .unwrap_or_default();
        let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "unknown argument kind `sideways`: expected input, output or inout",
                "unknown directive `.frob`: expected .target, .file, .line, .arg, .hbm, .data, .sem or .queue",
                "missing `.target` directive (trn1, trn2 or trn3)",
            ]
        );
    }

    #[test]
    fn quoting() {
        for name in [
            "a.py",
            "dir with space/#k.py",
            "q\"uote\\",
            "tab\tnew\nline\u{1}",
        ] {
            let q = quote(name);
            assert_eq!(unquote(&q), Ok((name.to_owned(), q.len())));
        }
    }
}

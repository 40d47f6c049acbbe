//! The reader: parses the text form written by [`print`](crate::print())
//! back into a [`Kernel`].
//!
//! The reader checks what it needs to build the kernel (syntax, known
//! mnemonics and fields, known file names, dense handle numbering, a loop
//! context that matches the static loop table) and leaves every other
//! invariant to [`verify`](crate::verify()), so a hand-written IR file with a
//! structural error reads successfully and then fails verification with a
//! precise message.

use std::collections::BTreeMap;
use std::fmt;

use nkic_diag::{FileId, Span};
use nkic_isa::{Engine, Target};

use crate::arena::{Arena, Entity, Handle};
use crate::field::{FieldSource, parse_dtype, parse_index, parse_reg_handle, parse_reg_or_imm};
use crate::kernel::{
    Address, ArgKind, Block, Buffer, CallFrame, DynLoop, DynLoopKind, Item, Kernel, KernelArg,
    LoopCtx, LoopIter, NoReorderGroup, Register, SourceFileName, SrcLoc, StaticLoop,
    StaticLoopKind, Storage,
};
use crate::lex::{Cursor, Tok, tokenize};
use crate::op::{Op, OpKind};

/// The deepest nesting of dynamic loops the reader accepts, so that the
/// recursive passes over a kernel read from text cannot exhaust the stack.
pub const MAX_LOOP_DEPTH: usize = 256;

/// A syntax error in IR text, at a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ReadError {}

/// Parses IR text into a kernel (not verified; call `verify` next).
pub fn read(text: &str) -> Result<Kernel, ReadError> {
    let mut r = Reader {
        max_entities: text.lines().count(),
        ..Reader::default()
    };
    for (i, line) in text.lines().enumerate() {
        let toks = tokenize(line).map_err(|message| ReadError {
            line: i + 1,
            message,
        })?;
        if toks.is_empty() {
            continue;
        }
        r.line(&toks).map_err(|message| ReadError {
            line: i + 1,
            message,
        })?;
    }
    let last = text.lines().count().max(1);
    r.finish().map_err(|message| ReadError {
        line: last,
        message,
    })
}

#[derive(Default)]
struct Reader {
    kernel: Option<Kernel>,
    registers: Vec<Option<Register>>,
    static_loops: Vec<Option<StaticLoop>>,
    storages: Vec<Option<Storage>>,
    ops: Vec<Option<Op>>,
    dyn_loops: Vec<Option<DynLoop>>,
    args: Vec<(usize, Handle<Storage>, ArgKind)>,
    /// Open blocks: the owning loop (`None` for the body) and its items.
    blocks: Vec<(Option<Handle<DynLoop>>, Block)>,
    body: Option<Block>,
    op_locs: Vec<(Handle<Op>, SrcLoc)>,
    op_chains: Vec<(Handle<Op>, Vec<SrcLoc>)>,
    storage_locs: Vec<(Handle<Storage>, SrcLoc)>,
    dyn_locs: Vec<(Handle<DynLoop>, SrcLoc)>,
    static_locs: Vec<(Handle<StaticLoop>, SrcLoc)>,
    outputs: Option<Vec<Handle<Storage>>>,
    /// A storage arena kept in step with `storages` so views can be parsed.
    storage_arena: Arena<Storage>,
    /// The number of lines of the text: no handle index can reach it.
    max_entities: usize,
}

/// Places `value` at `index` of `slots`, refusing a second definition and
/// indices no text of `max` lines can need (each entity takes a line).
fn place<T>(
    slots: &mut Vec<Option<T>>,
    index: usize,
    value: T,
    what: &str,
    max: usize,
) -> Result<(), String> {
    if index >= max {
        return Err(format!(
            "{what}{index} is numbered beyond the length of the text"
        ));
    }
    if index >= slots.len() {
        slots.resize_with(index + 1, || None);
    }
    if slots[index].is_some() {
        return Err(format!("{what}{index} defined twice"));
    }
    slots[index] = Some(value);
    Ok(())
}

/// Turns slots into an arena, refusing gaps.
fn dense<T>(slots: Vec<Option<T>>, what: &str) -> Result<Arena<T>, String> {
    let mut arena = Arena::new();
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(v) => {
                arena.append(v);
            }
            None => return Err(format!("{what}{i} is never defined")),
        }
    }
    Ok(arena)
}

/// Parses `<prefix><N>` into a handle.
fn handle<T: Entity>(w: &str) -> Result<Handle<T>, String> {
    w.strip_prefix(T::PREFIX)
        .and_then(parse_index)
        .and_then(Handle::from_index)
        .ok_or_else(|| format!("expected a handle like `{}3`, found `{w}`", T::PREFIX))
}

/// Parses `[1, 2, 3]` of integers.
fn int_list<T: TryFrom<i128>>(c: &mut Cursor<'_>) -> Result<Vec<T>, String> {
    c.list(true, Cursor::int)
}

/// Splits tokens into `key=value` segments at depth 0; returns the
/// segments and the tokens after a depth-0 `@` (the location), if any.
type Segments<'t> = (Vec<(&'t str, &'t [Tok])>, Option<&'t [Tok]>);

fn segments(toks: &[Tok]) -> Result<Segments<'_>, String> {
    /// Ends the segment `current`, which runs to `end`.
    fn close<'t>(
        segs: &mut Vec<(&'t str, &'t [Tok])>,
        current: Option<(&'t str, usize)>,
        end: usize,
        toks: &'t [Tok],
    ) -> Result<(), String> {
        if let Some((key, start)) = current {
            if start >= end {
                return Err(format!("`{key}=` has no value"));
            }
            segs.push((key, &toks[start..end]));
        }
        Ok(())
    }

    let mut segs = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let mut current: Option<(&str, usize)> = None;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('[' | '(' | '{') => depth += 1,
            Tok::Punct(']' | ')' | '}') => depth = depth.saturating_sub(1),
            Tok::Punct('@') if depth == 0 => {
                close(&mut segs, current, i, toks)?;
                return Ok((segs, Some(&toks[i + 1..])));
            }
            Tok::Word(w) if depth == 0 && toks.get(i + 1) == Some(&Tok::Punct('=')) => {
                close(&mut segs, current, i, toks)?;
                current = Some((w.as_str(), i + 2));
                i += 2;
                continue;
            }
            t if current.is_none() => {
                return Err(format!("expected `name=value`, found {}", t.describe()));
            }
            _ => {}
        }
        i += 1;
    }
    close(&mut segs, current, toks.len(), toks)?;
    Ok((segs, None))
}

impl Reader {
    fn kernel_mut(&mut self) -> Result<&mut Kernel, String> {
        self.kernel
            .as_mut()
            .ok_or_else(|| "the text must start with a `kernel` line".to_owned())
    }

    fn kernel_ref(&self) -> Result<&Kernel, String> {
        self.kernel
            .as_ref()
            .ok_or_else(|| "the text must start with a `kernel` line".to_owned())
    }

    fn line(&mut self, toks: &[Tok]) -> Result<(), String> {
        let mut c = Cursor::new(toks);
        let first = match c.peek() {
            Some(Tok::Word(w)) => w.as_str(),
            Some(Tok::Punct('}')) => {
                c.next();
                c.expect_end()?;
                return self.close_block();
            }
            Some(t) => return Err(format!("unexpected {}", t.describe())),
            None => return Ok(()),
        };
        if self.body.is_some() && first != "return" {
            return Err("nothing may follow the body except `return`".into());
        }
        match first {
            "kernel" => self.header(&mut c),
            "file" => self.file(&mut c),
            "reg" => self.register(&mut c),
            "return" => self.returns(&mut c),
            w if c.peek_at(1) == Some(&Tok::Punct('=')) => {
                if w.starts_with("op") {
                    self.op(&mut c)
                } else if w.starts_with("dyn") {
                    self.dyn_loop(&mut c)
                } else if w.starts_with('L') {
                    self.static_loop(&mut c)
                } else if w.starts_with('t') {
                    self.storage(&mut c)
                } else {
                    Err(format!("unknown entity `{w}`"))
                }
            }
            w => Err(format!("unexpected `{w}`")),
        }
    }

    fn header(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        if self.kernel.is_some() {
            return Err("a second `kernel` line".into());
        }
        c.expect_word_is("kernel")?;
        let name = c.string()?.to_owned();
        c.expect_word_is("target")?;
        c.expect('=')?;
        let t = c.word()?;
        let target = Target::from_name(t).ok_or_else(|| format!("unknown target `{t}`"))?;
        let mut kernel = Kernel::new(&name, target);
        c.expect_word_is("program_id")?;
        c.expect('=')?;
        kernel.program_id = int_list(c)?;
        c.expect_word_is("num_programs")?;
        c.expect('=')?;
        kernel.num_programs = int_list(c)?;
        c.expect_end()?;
        self.kernel = Some(kernel);
        self.blocks.push((None, Vec::new()));
        Ok(())
    }

    fn file(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        c.expect_word_is("file")?;
        let id: u32 = c.int()?;
        let name = c.string()?.to_owned();
        c.expect_end()?;
        self.kernel_mut()?.files.push(SourceFileName {
            id: FileId(id),
            name,
        });
        Ok(())
    }

    fn register(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        c.expect_word_is("reg")?;
        let h = parse_reg_handle(c.word()?)?;
        let name = c.string()?.to_owned();
        c.expect_end()?;
        self.kernel_ref()?;
        place(
            &mut self.registers,
            h.index(),
            Register { name },
            "r",
            self.max_entities,
        )
    }

    fn loc(&self, c: &mut Cursor<'_>) -> Result<SrcLoc, String> {
        let name = match c.next() {
            Some(Tok::Word(w) | Tok::Str(w)) => w.as_str(),
            _ => return Err(format!("expected a location, found {}", c.found())),
        };
        let k = self.kernel_ref()?;
        let file = k
            .files
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.id)
            .ok_or_else(|| format!("location in unknown file `{name}`"))?;
        c.expect(':')?;
        let range = c.word()?;
        let (a, b) = range
            .split_once("..")
            .ok_or_else(|| format!("expected a byte range like `10..20`, found `{range}`"))?;
        let start = a.parse::<u32>().map_err(|_| format!("bad offset `{a}`"))?;
        let end = b.parse::<u32>().map_err(|_| format!("bad offset `{b}`"))?;
        if end < start {
            return Err(format!("byte range `{range}` runs backwards"));
        }
        Ok(SrcLoc::new(file, Span::new(start, end)))
    }

    fn loc_at_end(&self, toks: Option<&[Tok]>) -> Result<Option<SrcLoc>, String> {
        let Some(toks) = toks else { return Ok(None) };
        let mut c = Cursor::new(toks);
        let loc = self.loc(&mut c)?;
        c.expect_end()?;
        Ok(Some(loc))
    }

    /// Parses `[L0=1, L2=0]`, checking it against the static loop table.
    fn ctx(&self, c: &mut Cursor<'_>) -> Result<LoopCtx, String> {
        let frames = c.list(true, |c| {
            let lp = handle::<StaticLoop>(c.word()?)?;
            c.expect('=')?;
            let index: u32 = c.int()?;
            Ok(LoopIter { lp, index })
        })?;
        let ctx = LoopCtx(frames.last().copied());
        // The stack printed must be the one the loop table implies.
        let mut expect = frames.clone();
        expect.pop();
        if let Some(it) = ctx.0 {
            let lp = self
                .static_loops
                .get(it.lp.index())
                .and_then(Option::as_ref)
                .ok_or_else(|| format!("unknown static loop {}", it.lp))?;
            let mut parents = Vec::new();
            let mut cur = lp.parent.0;
            while let Some(p) = cur {
                parents.push(p);
                if parents.len() > self.static_loops.len() {
                    break;
                }
                cur = self
                    .static_loops
                    .get(p.lp.index())
                    .and_then(Option::as_ref)
                    .and_then(|l| l.parent.0);
            }
            parents.reverse();
            if parents != expect {
                return Err(format!(
                    "iteration stack does not match the parents of {}",
                    it.lp
                ));
            }
        }
        Ok(ctx)
    }

    fn seg_ctx(&self, toks: &[Tok]) -> Result<LoopCtx, String> {
        let mut c = Cursor::new(toks);
        let ctx = self.ctx(&mut c)?;
        c.expect_end()?;
        Ok(ctx)
    }

    fn static_loop(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        let h = handle::<StaticLoop>(c.word()?)?;
        c.expect('=')?;
        let kind_word = c.word()?;
        let kind = StaticLoopKind::from_name(kind_word)
            .ok_or_else(|| format!("unknown static loop kind `{kind_word}`"))?;
        let (segs, loc) = segments(c.rest())?;
        let mut trips = None;
        let mut parent = LoopCtx::TOP;
        for (key, toks) in segs {
            match key {
                "trips" => {
                    let mut c = Cursor::new(toks);
                    trips = Some(c.int()?);
                    c.expect_end()?;
                }
                "iter" => parent = self.seg_ctx(toks)?,
                other => return Err(format!("unknown static loop field `{other}`")),
            }
        }
        let trips = trips.ok_or("missing `trips=`")?;
        if let Some(loc) = self.loc_at_end(loc)? {
            self.static_locs.push((h, loc));
        }
        place(
            &mut self.static_loops,
            h.index(),
            StaticLoop {
                kind,
                trips,
                parent,
            },
            "L",
            self.max_entities,
        )
    }

    fn storage(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        let h = handle::<Storage>(c.word()?)?;
        c.expect('=')?;
        let b = c.word()?;
        let buffer = Buffer::from_name(b).ok_or_else(|| format!("unknown buffer `{b}`"))?;
        let dtype = parse_dtype(c.word()?)?;
        let shape: Vec<u64> = int_list(c)?;
        let name = c.string()?.to_owned();
        let mut st = Storage {
            name,
            buffer,
            dtype,
            shape,
            address: None,
            loop_ctx: LoopCtx::TOP,
            scope: None,
            data: None,
        };
        let (segs, loc) = segments(c.rest())?;
        for (key, toks) in segs {
            let mut c = Cursor::new(toks);
            match key {
                "arg" => {
                    let index: usize = c.int()?;
                    let kind_word = c.word()?;
                    let kind = ArgKind::from_name(kind_word)
                        .ok_or_else(|| format!("unknown argument kind `{kind_word}`"))?;
                    self.args.push((index, h, kind));
                }
                "addr" => {
                    c.expect('[')?;
                    let partition = c.int()?;
                    c.expect(',')?;
                    let byte = c.int()?;
                    c.expect(']')?;
                    st.address = Some(Address { partition, byte });
                }
                "data" => st.data = Some(nkic_isa::field::parse_hex(c.word()?)?.into()),
                "scope" => st.scope = Some(handle::<DynLoop>(c.word()?)?),
                "iter" => st.loop_ctx = self.ctx(&mut c)?,
                other => return Err(format!("unknown storage field `{other}`")),
            }
            c.expect_end()?;
        }
        if let Some(loc) = self.loc_at_end(loc)? {
            self.storage_locs.push((h, loc));
        }
        if h.index() != self.storage_arena.len() {
            return Err(format!(
                "storages are listed in order; expected t{}",
                self.storage_arena.len()
            ));
        }
        self.storage_arena.append(st.clone());
        place(&mut self.storages, h.index(), st, "t", self.max_entities)
    }

    fn op(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        let h = handle::<Op>(c.word()?)?;
        c.expect('=')?;
        let mnemonic = c.word()?;
        let (segs, loc) = segments(c.rest())?;
        let mut engine = None;
        let mut saw_engine = false;
        let mut name = None;
        let mut depends_on = Vec::new();
        let mut no_reorder = None;
        let mut loop_ctx = LoopCtx::TOP;
        let mut chain = Vec::new();
        let mut fields = Vec::new();
        for (key, toks) in segs {
            let mut c = Cursor::new(toks);
            match key {
                "engine" => {
                    saw_engine = true;
                    if !c.eat('?') {
                        let w = c.word()?;
                        engine = Some(
                            Engine::from_name(w).ok_or_else(|| format!("unknown engine `{w}`"))?,
                        );
                    }
                }
                "name" => name = Some(c.string()?.to_owned()),
                "deps" => {
                    let deps = c.list(false, |c| handle::<Op>(c.word()?))?;
                    depends_on.extend(deps);
                }
                "group" => {
                    let w = c.word()?;
                    let g = w
                        .strip_prefix('g')
                        .and_then(parse_index)
                        .and_then(|i| u32::try_from(i).ok())
                        .ok_or_else(|| format!("expected a group like `g0`, found `{w}`"))?;
                    no_reorder = Some(NoReorderGroup(g));
                }
                "iter" => loop_ctx = self.ctx(&mut c)?,
                "via" => chain.extend(c.list(false, |c| self.loc(c))?),
                _ => {
                    fields.push((key, toks));
                    continue;
                }
            }
            c.expect_end()?;
        }
        if !saw_engine {
            return Err("missing `engine=` (write `engine=?` to leave it open)".into());
        }
        let mut src = FieldSource {
            fields,
            storages: &self.storage_arena,
        };
        let kind = OpKind::parse_fields(mnemonic, &mut src)
            .ok_or_else(|| format!("unknown op `{mnemonic}`"))??;
        if let Some((extra, _)) = src.fields.first() {
            return Err(format!("`{mnemonic}` has no field `{extra}`"));
        }
        if let Some(loc) = self.loc_at_end(loc)? {
            self.op_locs.push((h, loc));
        }
        if !chain.is_empty() {
            self.op_chains.push((h, chain));
        }
        place(
            &mut self.ops,
            h.index(),
            Op {
                kind,
                engine,
                name,
                loop_ctx,
                depends_on,
                no_reorder,
            },
            "op",
            self.max_entities,
        )?;
        self.push_item(Item::Op(h))
    }

    fn push_item(&mut self, item: Item) -> Result<(), String> {
        match self.blocks.last_mut() {
            Some((_, block)) => {
                block.push(item);
                Ok(())
            }
            None => Err("the text must start with a `kernel` line".into()),
        }
    }

    fn dyn_loop(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        let h = handle::<DynLoop>(c.word()?)?;
        c.expect('=')?;
        let kind_word = c.word()?;
        let toks = c.rest();
        let Some((Tok::Punct('{'), toks)) = toks.split_last() else {
            return Err("a dynamic loop line ends with `{`".into());
        };
        let (segs, loc) = segments(toks)?;
        let (mut start, mut stop, mut step, mut cond, mut iv) = (None, None, None, None, None);
        let mut loop_ctx = LoopCtx::TOP;
        for (key, toks) in segs {
            let mut c = Cursor::new(toks);
            match key {
                "start" => start = Some(parse_reg_or_imm(&mut c)?),
                "stop" => stop = Some(parse_reg_or_imm(&mut c)?),
                "step" => step = Some(c.int()?),
                "cond" => cond = Some(parse_reg_handle(c.word()?)?),
                "iv" => iv = Some(parse_reg_handle(c.word()?)?),
                "iter" => loop_ctx = self.ctx(&mut c)?,
                other => return Err(format!("unknown dynamic loop field `{other}`")),
            }
            c.expect_end()?;
        }
        let counted = |start: Option<_>, stop: Option<_>, step: Option<_>| {
            Ok::<_, String>((
                start.ok_or("missing `start=`")?,
                stop.ok_or("missing `stop=`")?,
                step.ok_or("missing `step=`")?,
            ))
        };
        let kind = match kind_word {
            "dynamic_range" | "fori_loop" => {
                if cond.is_some() {
                    return Err(format!("`{kind_word}` has no `cond=`"));
                }
                let (start, stop, step) = counted(start, stop, step)?;
                if kind_word == "fori_loop" {
                    DynLoopKind::Fori { start, stop, step }
                } else {
                    DynLoopKind::Range { start, stop, step }
                }
            }
            "while" => {
                if start.is_some() || stop.is_some() || step.is_some() {
                    return Err("`while` takes only `cond=`".into());
                }
                DynLoopKind::While {
                    cond: cond.ok_or("missing `cond=`")?,
                }
            }
            other => return Err(format!("unknown dynamic loop kind `{other}`")),
        };
        if let Some(loc) = self.loc_at_end(loc)? {
            self.dyn_locs.push((h, loc));
        }
        place(
            &mut self.dyn_loops,
            h.index(),
            DynLoop {
                kind,
                induction: iv,
                loop_ctx,
                body: Vec::new(),
            },
            "dyn",
            self.max_entities,
        )?;
        self.push_item(Item::Loop(h))?;
        if self.blocks.len() > MAX_LOOP_DEPTH {
            return Err(format!("dynamic loops nested deeper than {MAX_LOOP_DEPTH}"));
        }
        self.blocks.push((Some(h), Vec::new()));
        Ok(())
    }

    fn close_block(&mut self) -> Result<(), String> {
        match self.blocks.pop() {
            Some((Some(h), body)) => {
                if let Some(Some(lp)) = self.dyn_loops.get_mut(h.index()) {
                    lp.body = body;
                }
                Ok(())
            }
            Some((None, _)) | None => Err("`}` without an open dynamic loop".into()),
        }
    }

    fn returns(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        c.expect_word_is("return")?;
        if self.outputs.is_some() {
            return Err("a second `return`".into());
        }
        self.end_body()?;
        let mut outs = Vec::new();
        loop {
            outs.push(handle::<Storage>(c.word()?)?);
            if c.at_end() {
                break;
            }
            c.expect(',')?;
        }
        self.outputs = Some(outs);
        Ok(())
    }

    fn end_body(&mut self) -> Result<(), String> {
        if self.body.is_some() {
            return Ok(());
        }
        match self.blocks.pop() {
            Some((None, body)) if self.blocks.is_empty() => {
                self.body = Some(body);
                Ok(())
            }
            Some((Some(h), _)) => Err(format!("{h} is not closed")),
            _ => Err("the text must start with a `kernel` line".into()),
        }
    }

    fn finish(mut self) -> Result<Kernel, String> {
        self.end_body()?;
        let mut kernel = self.kernel.take().ok_or("empty input: no `kernel` line")?;
        kernel.registers = dense(self.registers, "r")?;
        kernel.static_loops = dense(self.static_loops, "L")?;
        kernel.storages = dense(self.storages, "t")?;
        kernel.ops = dense(self.ops, "op")?;
        kernel.dyn_loops = dense(self.dyn_loops, "dyn")?;
        self.args.sort_by_key(|&(i, _, _)| i);
        for (expect, &(i, storage, kind)) in self.args.iter().enumerate() {
            if i != expect {
                return Err(format!("argument {expect} is missing"));
            }
            kernel.args.push(KernelArg { storage, kind });
        }
        kernel.outputs = self.outputs.unwrap_or_default();
        kernel.body = self.body.unwrap_or_default();
        for (h, loc) in self.op_locs {
            kernel.spans.ops.insert(h, loc);
        }
        for (h, loc) in self.storage_locs {
            kernel.spans.storages.insert(h, loc);
        }
        for (h, loc) in self.dyn_locs {
            kernel.spans.dyn_loops.insert(h, loc);
        }
        for (h, loc) in self.static_locs {
            kernel.spans.static_loops.insert(h, loc);
        }
        // Intern call chains as the builder does: outermost frame first.
        let mut frames: BTreeMap<(Option<Handle<CallFrame>>, SrcLoc), Handle<CallFrame>> =
            BTreeMap::new();
        for (h, chain) in self.op_chains {
            let mut parent = None;
            for &loc in chain.iter().rev() {
                let f = *frames
                    .entry((parent, loc))
                    .or_insert_with(|| kernel.spans.call_frames.append(CallFrame { loc, parent }));
                parent = Some(f);
            }
            if let Some(f) = parent {
                kernel.spans.call_chains.insert(h, f);
            }
        }
        Ok(kernel)
    }
}

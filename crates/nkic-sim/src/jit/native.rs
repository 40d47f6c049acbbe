//! The only `unsafe` of the simulator: a compiled loop as a function
//! pointer, and calls of it on raw memory.
//!
//! A `Kernel` can only be made from a function of `compile`'s module
//! whose declared signature is `signature`'s, and a call checks that the
//! first and the last element of the first and the last row of every
//! stream it touches lie inside that stream's memory, and that the
//! per-row arrays have a value for every row, before it runs the loop
//! (the loop touches only the elements `offset + r · row_step + i ·
//! stride`, `r < rows`, `i < n`, of each stream its signature uses, and
//! entries `r < rows` of the per-row arrays; `compile` generates nothing
//! else). An address that is linear in `r` and in `i` lies between its
//! values at the four corners.
#![allow(unsafe_code)]

use cranelift_codegen::ir::{AbiParam, Signature, types};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Module};

/// The machine signature of every compiled loop: the row count and the
/// element count per row, then per stream (destination, source a, source
/// b) its first element's address, the bytes between rows and the bytes
/// between elements, then the per-row `[c0, c1]` pairs, the fill bits
/// and the per-row running folds `acc`, which the loop updates.
type Entry = unsafe extern "C" fn(
    i64,
    i64,
    *mut u8,
    i64,
    i64,
    *const u8,
    i64,
    i64,
    *const u8,
    i64,
    i64,
    *const [f32; 2],
    i64,
    *mut f32,
);

/// `exp::exp_in_place` on the `len` f32 values at `buffer`, for compiled
/// loops (`compile`'s `Emit::wide_exp`).
pub(super) extern "C" fn exp_in_place(buffer: *mut f32, len: u64) {
    // SAFETY: a compiled loop passes the address of a stack slot of its
    // own frame holding `exp::CHUNK` f32 values, aligned for them, and
    // `len` at most `exp::CHUNK`; nothing else reads or writes the slot
    // during the call.
    let xs = unsafe { std::slice::from_raw_parts_mut(buffer, len as usize) };
    crate::exp::exp_in_place(xs);
}

/// Cranelift's form of `Entry` for `module`'s target.
pub(super) fn signature(module: &JITModule) -> Signature {
    let mut sig = module.make_signature();
    let ptr = module.target_config().pointer_type();
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(ptr));
    sig
}

/// A compiled loop and the element size of each stream it touches (0:
/// unused).
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    entry: Entry,
    sizes: [usize; 3],
}

impl Kernel {
    /// The finalized function `id` of `module`, which touches `sizes`
    /// bytes per element of each stream; `None` if its declared
    /// signature is not `signature(module)`.
    pub(super) fn finalized(module: &JITModule, id: FuncId, sizes: [usize; 3]) -> Option<Kernel> {
        let decl = module.declarations().get_function_decl(id);
        if decl.signature != signature(module) || module.target_config().pointer_bits() != 64 {
            return None;
        }
        let code = module.get_finalized_function(id);
        // SAFETY: `code` is the entry of a function the module has
        // finalized (compiled, relocated and made executable), declared
        // with `signature(module)`: on a 64-bit target with the host's
        // default calling convention that is exactly `Entry`. The code
        // stays valid for the rest of the process: nothing calls
        // `JITModule::free_memory`, and dropping a module (at the end of
        // its thread) leaks its code memory on purpose, so a `Kernel`
        // never outlives its code.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(code) };
        Some(Kernel { entry, sizes })
    }

    /// Runs the loop on `n` elements of each of `rows` rows of each stream
    /// (destination first), with the constants `consts[r]`, the fill bits
    /// and the running fold `accs[r]` of row `r`, which it updates.
    ///
    /// # Panics
    ///
    /// If a used stream's first or last element of its first or last row
    /// lies outside its memory, or a per-row array is shorter than `rows`:
    /// the caller resolved every stream from a bounds-checked view, so
    /// that is a broken invariant, never bad input.
    pub(crate) fn call(
        &self,
        rows: usize,
        n: usize,
        streams: &[Stream; 3],
        consts: &[[f32; 2]],
        fill: i64,
        accs: &mut [f32],
    ) {
        if n == 0 || rows == 0 {
            return;
        }
        assert!(
            consts.len() >= rows && accs.len() >= rows,
            "a native loop of {rows} rows has {} constants and {} folds",
            consts.len(),
            accs.len()
        );
        for (s, &size) in streams.iter().zip(&self.sizes) {
            if size > 0 {
                assert!(
                    s.holds(rows, n, size),
                    "a native stream leaves its memory: {} bytes, offset {}, row step {}, stride {}, {rows} rows of {n} elements of {size} bytes",
                    s.len,
                    s.offset,
                    s.row_step,
                    s.stride
                );
            }
        }
        let at = |s: &Stream| s.base.wrapping_add(s.offset.max(0) as usize);
        let [d, a, b] = streams;
        // SAFETY: the loop reads or writes `size` bytes at `at(s) + r ·
        // row_step + i · stride` for some `r < rows`, `i < n` of each
        // stream with a nonzero size and nothing else; `holds` checked
        // that the corners (`r` and `i` first or last) lie inside the
        // stream's allocation, and every other address lies between them.
        // It reads `consts[r]` and reads and writes `accs[r]` for `r <
        // rows`, which the assertion above keeps inside the slices; `accs`
        // is borrowed mutably for the call and `consts` shared. The
        // destination's base came from `Data::make_mut(..).as_mut_ptr()`
        // (`MemoryState::native_spaces`), so writing through it is
        // allowed, and no Rust reference to any simulated memory is alive
        // during the call. Sources that share the destination's memory
        // were derived from that same pointer; a source outside the
        // memories (the affine row of `iota` and `affine_select`) is only
        // read, through a pointer derived from a shared borrow that lasts
        // beyond the call.
        unsafe {
            (self.entry)(
                rows as i64,
                n as i64,
                at(d).cast_mut(),
                d.row_step,
                d.stride,
                at(a),
                a.row_step,
                a.stride,
                at(b),
                b.row_step,
                b.stride,
                consts.as_ptr(),
                fill,
                accs.as_mut_ptr(),
            );
        }
    }
}

/// The fewest elements (rows times elements per row) of a call that
/// [`Kernel::call_rows`] splits over two threads: about 0.1 ms of a
/// scalar loop, far above the cost of handing half to another worker.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// The streams of one half of a split call, sent to the worker that runs
/// it.
struct HalfStreams([Stream; 3]);

// SAFETY: the pointers of a split call's halves are only dereferenced by
// `Kernel::call` inside `rayon::join`, which returns only when both halves
// have ended; `call_rows` splits only when the halves write disjoint bytes
// and neither reads bytes the other writes (`rows_independent`), so the
// two threads never race on any byte.
unsafe impl Send for HalfStreams {}

impl Kernel {
    /// [`Kernel::call`], with the rows split into two halves that run on
    /// two threads of the pool when the call is large and its rows are
    /// independent: each row of the destination is written by its own
    /// row only, so the bytes, the per-row folds and any panic are those
    /// of one call.
    pub(crate) fn call_rows(
        &self,
        rows: usize,
        n: usize,
        streams: &[Stream; 3],
        consts: &[[f32; 2]],
        fill: i64,
        accs: &mut [f32],
    ) {
        let split = rows >= 2
            && rows.saturating_mul(n) >= PARALLEL_MIN_ELEMENTS
            && nkic_isa::threads::parallel()
            && consts.len() >= rows
            && accs.len() >= rows
            && self.rows_independent(rows, n, streams);
        if !split {
            return self.call(rows, n, streams, consts, fill, accs);
        }
        let half = rows / 2;
        let mut upper = *streams;
        for (s, &size) in upper.iter_mut().zip(&self.sizes) {
            if size > 0 {
                s.offset += half as i64 * s.row_step;
            }
        }
        let (lower, upper) = (HalfStreams(*streams), HalfStreams(upper));
        let (consts_lo, consts_hi) = consts.split_at(half);
        let (accs_lo, accs_hi) = accs.split_at_mut(half);
        rayon::join(
            move || {
                let lower = lower;
                self.call(half, n, &lower.0, consts_lo, fill, accs_lo)
            },
            move || {
                let upper = upper;
                self.call(rows - half, n, &upper.0, consts_hi, fill, accs_hi)
            },
        );
    }

    /// Whether rows of the call may run on different threads: the
    /// destination's rows are evenly spaced at least a row's span apart
    /// (so no byte is written by two rows), and a source in the
    /// destination's memory is either the destination itself, element
    /// for element, or lies wholly outside every byte the destination
    /// writes.
    fn rows_independent(&self, rows: usize, n: usize, streams: &[Stream; 3]) -> bool {
        let size = self.sizes[0];
        let d = &streams[0];
        // The bytes a row spans, from its lowest element to its highest.
        let row_span = (n as i64 - 1)
            .checked_mul(d.stride.abs())
            .and_then(|x| x.checked_add(size as i64));
        if size == 0 || row_span.is_none_or(|span| d.row_step.abs() < span) {
            return false;
        }
        let Some(written) = extent(d, rows, n, size) else {
            return false;
        };
        streams[1..]
            .iter()
            .zip(&self.sizes[1..])
            .all(|(s, &s_size)| {
                source_clear(s, s_size, d, size, [rows, n], written)
                    || rows_apart(s, s_size, d, size, [rows, n])
            })
    }
}

/// One call of a loop on `n` elements of one row (`row`) of each stream,
/// with its fill bits: a row of an instruction whose rows are not one
/// constant-stride piece each is several pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    pub row: usize,
    pub n: usize,
    pub streams: [Stream; 3],
    pub fill: i64,
}

/// The pieces of one half of a split [`Kernel::call_pieces`], sent to the
/// worker that runs them.
struct HalfPieces<'a>(&'a [Piece]);

// SAFETY: as for `HalfStreams`: the pieces' pointers are only dereferenced
// by `Kernel::call` inside `rayon::join`, which returns when both halves
// have ended, and `call_pieces` splits only when no byte one half writes
// is read or written by the other (`halves_independent`).
unsafe impl Send for HalfPieces<'_> {}

impl Kernel {
    /// Runs `pieces` (in order of their rows, a row's pieces in order)
    /// with the constants `consts[row]` and the folds `accs[row]`; when
    /// they hold many elements and the first half of the rows touches no
    /// byte the second half writes, and the other way round, each half on
    /// its own thread of the pool. A row's pieces always run in order on
    /// one thread, so bytes and folds are those of running them in order.
    pub(crate) fn call_pieces(&self, pieces: &[Piece], consts: &[[f32; 2]], accs: &mut [f32]) {
        let rows = accs.len();
        let elements: usize = pieces.iter().map(|p| p.n).sum();
        let half = rows / 2;
        let cut = pieces.partition_point(|p| p.row < half);
        let split = rows >= 2
            && elements >= PARALLEL_MIN_ELEMENTS
            && nkic_isa::threads::parallel()
            && pieces.is_sorted_by_key(|p| p.row)
            && pieces.last().is_some_and(|p| p.row < rows)
            && self.halves_independent(&pieces[..cut], &pieces[cut..]);
        if !split {
            return self.run_pieces(pieces, consts, accs, 0);
        }
        let (lower, upper) = (HalfPieces(&pieces[..cut]), HalfPieces(&pieces[cut..]));
        let (accs_lo, accs_hi) = accs.split_at_mut(half);
        rayon::join(
            move || {
                let lower = lower;
                self.run_pieces(lower.0, consts, accs_lo, 0)
            },
            move || {
                let upper = upper;
                self.run_pieces(upper.0, consts, accs_hi, half)
            },
        );
    }

    /// Runs `pieces` in order; `accs[0]` is the fold of row `first`.
    fn run_pieces(&self, pieces: &[Piece], consts: &[[f32; 2]], accs: &mut [f32], first: usize) {
        for p in pieces {
            self.call(
                1,
                p.n,
                &p.streams,
                std::slice::from_ref(&consts[p.row]),
                p.fill,
                std::slice::from_mut(&mut accs[p.row - first]),
            );
        }
    }

    /// Whether two groups of pieces may run at once: all destinations
    /// in one memory, the bytes the groups write apart, and every source
    /// in that memory either its own piece's destination, element for
    /// element, or clear of the bytes the other group writes.
    fn halves_independent(&self, a: &[Piece], b: &[Piece]) -> bool {
        let size = self.sizes[0];
        let Some(base) = a.first().map(|p| p.streams[0].base) else {
            return false;
        };
        if size == 0 || a.iter().chain(b).any(|p| p.streams[0].base != base) {
            return false;
        }
        let hull = |ps: &[Piece]| {
            ps.iter().try_fold((i64::MAX, i64::MIN), |(lo, hi), p| {
                let (l, h) = extent(&p.streams[0], 1, p.n, size)?;
                Some((lo.min(l), hi.max(h)))
            })
        };
        let (Some(ha), Some(hb)) = (hull(a), hull(b)) else {
            return false;
        };
        if !(ha.1 <= hb.0 || hb.1 <= ha.0) {
            return false;
        }
        let clear = |ps: &[Piece], written: (i64, i64)| {
            ps.iter().all(|p| {
                let d = &p.streams[0];
                p.streams[1..]
                    .iter()
                    .zip(&self.sizes[1..])
                    .all(|(s, &s_size)| source_clear(s, s_size, d, size, [1, p.n], written))
            })
        };
        clear(a, hb) && clear(b, ha)
    }
}

/// The bytes `[lo, hi)` that `rows` rows of `n` elements of `size` bytes
/// of `s` span (between its four corners), or `None` on overflow.
fn extent(s: &Stream, rows: usize, n: usize, size: usize) -> Option<(i64, i64)> {
    let down = (rows as i64 - 1).checked_mul(s.row_step)?;
    let along = (n as i64 - 1).checked_mul(s.stride)?;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for r in [0, down] {
        for i in [0, along] {
            let c = s.offset.checked_add(r)?.checked_add(i)?;
            lo = lo.min(c);
            hi = hi.max(c.checked_add(size as i64)?);
        }
    }
    Some((lo, hi))
}

/// Whether source `s` (elements of `s_size` bytes; 0: unused), read over
/// `[rows, n]` elements, may be read by one thread while another writes
/// the bytes `written` of destination `d`'s memory: it is in another
/// memory, or it is `d` itself element for element (each element is read
/// by the thread that writes it), or it lies clear of `written`.
fn source_clear(
    s: &Stream,
    s_size: usize,
    d: &Stream,
    size: usize,
    [rows, n]: [usize; 2],
    written: (i64, i64),
) -> bool {
    s_size == 0
        || s.base != d.base
        || (s_size == size
            && s.offset == d.offset
            && s.row_step == d.row_step
            && s.stride == d.stride)
        || extent(s, rows, n, s_size).is_some_and(|(l, h)| h <= written.0 || written.1 <= l)
}

/// Whether source `s` (elements of `s_size` bytes), read row by row as
/// destination `d` is written, shares no byte of any row but its own with
/// `d`: then row `p` of the source may meet row `p` of the destination
/// only, which the same thread of a split call reads and writes. Holds
/// for tiles side by side in the same partitions of an on-chip memory
/// (equal row steps), whose extents (`extent`) overlap.
fn rows_apart(s: &Stream, s_size: usize, d: &Stream, size: usize, [rows, n]: [usize; 2]) -> bool {
    if d.row_step == 0 || s.row_step != d.row_step || s_size == 0 {
        return false;
    }
    let (Some(a), Some(b)) = (extent(s, 1, n, s_size), extent(d, 1, n, size)) else {
        return false;
    };
    // Source row `p + k` meets destination row `p` exactly when
    // `k · step` lies strictly between `b.0 - a.1` and `b.1 - a.0`; with
    // `step` negative, `k · |step|` between the negated bounds.
    let step = i128::from(d.row_step);
    let (lo, hi) = (
        i128::from(b.0) - i128::from(a.1),
        i128::from(b.1) - i128::from(a.0),
    );
    let (lo, hi) = if step > 0 { (lo, hi) } else { (-hi, -lo) };
    let step = step.abs();
    let first = lo.div_euclid(step) + 1;
    let last = (hi + step - 1).div_euclid(step) - 1;
    let far = rows as i128 - 1;
    let meets = |from: i128, to: i128| first.max(from) <= last.min(to);
    !meets(1, far) && !meets(-far, -1)
}

/// One operand's elements in a call: memory start and length, the byte
/// offset of the first element, the bytes between rows and the bytes
/// between elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stream {
    pub base: *const u8,
    pub len: usize,
    pub offset: i64,
    pub row_step: i64,
    pub stride: i64,
}

impl Stream {
    /// A stream the loop does not touch.
    pub const UNUSED: Stream = Stream {
        base: std::ptr::null(),
        len: 0,
        offset: 0,
        row_step: 0,
        stride: 0,
    };

    /// Whether elements `0..n` of `size` bytes of rows `0..rows` all lie
    /// inside the memory.
    fn holds(&self, rows: usize, n: usize, size: usize) -> bool {
        let last = |count: usize, step: i64| (count as i64 - 1).checked_mul(step);
        let inside = |off: Option<i64>| {
            off.is_some_and(|off| {
                off >= 0 && (off as u64).saturating_add(size as u64) <= self.len as u64
            })
        };
        let (Some(down), Some(along)) = (last(rows, self.row_step), last(n, self.stride)) else {
            return false;
        };
        let mut corners = [0, down].into_iter().flat_map(|r| {
            [0, along]
                .into_iter()
                .map(move |i| self.offset.checked_add(r)?.checked_add(i))
        });
        !self.base.is_null() && corners.all(inside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn never(
        _: i64,
        _: i64,
        _: *mut u8,
        _: i64,
        _: i64,
        _: *const u8,
        _: i64,
        _: i64,
        _: *const u8,
        _: i64,
        _: i64,
        _: *const [f32; 2],
        _: i64,
        _: *mut f32,
    ) {
        unreachable!("the tests only ask whether rows are independent");
    }

    /// A loop writing 4-byte elements from one 4-byte source.
    fn f32_kernel() -> Kernel {
        Kernel {
            entry: never,
            sizes: [4, 4, 0],
        }
    }

    fn stream(base: &[u8], offset: i64, row_step: i64, stride: i64) -> Stream {
        Stream {
            base: base.as_ptr(),
            len: base.len(),
            offset,
            row_step,
            stride,
        }
    }

    /// Rows split only when no byte is written by two rows, and a source
    /// sharing the destination's memory is the destination itself or
    /// clear of it.
    #[test]
    fn rows_are_independent_only_when_no_row_touches_anothers_bytes() {
        let (mem, other) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
        let k = f32_kernel();
        let (rows, n) = (16, 64);
        let dst = stream(&mem, 0, 256, 4);
        let unused = Stream::UNUSED;
        let ok = |d: Stream, a: Stream| k.rows_independent(rows, n, &[d, a, unused]);
        // Another memory, the destination itself, or past its last byte.
        assert!(ok(dst, stream(&other, 0, 256, 4)));
        assert!(ok(dst, dst));
        assert!(ok(dst, stream(&mem, 16 * 256, 256, 4)));
        // Rows a row's span apart going down, and going up.
        assert!(ok(
            stream(&mem, 15 * 256, -256, 4),
            stream(&other, 0, 256, 4)
        ));
        // Rows overlapping (the same row every time, or closer than a
        // row's 256 bytes), or a source reading another row of the
        // destination, or within its extent at another stride.
        assert!(!ok(stream(&mem, 0, 0, 4), stream(&other, 0, 256, 4)));
        assert!(!ok(stream(&mem, 0, 252, 4), stream(&other, 0, 256, 4)));
        assert!(!ok(dst, stream(&mem, 256, 256, 4)));
        assert!(!ok(dst, stream(&mem, 0, 256, 8)));
        assert!(!ok(dst, stream(&mem, 16 * 256 - 4, 256, 4)));
    }

    /// Tiles side by side in the same partitions (equal row steps) split:
    /// their extents overlap, but a source row meets no destination row
    /// but its own. A source window that reaches into another row's
    /// destination bytes does not.
    #[test]
    fn tiles_side_by_side_split_by_rows() {
        let mem = vec![0u8; 1 << 16];
        let k = f32_kernel();
        let (rows, n) = (16, 64);
        let dst = stream(&mem, 0, 1024, 4);
        let ok = |d: Stream, a: Stream| k.rows_independent(rows, n, &[d, a, Stream::UNUSED]);
        assert!(ok(dst, stream(&mem, 256, 1024, 4)));
        assert!(ok(dst, stream(&mem, 1024 + 256, 1024, 4)));
        assert!(ok(dst, stream(&mem, 768, 1024, 4)));
        // Going up, from the last row.
        let up = |offset: i64| stream(&mem, 15 * 1024 + offset, -1024, 4);
        assert!(ok(up(0), up(512)));
        assert!(!ok(up(0), up(1024 + 128)));
        // The next row's destination bytes, by offset, by a window past
        // the row step, and by a row step of its own.
        assert!(!ok(dst, stream(&mem, 1024 + 128, 1024, 4)));
        assert!(!ok(dst, stream(&mem, 900, 1024, 4)));
        assert!(!ok(dst, stream(&mem, 256, 1280, 4)));
        // Only a single row: nothing to split between threads, but
        // apart by definition.
        assert!(rows_apart(&dst, 4, &dst, 4, [1, n]));
    }

    /// Two groups of pieces run at once only when neither touches a byte
    /// the other writes.
    #[test]
    fn halves_are_independent_only_when_neither_touches_the_others_writes() {
        let (mem, other) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
        let k = f32_kernel();
        let piece = |row: usize, d: Stream, a: Stream| Piece {
            row,
            n: 16,
            streams: [d, a, Stream::UNUSED],
            fill: 0,
        };
        // Rows of 64 bytes at 256 apart, reading another memory.
        let rows = |first: usize, a: &dyn Fn(usize) -> Stream| -> Vec<Piece> {
            (first..first + 4)
                .map(|r| piece(r, stream(&mem, r as i64 * 256, 0, 4), a(r)))
                .collect()
        };
        let outside = |r: usize| stream(&other, r as i64 * 256, 0, 4);
        let in_place = |r: usize| stream(&mem, r as i64 * 256, 0, 4);
        let next_row = |r: usize| stream(&mem, (r as i64 + 1) * 256, 0, 4);
        let past = |_: usize| stream(&mem, 8 * 256, 0, 4);
        for (a, ok) in [
            (&outside as &dyn Fn(usize) -> Stream, true),
            (&in_place, true),
            (&past, true),
            // Row 3 reads row 4, which the other half writes.
            (&next_row, false),
        ] {
            assert_eq!(k.halves_independent(&rows(0, a), &rows(4, a)), ok);
        }
        // Destinations that meet, or lie in two memories.
        let lower = rows(0, &outside);
        let mut upper = rows(4, &outside);
        upper[0].streams[0].offset = 3 * 256 + 60;
        assert!(!k.halves_independent(&lower, &upper));
        let mut upper = rows(4, &outside);
        upper[1].streams[0].base = other.as_ptr();
        assert!(!k.halves_independent(&lower, &upper));
    }
}

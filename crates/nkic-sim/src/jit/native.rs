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

//! The only `unsafe` of the simulator: a compiled loop as a function
//! pointer, and calls of it on raw memory.
//!
//! A `Kernel` can only be made from a function of `compile`'s module
//! whose declared signature is `signature`'s, and a call checks that the
//! first and the last element of every stream it touches lie inside that
//! stream's memory before it runs the loop (the loop touches only the
//! elements `offset + i · stride`, `i < n`, of each stream its signature
//! uses; `compile` generates nothing else).
#![allow(unsafe_code)]

use cranelift_codegen::ir::{AbiParam, Signature, types};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Module};

/// The machine signature of every compiled loop: the element count, then
/// per stream (destination, source a, source b) its first element's
/// address and the bytes between elements, then `c0`, `c1`, the fill
/// bits and the running fold `acc`; it returns `acc` after the loop.
type Entry = unsafe extern "C" fn(
    i64,
    *mut u8,
    i64,
    *const u8,
    i64,
    *const u8,
    i64,
    f32,
    f32,
    i64,
    f32,
) -> f32;

/// Cranelift's form of `Entry` for `module`'s target.
pub(super) fn signature(module: &JITModule) -> Signature {
    let mut sig = module.make_signature();
    let ptr = module.target_config().pointer_type();
    sig.params.push(AbiParam::new(types::I64));
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.params.push(AbiParam::new(types::F32));
    sig.params.push(AbiParam::new(types::F32));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::F32));
    sig.returns.push(AbiParam::new(types::F32));
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

    /// Runs the loop on `n` elements of each stream (destination first)
    /// with the constants `c0`, `c1`, the fill bits and the running fold
    /// `acc`; gives `acc` after the loop.
    ///
    /// # Panics
    ///
    /// If a used stream's first or last element lies outside its memory:
    /// the caller resolved every stream from a bounds-checked view, so
    /// that is a broken invariant, never bad input.
    pub(crate) fn call(
        &self,
        n: usize,
        streams: &[Stream; 3],
        [c0, c1]: [f32; 2],
        fill: i64,
        acc: f32,
    ) -> f32 {
        if n == 0 {
            return acc;
        }
        for (s, &size) in streams.iter().zip(&self.sizes) {
            if size > 0 {
                assert!(
                    s.holds(n, size),
                    "a native stream leaves its memory: {} bytes, offset {}, stride {}, {n} elements of {size} bytes",
                    s.len,
                    s.offset,
                    s.stride
                );
            }
        }
        let at = |s: &Stream| s.base.wrapping_add(s.offset.max(0) as usize);
        let [d, a, b] = streams;
        // SAFETY: the loop reads or writes `size` bytes at `at(s) + i ·
        // stride` for some `i < n` of each stream with a nonzero size and
        // nothing else; `holds` checked that the first and the last of
        // those lie inside the stream's allocation, and the addresses in
        // between lie between them. The destination's base came from
        // `Data::make_mut(..).as_mut_ptr()` (`MemoryState::native_spaces`),
        // so writing through it is allowed, and no Rust reference to any
        // simulated memory is alive during the call. Sources that share
        // the destination's memory were derived from that same pointer; a
        // source outside the memories (the affine row of `iota` and
        // `affine_select`) is only read, through a pointer derived from a
        // shared borrow that lasts beyond the call.
        unsafe {
            (self.entry)(
                n as i64,
                at(d).cast_mut(),
                d.stride,
                at(a),
                a.stride,
                at(b),
                b.stride,
                c0,
                c1,
                fill,
                acc,
            )
        }
    }
}

/// One operand's elements in a call: memory start and length, the byte
/// offset of the first element and the bytes between elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stream {
    pub base: *const u8,
    pub len: usize,
    pub offset: i64,
    pub stride: i64,
}

impl Stream {
    /// A stream the loop does not touch.
    pub const UNUSED: Stream = Stream {
        base: std::ptr::null(),
        len: 0,
        offset: 0,
        stride: 0,
    };

    /// Whether elements `0..n` of `size` bytes all lie inside the memory.
    fn holds(&self, n: usize, size: usize) -> bool {
        let last = (n as i64 - 1)
            .checked_mul(self.stride)
            .and_then(|d| d.checked_add(self.offset));
        let inside =
            |off: i64| off >= 0 && (off as u64).saturating_add(size as u64) <= self.len as u64;
        !self.base.is_null() && last.is_some_and(inside) && inside(self.offset)
    }
}

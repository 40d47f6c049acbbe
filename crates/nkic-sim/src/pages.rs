//! Large zero-filled buffers that Linux may back with transparent huge
//! pages. A simulated memory (an HBM tensor, an on-chip memory) or its
//! written bits are allocated zeroed and touched page by page; with 4 KiB
//! pages a 64 MiB output costs 16,384 page faults when first written and
//! as many page-table entries to tear down, with 2 MiB pages 32. This machine's
//! kernels give huge pages only to memory advised so (`madvise` mode of
//! `/sys/kernel/mm/transparent_hugepage/enabled`), hence the advice.
//!
//! Huge pages pay only where a buffer is touched densely. An on-chip
//! memory is partition-major (a partition's bytes, then the next's), so
//! one tile touches a little of every partition: 128 stretches a
//! partition stride apart, which with 2 MiB pages faults in (and clears)
//! the whole SBUF at the first tile where 4 KiB pages clear 512 KiB. Its
//! buffers are `Pages::Base`; HBM tensors, written and read along their
//! rows, are `Pages::Huge`.
//!
//! Advice changes no byte of a buffer: `MADV_HUGEPAGE` only tells the
//! kernel which page size to fault the range in with. It is the module's
//! one `unsafe` call.
#![allow(unsafe_code)]

/// Buffers from this size up are advised: below it the whole buffer is a
/// few 4 KiB faults.
const ADVISE_MIN_BYTES: usize = 4 << 20;

/// The huge page size, a multiple of every base page size (4, 16 or
/// 64 KiB), so that a range aligned to it is page-aligned too.
const HUGE_PAGE: usize = 2 << 20;

/// The page size a buffer asks for (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pages {
    /// Touched along its length: huge pages when large.
    Huge,
    /// Touched in scattered small pieces: the base page size.
    Base,
}

/// `vec![zero; n]`; with `Pages::Huge`, pages the kernel may make huge
/// (module doc): the allocator's fresh zeroed memory is advised before
/// anything touches it.
pub(crate) fn zeroed<T: Copy + Default>(n: usize, pages: Pages) -> Vec<T> {
    let v = vec![T::default(); n];
    if pages == Pages::Huge {
        advise_huge(&v);
    }
    v
}

/// Advises the whole huge pages inside `buffer` (module doc).
fn advise_huge<T>(buffer: &[T]) {
    #[cfg(target_os = "linux")]
    {
        let bytes = std::mem::size_of_val(buffer);
        if bytes < ADVISE_MIN_BYTES {
            return;
        }
        let start = buffer.as_ptr() as usize;
        let lo = start.next_multiple_of(HUGE_PAGE);
        let hi = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
        if hi > lo {
            // SAFETY: `lo..hi` lies inside `buffer`, memory this process
            // owns, and is page-aligned (HUGE_PAGE). MADV_HUGEPAGE reads
            // and writes no memory and keeps every byte's value; it only
            // sets how the kernel backs the range. Its failure (a kernel
            // without transparent huge pages) leaves the buffer as it was,
            // so the result is ignored.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Advised buffers hold what `vec!` would, small and large, at any
    /// alignment of their start.
    #[test]
    fn advised_buffers_hold_what_vec_gives() {
        for n in [0, 1, 4095, ADVISE_MIN_BYTES + 3, 3 * HUGE_PAGE + 17] {
            for pages in [Pages::Huge, Pages::Base] {
                let z: Vec<u8> = zeroed(n, pages);
                assert_eq!(z.len(), n);
                assert!(z.iter().all(|&b| b == 0));
                let w: Vec<u64> = zeroed(n / 8, pages);
                assert_eq!(w.len(), n / 8);
                assert!(w.iter().all(|&x| x == 0));
            }
        }
    }
}

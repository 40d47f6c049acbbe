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
//! kernel which page size to fault the range in with, and
//! `MADV_POPULATE_WRITE` (`populate`, for the `warm` module) faults pages
//! in as a write would, without writing. These, asking the page size and
//! lowering the warmer thread's priority are the module's `unsafe` calls.
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

/// `vec![zero; n]` for a short-lived buffer: zeros written into memory
/// the allocator may give again. jemalloc (the command's allocator) makes
/// a zeroed allocation of 16 KiB or more out of memory it reuses by
/// discarding its pages (`MADV_DONTNEED`), so every page faults in again
/// at its first write: an MX matmul's operand buffers were most of the 4
/// million page faults of a 20 s nki-library run. Writing the zeros is a
/// pass over memory that is mapped already (a fresh allocation faults its
/// pages in either way).
#[allow(clippy::slow_vector_initialization)]
pub(crate) fn zeros<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, T::default());
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

/// The base page size: what `populate` counts in.
pub(crate) fn page_bytes() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `sysconf` reads a system constant; it touches no
            // memory of the process. A failure (-1) falls back to 4 KiB.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            usize::try_from(page)
                .ok()
                .filter(|&p| p > 0)
                .unwrap_or(4096)
        }
        #[cfg(not(target_os = "linux"))]
        4096
    })
}

/// Faults in the pages of `addr .. addr + len` (page-aligned: a multiple
/// of `page_bytes` from the start of a page) as a write would, without
/// writing: the `warm` module's request, made while another thread may
/// be reading and writing the same bytes.
pub(crate) fn populate(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: MADV_POPULATE_WRITE reads and writes no byte of the
        // range: it maps each page that is not mapped yet (a zeroed page
        // for this process's anonymous memory, which a fresh page would
        // be at its first write) and leaves mapped pages as they are, so
        // no value another thread reads or writes changes, and Rust's
        // aliasing rules are not involved (no reference or access is
        // made). Should the range no longer belong to a live buffer, the
        // kernel only maps pages of this process's own memory or fails
        // with an error, which is ignored like every failure (a kernel
        // before Linux 5.14 without the advice): the page then faults in
        // at its first write as it would have anyway.
        unsafe {
            libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

/// Gives the calling thread the lowest scheduling priority (nice 19),
/// so that it runs only on a core no other thread of the process (or
/// machine) wants: the `warm` module's thread, whose work pays only when
/// it is done in otherwise idle time.
pub(crate) fn lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `setpriority` with `who` 0 sets the calling thread's
        // nice value (Linux applies PRIO_PROCESS to one thread); it reads
        // and writes no memory of the process. A failure leaves the
        // priority as it was, so the result is ignored.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        }
    }
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

//! Whether this process may hand work to rayon's global thread pool.
//!
//! A process forked from one whose pool had started (Python's
//! `multiprocessing` with the `fork` start method, `os.fork`) inherits the
//! pool's state but none of its threads: a job given to the pool there
//! waits for ever. Every parallel step of nkic (the backend's lowering
//! beside the dependency graph, the simulator's run on a pool worker, its
//! deferred matmuls' runners, its matmul bands and split native loops, the
//! driver's random inputs) asks [`parallel`] first and runs on the calling
//! thread when it says no, with the same result: none of those steps'
//! results depends on how the work is split.

use std::sync::atomic::{AtomicU32, Ordering};

/// The process that first asked (0: none yet): the one whose pool nkic
/// uses. An atomic, not a lock: a lock another thread held at the fork
/// would stay locked in the child.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// True unless this process was forked from one that had asked before
/// (and may have started the pool).
pub fn parallel() -> bool {
    let pid = std::process::id();
    match OWNER.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => true,
        Err(owner) => owner == pid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_process_to_ask_owns_the_pool() {
        assert!(parallel());
        assert!(parallel());
        // A child forked from this process sees this process's id.
        assert_eq!(OWNER.load(Ordering::Relaxed), std::process::id());
    }
}

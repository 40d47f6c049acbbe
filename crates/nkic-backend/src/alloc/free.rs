//! The free runs of a row of slots, for first-fit placement.
//!
//! [`FreeRuns`] counts, for each slot, how many placed intervals cover it,
//! and finds the lowest start of a run of free slots. It is a segment
//! tree in which a node whose whole range an interval covers counts that
//! interval itself, and every node knows the free slots at its start, at
//! its end and the longest free run inside its range (none when some
//! interval covers it all). An interval is added and removed with the
//! same bounds, so it always lands on the same nodes and no count needs
//! pushing down. Both operations and the search take `O(log n)` steps
//! (the search `O(log² n)` at worst), however many intervals are placed.

/// Cover counts over `len` slots, with the free runs they leave.
#[derive(Clone, Debug)]
pub(super) struct FreeRuns {
    /// The nodes, heap-ordered from 1 (node `i` has children `2i` and
    /// `2i + 1`); leaves past `len` are covered for good.
    nodes: Vec<Node>,
}

/// One node of [`FreeRuns`]: how many intervals cover its whole range and
/// stop here, then how far its free slots at the start of the range, at
/// its end and in its longest free run fall short of the range's size.
/// Stored as shortfalls, a node of a range nothing covers is all zeros,
/// so a new tree is a zeroed allocation the system provides untouched,
/// not a build of every node (which, with its page faults, was 15 % of
/// compiling a small kernel: every placement attempt makes a tree of the
/// whole SBUF partition).
type Node = [u32; 4];

const COVER: usize = 0;
const PREFIX: usize = 1;
const SUFFIX: usize = 2;
const BEST: usize = 3;

/// A node's free slots at the start of its range, at its end and in its
/// longest run.
#[derive(Clone, Copy)]
struct Runs {
    prefix: u32,
    suffix: u32,
    best: u32,
}

impl FreeRuns {
    /// `len` free slots.
    pub(super) fn new(len: u32) -> FreeRuns {
        let width = len.max(1).next_power_of_two();
        let mut runs = FreeRuns {
            nodes: vec![[0; 4]; 2 * width as usize],
        };
        // Slots past the end are covered for good.
        if len < width {
            runs.cover((len, width));
        }
        runs
    }

    /// The number of slots.
    fn width(&self) -> u32 {
        u32::try_from(self.nodes.len() / 2).unwrap_or(u32::MAX)
    }

    /// The runs of `node`, whose range has `size` slots.
    fn runs(&self, node: usize, size: u32) -> Runs {
        let n = &self.nodes[node];
        Runs {
            prefix: size - n[PREFIX],
            suffix: size - n[SUFFIX],
            best: size - n[BEST],
        }
    }

    /// Recomputes `node`'s runs (of a range of `size` slots) from its
    /// count and its children.
    fn pull(&mut self, node: usize, size: u32) {
        let runs = if self.nodes[node][COVER] > 0 {
            Runs {
                prefix: 0,
                suffix: 0,
                best: 0,
            }
        } else if size == 1 {
            Runs {
                prefix: 1,
                suffix: 1,
                best: 1,
            }
        } else {
            let half = size / 2;
            let (l, r) = (self.runs(2 * node, half), self.runs(2 * node + 1, half));
            let prefix = if l.prefix == half {
                half + r.prefix
            } else {
                l.prefix
            };
            let suffix = if r.suffix == half {
                half + l.suffix
            } else {
                r.suffix
            };
            Runs {
                prefix,
                suffix,
                best: l.best.max(r.best).max(l.suffix + r.prefix),
            }
        };
        let n = &mut self.nodes[node];
        n[PREFIX] = size - runs.prefix;
        n[SUFFIX] = size - runs.suffix;
        n[BEST] = size - runs.best;
    }

    /// Covers the slots `range` once more.
    pub(super) fn cover(&mut self, range: (u32, u32)) {
        self.update(1, 0, self.width(), range, true);
    }

    /// Removes one cover of `range`, which [`cover`](Self::cover) added.
    pub(super) fn uncover(&mut self, range: (u32, u32)) {
        self.update(1, 0, self.width(), range, false);
    }

    fn update(&mut self, node: usize, lo: u32, hi: u32, range: (u32, u32), add: bool) {
        if range.1 <= lo || hi <= range.0 {
            return;
        }
        if range.0 <= lo && hi <= range.1 {
            let cover = &mut self.nodes[node][COVER];
            *cover = if add { *cover + 1 } else { *cover - 1 };
        } else {
            let mid = lo + (hi - lo) / 2;
            self.update(2 * node, lo, mid, range, add);
            self.update(2 * node + 1, mid, hi, range, add);
        }
        self.pull(node, hi - lo);
    }

    /// The lowest slot `s >= from` such that the `len` slots from `s` on
    /// are free, if any (`len > 0`).
    pub(super) fn find(&self, from: u32, len: u32) -> Option<u32> {
        let mut run = 0;
        self.search(1, 0, self.width(), from, len, &mut run)
    }

    /// [`find`](Self::find) in `node`'s range `lo..hi`; `run` is the free
    /// run at or after `from` that ends at `lo`, and on `None` the one
    /// that ends at `hi`.
    fn search(
        &self,
        node: usize,
        lo: u32,
        hi: u32,
        from: u32,
        len: u32,
        run: &mut u32,
    ) -> Option<u32> {
        if hi <= from {
            return None;
        }
        if self.nodes[node][COVER] > 0 {
            *run = 0;
            return None;
        }
        let n = self.runs(node, hi - lo);
        if from <= lo {
            if *run + n.prefix >= len {
                return Some(lo - *run);
            }
            if n.best < len {
                *run = if n.prefix == hi - lo {
                    *run + n.prefix
                } else {
                    n.suffix
                };
                return None;
            }
        }
        // A run long enough starts inside this range, or `from` cuts it.
        let mid = lo + (hi - lo) / 2;
        self.search(2 * node, lo, mid, from, len, run)
            .or_else(|| self.search(2 * node + 1, mid, hi, from, len, run))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::FreeRuns;

    /// The lowest free run by counting slot by slot.
    fn naive(covered: &[u32], from: u32, len: u32) -> Option<u32> {
        (from..covered.len() as u32).find(|&s| {
            s + len <= covered.len() as u32
                && covered[s as usize..(s + len) as usize]
                    .iter()
                    .all(|&c| c == 0)
        })
    }

    #[test]
    fn finds_the_lowest_run_after_from() {
        let mut runs = FreeRuns::new(10);
        runs.cover((2, 4));
        runs.cover((6, 7));
        assert_eq!(runs.find(0, 2), Some(0));
        assert_eq!(runs.find(0, 3), Some(7));
        assert_eq!(runs.find(1, 2), Some(4));
        assert_eq!(runs.find(5, 1), Some(5));
        assert_eq!(runs.find(0, 4), None);
        runs.uncover((6, 7));
        assert_eq!(runs.find(0, 4), Some(4));
        assert_eq!(runs.find(0, 7), None);
        // Slots past `len` (the tree is 16 wide) are never free.
        assert_eq!(runs.find(9, 2), None);
        assert_eq!(runs.find(9, 1), Some(9));
    }

    proptest! {
        /// Random covers and uncovers agree with counting slot by slot.
        #[test]
        fn agrees_with_counting(
            len in 1u32..70,
            steps in proptest::collection::vec((0u32..80, 1u32..30, any::<bool>()), 0..60),
            queries in proptest::collection::vec((0u32..80, 1u32..40), 1..20),
        ) {
            let mut runs = FreeRuns::new(len);
            let mut covered = vec![0u32; len as usize];
            let mut placed: Vec<(u32, u32)> = Vec::new();
            for (start, width, remove) in steps {
                if remove && !placed.is_empty() {
                    let range = placed.remove(start as usize % placed.len());
                    runs.uncover(range);
                    for c in &mut covered[range.0 as usize..range.1 as usize] {
                        *c -= 1;
                    }
                } else {
                    let start = start % len;
                    let range = (start, (start + width).min(len));
                    runs.cover(range);
                    for c in &mut covered[range.0 as usize..range.1 as usize] {
                        *c += 1;
                    }
                    placed.push(range);
                }
                for &(from, want) in &queries {
                    prop_assert_eq!(runs.find(from, want), naive(&covered, from, want));
                }
            }
        }
    }
}

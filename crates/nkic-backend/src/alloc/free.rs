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
    len: u32,
    /// The nodes, heap-ordered from 1 (node `i` has children `2i` and
    /// `2i + 1`); leaves past `len` are covered for good.
    nodes: Vec<Node>,
}

/// One node of [`FreeRuns`].
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    /// Intervals that cover this node's whole range and stop here.
    cover: u32,
    /// Free slots at the start of the range.
    prefix: u32,
    /// Free slots at the end of the range.
    suffix: u32,
    /// The longest free run inside the range.
    best: u32,
}

impl FreeRuns {
    /// `len` free slots.
    pub(super) fn new(len: u32) -> FreeRuns {
        let width = len.max(1).next_power_of_two();
        let mut runs = FreeRuns {
            len,
            nodes: vec![Node::default(); 2 * width as usize],
        };
        runs.build(1, 0, width);
        runs
    }

    /// The number of slots.
    fn width(&self) -> u32 {
        u32::try_from(self.nodes.len() / 2).unwrap_or(u32::MAX)
    }

    fn build(&mut self, node: usize, lo: u32, hi: u32) {
        if hi - lo == 1 {
            // Slots past the end are covered for good.
            self.nodes[node].cover = u32::from(lo >= self.len);
        } else {
            let mid = lo + (hi - lo) / 2;
            self.build(2 * node, lo, mid);
            self.build(2 * node + 1, mid, hi);
        }
        self.pull(node, hi - lo);
    }

    /// Recomputes `node`'s runs (of a range of `size` slots) from its
    /// count and its children.
    fn pull(&mut self, node: usize, size: u32) {
        let runs = if self.nodes[node].cover > 0 {
            (0, 0, 0)
        } else if size == 1 {
            (1, 1, 1)
        } else {
            let (l, r) = (self.nodes[2 * node], self.nodes[2 * node + 1]);
            let half = size / 2;
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
            (prefix, suffix, l.best.max(r.best).max(l.suffix + r.prefix))
        };
        let n = &mut self.nodes[node];
        (n.prefix, n.suffix, n.best) = runs;
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
            let n = &mut self.nodes[node];
            n.cover = if add { n.cover + 1 } else { n.cover - 1 };
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
        let n = self.nodes[node];
        if hi <= from {
            return None;
        }
        if n.cover > 0 {
            *run = 0;
            return None;
        }
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

//! Half-open intervals `[start, end)` kept sorted: joining, meeting and
//! intersecting.
//! The IR's footprints, the backend's dependency graph and allocator and
//! the simulator's race detector all describe bytes this way.

/// Joins intervals that overlap or touch, from a list sorted by start;
/// the result is sorted and disjoint, with no spare capacity: callers keep
/// it (a footprint's thousands of runs often join into one, and each
/// access of a dependency graph or race log would otherwise hold room for
/// all of them).
pub fn join_sorted<T: Ord + Copy>(sorted: impl IntoIterator<Item = (T, T)>) -> Vec<(T, T)> {
    let mut joined: Vec<(T, T)> = sorted.into_iter().collect();
    join_in_place(&mut joined);
    joined.shrink_to_fit();
    joined
}

/// [`join_sorted`] into `joined` (cleared first), reusing its allocation.
pub fn join_sorted_into<T: Ord + Copy>(
    sorted: impl IntoIterator<Item = (T, T)>,
    joined: &mut Vec<(T, T)>,
) {
    joined.clear();
    joined.extend(sorted);
    join_in_place(joined);
}

/// Joins the intervals of `sorted` (sorted by start) that overlap or
/// touch, in place: [`join_sorted`] without a second list.
pub fn join_in_place<T: Ord + Copy>(sorted: &mut Vec<(T, T)>) {
    sorted.dedup_by(|next, kept| {
        let joins = next.0 <= kept.1;
        if joins {
            kept.1 = kept.1.max(next.1);
        }
        joins
    });
}

/// True when two intervals share a point.
pub fn overlap<T: Ord>(a: (T, T), b: (T, T)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// True when two sorted lists of disjoint intervals share a point.
pub fn meet<T: Ord + Copy>(a: &[(T, T)], b: &[(T, T)]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if overlap(a[i], b[j]) {
            return true;
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    false
}

/// The points two sorted lists of disjoint intervals share, as a sorted
/// list of disjoint (nonempty) intervals; `meet` is whether it is nonempty.
pub fn intersect<T: Ord + Copy>(a: &[(T, T)], b: &[(T, T)]) -> Vec<(T, T)> {
    let mut both = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (lo, hi) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if lo < hi {
            both.push((lo, hi));
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    both
}

#[cfg(test)]
mod tests {
    use super::{intersect, join_in_place, join_sorted, join_sorted_into, meet, overlap};

    #[test]
    fn intersections_keep_the_shared_points() {
        let a = [(0, 4), (10, 12)];
        assert_eq!(intersect(&a, &[(3, 11)]), [(3, 4), (10, 11)]);
        assert_eq!(intersect(&a, &[(4, 10)]), []);
        assert_eq!(
            intersect(&a, &[(0, 2), (2, 4), (11, 20)]),
            [(0, 2), (2, 4), (11, 12)]
        );
        assert_eq!(intersect::<i64>(&a, &[]), []);
        for b in [[(3, 5)], [(4, 10)], [(12, 13)]] {
            assert_eq!(!intersect(&a, &b).is_empty(), meet(&a, &b));
        }
    }

    #[test]
    fn joins_overlapping_and_touching_intervals() {
        let joined = join_sorted([(0, 4), (2, 3), (4, 6), (8, 9), (9, 9), (10, 12)]);
        assert_eq!(joined, [(0, 6), (8, 9), (10, 12)]);
        assert_eq!(join_sorted::<i64>([]), []);
        let mut into = vec![(50, 60)];
        join_sorted_into([(1, 3), (3, 5), (7, 8)], &mut into);
        assert_eq!(into, [(1, 5), (7, 8)]);
        let mut in_place = vec![(0, 10), (1, 2), (3, 11), (11, 12), (13, 14)];
        join_in_place(&mut in_place);
        assert_eq!(in_place, [(0, 12), (13, 14)]);
    }

    #[test]
    fn intervals_meet_only_when_they_share_a_point() {
        let a = [(0, 4), (10, 12)];
        assert!(meet(&a, &[(3, 5)]));
        assert!(meet(&a, &[(5, 6), (11, 20)]));
        assert!(!meet(&a, &[(4, 10)]));
        assert!(!meet(&a, &[(12, 13)]));
        assert!(!meet(&a, &[]));
        assert!(overlap((0, 4), (3, 5)) && overlap((3, 5), (0, 4)));
        assert!(!overlap((0, 4), (4, 5)) && !overlap((4, 5), (0, 4)));
    }
}

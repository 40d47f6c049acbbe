//! Arenas, typed handles and secondary maps: the storage scheme of the IR.
//!
//! Every IR entity (storage, op, register, loop) lives in an [`Arena`] owned
//! by the [`Kernel`](crate::Kernel) and is named by a [`Handle`], a 4-byte
//! index whose type says which arena it points into. A handle stores
//! `index + 1` in a `NonZeroU32`, so `Option<Handle<T>>` is also 4 bytes and
//! the index `u32::MAX` can never be used ("non-max").
//!
//! Analysis results and source locations are kept out of the entities, in
//! [`SecondaryMap`]s keyed by handle (naga and Cranelift do the same), so
//! comparing or rewriting IR never has to look at spans.
//!
//! Each entity type names the prefix its handles print with through
//! [`Entity::PREFIX`] (`t3`, `op7`, `r2`, `L0`, `dyn1`).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroU32;

/// An IR entity type that lives in an arena and prints with a fixed prefix.
pub trait Entity {
    /// The prefix of a handle's text form (`t` for storages, `op` for ops).
    const PREFIX: &'static str;
}

/// A typed index into an [`Arena<T>`].
pub struct Handle<T> {
    /// `index + 1`.
    raw: NonZeroU32,
    marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    /// The handle of arena slot `index`; `None` for `u32::MAX` and beyond,
    /// which no arena can hold.
    pub fn from_index(index: usize) -> Option<Handle<T>> {
        let plus_one = u32::try_from(index).ok()?.checked_add(1)?;
        NonZeroU32::new(plus_one).map(|raw| Handle {
            raw,
            marker: PhantomData,
        })
    }

    /// The arena slot this handle names.
    pub fn index(self) -> usize {
        (self.raw.get() - 1) as usize
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<T> Eq for Handle<T> {}

impl<T> PartialOrd for Handle<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Handle<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.raw.cmp(&other.raw)
    }
}

impl<T> Hash for Handle<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

impl<T: Entity> fmt::Display for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", T::PREFIX, self.index())
    }
}

impl<T: Entity> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Entities per chunk of an arena's storage. An arena keeps its entities
/// in chunks that never move once full: appending to a large arena copies
/// nothing, where a `Vec` doubling its buffer moved every entity into fresh
/// pages at each step (for nki-library's depthwise conv1d with k = 4093,
/// 563k ops of 512 bytes, 13 % of its specialization). The first chunk
/// grows as a `Vec` does, so a small kernel's arenas stay small.
const CHUNK: usize = 1 << 12;

/// A growable vector of `T` addressed by [`Handle<T>`].
///
/// Entities are only ever appended; a handle stays valid for the arena's
/// lifetime. Indexing with a handle from another arena of the same type is
/// a logic error the verifier catches as "handle out of range" when the
/// index is too large.
#[derive(Clone, PartialEq)]
pub struct Arena<T> {
    /// The entities in order, [`CHUNK`] per chunk (the last may hold
    /// fewer); entity `i` is `chunks[i / CHUNK][i % CHUNK]`.
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Arena<T> {
    /// An empty arena.
    pub fn new() -> Arena<T> {
        Arena::default()
    }

    /// Appends `value` and returns its handle.
    ///
    /// # Panics
    ///
    /// When the arena already holds `u32::MAX` entities; no kernel comes
    /// near that, and the specializer's unrolling limits stop far earlier.
    pub fn append(&mut self, value: T) -> Handle<T> {
        let handle = match Handle::from_index(self.len) {
            Some(h) => h,
            None => panic!("arena overflow: more than u32::MAX - 1 entities"),
        };
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(value),
            Some(_) => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
            None => self.chunks.push(vec![value]),
        }
        self.len += 1;
        handle
    }

    /// The entity `handle` names, if it is in range.
    pub fn try_get(&self, handle: Handle<T>) -> Option<&T> {
        let i = handle.index();
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    /// The entity `handle` names, mutably, if it is in range.
    pub fn try_get_mut(&mut self, handle: Handle<T>) -> Option<&mut T> {
        let i = handle.index();
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    /// True when `handle` points into this arena.
    pub fn contains(&self, handle: Handle<T>) -> bool {
        handle.index() < self.len
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All entities with their handles, in creation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Handle<T>, &T)> + '_ {
        (0..self.len).map(|i| {
            // Every stored index is below the `u32::MAX - 1` bound that
            // `append` enforced, so `from_index` cannot fail here.
            let h = Handle::from_index(i).unwrap_or_else(|| unreachable!("arena index {i}"));
            (h, &self.chunks[i / CHUNK][i % CHUNK])
        })
    }

    /// All handles, in creation order.
    pub fn handles(&self) -> impl ExactSizeIterator<Item = Handle<T>> + '_ {
        self.iter().map(|(h, _)| h)
    }
}

impl<T> std::ops::Index<Handle<T>> for Arena<T> {
    type Output = T;

    /// Indexes the arena. After the verifier has accepted a kernel, every
    /// handle stored in it is in range, so this cannot panic on verified IR.
    fn index(&self, handle: Handle<T>) -> &T {
        let i = handle.index();
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, handle: Handle<T>) -> &mut T {
        let i = handle.index();
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T: fmt::Debug + Entity> fmt::Debug for Arena<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A side table from handles of `K` to values `V`, dense by index.
///
/// Missing entries read as `None`. Iteration is in handle order, so output
/// built from a secondary map is deterministic.
#[derive(Clone, PartialEq)]
pub struct SecondaryMap<K, V> {
    data: Vec<Option<V>>,
    marker: PhantomData<fn() -> K>,
}

impl<K, V> Default for SecondaryMap<K, V> {
    fn default() -> Self {
        SecondaryMap {
            data: Vec::new(),
            marker: PhantomData,
        }
    }
}

impl<K, V> SecondaryMap<K, V> {
    pub fn new() -> SecondaryMap<K, V> {
        SecondaryMap::default()
    }

    /// Sets the entry of `key`, returning the previous value.
    pub fn insert(&mut self, key: Handle<K>, value: V) -> Option<V> {
        let i = key.index();
        if i >= self.data.len() {
            self.data.resize_with(i + 1, || None);
        }
        self.data[i].replace(value)
    }

    pub fn get(&self, key: Handle<K>) -> Option<&V> {
        self.data.get(key.index()).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, key: Handle<K>) -> Option<&mut V> {
        self.data.get_mut(key.index()).and_then(Option::as_mut)
    }

    pub fn remove(&mut self, key: Handle<K>) -> Option<V> {
        self.data.get_mut(key.index()).and_then(Option::take)
    }

    /// The present entries in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (Handle<K>, &V)> + '_ {
        self.data.iter().enumerate().filter_map(|(i, v)| {
            let v = v.as_ref()?;
            Handle::from_index(i).map(|h| (h, v))
        })
    }

    /// One past the largest index that may hold an entry.
    pub fn capacity_len(&self) -> usize {
        self.data.len()
    }
}

impl<K: Entity, V: fmt::Debug> fmt::Debug for SecondaryMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing;
    impl Entity for Thing {
        const PREFIX: &'static str = "x";
    }

    /// Entities past the first chunks are where their handles say, in
    /// order, and the first chunk only grows as far as it is filled.
    #[test]
    fn chunks_keep_every_entity_in_place() {
        let mut arena: Arena<usize> = Arena::new();
        let n = 2 * CHUNK + 3;
        let handles: Vec<Handle<usize>> = (0..n).map(|i| arena.append(i * 7)).collect();
        assert_eq!(arena.len(), n);
        assert_eq!(arena.chunks.len(), 3);
        for (i, &h) in handles.iter().enumerate() {
            assert_eq!(h.index(), i);
            assert_eq!(arena[h], i * 7);
            assert!(arena.contains(h));
        }
        let order: Vec<usize> = arena.iter().map(|(h, &v)| v / 7 + h.index()).collect();
        assert_eq!(order, (0..n).map(|i| 2 * i).collect::<Vec<_>>());
        assert_eq!(arena.iter().len(), n);
        arena[handles[CHUNK]] = 1;
        assert_eq!(arena.try_get(handles[CHUNK]), Some(&1));
        let past = Handle::<usize>::from_index(n).expect("a small index");
        assert!(!arena.contains(past));
        assert_eq!(arena.try_get(past), None);
        assert_eq!(arena.try_get_mut(past), None);
        let mut small: Arena<usize> = Arena::new();
        small.append(1);
        assert!(small.chunks[0].capacity() < CHUNK);
    }

    #[test]
    fn handles_are_small_and_print_with_prefix() {
        assert_eq!(std::mem::size_of::<Option<Handle<Thing>>>(), 4);
        let mut arena = Arena::new();
        let a = arena.append(Thing);
        let b = arena.append(Thing);
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(b.to_string(), "x1");
        assert!(arena.contains(b));
        assert!(!arena.contains(Handle::from_index(2).unwrap()));
        assert_eq!(Handle::<Thing>::from_index(u32::MAX as usize), None);
        assert!(Handle::<Thing>::from_index(u32::MAX as usize - 1).is_some());
    }

    #[test]
    fn secondary_map_is_sparse_and_ordered() {
        let h = |i| Handle::<Thing>::from_index(i).unwrap();
        let mut map = SecondaryMap::new();
        assert_eq!(map.insert(h(5), "five"), None);
        assert_eq!(map.insert(h(1), "one"), None);
        assert_eq!(map.insert(h(1), "uno"), Some("one"));
        assert_eq!(map.get(h(3)), None);
        assert_eq!(map.get(h(9)), None);
        let entries: Vec<_> = map.iter().map(|(k, v)| (k.index(), *v)).collect();
        assert_eq!(entries, vec![(1, "uno"), (5, "five")]);
        assert_eq!(map.remove(h(5)), Some("five"));
        assert_eq!(map.iter().count(), 1);
    }
}

//! A fast hash for the compiler's and the simulator's own maps.
//!
//! The multiply-rotate of rustc's `FxHasher`, eight bytes per step: for
//! short keys (variable names, small tuples of numbers) it costs a few
//! instructions where the standard library's SipHash, built to resist
//! keys chosen by an attacker, costs tens. The maps that use it hold keys
//! nkic makes itself and are never iterated into an output unsorted, so
//! neither the attack resistance nor the hash order matters.

use std::hash::BuildHasherDefault;

/// The hasher (module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher(u64);

/// What a `HashMap` or `HashSet` takes to hash with [`FastHasher`].
pub type FastBuild = BuildHasherDefault<FastHasher>;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // The table takes its bucket from the low bits: bring the well
        // mixed high bits of the last multiply down.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.add(u64::from_le_bytes(word));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hash};

    use super::FastBuild;

    fn hash<T: Hash>(x: &T) -> u64 {
        FastBuild::default().hash_one(x)
    }

    /// Equal keys hash alike, and keys that differ in one field or one
    /// byte hash apart (the property the maps rely on for speed only).
    #[test]
    fn equal_keys_hash_alike_and_near_keys_apart() {
        assert_eq!(hash(&"tile"), hash(&String::from("tile")));
        assert_ne!(hash(&"tile"), hash(&"tilf"));
        assert_ne!(
            hash(&"a_long_variable_name_1"),
            hash(&"a_long_variable_name_2")
        );
        assert_eq!(
            hash(&(3u8, (1usize, 2usize), 7i64)),
            hash(&(3u8, (1usize, 2usize), 7i64))
        );
        assert_ne!(
            hash(&(3u8, (1usize, 2usize))),
            hash(&(3u8, (2usize, 1usize)))
        );
        assert_ne!(hash(&5u64), hash(&6u64));
    }
}

//! SplitMix64: the small deterministic generator the layers above draw
//! from (the backend's schedule search, the driver's random inputs, the
//! tests' data), written once so equal seeds give equal sequences.

/// A SplitMix64 generator; the field is its state, the seed to start.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

/// What every draw adds to the state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The generator `n` draws on, in one step: the state only counts
    /// draws, so chunks of one sequence can be drawn independently.
    pub fn skipped(&self, n: u64) -> SplitMix64 {
        SplitMix64(self.0.wrapping_add(n.wrapping_mul(GAMMA)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64() {
        // The first outputs for seed 0 of the reference implementation.
        let mut g = SplitMix64(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn skipping_n_draws_is_drawing_them() {
        for n in [0u64, 1, 2, 1000, 65_537] {
            let mut drawn = SplitMix64(0x1234);
            for _ in 0..n {
                drawn.next_u64();
            }
            let mut skipped = SplitMix64(0x1234).skipped(n);
            assert_eq!(skipped.next_u64(), drawn.next_u64(), "{n}");
        }
    }
}

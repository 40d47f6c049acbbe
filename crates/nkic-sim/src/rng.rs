//! The engines' random number generators: one XORWOW generator per lane,
//! seeded through SplitMix64, exactly as docs/isa.md §6.5 defines them.
//! The streams are deterministic and are not the hardware's.

/// One lane's XORWOW state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Xorwow {
    x: [u32; 5],
    d: u32,
}

impl Xorwow {
    /// The state of lane `lane` seeded with `seed`.
    pub fn seeded(seed: u32, lane: u32) -> Xorwow {
        let mut z = (u64::from(seed) << 32) | u64::from(lane);
        let mut word = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut t = z;
            t = (t ^ (t >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            t = (t ^ (t >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (t ^ (t >> 31)) as u32
        };
        let mut x = [word(), word(), word(), word(), word()];
        let d = word();
        if x.iter().all(|&w| w == 0) {
            x[0] = 1;
        }
        Xorwow { x, d }
    }

    /// The next 32-bit value.
    pub fn next(&mut self) -> u32 {
        let mut t = self.x[4];
        let s = self.x[0];
        self.x[4] = self.x[3];
        self.x[3] = self.x[2];
        self.x[2] = self.x[1];
        self.x[1] = s;
        t ^= t >> 2;
        t ^= t << 1;
        t ^= s ^ (s << 4);
        self.x[0] = t;
        self.d = self.d.wrapping_add(362_437);
        t.wrapping_add(self.d)
    }

    /// A uniform value in `[0, 1)`: the top 24 bits of the next value times
    /// 2^-24 (exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 8) as f32 * (1.0 / 16_777_216.0)
    }
}

/// `lanes` generators seeded with `seed`.
pub(crate) fn lanes(seed: u32, lanes: usize) -> Vec<Xorwow> {
    (0..lanes).map(|l| Xorwow::seeded(seed, l as u32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeding_follows_splitmix64() {
        // SplitMix64 from state 0: the first output is 0xe220a8397b1dcdaf,
        // whose low 32 bits are x0 of lane 0 with seed 0.
        let g = Xorwow::seeded(0, 0);
        assert_eq!(g.x[0], 0x7b1d_cdaf);
        // Lanes differ.
        assert_ne!(Xorwow::seeded(0, 1), g);
    }

    #[test]
    fn one_draw_by_hand() {
        let mut g = Xorwow {
            x: [1, 2, 3, 4, 5],
            d: 0,
        };
        // t = 5: t ^= 1 → 4; t ^= 8 → 12; s = 1: t ^= 1 ^ 16 → 29; d = 362437.
        assert_eq!(g.next(), 29 + 362_437);
        assert_eq!(g.x, [29, 1, 2, 3, 4]);
    }
}

//! Seeded, named random streams. Every purpose (arrivals, sizes, pairs, routing …)
//! draws from its own Xoshiro256++ stream derived from the run seed and the stream
//! name, so adding a draw in one place never shifts the numbers seen by another.

use rand::{Rng, SeedableRng};
pub use rand_xoshiro::Xoshiro256PlusPlus as SimRng;

/// A source of uniform choices: `pick(n)` returns a value in `0..n` (n > 0).
/// Tests of pure algorithms script their choices with one.
pub trait Picker {
    fn pick(&mut self, n: usize) -> usize;
}

impl Picker for SimRng {
    /// `random_range(0..n)`: the same values from the same draws (rand 0.9's
    /// biased Canon method on u32 for n ≤ 2^32, its default), inlined here
    /// because request/grant draws millions per run and the generic call
    /// path costs as much as the generator itself. Other n go to rand.
    #[inline]
    fn pick(&mut self, n: usize) -> usize {
        use rand::RngCore;
        if n == 0 || n > u32::MAX as usize {
            return self.random_range(0..n);
        }
        let range = n as u32;
        let wide = |x: u32| -> (u32, u32) {
            let p = x as u64 * range as u64;
            ((p >> 32) as u32, p as u32)
        };
        let (mut hi, lo) = wide(self.next_u32());
        if lo > range.wrapping_neg() {
            // Rare (probability < n / 2^32): rand's second draw, carrying
            // into the result on overflow.
            let (hi2, _) = wide(self.next_u32());
            hi += lo.checked_add(hi2).is_none() as u32;
        }
        hi as usize
    }
}

/// Fisher–Yates shuffle driven by a [`Picker`].
pub fn shuffle<T, P: Picker>(v: &mut [T], p: &mut P) {
    for i in (1..v.len()).rev() {
        let j = p.pick(i + 1);
        v.swap(i, j);
    }
}

/// Derives independent generators from one run seed.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }

    /// The generator for `name`; the same (seed, name) always gives the same stream.
    pub fn stream(&self, name: &str) -> SimRng {
        // FNV-1a of the name, mixed with the seed; seed_from_u64 then runs SplitMix64.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.as_bytes() {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        SimRng::seed_from_u64(h ^ self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

impl RngStreams {
    /// An independent family of streams for `name` (a second workload
    /// stream's own arrivals, sizes and pairs).
    pub fn derived(&self, name: &str) -> RngStreams {
        use rand::RngCore;
        RngStreams::new(self.stream(name).next_u64())
    }
}

/// A uniform draw in (0, 1]: never zero, so it is safe under `ln` and negative powers.
pub fn open_unit(rng: &mut SimRng) -> f64 {
    use rand::Rng;
    1.0 - rng.random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_name_same_stream_different_name_different_stream() {
        let draws = |mut r: SimRng| -> Vec<u64> { (0..4).map(|_| r.random()).collect() };
        let s = RngStreams::new(7);
        let a = draws(s.stream("x"));
        let b = draws(s.stream("x"));
        let c = draws(s.stream("y"));
        let d = draws(RngStreams::new(8).stream("x"));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    /// `pick` against rand's `random_range` as the oracle: the same values
    /// and the generator left in the same state, including ranges where
    /// rand's second draw is common (n near 2^32) and n = 2^32 itself.
    #[test]
    fn pick_draws_exactly_what_random_range_draws() {
        let mut ns: Vec<usize> = (1..300).collect();
        ns.extend([
            1 << 20,
            (1 << 31) + 1,
            3 << 30,
            u32::MAX as usize - 1,
            u32::MAX as usize,
            1 << 32,
            (1 << 32) + 7,
        ]);
        let mut a = RngStreams::new(3).stream("pick");
        let mut b = a.clone();
        for &n in &ns {
            for _ in 0..2_000 {
                assert_eq!(a.pick(n), b.random_range(0..n), "n = {n}");
            }
        }
        assert_eq!(a.random::<u64>(), b.random::<u64>());
    }

    #[test]
    fn open_unit_is_in_half_open_interval() {
        let mut r = RngStreams::new(1).stream("u");
        for _ in 0..100_000 {
            let u = open_unit(&mut r);
            assert!(u > 0.0 && u <= 1.0);
        }
    }
}

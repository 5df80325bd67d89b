//! In-order application delivery with duplicates removed.
//!
//! A flow's data is numbered in units (cells or packets) `0..n`. Multi-path
//! fabrics (Sirius's two-hop paths, packet spraying) deliver units out of order
//! and retransmitting fabrics deliver some twice. A [`ReorderBuffer`] per flow
//! turns arrivals into what the application sees: each unit released exactly
//! once, in order, with how many units had to wait (reordering cost) and how
//! many arrivals were duplicates (so nothing is double-counted).
//!
//! # Costs
//! The common case — the next expected unit arrives and nothing is held — is a
//! compare and an increment: O(1), no allocation. Units that arrive early are
//! marked in a bitmap window (a ring of `u64` words starting at the word of
//! [`next_expected`](ReorderBuffer::next_expected)). A bitmap rather than a
//! sorted `Vec` or a heap because it answers "already held?" in O(1) (a heap
//! cannot, and duplicates must be recognised on arrival), inserts in O(1)
//! wherever the unit lands, and releases a run of `k` units in O(k/64 + 1)
//! with `trailing_ones`. Memory is one bit per unit of *span* (highest held
//! sequence minus `next_expected`), not per held unit: n/8 bytes at worst
//! for an n-unit flow, and the window's capacity is kept and reused.
//!
//! [`unit_count`] and [`unit_bytes`] split a flow of uneven size into units.

use std::collections::VecDeque;

/// What an arrival means to the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receipt {
    /// The unit was the next expected: it and `released - 1` units held
    /// behind it are now delivered, in order.
    InOrder { released: u32 },
    /// Arrived ahead of a gap: held until the gap fills.
    Early,
    /// Already received (released or held): drop it.
    Duplicate,
}

/// Per-flow reorder buffer over unit sequence numbers `0..n`.
#[derive(Clone, Debug, Default)]
pub struct ReorderBuffer {
    next: u32,
    held: u32,
    peak_held: u32,
    early: u64,
    duplicates: u64,
    /// Bit `s % 64` of word `s / 64 - base` is set if unit `s` is held.
    /// Empty whenever `held == 0`.
    window: VecDeque<u64>,
    base: u32,
}

impl ReorderBuffer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the arrival of unit `seq`.
    pub fn receive(&mut self, seq: u32) -> Receipt {
        if seq == self.next && self.held == 0 {
            self.next += 1;
            return Receipt::InOrder { released: 1 };
        }
        if seq < self.next {
            self.duplicates += 1;
            return Receipt::Duplicate;
        }
        if self.held == 0 {
            self.window.clear();
            self.base = self.next / 64;
        }
        if seq == self.next {
            // Release seq and the run of held units behind it.
            let start = self.next;
            self.next += 1;
            loop {
                let w = (self.next / 64 - self.base) as usize;
                let Some(&word) = self.window.get(w) else {
                    break;
                };
                let run = (word >> (self.next % 64)).trailing_ones();
                self.next += run;
                if run == 0 || !self.next.is_multiple_of(64) {
                    break;
                }
            }
            let released = self.next - start;
            self.held -= released - 1;
            if self.held == 0 {
                self.window.clear();
            } else {
                while self.base < self.next / 64 {
                    self.window.pop_front();
                    self.base += 1;
                }
            }
            return Receipt::InOrder { released };
        }
        let w = (seq / 64 - self.base) as usize;
        if w >= self.window.len() {
            self.window.resize(w + 1, 0);
        }
        let bit = 1u64 << (seq % 64);
        if self.window[w] & bit != 0 {
            self.duplicates += 1;
            return Receipt::Duplicate;
        }
        self.window[w] |= bit;
        self.held += 1;
        self.early += 1;
        self.peak_held = self.peak_held.max(self.held);
        Receipt::Early
    }

    /// The lowest unit not yet released (= units released so far).
    pub fn next_expected(&self) -> u32 {
        self.next
    }
    /// Units received early and not yet released.
    pub fn held(&self) -> u32 {
        self.held
    }
    /// Most units held at once.
    pub fn peak_held(&self) -> u32 {
        self.peak_held
    }
    /// Arrivals that were held (out of order).
    pub fn early(&self) -> u64 {
        self.early
    }
    /// Arrivals dropped as duplicates.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
    /// Distinct units received (released or held).
    pub fn received(&self) -> u32 {
        self.next + self.held
    }
    /// Whether unit `seq` has been received (released or held).
    pub fn holds(&self, seq: u32) -> bool {
        if seq < self.next {
            return true;
        }
        if self.held == 0 || seq / 64 < self.base {
            return false;
        }
        self.window
            .get((seq / 64 - self.base) as usize)
            .is_some_and(|w| w >> (seq % 64) & 1 != 0)
    }
    /// Have all of units `0..total` been released?
    pub fn is_complete(&self, total: u32) -> bool {
        self.next >= total
    }
}

/// Units of `unit` bytes needed for `total_bytes` (the last may be short).
pub fn unit_count(total_bytes: u64, unit: u64) -> u32 {
    u32::try_from(total_bytes.div_ceil(unit)).expect("more than 2^32 units")
}

/// Bytes in unit `seq` of a `total_bytes` flow cut into `unit`-byte units.
pub fn unit_bytes(seq: u32, total_bytes: u64, unit: u64) -> u64 {
    unit.min(total_bytes - seq as u64 * unit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn holds_then_releases_a_run() {
        let mut r = ReorderBuffer::new();
        assert_eq!(r.receive(0), Receipt::InOrder { released: 1 });
        assert_eq!(r.receive(2), Receipt::Early);
        assert_eq!(r.receive(3), Receipt::Early);
        assert_eq!(r.receive(3), Receipt::Duplicate);
        assert_eq!(r.receive(0), Receipt::Duplicate);
        assert_eq!((r.held(), r.next_expected()), (2, 1));
        assert_eq!(r.receive(1), Receipt::InOrder { released: 3 });
        assert_eq!(
            (r.held(), r.peak_held(), r.duplicates(), r.early()),
            (0, 2, 2, 2)
        );
        assert!(r.is_complete(4) && !r.is_complete(5));
    }

    #[test]
    fn runs_cross_word_boundaries() {
        let mut r = ReorderBuffer::new();
        for s in (1..300).rev() {
            assert_eq!(r.receive(s), Receipt::Early);
        }
        assert_eq!(r.receive(0), Receipt::InOrder { released: 300 });
        assert_eq!((r.held(), r.peak_held(), r.received()), (0, 299, 300));
        assert!(r.window.is_empty());
    }

    #[test]
    fn unit_sizes_cover_the_flow() {
        assert_eq!((unit_count(1000, 562), unit_bytes(1, 1000, 562)), (2, 438));
        assert_eq!((unit_count(1124, 562), unit_bytes(1, 1124, 562)), (2, 562));
        let total: u64 = (0..unit_count(12_345, 100))
            .map(|s| unit_bytes(s, 12_345, 100))
            .sum();
        assert_eq!(total, 12_345);
    }

    proptest! {
        /// Any permutation of 0..n with duplicates mixed in: each unit is
        /// released exactly once and in order, and held/peak/duplicates match
        /// a brute-force oracle that keeps the set of units received.
        #[test]
        fn releases_each_unit_once_in_order(
            (perm, dups) in (1u32..400).prop_flat_map(|n| (
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                prop::collection::vec((0..n, any::<prop::sample::Index>()), 0..100),
            ))
        ) {
            let n = perm.len() as u32;
            let mut arrivals = perm;
            for (seq, at) in &dups {
                // A duplicate arrives at or after the original; a retransmission
                // may also beat it, so insert anywhere.
                arrivals.insert(at.index(arrivals.len() + 1), *seq);
            }
            let mut r = ReorderBuffer::new();
            let mut seen = BTreeSet::new();
            let (mut next, mut peak, mut dup, mut total) = (0u32, 0u32, 0u64, 0u32);
            for seq in arrivals {
                let before = r.next_expected();
                let got = r.receive(seq);
                let want = if !seen.insert(seq) {
                    dup += 1;
                    Receipt::Duplicate
                } else if seq == next {
                    while seen.contains(&next) {
                        next += 1;
                    }
                    Receipt::InOrder { released: next - seq }
                } else {
                    Receipt::Early
                };
                prop_assert_eq!(got, want);
                if let Receipt::InOrder { released } = got {
                    // The release starts at the arriving unit: before..before+released.
                    prop_assert_eq!(before, seq);
                    total += released;
                }
                let held = seen.len() as u32 - next;
                peak = peak.max(held);
                prop_assert_eq!((r.next_expected(), r.held()), (next, held));
                prop_assert_eq!(r.received(), seen.len() as u32);
            }
            prop_assert_eq!(total, n);
            prop_assert!(r.is_complete(n));
            prop_assert_eq!((r.peak_held(), r.duplicates(), r.held()), (peak, dup, 0));
            prop_assert_eq!(r.duplicates(), dups.len() as u64);
        }
    }
}

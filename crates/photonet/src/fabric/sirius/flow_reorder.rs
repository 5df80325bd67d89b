//! In-order delivery for every flow of a Sirius fabric: a small window kept
//! inline per flow, and a [`ReorderBuffer`] only while a flow holds a cell
//! beyond it.
//!
//! Every flow needs "the next sequence number expected"; a reorder window is
//! needed only between a cell arriving early and the gap before it filling.
//! A full [`ReorderBuffer`] per flow costs 64 B; with tens of millions of
//! flows in a run (the Google RPCs of NegotiaToR's Fig. 13(c) baseline) that
//! is gigabytes. Here a flow keeps 8 B: `next`, and a second word that is
//! either an inline window of [`WINDOW`] bits (bit k: unit `next + 1 + k`
//! arrived early) or, with [`BUF`] set, the index of a buffer borrowed from
//! a pool when a cell arrives beyond the window, returned as soon as nothing
//! is held. Two-hop paths reorder most flows' cells but by a few cells, so
//! most early arrivals stay in the window and never touch a buffer.
//!
//! While a buffer is attached, the flow's first word is the *offset*: the
//! buffer numbers units from 0 = the flow's `next` when it was attached, so
//! the flow's true next is `offset + buffer.next_expected()`. Receipts, next
//! and held counts are exactly a plain per-flow [`ReorderBuffer`]'s (the
//! property test below uses one as the oracle).

use crate::delivery::{Receipt, ReorderBuffer};

/// Set in a flow's second word while a buffer is attached (the rest is its
/// index).
pub const BUF: u32 = 1 << 31;
/// Units after `next` the inline window covers.
pub const WINDOW: u32 = 31;

/// What one arrival did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub receipt: Receipt,
    /// The flow's lowest unit not yet released, after the arrival.
    pub next: u32,
    /// After an `Early` receipt, the units of the flow held (counting this
    /// one); 0 after the others, which say the change themselves: an
    /// `InOrder { released }` arrival lowers the held count by
    /// `released - 1`, a duplicate leaves it. (Counting the inline window's
    /// bits costs more than the rest of an arrival, so only `Early` pays.)
    pub early_held: u32,
}

/// In-order delivery state of every flow (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct FlowReorder {
    /// Per flow: [next, or the offset while a buffer is attached; the inline
    /// window, or BUF | buffer].
    state: Vec<[u32; 2]>,
    bufs: Vec<ReorderBuffer>,
    free: Vec<u32>,
}

impl FlowReorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Flow `f` starts afresh: a new slot (the next number), or one whose
    /// flow completed (nothing held, no buffer attached).
    pub fn start_flow(&mut self, f: u32) {
        match self.state.get_mut(f as usize) {
            Some(s) => {
                debug_assert_eq!(s[1], 0, "a reused slot holds nothing");
                *s = [0, 0];
            }
            None => {
                debug_assert_eq!(f as usize, self.state.len());
                self.state.push([0, 0]);
            }
        }
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Records the arrival of unit `seq` of flow `f`.
    #[inline]
    pub fn receive(&mut self, f: u32, seq: u32) -> Arrival {
        let s = &mut self.state[f as usize];
        let [next, w] = *s;
        if w & BUF == 0 {
            let (receipt, next, w) = if seq == next {
                // This unit and the run held right after it are released.
                let released = 1 + w.trailing_ones();
                let w = (w as u64 >> released) as u32;
                (Receipt::InOrder { released }, next + released, w)
            } else if seq < next {
                (Receipt::Duplicate, next, w)
            } else if seq - next - 1 < WINDOW {
                let bit = 1 << (seq - next - 1);
                if w & bit != 0 {
                    (Receipt::Duplicate, next, w)
                } else {
                    (Receipt::Early, next, w | bit)
                }
            } else {
                return self.attach(f, seq);
            };
            *s = [next, w];
            let early_held = if receipt == Receipt::Early {
                w.count_ones()
            } else {
                0
            };
            return Arrival {
                receipt,
                next,
                early_held,
            };
        }
        let b = (w & !BUF) as usize;
        let r = &mut self.bufs[b];
        let receipt = if seq < next {
            Receipt::Duplicate
        } else {
            r.receive(seq - next)
        };
        let next = next + r.next_expected();
        let held = r.held();
        if held == 0 {
            // Nothing held: give the buffer back (and its window's memory).
            *r = ReorderBuffer::new();
            self.free.push(b as u32);
            *s = [next, 0];
        }
        Arrival {
            receipt,
            next,
            early_held: if receipt == Receipt::Early { held } else { 0 },
        }
    }

    /// Unit `seq` of flow `f` arrived beyond its inline window: attach a
    /// buffer numbered from the flow's next, holding what the window held.
    #[cold]
    fn attach(&mut self, f: u32, seq: u32) -> Arrival {
        let [next, mut w] = self.state[f as usize];
        let held = w.count_ones() + 1;
        let b = match self.free.pop() {
            Some(i) => i,
            None => {
                assert!(self.bufs.len() < BUF as usize, "too many reorder buffers");
                self.bufs.push(ReorderBuffer::new());
                (self.bufs.len() - 1) as u32
            }
        };
        let r = &mut self.bufs[b as usize];
        while w != 0 {
            r.receive(1 + w.trailing_zeros());
            w &= w - 1;
        }
        let receipt = r.receive(seq - next);
        debug_assert_eq!(receipt, Receipt::Early);
        self.state[f as usize] = [next, BUF | b];
        Arrival {
            receipt,
            next,
            early_held: held,
        }
    }

    /// The lowest unit of flow `f` not yet released.
    #[cfg(test)]
    pub fn next_expected(&self, f: u32) -> u32 {
        let s = self.state[f as usize];
        if s[1] & BUF == 0 {
            s[0]
        } else {
            s[0] + self.bufs[(s[1] & !BUF) as usize].next_expected()
        }
    }

    /// Units of flow `f` held (received early).
    #[cfg(test)]
    pub fn held(&self, f: u32) -> u32 {
        let s = self.state[f as usize];
        if s[1] & BUF == 0 {
            s[1].count_ones()
        } else {
            self.bufs[(s[1] & !BUF) as usize].held()
        }
    }

    /// Buffers currently attached to flows.
    #[cfg(test)]
    pub fn attached(&self) -> usize {
        self.bufs.len() - self.free.len()
    }

    /// Every attached buffer holds something and belongs to exactly one
    /// flow; every pooled buffer is free and reset.
    pub fn check(&self) -> Result<(), String> {
        const NONE: u32 = u32::MAX;
        let mut owner = vec![NONE; self.bufs.len()];
        for (f, s) in self.state.iter().enumerate() {
            if s[1] & BUF == 0 {
                continue;
            }
            let b = (s[1] & !BUF) as usize;
            if b >= self.bufs.len() {
                return Err(format!("flow {f}: reorder buffer {b} does not exist"));
            }
            if owner[b] != NONE {
                return Err(format!(
                    "reorder buffer {b} attached to flows {} and {f}",
                    owner[b]
                ));
            }
            owner[b] = f as u32;
            if self.bufs[b].held() == 0 {
                return Err(format!(
                    "flow {f}: reorder buffer {b} attached while holding nothing"
                ));
            }
        }
        for &b in &self.free {
            let b = b as usize;
            if owner[b] != NONE {
                return Err(format!(
                    "reorder buffer {b} is free and attached to flow {}",
                    owner[b]
                ));
            }
            if self.bufs[b].next_expected() != 0 || self.bufs[b].held() != 0 {
                return Err(format!("free reorder buffer {b} is not reset"));
            }
            owner[b] = u32::MAX - 1;
        }
        if let Some(b) = owner.iter().position(|&o| o == NONE) {
            return Err(format!(
                "reorder buffer {b} is neither free nor attached (leaked)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(fr: &FlowReorder, plain: &[ReorderBuffer]) {
        for (f, r) in plain.iter().enumerate() {
            assert_eq!(fr.next_expected(f as u32), r.next_expected(), "flow {f}");
            assert_eq!(fr.held(f as u32), r.held(), "flow {f}");
        }
        fr.check().unwrap();
    }

    #[test]
    fn a_hand_worked_sequence() {
        let mut fr = FlowReorder::new();
        fr.start_flow(0);
        fr.start_flow(1);
        // Flow 0: 0 in order; 2, 3 early (in the inline window); 1 releases 1..3.
        assert_eq!(fr.receive(0, 0).receipt, Receipt::InOrder { released: 1 });
        let a = fr.receive(0, 2);
        assert_eq!((a.receipt, a.next, a.early_held), (Receipt::Early, 1, 1));
        assert_eq!(fr.attached(), 0);
        assert_eq!(fr.receive(0, 3).early_held, 2);
        assert_eq!(fr.receive(0, 2).receipt, Receipt::Duplicate);
        assert_eq!(fr.receive(0, 0).receipt, Receipt::Duplicate);
        let c = fr.receive(0, 1);
        assert_eq!(
            (c.receipt, c.next, fr.held(0)),
            (Receipt::InOrder { released: 3 }, 4, 0)
        );
        // Flow 1: 1 in the window, then 40 beyond it: a buffer is attached
        // (offset 0) holding both.
        assert_eq!(fr.receive(1, 1).receipt, Receipt::Early);
        let b = fr.receive(1, 40);
        assert_eq!((b.receipt, b.next, b.early_held), (Receipt::Early, 0, 2));
        assert_eq!(fr.attached(), 1);
        assert_eq!(fr.receive(1, 1).receipt, Receipt::Duplicate);
        fr.check().unwrap();
        // 0 releases 0..2; 40 is still held, so the buffer stays.
        let d = fr.receive(1, 0);
        assert_eq!(
            (d.receipt, d.next, fr.held(1)),
            (Receipt::InOrder { released: 2 }, 2, 1)
        );
        assert_eq!(fr.attached(), 1);
        for seq in 2..40 {
            fr.receive(1, seq);
        }
        assert_eq!((fr.next_expected(1), fr.held(1), fr.attached()), (41, 0, 0));
        // The pooled buffer is reused, not grown.
        fr.receive(0, 100);
        assert_eq!(fr.bufs.len(), 1);
        assert_eq!(fr.next_expected(0), 4);
        assert_eq!(fr.held(0), 1);
        // A full window: 31 units after next, then next releases all 32.
        for seq in 42..73 {
            assert_eq!(fr.receive(1, seq).receipt, Receipt::Early);
        }
        assert_eq!((fr.held(1), fr.attached()), (31, 1));
        let e = fr.receive(1, 41);
        assert_eq!(
            (e.receipt, e.next, fr.held(1)),
            (Receipt::InOrder { released: 32 }, 73, 0)
        );
        fr.check().unwrap();
    }

    /// Interleaved arrivals over `flows` flows: the same receipts, next and
    /// held as one plain ReorderBuffer per flow.
    fn against_plain(flows: usize, arrivals: &[(usize, u32)]) -> Result<(), TestCaseError> {
        let mut fr = FlowReorder::new();
        let mut plain = vec![ReorderBuffer::new(); flows];
        for f in 0..flows {
            fr.start_flow(f as u32);
        }
        for &(f, seq) in arrivals {
            let f = f % flows;
            let before = plain[f].held();
            let want = plain[f].receive(seq);
            let got = fr.receive(f as u32, seq);
            prop_assert_eq!(got.receipt, want);
            prop_assert_eq!(got.next, plain[f].next_expected());
            let held = plain[f].held();
            prop_assert_eq!(fr.held(f as u32), held);
            match got.receipt {
                Receipt::Early => prop_assert_eq!(got.early_held, held),
                Receipt::InOrder { released } => prop_assert_eq!(held, before + 1 - released),
                Receipt::Duplicate => prop_assert_eq!(held, before),
            }
            // A buffer is attached only while something is held.
            prop_assert!(fr.attached() <= plain.iter().filter(|r| r.held() > 0).count());
        }
        same(&fr, &plain);
        Ok(())
    }

    proptest! {
        /// Random interleaved arrivals (with duplicates), mostly far apart
        /// (buffers attached).
        #[test]
        fn equals_one_plain_buffer_per_flow(
            flows in 1usize..6,
            arrivals in proptest::collection::vec((0usize..6, 0u32..200), 0..400),
        ) {
            against_plain(flows, &arrivals)?;
        }

        /// The same with arrivals close together: the inline window fills,
        /// overflows into a buffer (40 > 31) and empties.
        #[test]
        fn equals_one_plain_buffer_per_flow_near_the_window(
            flows in 1usize..3,
            arrivals in proptest::collection::vec((0usize..3, 0u32..40), 0..300),
        ) {
            against_plain(flows, &arrivals)?;
        }

        /// Every permutation of a flow's units completes it, and the buffer is
        /// returned at the end.
        #[test]
        fn any_order_completes_and_frees(perm in Just((0u32..150).collect::<Vec<_>>()).prop_shuffle()) {
            let mut fr = FlowReorder::new();
            fr.start_flow(0);
            let mut released = 0;
            for &s in &perm {
                if let Receipt::InOrder { released: r } = fr.receive(0, s).receipt {
                    released += r;
                }
            }
            prop_assert_eq!(released, 150);
            prop_assert_eq!(fr.next_expected(0), 150);
            prop_assert_eq!(fr.attached(), 0);
            fr.check().unwrap();
        }
    }
}

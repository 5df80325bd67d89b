//! In-order delivery for every flow of a Sirius fabric, with a
//! [`ReorderBuffer`] only while a flow actually holds cells.
//!
//! Every flow needs "the next sequence number expected"; a reorder window is
//! needed only between a cell arriving early and the gap before it filling.
//! A full [`ReorderBuffer`] per flow costs 64 B; with tens of millions of
//! flows in a run (the Google RPCs of NegotiaToR's Fig. 13(c) baseline) that
//! is gigabytes. Here a flow keeps 8 B — `next` and the index of an attached
//! buffer (or [`NONE`]) — and borrows a buffer from a pool when a cell arrives
//! early, returning it as soon as nothing is held.
//!
//! While a buffer is attached, the flow's first word is the *offset*: the
//! buffer numbers units from 0 = the flow's `next` when it was attached, so
//! the flow's true next is `offset + buffer.next_expected()`. Receipts, next
//! and held counts are exactly a plain per-flow [`ReorderBuffer`]'s (the
//! property test below uses one as the oracle).

use crate::delivery::{Receipt, ReorderBuffer};

/// No buffer attached.
pub const NONE: u32 = u32::MAX;

/// What one arrival did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub receipt: Receipt,
    /// The flow's lowest unit not yet released, after the arrival.
    pub next: u32,
    /// Units of the flow held (received early), after the arrival.
    pub held: u32,
}

/// In-order delivery state of every flow (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct FlowReorder {
    /// Per flow: [next, or the offset while a buffer is attached; buffer or NONE].
    state: Vec<[u32; 2]>,
    bufs: Vec<ReorderBuffer>,
    free: Vec<u32>,
}

impl FlowReorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a flow (flows are numbered in the order they are added).
    pub fn push_flow(&mut self) {
        self.state.push([0, NONE]);
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Records the arrival of unit `seq` of flow `f`.
    #[inline]
    pub fn receive(&mut self, f: u32, seq: u32) -> Arrival {
        let s = &mut self.state[f as usize];
        if s[1] == NONE {
            if seq == s[0] {
                s[0] += 1;
                return Arrival {
                    receipt: Receipt::InOrder { released: 1 },
                    next: s[0],
                    held: 0,
                };
            }
            if seq < s[0] {
                return Arrival {
                    receipt: Receipt::Duplicate,
                    next: s[0],
                    held: 0,
                };
            }
            // Early: attach a buffer numbered from the current next.
            s[1] = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.bufs.push(ReorderBuffer::new());
                    (self.bufs.len() - 1) as u32
                }
            };
        }
        let off = s[0];
        let b = s[1] as usize;
        let r = &mut self.bufs[b];
        let receipt = if seq < off {
            Receipt::Duplicate
        } else {
            r.receive(seq - off)
        };
        let next = off + r.next_expected();
        let held = r.held();
        if held == 0 {
            // Nothing held: give the buffer back (and its window's memory).
            *r = ReorderBuffer::new();
            self.free.push(b as u32);
            *s = [next, NONE];
        }
        Arrival {
            receipt,
            next,
            held,
        }
    }

    /// The lowest unit of flow `f` not yet released.
    #[cfg(test)]
    pub fn next_expected(&self, f: u32) -> u32 {
        let s = self.state[f as usize];
        if s[1] == NONE {
            s[0]
        } else {
            s[0] + self.bufs[s[1] as usize].next_expected()
        }
    }

    /// Units of flow `f` held (received early).
    #[inline]
    pub fn held(&self, f: u32) -> u32 {
        let s = self.state[f as usize];
        if s[1] == NONE {
            0
        } else {
            self.bufs[s[1] as usize].held()
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
        let mut owner = vec![NONE; self.bufs.len()];
        for (f, s) in self.state.iter().enumerate() {
            if s[1] == NONE {
                continue;
            }
            let b = s[1] as usize;
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
        fr.push_flow();
        fr.push_flow();
        // Flow 0: 0 in order; 2, 3 early (buffer attached, offset 1); 1 releases 1..3.
        assert_eq!(fr.receive(0, 0).receipt, Receipt::InOrder { released: 1 });
        assert_eq!(fr.attached(), 0);
        let a = fr.receive(0, 2);
        assert_eq!((a.receipt, a.next, a.held), (Receipt::Early, 1, 1));
        assert_eq!(fr.attached(), 1);
        // Flow 1 needs its own buffer meanwhile.
        let b = fr.receive(1, 1);
        assert_eq!((b.receipt, b.next, b.held), (Receipt::Early, 0, 1));
        assert_eq!(fr.attached(), 2);
        assert_eq!(fr.receive(0, 3).receipt, Receipt::Early);
        assert_eq!(fr.receive(0, 2).receipt, Receipt::Duplicate);
        assert_eq!(fr.receive(0, 0).receipt, Receipt::Duplicate);
        let c = fr.receive(0, 1);
        assert_eq!(
            (c.receipt, c.next, c.held),
            (Receipt::InOrder { released: 3 }, 4, 0)
        );
        // Flow 0 gave its buffer back; flow 1 still holds one.
        assert_eq!(fr.attached(), 1);
        fr.check().unwrap();
        let d = fr.receive(1, 0);
        assert_eq!(
            (d.receipt, d.next, d.held),
            (Receipt::InOrder { released: 2 }, 2, 0)
        );
        assert_eq!(fr.attached(), 0);
        // The pooled buffers are reused, not grown.
        fr.receive(0, 6);
        fr.receive(1, 9);
        assert_eq!(fr.bufs.len(), 2);
        assert_eq!(fr.next_expected(0), 4);
        assert_eq!(fr.held(1), 1);
        fr.check().unwrap();
    }

    proptest! {
        /// Random interleaved arrivals (with duplicates) over several flows:
        /// the same receipts, next and held as one plain ReorderBuffer per flow.
        #[test]
        fn equals_one_plain_buffer_per_flow(
            flows in 1usize..6,
            arrivals in proptest::collection::vec((0usize..6, 0u32..200), 0..400),
        ) {
            let mut fr = FlowReorder::new();
            let mut plain = vec![ReorderBuffer::new(); flows];
            for _ in 0..flows {
                fr.push_flow();
            }
            for (f, seq) in arrivals {
                let f = f % flows;
                let want = plain[f].receive(seq);
                let got = fr.receive(f as u32, seq);
                prop_assert_eq!(got.receipt, want);
                prop_assert_eq!(got.next, plain[f].next_expected());
                prop_assert_eq!(got.held, plain[f].held());
                // A buffer is attached exactly while something is held.
                prop_assert_eq!(fr.attached(), plain.iter().filter(|r| r.held() > 0).count());
            }
            same(&fr, &plain);
        }

        /// Every permutation of a flow's units completes it, and the buffer is
        /// returned at the end.
        #[test]
        fn any_order_completes_and_frees(perm in Just((0u32..150).collect::<Vec<_>>()).prop_shuffle()) {
            let mut fr = FlowReorder::new();
            fr.push_flow();
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

//! NDP's event queue: a few FIFO lanes and a heap for everything else,
//! popped in exactly `(time, payload)` order.
//!
//! Most of NDP's events are pushed a fixed delay after the present: a
//! packet's arrival one serialisation plus one propagation after it starts
//! (one delay per packet size on a uniform fabric), a port's next start one
//! serialisation after the last, a pacer's next PULL one gap later. Pushed
//! in order of the present, such events come in time order, so a lane that
//! takes them is a plain FIFO: a push appends, a pop takes the front, and
//! both walk memory in sequence (the calendar wheel's buckets are scattered
//! lines, and it sorts each). The caller names a lane per kind of event; a
//! push that would break its lane's order goes to the heap instead, so the
//! order never depends on the choice. A pop takes the least head of the
//! lanes and the heap.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// An entry's scheduling number: unique, rising with each push, so that
/// `(time, seq)` orders entries as `(time, entry)` does.
pub(super) trait Seq {
    fn seq(&self) -> u64;
}

#[inline]
fn key<E: Seq>(t: u64, e: &E) -> u128 {
    (t as u128) << 64 | e.seq() as u128
}

const NONE: u128 = u128::MAX;

#[derive(Debug)]
pub(super) struct LaneQueue<E, const N: usize> {
    lanes: [VecDeque<(u64, E)>; N],
    heap: BinaryHeap<Reverse<(u64, E)>>,
    /// The key of each lane's head, then the heap's top (`NONE`: empty).
    heads: [u128; 16],
    /// Which of `heads` is least.
    min: usize,
}

impl<E: Copy + Ord + Seq, const N: usize> LaneQueue<E, N> {
    pub(super) fn new() -> Self {
        assert!(N < 16, "lanes: at most 15");
        LaneQueue {
            lanes: std::array::from_fn(|_| VecDeque::new()),
            heap: BinaryHeap::new(),
            heads: [NONE; 16],
            min: N,
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(|q| q.len()).sum::<usize>()
    }

    /// Adds `ev` at `t` to `lane` if it keeps the lane in order, else (or
    /// if `lane` is `N`) to the heap. Entries must rise in `seq`.
    #[inline]
    pub(super) fn push(&mut self, lane: usize, t: u64, ev: E) {
        let k = key(t, &ev);
        if lane == N {
            self.heap.push(Reverse((t, ev)));
            return self.lower(N, k);
        }
        let q = &mut self.lanes[lane];
        let at = match q.back() {
            Some(b) if key(b.0, &b.1) > k => {
                self.heap.push(Reverse((t, ev)));
                N
            }
            _ => {
                q.push_back((t, ev));
                lane
            }
        };
        self.lower(at, k);
    }

    /// Entry `k` joined head `at`.
    #[inline]
    fn lower(&mut self, at: usize, k: u128) {
        if k < self.heads[at] {
            self.heads[at] = k;
            if k < self.heads[self.min] {
                self.min = at;
            }
        }
    }

    /// The earliest time in the queue. O(1).
    #[inline]
    pub(super) fn peek_time(&self) -> Option<u64> {
        let k = self.heads[self.min];
        (k != NONE).then_some((k >> 64) as u64)
    }

    /// Removes the least entry if it is due at or before `now`.
    #[inline]
    pub(super) fn pop_due(&mut self, now: u64) -> Option<(u64, E)> {
        let i = self.min;
        let k = self.heads[i];
        if k == NONE || (k >> 64) as u64 > now {
            return None;
        }
        let (e, next) = if i == N {
            let Reverse(e) = self.heap.pop().expect("a head");
            (e, self.heap.peek().map(|Reverse(h)| key(h.0, &h.1)))
        } else {
            let q = &mut self.lanes[i];
            let e = q.pop_front().expect("a head");
            (e, q.front().map(|h| key(h.0, &h.1)))
        };
        self.heads[i] = next.unwrap_or(NONE);
        let mut m = 0;
        for j in 1..=N {
            if self.heads[j] < self.heads[m] {
                m = j;
            }
        }
        self.min = m;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl Seq for u32 {
        fn seq(&self) -> u64 {
            *self as u64
        }
    }

    proptest! {
        /// Pushes (never before the last pop) into random lanes, with many
        /// equal times, and pops come out as a sorted oracle's, entry for
        /// entry, whichever lane (or the heap: 3) each push named.
        #[test]
        fn pops_in_time_then_payload_order(
            ops in prop::collection::vec((0u64..6, 0usize..4, 0u8..3), 1..600)
        ) {
            let mut q = LaneQueue::<u32, 3>::new();
            let mut oracle: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
            let (mut now, mut id) = (0u64, 0u32);
            for (dt, lane, op) in ops {
                if op == 0 {
                    let bound = now + dt * 3;
                    let got = q.pop_due(bound);
                    let want = match oracle.peek() {
                        Some(&Reverse((t, _))) if t <= bound => oracle.pop().map(|r| r.0),
                        _ => None,
                    };
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    // Payloads rise with each push (a scheduling order), and
                    // times within a few ticks: lanes both kept and broken.
                    let t = now + dt * [1, 10][op as usize - 1];
                    q.push(lane, t, id);
                    oracle.push(Reverse((t, id)));
                    id += 1;
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time(), oracle.peek().map(|r| r.0 .0));
            }
            while let Some(Reverse(want)) = oracle.pop() {
                prop_assert_eq!(q.pop_due(u64::MAX), Some(want));
            }
            prop_assert_eq!(q.pop_due(u64::MAX), None);
        }
    }

    #[test]
    fn a_push_out_of_its_lanes_order_goes_to_the_heap() {
        let mut q = LaneQueue::<u32, 1>::new();
        q.push(0, 10, 0);
        q.push(0, 5, 1);
        q.push(0, 10, 2);
        assert_eq!(q.heap.len(), 1);
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.pop_due(100), Some((5, 1)));
        assert_eq!(q.pop_due(100), Some((10, 0)));
        assert_eq!(q.pop_due(100), Some((10, 2)));
        assert_eq!(q.len(), 0);
    }
}

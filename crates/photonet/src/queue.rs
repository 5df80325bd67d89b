//! Time-ordered queues for the engine and the fabrics: a deterministic event
//! queue, and a slot clock for fabrics that step all their ports once per slot.
//!
//! Ordering is by (time, insertion sequence), so two runs with the same seed
//! process events in the same order. Slotted fabrics do not put one heap event per
//! cell: they expose a single "next slot" wake-up and jump over idle periods.

use crate::units::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}
impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A min-queue of timed events; equal times pop in insertion order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
    pub fn push(&mut self, time: SimTime, event: E) {
        self.heap.push(Entry {
            time,
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Pops the earliest event if it is due at or before `t`.
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, E)> {
        if self.peek_time()? <= t {
            self.pop()
        } else {
            None
        }
    }
}

/// Periodic slot boundaries `origin + k * period`, for fabrics that act once per
/// slot over all their ports. Idle fabrics ask for the first boundary at or after
/// the next arrival instead of ticking through empty slots.
#[derive(Clone, Copy, Debug)]
pub struct SlotClock {
    pub origin: SimTime,
    pub period: SimTime,
}

impl SlotClock {
    pub fn new(period: SimTime) -> Self {
        assert!(period.0 > 0, "slot period must be positive");
        SlotClock {
            origin: SimTime::ZERO,
            period,
        }
    }
    /// Index of the slot that contains `t` (slot k covers [start(k), start(k+1))).
    pub fn slot_of(&self, t: SimTime) -> u64 {
        t.0.saturating_sub(self.origin.0) / self.period.0
    }
    pub fn start(&self, k: u64) -> SimTime {
        SimTime(self.origin.0 + k * self.period.0)
    }
    /// The first slot index whose start is at or after `t`.
    pub fn first_slot_at_or_after(&self, t: SimTime) -> u64 {
        if t <= self.origin {
            return 0;
        }
        (t.0 - self.origin.0).div_ceil(self.period.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn queue_pops_in_time_then_insertion_order(times in prop::collection::vec(0u64..50, 1..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort(); // by time, then by index = insertion order
            let mut got = Vec::new();
            while let Some((t, i)) = q.pop() {
                got.push((t.0, i));
            }
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn slot_clock_boundaries(period in 1u64..10_000, t in 0u64..10_000_000) {
            let c = SlotClock::new(SimTime(period));
            let k = c.first_slot_at_or_after(SimTime(t));
            prop_assert!(c.start(k).0 >= t);
            prop_assert!(k == 0 || c.start(k - 1).0 < t);
            let s = c.slot_of(SimTime(t));
            prop_assert!(c.start(s).0 <= t && t < c.start(s + 1).0);
        }
    }

    #[test]
    fn pop_due_respects_the_bound() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), "a");
        q.push(SimTime(9), "b");
        assert_eq!(q.pop_due(SimTime(4)), None);
        assert_eq!(q.pop_due(SimTime(5)), Some((SimTime(5), "a")));
        assert_eq!(q.pop_due(SimTime(8)), None);
        assert_eq!(q.len(), 1);
    }
}

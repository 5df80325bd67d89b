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
///
/// The general-purpose queue, for fabrics whose events are few (the ideal
/// network's flow events, Mordia's intra-rack deliveries, NegotiaToR's
/// retransmissions): a binary heap, the simplest exact order. Fabrics with
/// millions of events per simulated millisecond use a queue shaped by what
/// they hold, each measured against this one: the packet substrate's
/// calendar wheel (`net::calendar`) and Baldur's ring and FIFOs
/// (`fabric::baldur`'s `queues.rs`).
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

/// A min-queue of at most one timed entry per id (`0..n`), ordered by (time,
/// insertion sequence) like [`EventQueue`], whose entries can be moved or
/// removed in place in O(log n). For fluid models that reschedule a flow's
/// completion at every rate change: no stale entries pile up.
#[derive(Default)]
pub struct IndexedQueue {
    heap: Vec<(SimTime, u64, u32)>,
    pos: Vec<u32>,
    seq: u64,
}

const ABSENT: u32 = u32::MAX;

impl IndexedQueue {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    pub fn contains(&self, id: u32) -> bool {
        self.pos.get(id as usize).is_some_and(|&p| p != ABSENT)
    }
    /// Schedules `id` at `time` (replacing its entry, if any); it counts as
    /// inserted now for ties.
    pub fn set(&mut self, id: u32, time: SimTime) {
        if self.pos.len() <= id as usize {
            self.pos.resize(id as usize + 1, ABSENT);
        }
        let e = (time, self.seq, id);
        self.seq += 1;
        let p = self.pos[id as usize];
        if p == ABSENT {
            self.heap.push(e);
            self.pos[id as usize] = (self.heap.len() - 1) as u32;
            self.up(self.heap.len() - 1);
        } else {
            let p = p as usize;
            let later = e > self.heap[p];
            self.heap[p] = e;
            if later {
                self.down(p);
            } else {
                self.up(p);
            }
        }
    }
    /// Removes `id`'s entry, if any.
    pub fn remove(&mut self, id: u32) {
        let Some(&p) = self.pos.get(id as usize) else {
            return;
        };
        if p == ABSENT {
            return;
        }
        self.take(p as usize);
    }
    pub fn peek(&self) -> Option<(SimTime, u32)> {
        self.heap.first().map(|e| (e.0, e.2))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| e.0)
    }
    /// Pops the earliest entry if it is due at or before `t`.
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, u32)> {
        let (time, id) = self.peek()?;
        if time > t {
            return None;
        }
        self.take(0);
        Some((time, id))
    }
    fn take(&mut self, p: usize) {
        let id = self.heap[p].2;
        self.pos[id as usize] = ABSENT;
        let last = self.heap.pop().expect("non-empty");
        if p < self.heap.len() {
            let moved_up = last < self.heap[p];
            self.place(p, last);
            if moved_up {
                self.up(p);
            } else {
                self.down(p);
            }
        }
    }
    fn up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent] <= e {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, e);
    }
    fn down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.heap[l + 1] < self.heap[l] {
                l + 1
            } else {
                l
            };
            if self.heap[c] >= e {
                break;
            }
            self.place(i, self.heap[c]);
            i = c;
        }
        self.place(i, e);
    }
    /// Puts `e` at heap slot `i` and records where its id now is.
    fn place(&mut self, i: usize, e: (SimTime, u64, u32)) {
        self.heap[i] = e;
        self.pos[e.2 as usize] = i as u32;
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

    proptest! {
        /// Against a model: a map id -> (time, seq) whose minimum is popped.
        #[test]
        fn indexed_queue_matches_a_model(ops in prop::collection::vec((0u32..20, 0u64..30, 0u8..4), 1..300)) {
            let mut q = IndexedQueue::new();
            let mut model: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
            let mut seq = 0u64;
            for (id, t, op) in ops {
                match op {
                    0 | 1 => {
                        q.set(id, SimTime(t));
                        model.insert(id, (t, seq));
                        seq += 1;
                    }
                    2 => {
                        q.remove(id);
                        model.remove(&id);
                    }
                    _ => {
                        let want = model.iter().min_by_key(|(_, v)| **v).filter(|(_, v)| v.0 <= t).map(|(k, v)| (*k, v.0));
                        let got = q.pop_due(SimTime(t)).map(|(time, id)| (id, time.0));
                        prop_assert_eq!(got, want);
                        if let Some((k, _)) = want {
                            model.remove(&k);
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                for id in 0..20 {
                    prop_assert_eq!(q.contains(id), model.contains_key(&id));
                }
            }
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

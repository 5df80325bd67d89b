//! Cancellable timers for packet-level fabrics: retransmission timeouts, PFC
//! pause/resume, pacing. A [`TimerQueue`] is a min-queue of timed events like
//! the engine's `EventQueue`, plus [`cancel`](TimerQueue::cancel) and
//! [`reschedule`](TimerQueue::reschedule) by [`TimerId`].
//!
//! Ordering is by (time, scheduling sequence): timers due at the same instant
//! fire in the order they were scheduled (a rescheduled timer counts as newly
//! scheduled), so runs are deterministic.
//!
//! # How it works, and what it costs
//! Events live in a slab of slots; the heap holds only `(time, seq, slot)` (24
//! bytes). A [`TimerId`] is `(slot, generation)`: firing or cancelling a timer
//! bumps its slot's generation and returns the slot to a free list, so an old id
//! is rejected even after its slot is reused, and a steady state of
//! schedule/fire/cancel allocates nothing.
//!
//! Cancellation is lazy: the heap entry stays and is skipped when it reaches the
//! top (its `seq` no longer matches the slot's). After every mutating call the
//! top of the heap is a live timer, so [`peek_time`](TimerQueue::peek_time) is
//! O(1) on `&self`. `schedule`, `pop` and `reschedule` are O(log n); `cancel`
//! is O(1) plus the purge of stale entries it uncovers, each of which was paid
//! for when it was pushed — amortised O(log n) overall. When stale entries
//! outnumber live timers (plus a slack of 64) the heap is compacted in O(n), so
//! the heap never holds more than about twice the live timers: an RTO that is
//! pushed back on every ACK does not grow memory.
//!
//! A slot's generation is a wrapping `u32`: an id is mistaken for a new timer
//! only if the same slot is reused exactly 2³² times while the old id is kept.

use crate::units::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Names one scheduled timer. Stale ids (fired, cancelled) are harmless.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

struct Slot<E> {
    gen: u32,
    /// Sequence number of the live heap entry for this slot.
    seq: u64,
    at: SimTime,
    /// `Some` while the timer is pending.
    ev: Option<E>,
}

/// A deterministic min-queue of timed events with cancellation.
pub struct TimerQueue<E> {
    heap: BinaryHeap<Reverse<(SimTime, u64, u32)>>,
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    seq: u64,
    live: usize,
}

impl<E> Default for TimerQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> TimerQueue<E> {
    pub fn new() -> Self {
        TimerQueue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            live: 0,
        }
    }

    /// Schedules `ev` to fire at `at`.
    pub fn schedule(&mut self, at: SimTime, ev: E) -> TimerId {
        let seq = self.next_seq();
        let slot = match self.free.pop() {
            Some(s) => {
                let sl = &mut self.slots[s as usize];
                (sl.seq, sl.at, sl.ev) = (seq, at, Some(ev));
                s
            }
            None => {
                let s = u32::try_from(self.slots.len()).expect("more than 2^32 timers");
                self.slots.push(Slot {
                    gen: 0,
                    seq,
                    at,
                    ev: Some(ev),
                });
                s
            }
        };
        self.heap.push(Reverse((at, seq, slot)));
        self.live += 1;
        TimerId {
            slot,
            gen: self.slots[slot as usize].gen,
        }
    }

    /// Cancels a pending timer. Returns false (and does nothing) if `id` has
    /// already fired or been cancelled.
    pub fn cancel(&mut self, id: TimerId) -> bool {
        self.take(id).is_some()
    }

    /// Cancels a pending timer and hands back its time and event.
    pub fn take(&mut self, id: TimerId) -> Option<(SimTime, E)> {
        let sl = self.pending_slot(id)?;
        let at = sl.at;
        let ev = self.free_slot(id.slot);
        self.purge();
        Some((at, ev))
    }

    /// Moves a pending timer to `at`; `id` stays valid. For ties it counts as
    /// scheduled now. Returns false if `id` is not pending.
    pub fn reschedule(&mut self, id: TimerId, at: SimTime) -> bool {
        if self.pending_slot(id).is_none() {
            return false;
        }
        let seq = self.next_seq();
        let sl = &mut self.slots[id.slot as usize];
        (sl.seq, sl.at) = (seq, at);
        self.heap.push(Reverse((at, seq, id.slot)));
        self.purge();
        true
    }

    /// Is `id` still waiting to fire?
    pub fn is_pending(&self, id: TimerId) -> bool {
        self.pending_slot(id).is_some()
    }

    /// When a pending timer is due.
    pub fn deadline(&self, id: TimerId) -> Option<SimTime> {
        self.pending_slot(id).map(|s| s.at)
    }

    /// Time of the earliest live timer. O(1): the heap top is always live.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Removes and returns the earliest live timer.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let Reverse((t, _, slot)) = self.heap.pop()?;
        let ev = self.free_slot(slot);
        self.purge();
        Some((t, ev))
    }

    /// Pops the earliest live timer if it is due at or before `t`.
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, E)> {
        if self.peek_time()? <= t {
            self.pop()
        } else {
            None
        }
    }

    /// Live (pending) timers.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn pending_slot(&self, id: TimerId) -> Option<&Slot<E>> {
        self.slots
            .get(id.slot as usize)
            .filter(|s| s.gen == id.gen && s.ev.is_some())
    }

    /// Ends the timer in `slot` (fired or cancelled): new generation, slot freed.
    fn free_slot(&mut self, slot: u32) -> E {
        let sl = &mut self.slots[slot as usize];
        sl.gen = sl.gen.wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
        sl.ev.take().expect("freeing a slot that is not pending")
    }

    fn is_live(&self, seq: u64, slot: u32) -> bool {
        let s = &self.slots[slot as usize];
        s.ev.is_some() && s.seq == seq
    }

    /// Restores "the heap top is live" and bounds the number of stale entries.
    fn purge(&mut self) {
        if self.heap.len() > 2 * self.live + 64 {
            let slots = &self.slots;
            self.heap.retain(|Reverse((_, seq, slot))| {
                let s = &slots[*slot as usize];
                s.ev.is_some() && s.seq == *seq
            });
        }
        while let Some(&Reverse((_, seq, slot))) = self.heap.peek() {
            if self.is_live(seq, slot) {
                break;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_fire_in_scheduling_order() {
        let mut q = TimerQueue::new();
        let a = q.schedule(SimTime(5), "a");
        q.schedule(SimTime(5), "b");
        q.schedule(SimTime(3), "c");
        assert!(q.reschedule(a, SimTime(5))); // now after "b"
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["c", "b", "a"]);
    }

    #[test]
    fn stale_ids_are_rejected_after_slot_reuse() {
        let mut q = TimerQueue::new();
        let a = q.schedule(SimTime(10), 1);
        assert!(q.cancel(a));
        assert!(!q.cancel(a));
        let b = q.schedule(SimTime(20), 2); // reuses a's slot
        assert_eq!(a.slot, b.slot);
        assert!(!q.cancel(a) && !q.reschedule(a, SimTime(1)) && !q.is_pending(a));
        assert_eq!(q.deadline(b), Some(SimTime(20)));
        assert_eq!(q.pop(), Some((SimTime(20), 2)));
        assert!(!q.cancel(b) && q.is_empty() && q.peek_time().is_none());
    }

    #[test]
    fn cancelling_the_head_uncovers_the_next_live_timer() {
        let mut q = TimerQueue::new();
        let a = q.schedule(SimTime(1), ());
        let b = q.schedule(SimTime(2), ());
        q.schedule(SimTime(3), ());
        assert!(q.cancel(b) && q.cancel(a));
        assert_eq!((q.peek_time(), q.len()), (Some(SimTime(3)), 1));
        assert_eq!(q.pop_due(SimTime(2)), None);
        assert_eq!(q.pop_due(SimTime(3)), Some((SimTime(3), ())));
    }

    #[test]
    fn pushed_back_timeouts_do_not_grow_the_heap() {
        let mut q = TimerQueue::new();
        q.schedule(SimTime(1), "pin"); // keeps stale entries off the top
        let rto = q.schedule(SimTime(100), "rto");
        for t in 0..10_000 {
            assert!(q.reschedule(rto, SimTime(100 + t)));
        }
        assert!(q.heap.len() <= 2 * q.len() + 65 && q.slots.len() == 2);
        assert_eq!(q.pop(), Some((SimTime(1), "pin")));
        assert_eq!(q.pop(), Some((SimTime(10_099), "rto")));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Schedule(u64),
        Cancel(usize),
        Reschedule(usize, u64),
        Pop,
        PopDue(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..40).prop_map(Op::Schedule),
            2 => any::<usize>().prop_map(Op::Cancel),
            1 => (any::<usize>(), 0u64..40).prop_map(|(i, t)| Op::Reschedule(i, t)),
            1 => Just(Op::Pop),
            1 => (0u64..40).prop_map(Op::PopDue),
        ]
    }

    proptest! {
        /// Random interleavings against a brute-force oracle: a Vec of live
        /// (time, seq, event) searched linearly for its minimum.
        #[test]
        fn matches_a_brute_force_oracle(ops in prop::collection::vec(op(), 1..400)) {
            let mut q = TimerQueue::new();
            let mut ids = Vec::new(); // event i was scheduled with ids[i]
            let mut oracle: Vec<(u64, u64, usize)> = Vec::new();
            let mut seq = 0u64;
            for op in ops {
                seq += 1;
                match op {
                    Op::Schedule(t) => {
                        ids.push(q.schedule(SimTime(t), ids.len()));
                        oracle.push((t, seq, ids.len() - 1));
                    }
                    Op::Cancel(i) if !ids.is_empty() => {
                        let ev = i % ids.len();
                        let pos = oracle.iter().position(|e| e.2 == ev);
                        prop_assert_eq!(q.cancel(ids[ev]), pos.is_some());
                        if let Some(p) = pos {
                            oracle.remove(p);
                        }
                    }
                    Op::Reschedule(i, t) if !ids.is_empty() => {
                        let ev = i % ids.len();
                        let pos = oracle.iter().position(|e| e.2 == ev);
                        prop_assert_eq!(q.reschedule(ids[ev], SimTime(t)), pos.is_some());
                        if let Some(p) = pos {
                            oracle[p] = (t, seq, ev);
                        }
                    }
                    Op::Cancel(_) | Op::Reschedule(..) => {}
                    Op::Pop | Op::PopDue(_) => {
                        let bound = if let Op::PopDue(t) = op { t } else { u64::MAX };
                        let min = oracle.iter().enumerate().min_by_key(|(_, e)| (e.0, e.1));
                        let want = match min {
                            Some((p, &(t, _, ev))) if t <= bound => {
                                oracle.remove(p);
                                Some((SimTime(t), ev))
                            }
                            _ => None,
                        };
                        prop_assert_eq!(q.pop_due(SimTime(bound)), want);
                    }
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time(), oracle.iter().map(|e| SimTime(e.0)).min());
                prop_assert!(q.heap.len() <= 2 * q.len() + 65);
                for (ev, id) in ids.iter().enumerate() {
                    let want = oracle.iter().find(|e| e.2 == ev).map(|e| SimTime(e.0));
                    prop_assert_eq!(q.deadline(*id), want);
                }
            }
        }
    }
}

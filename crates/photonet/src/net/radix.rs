//! A monotone radix queue: the packet substrate's event queue.
//!
//! A packet network's events are packet arrivals, and every event is scheduled
//! at or after the time of the event being processed. A radix heap exploits
//! that: an entry with time `t` sits in bucket `bits(t ^ base)`, where `base`
//! is the time of the last pop (≤ every key). `push` is an append to a `Vec`
//! (O(1), no allocation once the buckets have grown); `pop` takes from bucket
//! 0 (keys equal to `base`) and, when it is empty, moves the first non-empty
//! bucket down around its minimum — each entry moves at most 64 times in its
//! life and, in practice, two or three. Measured against `queue::EventQueue`
//! (a binary heap of (time, seq)) on the fat-tree benchmark it is the faster
//! one (see `benches/net.rs`).
//!
//! Order: by time; entries due at the same time come out in a deterministic
//! order (bucket 0 is a stack) that depends only on the sequence of calls, so
//! runs are reproducible. [`peek_time`](RadixQueue::peek_time) is O(1) on
//! `&self`: the minimum is cached and recomputed (a scan of one bucket, which
//! the next pop redistributes anyway) when bucket 0 runs dry.

/// A min-queue of `(time, event)` for monotone use: every `push` is at a time
/// no earlier than the last `pop`.
#[derive(Debug)]
pub struct RadixQueue<E> {
    buckets: Vec<Vec<(u64, E)>>,
    /// Bit i set if bucket i is non-empty.
    mask: u128,
    base: u64,
    min: u64,
    len: usize,
    scratch: Vec<(u64, E)>,
}

impl<E: Copy> Default for RadixQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn bucket(base: u64, t: u64) -> usize {
    (64 - (t ^ base).leading_zeros()) as usize
}

impl<E: Copy> RadixQueue<E> {
    pub fn new() -> Self {
        RadixQueue {
            buckets: (0..65).map(|_| Vec::new()).collect(),
            mask: 0,
            base: 0,
            min: u64::MAX,
            len: 0,
            scratch: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The earliest time in the queue. O(1).
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        (self.len > 0).then_some(self.min)
    }

    /// Adds `ev` at `t`. Panics (debug) if `t` is before the last pop.
    #[inline]
    pub fn push(&mut self, t: u64, ev: E) {
        debug_assert!(
            t >= self.base,
            "radix queue: push at {t} before {}",
            self.base
        );
        let b = bucket(self.base, t);
        self.buckets[b].push((t, ev));
        self.mask |= 1 << b;
        self.len += 1;
        if t < self.min {
            self.min = t;
        }
    }

    /// Removes an earliest entry if it is due at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, E)> {
        if self.len == 0 || self.min > now {
            return None;
        }
        self.pop()
    }

    /// Removes an earliest entry.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            // The first non-empty bucket holds the minimum; spread it below.
            let i = self.mask.trailing_zeros() as usize;
            self.base = self.min;
            std::mem::swap(&mut self.scratch, &mut self.buckets[i]);
            self.mask &= !(1u128 << i);
            for k in 0..self.scratch.len() {
                let (t, e) = self.scratch[k];
                let b = bucket(self.base, t);
                self.buckets[b].push((t, e));
                self.mask |= 1 << b;
            }
            self.scratch.clear();
        }
        let out = self.buckets[0].pop().expect("bucket 0 holds the minimum");
        self.len -= 1;
        if self.buckets[0].is_empty() {
            self.mask &= !1;
            self.min = if self.len == 0 {
                u64::MAX
            } else {
                let i = self.mask.trailing_zeros() as usize;
                self.buckets[i]
                    .iter()
                    .map(|e| e.0)
                    .min()
                    .expect("non-empty")
            };
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop) and pops agree with
        /// a sorted oracle on times, and every pushed event comes out once.
        #[test]
        fn pops_in_time_order(ops in prop::collection::vec((0u64..5_000, any::<bool>()), 1..400)) {
            let mut q = RadixQueue::new();
            let mut oracle: Vec<(u64, u32)> = Vec::new();
            let (mut now, mut id) = (0u64, 0u32);
            for (dt, pop) in ops {
                if pop {
                    let got = q.pop();
                    oracle.sort();
                    let want = (!oracle.is_empty()).then(|| oracle[0].0);
                    prop_assert_eq!(got.map(|g| g.0), want);
                    if let Some((t, e)) = got {
                        let k = oracle.iter().position(|o| *o == (t, e)).expect("popped a pushed event");
                        oracle.remove(k);
                        now = t;
                    }
                } else {
                    q.push(now + dt, id);
                    oracle.push((now + dt, id));
                    id += 1;
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time(), oracle.iter().map(|o| o.0).min());
            }
        }
    }

    #[test]
    fn pop_due_respects_the_bound() {
        let mut q = RadixQueue::new();
        q.push(9, 'b');
        q.push(5, 'a');
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.pop_due(5), Some((5, 'a')));
        q.push(7, 'c');
        assert_eq!(q.pop_due(8), Some((7, 'c')));
        assert_eq!(q.pop_due(8), None);
        assert_eq!(q.peek_time(), Some(9));
    }
}

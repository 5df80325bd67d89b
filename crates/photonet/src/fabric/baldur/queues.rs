//! Baldur's event orders. None is a general priority queue: each exploits
//! a property of what it holds, and each replaced a binary heap for a
//! measured gain (see `docs/perf-notes/baldur-net.md`).
//!
//! - [`Wakes`]: transmitter wake-ups, all within one transmission of now:
//!   a ring of time buckets instead of a heap sift of ~log2(nodes) levels
//!   per push and pop.
//! - [`TimedFifo`]: timeouts, each a constant time after its transmission,
//!   so already in time order; the front's time in a field, because the
//!   run loop asks for it several times per step.
//! - [`ArrivalFifo`]: arrivals of full-size data packets and ACKs (each a
//!   constant time after it starts) whose fates the batched switch
//!   traversal learns later: written once, where they are taken from.

use crate::units::SimTime;
use std::collections::VecDeque;

/// Transmitter wake-ups in (time, seq) order: a ring of time buckets.
///
/// A wake-up is scheduled at the end of a transmission that has started, so
/// every one lies in [now, now + horizon], horizon = the longest wire time
/// plus the end gap. The ring spans more than that, so each bucket holds
/// wake-ups of one ring lap only, and the first non-empty bucket from now's
/// holds the earliest; within it, the least (time, seq) is found by a scan
/// (a few entries: the wake-ups of about one bucket width). This replaces a
/// binary heap (a sift of ~log2(nodes) levels per push and pop) with the same
/// order: (time, seq) is a total order, so any exact priority queue pops
/// the same sequence.
///
/// A bucket's first `Wakes::SLOTS` entries live in one flat array, bucket
/// after bucket, so pushes (near now + horizon) and pops (near now) each
/// walk through memory in order; a bucket with more (a burst of wake-ups
/// at one instant) keeps the rest in a spill list of its own. (A `Vec` per
/// bucket put every bucket's entries somewhere else on the heap: a cache
/// miss per push and per pop at paper scale.)
pub(super) struct Wakes {
    /// Bucket width: 2^shift ps.
    shift: u32,
    /// Bucket i's first entries: `slots[i * SLOTS..][..count[i]]`.
    slots: Vec<(SimTime, u64, u32)>,
    count: Vec<u8>,
    /// Bucket i's entries beyond `SLOTS` (only when `count[i] == SLOTS`).
    spill: Vec<Vec<(SimTime, u64, u32)>>,
    /// Bit i set: bucket i is not empty (so the first non-empty bucket is
    /// found a word at a time, not by a scan over empty buckets).
    occupied: Vec<u64>,
    /// The absolute bucket index (time >> shift) of the latest `now` seen:
    /// no wake-up lies before it.
    floor: u64,
    len: usize,
    /// The earliest wake-up: (time, seq, bucket, position), kept current
    /// (a push compares, a pop rescans), so peeking is free. A position at
    /// or past `SLOTS` is in the bucket's spill list.
    head: Option<(SimTime, u64, usize, usize)>,
}

impl Wakes {
    /// Entries per bucket in the flat array.
    const SLOTS: usize = 4;

    pub(super) fn new(horizon: SimTime) -> Wakes {
        // About 1,024 buckets over the horizon (a few wake-ups each to scan
        // for the least), at least 256 ps wide.
        let shift = (horizon.0 / 1024)
            .max(1 << 8)
            .next_power_of_two()
            .trailing_zeros();
        let n = ((horizon.0 >> shift) + 2).next_power_of_two() as usize;
        Wakes {
            shift,
            slots: vec![(SimTime::ZERO, 0, 0); n * Self::SLOTS],
            count: vec![0; n],
            spill: vec![Vec::new(); n],
            occupied: vec![0; n.div_ceil(64)],
            floor: 0,
            len: 0,
            head: None,
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn slot(&self, abs: u64) -> usize {
        (abs as usize) & (self.count.len() - 1)
    }

    /// Entry j of bucket i.
    #[inline]
    fn entry(&self, i: usize, j: usize) -> (SimTime, u64, u32) {
        if j < Self::SLOTS {
            self.slots[i * Self::SLOTS + j]
        } else {
            self.spill[i][j - Self::SLOTS]
        }
    }

    pub(super) fn push(&mut self, now: SimTime, t: SimTime, seq: u64, h: u32) {
        self.floor = self.floor.max(now.0 >> self.shift);
        let abs = t.0 >> self.shift;
        assert!(
            t >= now && abs - self.floor < self.count.len() as u64,
            "a wake-up beyond the ring's horizon"
        );
        let i = self.slot(abs);
        let c = self.count[i] as usize;
        let j = if c < Self::SLOTS {
            self.slots[i * Self::SLOTS + c] = (t, seq, h);
            self.count[i] += 1;
            c
        } else {
            self.spill[i].push((t, seq, h));
            Self::SLOTS + self.spill[i].len() - 1
        };
        self.occupied[i / 64] |= 1 << (i % 64);
        self.len += 1;
        if self.head.is_none_or(|(ht, hq, _, _)| (t, seq) < (ht, hq)) {
            self.head = Some((t, seq, i, j));
        }
    }

    /// The first non-empty bucket and the position of its least entry.
    #[inline]
    fn first(&self) -> Option<(usize, usize)> {
        if self.len == 0 {
            return None;
        }
        // The first occupied bucket at or after floor's, cyclically: every
        // wake-up lies within one lap of the floor, so that is the earliest.
        let start = self.slot(self.floor);
        let words = self.occupied.len();
        let (w0, b0) = (start / 64, start % 64);
        let mut i = None;
        for k in 0..=words {
            let w = (w0 + k) % words;
            let mut m = self.occupied[w];
            if k == 0 {
                m &= !0u64 << b0;
            } else if k == words {
                m &= (1u64 << b0) - 1;
            }
            if m != 0 {
                i = Some(w * 64 + m.trailing_zeros() as usize);
                break;
            }
        }
        let i = i.unwrap_or_else(|| unreachable!("{} wake-ups but every bucket empty", self.len));
        let c = self.count[i] as usize;
        let b = &self.slots[i * Self::SLOTS..][..c];
        let mut j = 0;
        let mut least = (b[0].0, b[0].1);
        for (x, e) in b.iter().enumerate().skip(1) {
            if (e.0, e.1) < least {
                (j, least) = (x, (e.0, e.1));
            }
        }
        if c == Self::SLOTS {
            for (x, e) in self.spill[i].iter().enumerate() {
                if (e.0, e.1) < least {
                    (j, least) = (Self::SLOTS + x, (e.0, e.1));
                }
            }
        }
        Some((i, j))
    }

    /// The earliest wake-up's (time, seq).
    #[inline]
    pub(super) fn peek(&self) -> Option<(SimTime, u64)> {
        self.head.map(|(t, q, _, _)| (t, q))
    }

    /// Removes the earliest wake-up (due at or before `now`): its node.
    #[inline]
    pub(super) fn pop(&mut self, now: SimTime) -> u32 {
        let (_, _, i, j) = self.head.expect("a wake-up");
        debug_assert_eq!(Some((i, j)), self.first());
        let e = if j >= Self::SLOTS {
            self.spill[i].swap_remove(j - Self::SLOTS)
        } else {
            // Move the bucket's last entry (its last spilled one, if any)
            // into the freed place: a bucket's order does not matter.
            let base = i * Self::SLOTS;
            let e = self.slots[base + j];
            let spilled = if self.count[i] as usize == Self::SLOTS {
                self.spill[i].pop()
            } else {
                None
            };
            match spilled {
                Some(s) => self.slots[base + j] = s,
                None => {
                    self.count[i] -= 1;
                    let c = self.count[i] as usize;
                    self.slots[base + j] = self.slots[base + c];
                }
            }
            e
        };
        if self.count[i] == 0 {
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        debug_assert!(e.0 <= now);
        self.len -= 1;
        self.floor = self.floor.max(now.0 >> self.shift);
        self.head = self.first().map(|(i, j)| {
            let e = self.entry(i, j);
            (e.0, e.1, i, j)
        });
        e.2
    }
}

/// Entries in time order (each pushed no earlier than the last), with the
/// front's time kept in a field: the run loop asks for it several times per
/// step (is it due? the earliest of everything?), so each ask is one load,
/// not a look into the queue.
pub(super) struct TimedFifo<T> {
    q: VecDeque<(SimTime, T)>,
    /// The front's time; `SimTime::MAX` when empty (no event is ever due
    /// at `SimTime::MAX`: `earliest` reports that as none).
    due: SimTime,
}

impl<T: Copy> TimedFifo<T> {
    pub(super) fn new() -> TimedFifo<T> {
        TimedFifo {
            q: VecDeque::new(),
            due: SimTime::MAX,
        }
    }

    #[inline]
    pub(super) fn due(&self) -> SimTime {
        self.due
    }

    pub(super) fn front(&self) -> Option<&(SimTime, T)> {
        self.q.front()
    }

    #[inline]
    pub(super) fn push(&mut self, t: SimTime, e: T) {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= t), "out of order");
        if self.q.is_empty() {
            self.due = t;
        }
        self.q.push_back((t, e));
    }

    #[inline]
    pub(super) fn pop(&mut self) -> (SimTime, T) {
        let e = self.q.pop_front().expect("a due entry");
        self.due = self.q.front().map_or(SimTime::MAX, |f| f.0);
        e
    }
}

/// Arrivals in time order whose fates are learned later, in order: each is
/// pushed when its packet starts transmission, before it has been pushed
/// through the switches; once it has (`settle_all`), a dropped one is marked
/// and skipped. So a delivered packet's arrival is written once, where it is
/// taken from, not first to a pending list and then copied here.
pub(super) struct ArrivalFifo<T> {
    q: VecDeque<(SimTime, T)>,
    /// Entries popped so far: the entry pushed n-th is at `n - popped`.
    popped: u64,
    /// The first `ready` entries' fates are known (the rest are pending).
    ready: usize,
    /// The first ready live entry's time; `SimTime::MAX` if none.
    due: SimTime,
}

impl<T: Copy> ArrivalFifo<T> {
    /// A dropped entry's time: it is never due.
    const DROPPED: SimTime = SimTime::MAX;

    pub(super) fn new() -> ArrivalFifo<T> {
        ArrivalFifo {
            q: VecDeque::new(),
            popped: 0,
            ready: 0,
            due: SimTime::MAX,
        }
    }

    #[inline]
    pub(super) fn due(&self) -> SimTime {
        self.due
    }

    /// Entries held, dropped ones not yet skipped included.
    pub(super) fn len(&self) -> usize {
        self.q.len()
    }

    /// Adds an arrival (fate pending) at `t`, no earlier than any live one
    /// before it; returns its number, for `mark_dropped`.
    #[inline]
    pub(super) fn push(&mut self, t: SimTime, e: T) -> u64 {
        debug_assert!(
            self.q
                .iter()
                .rev()
                .find(|b| b.0 != Self::DROPPED)
                .is_none_or(|b| b.0 <= t),
            "out of order"
        );
        self.q.push_back((t, e));
        self.popped + self.q.len() as u64 - 1
    }

    /// Entry `n` (pending) was dropped in the switches.
    #[inline]
    pub(super) fn mark_dropped(&mut self, n: u64) {
        let i = (n - self.popped) as usize;
        debug_assert!(i >= self.ready, "a settled arrival marked dropped");
        self.q[i].0 = Self::DROPPED;
    }

    /// Every entry's fate is known now.
    #[inline]
    pub(super) fn settle_all(&mut self) {
        self.ready = self.q.len();
        self.skip_dropped();
    }

    #[inline]
    fn skip_dropped(&mut self) {
        while self.ready > 0 && self.q.front().is_some_and(|f| f.0 == Self::DROPPED) {
            self.q.pop_front();
            self.popped += 1;
            self.ready -= 1;
        }
        self.due = if self.ready > 0 {
            self.q.front().map_or(SimTime::MAX, |f| f.0)
        } else {
            SimTime::MAX
        };
    }

    /// Removes the first live entry (due).
    #[inline]
    pub(super) fn pop(&mut self) -> (SimTime, T) {
        debug_assert!(self.ready > 0 && self.due != SimTime::MAX);
        let e = self.q.pop_front().expect("a due entry");
        self.popped += 1;
        self.ready -= 1;
        self.skip_dropped();
        e
    }
}

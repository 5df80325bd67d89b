//! A calendar queue (timing wheel) for packet events: the substrate's event
//! queue.
//!
//! Packet events are dense in time (thousands per simulated microsecond in
//! a loaded fat-tree) and almost all land within a few tens of microseconds
//! of the present (a propagation delay plus queueing); a NIC's backlog (a
//! whole window sent at once) lands up to a few hundred. The wheel has
//! `2^18` buckets of `2^9` ps (0.5 ns) each — a 134 µs horizon (a denser
//! network picks narrower buckets: [`shift_for`]); later
//! events wait in an overflow binary heap and move onto the wheel as it
//! turns. `push` links the entry into its bucket's list (entries live in one
//! slab with a free list: no allocation per bucket) and sets a bit in an
//! occupancy bitmap;
//! when the wheel reaches a bucket it is sorted (a handful of entries; a
//! long one, hosts in lock-step, by merging its sorted runs) and drained
//! from its end. Why a wheel and not the core's binary heap
//! (`queue::EventQueue`): ~25,000 pending packet events at k = 16 make a
//! heap's sift a dozen dependent cache misses per push and pop, where the
//! wheel touches one bucket (`benches/net.rs`, `queue/*`).
//!
//! Memory: the pending events of a loaded k = 16 fat-tree do not fit in a
//! core's L2, so draining a bucket misses once per entry. A slab entry is
//! padded to one 64-byte line (a packet event is 56 bytes; unaligned,
//! nearly every entry would straddle two lines). The lists' links are an
//! array of their own (4 bytes a slot: it stays in cache), so walking a
//! bucket never waits for an entry's miss to find the next one and the
//! entries' misses overlap. The slab's free list is last-in first-out, so
//! a push writes where a pop has just read. A summary bitmap (a bit per
//! occupancy word) bounds the search for the next occupied bucket, and the
//! rewind's scan, to 64 words. (The measurements behind these choices:
//! `docs/perf-notes/baldur-net.md`, "Calendar queue".)
//!
//! Order: exact by time; entries at the same time come out by ascending
//! payload, so the order depends only on what was pushed, never on how.
//! [`peek_time`](CalendarQueue::peek_time) is O(1) on `&self` (the current
//! bucket is kept non-empty while the queue is).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Default bucket width: 2^9 ps.
const SHIFT: u32 = 9;
/// Narrowest bucket [`shift_for`] picks: 2^6 ps.
const MIN_SHIFT: u32 = 6;
/// Events per bucket [`shift_for`] aims at.
const PER_BUCKET: u64 = 8;
const BUCKETS: usize = 1 << 18;
const MASK: u64 = BUCKETS as u64 - 1;
const WORDS: usize = BUCKETS / 64;
/// Words of the summary bitmap (a bit per occupancy word).
const SUMMARY: usize = WORDS / 64;
const NIL: u32 = u32::MAX;

/// A wheel entry: one cache line (a packet event is 56 bytes; unaligned,
/// most entries would straddle two lines and a pop would miss twice).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Slot<E> {
    t: u64,
    ev: E,
}

/// A min-queue of `(time, payload)`; every push must be at or after the
/// time of the last pop. The payload is stored by value: a packet network
/// keeps its in-flight packets here, so that popping an event brings the
/// packet with it (one cache miss per hop, not two).
#[derive(Debug)]
pub struct CalendarQueue<E = u32> {
    /// Per bucket, the first entry of its list in `slab` (NIL: empty).
    heads: Vec<u32>,
    /// Entries of all buckets; released slots are chained (through `next`)
    /// from `free`, the last released first.
    slab: Vec<Slot<E>>,
    /// Per slot, the next slot in its bucket's list or in the free list:
    /// apart from the entries, so that walking a list stays in cache (4
    /// bytes a slot) and the entries' loads do not wait for each other.
    next: Vec<u32>,
    free: u32,
    bits: [u64; WORDS],
    /// Bit `w` set iff `bits[w]` is non-zero: finding the next occupied
    /// bucket scans at most `SUMMARY` words, not `WORDS` (a queue of sparse
    /// timers — RTOs beyond the horizon — scanned all 4,096 per pop).
    summary: [u64; SUMMARY],
    /// The current bucket's entries, sorted descending (the minimum last).
    cur: Vec<(u64, E)>,
    /// Scratch of the long buckets' merge sort (kept: no allocation per
    /// bucket).
    sort: MergeScratch<E>,
    /// Absolute number (time >> shift) of the current bucket.
    cur_abs: u64,
    /// log2 of the bucket width in ps.
    shift: u32,
    overflow: BinaryHeap<Reverse<(u64, E)>>,
    len: usize,
    last_pop: u64,
}

impl<E: Copy + Ord> Default for CalendarQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Ord> CalendarQueue<E> {
    /// Buckets of 2^9 ps.
    pub fn new() -> Self {
        Self::with_bucket_shift(SHIFT)
    }

    /// Buckets of `2^shift` ps (the horizon is 2^18 of them). The order
    /// does not depend on it; the cost does: a bucket holding many entries
    /// is sorted when the wheel reaches it (see [`shift_for`]).
    pub fn with_bucket_shift(shift: u32) -> Self {
        assert!(shift <= 40, "calendar: bucket shift {shift}");
        CalendarQueue {
            heads: vec![NIL; BUCKETS],
            slab: Vec::new(),
            next: Vec::new(),
            free: NIL,
            bits: [0; WORDS],
            summary: [0; SUMMARY],
            cur: Vec::new(),
            sort: MergeScratch::default(),
            cur_abs: 0,
            shift,
            overflow: BinaryHeap::new(),
            len: 0,
            last_pop: 0,
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
        self.cur.last().map(|e| e.0)
    }

    #[inline]
    fn put(&mut self, t: u64, ev: E) {
        let a = t >> self.shift;
        if a >= self.cur_abs + BUCKETS as u64 {
            self.overflow.push(Reverse((t, ev)));
        } else {
            self.link((a & MASK) as usize, t, ev);
        }
    }

    /// Adds (t, ev) to wheel bucket `b`'s list.
    #[inline]
    fn link(&mut self, b: usize, t: u64, ev: E) {
        let head = self.heads[b];
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.next[i as usize];
            self.next[i as usize] = head;
            self.slab[i as usize] = Slot { t, ev };
            i
        } else {
            self.slab.push(Slot { t, ev });
            self.next.push(head);
            (self.slab.len() - 1) as u32
        };
        self.heads[b] = i;
        self.bits[b / 64] |= 1 << (b % 64);
        self.summary[b / 64 / 64] |= 1 << (b / 64 % 64);
    }

    /// Empties wheel bucket `b`, handing each entry to `f`.
    #[inline]
    fn unlink_all(&mut self, b: usize, mut f: impl FnMut(&mut Self, (u64, E))) {
        let mut i = self.detach(b);
        while i != NIL {
            let (next, e) = self.release(i);
            f(self, e);
            i = next;
        }
    }

    /// Takes bucket `b`'s chain off the wheel (clearing its occupancy bits)
    /// and returns its first slot; [`Self::release`] walks it.
    #[inline(always)]
    fn detach(&mut self, b: usize) -> u32 {
        let i = std::mem::replace(&mut self.heads[b], NIL);
        self.bits[b / 64] &= !(1 << (b % 64));
        if self.bits[b / 64] == 0 {
            self.summary[b / 64 / 64] &= !(1 << (b / 64 % 64));
        }
        i
    }

    /// Frees slot `i` of a detached chain: its entry and the next slot.
    #[inline(always)]
    fn release(&mut self, i: u32) -> (u32, (u64, E)) {
        let next = self.next[i as usize];
        self.next[i as usize] = self.free;
        let Slot { t, ev } = self.slab[i as usize];
        self.free = i;
        (next, (t, ev))
    }

    /// Adds `ev` at `t` (not before the last pop).
    ///
    /// Inlined always, the common case only (a later bucket within the
    /// horizon, a free slot): out of line, each push saved and restored six
    /// registers twice (`push`, then `link`), ~30 of its ~95 instructions.
    #[inline(always)]
    pub fn push(&mut self, t: u64, ev: E) {
        debug_assert!(
            t >= self.last_pop,
            "calendar: push at {t} before {}",
            self.last_pop
        );
        let a = t >> self.shift;
        // cur_abs < a < cur_abs + BUCKETS, in one comparison.
        let ahead = a.wrapping_sub(self.cur_abs + 1) < BUCKETS as u64 - 1;
        if self.len != 0 && ahead && self.free != NIL {
            self.len += 1;
            let b = (a & MASK) as usize;
            let i = self.free;
            self.free = self.next[i as usize];
            self.next[i as usize] = self.heads[b];
            self.slab[i as usize] = Slot { t, ev };
            self.heads[b] = i;
            self.bits[b / 64] |= 1 << (b % 64);
            self.summary[b / 64 / 64] |= 1 << (b / 64 % 64);
        } else {
            self.push_rest(t, ev);
        }
    }

    /// [`Self::push`] outside its common case.
    #[inline(never)]
    fn push_rest(&mut self, t: u64, ev: E) {
        self.len += 1;
        let a = t >> self.shift;
        if self.len == 1 {
            self.cur_abs = a;
            self.cur.push((t, ev));
        } else if a == self.cur_abs {
            // Into the sorted current bucket (usually at its front: later).
            let e = (t, ev);
            let i = self.cur.partition_point(|x| *x > e);
            self.cur.insert(i, e);
        } else if a > self.cur_abs {
            self.put(t, ev);
        } else {
            // Earlier than the current bucket (which was reached ahead of
            // time): park the current bucket and make this one current.
            let b = (self.cur_abs & MASK) as usize;
            debug_assert!(self.heads[b] == NIL);
            let mut old = std::mem::take(&mut self.cur);
            for &(t0, e0) in &old {
                self.link(b, t0, e0);
            }
            old.clear();
            self.cur = old;
            // Wheel positions a .. old (circularly) now stand for a later
            // lap, beyond the horizon: their entries go to the overflow heap.
            let old_abs = self.cur_abs;
            self.cur_abs = a;
            self.cur.push((t, ev));
            // (Usually all empty: empty words are skipped through the
            // summary bitmap.)
            let n = (old_abs - a).min(BUCKETS as u64);
            let mut k = 0;
            while k < n {
                let b = ((a + k) & MASK) as usize;
                let word = self.bits[b / 64] >> (b % 64);
                if word == 0 {
                    // On to the next occupied word, if within the range.
                    let Some(w) = self.next_word((b / 64 + 1) % WORDS) else {
                        break;
                    };
                    k += (((w * 64) as u64).wrapping_sub(b as u64) & MASK).max(1);
                    continue;
                }
                let span = (64 - (b % 64) as u64).min(n - k);
                let mut m = if span == 64 {
                    word
                } else {
                    word & ((1u64 << span) - 1)
                };
                while m != 0 {
                    let i = m.trailing_zeros() as usize;
                    m &= m - 1;
                    self.unlink_all(b + i, |q, e| q.overflow.push(Reverse(e)));
                }
                k += span;
            }
        }
    }

    /// Removes the earliest entry if it is due at or before `now`.
    /// Inlined always (the bucket change, `advance`, stays out of line):
    /// a call returned the 64-byte entry through memory and saved and
    /// restored registers on each of the packet network's pops.
    #[inline(always)]
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, E)> {
        match self.cur.last() {
            Some(e) if e.0 <= now => {}
            _ => return None,
        }
        let e = self.cur.pop().expect("checked");
        self.len -= 1;
        self.last_pop = e.0;
        if self.cur.is_empty() && self.len > 0 {
            self.advance();
        }
        Some(e)
    }

    /// Makes the next non-empty bucket current.
    #[inline(never)]
    fn advance(&mut self) {
        // Usually the next occupied bucket is in the current one's word and
        // nothing waits in the overflow heap to come within the horizon.
        let start = ((self.cur_abs + 1) & MASK) as usize;
        let m0 = self.bits[start / 64] & (!0u64 << (start % 64));
        let a = self.cur_abs + 1 + (m0.trailing_zeros() as u64).wrapping_sub((start % 64) as u64);
        let over = match self.overflow.peek() {
            Some(Reverse(e)) => e.0 >> self.shift,
            None => u64::MAX,
        };
        let a = if m0 != 0 && over >= a + BUCKETS as u64 {
            a
        } else {
            self.advance_far()
        };
        self.cur_abs = a;
        // The bucket straight into `cur` (empty here).
        let i = self.detach((a & MASK) as usize);
        drain_chain(&self.slab, &mut self.next, &mut self.free, &mut self.cur, i);
        if self.cur.len() > 1 {
            sort_descending(&mut self.cur, &mut self.sort);
        }
    }

    /// The bucket [`Self::advance`] moves to when it is not in the current
    /// word, or overflow entries come within the horizon (moved onto the
    /// wheel here).
    #[inline(never)]
    fn advance_far(&mut self) -> u64 {
        // The next occupied wheel bucket after the current one.
        let start = ((self.cur_abs + 1) & MASK) as usize;
        let w0 = start / 64;
        let m0 = self.bits[w0] & (!0u64 << (start % 64));
        let b = if m0 != 0 {
            Some(w0 * 64 + m0.trailing_zeros() as usize)
        } else {
            // The words after `w0`, circularly, `w0` itself last (its bits
            // at or after `start` are clear: what is left of it is a lap on).
            self.next_word((w0 + 1) % WORDS)
                .map(|w| w * 64 + self.bits[w].trailing_zeros() as usize)
        };
        let next_wheel = b.map(|b| {
            let dist = (b as u64).wrapping_sub(start as u64) & MASK;
            self.cur_abs + 1 + dist
        });
        let next_over = self.overflow.peek().map(|Reverse(e)| e.0 >> self.shift);
        let a = match (next_wheel, next_over) {
            (Some(w), Some(o)) => w.min(o),
            (Some(w), None) => w,
            (None, Some(o)) => o,
            (None, None) => unreachable!("len > 0"),
        };
        self.cur_abs = a;
        // Overflow entries now within the horizon move onto the wheel.
        while let Some(Reverse(e)) = self.overflow.peek() {
            if e.0 >> self.shift >= a + BUCKETS as u64 {
                break;
            }
            let Reverse(e) = self.overflow.pop().expect("peeked");
            self.put(e.0, e.1);
        }
        a
    }

    /// The first non-zero occupancy word at or after word `from`, going
    /// round once (`from` - 1 last).
    #[inline]
    fn next_word(&self, from: usize) -> Option<usize> {
        let (s0, bit) = (from / 64, from % 64);
        for k in 0..=SUMMARY {
            let i = (s0 + k) % SUMMARY;
            let mut m = self.summary[i];
            if k == 0 {
                m &= !0u64 << bit;
            } else if k == SUMMARY {
                m &= (1u64 << bit).wrapping_sub(1);
            }
            if m != 0 {
                return Some(i * 64 + m.trailing_zeros() as usize);
            }
        }
        None
    }
}

/// The bucket shift for events that come `gap_ps` picoseconds apart on
/// average: buckets of about `PER_BUCKET` events, from 2^6 up to the
/// default 2^9 ps (a dense network's 0.5 ns buckets hold dozens of
/// entries, each bucket sorted when reached).
pub fn shift_for(gap_ps: u64) -> u32 {
    let w = gap_ps.saturating_mul(PER_BUCKET).max(1);
    (63 - w.leading_zeros()).clamp(MIN_SHIFT, SHIFT)
}

/// Timers on a calendar wheel: due in (time, scheduling order), like
/// [`TimerQueue`](crate::timer::TimerQueue) without cancellation. The packet
/// network schedules a timer per data packet (its round-robin NIC's wake-up)
/// and pushes RTOs back lazily, never cancelling: on a binary heap, its
/// `pop` was ~8 % of the k = 16 spraying benchmark's profile.
#[derive(Debug)]
pub struct TimerWheel<E> {
    q: CalendarQueue<(u64, E)>,
    seq: u64,
}

impl<E: Copy + Ord> Default for TimerWheel<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Ord> TimerWheel<E> {
    pub fn new() -> Self {
        TimerWheel {
            q: CalendarQueue::new(),
            seq: 0,
        }
    }

    /// Schedules `ev` at `at` (not before the last pop).
    #[inline]
    pub fn schedule(&mut self, at: crate::units::SimTime, ev: E) {
        self.seq += 1;
        self.q.push(at.0, (self.seq, ev));
    }

    /// The earliest timer's time. O(1).
    #[inline]
    pub fn peek_time(&self) -> Option<crate::units::SimTime> {
        self.q.peek_time().map(crate::units::SimTime)
    }

    /// Removes the earliest timer (the first scheduled among equal times).
    #[inline]
    pub fn pop(&mut self) -> Option<(crate::units::SimTime, E)> {
        self.q
            .pop_due(u64::MAX)
            .map(|(t, (_, ev))| (crate::units::SimTime(t), ev))
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

/// Frees the detached chain from slot `i` (onto the free list `free`),
/// appending its entries to `cur`. The fields as separate borrows: through
/// `&mut self`, each step stored the free list's head and `cur`'s length
/// back to memory.
#[inline(always)]
fn drain_chain<E: Copy>(
    slab: &[Slot<E>],
    next: &mut [u32],
    free: &mut u32,
    cur: &mut Vec<(u64, E)>,
    mut i: u32,
) {
    let mut f = *free;
    while i != NIL {
        let n = next[i as usize];
        next[i as usize] = f;
        f = i;
        let s = &slab[i as usize];
        cur.push((s.t, s.ev));
        i = n;
    }
    *free = f;
}

/// Sorts descending (the minimum last). A bucket's list comes out newest
/// push first, and most pushes are later than the ones before (a hop's
/// delay is mostly one fixed serialisation plus propagation): nearly sorted
/// already. Short buckets: insertion sort; long ones (synchronised bursts:
/// hosts in lock-step put hundreds of events at one time) are a few
/// sorted runs, merged ([`merge_runs`]). Entries that compare equal are
/// identical, so the result is the same whichever sort runs.
#[inline]
fn sort_descending<E: Copy + Ord>(v: &mut [(u64, E)], scratch: &mut MergeScratch<E>) {
    if v.len() > 32 {
        return sort_long(v, scratch);
    }
    for i in 1..v.len() {
        if v[i - 1] >= v[i] {
            continue;
        }
        let e = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] < e {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

/// [`sort_descending`] of more than 32 entries (out of line: the bucket
/// change stays small).
#[inline(never)]
fn sort_long<E: Copy + Ord>(v: &mut [(u64, E)], scratch: &mut MergeScratch<E>) {
    if !v.is_sorted_by(|x, y| x >= y) {
        merge_runs(v, scratch);
    }
}

/// Buffers of [`merge_runs`].
#[derive(Debug)]
struct MergeScratch<E> {
    /// The side of a merge copied out.
    side: Vec<(u64, E)>,
    /// Ends of the runs (exclusive), and of the merged ones.
    ends: Vec<usize>,
    merged: Vec<usize>,
}

impl<E> Default for MergeScratch<E> {
    fn default() -> Self {
        MergeScratch {
            side: Vec::new(),
            ends: Vec::new(),
            merged: Vec::new(),
        }
    }
}

/// Sorts `v` descending by merging its natural runs (an ascending run
/// reversed first): a long bucket of the 1,024-host ring all-reduce holds
/// ~150 entries in 1–5 runs, where the library's unstable sort spent
/// ~23 % of the run's instructions (callgrind) and its stable one, which
/// quicksorts short runs, about half that.
#[inline]
fn merge_runs<E: Copy + Ord>(v: &mut [(u64, E)], s: &mut MergeScratch<E>) {
    let n = v.len();
    s.ends.clear();
    let mut i = 0;
    while i < n {
        let start = i;
        i += 1;
        if i < n && v[i - 1] < v[i] {
            while i < n && v[i - 1] < v[i] {
                i += 1;
            }
            v[start..i].reverse();
        } else {
            while i < n && v[i - 1] >= v[i] {
                i += 1;
            }
        }
        s.ends.push(i);
    }
    // Adjacent runs merged pairwise until one is left.
    while s.ends.len() > 1 {
        s.merged.clear();
        let mut start = 0;
        let mut k = 0;
        while k + 1 < s.ends.len() {
            let (mid, end) = (s.ends[k], s.ends[k + 1]);
            merge_two(&mut v[start..end], mid - start, &mut s.side);
            s.merged.push(end);
            start = end;
            k += 2;
        }
        if k < s.ends.len() {
            s.merged.push(s.ends[k]);
        }
        std::mem::swap(&mut s.ends, &mut s.merged);
    }
}

/// Merges the descending runs `v[..mid]` and `v[mid..]`. Only the overlap
/// moves (the left run's head above the whole right run, and the right
/// run's tail below the whole left run, stay where they are), and only its
/// shorter side is copied out.
#[inline]
fn merge_two<E: Copy + Ord>(v: &mut [(u64, E)], mid: usize, side: &mut Vec<(u64, E)>) {
    if v[mid - 1] >= v[mid] {
        return;
    }
    let first = v[mid];
    let lo = v[..mid].partition_point(|x| *x >= first);
    let last = v[mid - 1];
    let hi = mid + v[mid..].partition_point(|x| *x > last);
    side.clear();
    if mid - lo <= hi - mid {
        // The left part out; merged from the front.
        side.extend_from_slice(&v[lo..mid]);
        let (mut a, mut b, mut o) = (0, mid, lo);
        while a < side.len() && b < hi {
            if side[a] >= v[b] {
                v[o] = side[a];
                a += 1;
            } else {
                v[o] = v[b];
                b += 1;
            }
            o += 1;
        }
        // What is left of the right part is in place already.
        v[o..o + side.len() - a].copy_from_slice(&side[a..]);
    } else {
        // The right part out; merged from the back.
        side.extend_from_slice(&v[mid..hi]);
        let (mut a, mut b, mut o) = (mid, side.len(), hi);
        while a > lo && b > 0 {
            o -= 1;
            if v[a - 1] < side[b - 1] {
                v[o] = v[a - 1];
                a -= 1;
            } else {
                v[o] = side[b - 1];
                b -= 1;
            }
        }
        // What is left of the left part is in place already.
        v[lo..lo + b].copy_from_slice(&side[..b]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop, some far ahead)
        /// and pops agree with a sorted oracle, entry for entry.
        #[test]
        fn pops_in_time_then_payload_order(
            ops in prop::collection::vec((0u64..300_000_000, 0u8..4), 1..600)
        ) {
            let mut q = CalendarQueue::<u32>::new();
            let mut oracle: Vec<(u64, u32)> = Vec::new();
            let (mut now, mut id) = (0u64, 0u32);
            for (dt, op) in ops {
                if op == 0 {
                    let got = q.pop_due(u64::MAX);
                    oracle.sort();
                    let want = (!oracle.is_empty()).then(|| oracle.remove(0));
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    // Mostly near (within a few buckets), sometimes far.
                    let t = now + if op == 1 { dt } else { dt % 20_000 };
                    q.push(t, id);
                    oracle.push((t, id));
                    id += 1;
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time(), oracle.iter().map(|o| o.0).min());
            }
        }
    }

    proptest! {
        /// Every bucket width pops as a `BinaryHeap` does, ties included:
        /// times at a handful of offsets scaled to the width (within a
        /// bucket, a few buckets on, beyond the horizon), repeated
        /// payloads, bounded pops (so the wheel runs ahead and rewinds).
        #[test]
        fn every_bucket_shift_pops_as_a_binary_heap(
            shift in 0u32..13,
            ops in prop::collection::vec((0u64..8, 0u64..4, 0u32..5, 0u8..5), 1..800)
        ) {
            let mut q = CalendarQueue::<(u32, u8)>::with_bucket_shift(shift);
            let mut oracle = BinaryHeap::new();
            let w = 1u64 << shift;
            let mut now = 0u64;
            for (step, scale, payload, op) in ops {
                if op < 2 {
                    let bound = now + step * w * 3 / 2;
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
                    let unit = [1, w / 2 + 1, w * 5, w * BUCKETS as u64 / 3][scale as usize];
                    let t = now + step * unit;
                    let e = (payload, op);
                    q.push(t, e);
                    oracle.push(Reverse((t, e)));
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time(), oracle.peek().map(|r| r.0 .0));
            }
            while let Some(Reverse(want)) = oracle.pop() {
                prop_assert_eq!(q.pop_due(u64::MAX), Some(want));
            }
            prop_assert!(q.is_empty());
        }
    }

    #[test]
    fn shift_for_aims_at_a_few_events_a_bucket() {
        // 8 events a bucket: width 8 x gap, rounded down to a power of
        // two, within 2^6..=2^9 ps.
        assert_eq!(shift_for(0), MIN_SHIFT);
        assert_eq!(shift_for(7), 6);
        assert_eq!(shift_for(8), 6);
        assert_eq!(shift_for(16), 7);
        assert_eq!(shift_for(63), 8);
        assert_eq!(shift_for(64), 9);
        assert_eq!(shift_for(1 << 40), SHIFT);
        assert_eq!(shift_for(u64::MAX), SHIFT);
        // The default queue's width.
        assert_eq!(CalendarQueue::<u32>::new().shift, SHIFT);
    }

    proptest! {
        /// The wheel fires timers as `timer::TimerQueue` does: by time, then
        /// in scheduling order (payloads chosen so that their own order
        /// disagrees with the scheduling order).
        #[test]
        fn timer_wheel_agrees_with_the_timer_queue(
            ops in prop::collection::vec((0u64..6, 0u64..4, 0u8..4), 1..500)
        ) {
            use crate::timer::TimerQueue;
            use crate::units::SimTime;
            let mut w = TimerWheel::<u32>::new();
            let mut tq = TimerQueue::<u32>::new();
            let (mut now, mut id) = (0u64, 1_000_000u32);
            for (step, scale, op) in ops {
                if op == 0 {
                    let got = w.pop();
                    prop_assert_eq!(got, tq.pop());
                    if let Some((t, _)) = got {
                        now = t.0;
                    }
                } else {
                    let at = SimTime(now + step * [1, 512, 100_000, 300_000_000][scale as usize]);
                    w.schedule(at, id);
                    tq.schedule(at, id);
                    id -= 1;
                }
                prop_assert_eq!(w.len(), tq.len());
                prop_assert_eq!(w.peek_time(), tq.peek_time());
            }
            while let Some(e) = tq.pop() {
                prop_assert_eq!(w.pop(), Some(e));
            }
            prop_assert!(w.is_empty());
        }
    }

    proptest! {
        /// The long buckets' merge of natural runs sorts as the library
        /// does: inputs made of a few runs (ascending, descending, equal
        /// stretches) with repeated keys, and arbitrary ones.
        #[test]
        fn merging_runs_sorts_descending(
            runs in prop::collection::vec((0u64..4, 0u32..50, 1usize..80, 0u8..3), 1..8),
            noise in prop::collection::vec((0u64..4, 0u32..50), 0..60),
        ) {
            let mut v: Vec<(u64, u32)> = Vec::new();
            for (t, base, len, dir) in runs {
                for i in 0..len as u32 {
                    let p = match dir {
                        0 => base + i,
                        1 => (base + 100).saturating_sub(i),
                        _ => base,
                    };
                    v.push((t, p));
                }
            }
            v.extend(noise);
            let mut want = v.clone();
            want.sort_by(|x, y| y.cmp(x));
            let mut s = MergeScratch::default();
            sort_descending(&mut v, &mut s);
            prop_assert_eq!(v, want);
        }
    }

    #[test]
    fn rewinding_moves_entries_a_lap_on_to_the_overflow() {
        // The wheel stands at 100 us; an entry at 200 us sits at a position
        // that, once the wheel rewinds to 1 us, stands for a later lap: the
        // rewind must find it (through the summary bitmap) and park it.
        let mut q = CalendarQueue::<u32>::new();
        q.push(0, 0);
        assert_eq!(q.pop_due(0), Some((0, 0)));
        q.push(100_000_000, 1);
        q.push(200_000_000, 2);
        q.push(1_000_000, 3);
        q.push(1_000_000 + (1 << 9) * 64 * 64 * 3, 4);
        assert_eq!(q.pop_due(u64::MAX), Some((1_000_000, 3)));
        assert_eq!(q.pop_due(u64::MAX), Some((7_291_456, 4)));
        assert_eq!(q.pop_due(u64::MAX), Some((100_000_000, 1)));
        assert_eq!(q.pop_due(u64::MAX), Some((200_000_000, 2)));
        assert!(q.is_empty());
    }

    #[test]
    fn long_bucket_of_equal_times_comes_out_by_payload() {
        // More entries in one bucket than the insertion sort handles, in
        // an order that is not sorted: the library sort orders them.
        let mut q = CalendarQueue::<u32>::new();
        q.push(0, 0);
        for i in 0..100u32 {
            q.push(1_000, (i * 37) % 100);
        }
        assert_eq!(q.pop_due(0), Some((0, 0)));
        for i in 0..100u32 {
            assert_eq!(q.pop_due(1_000), Some((1_000, i)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn pop_due_respects_the_bound_and_rewinds() {
        let mut q = CalendarQueue::<u32>::new();
        q.push(90_000, 2);
        q.push(50_000, 1);
        assert_eq!(q.pop_due(40_000), None);
        assert_eq!(q.pop_due(50_000), Some((50_000, 1)));
        // The wheel moved to 90,000; an earlier push still comes first.
        q.push(60_000, 3);
        q.push(60_000, 0);
        assert_eq!(q.pop_due(70_000), Some((60_000, 0)));
        assert_eq!(q.pop_due(70_000), Some((60_000, 3)));
        assert_eq!(q.pop_due(70_000), None);
        assert_eq!(q.peek_time(), Some(90_000));
        q.push(100_000_000, 4);
        assert_eq!(q.pop_due(u64::MAX), Some((90_000, 2)));
        assert_eq!(q.pop_due(u64::MAX), Some((100_000_000, 4)));
        assert!(q.is_empty() && q.peek_time().is_none());
    }
}

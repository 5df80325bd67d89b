//! The source ToRs' queues: per ordered ToR pair, one FIFO per PIAS priority
//! of segments (runs of one flow's bytes), and the flows they belong to.
//!
//! A pair's queue keeps its byte count and its head segment (the front of the
//! highest non-empty priority) inline in one cache line ([`PairQ`]), so cutting
//! packets touches one line; the other segments wait in per-priority pool
//! lists. Per source, the destinations with data are listed (`active`) and one
//! bit per pair (`has_data`) says the same for the predefined phase, which
//! reads a source's S bits at once ([`pre_ports`], oracle-tested in
//! `tests.rs`, kept whole).
//!
//! A packet is cut from one segment ([`SourceQueues::take`]) or, with
//! `packing`, filled from several ([`SourceQueues::take_packed`]).

use crate::pool::{List, Pool};
use crate::units::SimTime;

/// A run of consecutive bytes of one flow waiting in a source queue.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seg {
    pub flow: u32,
    /// The flow's destination endpoint (so sending a packet needs no flow
    /// lookup).
    pub ep: u32,
    pub left: u64,
    /// When it joined the queue (head-of-line delays).
    pub since: SimTime,
}

impl Seg {
    /// Cuts up to `max` packets of at most `payload` bytes off the front of
    /// the segment (packets never mix segments): (packets, bytes).
    #[inline]
    pub fn cut(&mut self, payload: u64, max: u64) -> (u64, u64) {
        // One packet (a predefined slot) needs no division: a queued segment
        // is never empty.
        let k = if max == 1 || self.left >= max * payload {
            max
        } else {
            self.left.div_ceil(payload)
        };
        let b = self.left.min(k * payload);
        self.left -= b;
        (k, b)
    }
}

/// A source ToR's queue for one destination: its byte count and, inline,
/// the segment packets are taken from (the front of the highest non-empty
/// priority), so the packet-by-packet work touches one cache line; the other
/// segments wait in per-priority pool lists (`SourceQueues::q`, which then
/// hold the rest of the head's priority).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct PairQ {
    bytes: u64,
    head: Seg,
    head_prio: u32,
    /// Position in the source's `active` list (u32::MAX: not listed).
    active_pos: u32,
}

impl PairQ {
    const EMPTY: PairQ = PairQ {
        bytes: 0,
        head: Seg {
            flow: 0,
            ep: 0,
            left: 0,
            since: SimTime::ZERO,
        },
        head_prio: 0,
        active_pos: u32::MAX,
    };
}

/// What a take hands to the wire.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pkt {
    pub flow: u32,
    pub ep: u32,
    pub bytes: u64,
    pub prio: u8,
    /// Packets (of `payload` bytes, the last one possibly shorter).
    pub packets: u64,
    /// The last bytes of the flow still to be sent.
    pub last: bool,
}

pub(super) struct FlowSt {
    pub dst_ep: u32,
    /// Segments of the flow not yet wholly sent, plus lost packets waiting
    /// to be retransmitted: the packet that brings it to 0 carries the
    /// flow's last byte to the destination ToR (packets reach a ToR in the
    /// order they were sent).
    pub unsent: u32,
    pub bytes: u64,
    pub start: SimTime,
    /// When the last byte reached the destination ToR.
    pub tor_done: SimTime,
}

/// Every flow offered, by id.
#[derive(Default)]
pub(super) struct Flows(pub Vec<FlowSt>);

impl Flows {
    /// The last byte of one of `flow`'s segments has been taken: whether it
    /// was the flow's last segment.
    #[inline]
    pub fn segment_sent(&mut self, flow: u32) -> bool {
        let f = &mut self.0[flow as usize];
        f.unsent -= 1;
        f.unsent == 0
    }
    /// One more segment (or lost packet) of `flow` is to be sent.
    #[inline]
    pub fn more_to_send(&mut self, flow: u32) {
        self.0[flow as usize].unsent += 1;
    }
    pub fn dst_ep(&self, flow: u32) -> u32 {
        self.0[flow as usize].dst_ep
    }
    pub fn reached_tor(&mut self, flow: u32, at: SimTime) {
        self.0[flow as usize].tor_done = at;
    }
}

/// The queues of every source ToR.
pub(super) struct SourceQueues {
    n: usize,
    prios: usize,
    pool: Pool<Seg>,
    q: Vec<List>,
    pq: Vec<PairQ>,
    tor_bytes: Vec<u64>,
    queued: u64,
    /// Per source: destinations with queued data (and each pair's position).
    active: Vec<Vec<u32>>,
    /// Per pair, one bit: whether its queue holds data (a predefined slot
    /// reads this, not the pair's line).
    has_data: Vec<u64>,
    /// Per pair: bytes in the lowest-priority queue (kept only for relay).
    track_low: bool,
    low_bytes: Vec<u64>,
    /// Stateful matching: per pair, bytes queued since the last REQUEST.
    stateful: bool,
    new_bytes: Vec<u64>,
    /// Largest backlog of one ToR (its own queues and relayed data).
    pub peak_tor_queue: u64,
}

impl SourceQueues {
    /// `n` ToRs with `prios` priorities; `track_low` keeps the elephant bytes
    /// per pair (relay), `stateful` the bytes new since the last request.
    pub fn new(n: usize, prios: usize, track_low: bool, stateful: bool) -> SourceQueues {
        SourceQueues {
            n,
            prios,
            pool: Pool::new(),
            q: vec![List::EMPTY; n * n * prios],
            pq: vec![PairQ::EMPTY; n * n],
            tor_bytes: vec![0; n],
            queued: 0,
            active: vec![Vec::new(); n],
            has_data: vec![0; (n * n).div_ceil(64)],
            track_low,
            low_bytes: if track_low { vec![0; n * n] } else { vec![] },
            stateful,
            new_bytes: if stateful { vec![0; n * n] } else { vec![] },
            peak_tor_queue: 0,
        }
    }

    /// ToRs.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Priorities per pair.
    pub fn prios(&self) -> usize {
        self.prios
    }
    /// Bytes in every source queue (and relay queue, see [`Self::count_in`]).
    pub fn queued(&self) -> u64 {
        self.queued
    }
    /// Bytes waiting at ToR `s`.
    #[inline]
    pub fn tor_bytes(&self, s: usize) -> u64 {
        self.tor_bytes[s]
    }
    /// Bytes `s` holds for `d`.
    #[inline]
    pub fn bytes(&self, s: usize, d: usize) -> u64 {
        self.pq[s * self.n + d].bytes
    }
    /// Bytes in `s`'s lowest-priority queue for `d` (relay only).
    pub fn low_bytes(&self, s: usize, d: usize) -> u64 {
        self.low_bytes[s * self.n + d]
    }
    /// Destinations `s` holds data for.
    #[inline]
    pub fn active(&self, s: usize) -> &[u32] {
        &self.active[s]
    }
    /// One bit per pair (row by source): whether it holds data.
    #[inline]
    pub fn has_data(&self) -> &[u64] {
        &self.has_data
    }
    #[inline]
    pub fn pair_has_data(&self, pair: usize) -> bool {
        self.has_data[pair / 64] & (1 << (pair % 64)) != 0
    }

    /// Bytes that wait at ToR `t` outside its own pair queues (relayed data)
    /// arrive or leave: counted in its backlog.
    pub fn count_in(&mut self, t: usize, b: u64) {
        self.tor_bytes[t] += b;
        self.queued += b;
        self.peak_tor_queue = self.peak_tor_queue.max(self.tor_bytes[t]);
    }
    pub fn count_out(&mut self, t: usize, b: u64) {
        self.tor_bytes[t] -= b;
        self.queued -= b;
    }

    /// Stateful matching: what `s` reports to `d` in a REQUEST (the bytes
    /// queued since the last one), reset.
    pub fn take_new_bytes(&mut self, s: usize, d: usize) -> u64 {
        std::mem::replace(&mut self.new_bytes[s * self.n + d], 0)
    }

    /// Stateful matching: `b` bytes of `s`'s queue for `d` left that no
    /// report or reservation covered: up to `b` of the unreported bytes
    /// need no report any more.
    pub fn forget_new_bytes(&mut self, s: usize, d: usize, b: u64) {
        let x = &mut self.new_bytes[s * self.n + d];
        *x -= b.min(*x);
    }

    /// Queues `seg` at priority `prio` of `s`'s queue for `d` (at the front
    /// of its priority for a retransmission, which is not new demand).
    pub fn push_seg(&mut self, s: usize, d: usize, prio: usize, seg: Seg, front: bool) {
        let n = self.n;
        let pair = s * n + d;
        let pq = &mut self.pq[pair];
        let prio32 = prio as u32;
        if pq.bytes == 0 {
            pq.head = seg;
            pq.head_prio = prio32;
            pq.active_pos = self.active[s].len() as u32;
            self.active[s].push(d as u32);
            self.has_data[pair / 64] |= 1 << (pair % 64);
        } else if prio32 < pq.head_prio || (front && prio32 == pq.head_prio) {
            // The new segment is the new head: the old one goes back to the
            // front of its priority's list.
            let old = std::mem::replace(&mut pq.head, seg);
            let old_prio = std::mem::replace(&mut pq.head_prio, prio32) as usize;
            let i = self.pool.alloc(old);
            self.pool
                .push_front(&mut self.q[pair * self.prios + old_prio], i);
        } else {
            let i = self.pool.alloc(seg);
            let list = &mut self.q[pair * self.prios + prio];
            if front {
                self.pool.push_front(list, i);
            } else {
                self.pool.push_back(list, i);
            }
        }
        let pq = &mut self.pq[pair];
        pq.bytes += seg.left;
        if self.track_low && prio + 1 == self.prios {
            self.low_bytes[pair] += seg.left;
        }
        self.tor_bytes[s] += seg.left;
        self.queued += seg.left;
        self.peak_tor_queue = self.peak_tor_queue.max(self.tor_bytes[s]);
        if self.stateful {
            // New data, or a retransmission: its lost packet counted as
            // sent, so it is demand to report again.
            self.new_bytes[pair] += seg.left;
        }
    }

    /// The front segment of priority `prio` of a pair's queue, if any.
    pub fn front_seg(&self, pair: usize, prio: usize) -> Option<&Seg> {
        let pq = &self.pq[pair];
        if pq.bytes == 0 || prio < pq.head_prio as usize {
            None
        } else if prio == pq.head_prio as usize {
            Some(&pq.head)
        } else {
            self.q[pair * self.prios + prio]
                .front()
                .map(|i| self.pool.get(i))
        }
    }

    /// When the oldest head of `s`'s queues for `d` joined.
    pub fn oldest_head(&self, s: usize, d: usize) -> SimTime {
        let pair = s * self.n + d;
        (0..self.prios)
            .filter_map(|p| self.front_seg(pair, p))
            .map(|seg| seg.since)
            .min()
            .unwrap_or(SimTime::MAX)
    }

    /// Every segment of `s`'s queues for `d` as `(since, bytes)` into `out`
    /// (cleared), in no particular order (ProjecToR's per-bundle ages).
    pub fn segments(&self, s: usize, d: usize, out: &mut Vec<(SimTime, u64)>) {
        out.clear();
        let pair = s * self.n + d;
        let pq = &self.pq[pair];
        if pq.bytes == 0 {
            return;
        }
        out.push((pq.head.since, pq.head.left));
        for prio in pq.head_prio as usize..self.prios {
            let list = &self.q[pair * self.prios + prio];
            out.extend(self.pool.iter(list).map(|i| {
                let seg = self.pool.get(i);
                (seg.since, seg.left)
            }));
        }
    }

    /// Takes up to `max` packets of at most `payload` bytes each from the
    /// head segment of `s`'s queue for `d` (highest priority first): returns
    /// the packets. Packets never mix segments.
    #[inline(always)]
    pub fn take(
        &mut self,
        s: usize,
        d: usize,
        payload: u64,
        max: u64,
        flows: &mut Flows,
    ) -> Option<Pkt> {
        let pair = s * self.n + d;
        let pq = &mut self.pq[pair];
        if pq.bytes == 0 {
            return None;
        }
        let seg = &mut pq.head;
        let prio = pq.head_prio as usize;
        let (k, b) = seg.cut(payload, max);
        let (flow, ep) = (seg.flow, seg.ep);
        let seg_done = seg.left == 0;
        pq.bytes -= b;
        let emptied = pq.bytes == 0;
        if self.track_low && prio + 1 == self.prios {
            self.low_bytes[pair] -= b;
        }
        self.tor_bytes[s] -= b;
        self.queued -= b;
        let mut last = false;
        if seg_done {
            if !emptied {
                // The next head: the front of the highest non-empty priority.
                let base = pair * self.prios;
                let (p, i) = (prio..self.prios)
                    .find_map(|p| self.q[base + p].front().map(|i| (p, i)))
                    .expect("pair bytes without segments");
                let mut list = self.q[base + p];
                self.pool.pop_front(&mut list);
                self.q[base + p] = list;
                let pq = &mut self.pq[pair];
                pq.head = *self.pool.get(i);
                pq.head_prio = p as u32;
                self.pool.release(i);
            }
            last = flows.segment_sent(flow);
        }
        if emptied {
            let pos = self.pq[pair].active_pos as usize;
            let moved = *self.active[s].last().expect("listed");
            self.active[s].swap_remove(pos);
            self.has_data[pair / 64] &= !(1 << (pair % 64));
            if moved as usize != d {
                self.pq[s * self.n + moved as usize].active_pos = pos as u32;
            }
            self.pq[pair].active_pos = u32::MAX;
        }
        Some(Pkt {
            flow,
            ep,
            bytes: b,
            prio: prio as u8,
            packets: k,
            last,
        })
    }

    /// Takes up to `max` packets of at most `payload` bytes each from `s`'s
    /// queue for `d` (highest priority first), each packet filled with the
    /// bytes of as many segments as fit: within the head's priority only,
    /// or across priorities with `across`. The pieces (one per segment
    /// part) go to `out`, the first piece of each packet with `packets` = 1
    /// and the others 0; returns the packets.
    pub fn take_packed(
        &mut self,
        (s, d): (usize, usize),
        (payload, max): (u64, u64),
        across: bool,
        flows: &mut Flows,
        out: &mut Vec<Pkt>,
    ) -> u64 {
        out.clear();
        let pair = s * self.n + d;
        let mut packets = 0;
        while packets < max && self.pq[pair].bytes > 0 {
            let prio = self.pq[pair].head_prio;
            let first = out.len();
            let mut room = payload;
            while room > 0 && self.pq[pair].bytes > 0 && (across || self.pq[pair].head_prio == prio)
            {
                let mut pkt = self.take(s, d, room, 1, flows).expect("pair has bytes");
                room -= pkt.bytes;
                pkt.packets = 0;
                out.push(pkt);
            }
            out[first].packets = 1;
            packets += 1;
        }
        packets
    }

    /// Like `take`, from the lowest-priority (elephant) queue of `s` for `d`
    /// only: the data a relay carries.
    pub fn take_low(
        &mut self,
        s: usize,
        d: usize,
        payload: u64,
        max: u64,
        flows: &mut Flows,
    ) -> Option<Pkt> {
        let pair = s * self.n + d;
        let low = self.prios - 1;
        if self.low_bytes[pair] == 0 {
            return None;
        }
        if self.pq[pair].head_prio as usize == low {
            return self.take(s, d, payload, max, flows);
        }
        // The head is of a higher priority: the lowest priority's front waits
        // in the pool.
        let li = pair * self.prios + low;
        let i = self.q[li]
            .front()
            .expect("low-priority bytes without segments");
        let seg = self.pool.get_mut(i);
        let (k, b) = seg.cut(payload, max);
        let (flow, ep, seg_done) = (seg.flow, seg.ep, seg.left == 0);
        let mut last = false;
        if seg_done {
            let mut list = self.q[li];
            self.pool.pop_front(&mut list);
            self.q[li] = list;
            self.pool.release(i);
            last = flows.segment_sent(flow);
        }
        self.pq[pair].bytes -= b;
        self.low_bytes[pair] -= b;
        self.tor_bytes[s] -= b;
        self.queued -= b;
        Some(Pkt {
            flow,
            ep,
            bytes: b,
            prio: low as u8,
            packets: k,
            last,
        })
    }

    /// The queues' own consistency: data bits match the pairs, and the
    /// per-ToR and per-pair sums (with `relayed` bytes) match the total.
    pub fn check(&self, relayed: u64) -> Result<(), String> {
        for (pair, q) in self.pq.iter().enumerate() {
            if self.pair_has_data(pair) != (q.bytes > 0) {
                return Err(format!("negotiator: pair {pair}'s data bit is wrong"));
            }
        }
        let tor_sum: u64 = self.tor_bytes.iter().sum();
        let pair_sum: u64 = self.pq.iter().map(|q| q.bytes).sum::<u64>() + relayed;
        if tor_sum != self.queued || pair_sum != self.queued {
            return Err(format!(
                "negotiator: queue counters disagree ({tor_sum}, {pair_sum}, {})",
                self.queued
            ));
        }
        Ok(())
    }
}

/// Parallel network, predefined slot `j`, rotation `r` (< S ≤ 64): bit p
/// is set when source `s`'s port p has a link in the slot (offset
/// o = 1 + j·S + (p + r) mod S < N) to a ToR (s + o) mod N whose pair's
/// bit in `has_data` (N × N bits, row by source) is set.
#[inline]
pub(super) fn pre_ports(
    has_data: &[u64],
    n: usize,
    sp: usize,
    s: usize,
    j: usize,
    r: usize,
) -> u64 {
    let o0 = 1 + j * sp;
    if o0 >= n {
        return 0;
    }
    // Bit i of `m`: the pair s → s + o0 + i (o0 + i < N) has data.
    let len = sp.min(n - o0);
    let d0 = if s + o0 >= n { s + o0 - n } else { s + o0 };
    let m = if d0 + len <= n {
        data_bits(has_data, s * n + d0, len)
    } else {
        // Wraps past the last ToR: the row's end, then its start.
        let a = n - d0;
        data_bits(has_data, s * n + d0, a) | data_bits(has_data, s * n, len - a) << a
    };
    // Port p uses offset bit (p + r) mod S.
    if r == 0 {
        m
    } else {
        (m >> r | m << (sp - r)) & (u64::MAX >> (64 - sp))
    }
}

/// `len` (1..=64) consecutive bits of the bit vector `v` from bit `start`.
#[inline]
fn data_bits(v: &[u64], start: usize, len: usize) -> u64 {
    let (w, off) = (start / 64, start % 64);
    let mut x = v[w] >> off;
    if off + len > 64 {
        x |= v[w + 1] << (64 - off);
    }
    if len < 64 {
        x & ((1u64 << len) - 1)
    } else {
        x
    }
}

//! The host edge of a ToR: the queue in which data that reached a
//! destination ToR waits for its host, draining at the host rate R.
//!
//! A fabric whose packets reach a ToR in the order they were sent (one
//! propagation delay for all) knows, when it sends a packet, when the packet's
//! last byte will leave the ToR for its host: the queue's drain schedule is
//! computed at [`enqueue`](HostEdge::enqueue), one FIFO per endpoint, with no
//! event per packet. [`take_due`](HostEdge::take_due) then hands over, slot by
//! slot, the entries whose last byte has left, and [`deliver`] reports them to
//! the recorder (a flow completes with its last entry).
//!
//! Bytes of one flow arriving at the same instant (several ports of a pair)
//! are kept as one entry: its last byte's time is exact; earlier bytes are
//! reported with it, less than a slot late.
//!
//! ```
//! use photonet::host_edge::HostEdge;
//! use photonet::units::{Rate, SimTime};
//! // One ToR with one host at 8 Gbps (1 byte per ns).
//! let mut edge = HostEdge::new(Rate::gbps(8), 1, 1, 0);
//! edge.enqueue(SimTime::ns(0), 7, 0, 1000, false);
//! edge.enqueue(SimTime::ns(100), 7, 0, 500, true);
//! assert!(edge.take_due(SimTime::ns(999)).is_empty());
//! let due = edge.take_due(SimTime::ns(1500));
//! assert_eq!(due.len(), 2);
//! assert_eq!((due[1].done(), due[1].bytes(), due[1].is_last()), (SimTime::ns(1500), 500, true));
//! assert_eq!(edge.pending(), 0);
//! ```

use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};
use std::collections::VecDeque;

/// Bytes of one flow in a host-facing queue: when their last byte leaves,
/// and whether they end the flow (top bit of `bytes`).
#[derive(Clone, Copy, Debug)]
pub struct HostEntry {
    done: SimTime,
    flow: u32,
    bytes: u32,
}

const LAST: u32 = 1 << 31;

impl HostEntry {
    /// When the entry's last byte leaves for the host.
    #[inline]
    pub fn done(&self) -> SimTime {
        self.done
    }
    #[inline]
    pub fn flow(&self) -> u32 {
        self.flow
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        (self.bytes & !LAST) as u64
    }
    /// Whether these are the flow's last bytes.
    #[inline]
    pub fn is_last(&self) -> bool {
        self.bytes & LAST != 0
    }
}

/// An endpoint's host-facing queue and what `enqueue` needs with it (one
/// cache line).
#[derive(Clone, Debug)]
#[repr(align(64))]
struct HostQ {
    q: VecDeque<HostEntry>,
    /// When the queue's last entry leaves.
    busy: SimTime,
    /// When its last entry arrived (same-instant merging).
    last_arrive: SimTime,
    /// Listed in `active`.
    on_list: bool,
}

impl HostQ {
    const EMPTY: HostQ = HostQ {
        q: VecDeque::new(),
        busy: SimTime::ZERO,
        last_arrive: SimTime::MAX,
        on_list: false,
    };
}

/// The host-facing queues of every endpoint of a fabric.
pub struct HostEdge {
    rate: Rate,
    servers_per_rack: usize,
    /// Serialisation time at R of 0..=`tabled` bytes (no division per packet).
    tx_table: Vec<SimTime>,
    queues: Vec<HostQ>,
    /// Endpoints whose queue is not empty.
    active: Vec<u32>,
    /// Scratch: the entries `take_due` hands over.
    due: Vec<HostEntry>,
    /// Per ToR: bytes that reached it and have not left for a host.
    backlog: Vec<u64>,
    pending: u64,
    arrived: u64,
    delivered: u64,
    /// Longest drain time an arrival found, in ps.
    peak_drain: u64,
}

impl HostEdge {
    /// The most entries the serialisation table holds (512 KiB).
    pub const MAX_TABLED: u64 = 1 << 16;

    /// `tors` ToRs of `servers_per_rack` endpoints each, draining at `rate`;
    /// entries of up to `tabled` bytes look their serialisation time up.
    pub fn new(rate: Rate, tors: usize, servers_per_rack: usize, tabled: u64) -> HostEdge {
        HostEdge {
            rate,
            servers_per_rack,
            // Capped: a larger entry computes its time (the same value).
            tx_table: (0..=tabled.min(Self::MAX_TABLED))
                .map(|b| rate.tx_time(b))
                .collect(),
            queues: vec![HostQ::EMPTY; tors * servers_per_rack],
            active: Vec::new(),
            due: Vec::new(),
            backlog: vec![0; tors],
            pending: 0,
            arrived: 0,
            delivered: 0,
            peak_drain: 0,
        }
    }

    /// The drain rate R.
    pub fn rate(&self) -> Rate {
        self.rate
    }
    /// Endpoints.
    pub fn endpoints(&self) -> usize {
        self.queues.len()
    }
    /// Bytes waiting in every queue.
    pub fn pending(&self) -> u64 {
        self.pending
    }
    /// Bytes ToR `tor` holds for its hosts.
    #[inline]
    pub fn backlog(&self, tor: usize) -> u64 {
        self.backlog[tor]
    }
    /// Bytes that ever reached a queue, and that left it.
    pub fn arrived(&self) -> u64 {
        self.arrived
    }
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// The largest queue an arrival found, in bytes at R.
    pub fn peak_bytes(&self) -> u64 {
        self.rate.bytes_in(SimTime(self.peak_drain))
    }

    /// `bytes` of `flow` (its `last` ones if so) reach the ToR of endpoint
    /// `ep` at `arrive` and join its queue, which drains at R in arrival
    /// order. Arrivals must come in time order per endpoint.
    #[inline(always)]
    pub fn enqueue(&mut self, arrive: SimTime, flow: u32, ep: u32, bytes: u64, last: bool) {
        let ep = ep as usize;
        let spr = self.servers_per_rack;
        let d = if spr == 1 { ep } else { ep / spr };
        self.arrived += bytes;
        self.backlog[d] += bytes;
        self.pending += bytes;
        let h = &mut self.queues[ep];
        if !h.on_list {
            h.on_list = true;
            self.active.push(ep as u32);
        }
        let same_slot = h.last_arrive == arrive;
        h.last_arrive = arrive;
        if bytes < LAST as u64 {
            // A packet (or a small flow): one entry.
            let flag = if last { LAST } else { 0 };
            self.chunk(ep, arrive, flow, bytes, flag, same_slot);
            return;
        }
        let mut left = bytes;
        while left > 0 {
            // An entry holds < 2^31 bytes (the top bit marks the flow's end).
            let b = left.min((LAST - 1) as u64);
            left -= b;
            let flag = if last && left == 0 { LAST } else { 0 };
            self.chunk(ep, arrive, flow, b, flag, same_slot);
        }
    }

    /// `b` (< 2^31) bytes of `flow` join `ep`'s queue (merged into its last
    /// entry when that is the same flow's, arrived at the same instant).
    #[inline(always)]
    fn chunk(&mut self, ep: usize, arrive: SimTime, flow: u32, b: u64, flag: u32, same: bool) {
        let tx = match self.tx_table.get(b as usize) {
            Some(&t) => t,
            None => self.rate.tx_time(b),
        };
        let h = &mut self.queues[ep];
        let done = h.busy.max(arrive) + tx;
        self.peak_drain = self.peak_drain.max((done - arrive).0);
        h.busy = done;
        match h.q.back_mut() {
            Some(e) if same && e.flow == flow && ((e.bytes & !LAST) as u64 + b) < LAST as u64 => {
                e.done = done;
                e.bytes += b as u32;
                e.bytes |= flag;
            }
            _ => h.q.push_back(HostEntry {
                done,
                flow,
                bytes: b as u32 | flag,
            }),
        }
    }

    /// The entries whose last byte has left by `now`, queue by queue in
    /// queue order; they count as delivered.
    pub fn take_due(&mut self, now: SimTime) -> &[HostEntry] {
        // Collected first and reported after (`deliver`): a tight loop of
        // independent per-flow loads in the recorder, fetched in parallel.
        let spr = self.servers_per_rack;
        self.due.clear();
        let mut k = 0;
        while k < self.active.len() {
            let ep = self.active[k] as usize;
            let d = if spr == 1 { ep } else { ep / spr };
            let q = &mut self.queues[ep].q;
            let mut taken = 0u64;
            while let Some(&e) = q.front() {
                if e.done > now {
                    break;
                }
                q.pop_front();
                taken += (e.bytes & !LAST) as u64;
                self.due.push(e);
            }
            let empty = q.is_empty();
            self.backlog[d] -= taken;
            self.pending -= taken;
            self.delivered += taken;
            if empty {
                self.queues[ep].on_list = false;
                self.active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        &self.due
    }
}

/// Reports entries to the recorder: each a delivery at its time, the
/// flow's last one its completion. An entry of more than `spread_above`
/// bytes (a whole flow put in at once, e.g. within a rack) left the queue at
/// R over its drain time and is delivered spread over it, as fluid fabrics
/// report theirs: at a point its bytes would all land in its last instant's
/// time-series bin, many times N·R. Packets stay points (less than a slot).
#[inline]
pub fn deliver(due: &[HostEntry], rate: Rate, spread_above: u64, rec: &mut Recorder) {
    for e in due {
        let b = e.bytes();
        if b > spread_above {
            let from = e.done.saturating_sub(rate.tx_time(b));
            rec.deliver_span(e.flow, from, e.done, b);
            if e.is_last() {
                rec.complete(e.flow, e.done);
            }
        } else if e.is_last() {
            rec.deliver_last(e.flow, e.done, b);
        } else {
            rec.deliver_point(e.flow, e.done, b);
        }
    }
}

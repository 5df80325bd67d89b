//! Baldur (`fabric = "baldur"`): the bufferless, clock-less all-optical
//! multi-butterfly of transistor-laser 2×2 switches (seed
//! `baldur-all-optical.txt` §IV–V).
//!
//! # Topology
//! N = 2^k nodes, k stages of N/2 switches. Each switch has two input and two
//! output *directions*, each with `multiplicity` (m) ports. Stage s routes on
//! bit k−1−s of the destination (one routing bit per stage, most significant
//! first). Viewed as a sorting network, stage s is split into 2^s sorting
//! groups of N/2^(s+1) switches (the switches that can still reach the
//! destinations with one s-bit prefix); the m·N/2^(s+1) outputs of a group in
//! direction b are wired one-to-one onto the 2m·N/2^(s+2) inputs of group 2g+b
//! of stage s+1 by a random permutation drawn from the seeded stream
//! `baldur.wiring` (`random_wiring = false`: in order, the plain butterfly for
//! m = 1). Node i transmits into input port 0 of direction i mod 2 of switch
//! i/2 of stage 0; the m outputs of direction b of last-stage switch j are m
//! receivers of node 2j+b (a node can receive m packets at once).
//!
//! # Switching
//! Bufferless and clock-less: a packet whose head reaches a switch takes the
//! first free output of its direction (ports checked in order, as the
//! arbitration units of §IV-E do); if all m are busy it is dropped. An output
//! stays busy for the packet's length on the wire plus `end_gap_bits` bit
//! periods (the line activity detector declares the end of a packet after 6T
//! without light, §IV-C). A packet's length on the wire is its bytes at the
//! link rate plus the length-encoded routing bits: 3 bit periods per stage
//! (§IV-B). Per-switch latency by m is Table V's (0.14, 0.49, 0.94, 1.5,
//! 2.25 ns); links are `injection_link`, `stage_link` (between stages) and
//! `ejection_link`.
//!
//! # Exact traversal without per-stage events
//! Every switch of a stage has the same latency and every link of a kind the
//! same delay, so a packet whose head leaves its node at t reaches stage s at
//! t + injection_link + s·(switch_latency + stage_link): arrival order at every
//! switch is transmission order. Packets are therefore pushed through all k
//! stages at the instant they start transmission, in the (deterministic) order
//! transmissions start; each output keeps only the time it becomes free. This
//! is exact, not an approximation: no packet transmitted later can reach any
//! switch earlier. Packets that tie (same instant at the same switch) are
//! served in transmission order. A packet's only event is its arrival at the
//! destination (or nothing, if dropped), and no heap orders most of them:
//! full-size data packets and ACKs each arrive a constant time after they
//! start, so their arrivals go to two FIFOs already in time order; only
//! shorter data packets (a flow's last) go to a small heap. Transmitter
//! wake-ups go to a ring of time buckets (every wake-up is within one
//! transmission of now) and timeouts to a FIFO (each is a constant time
//! after its transmission). Packets are pushed through the switches lazily,
//! in batches and in transmission order, once their arrival could be the
//! next event; and the run loop lets Baldur take all its steps up to the
//! next flow arrival in one call (`Fabric::advance_until`).
//!
//! # Memory
//! At paper scale the run is bound by cache misses on three random-access
//! structures, so each is kept small: the switch outputs (32-bit free
//! times after a moving base, each interleaved with the output's wiring, a
//! direction's m outputs adjacent: one line per stage for m = 4; 320 KB at
//! 1,024 nodes), the outstanding packets (32 B each, serial inside, rare
//! state in a side table) and the nodes (one 64 B line each; their ACK and
//! new-flow queues are lists through pools shared by all nodes, whose few
//! live entries stay cached). The batched traversal is specialised for
//! m = 1…5 (the first-free search unrolled) and reads every probe's output
//! group of a stage in a tight pass first, so the misses overlap.
//!
//! # Nodes
//! A node's transmitter (rate R, the topology's host rate) sends, in priority
//! order: ACKs it owes, retransmissions whose backoff has expired, and new
//! packets of its flows (flows in arrival order, each cut into `packet`-byte
//! packets). Consecutive transmissions are separated by `end_gap_bits`. Every
//! data packet is held in the node's retransmission buffer from its first
//! transmission until its ACK arrives; the peak occupancy per node is
//! reported. The receiver ACKs every copy it receives (`ack`-byte ACKs cross
//! the network like data and can be dropped). A packet not ACKed `timeout`
//! after its transmission started is retransmitted, under a binary
//! exponential backoff (`backoff.rs`) that by default throttles the node, as
//! §IV-E says: while the node has seen c > 0 timeouts since its last ACK,
//! each of its data transmissions first waits a uniform number of
//! `backoff_slot`s in [0, 2^min(c, backoff_cap) − 1] (ACKs never wait);
//! `backoff = "packet"` delays only the timed-out packet, by such a draw
//! after its c-th timeout. Receivers deliver each flow's packets to
//! the application in order and exactly once (`delivery::ReorderBuffer`;
//! single-packet flows need only a flag).
//!
//! # Parts
//! - `params.rs`: parameters, the checked [`Layout`], registration and
//!   lone-flow FCT bounds;
//! - `stages.rs`: the switches alone ([`Stages`]: wiring, free times, one
//!   packet's or a batch's traversal), the tuned kernel;
//! - `queues.rs`: the event orders (wake-ups, timeouts, arrivals);
//! - `backoff.rs`: timeouts and the backoff, per node or per packet;
//! - `packets.rs`: outstanding packets, unsent flows, node transmitters;
//! - `stats.rs`: counters and the reported statistics;
//! - this file: the [`Baldur`] fabric, whose run loop threads them.

mod backoff;
mod packets;
mod params;
mod queues;
mod stages;
mod stats;
#[cfg(test)]
mod tests;

pub use params::{Backoff, BaldurModule, BaldurParams, Layout, MAX_MULTIPLICITY};
pub use stages::{Butterfly, Fate, NarrowButterfly, Probe, Stages, Stamp};

use crate::delivery::{unit_bytes, unit_count, Receipt, ReorderBuffer};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::pool::Pool;
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::timer::TimerQueue;
use crate::units::{Rate, SimTime};
use packets::{Cold, Fresh, Node, Outstanding, ACKED, MULTI, QUEUED, RECEIVED, TIMER};
use queues::{ArrivalFifo, TimedFifo, Wakes};
use stats::Counters;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A node's transmitter is free.
    TxFree(u32),
    /// A copy of the data packet of outstanding entry (slot, serial), sent
    /// from `src`, reaches its destination `dst`. Which packet it is (flow,
    /// seq) is in the entry while it is live; a copy whose entry is gone was
    /// ACKed, hence received before: a duplicate, which only needs its ACK.
    Data {
        slot: u32,
        serial: u32,
        src: u32,
        dst: u32,
    },
    /// An ACK for outstanding entry (slot, serial) reaches its source node.
    Ack { slot: u32, serial: u32 },
}

#[derive(Clone, Copy, Debug)]
enum Timer {
    /// The backoff is over: queue the retransmission.
    Retry { slot: u32, serial: u32 },
    /// Node backoff: the node may send data again.
    Resume(u32),
}

/// Baldur's switches, in 32-bit times when every packet fits their span.
enum Net {
    Narrow(NarrowButterfly),
    Wide(Butterfly),
}

/// The Baldur network with its nodes.
pub struct Baldur {
    l: Layout,
    packet: u64,
    timeout: SimTime,
    backoff_slot: SimTime,
    backoff_cap: u32,
    backoff: Backoff,
    hop: SimTime,
    /// Injection link delay: head leaves the node → head at stage 0.
    inj: SimTime,
    ack_wire: SimTime,
    /// A full-size data packet's wire time (the common case: no division).
    packet_wire: SimTime,
    net: Net,
    nodes: Vec<Node>,
    /// Each node's peak `buffer_bytes`.
    buffer_peak: Vec<u64>,
    /// Each node's bytes of flows not yet sent once (its `fresh` list),
    /// and the peak of those plus its un-ACKed bytes: the buffer §IV-E's
    /// 536 KB would be if it also held the packets waiting to be sent.
    queued_bytes: Vec<u64>,
    backlog_peak: Vec<u64>,
    acks_q: Pool<(u32, u32, u32)>,
    fresh_q: Pool<Fresh>,
    /// Reorder buffers of multi-packet flows, from their first arrival
    /// until complete, and the slot of each such flow's (looked up only,
    /// never iterated: the run does not depend on the map's order).
    reorder: Pool<ReorderBuffer>,
    reorder_of: HashMap<FlowId, u32>,
    /// `next_event()`, kept current by every call that changes it (the run
    /// loop asks once per step).
    next_at: Option<SimTime>,
    out: Pool<Outstanding>,
    cold: Vec<Cold>,
    next_serial: u32,
    /// Transmitter wake-ups (`TxFree`) and arrivals of short data packets
    /// (the last of a flow), each stamped with `seq` when scheduled: the two
    /// are taken together in (time, seq) order, the order of the one event
    /// heap they replace.
    wakes: Wakes,
    short_data: BinaryHeap<Reverse<(SimTime, u64, [u32; 4])>>,
    seq: u64,
    /// Arrivals of full-size data packets ([slot, serial, src, dst]) and of
    /// ACKs ([slot, serial]): each is now + a constant, so each FIFO is in
    /// time order.
    data_fifo: ArrivalFifo<[u32; 4]>,
    ack_fifo: ArrivalFifo<[u32; 2]>,
    /// Timeouts in deadline order: every data transmission adds one at
    /// now + timeout, so deadlines are non-decreasing and a FIFO replaces a
    /// heap; stale entries (ACKed, or superseded) are skipped when popped.
    timeouts_fifo: TimedFifo<(u32, u32)>,
    /// Full-size data packets and ACKs transmitted but not yet pushed
    /// through the switches (without `check`): their fates are needed only
    /// when their arrival is due (`pending_due`, the earliest), and pushed
    /// through in batches, in transmission order, their switch lookups
    /// overlap. `pending_entry[i]`: the FIFO entry of `pending[i]`'s
    /// arrival (see `Baldur::entry`).
    pending: Vec<Probe>,
    pending_entry: Vec<u64>,
    pending_due: SimTime,
    /// Backoff timers (random delays).
    timers: TimerQueue<Timer>,
    backoff_rng: SimRng,
    check: bool,
    /// With `check`: the end of the last occupancy of every output, and the
    /// count of occupancies that began before it.
    link_end: Vec<SimTime>,
    link_overlaps: u64,
    /// Packet counts (the statistics, and conservation checks).
    count: Counters,
}

impl Baldur {
    pub fn new(p: &BaldurParams, l: Layout, streams: &RngStreams) -> Baldur {
        let mut wiring = streams.stream("baldur.wiring");
        let hop = l.switch_latency + p.stage_link;
        let ack_wire = l.wire_time(p.ack.0);
        // The longest a packet's stage-0 time and its last output's free
        // time lie apart: 32-bit times if it fits their span (the same
        // results in half the memory).
        let span = hop * (l.stages as u64 - 1) + l.wire_time(p.packet.0).max(ack_wire) + l.gap;
        let rng = p.random_wiring.then_some(&mut wiring);
        let eject = if p.ejection_links == 0 {
            l.m
        } else {
            p.ejection_links
        };
        let net = if span.0 <= NarrowButterfly::SPAN {
            Net::Narrow(NarrowButterfly::new(l.stages, l.m, rng).with_ejection(eject))
        } else {
            Net::Wide(Butterfly::new(l.stages, l.m, rng).with_ejection(eject))
        };
        let ports = (1usize << l.stages) * l.m as usize * l.stages as usize;
        Baldur {
            l,
            packet: p.packet.0,
            timeout: p.timeout,
            backoff_slot: p.backoff_slot,
            backoff_cap: p.backoff_cap,
            backoff: p.backoff,
            hop,
            inj: p.injection_link,
            ack_wire,
            packet_wire: l.wire_time(p.packet.0),
            net,
            nodes: vec![Node::default(); l.nodes as usize],
            buffer_peak: vec![0; l.nodes as usize],
            queued_bytes: vec![0; l.nodes as usize],
            backlog_peak: vec![0; l.nodes as usize],
            acks_q: Pool::new(),
            fresh_q: Pool::new(),
            reorder: Pool::new(),
            reorder_of: HashMap::new(),
            next_at: None,
            out: Pool::new(),
            cold: Vec::new(),
            next_serial: 1,
            wakes: Wakes::new(l.wire_time(p.packet.0).max(ack_wire) + l.gap),
            short_data: BinaryHeap::new(),
            seq: 0,
            data_fifo: ArrivalFifo::new(),
            ack_fifo: ArrivalFifo::new(),
            timeouts_fifo: TimedFifo::new(),
            pending: Vec::new(),
            pending_entry: Vec::new(),
            pending_due: SimTime::MAX,
            timers: TimerQueue::new(),
            backoff_rng: streams.stream("baldur.backoff"),
            check: false,
            link_end: vec![SimTime::ZERO; ports],
            link_overlaps: 0,
            count: Counters::new(l.stages),
        }
    }

    /// Keep the per-link occupancy log that `check_invariants` verifies.
    pub fn with_checks(mut self, on: bool) -> Baldur {
        self.check = on;
        self
    }

    /// Pushes a packet through the network now; true if it gets through.
    fn inject(&mut self, now: SimTime, src: u32, dst: u32, wire: SimTime) -> bool {
        self.flush();
        let t0 = now + self.inj;
        let occupy = wire + self.l.gap;
        let ports = (1usize << self.l.stages) * self.l.m as usize;
        let (check, link_end, overlaps) = (self.check, &mut self.link_end, &mut self.link_overlaps);
        let visit = |s: u32, port: usize, from: SimTime, to: SimTime| {
            if check {
                let e = &mut link_end[s as usize * ports + port];
                if from < *e {
                    *overlaps += 1;
                }
                *e = to;
            }
        };
        let fate = match &mut self.net {
            Net::Narrow(n) => n.traverse(src, dst, t0, self.hop, occupy, visit),
            Net::Wide(n) => n.traverse(src, dst, t0, self.hop, occupy, visit),
        };
        match fate {
            Fate::Delivered => true,
            Fate::Dropped { stage } => {
                self.count.drops_by_stage[stage as usize] += 1;
                false
            }
        }
    }
}

impl Baldur {
    /// How many pending packets go through the switches together.
    const BATCH: usize = 1024;

    /// A packet (`src` to `dst`, `wire` long) whose arrival at `at` is FIFO
    /// entry `entry` (see `Baldur::entry`): pushed through the switches now
    /// with `check`, else later, in a batch (see `pending`).
    #[inline(always)]
    fn inject_later(
        &mut self,
        now: SimTime,
        (src, dst): (u32, u32),
        wire: SimTime,
        (at, entry): (SimTime, u64),
    ) {
        self.count.in_flight += 1;
        if self.check {
            if !self.inject(now, src, dst, wire) {
                self.drop_entry(entry);
            }
            self.data_fifo.settle_all();
            self.ack_fifo.settle_all();
            return;
        }
        self.pending
            .push(Probe::new(src, dst, now + self.inj, wire + self.l.gap));
        self.pending_entry.push(entry);
        self.pending_due = self.pending_due.min(at);
    }

    /// An arrival's FIFO entry: its number in the FIFO, and which FIFO.
    #[inline(always)]
    fn entry(n: u64, ack: bool) -> u64 {
        n << 1 | ack as u64
    }

    /// The packet of FIFO entry `entry` was dropped in the switches.
    fn drop_entry(&mut self, entry: u64) {
        self.count.in_flight -= 1;
        if entry & 1 == 1 {
            self.ack_fifo.mark_dropped(entry >> 1);
            self.count.acks_dropped += 1;
        } else {
            self.data_fifo.mark_dropped(entry >> 1);
            self.count.data_dropped += 1;
        }
    }

    /// Pushes every pending packet through the switches, in order.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        for chunk in pending.chunks_mut(Self::BATCH) {
            match &mut self.net {
                Net::Narrow(n) => n.traverse_batch(chunk, self.hop),
                Net::Wide(n) => n.traverse_batch(chunk, self.hop),
            }
        }
        let mut entries = std::mem::take(&mut self.pending_entry);
        for (p, &entry) in pending.iter().zip(&entries) {
            if let Some(stage) = p.dropped {
                self.count.drops_by_stage[stage as usize] += 1;
                self.drop_entry(entry);
            }
        }
        self.data_fifo.settle_all();
        self.ack_fifo.settle_all();
        pending.clear();
        self.pending = pending;
        entries.clear();
        self.pending_entry = entries;
        self.pending_due = SimTime::MAX;
    }

    /// Keeps `next_event` exact without the pending packets: pushes them
    /// through once the earliest could arrive no later than everything
    /// else known (so the run loop never wakes for a dropped packet).
    fn settle(&mut self) {
        let mut next = self.earliest();
        if self.pending_due != SimTime::MAX && next.is_none_or(|t| self.pending_due <= t) {
            self.flush();
            next = self.earliest();
        }
        self.next_at = next;
    }

    /// The earliest event, timeout or timer (pending packets aside).
    fn earliest(&self) -> Option<SimTime> {
        let a = self
            .wakes
            .peek()
            .map_or(SimTime::MAX, |w| w.0)
            .min(self.short_data.peek().map_or(SimTime::MAX, |e| e.0 .0))
            .min(self.data_fifo.due())
            .min(self.ack_fifo.due());
        let b = self.timers.peek_time().unwrap_or(SimTime::MAX);
        let c = self.timeouts_fifo.due();
        let t = a.min(b).min(c);
        (t != SimTime::MAX).then_some(t)
    }

    /// `Layout::wire_time`, without its 128-bit division for a full-size packet.
    #[inline]
    fn wire_time(&self, bytes: u64) -> SimTime {
        if bytes == self.packet {
            self.packet_wire
        } else {
            self.l.wire_time(bytes)
        }
    }

    fn new_serial(&mut self) -> u32 {
        let s = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1).max(1);
        s
    }

    /// Starts node `h`'s next transmission at `now`: an ACK it owes, else a
    /// retransmission, else a new packet; or marks it idle.
    fn start_tx(&mut self, h: u32, now: SimTime) {
        let hi = h as usize;
        let wire;
        if let Some(i) = self.acks_q.pop_front(&mut self.nodes[hi].acks) {
            let (to, slot, serial) = *self.acks_q.get(i);
            self.acks_q.release(i);
            wire = self.ack_wire;
            self.count.acks_sent += 1;
            let at = now + self.l.head_latency + wire;
            let n = self.ack_fifo.push(at, [slot, serial]);
            self.inject_later(now, (h, to), wire, (at, Self::entry(n, true)));
        } else if self.held(h, now) {
            return;
        } else if let Some(slot) = self.pop_retx(h) {
            wire = self.wire_time(self.out.get(slot).bytes() as u64);
            self.count.retransmissions += 1;
            self.send_data(now, h, slot, wire);
        } else if let Some(fi) = self.nodes[hi].fresh.front() {
            let Fresh {
                flow: f,
                dst,
                bytes: total,
            } = *self.fresh_q.get(fi);
            let node = &mut self.nodes[hi];
            let seq = node.next_new;
            // The flow's last packet: packet `seq` of unit_count(max(total,
            // 1)) (no division: seq < that count).
            let multi = seq > 0 || total > self.packet;
            if (seq as u64 + 1) * self.packet >= total.max(1) {
                self.fresh_q.pop_front(&mut node.fresh);
                self.fresh_q.release(fi);
                node.next_new = 0;
            } else {
                node.next_new += 1;
            }
            let bytes = unit_bytes(seq, total, self.packet);
            let serial = self.new_serial();
            let slot = self.out.alloc(Outstanding {
                serial,
                flow: f,
                seq,
                src: h,
                dst,
                bits: bytes as u32 | if multi { MULTI } else { 0 },
                deadline: SimTime::MAX,
            });
            if multi {
                if slot as usize >= self.cold.len() {
                    self.cold.resize(slot as usize + 1, Cold::default());
                }
                self.cold[slot as usize].flow_bytes = total;
            }
            let node = &mut self.nodes[hi];
            node.buffer_bytes += bytes;
            // Moved from waiting to un-ACKed: the backlog is unchanged.
            self.queued_bytes[hi] -= bytes;
            let peak = &mut self.buffer_peak[hi];
            *peak = (*peak).max(node.buffer_bytes);
            self.count.data_first += 1;
            wire = self.wire_time(bytes);
            self.send_data(now, h, slot, wire);
        } else {
            return;
        }
        let free_at = now + wire + self.l.gap;
        let node = &mut self.nodes[hi];
        node.free_at = free_at;
        if !node.acks.is_empty() || !node.retx.is_empty() || !node.fresh.is_empty() {
            node.wake = true;
            self.count.pending_tx += 1;
            self.push_wake(now, free_at, h);
        }
    }

    /// Node `h`'s transmitter wakes at `t` (after `now`, within the wake
    /// horizon: the end of a transmission that has started).
    #[inline(always)]
    fn push_wake(&mut self, now: SimTime, t: SimTime, h: u32) {
        self.wakes.push(now, t, self.seq, h);
        self.seq += 1;
    }

    /// The earliest of the wake-ups and short data arrivals, if due by `now`.
    fn pop_due_event(&mut self, now: SimTime) -> Option<Event> {
        let w = self.wakes.peek();
        let d = self.short_data.peek().map(|Reverse((t, q, _))| (*t, *q));
        match (w, d) {
            (Some(w), d) if w.0 <= now && d.is_none_or(|d| w < d) => {
                Some(Event::TxFree(self.wakes.pop(now)))
            }
            (_, Some(d)) if d.0 <= now => {
                let Reverse((_, _, [slot, serial, src, dst])) =
                    self.short_data.pop().expect("peeked");
                Some(Event::Data {
                    slot,
                    serial,
                    src,
                    dst,
                })
            }
            _ => None,
        }
    }

    /// Something was queued at node `h`: transmit now if the transmitter is
    /// free, else make sure it wakes when it is.
    fn kick(&mut self, h: u32, now: SimTime) {
        let node = &mut self.nodes[h as usize];
        if node.wake {
            return;
        }
        if now >= node.free_at {
            self.start_tx(h, now);
        } else {
            node.wake = true;
            self.count.pending_tx += 1;
            let t = node.free_at;
            self.push_wake(now, t, h);
        }
    }

    /// The next retransmission of node `h` (releasing entries ACKed while queued).
    fn pop_retx(&mut self, h: u32) -> Option<u32> {
        loop {
            let slot = self.out.pop_front(&mut self.nodes[h as usize].retx)?;
            let o = self.out.get_mut(slot);
            o.set(QUEUED, false);
            if o.has(ACKED) {
                self.release(slot);
                continue;
            }
            return Some(slot);
        }
    }

    #[inline(always)]
    fn send_data(&mut self, now: SimTime, h: u32, slot: u32, wire: SimTime) {
        let o = *self.out.get(slot);
        let dst = o.dst;
        let serial = o.serial;
        self.count.data_sent += 1;
        let at = now + self.l.head_latency + wire;
        if o.bytes() as u64 == self.packet {
            let n = self.data_fifo.push(at, [slot, serial, h, dst]);
            self.inject_later(now, (h, dst), wire, (at, Self::entry(n, false)));
        } else if self.inject(now, h, dst, wire) {
            self.count.in_flight += 1;
            self.short_data
                .push(Reverse((at, self.seq, [slot, serial, h, dst])));
            self.seq += 1;
        } else {
            self.count.data_dropped += 1;
        }
        self.throttle(h, now + wire + self.l.gap);
        let deadline = now + self.timeout;
        self.out.get_mut(slot).deadline = deadline;
        self.timeouts_fifo.push(deadline, (slot, serial));
    }

    fn release(&mut self, slot: u32) {
        self.out.get_mut(slot).serial = 0;
        self.out.release(slot);
    }

    /// Is (slot, serial) still outstanding? (Serials are never 0.)
    fn live(&self, slot: u32, serial: u32) -> bool {
        self.out.get_any(slot).is_some_and(|o| o.serial == serial)
    }

    /// The side-table entry of `slot`.
    fn cold_mut(&mut self, slot: u32) -> &mut Cold {
        if slot as usize >= self.cold.len() {
            self.cold.resize(slot as usize + 1, Cold::default());
        }
        &mut self.cold[slot as usize]
    }

    /// Queues a retransmission at its node.
    fn queue_retx(&mut self, slot: u32, now: SimTime) {
        let o = self.out.get_mut(slot);
        o.set(TIMER, false);
        o.set(QUEUED, true);
        let h = o.src;
        self.out.push_back(&mut self.nodes[h as usize].retx, slot);
        self.kick(h, now);
    }

    /// Handles everything due at `now` (the earliest time anything is
    /// due) and returns how many: data arrivals, then ACK arrivals, then
    /// wake-ups and short data arrivals in (time, seq) order, then timeouts,
    /// then backoff timers. Each kind is drained in turn: that is the order
    /// of one loop re-checking every kind after each step, since nothing
    /// handled at `now` schedules anything at `now` (arrivals, wake-ups and
    /// timeouts are a positive time later) except a backoff timer of zero
    /// slots' length, which comes last either way.
    fn step(&mut self, now: SimTime, rec: &mut Recorder) -> u64 {
        let mut n = 0;
        while self.data_fifo.due() <= now {
            let (_, [slot, serial, src, dst]) = self.data_fifo.pop();
            let ev = Event::Data {
                slot,
                serial,
                src,
                dst,
            };
            self.on_event(now, ev, rec);
            n += 1;
        }
        while self.ack_fifo.due() <= now {
            let (_, [slot, serial]) = self.ack_fifo.pop();
            self.on_event(now, Event::Ack { slot, serial }, rec);
            n += 1;
        }
        while let Some(ev) = self.pop_due_event(now) {
            self.on_event(now, ev, rec);
            n += 1;
        }
        while self.timeouts_fifo.due() <= now {
            let (d, (slot, serial)) = self.timeouts_fifo.pop();
            self.on_timeout(now, d, slot, serial);
            n += 1;
        }
        // (The head's time, inlined, before the call: most steps have no
        // backoff timer due.)
        while self.timers.peek_time().is_some_and(|t| t <= now) {
            let (_, t) = self.timers.pop().expect("peeked");
            self.on_timer(now, t);
            n += 1;
        }
        // Timeouts whose packet was ACKed (or resent: a later deadline) are
        // stale for good; dropping them from the head now spares the run
        // loop an iteration each (nearly every packet is ACKed in time).
        // Only stale entries go, so nothing the run does changes.
        while let Some(&(d, (slot, serial))) = self.timeouts_fifo.front() {
            if self.live(slot, serial) && self.out.get(slot).deadline == d {
                break;
            }
            self.timeouts_fifo.pop();
        }
        n
    }

    #[inline(always)]
    fn on_event(&mut self, now: SimTime, ev: Event, rec: &mut Recorder) {
        match ev {
            Event::TxFree(h) => {
                self.count.pending_tx -= 1;
                self.nodes[h as usize].wake = false;
                self.start_tx(h, now);
            }
            Event::Data {
                slot,
                serial,
                src,
                dst,
            } => {
                self.count.in_flight -= 1;
                self.count.data_arrived += 1;
                let packet = self.packet;
                // Not live: ACKed, so a copy arrived before.
                let first = self.live(slot, serial) && !self.out.get(slot).has(RECEIVED);
                if !first {
                    self.count.duplicates += 1;
                } else {
                    let o = self.out.get_mut(slot);
                    o.set(RECEIVED, true);
                    let (flow, seq, multi, bytes) = (o.flow, o.seq, o.has(MULTI), o.bytes());
                    if !multi {
                        rec.deliver_last(flow, now, bytes as u64);
                    } else {
                        let total = self.cold[slot as usize].flow_bytes;
                        let units = unit_count(total.max(1), packet);
                        let reorder = &mut self.reorder;
                        let at = *self
                            .reorder_of
                            .entry(flow)
                            .or_insert_with(|| reorder.alloc(ReorderBuffer::default()));
                        let rb = self.reorder.get_mut(at);
                        match rb.receive(seq) {
                            Receipt::InOrder { released } => {
                                let next = rb.next_expected();
                                let b: u64 = (next - released..next)
                                    .map(|u| unit_bytes(u, total, packet))
                                    .sum();
                                rec.deliver_point(flow, now, b);
                                if rb.is_complete(units) {
                                    rec.complete(flow, now);
                                    self.reorder.release(at);
                                    self.reorder_of.remove(&flow);
                                }
                            }
                            Receipt::Early => {}
                            Receipt::Duplicate => self.count.duplicates += 1,
                        }
                    }
                }
                let i = self.acks_q.alloc((src, slot, serial));
                self.acks_q.push_back(&mut self.nodes[dst as usize].acks, i);
                self.kick(dst, now);
            }
            Event::Ack { slot, serial } => {
                self.count.in_flight -= 1;
                self.count.acks_arrived += 1;
                if !self.live(slot, serial) || self.out.get(slot).has(ACKED) {
                    return;
                }
                let o = self.out.get_mut(slot);
                o.set(ACKED, true);
                o.deadline = SimTime::MAX;
                let (timer, queued, bytes, h) = (o.has(TIMER), o.has(QUEUED), o.bytes(), o.src);
                self.nodes[h as usize].stage = 0;
                if timer {
                    o.set(TIMER, false);
                    if let Some(id) = self.cold[slot as usize].timer.take() {
                        self.timers.cancel(id);
                    }
                }
                self.nodes[h as usize].buffer_bytes -= bytes as u64;
                if !queued {
                    self.release(slot);
                }
            }
        }
    }
}

impl Fabric for Baldur {
    fn name(&self) -> String {
        "Baldur".into()
    }
    fn hosts(&self) -> usize {
        self.nodes.len()
    }
    fn host_rate(&self) -> Rate {
        self.l.rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        let i = self.fresh_q.alloc(Fresh {
            flow: flow.id,
            dst: flow.dst,
            bytes: flow.bytes,
        });
        let node = &mut self.nodes[flow.src as usize];
        self.fresh_q.push_back(&mut node.fresh, i);
        // The backlog only grows here (sending moves bytes from waiting to
        // un-ACKed; ACKs shrink it), so its peak is taken here.
        let src = flow.src as usize;
        let q = &mut self.queued_bytes[src];
        *q += flow.bytes;
        self.backlog_peak[src] = self.backlog_peak[src].max(*q + node.buffer_bytes);
        // A transmitter already waiting to wake takes the flow then: nothing
        // is scheduled now, so `next_event` stays as it was.
        if !node.wake {
            self.kick(flow.src, now);
            self.settle();
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        self.next_at
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let n = self.step(now, rec);
        rec.count_internal_events(n);
        self.settle();
    }

    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        // Up to this many steps per call, so the run loop still reports
        // progress (and can be cancelled) every few thousand events.
        const MAX_STEPS: u64 = 1 << 12;
        let mut t = now;
        let mut steps = 0;
        let mut n = 0;
        loop {
            n += self.step(t, rec);
            self.settle();
            steps += 1;
            match self.next_at {
                Some(next) if next <= bound && steps < MAX_STEPS => t = next,
                _ => break,
            }
        }
        rec.count_internal_events(n);
        steps
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {
        self.flush();
        self.next_at = self.earliest();
    }

    fn stats(&self) -> FabricStats {
        self.count.stats(
            &self.l,
            &self.buffer_peak,
            &self.backlog_peak,
            self.out.high_water(),
        )
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.link_overlaps > 0 {
            return Err(format!(
                "baldur: {} times a switch output carried two packets at once",
                self.link_overlaps
            ));
        }
        let busy = self.nodes.iter().filter(|n| n.wake).count() as u64;
        if busy != self.count.pending_tx {
            return Err(format!(
                "baldur: {busy} transmitters waiting to wake but {} TxFree events pending",
                self.count.pending_tx
            ));
        }
        if self.count.data_sent != self.count.data_first + self.count.retransmissions {
            return Err("baldur: data transmissions != first + retransmissions".into());
        }
        let flying = (self.count.data_sent - self.count.data_dropped - self.count.data_arrived)
            + (self.count.acks_sent - self.count.acks_dropped - self.count.acks_arrived);
        let pending = self.short_data.len() + self.data_fifo.len() + self.ack_fifo.len();
        if self.wakes.len() as u64 != self.count.pending_tx {
            return Err(format!(
                "baldur: {} wake-ups scheduled but {} TxFree pending",
                self.wakes.len(),
                self.count.pending_tx
            ));
        }
        if flying != self.count.in_flight || self.count.in_flight as usize > pending {
            return Err(format!(
                "baldur: packet conservation: sent - dropped - arrived = {flying}, {} arrival events pending",
                self.count.in_flight
            ));
        }
        let mut held = vec![0u64; self.nodes.len()];
        let mut live = 0usize;
        for slot in 0..self.out.high_water() as u32 {
            let Some(o) = self.out.get_any(slot).filter(|o| o.serial != 0) else {
                continue;
            };
            live += 1;
            if !o.has(ACKED) {
                held[o.src as usize] += o.bytes() as u64;
                if !o.has(TIMER) && o.deadline == SimTime::MAX && !o.has(QUEUED) {
                    return Err(format!("baldur: packet {slot} neither timed nor queued"));
                }
            }
        }
        if live != self.out.live() {
            return Err(format!(
                "baldur: {live} live serials but {} outstanding packets",
                self.out.live()
            ));
        }
        for (h, n) in self.nodes.iter().enumerate() {
            if held[h] != n.buffer_bytes || n.buffer_bytes > self.buffer_peak[h] {
                return Err(format!(
                    "baldur: node {h} buffer {} B but its un-ACKed packets hold {} B",
                    n.buffer_bytes, held[h]
                ));
            }
        }
        Ok(())
    }
}

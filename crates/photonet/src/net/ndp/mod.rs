//! NDP (Handley et al., "Re-architecting datacenter networks and stacks
//! for low latency and high performance", SIGCOMM'17) on the substrate's
//! graph and routers: a receiver-driven transport over switches that trim
//! instead of dropping.
//!
//! - Switch ports ([`queue::TrimQueue`]): a data queue of `buffer` bytes;
//!   a full-size packet that finds it full is trimmed to its header (or,
//!   on a coin flip, the newest queued packet is trimmed and the arrival
//!   queued); headers, ACKs, NACKs and PULLs wait in a header queue of
//!   twice that size, served first.
//! - Host NICs: two classes, ACKs and PULLs above data and NACKs (a NACK
//!   waits behind data, as in htsim), each served round-robin over flows.
//! - Senders send an initial window back to back, then one packet per PULL
//!   (retransmissions first, lowest sequence first); a NACK queues its
//!   packet for retransmission. A retransmission timeout resends whatever
//!   is unacknowledged when a flow has heard nothing for `rto`.
//! - Receivers answer every data packet with an ACK and every header with
//!   a NACK; either adds a PULL to the receiving host's pacer, shared by
//!   all flows to that host, which sends one PULL per full-packet time at
//!   `pull_rate` of the link rate (the ACK or NACK carries the PULL itself
//!   when the pacer is idle). PULLs carry a per-flow count, so a sender
//!   that had nothing to send when pulled sends later without a new PULL.
//! - Paths: each packet is source-routed over one of the shortest paths,
//!   the sender cycling through them in a random order drawn afresh after
//!   each cycle (the receiver does the same for its ACKs, NACKs and PULLs).
//!   A path is a mixed-radix number whose digits pick, hop by hop, one of
//!   the router's equal-cost candidates.
//! - A flow completes when its sender receives the ACK that covers its
//!   last packet (one path's ACK time after the receiver has the data).
//!
//! Not modelled: NDP's return-to-sender of dropped headers (off in the
//! reference runs), link-level flow control, ECN.

mod lanes;
mod queue;
mod rr;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use rand::Rng;

use crate::delivery::{unit_bytes, Receipt, ReorderBuffer};
use crate::flow::Flow;
use crate::net::route::Router;
use crate::net::sim::Graph;
use crate::recorder::Recorder;
use crate::rng::{shuffle, RngStreams, SimRng};
use crate::units::{Rate, SimTime};
use lanes::{LaneQueue, Seq};
use queue::{Admit, TrimQueue};
use rr::RoundRobin;

/// NDP's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct NdpConfig {
    /// Payload bytes of a full data packet.
    pub payload: u32,
    /// Header bytes of a data packet; also the size of a trimmed packet.
    pub header: u32,
    /// Bytes of an ACK, NACK or PULL.
    pub ctrl: u32,
    /// Propagation delay of every link (unless the graph gives delays).
    pub propagation: SimTime,
    /// Data-queue bytes per switch output port (headers get twice this).
    pub buffer: u64,
    /// Packets a flow sends before its first PULL.
    pub init_window: u32,
    /// A receiver's pull pacer runs at this fraction of its link rate.
    pub pull_rate: f64,
    /// Retransmission timeout: resend what is unacknowledged after this
    /// long without feedback.
    pub rto: SimTime,
    /// Every data packet full size, the last one too (htsim does this).
    pub full_packets: bool,
    pub seed: u64,
}

impl Default for NdpConfig {
    /// htsim's NDP settings: 4,096 B payload + 64 B header, 64 B control
    /// packets, 1 us links, 35 × 4,096 B data queues, a window of 50,
    /// pulls at 99 %, 50 ms timeout.
    fn default() -> Self {
        NdpConfig {
            payload: 4096,
            header: 64,
            ctrl: 64,
            propagation: SimTime::us(1),
            buffer: 35 * 4096,
            init_window: 50,
            pull_rate: 0.99,
            rto: SimTime::ms(50),
            full_packets: false,
            seed: 1,
        }
    }
}

/// Packet kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Data = 0,
    /// A data packet trimmed to its header.
    Header = 1,
    Ack = 2,
    Nack = 3,
    Pull = 4,
}

/// A packet. Data: `seq` is its number; ACK/NACK: the number of the data
/// packet answered, `cum` the receiver's next expected packet; PULLs and
/// the ACKs and NACKs that carry one (`pull`): `pull_no` is the flow's
/// count of pulls so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pkt {
    flow: u32,
    seq: u32,
    cum: u32,
    pull_no: u32,
    /// What is left of the path's digits (see the module doc).
    path: u32,
    dst: u32,
    size: u16,
    kind: u8,
    pull: bool,
}

impl Pkt {
    fn trim(&mut self, hdr: u16) {
        self.size = hdr;
        self.kind = Kind::Header as u8;
    }
    fn is(&self, k: Kind) -> bool {
        self.kind == k as u8
    }
}

const EV_ARRIVE: u8 = 0;
const EV_DONE: u8 = 1;
const EV_PACER: u8 = 2;
const EV_RTO: u8 = 3;

// The event queue's lanes (see `lanes`): one per kind of event pushed a
// fixed delay ahead, so that each stays in time order; the rare others
// (a pacer's first PULL after it was idle, a timer pushed back) go to its
// heap.
/// A data packet's arrival at the far end of its link.
const L_ARRIVE_DATA: usize = 0;
/// A header's or control packet's arrival.
const L_ARRIVE_SMALL: usize = 1;
/// A busy port's next start, after a data packet.
const L_DONE_DATA: usize = 2;
/// A busy port's next start, after a header or control packet.
const L_DONE_SMALL: usize = 3;
/// A port's next start, first asked for while it sends.
const L_KICK: usize = 4;
/// A pacer's next PULL, one gap after the last.
const L_PACER: usize = 5;
/// A flow's timer, one timeout after it was armed.
const L_RTO: usize = 6;
const LANES: usize = 7;
/// Not a lane: straight to the heap.
const HEAP: usize = LANES;

/// An event: `pkt` arrives over port `at`; port `at` finished a packet
/// (and another waits);
/// host `at`'s pacer may send; flow `at`'s timer. Events of one time run
/// in the order they were scheduled (`seq`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    seq: u64,
    at: u32,
    what: u8,
    pkt: Pkt,
}

impl Seq for Ev {
    #[inline]
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// Shortest paths in a random order, redrawn after each full cycle.
struct PathCycle {
    perm: Vec<u32>,
    cur: u32,
}

impl PathCycle {
    fn new(n: u32, rng: &mut SimRng) -> PathCycle {
        let mut c = PathCycle {
            perm: if n > 1 { (0..n).collect() } else { Vec::new() },
            cur: 0,
        };
        shuffle(&mut c.perm, rng);
        c
    }
    fn next(&mut self, rng: &mut SimRng) -> u32 {
        if self.perm.is_empty() {
            return 0;
        }
        let p = self.perm[self.cur as usize];
        self.cur += 1;
        if self.cur as usize == self.perm.len() {
            self.cur = 0;
            shuffle(&mut self.perm, rng);
        }
        p
    }
}

struct FlowSt {
    src: u32,
    dst: u32,
    bytes: u64,
    npkts: u32,
    // Sender.
    sent: u32,
    last_pull: u32,
    max_pull: u32,
    rtx: BTreeSet<u32>,
    /// Packets ACKed (a bit each), and the highest cumulative ACK heard.
    acked: Vec<u64>,
    cum: u32,
    done: bool,
    out: PathCycle,
    last_heard: u64,
    rto_armed: bool,
    // Receiver.
    rb: ReorderBuffer,
    pull_no: u32,
    back: PathCycle,
    recv_done: bool,
}

#[derive(Default)]
struct Nic {
    hi: RoundRobin<Pkt>,
    lo: RoundRobin<Pkt>,
    tx: Option<Pkt>,
}

#[derive(Default)]
struct Pacer {
    pulls: RoundRobin<Pkt>,
    last: u64,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct NdpCounts {
    /// New data packets sent.
    pub data_sent: u64,
    /// Data packets sent again (after a NACK or a timeout).
    pub retransmissions: u64,
    /// Data packets trimmed to their header at a switch.
    pub trimmed: u64,
    /// Of those, trimmed while queued (to make room for an arrival).
    pub trimmed_queued: u64,
    /// Headers or control packets dropped at a full header queue.
    pub header_drops: u64,
    pub nacks: u64,
    pub acks: u64,
    /// PULLs sent as packets of their own (not carried by an ACK/NACK).
    pub pulls: u64,
    pub timeouts: u64,
    /// Full data packets that reached their receiver (duplicates too).
    pub data_delivered: u64,
    pub duplicates: u64,
    /// Packets put on a link.
    pub packet_hops: u64,
}

/// A network of NDP hosts and trimming switches over `graph` (hosts
/// `0..graph.hosts`, host `h`'s NIC is port `h`), routed by `R`.
pub struct NdpNetwork<R: Router> {
    cfg: NdpConfig,
    router: R,
    hosts: u32,
    far: Vec<u32>,
    prop: Vec<u64>,
    rate: Vec<Rate>,
    /// Serialisation ps per byte when whole, else 0 (ask the rate).
    ps_per_byte: Vec<u64>,
    nics: Vec<Nic>,
    /// Per port: when its packet on the wire is done, and whether an
    /// EV_DONE is scheduled for then.
    busy_until: Vec<u64>,
    pending: Vec<bool>,
    /// Switch ports' queues, by port − hosts.
    sq: Vec<TrimQueue>,
    pacers: Vec<Pacer>,
    /// Picoseconds between PULLs, per receiving host.
    pull_gap: Vec<u64>,
    flows: Vec<FlowSt>,
    events: LaneQueue<Ev, LANES>,
    seq: u64,
    path_rng: SimRng,
    trim_rng: SimRng,
    n: NdpCounts,
    active: u64,
}

impl<R: Router> NdpNetwork<R> {
    pub fn new(cfg: NdpConfig, graph: Graph, router: R) -> Self {
        assert!(
            cfg.payload + cfg.header <= u16::MAX as u32,
            "NDP: a frame must fit 64 KiB"
        );
        let np = graph.ports.len();
        let prop: Vec<u64> = if graph.delays.is_empty() {
            vec![cfg.propagation.0; np]
        } else {
            graph.delays.iter().map(|d| d.0).collect()
        };
        let ps_per_byte = graph
            .ports
            .iter()
            .map(|s| {
                let num = 8 * SimTime::S;
                if s.rate.0 > 0 && num.is_multiple_of(s.rate.0) {
                    num / s.rate.0
                } else {
                    0
                }
            })
            .collect();
        let hosts = graph.hosts;
        let frame = (cfg.payload + cfg.header) as u64;
        // htsim: whole picoseconds of a full frame, over the pull rate.
        let pull_gap = (0..hosts as usize)
            .map(|h| (graph.ports[h].rate.tx_time(frame).0 as f64 / cfg.pull_rate) as u64)
            .collect();
        let streams = RngStreams::new(cfg.seed);
        NdpNetwork {
            router,
            hosts,
            far: graph.ports.iter().map(|s| s.to).collect(),
            prop,
            rate: graph.ports.iter().map(|s| s.rate).collect(),
            ps_per_byte,
            nics: (0..hosts).map(|_| Nic::default()).collect(),
            busy_until: vec![0; np],
            pending: vec![false; np],
            sq: (hosts as usize..np).map(|_| TrimQueue::default()).collect(),
            pacers: (0..hosts).map(|_| Pacer::default()).collect(),
            pull_gap,
            flows: Vec::new(),
            events: LaneQueue::new(),
            seq: 0,
            path_rng: streams.stream("ndp.paths"),
            trim_rng: streams.stream("ndp.trim"),
            n: NdpCounts::default(),
            active: 0,
            cfg,
        }
    }

    pub fn hosts(&self) -> usize {
        self.hosts as usize
    }

    pub fn counts(&self) -> NdpCounts {
        self.n
    }

    /// Flows not yet completed.
    pub fn active_flows(&self) -> u64 {
        self.active
    }

    /// The number of shortest paths from host `src` to host `dst`.
    pub fn paths(&self, src: u32, dst: u32) -> u32 {
        let mut n: u32 = 1;
        let mut node = self.far[src as usize];
        let mut hops = 0;
        while node >= self.hosts {
            let c = self.router.candidates(node, dst);
            n = n.saturating_mul(c.count.max(1));
            node = self.far[c.first as usize];
            hops += 1;
            assert!(hops < 64, "NDP: no path from {src} to {dst}");
        }
        n
    }

    #[inline]
    fn push(&mut self, lane: usize, t: u64, what: u8, at: u32, pkt: Pkt) {
        self.seq += 1;
        self.events.push(
            lane,
            t,
            Ev {
                seq: self.seq,
                at,
                what,
                pkt,
            },
        );
    }

    #[inline]
    fn ser(&self, port: usize, bytes: u64) -> u64 {
        match self.ps_per_byte[port] {
            0 => self.rate[port].tx_time(bytes).0,
            k => k * bytes,
        }
    }

    fn wire(&self, f: &FlowSt, seq: u32) -> u16 {
        let p = self.cfg.payload as u64;
        let body = if self.cfg.full_packets {
            p
        } else {
            unit_bytes(seq, f.bytes, p)
        };
        (body + self.cfg.header as u64) as u16
    }

    pub fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        assert_eq!(flow.id as usize, self.flows.len(), "NDP: flows in id order");
        let (src, dst) = (flow.src, flow.dst);
        let bytes = flow.bytes.max(1);
        let npkts = bytes.div_ceil(self.cfg.payload as u64) as u32;
        let (out, back) = if src == dst {
            (
                PathCycle::new(1, &mut self.path_rng),
                PathCycle::new(1, &mut self.path_rng),
            )
        } else {
            let (a, b) = (self.paths(src, dst), self.paths(dst, src));
            (
                PathCycle::new(a, &mut self.path_rng),
                PathCycle::new(b, &mut self.path_rng),
            )
        };
        self.flows.push(FlowSt {
            src,
            dst,
            bytes,
            npkts,
            sent: 0,
            last_pull: 0,
            max_pull: 0,
            rtx: BTreeSet::new(),
            acked: vec![0; (npkts as usize).div_ceil(64)],
            cum: 0,
            done: false,
            out,
            last_heard: now.0,
            rto_armed: false,
            rb: ReorderBuffer::new(),
            pull_no: 0,
            back,
            recv_done: false,
        });
        if src == dst {
            // Nothing crosses the network.
            let f = &mut self.flows[flow.id as usize];
            f.done = true;
            f.recv_done = true;
            rec.deliver(flow.id, now, flow.bytes);
            rec.complete(flow.id, now);
            return;
        }
        self.active += 1;
        let w = self.cfg.init_window.min(npkts);
        for _ in 0..w {
            self.send_packet(flow.id, now.0);
        }
    }

    /// The time of the next event. O(1).
    pub fn next_event(&self) -> Option<SimTime> {
        self.events.peek_time().map(SimTime)
    }

    /// Processes every event due at `now`.
    pub fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let t = now.0;
        let mut k = 0u64;
        while let Some((_, ev)) = self.events.pop_due(t) {
            k += 1;
            match ev.what {
                EV_ARRIVE => self.arrive(ev.at, ev.pkt, t, rec),
                EV_DONE => self.port_done(ev.at, t),
                EV_PACER => self.pacer_fire(ev.at, t),
                _ => self.rto_fire(ev.at, t),
            }
        }
        rec.count_internal_events(k);
    }

    // ---- ports ----
    //
    // A port puts a packet on the wire the moment it is free and schedules
    // the packet's arrival at the far end then; it needs an event of its
    // own (EV_DONE) only when another packet waits behind the one on the
    // wire. A packet on the wire that nothing waits behind is retired
    // lazily (its bytes leave the queue) at the port's next use.

    fn nic_push(&mut self, host: u32, p: Pkt, now: u64) {
        let i = host as usize;
        let nic = &mut self.nics[i];
        if !self.pending[i] && self.busy_until[i] <= now && nic.hi.is_empty() && nic.lo.is_empty() {
            // Free, nothing waiting: straight onto the wire.
            nic.tx = Some(p);
            return self.transmit(host, p, now);
        }
        if p.is(Kind::Ack) || p.is(Kind::Pull) {
            nic.hi.push(p.flow, p);
        } else {
            nic.lo.push(p.flow, p);
        }
        self.kick(host, now);
    }

    /// Something was queued at `port`: send it now if the port is free,
    /// else make sure the port wakes when its packet on the wire is done.
    fn kick(&mut self, port: u32, now: u64) {
        let i = port as usize;
        if self.pending[i] {
            return;
        }
        if self.busy_until[i] > now {
            self.pending[i] = true;
            let at = self.busy_until[i];
            self.push(L_KICK, at, EV_DONE, port, Pkt::default());
            return;
        }
        self.retire(port);
        self.start_next(port, now);
    }

    /// The packet on the wire of a free port leaves its queue.
    #[inline]
    fn retire(&mut self, port: u32) {
        if port < self.hosts {
            self.nics[port as usize].tx = None;
        } else {
            let q = &mut self.sq[(port - self.hosts) as usize];
            if !q.is_idle() {
                q.finish();
            }
        }
    }

    /// Puts the next queued packet of an idle `port` on the wire and says
    /// whether it is a data packet; None if nothing waits.
    fn start_next(&mut self, port: u32, now: u64) -> Option<bool> {
        let p = if port < self.hosts {
            let nic = &mut self.nics[port as usize];
            let p = nic.hi.pop().or_else(|| nic.lo.pop())?;
            nic.tx = Some(p);
            p
        } else {
            self.sq[(port - self.hosts) as usize].start()?
        };
        self.transmit(port, p, now);
        Some(p.is(Kind::Data))
    }

    /// Puts `p` on the wire of `port` at `now`: it arrives at the far end
    /// after its serialisation and the link's propagation.
    #[inline]
    fn transmit(&mut self, port: u32, p: Pkt, now: u64) {
        let i = port as usize;
        let end = now + self.ser(i, p.size as u64);
        self.busy_until[i] = end;
        self.n.packet_hops += 1;
        let at = end + self.prop[i];
        let lane = if p.is(Kind::Data) {
            L_ARRIVE_DATA
        } else {
            L_ARRIVE_SMALL
        };
        self.push(lane, at, EV_ARRIVE, port, p);
    }

    /// `port` finished the packet on its wire, with others waiting.
    fn port_done(&mut self, port: u32, now: u64) {
        let i = port as usize;
        self.pending[i] = false;
        self.retire(port);
        if let Some(data) = self.start_next(port, now) {
            if self.waiting(port) {
                self.pending[i] = true;
                let at = self.busy_until[i];
                let lane = if data { L_DONE_DATA } else { L_DONE_SMALL };
                self.push(lane, at, EV_DONE, port, Pkt::default());
            }
        }
    }

    fn waiting(&self, port: u32) -> bool {
        if port < self.hosts {
            let nic = &self.nics[port as usize];
            !nic.hi.is_empty() || !nic.lo.is_empty()
        } else {
            self.sq[(port - self.hosts) as usize].waiting() > 0
        }
    }

    fn arrive(&mut self, via: u32, mut p: Pkt, now: u64, rec: &mut Recorder) {
        let node = self.far[via as usize];
        if node < self.hosts {
            return self.host_receive(node, p, now, rec);
        }
        let c = self.router.candidates(node, p.dst);
        let out = if c.count > 1 {
            let o = c.first + p.path % c.count;
            p.path /= c.count;
            o
        } else {
            c.first
        };
        debug_assert!(out >= self.hosts, "a switch port");
        let cap = self.cfg.buffer;
        let hdr = self.cfg.header as u16;
        if !self.pending[out as usize] && self.busy_until[out as usize] <= now {
            // Its packet on the wire has left: its bytes no longer count.
            self.retire(out);
            let q = &mut self.sq[(out - self.hosts) as usize];
            if q.waiting() == 0 {
                // Free, nothing waiting: straight onto the wire.
                q.send_now(p, !p.is(Kind::Data));
                return self.transmit(out, p, now);
            }
        }
        let rng = &mut self.trim_rng;
        let q = &mut self.sq[(out - self.hosts) as usize];
        if p.is(Kind::Data) {
            match q.admit_data(p, cap, hdr, || rng.random::<f64>()) {
                Admit::Queued => {}
                Admit::QueuedTrimmedNewest { trimmed, dropped } => {
                    self.n.trimmed += trimmed as u64;
                    self.n.trimmed_queued += trimmed as u64;
                    self.n.header_drops += dropped as u64;
                }
                Admit::Trimmed { dropped } => {
                    self.n.trimmed += 1;
                    self.n.header_drops += dropped as u64;
                }
            }
        } else if !q.admit_header(p, cap) {
            self.n.header_drops += 1;
        }
        self.kick(out, now);
    }

    // ---- hosts ----

    fn host_receive(&mut self, host: u32, p: Pkt, now: u64, rec: &mut Recorder) {
        let f = p.flow;
        match p.kind {
            k if k == Kind::Data as u8 => {
                debug_assert_eq!(self.flows[f as usize].dst, host);
                self.n.data_delivered += 1;
                let payload = self.cfg.payload as u64;
                let fl = &mut self.flows[f as usize];
                match fl.rb.receive(p.seq) {
                    Receipt::InOrder { released } => {
                        let end = fl.rb.next_expected();
                        let bytes: u64 = (end - released..end)
                            .map(|s| unit_bytes(s, fl.bytes, payload))
                            .sum();
                        rec.deliver(f, SimTime(now), bytes);
                    }
                    Receipt::Early => {}
                    Receipt::Duplicate => self.n.duplicates += 1,
                }
                self.n.acks += 1;
                self.send_ctrl(f, Kind::Ack, p, now);
                let fl = &mut self.flows[f as usize];
                if !fl.recv_done && fl.rb.is_complete(fl.npkts) {
                    fl.recv_done = true;
                    // The flow needs no more pulls.
                    self.pacers[host as usize].pulls.flush(f);
                }
            }
            k if k == Kind::Header as u8 => {
                self.n.nacks += 1;
                self.send_ctrl(f, Kind::Nack, p, now);
            }
            k if k == Kind::Ack as u8 => self.on_ack(p, now, rec),
            k if k == Kind::Nack as u8 => self.on_nack(p, now),
            _ => self.on_pull(p, now),
        }
    }

    /// The receiver answers data packet (or header) `d` with an ACK (NACK)
    /// and a PULL, through its pacer.
    fn send_ctrl(&mut self, f: u32, kind: Kind, d: Pkt, now: u64) {
        let fl = &mut self.flows[f as usize];
        fl.pull_no += 1;
        let p = Pkt {
            flow: f,
            seq: d.seq,
            cum: fl.rb.next_expected(),
            pull_no: fl.pull_no,
            path: fl.back.next(&mut self.path_rng),
            dst: fl.src,
            size: self.cfg.ctrl as u16,
            kind: kind as u8,
            pull: true,
        };
        let host = fl.dst;
        let gap = self.pull_gap[host as usize];
        let pc = &mut self.pacers[host as usize];
        if pc.pulls.is_empty() {
            let delta = now - pc.last;
            if delta >= gap {
                // The pacer is idle: the ACK/NACK is the PULL.
                pc.last = now;
                return self.nic_push(host, p, now);
            }
            self.push(HEAP, now + gap - delta, EV_PACER, host, Pkt::default());
        }
        let mut pull = p;
        pull.kind = Kind::Pull as u8;
        self.pacers[host as usize].pulls.push(f, pull);
        let mut p = p;
        p.pull = false;
        self.nic_push(host, p, now);
    }

    fn pacer_fire(&mut self, host: u32, now: u64) {
        let pc = &mut self.pacers[host as usize];
        let Some(p) = pc.pulls.pop() else {
            return;
        };
        pc.last = now;
        let more = !pc.pulls.is_empty();
        self.n.pulls += 1;
        self.nic_push(host, p, now);
        if more {
            let gap = self.pull_gap[host as usize];
            self.push(L_PACER, now + gap, EV_PACER, host, Pkt::default());
        }
    }

    /// Flow `f`'s state, unless it is done (its late control packets are
    /// ignored).
    fn live(&mut self, f: u32) -> Option<&mut FlowSt> {
        let fl = &mut self.flows[f as usize];
        (!fl.done).then_some(fl)
    }

    fn heard(&mut self, f: u32, now: u64) {
        let fl = &mut self.flows[f as usize];
        fl.last_heard = now;
        if !fl.rto_armed {
            fl.rto_armed = true;
            let at = now + self.cfg.rto.0;
            self.push(L_RTO, at, EV_RTO, f, Pkt::default());
        }
    }

    fn on_ack(&mut self, p: Pkt, now: u64, rec: &mut Recorder) {
        let f = p.flow;
        let Some(fl) = self.live(f) else {
            return;
        };
        fl.acked[(p.seq / 64) as usize] |= 1 << (p.seq % 64);
        fl.cum = fl.cum.max(p.cum);
        if fl.cum >= fl.npkts {
            fl.done = true;
            self.active -= 1;
            rec.complete(f, SimTime(now));
            return;
        }
        self.heard(f, now);
        if p.pull {
            self.pull_packets(f, p.pull_no, now);
        }
    }

    fn on_nack(&mut self, p: Pkt, now: u64) {
        let f = p.flow;
        let Some(fl) = self.live(f) else {
            return;
        };
        fl.rtx.insert(p.seq);
        let banked = fl.last_pull < fl.max_pull;
        self.heard(f, now);
        if p.pull || banked {
            self.pull_packets(f, p.pull_no, now);
        }
    }

    fn on_pull(&mut self, p: Pkt, now: u64) {
        let f = p.flow;
        let Some(fl) = self.live(f) else {
            return;
        };
        fl.cum = fl.cum.max(p.cum);
        self.heard(f, now);
        self.pull_packets(f, p.pull_no, now);
    }

    /// Sends one packet per pull not yet answered, while there is
    /// something to send.
    fn pull_packets(&mut self, f: u32, pull_no: u32, now: u64) {
        let fl = &mut self.flows[f as usize];
        fl.max_pull = fl.max_pull.max(pull_no);
        while self.flows[f as usize].last_pull < self.flows[f as usize].max_pull {
            if !self.send_packet(f, now) {
                break;
            }
            self.flows[f as usize].last_pull += 1;
        }
    }

    /// Sends the lowest packet waiting for retransmission, else the next
    /// new one; false if there is neither.
    fn send_packet(&mut self, f: u32, now: u64) -> bool {
        let fl = &mut self.flows[f as usize];
        let seq = if let Some(s) = fl.rtx.pop_first() {
            self.n.retransmissions += 1;
            s
        } else if fl.sent < fl.npkts {
            fl.sent += 1;
            self.n.data_sent += 1;
            fl.sent - 1
        } else {
            return false;
        };
        let p = Pkt {
            flow: f,
            seq,
            cum: 0,
            pull_no: 0,
            path: fl.out.next(&mut self.path_rng),
            dst: fl.dst,
            size: self.wire(&self.flows[f as usize], seq),
            kind: Kind::Data as u8,
            pull: false,
        };
        let src = self.flows[f as usize].src;
        self.heard(f, now);
        self.nic_push(src, p, now);
        true
    }

    fn rto_fire(&mut self, f: u32, now: u64) {
        let rto = self.cfg.rto.0;
        let fl = &mut self.flows[f as usize];
        fl.rto_armed = false;
        if fl.done {
            return;
        }
        if now < fl.last_heard + rto {
            fl.rto_armed = true;
            let at = fl.last_heard + rto;
            self.push(HEAP, at, EV_RTO, f, Pkt::default());
            return;
        }
        // Nothing heard for a whole timeout: resend every packet sent and
        // not acknowledged.
        self.n.timeouts += 1;
        for s in fl.cum..fl.sent {
            if fl.acked[(s / 64) as usize] >> (s % 64) & 1 == 0 {
                fl.rtx.insert(s);
            }
        }
        while !self.flows[f as usize].rtx.is_empty() {
            self.send_packet(f, now);
        }
        self.heard(f, now);
    }

    // ---- reporting ----

    pub fn stats(&self) -> Vec<(String, f64)> {
        let n = &self.n;
        let peak = self.sq.iter().map(|q| q.peak_data_bytes).max().unwrap_or(0);
        vec![
            ("data_packets_sent".into(), n.data_sent as f64),
            ("retransmissions".into(), n.retransmissions as f64),
            ("ndp_trimmed".into(), n.trimmed as f64),
            ("ndp_trimmed_queued".into(), n.trimmed_queued as f64),
            ("ndp_header_drops".into(), n.header_drops as f64),
            ("ndp_nacks".into(), n.nacks as f64),
            ("ndp_pulls".into(), n.pulls as f64),
            ("timeouts".into(), n.timeouts as f64),
            ("data_packets_delivered".into(), n.data_delivered as f64),
            ("duplicates".into(), n.duplicates as f64),
            ("packet_hops".into(), n.packet_hops as f64),
            ("peak_data_queue_bytes".into(), peak as f64),
        ]
    }

    /// Every switch's data queue within its bound and its byte accounts
    /// right; every completed flow's receiver has all its packets.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, q) in self.sq.iter().enumerate() {
            q.check(self.cfg.buffer)
                .map_err(|e| format!("port {}: {e}", i + self.hosts as usize))?;
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.done && !f.recv_done {
                return Err(format!("flow {i}: sender done before its receiver"));
            }
            if f.sent > f.npkts {
                return Err(format!("flow {i}: sent {} of {} packets", f.sent, f.npkts));
            }
        }
        Ok(())
    }

    /// Packets waiting in switch queues (not on a wire).
    pub fn queued_packets(&self) -> usize {
        self.sq.iter().map(|q| q.waiting()).sum::<usize>()
            + self
                .nics
                .iter()
                .map(|n| n.hi.len() + n.lo.len())
                .sum::<usize>()
    }
}

//! NegotiaToR (Liang et al., SIGCOMM '24): ToRs with fast-tunable-laser uplink
//! ports on one layer of AWGRs (parallel network or thin-clos), on-demand
//! distributed matching (NegotiaToR Matching, `sched::negotiator`) run in-band
//! over a two-phase epoch, data piggybacking and PIAS priority queues.
//!
//! # Endpoints: ToRs (§4.1)
//!
//! `topology.racks` are the ToRs, `topology.uplinks` their ports S (each at
//! `topology.uplink_rate`), and the hosts under a ToR are the endpoints:
//! with `servers_per_rack = 1` (the paper's setting) an endpoint *is* a ToR
//! and R = `server_rate` is the aggregate host bandwidth under it (400 Gbps;
//! 8 × 100 Gbps ports give the 2× speedup). With more servers per rack, each
//! server is an endpoint at R and the ToR's flows are the sum of its servers'
//! (intra-rack flows never enter the optical fabric). A flow starts when it
//! arrives at its source ToR (the whole flow is there at once: FCT is measured
//! from the ToR, §4.1) and completes when its last byte leaves the destination
//! ToR's host-facing queue, which drains at R (§3.6.5): so FCT ≥ bytes/R, and
//! the speedup can over-fill that queue.
//!
//! # The epoch (§3.3, Figure 2)
//!
//! An epoch is a **predefined phase** of `P` slots of `predefined_slot`
//! (guardband + `header` of REQUEST/GRANT/ACCEPT + one piggybacked data
//! packet), in which every ordered ToR pair is connected once by a round-robin
//! rule — P = ⌈(N−1)/S⌉ on the parallel network, P = W on thin-clos — then a
//! **scheduled phase** of `scheduled_slots` slots of `scheduled_slot`
//! (one packet of `data_header` + payload, no reconfiguration) on the matched
//! ports. Defaults (§4.1): 16 × 60 ns + 30 × 90 ns = 3.66 µs; 625 B per
//! predefined slot (30 B header + 595 B payload), 1,125 B per scheduled slot
//! (10 B header + 1,115 B payload). Without piggybacking the predefined slot
//! shrinks to guardband + header and the freed time becomes extra scheduled
//! slots, the epoch keeping its length (Table 2; the remainder below one slot
//! idles).
//!
//! # The pipeline (§3.3.1, Figure 4)
//!
//! Scheduling messages ride in the predefined phase and need the one-way delay
//! `propagation` (+ `compute_delay`) to arrive: a step taken at the start of
//! epoch e is answered at the start of epoch e + k with
//! k = ⌈(P·predefined_slot + propagation + compute_delay) / epoch⌉ (k = 1 with
//! the defaults: 0.96 + 2 µs < 3.66 µs). REQUEST (demand at the start of e),
//! GRANT at e + k, ACCEPT at e + 2k, and the accepted ports carry data in the
//! scheduled phase of epoch e + 2k: "a scheduling delay of around two epochs".
//! A longer delay stretches the pipeline (k = 2 from 2.7 µs on). With `iterations
//! = r`, rounds follow each other (new REQUESTs on the ports still free) and
//! data flows in epoch e + (3r − 1)k ("one more iteration … enlarged by three
//! epochs", App. A.2.1). A new process starts every epoch.
//!
//! REQUEST is binary: source s requests d when its queue for d holds more than
//! `request_threshold` piggyback payloads (with piggybacking; more than 0
//! without, §3.4.1). Requests are stateless: repeated every epoch while data
//! waits (§3.5).
//!
//! # Per slot (time-stepped: one event per slot for the whole fabric)
//!
//! - predefined slot j: every ToR port sends, to the ToR the round-robin rule
//!   connects it to, one packet of up to the piggyback payload from its queue
//!   for that ToR (highest non-empty priority first);
//! - scheduled slot: every accepted (source port → destination port) sends one
//!   packet of up to the scheduled payload; several ports of one pair take
//!   packets from the pair's queue lowest port first (order kept, §3.6.5);
//! - a packet never mixes flows (nor PIAS priorities of one flow) unless
//!   `packing` says so (`class`: several flows of the pair within one PIAS
//!   class; `pair`: across classes, the per-destination queue as one byte
//!   stream); it arrives `propagation` after its slot ends and joins the
//!   host-facing queue.
//!
//! With `priority_queues` the per-destination FIFO is three FIFOs (PIAS at the
//! source: a flow's first 1 KB, its next 9 KB, the rest; `priority_thresholds`).
//!
//! # Receiver-side limit (§3.6.5)
//!
//! With `receiver_buffer` > 0 a destination grants a port only if its
//! host-facing queue can take the port's scheduled phase: at a GRANT for data
//! epoch T it counts its queued bytes, bytes in flight to it and the
//! capacity of ports already granted but not yet used, against
//! `receiver_buffer` plus what the queue drains at R (its servers' total)
//! until T's data starts to arrive; ports it cannot fill are not granted
//! (rotating which). Piggybacked packets are not limited.
//!
//! # Link failures (§3.6.1)
//!
//! `link_failures` fail a ToR port's egress (laser → AWGR) or ingress (AWGR →
//! receiver) link between `at` and `until`. Everything sent on a failed link
//! is lost: scheduling messages (so a pair whose messages use it gets no
//! grant), piggybacked and scheduled packets (retransmitted by the source, as
//! by TCP, one RTT = 2 × propagation after the loss, at the head of the
//! queue it came from, so every byte is delivered exactly once). Detection
//! uses the predefined phase's dummy messages: an ingress link that hears
//! nothing is known failed `detect_epochs` epochs after it fails; an egress
//! failure is known once the receivers' feedback has come back, k epochs
//! later. Known failed ports are excluded from GRANT and ACCEPT; a repaired
//! link is used again after the same delays. On the parallel network the
//! predefined round-robin rule rotates every epoch (`rotate_predefined`), so a
//! pair's messages use a different port each epoch.
//!
//! # Variants (§3.5, App. A.2) — all parameters of this one table
//!
//! `iterations` (A.2.1), `requests = "data_size" | "hol_delay"` (A.2.3, with
//! `hol_alpha`), `stateful` (A.2.4), `algorithm = "projector"` (A.2.5: per-port
//! requests of bundles, longest-waiting first; a bundle is "the amount of
//! data sent in one epoch", by one port's scheduled phase with
//! `projector_bundle = "port"`, the default, or by all S ports' with
//! `"tor"`; `projector_order` says whether a source takes its bundles
//! strictly by each bundle's own waiting delay, the default, or by its
//! pair's, or interleaves its destinations). The traffic-oblivious baseline of §4 is the
//! `sirius_ideal` fabric (Valiant relay over the same cyclic thin-clos
//! schedule, `sched::awgr::CyclicSchedule`, which this module shares for
//! thin-clos) with `queue_bound = 4294967295` (no intermediate bound) and
//! `source_priorities = ["1KB", "10KB"]` (PIAS at sources).
//!
//! `relay` (thin-clos only; App. A.2.2, Table 3) adds traffic-aware selective
//! relay, integrated into the matching. REQUEST: a source whose lowest-priority
//! (elephant) queue for d holds ≥ `relay_threshold` asks up to
//! `relay_fanout` intermediates m (`sched::negotiator::relay_candidates`):
//! not d, not a ToR it requests directly, and reached on an egress port with
//! no high-volume direct traffic (no own queue above `relay_threshold` for a
//! ToR behind that port). GRANT: m refuses unless its relay queue for d has
//! room for one port's scheduled phase within `relay_buffer` and its own
//! egress port towards d carries no high-volume direct traffic; the rest is
//! ordinary NegotiaToR GRANT. ACCEPT: direct grants first, relay grants on
//! the ports left free. The accepted port carries the source's elephant
//! data for d to m (one propagation delay), where it waits in a relay queue
//! for d and goes on as m's own traffic (m requests d for it; own data
//! first): two hops at most, never piggybacked. Relay is modelled with
//! binary, stateless, one-round NegotiaToR matching and without link
//! failures (other combinations are rejected).
//!
//! # Statistics
//!
//! Besides the run's FCT (to the host-facing queue's last byte), the fabric
//! reports the ToR-to-ToR FCT of mice (< `mice_below`) the paper measures
//! (`tor_fct_mice_p99_us`, `tor_fct_mice_mean_us`), the match ratio, and with
//! link failures that all repair, `failure_window_goodput_ratio`: bytes
//! delivered between the first failure and the last repair over those
//!
//! # The parts
//!
//! One event per slot for the whole fabric ([`Fabric::advance`]): deliver
//! what has left the host-facing queues, start the epoch's scheduling steps
//! at its first slot, then send the slot's packets. Each part owns its state:
//! - `params.rs`: the `[negotiator]` table, the layout and the FCT bounds;
//! - `time.rs`: epochs and global slot numbers;
//! - `source.rs`: the source queues (per pair, per priority) and the flows;
//! - `crate::host_edge`: the destinations' host-facing queues (shared);
//! - `matching.rs`: the pipelined scheduling processes and their plan;
//! - `relay.rs`: selective relay's queues at intermediates;
//! - `failures.rs`: failed and known-failed links, retransmission;
//! - `stats.rs`: counters and the reported statistics.
//!
//! Per packet the hot path is `SourceQueues::take` (cut off the pair's
//! inline head segment) and `HostEdge::enqueue` (the departure time from the
//! host-facing queue, computed when the packet is sent); `source::pre_ports`
//! reads a source's S data bits at once in a predefined slot (a kernel
//! checked against a port-by-port oracle in `tests.rs`). The performance
//! history is in docs/perf-notes/negotiator-sirius.md.

mod failures;
mod matching;
mod params;
mod relay;
mod source;
mod stats;
mod time;

pub use params::{
    Algorithm, LinkFailure, LinkSide, NegotiatorLayout, NegotiatorModule, NegotiatorParams,
    Packing, ProjectorBundle, ProjectorOrder, RequestKind, RingInit,
};

use crate::fabric::{Fabric, FabricStats};
use crate::flow::Flow;
use crate::host_edge::{self, HostEdge};
use crate::recorder::Recorder;
use crate::rng::RngStreams;
use crate::sched::negotiator::FREE;
use crate::units::{Rate, SimTime};
use failures::Failures;
use matching::{Ctx, Negotiation};
use relay::Relay;
use source::{pre_ports, FlowSt, Flows, Pkt, Seg, SourceQueues};
use stats::{Contention, Counters, FlowWait};
use time::Time;

/// A NegotiaToR fabric.
pub struct Negotiator {
    l: NegotiatorLayout,
    label: String,
    time: Time,
    src: SourceQueues,
    flows: Flows,
    edge: HostEdge,
    matching: Negotiation,
    relay: Relay,
    fail: Failures,
    c: Counters,
    contention: Contention,
    mice_below: u64,
    added_bytes: u64,
    /// Scratch: a predefined slot's links with data (src, port, dst, port).
    pre_links: Vec<(u32, u32, u32, u32)>,
    /// `packing`: None (a packet is one segment's), or whether a packet
    /// fills across PIAS classes.
    pack: Option<bool>,
    /// Scratch: the pieces of packed packets.
    pieces: Vec<Pkt>,
    /// Bytes a pair's queue must exceed to be requested (`wait_stats`).
    request_bytes: u64,
    /// The slot being sent is a scheduled one (`wait_stats`).
    in_scheduled: bool,
}

impl Negotiator {
    pub fn new(
        l: NegotiatorLayout,
        p: &NegotiatorParams,
        label: &str,
        seed: u64,
        check: bool,
    ) -> Negotiator {
        let (n, s) = (l.n, l.s);
        let prios = l.prio_cuts.len() + 1;
        let rng = RngStreams::new(seed).stream("negotiator.rings");
        let tabled = l.pre_payload.max(l.sched_payload) * s as u64;
        Negotiator {
            label: label.to_string(),
            time: Time::new(&l),
            src: SourceQueues::new(n, prios, p.relay, p.stateful),
            flows: Flows::default(),
            edge: HostEdge::new(l.host_rate, n, l.servers_per_rack, tabled),
            matching: Negotiation::new(&l, p, rng),
            relay: Relay::new(
                p.relay,
                p.relay_threshold.0,
                p.relay_fanout as usize,
                p.relay_buffer.0,
                n,
            ),
            fail: Failures::new(p, n, s),
            c: Counters::default(),
            contention: Contention::new(check, n * s),
            mice_below: p.mice_below.0,
            added_bytes: 0,
            pre_links: Vec::new(),
            pack: match l.packing {
                Packing::None => None,
                Packing::Class => Some(false),
                Packing::Pair => Some(true),
            },
            pieces: Vec::new(),
            request_bytes: if l.piggyback {
                p.request_threshold as u64 * l.pre_payload
            } else {
                0
            },
            in_scheduled: false,
            l,
        }
    }

    pub fn layout(&self) -> &NegotiatorLayout {
        &self.l
    }

    fn busy(&self) -> bool {
        self.src.queued() > 0
            || self.edge.pending() > 0
            || self.fail.retransmit_pending()
            || self.relay.in_flight()
            || self.matching.busy()
            || !self.matching.plan.matched.is_empty()
    }

    /// Bytes of `flow` reach its destination ToR at `arrive` and join the
    /// host-facing queue of endpoint `ep`.
    #[inline(always)]
    fn reach_tor(&mut self, arrive: SimTime, flow: u32, ep: u32, bytes: u64, last: bool) {
        if last {
            self.flows.reached_tor(flow, arrive);
        }
        self.edge.enqueue(arrive, flow, ep, bytes, last);
    }

    /// Puts a packet on the wire at the end of a slot ending at `end`, or
    /// loses it (failed link) and schedules its retransmission.
    #[inline(always)]
    fn send(&mut self, s: usize, d: usize, pkt: Pkt, end: SimTime, lost: bool) {
        if let Some(w) = self.matching.waits_mut() {
            let x = &mut w.flows[pkt.flow as usize];
            if x.first == SimTime::MAX {
                x.first = end;
            }
            if pkt.last {
                x.last = end;
                x.last_scheduled = self.in_scheduled;
            }
        }
        if lost {
            self.lose(s, d, pkt, end);
            return;
        }
        self.reach_tor(
            end + self.l.propagation,
            pkt.flow,
            pkt.ep,
            pkt.bytes,
            pkt.last,
        );
    }

    /// A packet lost on a failed link: retransmitted by its source one RTT
    /// after the slot ending at `end`.
    #[cold]
    #[inline(never)]
    fn lose(&mut self, s: usize, d: usize, pkt: Pkt, end: SimTime) {
        self.fail.lose(s, d, &pkt, end + self.l.propagation * 2);
        // The retransmission is still to be sent.
        self.flows.more_to_send(pkt.flow);
    }

    /// Bytes that have left the host-facing queues by `now` are delivered;
    /// relayed data reaches its intermediates; due retransmissions rejoin
    /// their source queue.
    fn deliver_until(&mut self, now: SimTime, rec: &mut Recorder) {
        let rate = self.edge.rate();
        // Packets are at most a slot's payload on every port of a pair;
        // larger entries are whole intra-rack flows.
        let packets = self.l.pre_payload.max(self.l.sched_payload) * self.l.s as u64;
        let due = self.edge.take_due(now);
        self.fail.count_delivered(due);
        host_edge::deliver(due, rate, packets, rec);
        if self.relay.on {
            self.relay.arrivals_until(now, &mut self.src, &self.flows);
        }
        while let Some((s, d, prio, flow, b)) = self.fail.due_retransmit(now) {
            let seg = Seg {
                flow,
                ep: self.flows.dst_ep(flow),
                left: b,
                since: now,
            };
            // Its packets were counted in `unsent` when lost (stateful: the
            // source reports it again, see `SourceQueues::push_seg`).
            self.src.push_seg(s, d, prio, seg, true);
        }
    }

    /// Everything that happens at the start of epoch `e`.
    fn epoch_start(&mut self, e: u64, now: SimTime) {
        self.c.epochs += 1;
        if self.fail.any() {
            self.fail.apply(now, e, self.l.s, self.l.k);
        }
        let cx = Ctx {
            l: &self.l,
            time: &self.time,
            fail: &self.fail,
            edge: &self.edge,
            relay: &self.relay,
        };
        self.matching.epoch(e, now, &cx, &mut self.src);
        // Queue occupancy sample (per ToR, averaged over ToRs).
        self.c.queue_samples += 1;
        self.c.queue_sum += self.src.queued() as f64 / self.l.n as f64;
    }

    /// Predefined slot `j` (global slot `g`) of epoch `e`: every port with
    /// data for the ToR it reaches sends one piggybacked packet.
    fn predefined_slot(&mut self, g: u64, j: usize, e: u64, now: SimTime) {
        if !self.l.piggyback {
            return;
        }
        self.in_scheduled = false;
        let end = now + self.l.pre_slot;
        let (n, sp) = (self.l.n, self.l.s);
        // Two passes per block of sources: first the links whose queue holds
        // data (a tight loop of independent loads, so the memory system
        // fetches them in parallel), then the packets, in the same order
        // (a take changes only its own source's queues). Blocks of about 128
        // links keep the pair queues of the first pass in L1 for the second.
        let block = (128 / sp).max(1);
        // The parallel network links `s`'s ports in slot j to the ToRs at
        // offsets o0 .. o0 + S (cyclically): their data bits are S
        // consecutive bits of the source's row, read at once.
        let o0 = 1 + j * sp;
        let bits = self.l.thin.is_none() && sp <= 64;
        let r = self.l.rotation(e);
        // A local vector while the packets go out: iterating the field
        // through `self`, which the sends change, reloads it every link.
        let mut links = std::mem::take(&mut self.pre_links);
        let mut s0 = 0;
        while s0 < n {
            let s1 = (s0 + block).min(n);
            links.clear();
            for s in s0..s1 {
                if self.src.tor_bytes(s) == 0 {
                    continue;
                }
                if bits {
                    let mut ports = pre_ports(self.src.has_data(), n, sp, s, j, r);
                    while ports != 0 {
                        let p = ports.trailing_zeros() as usize;
                        ports &= ports - 1;
                        let o = o0 + (p + r) % sp;
                        let d = if s + o >= n { s + o - n } else { s + o };
                        debug_assert_eq!(self.l.pre_dest(s, p, j, e), Some((d, p)));
                        links.push((s as u32, p as u32, d as u32, p as u32));
                    }
                    continue;
                }
                for p in 0..sp {
                    let Some((d, q)) = self.l.pre_dest(s, p, j, e) else {
                        continue;
                    };
                    if self.src.pair_has_data(s * n + d) {
                        links.push((s as u32, p as u32, d as u32, q as u32));
                    }
                }
            }
            s0 = s1;
            self.piggyback_links(&links, g, end);
        }
        self.pre_links = links;
    }

    /// The piggybacked packets of a predefined slot on `links`.
    #[inline]
    fn piggyback_links(&mut self, links: &[(u32, u32, u32, u32)], g: u64, end: SimTime) {
        let sp = self.l.s;
        let payload = self.l.pre_payload;
        for &(s, p, d, q) in links {
            let (s, p, d, q) = (s as usize, p as usize, d as usize, q as usize);
            let (i, o) = (s * sp + p, d * sp + q);
            if self.fail.any() && (self.fail.egress_known(i) || self.fail.ingress_known(o)) {
                continue; // known failed: keep the data for working links
            }
            if let Some(across) = self.pack {
                let mut pieces = std::mem::take(&mut self.pieces);
                let sent = (s, d);
                if self
                    .src
                    .take_packed(sent, (payload, 1), across, &mut self.flows, &mut pieces)
                    > 0
                {
                    if self.contention.check {
                        self.contention.heard(o, g);
                    }
                    let lost = self.fail.any() && self.fail.down(i, o);
                    for &pkt in &pieces {
                        self.c.piggyback_bytes += pkt.bytes;
                        self.matching
                            .sent_unreserved(s, d, pkt.bytes, &mut self.src);
                        self.send(s, d, pkt, end, lost);
                    }
                }
                self.pieces = pieces;
                continue;
            }
            let Some(pkt) = self.src.take(s, d, payload, 1, &mut self.flows) else {
                continue;
            };
            if self.contention.check {
                self.contention.heard(o, g);
            }
            let lost = self.fail.any() && self.fail.down(i, o);
            self.c.piggyback_bytes += pkt.bytes;
            self.matching
                .sent_unreserved(s, d, pkt.bytes, &mut self.src);
            self.send(s, d, pkt, end, lost);
        }
    }

    /// A scheduled slot (global slot `g`): every matched port sends one
    /// packet of its pair's queue (or of relayed data).
    fn scheduled_slot(&mut self, g: u64, now: SimTime) {
        let end = now + self.l.sched_slot;
        self.in_scheduled = true;
        let sp = self.l.s;
        let payload = self.l.sched_payload;
        let plan = &self.matching.plan;
        self.c.matched_port_slots += plan.matched.len() as u64;
        if self.contention.check {
            for &(_, _, d, q) in &plan.matched {
                self.contention.heard(d as usize * sp + q as usize, g);
            }
        }
        if self.fail.any() {
            // Port by port: each port's links may have failed.
            for k in 0..self.matching.plan.matched.len() {
                let (s, x, d, q) = self.matching.plan.matched[k];
                let (s, x, d, q) = (s as usize, x as usize, d as usize, q as usize);
                self.matching.consume_promise(d, payload);
                if let Some(across) = self.pack {
                    let mut pieces = std::mem::take(&mut self.pieces);
                    let one = (payload, 1);
                    if self
                        .src
                        .take_packed((s, d), one, across, &mut self.flows, &mut pieces)
                        > 0
                    {
                        let lost = self.fail.down(s * sp + x, d * sp + q);
                        self.c.used_port_slots += 1;
                        for &pkt in &pieces {
                            self.c.scheduled_bytes += pkt.bytes;
                            self.matching.plan.sent(s, d, pkt.bytes);
                            self.send(s, d, pkt, end, lost);
                        }
                    }
                    self.pieces = pieces;
                    continue;
                }
                let Some(pkt) = self.src.take(s, d, payload, 1, &mut self.flows) else {
                    continue;
                };
                let lost = self.fail.down(s * sp + x, d * sp + q);
                self.c.used_port_slots += 1;
                self.c.scheduled_bytes += pkt.bytes;
                self.matching.plan.sent(s, d, pkt.bytes);
                self.send(s, d, pkt, end, lost);
            }
            return;
        }
        // A pair's ports take consecutive packets of its queue in one go.
        for k in 0..self.matching.plan.runs.len() {
            let (s, d, ports) = self.matching.plan.runs[k];
            let (s, d) = (s as usize, d as usize);
            let mut left = ports as u64;
            self.matching.consume_promise(d, payload * left);
            if self.relay.on && self.matching.plan.run_relay[k] != FREE {
                // First hop of relayed elephant data: s → intermediate d.
                let target = self.matching.plan.run_relay[k];
                while left > 0 {
                    let flows = &mut self.flows;
                    let Some(pkt) = self.src.take_low(s, target as usize, payload, left, flows)
                    else {
                        break;
                    };
                    left -= pkt.packets;
                    self.c.used_port_slots += pkt.packets;
                    self.c.scheduled_bytes += pkt.bytes;
                    // Queued again at the intermediate: not yet sent.
                    self.flows.more_to_send(pkt.flow);
                    let at = end + self.l.propagation;
                    self.relay.launch(at, d, target, pkt.flow, pkt.bytes);
                }
                continue;
            }
            if let Some(across) = self.pack {
                // Packed: the run's ports carry consecutive packets, each
                // filled from as many segments as fit.
                let mut pieces = std::mem::take(&mut self.pieces);
                let flows = &mut self.flows;
                let used =
                    self.src
                        .take_packed((s, d), (payload, left), across, flows, &mut pieces);
                self.c.used_port_slots += used;
                for &pkt in &pieces {
                    self.c.scheduled_bytes += pkt.bytes;
                    if let Some(x) = self.matching.plan.run_sent.get_mut(k) {
                        *x += pkt.bytes;
                    }
                    self.send(s, d, pkt, end, false);
                }
                self.pieces = pieces;
                continue;
            }
            while left > 0 {
                let pkt = match self.src.take(s, d, payload, left, &mut self.flows) {
                    Some(pkt) => pkt,
                    None if self.relay.on => {
                        let (src, flows) = (&mut self.src, &mut self.flows);
                        match self.relay.take(s, d, payload, left, src, flows) {
                            Some(pkt) => pkt,
                            None => break,
                        }
                    }
                    None => break,
                };
                left -= pkt.packets;
                self.c.used_port_slots += pkt.packets;
                self.c.scheduled_bytes += pkt.bytes;
                if let Some(x) = self.matching.plan.run_sent.get_mut(k) {
                    *x += pkt.bytes;
                }
                self.send(s, d, pkt, end, false);
            }
        }
    }
}

impl Fabric for Negotiator {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn hosts(&self) -> usize {
        self.edge.endpoints()
    }
    fn host_rate(&self) -> Rate {
        self.l.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        let spr = self.l.servers_per_rack as u32;
        let (st, dt) = (flow.src / spr, flow.dst / spr);
        debug_assert_eq!(flow.id as usize, self.flows.0.len());
        self.flows.0.push(FlowSt {
            dst_ep: flow.dst,
            unsent: 0,
            bytes: flow.bytes,
            start: now,
            tor_done: SimTime::MAX,
        });
        self.time.latest = self.time.latest.max(now);
        self.added_bytes += flow.bytes;
        if self.matching.waits().is_some() {
            let (s, d) = (st as usize, dt as usize);
            let ahead = if s == d { 0 } else { self.src.bytes(s, d) };
            let requested = ahead + flow.bytes > self.request_bytes;
            let w = self.matching.waits_mut().expect("checked");
            w.flows.push(FlowWait {
                first: SimTime::MAX,
                last: SimTime::MAX,
                ahead,
                last_scheduled: false,
                requested,
            });
        }
        if flow.bytes == 0 {
            self.flows.reached_tor(flow.id, now);
            rec.complete(flow.id, now);
            return;
        }
        if st == dt {
            // Within a rack: straight to the destination's host-facing queue.
            self.reach_tor(now, flow.id, flow.dst, flow.bytes, true);
            return;
        }
        let (s, d) = (st as usize, dt as usize);
        let mut lo = 0u64;
        for prio in 0..self.src.prios() {
            let hi = self
                .l
                .prio_cuts
                .get(prio)
                .copied()
                .unwrap_or(u64::MAX)
                .min(flow.bytes);
            if hi > lo {
                let seg = Seg {
                    flow: flow.id,
                    ep: flow.dst,
                    left: hi - lo,
                    since: now,
                };
                self.flows.more_to_send(flow.id);
                self.src.push_seg(s, d, prio, seg, false);
                lo = hi;
            }
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        if !self.busy() {
            return None;
        }
        Some(self.time.slot_time(self.time.next_slot()))
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let g = self.time.slot_at_or_after(now);
        debug_assert_eq!(
            self.time.slot_time(g),
            now,
            "advance only at slot boundaries"
        );
        self.c.slots += 1;
        rec.count_internal_events(1);
        self.deliver_until(now, rec);
        let per = self.time.slots_per_epoch();
        let (e, j) = (g / per, (g % per) as usize);
        let plan = &mut self.matching.plan;
        if j == 0 {
            self.epoch_start(e, now);
        } else if plan.epoch != e && !plan.matched.is_empty() {
            // Resumed mid-epoch after a skipped epoch boundary: nothing matched.
            self.matching.settle(&mut self.src);
        }
        if j < self.l.pre_slots {
            self.predefined_slot(g, j, e, now);
        } else if self.matching.plan.epoch == e {
            self.scheduled_slot(g, now);
        }
        self.time.last = Some(g);
        self.time.latest = now;
    }

    fn finish(&mut self, end: SimTime, rec: &mut Recorder) {
        self.time.end = end;
        self.deliver_until(end, rec);
    }

    fn stats(&self) -> FabricStats {
        stats::stats(self)
    }

    fn check_invariants(&self) -> Result<(), String> {
        let (edge, fail) = (&self.edge, &self.fail);
        if edge.arrived() != edge.pending() + edge.delivered() {
            return Err(format!(
                "negotiator: {} B reached destination ToRs but {} B are in host-facing queues or delivered",
                edge.arrived(),
                edge.pending() + edge.delivered()
            ));
        }
        let queued = self.src.queued();
        let accounted = queued
            + edge.pending()
            + edge.delivered()
            + fail.retransmit_bytes()
            + self.relay.flight_bytes();
        if accounted != self.added_bytes {
            return Err(format!(
                "negotiator: {} B offered but {accounted} B accounted for (queued {}, sent {}, delivered {}, to retransmit {})",
                self.added_bytes, queued, edge.pending(), edge.delivered(), fail.retransmit_bytes()
            ));
        }
        if self.contention.count > 0 {
            return Err(format!(
                "negotiator: {} receive ports heard two senders in one slot",
                self.contention.count
            ));
        }
        // The slot's matching: no source port or destination port twice.
        let sp = self.l.s;
        let mut src = vec![false; self.l.n * sp];
        let mut dst = vec![false; self.l.n * sp];
        for &(s, x, d, q) in &self.matching.plan.matched {
            let (i, j) = (s as usize * sp + x as usize, d as usize * sp + q as usize);
            if src[i] || dst[j] {
                return Err(format!(
                    "negotiator: port matched twice ({s}:{x} -> {d}:{q})"
                ));
            }
            src[i] = true;
            dst[j] = true;
        }
        self.src.check(self.relay.queued())
    }
}

#[cfg(test)]
mod tests;

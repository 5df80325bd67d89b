//! The packet network: hosts with NICs and transports, switches with
//! output-queued ports, links with serialisation and propagation, driven by
//! one monotone event queue (a calendar wheel, `net::calendar`).
//!
//! # Engine
//! Lossy ports (drop-tail, ECN; no PFC) are FIFO and work-conserving, so a
//! packet's departure is known the moment it is enqueued: it starts when the
//! port is next free (`busy_until`) and arrives at the far end one
//! serialisation plus one propagation later. The engine therefore keeps **one
//! event per packet-hop** — the arrival at the next node — and no per-port
//! FIFO of waiting packets at all: a port is its `busy_until` time. A byte
//! occupies the buffer until it has been serialised (buffers are freed as
//! cells leave), so a port's occupancy at `now` is exactly its unsent
//! backlog, `(busy_until − now) · rate`; drop-tail and ECN decisions are made
//! on arrival against it, as an output-queued switch makes them.
//!
//! Lossless ports (PFC, credits) and priority classes hold real FIFOs and a
//! second event per packet-hop, "port free"; their state and the credit and
//! lazy port-free machinery are `flow_control.rs`'s. The [`Router`] chooses a
//! packet's VC on each link ([`Router::vc`]; default by hop count) and may
//! override the output port ([`Router::route`]) — the hooks a dragonfly
//! (UGAL, VCs for deadlock freedom) or a multi-butterfly needs.
//!
//! Cut-through (`cut_through`) works on both kinds of port. Lossy ports
//! forward a packet once its header has arrived; queued (credit, PFC)
//! ports likewise, as virtual cut-through: a packet starts on the next link
//! once its header has arrived there, the port is free and (credits) its
//! VC holds credits for the whole packet; a transmission never ends before
//! the packet's last bit has arrived (`Packet::tail`), and a host receives
//! a packet when its last bit arrives.
//!
//! A packet in flight lives *in its arrival event*, by value (the calendar
//! stores payloads inline): popping the event brings the packet with it, so
//! a hop costs one cache miss, not two. Queued ports hold their waiting
//! packets in a [`Pool`](crate::pool::Pool) threaded by
//! [`List`](crate::pool::List)s (indices, no allocation per packet once
//! warm); an ACK is the data packet it acknowledges, rewritten. Timers
//! (retransmission timeouts, PFC frames, NIC wake-ups) are on a calendar
//! wheel of their own ([`TimerWheel`]: fired by time, then in scheduling
//! order, as a `TimerQueue` fires them).
//!
//! # Parts
//! - this file: the [`Network`], its constructor and the event kernel
//!   (dispatch, arrival and routing, enqueue on lossy and queued ports,
//!   transmission, port free, timers), oracle-tested as one by
//!   `tests/net_exact.rs` and `tests/net_lazy.rs`;
//! - `flow_control.rs`: the queued ports (`Queues`): lanes, PFC frames,
//!   credits and their lazy returns, lazy port-free;
//! - `hosts.rs`: the hosts' flows and NICs (`Hosts`) and the transports'
//!   send and receive paths (DCTCP, paced); `transport.rs`: per-flow state;
//! - `pfabric.rs`: `Transport::Pfabric`;
//! - `ports.rs`: the packet, a port's state and the event keys;
//! - `stats.rs`: counters, statistics and the invariant check;
//! - `hooks.rs`: the hooks for outside drivers (`net::external`);
//! - `config.rs`, `flow_table.rs`.

use crate::flow::Flow;
use crate::net::calendar::{CalendarQueue, TimerWheel};
use crate::net::route::{ecmp_choice, least_loaded, reduce, Hop, Router, Routing};
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::units::SimTime;
use rand::RngCore;

mod config;
mod flow_control;
mod flow_table;
mod hooks;
mod hosts;
mod pfabric;
mod ports;
mod stats;
mod transport;

pub use config::{
    CreditConfig, DctcpConfig, FlowControl, Graph, NetConfig, NicQueues, PfabricConfig, PfcConfig,
    PortSpec, Priority, Transport, MAX_CLASSES, MAX_VCS,
};

use flow_control::{Admit, Queues};
use hosts::Hosts;
use ports::*;
use stats::Counters;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Rto(u32),
    DelAck(u32),
    /// Round-robin NIC of this host: free again.
    Nic(u32),
    Pfc {
        port: u32,
        lane: u8,
        pause: bool,
        seq: u32,
    },
    /// pFabric: the port picks its next packet.
    PfServe(u32),
}

/// A packet-level network over a graph and a router.
pub struct Network<R: Router> {
    cfg: NetConfig,
    graph: Graph,
    router: R,
    ports: Vec<Port>,
    counts: Vec<PortCounts>,
    /// The queued ports and their flow control (`flow_control.rs`).
    q: Queues,
    events: CalendarQueue<Packet>,
    timers: TimerWheel<Timer>,
    /// The hosts' flows and NICs (`hosts.rs`).
    h: Hosts,
    rng: SimRng,
    loss_rng: SimRng,
    salt: u64,
    /// Packet events pending (for the conservation check).
    packet_events: u64,
    /// Where the run is in the calendar's order: every event before
    /// `(time, payload)` has happened, none after (lazy credits compare
    /// their own event against it).
    bound: (u64, Packet),
    n: Counters,
    last_advance: u64,
    peak_events: usize,
    /// State of the hooks for outside drivers (`net::external`).
    ext: hooks::Ext,
    /// `Transport::Pfabric`'s queues and senders (`pfabric.rs`).
    pf: Option<Box<pfabric::Pf>>,
}

impl<R: Router> Network<R> {
    pub fn new(cfg: NetConfig, graph: Graph, router: R) -> Self {
        assert_eq!(graph.ports.len(), graph.reverse.len());
        assert!(
            graph.delays.is_empty() || graph.delays.len() == graph.ports.len(),
            "net: {} link delays for {} ports",
            graph.delays.len(),
            graph.ports.len()
        );
        let hosts = graph.hosts as usize;
        let ports: Vec<Port> = graph
            .ports
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let exact = (8 * SimTime::S).is_multiple_of(s.rate.0);
                let ps_per_byte = if exact { 8 * SimTime::S / s.rate.0 } else { 0 };
                let ps_per_byte = u32::try_from(ps_per_byte).unwrap_or(0) as u64;
                Port {
                    busy_until: 0,
                    ps_per_byte: ps_per_byte as u32,
                    to: s.to,
                    prop: graph.delays.get(i).map_or(cfg.propagation.0, |d| d.0),
                    peak: 0,
                }
            })
            .collect();
        assert!(
            cfg.payload as u64 + cfg.header as u64 <= u16::MAX as u64,
            "net: frames above 64 KiB"
        );
        let classes = cfg.priority.classes();
        let queued = !matches!(cfg.flow_control, FlowControl::None)
            || classes > 1
            || matches!(cfg.transport, Transport::Pfabric(_));
        // A paced NIC sends whenever its port is free: only queued ports
        // (PFC, credits or priority classes) hold what it sends.
        assert!(
            queued || !matches!(cfg.transport, Transport::Paced),
            "net: the paced transport needs PFC, credits or priority classes (flow_control is None)"
        );
        let (vcs, vc_buffer) = match cfg.flow_control {
            FlowControl::Credit(c) => {
                assert!(
                    (1..=MAX_VCS).contains(&c.vcs),
                    "net: {} virtual channels",
                    c.vcs
                );
                assert!(
                    c.vc_buffer >= (cfg.payload + cfg.header) as u64,
                    "net: VC buffer below one frame"
                );
                assert!(classes == 1, "net: priority classes with credits");
                (c.vcs as u32, c.vc_buffer)
            }
            _ => (classes, 0),
        };
        let streams = RngStreams::new(cfg.seed);
        let salt = streams.stream("net.ecmp").next_u64();
        Network {
            q: Queues::new(&cfg, &ports, queued, vcs, vc_buffer),
            counts: vec![PortCounts::default(); ports.len()],
            ports,
            events: CalendarQueue::new(),
            timers: TimerWheel::new(),
            h: Hosts::new(hosts, &cfg),
            rng: streams.stream("net.routing"),
            loss_rng: streams.stream("net.loss"),
            salt,
            packet_events: 0,
            bound: (0, AFTER_ALL),
            n: Counters::default(),
            last_advance: 0,
            peak_events: 0,
            ext: hooks::Ext::default(),
            pf: pfabric::Pf::new(graph.ports.len(), hosts, &cfg.transport),
            cfg,
            graph,
            router,
        }
    }

    pub fn hosts(&self) -> usize {
        self.graph.hosts as usize
    }

    /// The routing hook it was built with.
    pub fn router(&self) -> &R {
        &self.router
    }

    /// A lossy port's buffer and ECN threshold as serialisation times at
    /// `ps` picoseconds per byte (saturating: "never").
    #[inline]
    fn limits_ps(cfg: &NetConfig, ps: u64) -> (u64, u64) {
        (
            cfg.buffer.saturating_mul(ps),
            cfg.ecn_k.unwrap_or(u64::MAX).saturating_mul(ps),
        )
    }

    fn lossless(&self) -> bool {
        !matches!(self.cfg.flow_control, FlowControl::None)
    }

    /// Credits: whether they are returned lazily (see
    /// `Queues::return_credit`; on whenever every link's credit takes
    /// time to come back).
    pub fn lazy_credits(&self) -> bool {
        self.q.lazy
    }

    /// Credits: lazy returns on (the default where possible) or off (every
    /// credit an event of its own: the reference the lazy returns are
    /// tested against). Before any flow.
    #[doc(hidden)]
    pub fn set_lazy_credits(&mut self, on: bool) {
        self.before_flows("lazy credits");
        self.q.set_lazy(on);
    }

    /// Buckets of `2^shift` ps for the packet events (default 2^9; see
    /// `calendar::shift_for`). The order, hence every result, does not
    /// depend on it. Before any flow.
    pub fn set_calendar_shift(&mut self, shift: u32) {
        self.before_flows("the calendar's bucket width");
        assert!(
            self.events.is_empty(),
            "net: calendar width set with events pending"
        );
        self.events = CalendarQueue::with_bucket_shift(shift);
    }

    /// A mode `what` may switch only before any flow arrives.
    fn before_flows(&self, what: &str) {
        assert!(
            self.h.flows.len() == 0,
            "net: {what} switched after flows arrived"
        );
    }

    /// Lazy port-free (see `Queues::hold_release`): on by default with
    /// lazy credits, which it needs.
    pub fn lazy_port_free(&self) -> bool {
        self.q.lazy_pf
    }

    /// Lazy port-free on (with lazy credits only) or off (every
    /// transmission's end an event: the reference it is tested against).
    /// Before any flow.
    #[doc(hidden)]
    pub fn set_lazy_port_free(&mut self, on: bool) {
        self.before_flows("lazy port-free");
        self.q.lazy_pf = on && self.q.lazy;
    }

    /// A flow arrives at `now`.
    pub fn add_flow(&mut self, now: SimTime, flow: &Flow, _rec: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.h.flows.len());
        self.last_advance = now.0;
        // The driver runs every event due by `now` first.
        self.bound = (now.0, AFTER_ALL);
        self.h.add(flow, now.0, &self.cfg);
        match self.cfg.transport {
            Transport::Dctcp(_) => self.try_send(flow.id, now.0),
            Transport::Pfabric(_) => self.pf_add_flow(flow.id, now.0),
            Transport::Paced => {
                self.h.paced[flow.src as usize].push_back(flow.id);
                if self.q.lazy_pf {
                    // Its NIC may be freeing lazily: then it must wake to
                    // pace this flow.
                    self.q.settle_port(flow.src, &mut self.events, &self.bound);
                }
                let q = &self.q.qports[flow.src as usize];
                if !q.busy && !self.q.all_paused(flow.src) && !self.q.has_queue(flow.src) {
                    self.pace(flow.src, now.0);
                }
            }
        }
    }

    /// The time of the next internal event. O(1).
    pub fn next_event(&self) -> Option<SimTime> {
        match (self.events.peek_time(), self.timers.peek_time()) {
            (Some(a), Some(b)) => Some(SimTime(a.min(b.0))),
            (Some(a), None) => Some(SimTime(a)),
            // Credits held lazily are still on their way (as their events
            // would be pending): say so, so that a driver's "work left"
            // test does not change.
            (None, None) if self.q.lazy_last_at > self.bound.0 => {
                Some(SimTime(self.q.lazy_last_at))
            }
            (None, b) => b,
        }
    }

    /// Processes everything due at `now`.
    pub fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let t = now.0;
        self.last_advance = t;
        let mut processed = 0u64;
        // Only queued ports (lossless, classes, pFabric) read the bound:
        // lossy ones keep no lazy state.
        let track = self.q.on();
        loop {
            while let Some((at, ev)) = self.events.pop_due(t) {
                processed += 1;
                if track {
                    self.bound = (at, ev);
                }
                if ev.flags & FLAG_PORT_FREE != 0 {
                    self.port_free(ev.port, t);
                } else if ev.flags & FLAG_CREDIT != 0 {
                    if self.q.credit_arrives(ev.port, ev.vc, ev.wire as u64, at) {
                        self.start_tx(ev.port, t);
                    }
                } else {
                    self.packet_events -= 1;
                    self.arrive(ev, t, rec);
                }
            }
            self.peak_events = self.peak_events.max(self.events.len());
            match self.timers.peek_time() {
                Some(tt) if tt.0 <= t => {
                    let (_, tm) = self.timers.pop().expect("a due timer");
                    processed += 1;
                    // Timers fire after every event of their time.
                    if track {
                        self.bound = (t, AFTER_ALL);
                    }
                    self.fire(tm, t);
                }
                _ => break,
            }
        }
        if track {
            self.bound = (t, AFTER_ALL);
        }
        rec.count_internal_events(processed);
    }

    // ---- packets -------------------------------------------------------

    /// Packet `pi` arrives at the far end of the port it was sent on.
    #[inline]
    fn arrive(&mut self, mut pkt: Packet, now: u64, rec: &mut Recorder) {
        self.n.hops += 1;
        let node = pkt.node;
        if node < self.graph.hosts {
            if self.q.credit {
                // A host consumes what it receives at once.
                self.q.consumed(&pkt, now, &mut self.events, &self.bound);
            }
            if pkt.flags & FLAG_ACK != 0 && self.pf.is_some() {
                self.pf_on_ack(pkt, now, rec);
            } else if pkt.flags & FLAG_ACK != 0 {
                self.on_ack(pkt, now);
            } else {
                self.on_data(pkt, now, rec);
            }
            return;
        }
        if self.cfg.loss > 0.0
            && (self.loss_rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < self.cfg.loss
        {
            self.n.drops += 1;
            self.h.flows[pkt.flow as usize].losses += 1;
            self.n.lost += 1;
            self.n.lost_data += (pkt.flags & FLAG_ACK == 0) as u64;
            if self.q.credit {
                self.q.consumed(&pkt, now, &mut self.events, &self.bound);
            }
            return;
        }
        let mut hop = Hop {
            node,
            flow: pkt.flow,
            dst: pkt.dst,
            in_port: pkt.port,
            vc: pkt.vc,
            vcs: self.q.vcs as u8,
            tag: pkt.tag,
            ack: pkt.flags & FLAG_ACK != 0,
        };
        let routed = {
            let (ports, qload, lossless) = (&self.ports, &self.q.qload, !self.q.qports.is_empty());
            let specs = &self.graph.ports;
            let bound = &self.bound;
            let load = |p: u32| {
                if lossless {
                    eff_load(qload[p as usize], p, bound)
                } else {
                    ports[p as usize].backlog(now, || specs[p as usize].rate)
                }
            };
            self.router.route(&mut hop, &load, &mut self.rng)
        };
        if let Some(out) = routed {
            pkt.tag = hop.tag;
            return self.enqueue(out, pkt, now);
        }
        let c = self.router.candidates(node, pkt.dst);
        let out = if c.count == 1 {
            c.first
        } else {
            let k = match self.cfg.routing {
                // pFabric: the source NIC chose (`pfabric.rs`).
                _ if self.pf.is_some() => pkt.tag % c.count,
                Routing::Ecmp => ecmp_choice(
                    pkt.flow,
                    pkt.flags & FLAG_ACK != 0,
                    node,
                    self.salt,
                    c.count,
                ),
                Routing::Spray => reduce(self.rng.next_u64(), c.count),
                Routing::Adaptive => {
                    let start = reduce(self.rng.next_u64(), c.count);
                    if self.q.on() {
                        let qload = &self.q.qload[c.first as usize..(c.first + c.count) as usize];
                        let bound = &self.bound;
                        least_loaded(c.count, start, |i| {
                            eff_load(qload[i as usize], c.first + i, bound)
                        })
                    } else {
                        let ports = &self.ports;
                        least_loaded(c.count, start, |i| {
                            ports[(c.first + i) as usize].busy_until.saturating_sub(now)
                        })
                    }
                }
            };
            c.first + k
        };
        self.enqueue(out, pkt, now);
    }

    /// Puts packet `pi` on port `p` at `now` (a switch port or a NIC).
    #[inline]
    fn enqueue(&mut self, p: u32, mut pkt: Packet, now: u64) {
        if self.q.on() {
            return self.enqueue_lossless(p, pkt, now);
        }
        let is_switch = p >= self.graph.hosts;
        let wire = pkt.wire as u64;
        let rate = || self.graph.ports[p as usize].rate;
        let port = &mut self.ports[p as usize];
        if is_switch {
            // Bytes still to serialise: a byte leaves the buffer as it is
            // sent. With a whole number of ps per byte the tests compare
            // times (no division per hop); otherwise bytes.
            let (over, mark, occ_after) = if port.ps_per_byte != 0 {
                let ps = port.ps_per_byte as u64;
                let after = port.busy_until.saturating_sub(now) + wire * ps;
                let (buffer_ps, ecn_ps) = Self::limits_ps(&self.cfg, ps);
                (after > buffer_ps, after > ecn_ps, after)
            } else {
                let after = port.backlog(now, rate) + wire;
                let k = self.cfg.ecn_k.unwrap_or(u64::MAX);
                (after > self.cfg.buffer, after > k, after)
            };
            if over {
                self.counts[p as usize].drops += 1;
                self.n.drops += 1;
                self.h.flows[pkt.flow as usize].losses += 1;
                return;
            }
            if mark && pkt.flags & FLAG_ACK == 0 {
                pkt.flags |= FLAG_CE;
                self.counts[p as usize].marks += 1;
            }
            port.peak = port.peak.max(occ_after);
        }
        let start = port.busy_until.max(now);
        if !is_switch && pkt.flags & FLAG_ACK == 0 {
            self.n.nic_wait += start - now;
            self.n.nic_wait_max = self.n.nic_wait_max.max(start - now);
        }
        let mut end = start + port.ser(wire, rate);
        let arrival;
        if self.cfg.cut_through {
            // Not before its own tail has arrived here (from a host: already).
            if pkt.tail > now {
                end = end.max(pkt.tail);
            }
            pkt.tail = end + port.prop;
            arrival = if port.to < self.graph.hosts {
                pkt.tail
            } else {
                start + port.ser(self.cfg.header as u64, rate) + port.prop
            };
        } else {
            arrival = end + port.prop;
        }
        port.busy_until = end;
        pkt.port = p;
        pkt.node = port.to;
        self.events.push(arrival, pkt);
        self.packet_events += 1;
    }

    /// Queued ports (lossless, or with priority classes): puts `pkt` into
    /// lane `pkt.vc` of port `p` (its VC with credits, its class otherwise).
    fn enqueue_lossless(&mut self, p: u32, mut pkt: Packet, now: u64) {
        if self.pf.is_some() {
            return self.pf_enqueue(p, pkt, now);
        }
        let hosts = self.graph.hosts;
        let wire = pkt.wire as u64;
        let lanes = self.q.vcs;
        // The lane it waits in: its class, or (credits) the VC the router
        // picks; `pkt.vc` keeps the lane it came by until it starts.
        let mut out_lane = pkt.vc;
        if p >= hosts {
            // The ingress buffer it occupies: (link it came by, lane).
            let inp = pkt.port;
            match self
                .q
                .admit(&self.cfg, p, inp, pkt.vc, wire, &mut self.n, &self.bound)
            {
                Admit::Held => {}
                Admit::Dropped => {
                    self.counts[p as usize].drops += 1;
                    self.n.drops += 1;
                    self.h.flows[pkt.flow as usize].losses += 1;
                    return;
                }
                Admit::Pause(seq, delay) => {
                    let at = now + self.ports[inp as usize].prop + delay + self.ext.pfc_extra(true);
                    self.timers.schedule(
                        SimTime(at),
                        Timer::Pfc {
                            port: inp,
                            lane: pkt.vc,
                            pause: true,
                            seq,
                        },
                    );
                }
            }
            if let Some(k) = self.cfg.ecn_k {
                if self.q.occ(p) + wire > k && pkt.flags & FLAG_ACK == 0 {
                    pkt.flags |= FLAG_CE;
                    self.counts[p as usize].marks += 1;
                }
            }
        }
        if self.q.credit {
            let hop = Hop {
                node: if p < hosts { p } else { pkt.node },
                flow: pkt.flow,
                dst: pkt.dst,
                in_port: if p < hosts { u32::MAX } else { pkt.port },
                vc: pkt.vc,
                vcs: lanes as u8,
                tag: pkt.tag,
                ack: pkt.flags & FLAG_ACK != 0,
            };
            let vc = self.router.vc(&hop, p);
            assert!(
                (vc as u32) < lanes,
                "net: the router put a packet on VC {vc} of {lanes}"
            );
            out_lane = vc;
        }
        if self.q.lazy_pf {
            self.q.settle_port(p, &mut self.events, &self.bound);
        }
        self.q.qload[p as usize] += wire;
        let occ = self.q.occ(p);
        let port = &mut self.ports[p as usize];
        port.peak = port.peak.max(occ);
        let b = (p * lanes + out_lane as u32) as usize;
        if self.q.credit && !self.q.qports[p as usize].busy && self.q.qports[p as usize].queued == 0
        {
            // An idle port with every lane empty: `pop_next` would pick
            // this packet's lane if its credits hold the packet (taking
            // the credits that have arrived, as it does), so it starts
            // here without a trip through the pool. Otherwise it waits
            // (and `start_tx` counts the stall and wakes the credits).
            if self.q.lazy && self.q.lanes[b].credits < wire {
                self.q.absorb_credit(b as u32, &self.bound);
                if self.q.lazy_pf && self.q.lanes[b].credits < wire {
                    self.q.absorb_rels(p, Some(out_lane), &self.bound);
                }
            }
            let l = &mut self.q.lanes[b];
            if l.credits >= wire {
                l.credits -= wire;
                // (out_lane + 1) % lanes, without a division (out_lane < lanes).
                let next = out_lane as u32 + 1;
                self.q.qports[p as usize].rr = if next == lanes { 0 } else { next as u8 };
                return self.transmit(p, pkt, out_lane, now);
            }
        }
        let pi = self.q.pool.alloc(pkt);
        let mut list = self.q.lanes[b].queue;
        self.q.pool.push_back(&mut list, pi);
        self.q.lanes[b].queue = list;
        self.q.qports[p as usize].queued += 1;
        if !self.q.qports[p as usize].busy {
            self.start_tx(p, now);
        }
    }

    /// A host receives it when its last bit arrives.
    fn start_tx(&mut self, p: u32, now: u64) {
        if self.pf.is_some() {
            return self.pf_arm_serve(p, now);
        }
        let popped = self
            .q
            .pop_next(p, &mut self.n.credit_stalls, &mut self.events, &self.bound);
        let Some((pi, lane)) = popped else {
            return;
        };
        let pkt = self.q.pool[pi];
        self.q.pool.release(pi);
        self.transmit(p, pkt, lane, now);
    }

    /// Queued ports: port `p` starts sending `pkt` on lane `lane` (taken
    /// from its lane, its credits taken).
    #[inline(always)]
    fn transmit(&mut self, p: u32, mut pkt: Packet, lane: u8, now: u64) {
        let hosts = self.graph.hosts;
        let q = &mut self.q.qports[p as usize];
        let rate = || self.graph.ports[p as usize].rate;
        let port = &mut self.ports[p as usize];
        let start = now.max(port.busy_until);
        let mut end = start + port.ser(pkt.wire as u64, rate);
        if pkt.tail > end {
            end = pkt.tail;
        }
        port.busy_until = end;
        q.busy = true;
        let idle_after = q.queued == 0;
        self.q.qload[p as usize] += 1;
        q.tx_inp = if p >= hosts {
            pkt.port * self.q.vcs + pkt.vc as u32
        } else {
            0
        };
        q.tx_wire = pkt.wire;
        let (in_link, in_vc) = (pkt.port, pkt.vc);
        pkt.vc = lane;
        pkt.port = p;
        pkt.node = port.to;
        let prop = port.prop;
        let arrival = if self.cfg.cut_through && port.to >= hosts {
            pkt.tail = end + prop;
            start + port.ser(self.cfg.header as u64, rate) + prop
        } else {
            pkt.tail = 0;
            end + prop
        };
        // Lazy port-free: a switch port with nothing queued behind this
        // packet frees without an event if its release can be held; a
        // paced NIC with nothing queued and no flow waiting to be paced
        // (it has nothing to release; an arriving flow wakes it).
        if self.q.lazy_pf
            && idle_after
            && end < LZ_END_LIMIT
            && if p >= hosts {
                self.q.hold_release(
                    in_link,
                    in_vc,
                    p,
                    end,
                    pkt.wire,
                    &mut self.events,
                    &self.bound,
                )
            } else {
                matches!(self.cfg.transport, Transport::Paced)
                    && self.h.paced[p as usize].is_empty()
            }
        {
            debug_assert_eq!(self.q.qload[p as usize], pkt.wire as u64 + 1);
            self.q.qports[p as usize].tx_inp = TX_LAZY;
            self.q.qload[p as usize] = LZ_FLAG | end << 16 | pkt.wire as u64;
        } else {
            self.events.push(end, pf_event(p));
        }
        self.events.push(arrival, pkt);
        self.packet_events += 1;
    }

    /// Queued ports: port `p` finished a transmission.
    fn port_free(&mut self, p: u32, now: u64) {
        let hosts = self.graph.hosts;
        let q = &mut self.q.qports[p as usize];
        q.busy = false;
        let (inp, wire) = (q.tx_inp, q.tx_wire as u64);
        self.q.qload[p as usize] -= wire + 1;
        if p >= hosts && inp != TX_LAZY {
            // The packet's bytes leave this switch's ingress buffer `inp`
            // (link · lanes + lane).
            let resume = self
                .q
                .release(&self.cfg, inp, wire, now, &mut self.events, &self.bound);
            if let Some((seq, delay)) = resume {
                let link = inp / self.q.vcs;
                let at = now + self.ports[link as usize].prop + delay + self.ext.pfc_extra(false);
                self.timers.schedule(
                    SimTime(at),
                    Timer::Pfc {
                        port: link,
                        lane: (inp % self.q.vcs) as u8,
                        pause: false,
                        seq,
                    },
                );
            }
        }
        if self.q.all_paused(p) {
            return;
        }
        let queued = self.q.has_queue(p);
        if !queued && p < hosts && matches!(self.cfg.transport, Transport::Paced) {
            self.pace(p, now);
        } else if !queued && p < hosts && self.h.rr_nic {
            self.nic_kick(p, now);
        } else if queued {
            self.start_tx(p, now);
        }
    }

    fn fire(&mut self, tm: Timer, now: u64) {
        match tm {
            Timer::Rto(f) => self.rto_fired(f, now),
            Timer::DelAck(f) => self.delack_fired(f, now),
            Timer::PfServe(p) => self.pf_serve(p, now),
            Timer::Nic(h) => {
                self.h.nic_armed[h as usize] = false;
                self.nic_kick(h, now);
            }
            Timer::Pfc {
                port,
                lane,
                pause,
                seq,
            } => {
                if self.q.pfc_frame(port, lane, pause, seq, now)
                    && !self.q.qports[port as usize].busy
                {
                    if self.q.has_queue(port) {
                        self.start_tx(port, now);
                    } else if port < self.graph.hosts
                        && matches!(self.cfg.transport, Transport::Paced)
                    {
                        self.pace(port, now);
                    } else if port < self.graph.hosts && self.h.rr_nic {
                        self.nic_kick(port, now);
                    }
                }
            }
        }
    }

    /// Processes every event due at or before `t`.
    pub fn run_until(&mut self, t: SimTime, rec: &mut Recorder) {
        while let Some(e) = self.next_event() {
            if e > t {
                break;
            }
            self.advance(e, rec);
        }
    }
}

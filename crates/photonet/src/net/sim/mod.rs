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
//! Lossless ports (PFC) cannot commit departures on arrival: a PAUSE may stop
//! the port before a queued packet starts. With `FlowControl::Pfc` every
//! port holds a real FIFO ([`pool::List`](crate::pool::List) through the
//! packet pool) and a second event per packet-hop, "port free", starts the
//! next packet unless the port is paused. Switches account buffered bytes
//! per ingress link; above `xoff` a PAUSE reaches the upstream port
//! `propagation + pause_delay` later, and below `xon` a RESUME
//! `propagation + resume_delay` later (timers on a
//! [`TimerWheel`]). Each ingress link owns
//! `buffer` bytes; `layout` checks that `xoff` plus the bytes one link round
//! trip can still deliver after it fits, so nothing is ever dropped.
//!
//! Credit-based flow control (`FlowControl::Credit`, HPC style) uses the
//! same lossless machinery with per-(port, VC) FIFOs. Credits are counted
//! in **bytes**: the receiving node has `vc_buffer` bytes of input buffer
//! per (incoming link, VC), and the link's sender starts with that many
//! bytes of credit per VC. A port sends a packet only when it holds credits
//! for all the packet's wire bytes on the packet's VC, and takes them at
//! the start of transmission; ports serve their VCs round-robin, skipping
//! VCs whose head packet lacks credits (no head-of-line blocking across
//! VCs). A switch holds a packet in the buffer of the (link, VC) it arrived
//! by until its last byte has left on the output port; then the credit
//! travels back, arriving `propagation + credit_delay` later. Hosts consume
//! what they receive at once (credit returned on arrival). Nothing is ever
//! dropped. A credit is an event only when its port waits for credits;
//! otherwise its lane holds it until the port next looks, at exactly the
//! place in the event order its event would have had
//! ([`Network::return_credit`]; the calendar's entry count and the
//! `events` a run reports are therefore smaller, nothing else changes).
//! Likewise the port-free event (lazy port-free, with lazy credits): a
//! switch port that finishes a packet with nothing queued, or a paced NIC
//! with nothing left to pace, frees without an event; its load, the
//! ingress buffer its packet leaves and that buffer's credit are applied
//! where they are next read, at exactly the place in the event order the
//! event would have had (see `Network::hold_release`; only `events` and
//! `peak_packets_in_flight` change). The [`Router`] chooses a packet's VC on each link
//! ([`Router::vc`]; default by hop count) and may override the output port
//! ([`Router::route`]) — the hooks a dragonfly (UGAL, VCs for deadlock
//! freedom) or a multi-butterfly needs.
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
//! a hop costs one cache miss, not two (measured: the pooled layout spent
//! ~60 % of its time on those two misses). PFC queues hold their waiting
//! packets in a [`Pool`] threaded by [`List`]s (indices, no allocation per
//! packet once warm); an ACK is the data packet it acknowledges, rewritten.
//! Timers (retransmission timeouts, PFC frames, NIC wake-ups) are on a
//! calendar wheel of their own ([`TimerWheel`]: fired by time, then in
//! scheduling order, as a `TimerQueue` fires them); an
//! RTO is armed once and pushed back lazily (a deadline field, re-armed when
//! it fires early), so an ACK costs no timer operation.
//!
//! # Transports
//! - [`Transport::Dctcp`]: a reliable window transport with DCTCP congestion
//!   control (`net::dctcp`), one ACK per data packet echoing its CE mark and
//!   timestamp, fast retransmit on `dupack_threshold` duplicate ACKs
//!   (NewReno partial ACKs), retransmission timeout (go-back-N, exponential
//!   backoff) with an RTT estimate (RFC 6298) floored at `rto_min`; before
//!   a flow's first RTT sample its RTO is `rto_init` (RFC 6298 §2.1).
//! - [`Transport::Paced`]: window-free, for lossless networks: each NIC sends
//!   its flows' packets round-robin, one at a time, at line rate; no ACKs.
//! - [`Transport::Pfabric`]: pFabric's priority queues at every port and its
//!   fixed-timeout window hosts, as the simulator YAPS has them (`pfabric.rs`).
//!
//! Receivers deliver through a [`ReorderBuffer`] per flow: every byte reaches
//! the [`Recorder`] once and in order, whatever was reordered, dropped or
//! retransmitted.

use crate::delivery::{Receipt, ReorderBuffer};
use crate::flow::Flow;
use crate::net::calendar::{CalendarQueue, TimerWheel};
use crate::net::dctcp::Dctcp;
use crate::net::route::{ecmp_choice, least_loaded, reduce, Hop, Router, Routing};
use crate::pool::Pool;
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::units::SimTime;
use rand::RngCore;
use std::collections::VecDeque;

mod config;
mod flow_table;
mod hooks;
mod pfabric;
mod ports;
mod stats;
mod transport;

pub use config::{
    CreditConfig, DctcpConfig, FlowControl, Graph, NetConfig, NicQueues, PfabricConfig, PfcConfig,
    PortSpec, Priority, Transport, MAX_CLASSES, MAX_VCS,
};

use flow_table::FlowTable;
use ports::*;
use stats::Counters;
use transport::{is_sacked, next_hole, FlowState, WinState};

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
    qports: Vec<QPort>,
    /// Queued ports: bytes queued or on the wire, + 1 while busy (the
    /// `load` adaptive routing compares: a dense array, so that reading a
    /// switch's candidate ports touches one line, not two per port).
    qload: Vec<u64>,
    /// PFC, per port: pause time (ps) and pauses.
    pfc_time: Vec<[u64; 2]>,
    /// PFC queues' packets.
    pool: Pool<Packet>,
    events: CalendarQueue<Packet>,
    timers: TimerWheel<Timer>,
    /// Per flow by id; with `retire`, only from the oldest unfinished one.
    flows: FlowTable<FlowState>,
    /// The window transport's state per flow by id (empty when paced).
    win: Vec<WinState>,
    /// Paced transport: finished flows leave `flows`
    /// ([`Network::retire_finished_flows`]).
    retire: bool,
    /// Retired flows (source, destination, bytes, FCT), in id order, until
    /// taken ([`Network::take_retired`]); `None`: not kept.
    retired_log: Option<Vec<(u32, u32, u64, SimTime)>>,
    /// Per host, its flows with a packet to send, served round-robin: the
    /// paced transport's flows with packets left, or (round-robin NIC) the
    /// window transport's flows whose window allows a packet.
    paced: Vec<VecDeque<u32>>,
    /// Round-robin NIC: a `Timer::Nic` is pending for the host.
    nic_armed: Vec<bool>,
    /// The window transport with a round-robin NIC.
    rr_nic: bool,
    rng: SimRng,
    loss_rng: SimRng,
    salt: u64,
    /// Packet events pending (for the conservation check).
    packet_events: u64,
    /// Lanes per queued port: VCs with credits, else priority classes (1
    /// without either); per (port, lane) state.
    vcs: u32,
    lanes: Vec<Lane>,
    credit: bool,
    /// Credits are returned lazily (every link's credit takes > 0 ps).
    lazy: bool,
    /// Lazy port-free (with lazy credits): a switch port that finishes a
    /// packet with nothing queued frees without an event; see
    /// [`Network::hold_release`].
    lazy_pf: bool,
    /// Credits: `credit_delay`, ps.
    credit_delay: u64,
    /// The latest arrival of a credit held lazily.
    lazy_last_at: u64,
    /// Where the run is in the calendar's order: every event before
    /// `(time, payload)` has happened, none after (lazy credits compare
    /// their own event against it).
    bound: (u64, Packet),
    credit_events: u64,
    /// PFC pause time per class, ps.
    class_pause: Vec<u64>,
    n: Counters,
    active: u64,
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
        let nlanes = if queued {
            ports.len() * vcs as usize
        } else {
            0
        };
        let streams = RngStreams::new(cfg.seed);
        let salt = streams.stream("net.ecmp").next_u64();
        let mut net = Network {
            qports: if queued {
                let credit_delay = match cfg.flow_control {
                    FlowControl::Credit(c) => c.credit_delay.0,
                    _ => 0,
                };
                ports
                    .iter()
                    .map(|p| QPort {
                        credit_after: u32::try_from(p.prop + credit_delay).unwrap_or(u32::MAX),
                        ..QPort::default()
                    })
                    .collect()
            } else {
                Vec::new()
            },
            counts: vec![PortCounts::default(); ports.len()],
            qload: if queued {
                vec![0; ports.len()]
            } else {
                Vec::new()
            },
            pfc_time: if matches!(cfg.flow_control, FlowControl::Pfc(_)) {
                vec![[0; 2]; ports.len()]
            } else {
                Vec::new()
            },
            ports,
            pool: Pool::new(),
            events: CalendarQueue::new(),
            timers: TimerWheel::new(),
            flows: FlowTable::new(),
            win: Vec::new(),
            retire: false,
            retired_log: None,
            paced: vec![VecDeque::new(); hosts],
            nic_armed: vec![false; hosts],
            rr_nic: matches!(cfg.transport, Transport::Dctcp(_))
                && cfg.nic == NicQueues::RoundRobin,
            rng: streams.stream("net.routing"),
            loss_rng: streams.stream("net.loss"),
            salt,
            packet_events: 0,
            vcs,
            lanes: vec![
                Lane {
                    credits: vc_buffer,
                    ..Lane::default()
                };
                nlanes
            ],
            credit: vc_buffer > 0,
            lazy: false,
            lazy_pf: false,
            credit_delay: match cfg.flow_control {
                FlowControl::Credit(c) => c.credit_delay.0,
                _ => 0,
            },
            lazy_last_at: 0,
            bound: (0, AFTER_ALL),
            credit_events: 0,
            class_pause: vec![0; classes as usize],
            n: Counters::default(),
            active: 0,
            last_advance: 0,
            peak_events: 0,
            ext: hooks::Ext::default(),
            pf: pfabric::Pf::new(graph.ports.len(), hosts, &cfg.transport),
            cfg,
            graph,
            router,
        };
        net.lazy = net.credit && net.qports.iter().all(|q| q.credit_after > 0);
        net.lazy_pf = net.lazy;
        net
    }

    pub fn hosts(&self) -> usize {
        self.graph.hosts as usize
    }

    /// The routing hook it was built with.
    pub fn router(&self) -> &R {
        &self.router
    }

    /// Ports with real FIFOs (lossless, or priority classes).
    fn queued(&self) -> bool {
        !self.qports.is_empty()
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

    /// Queued ports: bytes queued at port `p` or on its wire.
    #[inline]
    fn occ(&self, p: u32) -> u64 {
        self.qload[p as usize] - self.qports[p as usize].busy as u64
    }

    /// Queued ports: whether port `p` has packets waiting.
    #[inline]
    fn has_queue(&self, p: u32) -> bool {
        self.qports[p as usize].queued != 0
    }

    fn wire_of(&self, f: &FlowState, seq: u32) -> u16 {
        let p = self.cfg.payload as u64;
        ((p.min(f.bytes - seq as u64 * p)) as u32 + self.cfg.header) as u16
    }

    /// Credits: whether they are returned lazily (see
    /// [`Network::return_credit`]; on whenever every link's credit takes
    /// time to come back).
    pub fn lazy_credits(&self) -> bool {
        self.lazy
    }

    /// Credits: lazy returns on (the default where possible) or off (every
    /// credit an event of its own: the reference the lazy returns are
    /// tested against). Before any flow.
    #[doc(hidden)]
    pub fn set_lazy_credits(&mut self, on: bool) {
        assert!(
            self.flows.len() == 0,
            "net: lazy credits switched after flows arrived"
        );
        self.lazy = on && self.credit && self.qports.iter().all(|q| q.credit_after > 0);
        self.lazy_pf = self.lazy;
    }

    /// Lazy port-free (see [`Network::hold_release`]): on by default with
    /// lazy credits, which it needs.
    pub fn lazy_port_free(&self) -> bool {
        self.lazy_pf
    }

    /// Lazy port-free on (with lazy credits only) or off (every
    /// transmission's end an event: the reference it is tested against).
    /// Before any flow.
    #[doc(hidden)]
    pub fn set_lazy_port_free(&mut self, on: bool) {
        assert!(
            self.flows.len() == 0,
            "net: lazy port-free switched after flows arrived"
        );
        self.lazy_pf = on && self.lazy;
    }

    /// Credits: port `p`'s credit return time (propagation +
    /// `credit_delay`), ps.
    #[inline]
    fn credit_after(&self, p: u32) -> u64 {
        let c = self.qports[p as usize].credit_after;
        if c != u32::MAX {
            c as u64
        } else {
            self.ports[p as usize].prop + self.credit_delay
        }
    }

    /// Credits: `bytes` of VC buffer `b` (= link · vcs + vc) at the far end of
    /// `link` free at `now`; the credit reaches the link's sender one
    /// propagation plus `credit_delay` later.
    ///
    /// Lazily, when it can: a credit only matters when its port next looks
    /// at its credits ([`Network::pop_next`]) or when the port waits for
    /// credits (then its arrival starts the port). So the lane keeps one
    /// credit in flight (`pend`, reaching the port at `pend_at`), taken
    /// into `credits` by the first look at or after its arrival in the
    /// calendar's order (time, then payload: `self.bound`); if the port is
    /// waiting for credits now, or the lane already holds a credit still on
    /// its way, the credit is an event in the calendar as before, and a
    /// port that comes to wait for credits turns its lanes' held credits
    /// into events ([`Network::wake_credits`]). Every credit thus reaches
    /// its port at the same point of the event order as an event would, and
    /// the round-robin choices and `credit_stalls` are unchanged.
    fn return_credit(&mut self, b: u32, bytes: u64, now: u64) {
        let link = b / self.vcs;
        let at = now + self.credit_after(link);
        let q = &self.qports[link as usize];
        let vc = (b % self.vcs) as u8;
        if self.lazy && (q.busy || q.queued == 0) {
            self.absorb_credit(b);
            let l = &mut self.lanes[b as usize];
            if l.pend == 0 {
                l.pend = bytes as u16;
                l.pend_at = at;
                self.lazy_last_at = self.lazy_last_at.max(at);
                return;
            }
        }
        self.events.push(at, credit_event(link, vc, bytes as u16));
        self.credit_events += 1;
    }

    /// Credits: a credit for `bytes` of VC `vc` reaches port `p` at `at`
    /// (an event: sent as one, or a lane's held credit woken).
    fn credit_arrives(&mut self, p: u32, vc: u8, bytes: u64, at: u64, now: u64) {
        self.credit_events -= 1;
        let l = &mut self.lanes[(p * self.vcs + vc as u32) as usize];
        if l.pend_woken && l.pend_at == at && l.pend as u64 == bytes {
            // The held credit's own event.
            l.pend_woken = false;
            l.pend = 0;
        }
        l.credits = l.credits.checked_add(bytes).expect("net: credit overflow");
        if !self.qports[p as usize].busy {
            self.start_tx(p, now);
        }
    }

    /// Lazy credits: takes lane `b`'s held credit into its credits if it has
    /// reached the port (before `self.bound`).
    #[inline]
    fn absorb_credit(&mut self, b: u32) {
        let port = b / self.vcs;
        let vc = (b % self.vcs) as u8;
        let bound = self.bound;
        let l = &mut self.lanes[b as usize];
        if l.pend != 0 && !l.pend_woken && (l.pend_at, credit_event(port, vc, l.pend)) < bound {
            l.credits = l
                .credits
                .checked_add(l.pend as u64)
                .expect("net: credit overflow");
            l.pend = 0;
        }
    }

    /// Lazy credits: port `p` waits for credits; the credits its lanes hold
    /// that have reached it are taken, the others become events (their
    /// arrival starts the port, as an event's would).
    fn wake_credits(&mut self, p: u32) {
        for v in 0..self.vcs {
            let b = p * self.vcs + v;
            self.absorb_credit(b);
            let l = &mut self.lanes[b as usize];
            if l.pend != 0 && !l.pend_woken {
                l.pend_woken = true;
                let (at, bytes) = (l.pend_at, l.pend);
                self.events.push(at, credit_event(p, v as u8, bytes));
                self.credit_events += 1;
            }
        }
        if self.lazy_pf {
            // The credits of the releases held with this link: taken if
            // they have arrived, events otherwise.
            self.absorb_rels(p, None);
            let ca = self.credit_after(p);
            for i in 0..RELS {
                let r = &mut self.qports[p as usize].rel[i];
                if r.st != 0 && r.st & REL_CREDIT == 0 {
                    r.st |= REL_CREDIT;
                    let (at, ev) = (r.end + ca, credit_event(p, r.vc, r.wire));
                    if r.st == REL_DONE {
                        r.st = 0;
                    }
                    self.events.push(at, ev);
                    self.credit_events += 1;
                }
            }
        }
    }

    // ---- lazy port-free --------------------------------------------------
    //
    // Eagerly, a queued port's transmission ends in a port-free event: the
    // port's load drops, the packet's bytes leave the ingress buffer of the
    // (link, VC) it came by, and their credit starts back to the link's
    // sender. When a switch port finishes with nothing queued behind it,
    // that event does nothing else, and the three effects are applied
    // lazily instead, each at the first place that looks at what it
    // changes, and only if its own event would have come before that
    // place in the calendar's order (`before(self.bound, ..)`, time then
    // payload, as the event would have been ordered):
    // - the port's load and busy flag: adaptive routing reads the load as
    //   it would be ([`eff_load`]); an enqueue settles the port, and if the
    //   port is still sending, its free becomes an event after all
    //   ([`Network::settle_port`]), so what waits starts on time;
    // - the ingress buffer: settled when the next packet arrives by the
    //   same link (the only place its bytes and peaks are read), from the
    //   release held in the link's `QPort::rel` ([`Network::settle_rels`]);
    // - the credit: as a lazily returned credit, taken by the sender's next
    //   look at that VC's credits ([`Network::absorb_rels`]), or an event if
    //   the sender waits for credits ([`Network::wake_credits`]).
    // A link holds `RELS` releases; a transmission whose release finds no
    // free slot ends in a port-free event as before. Every choice, time and
    // statistic is therefore unchanged; only the calendar's entries (the
    // run's `events` and `peak_packets_in_flight`) are fewer.

    /// Lazy port-free: applies what is due of the releases held with link
    /// `u`: the buffer part, and the credit if it has arrived too (then
    /// the slot is free again).
    #[inline(always)]
    fn settle_rels(&mut self, u: u32) {
        if self.qports[u as usize].rel.iter().all(|r| r.st == 0) {
            return;
        }
        let ca = self.credit_after(u);
        for i in 0..RELS {
            let r = self.qports[u as usize].rel[i];
            if r.st == 0 {
                continue;
            }
            if r.st & REL_FAR == 0 {
                if !before(&self.bound, r.end, pf_event(r.port)) {
                    // Nor has its credit (later still) arrived.
                    continue;
                }
                self.release_far(u, i);
            }
            if r.st & REL_CREDIT == 0
                && before(&self.bound, r.end + ca, credit_event(u, r.vc, r.wire))
            {
                let l = &mut self.lanes[(u * self.vcs + r.vc as u32) as usize];
                l.credits = l
                    .credits
                    .checked_add(r.wire as u64)
                    .expect("net: credit overflow");
                self.qports[u as usize].rel[i].st = 0;
            }
        }
    }

    /// Lazy port-free: release `i` of link `u` leaves its buffer.
    #[inline]
    fn release_far(&mut self, u: u32, i: usize) {
        let q = &mut self.qports[u as usize];
        let r = &mut q.rel[i];
        let wire = r.wire as u64;
        let b = (u * self.vcs + r.vc as u32) as usize;
        r.st |= REL_FAR;
        if r.st == REL_DONE {
            r.st = 0;
        }
        q.ingress = q.ingress.checked_sub(wire).expect("net: ingress underflow");
        let l = &mut self.lanes[b];
        l.far = l.far.checked_sub(wire).expect("net: VC buffer underflow");
    }

    /// Lazy port-free: takes into their lanes' credits the credits of link
    /// `u`'s held releases (of VC `vc`, or all) that have arrived.
    fn absorb_rels(&mut self, u: u32, vc: Option<u8>) {
        let ca = self.credit_after(u);
        for i in 0..RELS {
            let r = self.qports[u as usize].rel[i];
            if r.st == 0 || r.st & REL_CREDIT != 0 || vc.is_some_and(|v| v != r.vc) {
                continue;
            }
            if !before(&self.bound, r.end + ca, credit_event(u, r.vc, r.wire)) {
                continue;
            }
            if r.st & REL_FAR == 0 {
                self.release_far(u, i);
            }
            let l = &mut self.lanes[(u * self.vcs + r.vc as u32) as usize];
            l.credits = l
                .credits
                .checked_add(r.wire as u64)
                .expect("net: credit overflow");
            self.qports[u as usize].rel[i].st = 0;
        }
    }

    /// Lazy port-free: holds the release of a packet of `wire` bytes that
    /// came by link `u` on VC `vc` and leaves on port `p` at `end`; false
    /// if the link has no free slot (the port's free is then an event).
    fn hold_release(&mut self, u: u32, vc: u8, p: u32, end: u64, wire: u16) -> bool {
        let i = match self.qports[u as usize].rel.iter().position(|r| r.st == 0) {
            Some(i) => i,
            None => {
                // Full: apply what is due, then look again.
                self.settle_rels(u);
                match self.qports[u as usize].rel.iter().position(|r| r.st == 0) {
                    Some(i) => i,
                    None => return false,
                }
            }
        };
        let q = &mut self.qports[u as usize];
        q.rel[i] = Rel {
            end,
            port: p,
            wire,
            vc,
            st: REL_LIVE,
        };
        // The sender waits for credits: its credit is an event (as
        // `return_credit` would make it; a sender that starts waiting later
        // wakes it).
        let waiting = !q.busy && q.queued != 0;
        let at = end + self.credit_after(u);
        self.lazy_last_at = self.lazy_last_at.max(at);
        if waiting {
            self.qports[u as usize].rel[i].st |= REL_CREDIT;
            self.events.push(at, credit_event(u, vc, wire));
            self.credit_events += 1;
        }
        true
    }

    /// Lazy port-free: before port `p` is given a packet, its lazy free is
    /// applied if due; if the port is still sending, its free becomes an
    /// event (the packet will wait for it).
    #[inline(always)]
    fn settle_port(&mut self, p: u32) {
        let w = self.qload[p as usize];
        if w & LZ_FLAG == 0 {
            return;
        }
        let (end, wire) = lz_parts(w);
        if before(&self.bound, end, pf_event(p)) {
            self.qload[p as usize] = 0;
            self.qports[p as usize].busy = false;
        } else {
            self.qload[p as usize] = wire + 1;
            self.events.push(end, pf_event(p));
        }
    }

    /// A flow arrives at `now`.
    pub fn add_flow(&mut self, now: SimTime, flow: &Flow, _rec: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        self.last_advance = now.0;
        // The driver runs every event due by `now` first.
        self.bound = (now.0, AFTER_ALL);
        let npkts = flow.bytes.div_ceil(self.cfg.payload as u64).max(1) as u32;
        if let Transport::Dctcp(d) = &self.cfg.transport {
            self.win.push(WinState {
                snd_una: 0,
                dupacks: 0,
                recover: 0,
                in_recovery: false,
                cc: Dctcp::new(d.init_cwnd as f64, d.g, d.max_cwnd as f64),
                srtt: 0,
                rttvar: 0,
                rto: d.rto_init.0,
                rto_deadline: 0,
                rto_armed: false,
                sacked: Vec::new(),
                high_sack: 0,
                rtx_next: 0,
                da_pending: 0,
                da_ts: 0,
                da_ce: false,
                da_deadline: 0,
                da_armed: false,
                losses_at_rto: 0,
                ready: false,
                reported: 0,
            });
        }
        self.flows.push(FlowState {
            src: flow.src,
            dst: flow.dst,
            bytes: flow.bytes.max(1),
            npkts,
            snd_nxt: 0,
            losses: 0,
            sender_done: false,
            receiver_done: false,
            start: now.0,
            finish: 0,
            rb: ReorderBuffer::new(),
        });
        self.active += 1;
        match self.cfg.transport {
            Transport::Dctcp(_) => self.try_send(flow.id, now.0),
            Transport::Pfabric(_) => self.pf_add_flow(flow.id, now.0),
            Transport::Paced => {
                self.paced[flow.src as usize].push_back(flow.id);
                if self.lazy_pf {
                    // Its NIC may be freeing lazily: then it must wake to
                    // pace this flow.
                    self.settle_port(flow.src);
                }
                let q = &self.qports[flow.src as usize];
                if !q.busy && !self.all_paused(flow.src) && !self.has_queue(flow.src) {
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
            (None, None) if self.lazy_last_at > self.bound.0 => Some(SimTime(self.lazy_last_at)),
            (None, b) => b,
        }
    }

    /// Processes everything due at `now`.
    pub fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let t = now.0;
        self.last_advance = t;
        let mut processed = 0u64;
        loop {
            while let Some((at, ev)) = self.events.pop_due(t) {
                processed += 1;
                self.bound = (at, ev);
                if ev.flags & FLAG_PORT_FREE != 0 {
                    self.port_free(ev.port, t);
                } else if ev.flags & FLAG_CREDIT != 0 {
                    self.credit_arrives(ev.port, ev.vc, ev.wire as u64, at, t);
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
                    self.bound = (t, AFTER_ALL);
                    self.fire(tm, t);
                }
                _ => break,
            }
        }
        self.bound = (t, AFTER_ALL);
        rec.count_internal_events(processed);
    }

    // ---- packets -------------------------------------------------------

    /// Packet `pi` arrives at the far end of the port it was sent on.
    #[inline]
    fn arrive(&mut self, mut pkt: Packet, now: u64, rec: &mut Recorder) {
        self.n.hops += 1;
        let node = pkt.node;
        if node < self.graph.hosts {
            if self.credit {
                // A host consumes what it receives at once.
                self.return_credit(pkt.port * self.vcs + pkt.vc as u32, pkt.wire as u64, now);
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
            self.flows[pkt.flow as usize].losses += 1;
            self.n.lost += 1;
            self.n.lost_data += (pkt.flags & FLAG_ACK == 0) as u64;
            if self.credit {
                self.return_credit(pkt.port * self.vcs + pkt.vc as u32, pkt.wire as u64, now);
            }
            return;
        }
        let mut hop = Hop {
            node,
            flow: pkt.flow,
            dst: pkt.dst,
            in_port: pkt.port,
            vc: pkt.vc,
            vcs: self.vcs as u8,
            tag: pkt.tag,
            ack: pkt.flags & FLAG_ACK != 0,
        };
        let routed = {
            let (ports, qload, lossless) = (&self.ports, &self.qload, !self.qports.is_empty());
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
                    if self.queued() {
                        let qload = &self.qload[c.first as usize..(c.first + c.count) as usize];
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
        if self.queued() {
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
                self.flows[pkt.flow as usize].losses += 1;
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
        let lanes = self.vcs;
        // The lane it waits in: its class, or (credits) the VC the router
        // picks; `pkt.vc` keeps the lane it came by until it starts.
        let mut out_lane = pkt.vc;
        if p >= hosts {
            // The ingress buffer it occupies: (link it came by, lane).
            let inp = pkt.port;
            let b = inp * lanes + pkt.vc as u32;
            match self.cfg.flow_control {
                FlowControl::Credit(c) => {
                    if self.lazy_pf {
                        self.settle_rels(inp);
                    }
                    // The sender held credits for these bytes: they fit.
                    let l = &mut self.lanes[b as usize];
                    l.far += wire;
                    self.n.peak_vc_bytes = self.n.peak_vc_bytes.max(l.far);
                    assert!(l.far <= c.vc_buffer, "net: VC buffer {b} overrun");
                    let qi = &mut self.qports[inp as usize];
                    qi.ingress += wire;
                    qi.peak_ingress = qi.peak_ingress.max(qi.ingress);
                }
                FlowControl::Pfc(pfc) => {
                    let qi = &mut self.qports[inp as usize];
                    if qi.ingress + wire > self.cfg.buffer {
                        self.counts[p as usize].drops += 1;
                        self.n.drops += 1;
                        self.flows[pkt.flow as usize].losses += 1;
                        return;
                    }
                    qi.ingress += wire;
                    qi.peak_ingress = qi.peak_ingress.max(qi.ingress);
                    let l = &mut self.lanes[b as usize];
                    l.far += wire;
                    if l.far > pfc.xoff && !l.pause_sent {
                        l.pause_sent = true;
                        l.frame_seq += 1;
                        let seq = l.frame_seq;
                        let at = now
                            + self.ports[inp as usize].prop
                            + pfc.pause_delay.0
                            + self.ext.pfc_extra(true);
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
                FlowControl::None => {
                    // Priority classes on a lossy network: drop-tail on the
                    // bytes the output port holds (queued or on the wire).
                    if self.occ(p) + wire > self.cfg.buffer {
                        self.counts[p as usize].drops += 1;
                        self.n.drops += 1;
                        self.flows[pkt.flow as usize].losses += 1;
                        return;
                    }
                }
            }
            if let Some(k) = self.cfg.ecn_k {
                if self.occ(p) + wire > k && pkt.flags & FLAG_ACK == 0 {
                    pkt.flags |= FLAG_CE;
                    self.counts[p as usize].marks += 1;
                }
            }
        }
        if self.credit {
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
        if self.lazy_pf {
            self.settle_port(p);
        }
        self.qload[p as usize] += wire;
        let occ = self.occ(p);
        let port = &mut self.ports[p as usize];
        port.peak = port.peak.max(occ);
        let b = (p * lanes + out_lane as u32) as usize;
        if self.credit && !self.qports[p as usize].busy && self.qports[p as usize].queued == 0 {
            // An idle port with every lane empty: `pop_next` would pick
            // this packet's lane if its credits hold the packet (taking
            // the credits that have arrived, as it does), so it starts
            // here without a trip through the pool. Otherwise it waits
            // (and `start_tx` counts the stall and wakes the credits).
            if self.lazy && self.lanes[b].credits < wire {
                self.absorb_credit(b as u32);
                if self.lazy_pf && self.lanes[b].credits < wire {
                    self.absorb_rels(p, Some(out_lane));
                }
            }
            let l = &mut self.lanes[b];
            if l.credits >= wire {
                l.credits -= wire;
                // (out_lane + 1) % lanes, without a division (out_lane < lanes).
                let next = out_lane as u32 + 1;
                self.qports[p as usize].rr = if next == lanes { 0 } else { next as u8 };
                return self.transmit(p, pkt, out_lane, now);
            }
        }
        let pi = self.pool.alloc(pkt);
        let mut list = self.lanes[b].queue;
        self.pool.push_back(&mut list, pi);
        self.lanes[b].queue = list;
        self.qports[p as usize].queued += 1;
        if !self.qports[p as usize].busy {
            self.start_tx(p, now);
        }
    }

    /// Pops the packet port `p` sends next, if any may go. Credits:
    /// round-robin over its VCs whose head packet fits the credits held for
    /// that VC (and takes them). Otherwise strict priority: the first lane
    /// (class) that has a packet and is not paused.
    fn pop_next(&mut self, p: u32) -> Option<(u32, u8)> {
        let lanes = self.vcs;
        let base = p * lanes;
        if !self.credit {
            for v in 0..lanes {
                let l = &mut self.lanes[(base + v) as usize];
                if l.paused || l.queue.is_empty() {
                    continue;
                }
                let mut list = l.queue;
                let pi = self.pool.pop_front(&mut list);
                self.lanes[(base + v) as usize].queue = list;
                self.qports[p as usize].queued -= 1;
                return pi.map(|pi| (pi, v as u8));
            }
            return None;
        }
        let rr = self.qports[p as usize].rr as u32;
        let mut waiting = false;
        for k in 0..lanes {
            let v = (rr + k) % lanes;
            let b = (base + v) as usize;
            let Some(head) = self.lanes[b].queue.front() else {
                continue;
            };
            let wire = self.pool[head].wire as u64;
            if self.lazy && self.lanes[b].credits < wire {
                self.absorb_credit(b as u32);
                if self.lazy_pf && self.lanes[b].credits < wire {
                    self.absorb_rels(p, Some(v as u8));
                }
            }
            let l = &mut self.lanes[b];
            if l.credits < wire {
                waiting = true;
                continue;
            }
            l.credits -= wire;
            let mut list = l.queue;
            let pi = self.pool.pop_front(&mut list);
            self.lanes[b].queue = list;
            let q = &mut self.qports[p as usize];
            q.rr = ((v + 1) % lanes) as u8;
            q.queued -= 1;
            return pi.map(|pi| (pi, v as u8));
        }
        self.n.credit_stalls += waiting as u64;
        if waiting && self.lazy {
            self.wake_credits(p);
        }
        None
    }

    /// Queued ports: starts sending the next packet of port `p`.
    ///
    /// Cut-through (virtual cut-through: a packet starts only when its
    /// lane's credits hold all of it, as without): the next node gets the
    /// packet when its header has arrived there, `start + header
    /// serialisation + propagation`, and may send it on at once; but a port
    /// cannot finish sending a packet before its last bit has arrived, so
    /// the transmission ends at `max(start + serialisation, tail arrival)`.
    /// A host receives it when its last bit arrives.
    fn start_tx(&mut self, p: u32, now: u64) {
        if self.pf.is_some() {
            return self.pf_arm_serve(p, now);
        }
        let Some((pi, lane)) = self.pop_next(p) else {
            return;
        };
        let pkt = self.pool[pi];
        self.pool.release(pi);
        self.transmit(p, pkt, lane, now);
    }

    /// Queued ports: port `p` starts sending `pkt` on lane `lane` (taken
    /// from its lane, its credits taken).
    #[inline(always)]
    fn transmit(&mut self, p: u32, mut pkt: Packet, lane: u8, now: u64) {
        let hosts = self.graph.hosts;
        let q = &mut self.qports[p as usize];
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
        self.qload[p as usize] += 1;
        q.tx_inp = if p >= hosts {
            pkt.port * self.vcs + pkt.vc as u32
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
        if self.lazy_pf
            && idle_after
            && end < LZ_END_LIMIT
            && if p >= hosts {
                self.hold_release(in_link, in_vc, p, end, pkt.wire)
            } else {
                matches!(self.cfg.transport, Transport::Paced) && self.paced[p as usize].is_empty()
            }
        {
            debug_assert_eq!(self.qload[p as usize], pkt.wire as u64 + 1);
            self.qports[p as usize].tx_inp = TX_LAZY;
            self.qload[p as usize] = LZ_FLAG | end << 16 | pkt.wire as u64;
        } else {
            self.events.push(end, pf_event(p));
        }
        self.events.push(arrival, pkt);
        self.packet_events += 1;
    }

    /// Queued ports: port `p` finished a transmission.
    fn port_free(&mut self, p: u32, now: u64) {
        let hosts = self.graph.hosts;
        let q = &mut self.qports[p as usize];
        q.busy = false;
        let (inp, wire) = (q.tx_inp, q.tx_wire as u64);
        self.qload[p as usize] -= wire + 1;
        if p >= hosts && inp != TX_LAZY {
            // The packet's bytes leave this switch's ingress buffer `inp`
            // (link · lanes + lane).
            let link = inp / self.vcs;
            match self.cfg.flow_control {
                FlowControl::Credit(_) => {
                    let l = &mut self.lanes[inp as usize];
                    l.far = l.far.checked_sub(wire).expect("net: VC buffer underflow");
                    let qi = &mut self.qports[link as usize];
                    qi.ingress = qi
                        .ingress
                        .checked_sub(wire)
                        .expect("net: ingress underflow");
                    self.return_credit(inp, wire, now);
                }
                FlowControl::Pfc(pfc) => {
                    let qi = &mut self.qports[link as usize];
                    qi.ingress = qi
                        .ingress
                        .checked_sub(wire)
                        .expect("net: ingress underflow");
                    let l = &mut self.lanes[inp as usize];
                    l.far = l.far.checked_sub(wire).expect("net: ingress underflow");
                    if l.pause_sent && l.far <= pfc.xon {
                        l.pause_sent = false;
                        l.frame_seq += 1;
                        let seq = l.frame_seq;
                        let at = now
                            + self.ports[link as usize].prop
                            + pfc.resume_delay.0
                            + self.ext.pfc_extra(false);
                        self.timers.schedule(
                            SimTime(at),
                            Timer::Pfc {
                                port: link,
                                lane: (inp % self.vcs) as u8,
                                pause: false,
                                seq,
                            },
                        );
                    }
                }
                FlowControl::None => {}
            }
        }
        if self.all_paused(p) {
            return;
        }
        let queued = self.has_queue(p);
        if !queued && p < hosts && matches!(self.cfg.transport, Transport::Paced) {
            self.pace(p, now);
        } else if !queued && p < hosts && self.rr_nic {
            self.nic_kick(p, now);
        } else if queued {
            self.start_tx(p, now);
        }
    }

    /// PFC: whether every lane of port `p` is paused (only PFC pauses).
    #[inline]
    fn all_paused(&self, p: u32) -> bool {
        if !matches!(self.cfg.flow_control, FlowControl::Pfc(_)) {
            return false;
        }
        let b = (p * self.vcs) as usize;
        self.lanes[b..b + self.vcs as usize]
            .iter()
            .all(|l| l.paused)
    }

    fn fire(&mut self, tm: Timer, now: u64) {
        match tm {
            Timer::Rto(f) => self.rto_fired(f, now),
            Timer::DelAck(f) => self.delack_fired(f, now),
            Timer::PfServe(p) => self.pf_serve(p, now),
            Timer::Nic(h) => {
                self.nic_armed[h as usize] = false;
                self.nic_kick(h, now);
            }
            Timer::Pfc {
                port,
                lane,
                pause,
                seq,
            } => {
                let l = &mut self.lanes[(port * self.vcs + lane as u32) as usize];
                if seq <= l.applied_seq {
                    return;
                }
                l.applied_seq = seq;
                if pause && !l.paused {
                    l.paused = true;
                    l.paused_since = now;
                    self.pfc_time[port as usize][1] += 1;
                } else if !pause && l.paused {
                    l.paused = false;
                    let d = now - l.paused_since;
                    self.pfc_time[port as usize][0] += d;
                    self.class_pause[lane as usize] += d;
                    if !self.qports[port as usize].busy {
                        if self.has_queue(port) {
                            self.start_tx(port, now);
                        } else if port < self.graph.hosts
                            && matches!(self.cfg.transport, Transport::Paced)
                        {
                            self.pace(port, now);
                        } else if port < self.graph.hosts && self.rr_nic {
                            self.nic_kick(port, now);
                        }
                    }
                }
            }
        }
    }

    // ---- hosts ---------------------------------------------------------

    /// Sends data packet `seq` of flow `f` from its source at `now`.
    #[inline]
    fn send_data(&mut self, f: u32, seq: u32, now: u64) {
        let fl = &self.flows[f as usize];
        let class = self
            .cfg
            .priority
            .class(seq as u64 * self.cfg.payload as u64, fl.bytes);
        let pkt = Packet {
            ts: now,
            tail: 0,
            flow: f,
            seq,
            port: fl.src,
            node: 0,
            dst: fl.dst,
            sack: 0,
            tag: 0,
            wire: self.wire_of(fl, seq),
            flags: 0,
            vc: class,
        };
        let src = fl.src;
        self.n.data_sent += 1;
        self.enqueue(src, pkt, now);
    }

    /// Paced transport: the NIC of `host` is idle; send its next packet.
    fn pace(&mut self, host: u32, now: u64) {
        let Some(f) = self.paced[host as usize].pop_front() else {
            return;
        };
        let fl = &mut self.flows[f as usize];
        let seq = fl.snd_nxt;
        fl.snd_nxt += 1;
        if fl.snd_nxt < fl.npkts {
            self.paced[host as usize].push_back(f);
        } else {
            fl.sender_done = true;
        }
        self.send_data(f, seq, now);
    }

    /// DCTCP: whether the window allows flow `f` a new packet.
    #[inline]
    fn may_send(fl: &FlowState, w: &WinState) -> bool {
        !fl.sender_done && fl.snd_nxt < fl.npkts && fl.snd_nxt - w.snd_una < w.cc.window()
    }

    /// DCTCP: the next packet the window allows flow `f` (skipping SACKed
    /// ones), taken.
    fn next_seq(&mut self, f: u32) -> Option<u32> {
        let fl = &mut self.flows[f as usize];
        let w = &mut self.win[f as usize];
        while Self::may_send(fl, w) {
            let seq = fl.snd_nxt;
            fl.snd_nxt += 1;
            if !is_sacked(&w.sacked, seq) {
                return Some(seq);
            }
        }
        None
    }

    /// DCTCP: sends what the window allows (FIFO NIC), or offers the flow
    /// to its host's round-robin NIC.
    fn try_send(&mut self, f: u32, now: u64) {
        if self.rr_nic {
            let fl = &mut self.flows[f as usize];
            let w = &mut self.win[f as usize];
            if !w.ready && Self::may_send(fl, w) {
                w.ready = true;
                let src = fl.src;
                self.paced[src as usize].push_back(f);
                self.nic_kick(src, now);
            }
        } else {
            while let Some(seq) = self.next_seq(f) {
                self.send_data(f, seq, now);
            }
        }
        self.arm_rto(f, now);
    }

    /// Round-robin NIC (lossy ports): how far ahead of the wire the NIC
    /// takes packets — one full frame's serialisation: the NIC holds the
    /// packet on the wire and the next one (its next descriptor, fetched
    /// while the current one is sent, as a NIC ring does). With none (a
    /// packet handed over only when the wire is free) two long DCTCP flows
    /// of different hosts sharing a bottleneck split it 86:100 instead of
    /// evenly (test `two_long_dctcp_flows_share_a_bottleneck_within_5_percent`,
    /// ECMP); the cause was not pinned down.
    #[inline]
    fn nic_ahead(&self, host: u32) -> u64 {
        self.ports[host as usize].ser((self.cfg.payload + self.cfg.header) as u64, || {
            self.graph.ports[host as usize].rate
        })
    }

    /// Round-robin NIC: whether `host`'s NIC can take a packet at `now`.
    #[inline]
    fn nic_free(&self, host: u32, now: u64) -> bool {
        if self.queued() {
            !self.qports[host as usize].busy && !self.has_queue(host)
        } else {
            self.ports[host as usize].busy_until <= now + self.nic_ahead(host)
        }
    }

    /// Round-robin NIC: while `host`'s NIC is free, sends one packet of the
    /// next ready flow; if flows still wait, wakes up when the NIC frees
    /// (lossy ports: a timer; queued ports: the port's own "free" event).
    fn nic_kick(&mut self, host: u32, now: u64) {
        while self.nic_free(host, now) {
            let Some(f) = self.paced[host as usize].pop_front() else {
                return;
            };
            self.win[f as usize].ready = false;
            let Some(seq) = self.next_seq(f) else {
                continue;
            };
            self.send_data(f, seq, now);
            self.arm_rto(f, now);
            let fl = &mut self.flows[f as usize];
            let w = &mut self.win[f as usize];
            if Self::may_send(fl, w) {
                w.ready = true;
                self.paced[host as usize].push_back(f);
            }
        }
        if !self.queued() && !self.paced[host as usize].is_empty() && !self.nic_armed[host as usize]
        {
            self.nic_armed[host as usize] = true;
            let at = self.ports[host as usize].busy_until - self.nic_ahead(host);
            self.timers.schedule(SimTime(at), Timer::Nic(host));
        }
    }

    fn arm_rto(&mut self, f: u32, now: u64) {
        let fl = &mut self.flows[f as usize];
        let w = &mut self.win[f as usize];
        if fl.sender_done || w.snd_una >= fl.snd_nxt {
            return;
        }
        if !w.rto_armed {
            w.rto_armed = true;
            w.rto_deadline = now + w.rto;
            self.timers.schedule(SimTime(w.rto_deadline), Timer::Rto(f));
        }
    }

    fn rto_fired(&mut self, f: u32, now: u64) {
        if self.pf.is_some() {
            return self.pf_rto(f, now);
        }
        let fl = &mut self.flows[f as usize];
        let w = &mut self.win[f as usize];
        w.rto_armed = false;
        if fl.sender_done || w.snd_una >= fl.snd_nxt {
            return;
        }
        if w.rto_deadline > now {
            // Pushed back by progress since it was armed.
            w.rto_armed = true;
            self.timers.schedule(SimTime(w.rto_deadline), Timer::Rto(f));
            return;
        }
        // Timeout: go back to the first unacknowledged packet.
        self.n.timeouts += 1;
        self.n.spurious_timeouts += (fl.losses == w.losses_at_rto) as u64;
        w.losses_at_rto = fl.losses;
        w.cc.on_timeout(fl.snd_nxt);
        w.rto = (w.rto * 2).min(SimTime::S);
        w.in_recovery = false;
        w.dupacks = 0;
        fl.snd_nxt = w.snd_una;
        let before = self.n.data_sent;
        self.try_send(f, now);
        self.n.retransmissions += self.n.data_sent - before;
    }

    fn on_data(&mut self, pkt: Packet, now: u64, rec: &mut Recorder) {
        if self.pf.is_some() {
            return self.pf_on_data(pkt, now, rec);
        }
        self.n.data_delivered += 1;
        let payload = self.cfg.payload as u64;
        let fl = &mut self.flows[pkt.flow as usize];
        let before = fl.rb.next_expected();
        let receipt = fl.rb.receive(pkt.seq);
        match receipt {
            Receipt::InOrder { released } => {
                let end = fl.rb.next_expected() as u64;
                let begin = end - released as u64;
                let bytes = (end * payload).min(fl.bytes) - begin * payload;
                rec.deliver(pkt.flow, SimTime(now), bytes);
                if let Some(log) = &mut self.ext.log {
                    log.push((pkt.flow, SimTime(now), bytes));
                }
                if !fl.receiver_done && fl.rb.is_complete(fl.npkts) {
                    fl.receiver_done = true;
                    rec.complete(pkt.flow, SimTime(now));
                    fl.finish = now;
                    self.active -= 1;
                    if self.retire {
                        self.retire_flows();
                    }
                }
            }
            Receipt::Early => self.n.early += 1,
            Receipt::Duplicate => self.n.duplicates += 1,
        }
        let Transport::Dctcp(d) = &self.cfg.transport else {
            return;
        };
        let (every, timeout, sack) = (d.delayed_ack, d.delayed_ack_timeout.0, d.sack);
        let ce = pkt.flags & FLAG_CE != 0;
        let in_order = matches!(receipt, Receipt::InOrder { .. });
        if every > 1 {
            let w = &mut self.win[pkt.flow as usize];
            if w.da_pending > 0 && (ce != w.da_ce || !in_order) {
                // Flush the pending ACK with its own CE state first.
                let (ts, old_ce) = (w.da_ts, w.da_ce);
                w.da_pending = 0;
                self.send_ack(pkt.flow, before, ts, old_ce, 0, now);
            }
            let fl = &mut self.flows[pkt.flow as usize];
            let w = &mut self.win[pkt.flow as usize];
            if in_order && !fl.receiver_done {
                w.da_pending += 1;
                w.da_ts = pkt.ts;
                w.da_ce = ce;
                if w.da_pending < every {
                    if w.da_pending == 1 {
                        w.da_deadline = now + timeout;
                        if !w.da_armed {
                            w.da_armed = true;
                            self.timers
                                .schedule(SimTime(now + timeout), Timer::DelAck(pkt.flow));
                        }
                    }
                    return;
                }
                w.da_pending = 0;
            }
        }
        // The data packet's slot becomes its ACK.
        let fl = &mut self.flows[pkt.flow as usize];
        let w = &mut self.win[pkt.flow as usize];
        w.da_pending = 0;
        let ack = fl.rb.next_expected();
        let (dst, src) = (fl.dst, fl.src);
        let mut a = pkt;
        a.flags = FLAG_ACK | if ce { FLAG_ECE } else { 0 };
        a.seq = ack;
        a.sack = if sack && matches!(receipt, Receipt::Early) {
            pkt.seq + 1
        } else {
            0
        };
        a.dst = src;
        a.port = dst;
        a.tail = 0;
        a.tag = 0;
        a.vc = 0;
        a.wire = self.cfg.ack_bytes as u16;
        self.n.acks += 1;
        self.enqueue(dst, a, now);
    }

    /// Sends an ACK of flow `f` from its receiver: cumulative `ack`, echo
    /// time `ts`, ECN-Echo `ece`, SACK field `sack`.
    fn send_ack(&mut self, f: u32, ack: u32, ts: u64, ece: bool, sack: u32, now: u64) {
        let fl = &self.flows[f as usize];
        let a = Packet {
            ts,
            tail: 0,
            flow: f,
            seq: ack,
            port: fl.dst,
            node: 0,
            dst: fl.src,
            sack,
            tag: 0,
            wire: self.cfg.ack_bytes as u16,
            flags: FLAG_ACK | if ece { FLAG_ECE } else { 0 },
            vc: 0,
        };
        let dst = fl.dst;
        self.n.acks += 1;
        self.enqueue(dst, a, now);
    }

    fn delack_fired(&mut self, f: u32, now: u64) {
        let fl = &mut self.flows[f as usize];
        let w = &mut self.win[f as usize];
        w.da_armed = false;
        if w.da_pending == 0 {
            return;
        }
        if w.da_deadline > now {
            w.da_armed = true;
            self.timers
                .schedule(SimTime(w.da_deadline), Timer::DelAck(f));
            return;
        }
        w.da_pending = 0;
        let (ack, ts, ce) = (fl.rb.next_expected(), w.da_ts, w.da_ce);
        self.send_ack(f, ack, ts, ce, 0, now);
    }

    fn on_ack(&mut self, pkt: Packet, now: u64) {
        let Transport::Dctcp(d) = &self.cfg.transport else {
            unreachable!("ACKs only with a window transport")
        };
        let (dupthresh, rto_min, sack) = (d.dupack_threshold, d.rto_min.0, d.sack);
        let f = pkt.flow;
        let fl = &mut self.flows[f as usize];
        let w = &mut self.win[f as usize];
        if fl.sender_done {
            return;
        }
        if sack && pkt.sack > 0 {
            let s = pkt.sack - 1;
            if s >= w.snd_una && s < fl.npkts {
                if w.sacked.is_empty() {
                    w.sacked = vec![0; fl.npkts.div_ceil(64) as usize];
                }
                w.sacked[(s / 64) as usize] |= 1 << (s % 64);
                w.high_sack = w.high_sack.max(s + 1);
            }
        }
        // RTT estimate (RFC 6298) from the echoed timestamp.
        let r = now - pkt.ts;
        if w.srtt == 0 {
            w.srtt = r;
            w.rttvar = r / 2;
        } else {
            w.rttvar = (3 * w.rttvar + w.srtt.abs_diff(r)) / 4;
            w.srtt = (7 * w.srtt + r) / 8;
        }
        w.rto = (w.srtt + 4 * w.rttvar).max(rto_min);
        let ece = pkt.flags & FLAG_ECE != 0;
        let ack = pkt.seq;
        let mut resend = None;
        if ack > w.snd_una {
            let newly = ack - w.snd_una;
            w.snd_una = ack;
            fl.snd_nxt = fl.snd_nxt.max(ack);
            // Packets this ACK reports for the first time: those it covers
            // minus the ones duplicate ACKs already reported (all but the
            // packet that filled the hole, at most).
            let covered = w.reported.min(newly - 1);
            let delivered = newly - covered;
            w.reported -= covered;
            w.dupacks = 0;
            if w.in_recovery {
                if ack >= w.recover {
                    w.in_recovery = false;
                } else if sack {
                    resend = next_hole(fl, w);
                } else {
                    resend = Some(ack);
                }
            }
            w.cc.on_ack(newly, delivered, ece, ack, fl.snd_nxt);
            if w.snd_una >= fl.npkts {
                fl.sender_done = true;
                return;
            }
            w.rto_deadline = now + w.rto;
        } else if ack == w.snd_una && w.snd_una < fl.snd_nxt {
            w.dupacks += 1;
            w.reported = (w.reported + 1).min(fl.snd_nxt - w.snd_una);
            w.cc.on_ack(0, 1, ece, ack, fl.snd_nxt);
            if w.dupacks == dupthresh && !w.in_recovery {
                w.in_recovery = true;
                w.recover = fl.snd_nxt;
                w.rtx_next = ack + 1;
                w.cc.on_fast_retransmit(fl.snd_nxt);
                self.n.fast_retransmits += 1;
                resend = Some(ack);
            } else if w.in_recovery && sack {
                resend = next_hole(fl, w);
            }
        }
        if let Some(seq) = resend {
            self.n.retransmissions += 1;
            self.send_data(f, seq, now);
        }
        self.try_send(f, now);
    }

    // ---- results -------------------------------------------------------

    /// Statistics: network totals, then per tier of ports.
    pub fn stats(&self) -> Vec<(String, f64)> {
        let n = &self.n;
        let mut out: Vec<(String, f64)> = vec![
            ("data_packets_sent".into(), n.data_sent as f64),
            ("data_packets_delivered".into(), n.data_delivered as f64),
            ("acks".into(), n.acks as f64),
            ("packet_hops".into(), n.hops as f64),
            ("drops".into(), n.drops as f64),
            ("random_losses".into(), n.lost as f64),
            ("random_data_losses".into(), n.lost_data as f64),
            ("retransmissions".into(), n.retransmissions as f64),
            ("fast_retransmits".into(), n.fast_retransmits as f64),
            ("timeouts".into(), n.timeouts as f64),
            ("spurious_timeouts".into(), n.spurious_timeouts as f64),
            (
                "nic_wait_mean_us".into(),
                n.nic_wait as f64 / 1e6 / n.data_sent.max(1) as f64,
            ),
            ("nic_wait_max_us".into(), n.nic_wait_max as f64 / 1e6),
            ("duplicate_packets".into(), n.duplicates as f64),
            ("reordered_packets".into(), n.early as f64),
            (
                "peak_packets_in_flight".into(),
                (self.peak_events as f64).max(self.pool.high_water() as f64),
            ),
        ];
        let tiers = &self.graph.tiers;
        let mut peak = vec![0u64; tiers.len()];
        let mut drops = vec![0u64; tiers.len()];
        let mut marks = vec![0u64; tiers.len()];
        let mut pause = vec![0u64; tiers.len()];
        let mut pauses = vec![0u64; tiers.len()];
        for (i, (p, s)) in self.ports.iter().zip(&self.graph.ports).enumerate() {
            let t = s.tier as usize;
            peak[t] = peak[t].max(if self.queued() {
                self.qports[i].peak_ingress.max(p.peak)
            } else {
                p.peak_bytes(false)
            });
            drops[t] += self.counts[i].drops;
            marks[t] += self.counts[i].marks;
            if let Some(q) = self.pfc_time.get(i) {
                pause[t] += q[0];
                pauses[t] += q[1];
            }
        }
        let total = |v: &[u64]| v.iter().sum::<u64>() as f64;
        out.push(("ecn_marks".into(), total(&marks)));
        out.push((
            "peak_queue_bytes".into(),
            peak.iter().copied().max().unwrap_or(0) as f64,
        ));
        if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) {
            out.push(("pfc_pauses".into(), total(&pauses)));
            out.push(("pfc_pause_time_us".into(), total(&pause) / 1e6));
        }
        if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) && self.class_pause.len() > 1 {
            for (c, t) in self.class_pause.iter().enumerate() {
                out.push((format!("pfc_pause_time_us.class{c}"), *t as f64 / 1e6));
            }
        }
        if self.credit {
            out.push(("credit_stalls".into(), self.n.credit_stalls as f64));
            out.push(("peak_vc_buffer_bytes".into(), self.n.peak_vc_bytes as f64));
        }
        for (t, name) in tiers.iter().enumerate() {
            out.push((format!("peak_queue_bytes.{name}"), peak[t] as f64));
            out.push((format!("drops.{name}"), drops[t] as f64));
            out.push((format!("ecn_marks.{name}"), marks[t] as f64));
            if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) {
                out.push((format!("pfc_pause_time_us.{name}"), pause[t] as f64 / 1e6));
            }
        }
        out
    }

    /// Per switch port: (peak buffered bytes, drops, ECN marks, PFC pause ps).
    pub fn port_stats(&self, port: u32) -> (u64, u64, u64, u64) {
        let p = &self.ports[port as usize];
        let q = self.qports.get(port as usize);
        (
            q.map_or(p.peak_bytes(false), |q| q.peak_ingress.max(p.peak)),
            self.counts[port as usize].drops,
            self.counts[port as usize].marks,
            self.pfc_time.get(port as usize).map_or(0, |q| q[0]),
        )
    }

    pub fn drops(&self) -> u64 {
        self.n.drops
    }
    pub fn timeouts(&self) -> u64 {
        self.n.timeouts
    }
    pub fn retransmissions(&self) -> u64 {
        self.n.retransmissions
    }
    pub fn data_delivered(&self) -> u64 {
        self.n.data_delivered
    }
    pub fn packet_hops(&self) -> u64 {
        self.n.hops
    }
    /// Flow `f`'s congestion window, packets.
    pub fn cwnd(&self, f: u32) -> f64 {
        self.win[f as usize].cc.cwnd
    }
    /// Bytes buffered at port `p` at `now` (lossy: those whose last bit has
    /// not left yet).
    pub fn queue_bytes(&self, p: u32, now: SimTime) -> u64 {
        if self.queued() {
            let (q, w) = (&self.qports[p as usize], self.qload[p as usize]);
            if w & LZ_FLAG != 0 {
                let load = eff_load(w, p, &self.bound);
                return load.saturating_sub(1);
            }
            return w - q.busy as u64;
        }
        self.ports[p as usize].backlog(now.0, || self.graph.ports[p as usize].rate)
    }

    /// Checks buffers, packet conservation and transport bookkeeping.
    pub fn check_invariants(&self) -> Result<(), String> {
        let hosts = self.graph.hosts as usize;
        let mut queued = 0u64;
        for (i, p) in self.ports.iter().enumerate() {
            if self.queued() {
                let q = &self.qports[i];
                if matches!(self.cfg.flow_control, FlowControl::Pfc(_))
                    && q.ingress > self.cfg.buffer
                {
                    return Err(format!(
                        "net: link {i} holds {} B at its far end, above the {} B buffer",
                        q.ingress, self.cfg.buffer
                    ));
                }
                let lanes = &self.lanes[i * self.vcs as usize..(i + 1) * self.vcs as usize];
                let (bytes, waiting) = match &self.pf {
                    Some(pf) => pf.held(i),
                    None => (
                        lanes
                            .iter()
                            .flat_map(|l| self.pool.iter(&l.queue))
                            .map(|k| self.pool[k].wire as u64)
                            .sum(),
                        lanes.iter().map(|l| l.queue.len() as u64).sum(),
                    ),
                };
                let on_wire = if q.busy { q.tx_wire as u64 } else { 0 };
                let w = self.qload[i];
                let load = if w & LZ_FLAG != 0 {
                    lz_parts(w).1 + 1
                } else {
                    w
                };
                let occ = load.saturating_sub(q.busy as u64);
                if load < q.busy as u64 || bytes + on_wire != occ {
                    return Err(format!(
                        "net: port {i} counts {occ} B (load {load}) but holds {} B",
                        bytes + on_wire
                    ));
                }
                let (lz_end, lz_wire) = lz_parts(w);
                if w & LZ_FLAG != 0
                    && (!q.busy
                        || q.queued != 0
                        || q.tx_inp != TX_LAZY
                        || lz_wire != q.tx_wire as u64
                        || lz_end != p.busy_until)
                {
                    return Err(format!(
                        "net: port {i} frees lazily at {} but is busy {}, queues {}, sends {} B until {}",
                        lz_end,
                        q.busy,
                        q.queued,
                        q.tx_wire,
                        p.busy_until
                    ));
                }
                if waiting != q.queued as u64 {
                    return Err(format!(
                        "net: port {i} counts {} packets waiting but holds {waiting}",
                        q.queued
                    ));
                }
                // (pFabric's queues are not in the pool.)
                queued += waiting * self.pf.is_none() as u64;
                if let FlowControl::Credit(c) = self.cfg.flow_control {
                    for (v, l) in lanes.iter().enumerate() {
                        if l.far > c.vc_buffer || l.credits + l.pend as u64 > c.vc_buffer {
                            return Err(format!(
                                "net: link {i} VC {v}: {} B buffered at the far end, {} B of credit, with {} B per VC",
                                l.far, l.credits, c.vc_buffer
                            ));
                        }
                    }
                }
                if !self.lossless() && i >= hosts && occ > self.cfg.buffer && self.pf.is_none() {
                    return Err(format!(
                        "net: port {i} holds {} B, above the {} B buffer",
                        occ, self.cfg.buffer
                    ));
                }
            } else if i >= hosts {
                // The unsent backlog never exceeds the buffer: the latest
                // departure is at most one buffer's serialisation away.
                let horizon = p.busy_until.saturating_sub(self.last_advance);
                if p.peak_bytes(false) > self.cfg.buffer
                    || horizon > p.ser(self.cfg.buffer, || self.graph.ports[i].rate)
                {
                    return Err(format!(
                        "net: port {i} peaked at {} B, and holds {} ps of backlog, with a {} B buffer",
                        p.peak_bytes(false), horizon, self.cfg.buffer
                    ));
                }
            }
        }
        if self.lossless() && self.n.drops > self.n.lost {
            return Err(format!(
                "net: a lossless network dropped {} packets",
                self.n.drops
            ));
        }
        let port_free = self
            .qports
            .iter()
            .zip(&self.qload)
            .filter(|(q, &w)| q.busy && w & LZ_FLAG == 0)
            .count() as u64;
        if self.pool.live() as u64 != queued
            || self.events.len() as u64 != self.packet_events + port_free + self.credit_events
        {
            return Err(format!(
                "net: {} packets queued ({queued} in port lists), {} events for {} packets in flight and {port_free} busy ports",
                self.pool.live(),
                self.events.len(),
                self.packet_events
            ));
        }
        self.pf_check()?;
        for (i, f) in self.flows.iter() {
            let una = self.win.get(i).map_or(0, |w| w.snd_una);
            if una > f.snd_nxt || f.snd_nxt > f.npkts || f.rb.next_expected() > f.npkts {
                return Err(format!(
                    "net: flow {i}: una {} nxt {} received {} of {} packets",
                    una,
                    f.snd_nxt,
                    f.rb.next_expected(),
                    f.npkts
                ));
            }
        }
        Ok(())
    }

    /// Completed flows still held, by id: (source, destination, bytes,
    /// FCT). With [`Network::retire_finished_flows`], the retired ones (all
    /// of lower id) are those [`Network::take_retired`] handed out.
    pub fn completed_flows(&self) -> impl Iterator<Item = (u32, u32, u64, SimTime)> + '_ {
        self.flows
            .iter()
            .map(|(_, f)| f)
            .filter(|f| f.receiver_done)
            .map(|f| (f.src, f.dst, f.bytes, SimTime(f.finish - f.start)))
    }

    pub fn active_flows(&self) -> u64 {
        self.active
    }

    /// Paced transport: a flow whose last packet has been delivered leaves
    /// the flow table once every older flow has too (its memory is reused;
    /// the run's per-flow results are the recorder's). Safe because a paced
    /// flow sends each packet once and has no ACKs or timers: when its
    /// receiver holds all `npkts` packets, none is left in the network.
    /// With `log`, the retired flows are kept for [`Network::take_retired`].
    /// Not with [`Network::extend_flow`] (a finished flow can grow).
    pub fn retire_finished_flows(&mut self, log: bool) {
        assert!(
            matches!(self.cfg.transport, Transport::Paced),
            "net: only paced flows are retired"
        );
        assert!(
            self.flows.len() == 0,
            "net: retirement set after flows arrived"
        );
        self.retire = true;
        self.retired_log = log.then(Vec::new);
    }

    /// Flows held in the flow table (all flows, without retirement).
    pub fn held_flows(&self) -> usize {
        self.flows.len() - self.flows.first_live()
    }

    /// Hands out the flows retired since the last call (source,
    /// destination, bytes, FCT), in id order.
    pub fn take_retired(&mut self, mut f: impl FnMut(u32, u32, u64, SimTime)) {
        if let Some(log) = &mut self.retired_log {
            for (s, d, b, fct) in log.drain(..) {
                f(s, d, b, fct);
            }
        }
    }

    /// Retires the finished flows at the front of the table.
    fn retire_flows(&mut self) {
        let log = &mut self.retired_log;
        self.flows.retire_front(
            |f| f.receiver_done && f.sender_done,
            |_, f| {
                if let Some(l) = log {
                    l.push((f.src, f.dst, f.bytes, SimTime(f.finish - f.start)));
                }
            },
        );
    }

    // Hooks for a fabric that drives the network from outside and shares
    // its links (REACToR's EPS, Mordia's packet switch: `net::external`).

    /// Paced transport: `bytes` more of flow `f` at `now`. The flow's
    /// packets keep their numbering (full packets, the last one possibly
    /// short); a flow whose short last packet has already left cannot grow
    /// (`false`; add a new flow instead). A flow whose bytes were all
    /// delivered is reopened: its next completion is reported again.
    pub fn extend_flow(&mut self, now: SimTime, f: u32, bytes: u64) -> bool {
        assert!(
            matches!(self.cfg.transport, Transport::Paced),
            "net: extend_flow needs the paced transport"
        );
        assert!(!self.retire, "net: extend_flow with finished flows retired");
        if bytes == 0 {
            return true;
        }
        let payload = self.cfg.payload as u64;
        let fl = &mut self.flows[f as usize];
        if !fl.bytes.is_multiple_of(payload) && fl.snd_nxt >= fl.npkts {
            return false;
        }
        let total = fl
            .bytes
            .checked_add(bytes)
            .expect("net: flow size overflow");
        let npkts = u32::try_from(total.div_ceil(payload)).expect("net: more than 2^32 packets");
        fl.bytes = total;
        fl.npkts = npkts;
        let src = fl.src;
        if fl.receiver_done {
            fl.receiver_done = false;
            self.active += 1;
        }
        self.last_advance = now.0;
        self.bound = (now.0, AFTER_ALL);
        if fl.sender_done {
            fl.sender_done = false;
            self.paced[src as usize].push_back(f);
            if self.lazy_pf {
                self.settle_port(src);
            }
            if !self.qports[src as usize].busy && !self.all_paused(src) && !self.has_queue(src) {
                self.pace(src, now.0);
            }
        }
        true
    }

    /// Whether PFC has paused every class of `host`'s NIC (false without
    /// queued ports).
    pub fn host_paused(&self, host: u32) -> bool {
        self.queued() && self.all_paused(host)
    }

    /// Paced transport: bytes of `host`'s flows not yet handed to its NIC.
    pub fn host_unsent(&self, host: u32) -> u64 {
        let p = self.cfg.payload as u64;
        self.paced[host as usize]
            .iter()
            .map(|&f| {
                let fl = &self.flows[f as usize];
                fl.bytes - (fl.snd_nxt as u64 * p).min(fl.bytes)
            })
            .sum()
    }

    /// PFC: every PAUSE takes `pause_delay + U[0, pause_extra]` and every
    /// RESUME `resume_delay + U[0, resume_extra]` (besides propagation),
    /// drawn per frame from the stream `net.pfc` of the network's seed.
    pub fn set_pfc_jitter(&mut self, pause_extra: SimTime, resume_extra: SimTime) {
        assert!(
            matches!(self.cfg.flow_control, FlowControl::Pfc(_)),
            "net: PFC jitter without PFC"
        );
        self.ext.pause_extra = pause_extra.0;
        self.ext.resume_extra = resume_extra.0;
        self.ext.rng = Some(RngStreams::new(self.cfg.seed).stream("net.pfc"));
    }

    /// Queued ports: `bytes` of outside traffic on port `p` from `now` (or
    /// from when the port is next free), with priority over every packet
    /// not yet started; returns when the port is free again.
    pub fn occupy_port(&mut self, now: SimTime, p: u32, bytes: u64) -> SimTime {
        assert!(self.queued(), "net: occupy_port needs queued ports");
        let rate = || self.graph.ports[p as usize].rate;
        let port = &mut self.ports[p as usize];
        let end = port.busy_until.max(now.0) + port.ser(bytes, rate);
        port.busy_until = end;
        SimTime(end)
    }

    /// Keeps a log of deliveries for [`Network::take_deliveries`].
    pub fn log_deliveries(&mut self, on: bool) {
        self.ext.log = on.then(Vec::new);
    }

    /// Moves the deliveries (net flow, time, bytes) logged since the last
    /// call into `out` (cleared first), in the order they happened.
    pub fn take_deliveries(&mut self, out: &mut Vec<(u32, SimTime, u64)>) {
        out.clear();
        if let Some(log) = &mut self.ext.log {
            std::mem::swap(log, out);
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

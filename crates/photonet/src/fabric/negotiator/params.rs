//! NegotiaToR's parameters (the `[negotiator]` table), its two registered
//! variants, the layout derived from them (slots, payloads, pipeline step,
//! predefined links) and the lone-flow FCT bounds the conformance suite checks.

use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::sched::awgr::CyclicSchedule;
use crate::sched::negotiator::Network;
use crate::topology::Topology;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Negotiator;

/// Which side of a ToR port's link fails.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkSide {
    /// The port's transmit link (tunable laser → AWGR).
    Egress,
    /// The port's receive link (AWGR → receiver).
    Ingress,
}

/// A link that fails during the run (and may be repaired).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkFailure {
    /// ToR index.
    pub tor: u32,
    /// Uplink port of that ToR.
    pub port: u32,
    /// `egress` or `ingress`.
    pub side: LinkSide,
    /// When it fails (takes effect at the next epoch boundary).
    pub at: SimTime,
    /// When it is repaired (omit: never).
    pub until: Option<SimTime>,
}

/// What a REQUEST carries (App. A.2.3).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// One bit: the queue has data (the paper's design).
    Binary,
    /// The queue's size; GRANT/ACCEPT serve larger queues first.
    DataSize,
    /// Weighted head-of-line waiting time (1−α)·(HoL₀+HoL₁)/2 + α·HoL₂ of the
    /// three priority queues; longer waits first.
    HolDelay,
}

/// The matching algorithm.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// NegotiaToR Matching (Algorithm 1).
    Negotiator,
    /// ProjecToR-style per-port requests of bundles by waiting time (App. A.2.5).
    Projector,
}

/// How much data one ProjecToR bundle (its unit of scheduling: one per-port
/// request) holds. App. A.2.5 sets "the bundle size to be the same with the
/// amount of data sent in one epoch" without saying whose epoch: a port's or
/// a ToR's.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProjectorBundle {
    /// What one port sends in an epoch: its scheduled phase
    /// (`scheduled_slots` × the scheduled payload, 33.45 KB). A destination
    /// with B queued bytes asks for ⌈B / 33.45 KB⌉ ports.
    Port,
    /// What a ToR sends in an epoch: all S ports' scheduled phases (8 ×
    /// 33.45 KB = 267.6 KB). A destination asks for ⌈B / 267.6 KB⌉ ports.
    Tor,
}

/// In what order a ProjecToR source hands its ports to its bundles (App.
/// A.2.5 says only "Bundles with higher waiting delays are scheduled first").
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProjectorOrder {
    /// Longest-waiting destination first, one bundle each; then second
    /// bundles in the same order, and so on (photonet's first model, and
    /// its default until 2026-12-02; the text does not say it).
    Interleaved,
    /// Strictly by waiting delay: a destination's bundles share its waiting
    /// delay (its oldest queued data's), so the longest-waiting destination
    /// takes a port for each of its bundles before the next one gets any.
    ByDelay,
    /// Each bundle has its own waiting delay: a pair's queued bytes, in
    /// arrival order, are cut into bundles, and a bundle waited as long as
    /// the oldest data in it (its first byte), so a pair's first bundle has
    /// the pair's delay and its later ones are younger; all of a source's
    /// bundles are then taken strictly by their own delay, which also weighs
    /// each request at the destination. The default: App. A.2.5 gives each
    /// bundle a waiting delay ("measuring the waiting delays of bundles of
    /// packets", §5) and schedules the longer-waiting first.
    PerBundleAge,
}

/// When the GRANT/ACCEPT rings are randomised.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RingInit {
    /// Once at the start; then only round-robin pointer updates across
    /// epochs (one reading of §3.2.1; falls into step under uniform
    /// saturation, like RRM, and matches less than §3.2.2 predicts).
    Once,
    /// Re-drawn at the start of every GRANT/ACCEPT (Algorithm 1 puts
    /// "randomly initialize rings" in both functions; the pointer then moves
    /// port by port within the step). Gives the §3.2.2 / App. A.1 ratio.
    EveryEpoch,
}

/// What one packet of a source queue may carry. §4.1 gives each slot one
/// data packet of a fixed payload (595 B piggybacked, 1,115 B scheduled) and
/// §3.1 one FIFO per destination; it does not say whether a packet mixes
/// flows.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Packing {
    /// A packet carries one flow's bytes of one PIAS class (a packet per
    /// flow, as a packet-level simulator such as YAPS cuts them).
    None,
    /// A packet fills with the bytes of several flows of its pair, within
    /// one PIAS class: each class's queue is a byte FIFO.
    Class,
    /// A packet fills with the pair's bytes across PIAS classes: the
    /// per-destination queue is one byte stream served highest class first.
    Pair,
}

/// Parameters of NegotiaToR (`fabric = "negotiator"` on the parallel network,
/// `"negotiator_thin_clos"` on thin-clos).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NegotiatorParams {
    /// Thin-clos AWGR ports W (predefined slots per epoch); needs S·W ≥ N;
    /// 0 = ⌈N/S⌉ (128 ToRs × 8 ports: 16). Not used on the parallel network.
    pub awgr_ports: u32,
    /// Predefined-phase slot, guardband included (60 ns).
    pub predefined_slot: SimTime,
    /// Reconfiguration guardband at the start of each predefined slot (10 ns).
    pub guardband: SimTime,
    /// Scheduling-message header of a predefined slot (REQUEST, GRANT, ACCEPT
    /// and the data header, 30 B); the rest of the slot is piggybacked payload.
    pub header: ByteSize,
    /// Scheduled-phase slot (90 ns; no guardband).
    pub scheduled_slot: SimTime,
    /// Slots in the scheduled phase (30).
    pub scheduled_slots: u32,
    /// Header of a scheduled-phase packet (10 B).
    pub data_header: ByteSize,
    /// Epoch length; omit for predefined + scheduled phase exactly. If given
    /// it must hold both; the remainder idles.
    pub epoch: Option<SimTime>,
    /// One-way delay between ToRs (2 µs).
    pub propagation: SimTime,
    /// Time to compute a scheduling step, added to the one-way delay.
    pub compute_delay: SimTime,
    /// Piggyback one data packet on each predefined slot (§3.4.1).
    pub piggyback: bool,
    /// With piggybacking, request only when more than this many piggyback
    /// payloads wait for the destination (3, §3.4.1).
    pub request_threshold: u32,
    /// PIAS priority queues at sources (§3.4.2).
    pub priority_queues: bool,
    /// PIAS thresholds: a flow's bytes below the first go first, then up to
    /// the second, then the rest (1 KB, 10 KB).
    pub priority_thresholds: Vec<ByteSize>,
    /// `none` (default: a packet carries one flow's bytes of one PIAS
    /// class), `class` (several flows of the pair, one class) or `pair`
    /// (several flows, across classes). With `class` or `pair` a
    /// piggybacked or scheduled packet is filled up to its payload.
    pub packing: Packing,
    /// Receiver-side limit (§3.6.5): host-facing buffer a destination ToR
    /// grants against; 0 B = no limit.
    pub receiver_buffer: ByteSize,
    /// Rounds of NegotiaToR Matching per scheduling process (1; App. A.2.1
    /// uses 3 and 5).
    pub iterations: u32,
    /// `binary` (default), `data_size` or `hol_delay` requests (App. A.2.3).
    pub requests: RequestKind,
    /// α of the weighted HoL delay (0.001).
    pub hol_alpha: f64,
    /// Stateful scheduling (App. A.2.4): destinations keep a matrix of
    /// reported demand and grant only while it is positive.
    pub stateful: bool,
    /// `negotiator` (default) or `projector` (App. A.2.5).
    pub algorithm: Algorithm,
    /// ProjecToR's bundle, "the amount of data sent in one epoch" (App.
    /// A.2.5): `port` (default: one port's scheduled phase) or `tor` (all S
    /// ports' scheduled phases). Read only with `algorithm = "projector"`.
    pub projector_bundle: ProjectorBundle,
    /// ProjecToR's order of a source's bundles: `per_bundle_age` (default:
    /// strictly by each bundle's own delay, that of its oldest data, App.
    /// A.2.5's "Bundles with higher waiting delays are scheduled first"),
    /// `by_delay` (strictly by waiting delay, all of the longest-waiting
    /// destination's bundles first) or `interleaved` (a destination's second
    /// bundle after every destination's first). Read only with
    /// `algorithm = "projector"`.
    pub projector_order: ProjectorOrder,
    /// `every_epoch` (default: Algorithm 1 draws the rings in every GRANT and
    /// ACCEPT) or `once` (random at the start, then round-robin only).
    pub ring_init: RingInit,
    /// Parallel network: rotate the predefined round-robin rule every epoch
    /// (§3.6.1).
    pub rotate_predefined: bool,
    /// Link failures during the run.
    pub link_failures: Vec<LinkFailure>,
    /// Epochs of silence before an ingress failure (or a repair) is known;
    /// egress adds the feedback's pipeline delay.
    pub detect_epochs: u32,
    /// Flows below this size are the mice of the ToR-to-ToR FCT statistics
    /// (`tor_fct_mice_*` in the fabric statistics: start at the source ToR,
    /// end when the last byte reaches the destination ToR, before its
    /// host-facing queue; §4.1 measures FCT "from the ToRs' perspective").
    /// The run's own FCT ends when the last byte leaves that queue. 10 KB.
    pub mice_below: ByteSize,
    /// Report where mice wait (the `wait_*` statistics: per mouse, when its
    /// first and last bytes left and through which phase, what was queued
    /// ahead of it; per pair, epochs from its first REQUEST to its first
    /// scheduled data). Off by default: it keeps a record per flow.
    pub wait_stats: bool,
    /// Traffic-aware selective relay on thin-clos (App. A.2.2): elephant
    /// data may take a second path through a lightly loaded intermediate ToR.
    pub relay: bool,
    /// Relay only a pair's lowest-priority (elephant) data, and only while
    /// that queue holds at least this much (64 KB, about two ports'
    /// scheduled phases: enough to fill an extra link).
    pub relay_threshold: ByteSize,
    /// Intermediates a source asks per elephant queue and epoch (2).
    pub relay_fanout: u32,
    /// An intermediate grants a relay only while its relay queue for the
    /// destination plus one port's scheduled phase fits in this (256 KB).
    pub relay_buffer: ByteSize,
}

impl Default for NegotiatorParams {
    fn default() -> Self {
        NegotiatorParams {
            awgr_ports: 0,
            predefined_slot: SimTime::ns(60),
            guardband: SimTime::ns(10),
            header: ByteSize(30),
            scheduled_slot: SimTime::ns(90),
            scheduled_slots: 30,
            data_header: ByteSize(10),
            epoch: None,
            propagation: SimTime::us(2),
            compute_delay: SimTime::ZERO,
            piggyback: true,
            request_threshold: 3,
            priority_queues: true,
            priority_thresholds: vec![ByteSize(1_000), ByteSize(10_000)],
            packing: Packing::None,
            receiver_buffer: ByteSize(256_000),
            iterations: 1,
            requests: RequestKind::Binary,
            hol_alpha: 0.001,
            stateful: false,
            algorithm: Algorithm::Negotiator,
            projector_bundle: ProjectorBundle::Port,
            projector_order: ProjectorOrder::PerBundleAge,
            ring_init: RingInit::EveryEpoch,
            rotate_predefined: true,
            link_failures: Vec::new(),
            detect_epochs: 2,
            mice_below: ByteSize(10_000),
            wait_stats: false,
            relay: false,
            relay_threshold: ByteSize(64_000),
            relay_fanout: 2,
            relay_buffer: ByteSize(256_000),
        }
    }
}

impl ParamTable for NegotiatorParams {
    const TABLE: &'static str = "negotiator";
}

pub(super) fn bad(
    key: &str,
    value: impl std::fmt::Display,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::new(key, value, reason).under(NegotiatorParams::TABLE)
}

/// Registration of NegotiaToR on its two topologies.
pub struct NegotiatorModule;

const VARIANTS: &[Variant] = &[
    Variant {
        name: "negotiator",
        label: "NegotiaToR (parallel network)",
        description: "NegotiaToR (SIGCOMM '24) on the parallel network (S AWGRs of N ports): two-phase epochs, pipelined distributed matching (Algorithm 1), piggybacking, PIAS queues, ToRs as endpoints, time-stepped one event per slot",
    },
    Variant {
        name: "negotiator_thin_clos",
        label: "NegotiaToR (thin-clos)",
        description: "NegotiaToR on thin-clos (W-port AWGRs, one port-to-port path per ToR pair, per-port GRANT rings); same table as `negotiator`",
    },
];

impl FabricModule for NegotiatorModule {
    type Params = NegotiatorParams;
    const VARIANTS: &'static [Variant] = VARIANTS;

    type Layout = NegotiatorLayout;

    /// `projector_*` are read only by ProjecToR's REQUEST: NegotiaToR
    /// Matching's results stay keyed as before they existed.
    fn unread_keys(_: &Variant, p: &NegotiatorParams) -> &'static [&'static str] {
        if p.algorithm == Algorithm::Projector {
            &[]
        } else {
            &["projector_bundle", "projector_order"]
        }
    }

    /// The algorithm, not the fabric, leaves `projector_*` unread.
    fn unread_because(_: &Variant, p: &NegotiatorParams) -> Option<String> {
        let name = match p.algorithm {
            Algorithm::Negotiator => "negotiator",
            Algorithm::Projector => "projector",
        };
        Some(format!("algorithm = {name:?}"))
    }

    fn plan(
        p: &NegotiatorParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<NegotiatorLayout, ConfigError> {
        let thin = v.name == "negotiator_thin_clos";
        if p.relay && !thin {
            return Err(bad(
                "relay",
                true,
                "relay is for thin-clos (`negotiator_thin_clos`): on the parallel network every pair reaches every port directly",
            ));
        }
        p.layout(ctx.topology, thin)
    }

    fn memory(
        p: &NegotiatorParams,
        l: &NegotiatorLayout,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Vec<MemoryPart> {
        let (n, s) = (l.n as u128, l.s as u128);
        // Processes in flight: one started per epoch, each living
        // (3·iterations − 1)·k epochs; each has a matching over every port.
        let procs = 3 * (p.iterations as u128).max(1) * (l.k as u128).max(1) + 2;
        vec![
            MemoryPart::per_pair(ctx, l.n, 256, "queues and counters for every pair of ToRs"),
            MemoryPart::of(
                n * s,
                48 * procs,
                "topology.uplinks",
                ctx.topology.uplinks,
                "matchings over every ToR port, one per scheduling process in flight",
            ),
            MemoryPart::per_host(ctx, 256, "host-facing queues"),
            MemoryPart::of(
                (l.pre_payload.max(l.sched_payload) as u128 * s)
                    .min(crate::host_edge::HostEdge::MAX_TABLED as u128 + 1),
                8,
                "topology.uplinks",
                ctx.topology.uplinks,
                "serialisation table of the host-facing queues",
            ),
        ]
    }
    fn build(
        p: NegotiatorParams,
        l: NegotiatorLayout,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(Negotiator::new(
            l,
            &p,
            v.label,
            ctx.seed,
            ctx.check_invariants,
        )))
    }

    /// A lone flow of B bytes between ToRs, in an idle fabric.
    ///
    /// At least: its first byte needs the one-way delay, and the host-facing
    /// queue delivers at R: B/R + propagation. Within a ToR: B/R.
    ///
    /// At most: up to one epoch until the next REQUEST; the pipeline of
    /// (3·iterations − 1)·k epochs; then per epoch at least one piggybacked
    /// payload and the scheduled phase of the pair's guaranteed ports (S on
    /// the parallel network, 1 on thin-clos; with the receiver limit, one
    /// port every other epoch); `request_threshold` + 2 more epochs for the
    /// tail below the request threshold and 3 for packets cut at PIAS
    /// boundaries; then the propagation and the whole flow through the
    /// host-facing queue at R.
    fn lone_flow_fct(p: &NegotiatorParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (v, ctx, src, dst, bytes) = (f.variant, f.ctx, f.src, f.dst, f.bytes);
        let topo = ctx.topology;
        let l = p.layout(topo, v.name == "negotiator_thin_clos")?;
        let at_r = l.host_rate.tx_time(bytes);
        if topo.rack_of(src) == topo.rack_of(dst) {
            return Ok(FctBounds {
                min: at_r.saturating_sub(SimTime(1)),
                max: at_r + SimTime(1),
            });
        }
        let ports = if l.net.is_parallel() { l.s as u64 } else { 1 };
        let sched = ports * l.sched_slots as u64 * l.sched_payload;
        let sched = if l.receiver_buffer > 0 {
            l.sched_slots as u64 * l.sched_payload / 2
        } else {
            sched
        };
        let pb = if l.piggyback { l.pre_payload } else { 0 };
        let per_epoch = (sched + pb).max(1);
        let pipeline = (3 * l.iterations as u64 - 1) * l.k;
        let tail = if l.piggyback {
            p.request_threshold as u64 + 2
        } else {
            0
        };
        let epochs = 1 + pipeline + bytes.div_ceil(per_epoch) + tail + 3;
        Ok(FctBounds {
            min: at_r.saturating_sub(SimTime(1)) + l.propagation,
            max: l.epoch * epochs + l.propagation + at_r + l.sched_slot,
        })
    }
}

/// The numbers a NegotiaToR fabric is built from, derived and checked.
#[derive(Clone, Debug)]
pub struct NegotiatorLayout {
    pub net: Network,
    /// ToRs N and ports S.
    pub n: usize,
    pub s: usize,
    pub servers_per_rack: usize,
    /// Thin-clos cyclic schedule (shared with Sirius).
    pub thin: Option<CyclicSchedule>,
    pub pre_slots: usize,
    pub pre_slot: SimTime,
    pub pre_payload: u64,
    pub sched_slots: usize,
    pub sched_slot: SimTime,
    pub sched_payload: u64,
    pub epoch: SimTime,
    /// Start of each slot within the epoch (predefined, then scheduled).
    pub offsets: Vec<SimTime>,
    pub pre_len: SimTime,
    /// Epochs per pipeline step.
    pub k: u64,
    pub propagation: SimTime,
    pub host_rate: Rate,
    pub port_rate: Rate,
    pub receiver_buffer: u64,
    pub piggyback: bool,
    pub iterations: usize,
    pub prio_cuts: Vec<u64>,
    pub packing: Packing,
    /// Parallel network: the predefined rule rotates every epoch.
    pub rotate: bool,
}

impl NegotiatorLayout {
    /// Uplink capacity over host capacity per ToR.
    pub fn speedup(&self) -> f64 {
        (self.s as f64 * self.port_rate.as_f64())
            / (self.servers_per_rack as f64 * self.host_rate.as_f64())
    }

    /// The predefined phase's rotation in epoch `e` (parallel network).
    #[inline]
    pub(super) fn rotation(&self, e: u64) -> usize {
        if self.rotate {
            (e % self.s as u64) as usize
        } else {
            0
        }
    }

    /// The predefined link of `s`'s port `p` in slot `j` of epoch `e`:
    /// (destination, destination port).
    #[inline]
    pub(super) fn pre_dest(&self, s: usize, p: usize, j: usize, e: u64) -> Option<(usize, usize)> {
        let (n, sp) = (self.n, self.s);
        match &self.thin {
            None => {
                let r = self.rotation(e);
                let o = 1 + j * sp + (p + r) % sp;
                // s, o < n: (s + o) mod n without a division.
                let d = if s + o >= n { s + o - n } else { s + o };
                (o < n).then_some((d, p))
            }
            Some(sch) => {
                let d = sch.dest(s, p, j);
                (d < n && d != s).then(|| (d, sch.rx_port(s, p)))
            }
        }
    }

    /// The predefined link `s` → `d` uses in epoch `e`: (source port, dest port).
    #[inline]
    pub(super) fn pre_link(&self, s: usize, d: usize, e: u64) -> (usize, usize) {
        let (n, sp) = (self.n, self.s);
        match &self.thin {
            None => {
                let r = self.rotation(e);
                let o = (d + n - s) % n;
                let p = ((o - 1) % sp + sp - r) % sp;
                (p, p)
            }
            Some(sch) => {
                let (p, _) = sch.link(s, d);
                (p, sch.rx_port(s, p))
            }
        }
    }
}

impl NegotiatorParams {
    /// Derives the layout for `topo` (thin-clos or parallel), or says which
    /// key makes it impossible.
    pub fn layout(&self, topo: &Topology, thin: bool) -> Result<NegotiatorLayout, ConfigError> {
        let n = topo.racks as usize;
        let s = topo.uplinks as usize;
        if n < 2 {
            return Err(ConfigError::new(
                "topology.racks",
                n,
                "NegotiaToR needs at least two ToRs",
            ));
        }
        let w = if self.awgr_ports == 0 {
            n.div_ceil(s)
        } else {
            self.awgr_ports as usize
        };
        if s * w < n {
            return Err(bad(
                "awgr_ports",
                self.awgr_ports,
                format!(
                    "thin-clos needs W ≥ ⌈N/S⌉ = {}: {s} ports × {w}-port AWGRs reach only {} of {n} ToRs",
                    n.div_ceil(s),
                    s * w
                ),
            ));
        }
        let net = if thin {
            Network::thin_clos(n, s, w).map_err(|e| bad("awgr_ports", w, e))?
        } else {
            Network::parallel(n, s).map_err(|e| ConfigError::new("topology", n, e))?
        };
        let rate = topo.uplink_rate;
        if self.guardband >= self.predefined_slot {
            return Err(bad(
                "guardband",
                format!("\"{}\"", self.guardband),
                format!(
                    "must be shorter than the predefined slot ({}): nothing could be sent",
                    self.predefined_slot
                ),
            ));
        }
        let pre_bytes = rate.bytes_in(self.predefined_slot - self.guardband);
        if self.header.0 >= pre_bytes {
            return Err(bad(
                "header",
                format!("\"{}\"", self.header),
                format!(
                    "must be smaller than the {pre_bytes} B a predefined slot carries ({} at {rate})",
                    self.predefined_slot - self.guardband
                ),
            ));
        }
        let sched_bytes = rate.bytes_in(self.scheduled_slot);
        if self.data_header.0 >= sched_bytes {
            return Err(bad(
                "data_header",
                format!("\"{}\"", self.data_header),
                format!("must be smaller than the {sched_bytes} B a scheduled slot carries"),
            ));
        }
        let pre_slots = if thin { w } else { (n - 1).div_ceil(s) };
        let nominal = self.predefined_slot * pre_slots as u64
            + self.scheduled_slot * self.scheduled_slots as u64;
        let epoch = match self.epoch {
            None => nominal,
            Some(e) => {
                let pre = self.predefined_slot * pre_slots as u64;
                if e < nominal {
                    return Err(bad(
                        "epoch",
                        format!("\"{e}\""),
                        format!(
                            "cannot hold the predefined phase ({pre_slots} × {} = {pre}) and {} scheduled slots of {}",
                            self.predefined_slot, self.scheduled_slots, self.scheduled_slot
                        ),
                    ));
                }
                e
            }
        };
        let (pre_slot, pre_payload, sched_slots) = if self.piggyback {
            (
                self.predefined_slot,
                pre_bytes - self.header.0,
                self.scheduled_slots as usize,
            )
        } else {
            // Table 2 without PB: the slot keeps only guardband + messages;
            // the epoch keeps its length with more scheduled slots.
            let slot = self.guardband + rate.tx_time(self.header.0);
            let left = epoch - slot * pre_slots as u64;
            (slot, 0, (left.0 / self.scheduled_slot.0) as usize)
        };
        // Without piggybacking, scheduled slots are the only data path.
        if !self.piggyback && (self.scheduled_slots == 0 || sched_slots == 0) {
            return Err(bad(
                "scheduled_slots",
                0,
                "with piggyback = false the scheduled phase is the only data path: no flow could ever be sent (set scheduled_slots >= 1 or piggyback = true)",
            ));
        }
        if self.iterations == 0 {
            return Err(bad("iterations", 0, "need at least one round"));
        }
        if !(0.0..=1.0).contains(&self.hol_alpha) {
            return Err(bad("hol_alpha", self.hol_alpha, "must be in [0, 1]"));
        }
        let cuts: Vec<u64> = self.priority_thresholds.iter().map(|b| b.0).collect();
        if cuts.is_empty() || cuts.windows(2).any(|w| w[0] >= w[1]) || cuts[0] == 0 {
            return Err(bad(
                "priority_thresholds",
                format!("{cuts:?}"),
                "need one or more increasing sizes > 0",
            ));
        }
        let sched_payload = sched_bytes - self.data_header.0;
        let port_phase = sched_payload * sched_slots as u64;
        if self.receiver_buffer.0 > 0 && self.receiver_buffer.0 < port_phase {
            return Err(bad(
                "receiver_buffer",
                format!("\"{}\"", self.receiver_buffer),
                format!(
                    "must hold one port's scheduled phase ({port_phase} B), or be 0 B (no limit)"
                ),
            ));
        }
        for (i, f) in self.link_failures.iter().enumerate() {
            if f.tor as usize >= n {
                return Err(bad(
                    &format!("link_failures[{i}].tor"),
                    f.tor,
                    format!("no such link: ToRs are 0..{n}"),
                ));
            }
            if f.port as usize >= s {
                return Err(bad(
                    &format!("link_failures[{i}].port"),
                    f.port,
                    format!("no such link: ToR ports are 0..{s}"),
                ));
            }
            if f.until.is_some_and(|u| u <= f.at) {
                return Err(bad(
                    &format!("link_failures[{i}].until"),
                    format!("\"{}\"", f.until.unwrap_or_default()),
                    "must be after `at`",
                ));
            }
        }
        if self.relay {
            let why = if self.algorithm != Algorithm::Negotiator
                || self.requests != RequestKind::Binary
                || self.stateful
            {
                Some("relay is modelled with binary stateless NegotiaToR requests only")
            } else if !self.link_failures.is_empty() {
                Some("relay is not modelled together with link failures")
            } else if self.iterations != 1 {
                Some("relay is modelled with one round of matching only")
            } else {
                None
            };
            let why = why.or((self.packing != Packing::None)
                .then_some("relay is modelled with packets of one flow only (packing = \"none\")"));
            if let Some(why) = why {
                return Err(bad("relay", true, why));
            }
            if self.relay_buffer.0 < port_phase {
                return Err(bad(
                    "relay_buffer",
                    format!("\"{}\"", self.relay_buffer),
                    format!("must hold one port's scheduled phase ({port_phase} B)"),
                ));
            }
        }
        let mut offsets = Vec::with_capacity(pre_slots + sched_slots);
        for j in 0..pre_slots {
            offsets.push(pre_slot * j as u64);
        }
        let pre_len = pre_slot * pre_slots as u64;
        for j in 0..sched_slots {
            offsets.push(pre_len + self.scheduled_slot * j as u64);
        }
        let k = ((pre_len + self.propagation + self.compute_delay).0)
            .div_ceil(epoch.0)
            .max(1);
        Ok(NegotiatorLayout {
            thin: thin.then(|| CyclicSchedule::new(n, s, w).expect("checked")),
            net,
            n,
            s,
            servers_per_rack: topo.servers_per_rack as usize,
            pre_slots,
            pre_slot,
            pre_payload,
            sched_slots,
            sched_slot: self.scheduled_slot,
            sched_payload,
            epoch,
            offsets,
            pre_len,
            k,
            propagation: self.propagation,
            host_rate: topo.host_rate(),
            port_rate: rate,
            receiver_buffer: self.receiver_buffer.0,
            piggyback: self.piggyback,
            iterations: self.iterations as usize,
            prio_cuts: if self.priority_queues { cuts } else { vec![] },
            packing: self.packing,
            rotate: self.rotate_predefined,
        })
    }
}

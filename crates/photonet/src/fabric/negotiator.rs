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
//! - a packet never mixes flows (nor PIAS priorities of one flow); it arrives
//!   `propagation` after its slot ends and joins the host-facing queue.
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
//! requests of bundles = one port's scheduled phase, ordered by waiting time
//! of the queue's oldest head). The traffic-oblivious baseline of §4 is the
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
//! delivered in the same span just before (Fig. 10).
//!
//! # Speed (the hot path; history and numbers in the README's Performance)
//!
//! Per packet: `take` cuts it off the pair's head segment (kept inline in
//! one line per pair, `PairQ`), `send` computes when it leaves the
//! destination's host-facing queue and appends one entry (`HostQ`: the
//! queue and its drain state in one line per endpoint), and `deliver_until`
//! reports due entries to the recorder, slot by slot, in queue order. A
//! predefined slot on the parallel network reads a source's S data bits
//! (`has_data`, one bit per pair) at once and visits only the ports whose
//! pair holds data. `take`, `send` and the enqueue are inlined into the slot
//! loops; a lost packet's retransmission is out of line. Tried and dropped
//! (README): coalescing a pair's scheduled packets into one host-facing
//! entry, updating the entry per packet, entries for piggybacked packets,
//! denser pair records, LTO; copying the due entries out as slices (more
//! instructions than popping them, ~3 per endpoint and slot).

use crate::error::ConfigError;
use crate::fabric::registry::{BuildContext, FabricModule, FctBounds, ParamTable, Variant};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::Flow;
use crate::pool::{List, Pool};
use crate::queue::{EventQueue, SlotClock};
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::sched::awgr::CyclicSchedule;
use crate::sched::negotiator::{
    accept, grant, projector_grant, projector_requests, relay_candidates, Grant, Matching, Network,
    Request, Rings, Scratch, FREE,
};
use crate::topology::Topology;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

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
            receiver_buffer: ByteSize(256_000),
            iterations: 1,
            requests: RequestKind::Binary,
            hol_alpha: 0.001,
            stateful: false,
            algorithm: Algorithm::Negotiator,
            ring_init: RingInit::EveryEpoch,
            rotate_predefined: true,
            link_failures: Vec::new(),
            detect_epochs: 2,
            mice_below: ByteSize(10_000),
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

fn bad(key: &str, value: impl std::fmt::Display, reason: impl Into<String>) -> ConfigError {
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

    fn layout(p: &NegotiatorParams, ctx: &BuildContext) -> Result<(), ConfigError> {
        p.layout(ctx.topology, false).map(|_| ())
    }

    fn build(
        p: NegotiatorParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let thin = v.name == "negotiator_thin_clos";
        if p.relay && !thin {
            return Err(bad(
                "relay",
                true,
                "relay is for thin-clos (`negotiator_thin_clos`): on the parallel network every pair reaches every port directly",
            ));
        }
        let l = p.layout(ctx.topology, thin)?;
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
    fn lone_flow_fct(
        p: &NegotiatorParams,
        v: &Variant,
        ctx: &BuildContext,
        src: u32,
        dst: u32,
        bytes: u64,
    ) -> Result<FctBounds, ConfigError> {
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
}

impl NegotiatorLayout {
    /// Uplink capacity over host capacity per ToR.
    pub fn speedup(&self) -> f64 {
        (self.s as f64 * self.port_rate.as_f64())
            / (self.servers_per_rack as f64 * self.host_rate.as_f64())
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
        })
    }
}

/// A run of consecutive bytes of one flow waiting in a source queue.
#[derive(Clone, Copy, Debug)]
struct Seg {
    flow: u32,
    /// The flow's destination endpoint (so sending a packet needs no flow
    /// lookup).
    ep: u32,
    left: u64,
    /// When it joined the queue (head-of-line delays).
    since: SimTime,
}

impl Seg {
    /// Cuts up to `max` packets of at most `payload` bytes off the front of
    /// the segment (packets never mix segments): (packets, bytes).
    #[inline]
    fn cut(&mut self, payload: u64, max: u64) -> (u64, u64) {
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
/// segments wait in per-priority pool lists (`Negotiator::q`, which then hold
/// the rest of the head's priority).
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

struct FlowSt {
    dst_ep: u32,
    /// Segments of the flow not yet wholly sent, plus lost packets waiting
    /// to be retransmitted: the packet that brings it to 0 carries the
    /// flow's last byte to the destination ToR (packets reach a ToR in the
    /// order they were sent).
    unsent: u32,
    bytes: u64,
    start: SimTime,
    /// When the last byte reached the destination ToR.
    tor_done: SimTime,
}

/// A packet (or the bytes of one flow arriving in one slot) in a
/// host-facing queue: when its last byte leaves, and whether it ends its
/// flow (top bit of `bytes`).
#[derive(Clone, Copy, Debug)]
struct HostEntry {
    done: SimTime,
    flow: u32,
    bytes: u32,
}

const LAST: u32 = 1 << 31;

/// An endpoint's host-facing queue and what `host_enqueue` needs with it
/// (one cache line).
#[derive(Clone, Debug)]
#[repr(align(64))]
struct HostQ {
    q: VecDeque<HostEntry>,
    /// When the queue's last entry leaves.
    busy: SimTime,
    /// When its last entry arrived (same-slot merging).
    last_arrive: SimTime,
    /// Listed in `host_active`.
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

/// What `take` hands to `send`.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: u32,
    ep: u32,
    bytes: u64,
    prio: u8,
    /// Packets (of `payload` bytes, the last one possibly shorter).
    packets: u64,
    /// The last bytes of the flow still to be sent.
    last: bool,
}

/// Parallel network, predefined slot `j`, rotation `r` (< S ≤ 64): bit p
/// is set when source `s`'s port p has a link in the slot (offset
/// o = 1 + j·S + (p + r) mod S < N) to a ToR (s + o) mod N whose pair's
/// bit in `has_data` (N × N bits, row by source) is set.
#[inline]
fn pre_ports(has_data: &[u64], n: usize, sp: usize, s: usize, j: usize, r: usize) -> u64 {
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

/// One scheduling process (REQUEST → GRANT → ACCEPT, `iterations` times).
struct Process {
    start_epoch: u64,
    data_epoch: u64,
    step: usize,
    m: Matching,
    requests: Vec<Vec<Request>>,
    grants: Vec<Grant>,
    /// Ports each destination granted (receiver limit's promise).
    granted_ports: Vec<u32>,
    /// ProjecToR per-port requests (src, src_port, dst, weight).
    port_requests: Vec<(u32, u32, u32, u64)>,
    /// Relay requests (source, intermediate, final destination), sorted.
    relay: Vec<(u32, u32, u32)>,
    /// Stateful (A.2.4): demand each GRANT of this round took off the
    /// destination's matrix (destination, source, bytes), in grant order.
    reserved: Vec<(u32, u32, u64)>,
    busy: bool,
}

#[derive(Default, Clone, Debug)]
struct Counters {
    slots: u64,
    epochs: u64,
    requests: u64,
    grants: u64,
    accepts: u64,
    grants_lost: u64,
    requests_lost: u64,
    ports_withheld: u64,
    piggyback_bytes: u64,
    scheduled_bytes: u64,
    matched_port_slots: u64,
    used_port_slots: u64,
    packets_lost: u64,
    bytes_lost: u64,
    contention: u64,
    relay_requests: u64,
    relay_refused: u64,
    relay_accepts: u64,
    relayed_bytes: u64,
    peak_tor_queue: u64,
    peak_host_queue: u64,
    queue_samples: u64,
    queue_sum: f64,
}

/// A NegotiaToR fabric.
pub struct Negotiator {
    l: NegotiatorLayout,
    label: String,
    clock: SlotClock,
    threshold: u64,
    requests_kind: RequestKind,
    hol_alpha: f64,
    stateful: bool,
    algorithm: Algorithm,
    ring_init: RingInit,
    rotate: bool,
    detect: u64,
    rng: SimRng,
    rings: Rings,
    scratch: Scratch,
    // --- source queues
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
    // --- flows and delivery
    flows: Vec<FlowSt>,
    /// Serialisation time at R of 0..=max payload bytes (no division per packet).
    tx_table: Vec<SimTime>,
    /// Per endpoint: its host-facing queue and drain state.
    host: Vec<HostQ>,
    host_active: Vec<u32>,
    /// Scratch: the host-facing queues' entries due in `deliver_until`.
    due: Vec<HostEntry>,
    /// Bytes sent to a ToR (on the way or in its host-facing queues) and not
    /// yet delivered.
    host_backlog: Vec<u64>,
    host_pending: u64,
    added_bytes: u64,
    delivered_bytes: u64,
    retransmit: EventQueue<(u32, u32, u8, u64)>,
    retransmit_bytes: u64,
    // --- scheduling
    procs: VecDeque<Process>,
    spare: Vec<Process>,
    /// Scratch: a predefined slot's links with data (src, port, dst, port).
    pre_links: Vec<(u32, u32, u32, u32)>,
    /// This epoch's scheduled-phase transfers (src, src_port, dst, dst_port).
    matched: Vec<(u32, u32, u32, u32)>,
    /// The same, per pair: (src, dst, ports).
    runs: Vec<(u32, u32, u32)>,
    matched_epoch: u64,
    /// Receiver limit: capacity of ports granted and not yet used, per ToR.
    promised: Vec<u64>,
    /// Stateful matrix [d·N + s] of demand reported to d by s.
    demand: Vec<i64>,
    new_bytes: Vec<u64>,
    /// Scratch: weights of informative requests per pair.
    pair_weight: Vec<u64>,
    // --- traffic-aware selective relay (thin-clos)
    relay: bool,
    relay_threshold: u64,
    relay_fanout: usize,
    relay_buffer: u64,
    /// Per pair: bytes in the lowest-priority queue (only with relay).
    low_bytes: Vec<u64>,
    /// Per (intermediate, destination): relayed data waiting for the second
    /// hop, and its bytes.
    rq: Vec<VecDeque<Seg>>,
    relay_bytes: Vec<u64>,
    /// Per intermediate: destinations with relayed data.
    relay_active: Vec<Vec<u32>>,
    /// Relayed packets on their first hop: (intermediate, destination, flow, bytes).
    /// All take one propagation delay from slot ends that never go back in
    /// time, so they arrive in the order they were sent: a FIFO, not a heap.
    relay_flight: VecDeque<(SimTime, (u32, u32, u32, u64))>,
    relay_flight_bytes: u64,
    /// Per run of `runs`: the final destination of relayed data, or FREE.
    run_relay: Vec<u32>,
    relay_out: Vec<u32>,
    // --- failures
    events: Vec<(SimTime, u32, u32, LinkSide, bool)>,
    egress_down: Vec<bool>,
    ingress_down: Vec<bool>,
    egress_known: Vec<bool>,
    ingress_known: Vec<bool>,
    /// (epoch the knowledge changes, index, egress?, value)
    detections: Vec<(u64, usize, bool, bool)>,
    any_failure: bool,
    // --- time
    /// Global index of the last slot processed.
    last: Option<u64>,
    latest: SimTime,
    check: bool,
    rx_seen: Vec<u64>,
    ratios: Vec<f32>,
    mice_below: u64,
    /// Bytes that have reached their destination ToR (or start there).
    at_tor_bytes: u64,
    /// The end of the run (`finish`): later ToR arrivals are censored.
    end: SimTime,
    /// Failure window [first failure, last repair) and delivered bytes in it
    /// and in the window of the same length just before it.
    fail_window: Option<(SimTime, SimTime)>,
    bytes_before_failure: u64,
    bytes_during_failure: u64,
    c: Counters,
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
        let eps = n * l.servers_per_rack;
        let prios = l.prio_cuts.len() + 1;
        let streams = RngStreams::new(seed);
        let mut rng = streams.stream("negotiator.rings");
        let rings = Rings::random(&l.net, &mut rng);
        let mut events = Vec::new();
        for f in &p.link_failures {
            events.push((f.at, f.tor, f.port, f.side, true));
            if let Some(u) = f.until {
                events.push((u, f.tor, f.port, f.side, false));
            }
        }
        let fail_window = match (
            p.link_failures.iter().map(|f| f.at).min(),
            p.link_failures.iter().map(|f| f.until).max(),
        ) {
            (Some(a), Some(Some(u))) if p.link_failures.iter().all(|f| f.until.is_some()) => {
                Some((a, u))
            }
            _ => None,
        };
        // Applied from the back: latest last in the vector's front.
        events.sort_by_key(|ev| std::cmp::Reverse(ev.0));
        let threshold = if l.piggyback {
            p.request_threshold as u64 * l.pre_payload
        } else {
            0
        };
        Negotiator {
            clock: SlotClock::new(l.epoch),
            label: label.to_string(),
            threshold,
            requests_kind: p.requests,
            hol_alpha: p.hol_alpha,
            stateful: p.stateful,
            algorithm: p.algorithm,
            ring_init: p.ring_init,
            rotate: p.rotate_predefined,
            detect: p.detect_epochs as u64,
            rng,
            rings,
            scratch: Scratch::default(),
            prios,
            pool: Pool::new(),
            q: vec![List::EMPTY; n * n * prios],
            pq: vec![PairQ::EMPTY; n * n],
            tor_bytes: vec![0; n],
            queued: 0,
            active: vec![Vec::new(); n],
            has_data: vec![0; (n * n).div_ceil(64)],
            flows: Vec::new(),
            tx_table: (0..=(l.pre_payload.max(l.sched_payload) * s as u64))
                .map(|b| l.host_rate.tx_time(b))
                .collect(),
            host: vec![HostQ::EMPTY; eps],
            host_active: Vec::new(),
            due: Vec::new(),
            host_backlog: vec![0; n],
            host_pending: 0,
            added_bytes: 0,
            delivered_bytes: 0,
            retransmit: EventQueue::new(),
            retransmit_bytes: 0,
            procs: VecDeque::new(),
            spare: Vec::new(),
            pre_links: Vec::new(),
            matched: Vec::new(),
            runs: Vec::new(),
            matched_epoch: u64::MAX,
            promised: vec![0; n],
            demand: if p.stateful { vec![0; n * n] } else { vec![] },
            new_bytes: if p.stateful { vec![0; n * n] } else { vec![] },
            pair_weight: vec![0; n * n],
            relay: p.relay,
            relay_threshold: p.relay_threshold.0,
            relay_fanout: p.relay_fanout as usize,
            relay_buffer: p.relay_buffer.0,
            low_bytes: if p.relay { vec![0; n * n] } else { vec![] },
            rq: if p.relay {
                vec![VecDeque::new(); n * n]
            } else {
                vec![]
            },
            relay_bytes: if p.relay { vec![0; n * n] } else { vec![] },
            relay_active: vec![Vec::new(); n],
            relay_flight: VecDeque::new(),
            relay_flight_bytes: 0,
            run_relay: Vec::new(),
            relay_out: Vec::new(),
            any_failure: !events.is_empty(),
            events,
            egress_down: vec![false; n * s],
            ingress_down: vec![false; n * s],
            egress_known: vec![false; n * s],
            ingress_known: vec![false; n * s],
            detections: Vec::new(),
            last: None,
            latest: SimTime::ZERO,
            check,
            rx_seen: if check { vec![u64::MAX; n * s] } else { vec![] },
            ratios: Vec::new(),
            mice_below: p.mice_below.0,
            at_tor_bytes: 0,
            end: SimTime::MAX,
            fail_window,
            bytes_before_failure: 0,
            bytes_during_failure: 0,
            c: Counters::default(),
            l,
        }
    }

    pub fn layout(&self) -> &NegotiatorLayout {
        &self.l
    }

    fn slots_per_epoch(&self) -> u64 {
        self.l.offsets.len() as u64
    }
    fn slot_time(&self, g: u64) -> SimTime {
        let per = self.slots_per_epoch();
        self.clock.start(g / per) + self.l.offsets[(g % per) as usize]
    }
    /// The first global slot index starting at or after `t`.
    fn slot_at_or_after(&self, t: SimTime) -> u64 {
        let per = self.slots_per_epoch();
        let e = self.clock.slot_of(t);
        let off = t - self.clock.start(e);
        let j = self.l.offsets.partition_point(|&o| o < off) as u64;
        e * per + j
    }

    fn busy(&self) -> bool {
        self.queued > 0
            || self.host_pending > 0
            || !self.retransmit.is_empty()
            || !self.relay_flight.is_empty()
            || self.procs.iter().any(|p| p.busy)
            || !self.matched.is_empty()
    }

    /// ToR-to-ToR FCT of mice (< `mice_below`) that reached their
    /// destination ToR by the end: (p99 µs, mean µs, count, unfinished).
    fn tor_fct_mice(&self) -> (f64, f64, f64, f64) {
        let mut v: Vec<u64> = Vec::new();
        let mut unfinished = 0u64;
        for f in &self.flows {
            if f.bytes >= self.mice_below || f.bytes == 0 {
                continue;
            }
            if f.tor_done <= self.end {
                v.push((f.tor_done - f.start).0);
            } else {
                unfinished += 1;
            }
        }
        if v.is_empty() {
            return (f64::NAN, f64::NAN, 0.0, unfinished as f64);
        }
        v.sort_unstable();
        let p99 = crate::recorder::percentile_sorted(&v, 99.0) as f64 / 1e6;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e6;
        (p99, mean, v.len() as f64, unfinished as f64)
    }

    // ---------------------------------------------------------------- queues

    fn push_seg(&mut self, s: usize, d: usize, prio: usize, seg: Seg, front: bool) {
        let n = self.l.n;
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
        if self.relay && prio + 1 == self.prios {
            self.low_bytes[pair] += seg.left;
        }
        self.tor_bytes[s] += seg.left;
        self.queued += seg.left;
        self.c.peak_tor_queue = self.c.peak_tor_queue.max(self.tor_bytes[s]);
        if self.stateful {
            self.new_bytes[pair] += seg.left;
        }
    }

    /// The front segment of priority `prio` of a pair's queue, if any.
    fn front_seg(&self, pair: usize, prio: usize) -> Option<&Seg> {
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

    /// Takes up to `max` packets of at most `payload` bytes each from the
    /// head segment of `s`'s queue for `d` (highest priority first): returns
    /// the packets. Packets never mix segments.
    #[inline(always)]
    fn take(&mut self, s: usize, d: usize, payload: u64, max: u64) -> Option<Pkt> {
        let pair = s * self.l.n + d;
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
        if self.relay && prio + 1 == self.prios {
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
            last = self.segment_sent(flow);
        }
        if emptied {
            let pos = self.pq[pair].active_pos as usize;
            let moved = *self.active[s].last().expect("listed");
            self.active[s].swap_remove(pos);
            self.has_data[pair / 64] &= !(1 << (pair % 64));
            if moved as usize != d {
                self.pq[s * self.l.n + moved as usize].active_pos = pos as u32;
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

    /// Like `take`, from the lowest-priority (elephant) queue of `s` for `d`
    /// only: the data a relay carries.
    fn take_low(&mut self, s: usize, d: usize, payload: u64, max: u64) -> Option<Pkt> {
        let pair = s * self.l.n + d;
        let low = self.prios - 1;
        if self.low_bytes[pair] == 0 {
            return None;
        }
        if self.pq[pair].head_prio as usize == low {
            return self.take(s, d, payload, max);
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
            last = self.segment_sent(flow);
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

    /// Like `take`, from the data `m` relays to `d`.
    fn take_relayed(&mut self, m: usize, d: usize, payload: u64, max: u64) -> Option<Pkt> {
        let pair = m * self.l.n + d;
        let seg = self.rq[pair].front_mut()?;
        let (k, b) = seg.cut(payload, max);
        let (flow, ep, seg_done) = (seg.flow, seg.ep, seg.left == 0);
        let mut last = false;
        if seg_done {
            self.rq[pair].pop_front();
            last = self.segment_sent(flow);
        }
        self.relay_bytes[pair] -= b;
        self.tor_bytes[m] -= b;
        self.queued -= b;
        if self.relay_bytes[pair] == 0 {
            let list = &mut self.relay_active[m];
            let pos = list.iter().position(|&x| x as usize == d).expect("listed");
            list.swap_remove(pos);
        }
        Some(Pkt {
            flow,
            ep,
            bytes: b,
            prio: (self.prios - 1) as u8,
            packets: k,
            last,
        })
    }

    /// The last byte of one of `flow`'s segments has been taken: whether it
    /// was the flow's last segment.
    fn segment_sent(&mut self, flow: u32) -> bool {
        let f = &mut self.flows[flow as usize];
        f.unsent -= 1;
        f.unsent == 0
    }

    /// Relayed data reaches its intermediate `m` and queues for `d`.
    fn relay_arrive(&mut self, now: SimTime, m: usize, d: usize, flow: u32, b: u64) {
        let pair = m * self.l.n + d;
        if self.relay_bytes[pair] == 0 {
            self.relay_active[m].push(d as u32);
        }
        self.rq[pair].push_back(Seg {
            flow,
            ep: self.flows[flow as usize].dst_ep,
            left: b,
            since: now,
        });
        self.relay_bytes[pair] += b;
        self.relay_flight_bytes -= b;
        self.tor_bytes[m] += b;
        self.queued += b;
        self.c.peak_tor_queue = self.c.peak_tor_queue.max(self.tor_bytes[m]);
    }

    /// Whether `t`'s egress port towards `d` carries high-volume direct
    /// traffic (a queue above `relay_threshold` for a ToR that port reaches).
    fn relay_port_loaded(&self, t: usize, d: usize) -> bool {
        let sch = self.l.thin.as_ref().expect("relay is thin-clos only");
        let x = sch.link(t, d).0;
        let n = self.l.n;
        self.active[t].iter().any(|&d2| {
            sch.link(t, d2 as usize).0 == x
                && self.pq[t * n + d2 as usize].bytes > self.relay_threshold
        })
    }

    /// Puts a packet on the wire at the end of a slot ending at `end`, or
    /// loses it (failed link) and schedules its retransmission.
    #[inline(always)]
    fn send(&mut self, s: usize, d: usize, pkt: Pkt, end: SimTime, lost: bool) {
        if lost {
            self.lose(s, d, pkt, end);
            return;
        }
        self.host_enqueue(
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
        let (flow, b) = (pkt.flow, pkt.bytes);
        self.c.packets_lost += pkt.packets;
        self.c.bytes_lost += b;
        self.retransmit.push(
            end + self.l.propagation * 2,
            (s as u32, d as u32, pkt.prio, b | (flow as u64) << 32),
        );
        self.retransmit_bytes += b;
        // The retransmission is still to be sent.
        self.flows[flow as usize].unsent += 1;
    }

    /// A packet (or a whole intra-rack flow) reaches its destination ToR at
    /// `arrive` and joins the host-facing queue of its endpoint, which drains
    /// at R in arrival order. Packets reach a ToR in the order they were sent
    /// (one propagation delay for all), so the queue's schedule is computed
    /// when the packet is sent: one FIFO per endpoint, no event per packet.
    /// Bytes of one flow arriving in the same slot (several ports of a pair)
    /// are kept as one entry (its last byte's time is exact; earlier bytes
    /// are reported with it, less than a slot late).
    #[inline(always)]
    fn host_enqueue(&mut self, arrive: SimTime, flow: u32, ep: u32, bytes: u64, last: bool) {
        if last {
            self.flows[flow as usize].tor_done = arrive;
        }
        let ep = ep as usize;
        let spr = self.l.servers_per_rack;
        let d = if spr == 1 { ep } else { ep / spr };
        self.at_tor_bytes += bytes;
        self.host_backlog[d] += bytes;
        self.host_pending += bytes;
        let h = &mut self.host[ep];
        if !h.on_list {
            h.on_list = true;
            self.host_active.push(ep as u32);
        }
        let same_slot = h.last_arrive == arrive;
        h.last_arrive = arrive;
        if bytes < LAST as u64 {
            // A packet (or a small intra-rack flow): one entry.
            let flag = if last { LAST } else { 0 };
            self.host_chunk(ep, arrive, flow, bytes, flag, same_slot);
            return;
        }
        let mut left = bytes;
        while left > 0 {
            // An entry holds < 2^31 bytes (the top bit marks the flow's end).
            let b = left.min((LAST - 1) as u64);
            left -= b;
            let flag = if last && left == 0 { LAST } else { 0 };
            self.host_chunk(ep, arrive, flow, b, flag, same_slot);
        }
    }

    /// `b` (< 2^31) bytes of `flow` join `ep`'s host-facing queue (merged
    /// into its last entry when that is the same flow's, in the same slot).
    #[inline(always)]
    fn host_chunk(
        &mut self,
        ep: usize,
        arrive: SimTime,
        flow: u32,
        b: u64,
        flag: u32,
        same_slot: bool,
    ) {
        let tx = match self.tx_table.get(b as usize) {
            Some(&t) => t,
            None => self.l.host_rate.tx_time(b),
        };
        let h = &mut self.host[ep];
        let done = h.busy.max(arrive) + tx;
        // The queue when it arrives, as time to drain (bytes in `stats`).
        self.c.peak_host_queue = self.c.peak_host_queue.max((done - arrive).0);
        h.busy = done;
        match h.q.back_mut() {
            Some(e)
                if same_slot && e.flow == flow && ((e.bytes & !LAST) as u64 + b) < LAST as u64 =>
            {
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

    /// Bytes that have left the host-facing queues by `now` are delivered;
    /// due retransmissions rejoin their source queue.
    fn deliver_until(&mut self, now: SimTime, rec: &mut Recorder) {
        // Two passes: first the due entries of every host-facing queue, then
        // their deliveries in the same order (a tight loop of independent
        // per-flow loads in the recorder, fetched in parallel).
        let spr = self.l.servers_per_rack;
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        let mut k = 0;
        while k < self.host_active.len() {
            let ep = self.host_active[k] as usize;
            let d = if spr == 1 { ep } else { ep / spr };
            let q = &mut self.host[ep].q;
            let mut taken = 0u64;
            while let Some(&e) = q.front() {
                if e.done > now {
                    break;
                }
                q.pop_front();
                taken += (e.bytes & !LAST) as u64;
                due.push(e);
            }
            let empty = q.is_empty();
            self.host_backlog[d] -= taken;
            self.host_pending -= taken;
            self.delivered_bytes += taken;
            if empty {
                self.host[ep].on_list = false;
                self.host_active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        if let Some((a, u)) = self.fail_window {
            for e in &due {
                let (done, b) = (e.done, (e.bytes & !LAST) as u64);
                if done >= a && done < u {
                    self.bytes_during_failure += b;
                } else if done < a && done + (u - a) >= a {
                    self.bytes_before_failure += b;
                }
            }
        }
        for e in &due {
            let b = (e.bytes & !LAST) as u64;
            if e.bytes & LAST != 0 {
                rec.deliver_last(e.flow, e.done, b);
            } else {
                rec.deliver_point(e.flow, e.done, b);
            }
        }
        self.due = due;
        while let Some(&(t, (m, d, flow, b))) = self.relay_flight.front() {
            if t > now {
                break;
            }
            self.relay_flight.pop_front();
            self.relay_arrive(now, m as usize, d as usize, flow, b);
        }
        while let Some((_, (s, d, prio, packed))) = self.retransmit.pop_due(now) {
            let (b, flow) = (packed & 0xffff_ffff, (packed >> 32) as u32);
            self.retransmit_bytes -= b;
            let seg = Seg {
                flow,
                ep: self.flows[flow as usize].dst_ep,
                left: b,
                since: now,
            };
            // Its packets were counted in `unsent` when lost.
            self.push_seg(s as usize, d as usize, prio as usize, seg, true);
            if self.stateful {
                // A retransmission is not new demand the source reports.
                self.new_bytes[s as usize * self.l.n + d as usize] -= b;
            }
        }
    }

    // ------------------------------------------------------------- topology

    /// The predefined link of `s`'s port `p` in slot `j` of epoch `e`:
    /// (destination, destination port).
    #[inline]
    fn pre_dest(&self, s: usize, p: usize, j: usize, e: u64) -> Option<(usize, usize)> {
        let (n, sp) = (self.l.n, self.l.s);
        match &self.l.thin {
            None => {
                let r = if self.rotate {
                    (e % sp as u64) as usize
                } else {
                    0
                };
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
    fn pre_link(&self, s: usize, d: usize, e: u64) -> (usize, usize) {
        let (n, sp) = (self.l.n, self.l.s);
        match &self.l.thin {
            None => {
                let r = if self.rotate {
                    (e % sp as u64) as usize
                } else {
                    0
                };
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

    /// Whether a message `s` → `d` in epoch `e`'s predefined phase gets through.
    #[inline]
    fn message_ok(&self, s: usize, d: usize, e: u64) -> bool {
        if !self.any_failure {
            return true;
        }
        let (p, q) = self.pre_link(s, d, e);
        let sp = self.l.s;
        !self.egress_down[s * sp + p] && !self.ingress_down[d * sp + q]
    }

    // ----------------------------------------------------------- scheduling

    fn weight(&self, s: usize, d: usize, now: SimTime) -> u64 {
        let pair = s * self.l.n + d;
        match self.requests_kind {
            RequestKind::Binary => 0,
            RequestKind::DataSize => self.pq[pair].bytes,
            RequestKind::HolDelay => {
                let hol = |prio: usize| -> f64 {
                    if prio >= self.prios {
                        return 0.0;
                    }
                    self.front_seg(pair, prio)
                        .map_or(0.0, |seg| (now - seg.since).0 as f64)
                };
                let a = self.hol_alpha;
                let w = if self.prios >= 3 {
                    (1.0 - a) * (hol(0) + hol(1)) / 2.0 + a * hol(self.prios - 1)
                } else {
                    hol(0)
                };
                w as u64
            }
        }
    }

    fn oldest_head(&self, s: usize, d: usize) -> SimTime {
        let pair = s * self.l.n + d;
        (0..self.prios)
            .filter_map(|p| self.front_seg(pair, p))
            .map(|seg| seg.since)
            .min()
            .unwrap_or(SimTime::MAX)
    }

    fn new_process(&mut self, start_epoch: u64, data_epoch: u64) -> Process {
        let mut p = self.spare.pop().unwrap_or_else(|| Process {
            start_epoch: 0,
            data_epoch: 0,
            step: 0,
            m: Matching::new(&self.l.net),
            requests: vec![Vec::new(); self.l.n],
            grants: Vec::new(),
            granted_ports: vec![0; self.l.n],
            port_requests: Vec::new(),
            relay: Vec::new(),
            reserved: Vec::new(),
            busy: false,
        });
        p.start_epoch = start_epoch;
        p.data_epoch = data_epoch;
        p.step = 0;
        p.busy = false;
        p.relay.clear();
        p.m.clear();
        // A recycled process whose GRANT step falls in an idle gap (skipped)
        // reaches ACCEPT with these: they must not be the last use's.
        p.granted_ports.fill(0);
        p.grants.clear();
        p.reserved.clear();
        p
    }

    /// REQUEST of round `round` at epoch `e` (messages ride this epoch's
    /// predefined phase).
    fn step_request(&mut self, p: &mut Process, e: u64, now: SimTime, round: usize) {
        for r in p.requests.iter_mut() {
            r.clear();
        }
        p.port_requests.clear();
        let n = self.l.n;
        let sp = self.l.s;
        let mut any = false;
        let mut bundles: Vec<(u32, u32, u64)> = Vec::new();
        let mut port_out: Vec<(u32, u32)> = Vec::new();
        let port_cap = (self.l.sched_slots as u64 * self.l.sched_payload).max(1);
        let mut marked: Vec<bool> = if self.relay {
            vec![false; n]
        } else {
            Vec::new()
        };
        for s in 0..n {
            if self.active[s].is_empty() && (!self.relay || self.relay_active[s].is_empty()) {
                continue;
            }
            if round > 0 && (0..sp).all(|x| !p.m.src_free(s, x)) {
                continue;
            }
            if self.algorithm == Algorithm::Projector {
                bundles.clear();
                for &d in &self.active[s] {
                    let b = self.pq[s * n + d as usize].bytes;
                    if b > self.threshold {
                        let age = (now - self.oldest_head(s, d as usize).min(now)).0;
                        bundles.push((d, b.div_ceil(port_cap) as u32, age));
                    }
                }
                port_out.clear();
                projector_requests(&self.l.net, s, &mut bundles, &mut port_out);
                for &(port, d) in &port_out {
                    self.c.requests += 1;
                    if self.message_ok(s, d as usize, e) {
                        let w = bundles.iter().find(|b| b.0 == d).map_or(0, |b| b.2);
                        p.port_requests.push((s as u32, port, d, w));
                        any = true;
                    } else {
                        self.c.requests_lost += 1;
                    }
                }
                continue;
            }
            // Destinations in index order so every request list stays sorted
            // by source (s ascends in the outer loop).
            for k in 0..self.active[s].len() {
                let d = self.active[s][k] as usize;
                let pair = s * n + d;
                let relayed = if self.relay {
                    self.relay_bytes[pair]
                } else {
                    0
                };
                if self.pq[pair].bytes + relayed <= self.threshold {
                    continue;
                }
                self.c.requests += 1;
                if !self.message_ok(s, d, e) {
                    self.c.requests_lost += 1;
                    continue;
                }
                let weight = self.weight(s, d, now);
                if self.stateful {
                    // The request reports what arrived since the last one.
                    self.demand[d * n + s] += self.new_bytes[pair] as i64;
                    self.new_bytes[pair] = 0;
                }
                p.requests[d].push(Request {
                    src: s as u32,
                    weight,
                });
                any = true;
                if self.relay {
                    marked[d] = true;
                }
            }
            if self.relay {
                any |= self.relay_requests(p, s, e, &mut marked);
            }
        }
        if self.relay {
            p.relay.sort_unstable();
        }
        p.busy = any;
    }

    /// Relay (thin-clos, App. A.2.2) REQUESTs of source `s`: requests for the
    /// data it holds as an intermediate (destinations without own data), then
    /// relay requests for its elephant queues. `marked` has the ToRs `s`
    /// already requests; it is left cleared.
    fn relay_requests(&mut self, p: &mut Process, s: usize, e: u64, marked: &mut [bool]) -> bool {
        let n = self.l.n;
        let mut any = false;
        for k in 0..self.relay_active[s].len() {
            let d = self.relay_active[s][k] as usize;
            let pair = s * n + d;
            if self.pq[pair].bytes > 0 || self.relay_bytes[pair] <= self.threshold {
                continue; // with own data: requested above
            }
            self.c.requests += 1;
            p.requests[d].push(Request {
                src: s as u32,
                weight: 0,
            });
            marked[d] = true;
            any = true;
        }
        let sch = self.l.thin.clone().expect("relay is thin-clos only");
        let mut loaded = vec![false; self.l.s];
        for &d in &self.active[s] {
            if self.pq[s * n + d as usize].bytes > self.relay_threshold {
                loaded[sch.link(s, d as usize).0] = true;
            }
        }
        let mut out = std::mem::take(&mut self.relay_out);
        for k in 0..self.active[s].len() {
            let d = self.active[s][k] as usize;
            if self.low_bytes[s * n + d] < self.relay_threshold {
                continue;
            }
            let port_to = |m: usize| sch.link(s, m).0;
            let direct = |m: usize| marked[m];
            relay_candidates(
                n,
                s,
                d,
                &port_to,
                &loaded,
                &direct,
                self.relay_fanout,
                (e as usize + s) % n,
                &mut out,
            );
            for &m in &out {
                marked[m as usize] = true;
                self.c.relay_requests += 1;
                p.requests[m as usize].push(Request {
                    src: s as u32,
                    weight: 0,
                });
                p.relay.push((s as u32, m, d as u32));
                any = true;
            }
        }
        self.relay_out = out;
        marked.fill(false);
        any
    }

    fn step_grant(&mut self, p: &mut Process, e: u64, now: SimTime) {
        let (n, sp) = (self.l.n, self.l.s);
        p.grants.clear();
        p.granted_ports.fill(0);
        let port_cap = self.l.sched_slots as u64 * self.l.sched_payload;
        // Ports a destination may not grant: known failures (both sides) and
        // the receiver limit. Marked busy in the matching for this step.
        const BLOCK: u32 = u32::MAX - 1;
        let mut blocked: Vec<usize> = Vec::new();
        let mut blocked_src: Vec<usize> = Vec::new();
        if self.any_failure {
            for i in 0..n * sp {
                if self.ingress_known[i] && p.m.dst[i] == FREE {
                    p.m.dst[i] = BLOCK;
                    blocked.push(i);
                }
                if self.egress_known[i] && p.m.src[i] == FREE {
                    p.m.src[i] = BLOCK;
                    blocked_src.push(i);
                }
            }
        }
        let limited = self.l.receiver_buffer > 0;
        if limited {
            let arrive = self.clock.start(p.data_epoch) + self.l.pre_len + self.l.propagation;
            let tor_rate = Rate(self.l.host_rate.0 * self.l.servers_per_rack as u64);
            let drain = tor_rate.bytes_in(arrive.saturating_sub(now));
            for d in 0..n {
                let has_requests = match self.algorithm {
                    Algorithm::Negotiator => !p.requests[d].is_empty(),
                    Algorithm::Projector => true,
                };
                if !has_requests {
                    continue;
                }
                let used = self.host_backlog[d] + self.promised[d];
                let credit = (self.l.receiver_buffer + drain).saturating_sub(used);
                let allowed = (credit / port_cap.max(1)) as usize;
                let free: Vec<usize> = (0..sp).filter(|&q| p.m.dst[d * sp + q] == FREE).collect();
                if allowed < free.len() {
                    let r = (e % sp as u64) as usize;
                    for &q in free
                        .iter()
                        .cycle()
                        .skip(r)
                        .skip(allowed)
                        .take(free.len() - allowed)
                    {
                        p.m.dst[d * sp + q] = BLOCK;
                        blocked.push(d * sp + q);
                    }
                    self.c.ports_withheld += (free.len() - allowed) as u64;
                }
            }
        }
        if self.relay && !p.relay.is_empty() {
            // The intermediates' part of relay: a candidate refuses when its
            // relay queue for the destination lacks room for one port's
            // scheduled phase, or its own egress port towards the destination
            // carries high-volume direct traffic.
            let relay = std::mem::take(&mut p.relay);
            let mut kept = Vec::with_capacity(relay.len());
            for &(s, m, d) in &relay {
                let (mu, du) = (m as usize, d as usize);
                let room = self.relay_bytes[mu * n + du] + port_cap <= self.relay_buffer;
                if room && !self.relay_port_loaded(mu, du) {
                    kept.push((s, m, d));
                } else {
                    self.c.relay_refused += 1;
                    let r = &mut p.requests[mu];
                    if let Ok(i) = r.binary_search_by_key(&s, |q| q.src) {
                        r.remove(i);
                    }
                }
            }
            p.relay = kept;
        }
        let mut out = std::mem::take(&mut p.grants);
        match self.algorithm {
            Algorithm::Negotiator => {
                let weighted = self.requests_kind != RequestKind::Binary;
                let demand = &mut self.demand;
                let stateful = self.stateful;
                let reserved = &mut p.reserved;
                reserved.clear();
                let mut allow = |d: u32, s: u32| -> bool {
                    if !stateful {
                        return true;
                    }
                    // A grant covers up to one port's scheduled phase of the
                    // pending data: the matrix never goes below zero (a
                    // 500 B request must not hide the next 33 KB of demand).
                    let x = &mut demand[d as usize * n + s as usize];
                    if *x > 0 {
                        let take = (*x as u64).min(port_cap);
                        *x -= take as i64;
                        reserved.push((d, s, take));
                        true
                    } else {
                        false
                    }
                };
                grant(
                    &self.l.net,
                    &p.requests,
                    &p.m,
                    &mut self.rings,
                    weighted,
                    &mut allow,
                    &mut self.scratch,
                    &mut out,
                );
            }
            Algorithm::Projector => {
                let m = &p.m;
                let net = &self.l.net;
                p.port_requests.retain(|r| {
                    let q = net.dst_port(r.0 as usize, r.2 as usize, r.1 as usize);
                    q.is_some_and(|q| m.dst[r.2 as usize * sp + q] == FREE)
                        && m.src[r.0 as usize * sp + r.1 as usize] == FREE
                });
                projector_grant(&self.l.net, &mut p.port_requests, &mut self.rings, &mut out);
            }
        }
        for i in blocked {
            p.m.dst[i] = FREE;
        }
        for i in blocked_src {
            p.m.src[i] = FREE;
        }
        for g in &out {
            p.granted_ports[g.dst as usize] += 1;
            self.promised[g.dst as usize] += port_cap;
        }
        self.c.grants += out.len() as u64;
        // Grants travel back on d → s predefined links.
        let before = out.len();
        if self.any_failure {
            out.retain(|g| self.message_ok(g.dst as usize, g.src as usize, e));
        }
        self.c.grants_lost += (before - out.len()) as u64;
        p.busy = !out.is_empty() || before > 0;
        p.grants = out;
    }

    fn step_accept(&mut self, p: &mut Process, now: SimTime, last_round: bool) {
        let (n, sp) = (self.l.n, self.l.s);
        let port_cap = self.l.sched_slots as u64 * self.l.sched_payload;
        let mut acc = Vec::new();
        let grants = std::mem::take(&mut p.grants);
        match self.algorithm {
            Algorithm::Negotiator => {
                let kind = self.requests_kind;
                if kind == RequestKind::Binary && self.relay && !p.relay.is_empty() {
                    // Direct traffic first; relay grants only on the ports
                    // left free (App. A.2.2 ③).
                    let relay = &p.relay;
                    let (relay_g, direct_g): (Vec<Grant>, Vec<Grant>) =
                        grants.iter().partition(|g| {
                            relay
                                .binary_search_by(|r| (r.0, r.1).cmp(&(g.src, g.dst)))
                                .is_ok()
                        });
                    accept(
                        &self.l.net,
                        &direct_g,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                    let m = &p.m;
                    let relay_g: Vec<Grant> = relay_g
                        .into_iter()
                        .filter(|g| {
                            m.src[g.src as usize * sp + g.src_port as usize] == FREE
                                && m.dst[g.dst as usize * sp + g.dst_port as usize] == FREE
                        })
                        .collect();
                    let before = acc.len();
                    accept(
                        &self.l.net,
                        &relay_g,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                    self.c.relay_accepts += (acc.len() - before) as u64;
                } else if kind == RequestKind::Binary {
                    accept(
                        &self.l.net,
                        &grants,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                } else {
                    for g in &grants {
                        let (gs, gd) = (g.src as usize, g.dst as usize);
                        self.pair_weight[gs * n + gd] = self.weight(gs, gd, now);
                    }
                    let w = &self.pair_weight;
                    let lookup = |s: u32, d: u32| -> u64 { w[s as usize * n + d as usize] };
                    accept(
                        &self.l.net,
                        &grants,
                        &mut p.m,
                        &mut self.rings,
                        Some(&lookup),
                        &mut self.scratch,
                        &mut acc,
                    );
                }
            }
            Algorithm::Projector => {
                for g in &grants {
                    let (i, j) = (
                        g.src as usize * sp + g.src_port as usize,
                        g.dst as usize * sp + g.dst_port as usize,
                    );
                    if p.m.src[i] == FREE && p.m.dst[j] == FREE {
                        p.m.src[i] = g.dst;
                        p.m.dst[j] = g.src;
                        acc.push(*g);
                    }
                }
            }
        }
        self.c.accepts += acc.len() as u64;
        if !grants.is_empty() && p.step < 3 {
            self.ratios.push(acc.len() as f32 / grants.len() as f32);
        }
        if self.stateful && !p.reserved.is_empty() {
            // Rejected grants (and grants lost on the way) revert the matrix
            // when the ACCEPT message reaches the destination: per pair, the
            // accepted ports keep up to one port's capacity each of what
            // its grants took, the rest goes back.
            let mut taken = std::mem::take(&mut p.reserved);
            taken.sort_unstable_by_key(|r| (r.0, r.1));
            let mut accepted: Vec<(u32, u32)> = grants
                .iter()
                .filter(|g| p.m.src[g.src as usize * sp + g.src_port as usize] == g.dst)
                .map(|g| (g.dst, g.src))
                .collect();
            accepted.sort_unstable();
            let mut i = 0;
            while i < taken.len() {
                let (d, s) = (taken[i].0, taken[i].1);
                let mut sum = 0u64;
                while i < taken.len() && (taken[i].0, taken[i].1) == (d, s) {
                    sum += taken[i].2;
                    i += 1;
                }
                let lo = accepted.partition_point(|&x| x < (d, s));
                let hi = accepted.partition_point(|&x| x <= (d, s));
                let kept = sum.min((hi - lo) as u64 * port_cap);
                self.demand[d as usize * n + s as usize] += (sum - kept) as i64;
            }
            taken.clear();
            p.reserved = taken;
        }
        // The destination's promise: granted ports become accepted ports
        // (consumed slot by slot in the data epoch's scheduled phase).
        for d in 0..n {
            self.promised[d] -= p.granted_ports[d] as u64 * port_cap;
        }
        for a in &acc {
            self.promised[a.dst as usize] += port_cap;
        }
        if last_round {
            self.matched.clear();
            for s in 0..n {
                for x in 0..sp {
                    let d = p.m.src[s * sp + x];
                    if d != FREE {
                        let q = self
                            .l
                            .net
                            .dst_port(s, d as usize, x)
                            .expect("a matched port reaches its destination");
                        self.matched.push((s as u32, x as u32, d, q as u32));
                    }
                }
            }
            // Runs of one pair, in the order of their lowest port (a relay
            // match carries the data of its final destination, kept in
            // `run_relay`).
            self.runs.clear();
            self.run_relay.clear();
            let mut i = 0;
            while i < self.matched.len() {
                let (s, _, _, _) = self.matched[i];
                let mut j = i;
                while j < self.matched.len() && self.matched[j].0 == s {
                    j += 1;
                }
                let first = self.runs.len();
                for k in i..j {
                    let d = self.matched[k].2;
                    let target = if self.relay {
                        p.relay
                            .binary_search_by(|r| (r.0, r.1).cmp(&(s, d)))
                            .map_or(FREE, |x| p.relay[x].2)
                    } else {
                        FREE
                    };
                    if let Some(r) = (first..self.runs.len()).find(|&r| self.runs[r].1 == d) {
                        self.runs[r].2 += 1;
                    } else {
                        self.runs.push((s, d, 1));
                        self.run_relay.push(target);
                    }
                }
                i = j;
            }
            self.matched_epoch = p.data_epoch;
        }
        p.grants = grants;
        p.grants.clear();
        p.busy = p.busy || !acc.is_empty();
    }

    /// Everything that happens at the start of epoch `e`.
    fn epoch_start(&mut self, e: u64, now: SimTime) {
        self.c.epochs += 1;
        if self.any_failure {
            self.apply_failures(now, e);
        }
        if self.ring_init == RingInit::EveryEpoch {
            self.rings.randomize(&self.l.net, &mut self.rng);
        }
        // Last epoch's matched ports are done.
        self.matched.clear();
        self.runs.clear();
        let rounds = self.l.iterations;
        let k = self.l.k;
        let mut procs = std::mem::take(&mut self.procs);
        // Processes whose data epoch passed while the fabric idled.
        while procs.front().is_some_and(|p| p.data_epoch < e) {
            let p = procs.pop_front().expect("front");
            self.spare.push(p);
        }
        let start = self.new_process(e, e + (3 * rounds as u64 - 1) * k);
        procs.push_back(start);
        for p in procs.iter_mut() {
            if !(e - p.start_epoch).is_multiple_of(k) {
                continue;
            }
            let step = ((e - p.start_epoch) / k) as usize;
            if step >= 3 * rounds {
                continue;
            }
            p.step = step;
            let round = step / 3;
            match step % 3 {
                0 => self.step_request(p, e, now, round),
                1 => self.step_grant(p, e, now),
                _ => self.step_accept(p, now, round + 1 == rounds),
            }
        }
        while let Some(p) = procs.front() {
            if p.data_epoch <= e {
                let p = procs.pop_front().expect("front");
                self.spare.push(p);
            } else {
                break;
            }
        }
        self.procs = procs;
        // Queue occupancy sample (per ToR, averaged over ToRs).
        self.c.queue_samples += 1;
        self.c.queue_sum += self.queued as f64 / self.l.n as f64;
    }

    fn apply_failures(&mut self, now: SimTime, e: u64) {
        let sp = self.l.s;
        while let Some(&(at, tor, port, side, down)) = self.events.last() {
            if at > now {
                break;
            }
            self.events.pop();
            let i = tor as usize * sp + port as usize;
            let egress = side == LinkSide::Egress;
            if egress {
                self.egress_down[i] = down;
            } else {
                self.ingress_down[i] = down;
            }
            let delay = self.detect + if egress { self.l.k } else { 0 };
            self.detections.push((e + delay, i, egress, down));
        }
        let mut k = 0;
        while k < self.detections.len() {
            let (when, i, egress, down) = self.detections[k];
            if when <= e {
                if egress {
                    self.egress_known[i] = down;
                } else {
                    self.ingress_known[i] = down;
                }
                self.detections.swap_remove(k);
            } else {
                k += 1;
            }
        }
    }

    fn predefined_slot(&mut self, g: u64, j: usize, e: u64, now: SimTime) {
        if !self.l.piggyback {
            return;
        }
        let end = now + self.l.pre_slot;
        let (n, sp) = (self.l.n, self.l.s);
        // Two passes per block of sources: first the links whose queue holds
        // data (a tight loop of independent loads, so the memory system
        // fetches them in parallel), then the packets, in the same order
        // (a take changes only its own source's queues). Blocks of about 128
        // links keep the pair queues of the first pass in L1 for the second.
        let mut links = std::mem::take(&mut self.pre_links);
        let block = (128 / sp).max(1);
        // The parallel network links `s`'s ports in slot j to the ToRs at
        // offsets o0 .. o0 + S (cyclically): their data bits are S
        // consecutive bits of the source's row, read at once.
        let o0 = 1 + j * sp;
        let bits = self.l.thin.is_none() && sp <= 64;
        let r = if self.rotate {
            (e % sp as u64) as usize
        } else {
            0
        };
        let mut s0 = 0;
        while s0 < n {
            let s1 = (s0 + block).min(n);
            links.clear();
            for s in s0..s1 {
                if self.tor_bytes[s] == 0 {
                    continue;
                }
                if bits {
                    let mut ports = pre_ports(&self.has_data, n, sp, s, j, r);
                    while ports != 0 {
                        let p = ports.trailing_zeros() as usize;
                        ports &= ports - 1;
                        let o = o0 + (p + r) % sp;
                        let d = if s + o >= n { s + o - n } else { s + o };
                        debug_assert_eq!(self.pre_dest(s, p, j, e), Some((d, p)));
                        links.push((s as u32, p as u32, d as u32, p as u32));
                    }
                    continue;
                }
                for p in 0..sp {
                    let Some((d, q)) = self.pre_dest(s, p, j, e) else {
                        continue;
                    };
                    let pair = s * n + d;
                    if self.has_data[pair / 64] & (1 << (pair % 64)) != 0 {
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
            {
                if self.any_failure
                    && (self.egress_known[s * sp + p] || self.ingress_known[d * sp + q])
                {
                    continue; // known failed: keep the data for working links
                }
                let Some(pkt) = self.take(s, d, payload, 1) else {
                    continue;
                };
                if self.check {
                    let key = d * sp + q;
                    if self.rx_seen[key] == g {
                        self.c.contention += 1;
                    }
                    self.rx_seen[key] = g;
                }
                let lost = self.any_failure
                    && (self.egress_down[s * sp + p] || self.ingress_down[d * sp + q]);
                self.c.piggyback_bytes += pkt.bytes;
                self.send(s, d, pkt, end, lost);
            }
        }
    }

    fn scheduled_slot(&mut self, g: u64, now: SimTime) {
        let end = now + self.l.sched_slot;
        let sp = self.l.s;
        let payload = self.l.sched_payload;
        self.c.matched_port_slots += self.matched.len() as u64;
        if self.check {
            for &(_, _, d, q) in &self.matched {
                let key = d as usize * sp + q as usize;
                if self.rx_seen[key] == g {
                    self.c.contention += 1;
                }
                self.rx_seen[key] = g;
            }
        }
        if self.any_failure {
            // Port by port: each port's links may have failed.
            for k in 0..self.matched.len() {
                let (s, x, d, q) = self.matched[k];
                let (s, x, d, q) = (s as usize, x as usize, d as usize, q as usize);
                self.promised[d] = self.promised[d].saturating_sub(payload);
                let Some(pkt) = self.take(s, d, payload, 1) else {
                    continue;
                };
                let lost = self.egress_down[s * sp + x] || self.ingress_down[d * sp + q];
                self.c.used_port_slots += 1;
                self.c.scheduled_bytes += pkt.bytes;
                self.send(s, d, pkt, end, lost);
            }
            return;
        }
        // A pair's ports take consecutive packets of its queue in one go.
        for k in 0..self.runs.len() {
            let (s, d, ports) = self.runs[k];
            let (s, d) = (s as usize, d as usize);
            let mut left = ports as u64;
            self.promised[d] = self.promised[d].saturating_sub(payload * left);
            if self.relay && self.run_relay[k] != FREE {
                // First hop of relayed elephant data: s → intermediate d.
                let target = self.run_relay[k];
                while left > 0 {
                    let Some(pkt) = self.take_low(s, target as usize, payload, left) else {
                        break;
                    };
                    left -= pkt.packets;
                    self.c.used_port_slots += pkt.packets;
                    self.c.scheduled_bytes += pkt.bytes;
                    self.c.relayed_bytes += pkt.bytes;
                    // Queued again at the intermediate: not yet sent.
                    self.flows[pkt.flow as usize].unsent += 1;
                    self.relay_flight_bytes += pkt.bytes;
                    let at = end + self.l.propagation;
                    debug_assert!(self.relay_flight.back().is_none_or(|b| b.0 <= at));
                    self.relay_flight
                        .push_back((at, (d as u32, target, pkt.flow, pkt.bytes)));
                }
                continue;
            }
            while left > 0 {
                let pkt = match self.take(s, d, payload, left) {
                    Some(pkt) => pkt,
                    None if self.relay => match self.take_relayed(s, d, payload, left) {
                        Some(pkt) => pkt,
                        None => break,
                    },
                    None => break,
                };
                left -= pkt.packets;
                self.c.used_port_slots += pkt.packets;
                self.c.scheduled_bytes += pkt.bytes;
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
        self.host.len()
    }
    fn host_rate(&self) -> Rate {
        self.l.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        let spr = self.l.servers_per_rack as u32;
        let (st, dt) = (flow.src / spr, flow.dst / spr);
        debug_assert_eq!(flow.id as usize, self.flows.len());
        self.flows.push(FlowSt {
            dst_ep: flow.dst,
            unsent: 0,
            bytes: flow.bytes,
            start: now,
            tor_done: SimTime::MAX,
        });
        self.latest = self.latest.max(now);
        self.added_bytes += flow.bytes;
        if flow.bytes == 0 {
            self.flows.last_mut().expect("pushed").tor_done = now;
            rec.complete(flow.id, now);
            return;
        }
        if st == dt {
            // Within a rack: straight to the destination's host-facing queue.
            self.host_enqueue(now, flow.id, flow.dst, flow.bytes, true);
            return;
        }
        let (s, d) = (st as usize, dt as usize);
        let mut lo = 0u64;
        for prio in 0..self.prios {
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
                self.flows[flow.id as usize].unsent += 1;
                self.push_seg(s, d, prio, seg, false);
                lo = hi;
            }
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        if !self.busy() {
            return None;
        }
        let after = self.last.map_or(0, |g| g + 1);
        let g = after.max(self.slot_at_or_after(self.latest));
        Some(self.slot_time(g))
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let g = self.slot_at_or_after(now);
        debug_assert_eq!(self.slot_time(g), now, "advance only at slot boundaries");
        self.c.slots += 1;
        rec.count_internal_events(1);
        self.deliver_until(now, rec);
        let per = self.slots_per_epoch();
        let (e, j) = (g / per, (g % per) as usize);
        if j == 0 {
            self.epoch_start(e, now);
        } else if self.matched_epoch != e && !self.matched.is_empty() {
            // Resumed mid-epoch after a skipped epoch boundary: nothing matched.
            self.matched.clear();
        }
        if j < self.l.pre_slots {
            self.predefined_slot(g, j, e, now);
        } else if self.matched_epoch == e {
            self.scheduled_slot(g, now);
        }
        self.last = Some(g);
        self.latest = now;
    }

    fn finish(&mut self, end: SimTime, rec: &mut Recorder) {
        self.end = end;
        self.deliver_until(end, rec);
    }

    fn stats(&self) -> FabricStats {
        let l = &self.l;
        let c = &self.c;
        let mut r = self.ratios.clone();
        r.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        let pct = |p: f64| -> f64 {
            if r.is_empty() {
                return f64::NAN;
            }
            let i = ((p / 100.0) * (r.len() - 1) as f64).round() as usize;
            r[i] as f64
        };
        let rows: Vec<(&str, f64)> = vec![
            ("tors", l.n as f64),
            ("ports", l.s as f64),
            ("speedup", l.speedup()),
            ("epoch_ns", l.epoch.0 as f64 / 1e3),
            ("predefined_slots", l.pre_slots as f64),
            ("scheduled_slots", l.sched_slots as f64),
            ("piggyback_payload_bytes", l.pre_payload as f64),
            ("scheduled_payload_bytes", l.sched_payload as f64),
            ("pipeline_step_epochs", l.k as f64),
            ("slots_simulated", c.slots as f64),
            ("epochs_simulated", c.epochs as f64),
            ("requests", c.requests as f64),
            ("grants", c.grants as f64),
            ("accepts", c.accepts as f64),
            (
                "match_ratio",
                if c.grants > 0 {
                    c.accepts as f64 / c.grants as f64
                } else {
                    f64::NAN
                },
            ),
            ("match_ratio_epoch_p5", pct(5.0)),
            ("match_ratio_epoch_p50", pct(50.0)),
            ("match_ratio_epoch_p95", pct(95.0)),
            ("ports_withheld_by_receiver_limit", c.ports_withheld as f64),
            ("piggyback_bytes", c.piggyback_bytes as f64),
            ("scheduled_bytes", c.scheduled_bytes as f64),
            (
                "scheduled_port_slot_use",
                if c.matched_port_slots > 0 {
                    c.used_port_slots as f64 / c.matched_port_slots as f64
                } else {
                    f64::NAN
                },
            ),
            ("peak_tor_queue_bytes", c.peak_tor_queue as f64),
            (
                "mean_tor_queue_bytes",
                if c.queue_samples > 0 {
                    c.queue_sum / c.queue_samples as f64
                } else {
                    0.0
                },
            ),
            (
                "peak_host_queue_bytes",
                l.host_rate.bytes_in(SimTime(c.peak_host_queue)) as f64,
            ),
            ("requests_lost", c.requests_lost as f64),
            ("grants_lost", c.grants_lost as f64),
            ("packets_lost", c.packets_lost as f64),
            ("bytes_retransmitted", c.bytes_lost as f64),
            ("contention_violations", c.contention as f64),
            ("relay_requests", c.relay_requests as f64),
            ("relay_refused_by_intermediate", c.relay_refused as f64),
            ("relay_accepts", c.relay_accepts as f64),
            ("relayed_bytes", c.relayed_bytes as f64),
            (
                "failure_window_goodput_ratio",
                if self.bytes_before_failure > 0 {
                    self.bytes_during_failure as f64 / self.bytes_before_failure as f64
                } else {
                    f64::NAN
                },
            ),
        ];
        let mut rows = rows;
        let (p99, mean, count, unfinished) = self.tor_fct_mice();
        rows.push(("tor_fct_mice_p99_us", p99));
        rows.push(("tor_fct_mice_mean_us", mean));
        rows.push(("tor_fct_mice_count", count));
        rows.push(("tor_fct_mice_unfinished", unfinished));
        rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.at_tor_bytes != self.host_pending + self.delivered_bytes {
            return Err(format!(
                "negotiator: {} B reached destination ToRs but {} B are in host-facing queues or delivered",
                self.at_tor_bytes,
                self.host_pending + self.delivered_bytes
            ));
        }
        let accounted = self.queued
            + self.host_pending
            + self.delivered_bytes
            + self.retransmit_bytes
            + self.relay_flight_bytes;
        if accounted != self.added_bytes {
            return Err(format!(
                "negotiator: {} B offered but {accounted} B accounted for (queued {}, sent {}, delivered {}, to retransmit {})",
                self.added_bytes, self.queued, self.host_pending, self.delivered_bytes, self.retransmit_bytes
            ));
        }
        for (pair, q) in self.pq.iter().enumerate() {
            if (self.has_data[pair / 64] >> (pair % 64) & 1 != 0) != (q.bytes > 0) {
                return Err(format!("negotiator: pair {pair}'s data bit is wrong"));
            }
        }
        if self.c.contention > 0 {
            return Err(format!(
                "negotiator: {} receive ports heard two senders in one slot",
                self.c.contention
            ));
        }
        // The slot's matching: no source port or destination port twice.
        let sp = self.l.s;
        let mut src = vec![false; self.l.n * sp];
        let mut dst = vec![false; self.l.n * sp];
        for &(s, x, d, q) in &self.matched {
            let (i, j) = (s as usize * sp + x as usize, d as usize * sp + q as usize);
            if src[i] || dst[j] {
                return Err(format!(
                    "negotiator: port matched twice ({s}:{x} -> {d}:{q})"
                ));
            }
            src[i] = true;
            dst[j] = true;
        }
        let tor_sum: u64 = self.tor_bytes.iter().sum();
        let pair_sum: u64 =
            self.pq.iter().map(|q| q.bytes).sum::<u64>() + self.relay_bytes.iter().sum::<u64>();
        if tor_sum != self.queued || pair_sum != self.queued {
            return Err(format!(
                "negotiator: queue counters disagree ({tor_sum}, {pair_sum}, {})",
                self.queued
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

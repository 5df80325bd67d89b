//! Mordia: a microsecond optical circuit switch (OCS) scheduled by Traffic
//! Matrix Scheduling (Porter et al., SIGCOMM'13 §2.2–4, §6).
//!
//! # Model
//! * One OCS port per rack (N = `topology.racks` ports) at the rack's uplink
//!   rate R_link = `uplinks × uplink_rate`. The OCS does not buffer: time is a
//!   sequence of *days* (a circuit configuration held stable) separated by
//!   *nights* of `night` (reconfiguration, 11.5 µs measured, §6.1) during which
//!   no port carries anything.
//! * Each host's NIC hands its flows to its ToR one after another at the host
//!   rate R (`topology.host_rate()`), in arrival order (a FIFO NIC, so a host
//!   never injects faster than R); with `host_nic = "per_flow"` every flow
//!   reaches the ToR at R from its start (traffic generated at the ToR, as by
//!   the prototype's emulated ToRs). A byte is at the ToR once it has crossed
//!   the NIC.
//! * Each ToR keeps a VOQ per destination rack (a FIFO of flows) that drains
//!   only while the circuit to that rack is up, in packets of at most
//!   `packet` bytes at R_link, starting `nic_delay` after the day begins (the
//!   prototype's NIC delay, 23.5 µs, §6.2; 0 for an ideal ToR). A packet that
//!   would not finish before the night is held for a later day
//!   (`straddle = "hold"`), or sent, cut by the night and counted lost
//!   (`straddle = "lose"`, as on the prototype; its bytes stay queued).
//!   A packet reaches its destination `latency` after its last bit left.
//! * Intra-rack flows do not touch the OCS (they complete at the host rate
//!   plus `latency`) unless `loopback = true`, in which case they queue in the
//!   ToR's own VOQ and use the loopback circuit, as in the paper's example
//!   schedule (Fig. 2(d)) where the TDM includes the diagonal.
//!
//! # Schedules (variants)
//! * `mordia_rr`: the all-to-all TMS schedule of §3.2 — a week of N−1 equal
//!   days of `day` (N with `loopback`, the identity day first), rack i
//!   connected to rack (i + d + 1) mod N on day d (i + d with loopback).
//! * `mordia`: TMS proper. At the start of every week of `week`, the demand
//!   matrix (bytes queued per rack pair; `demand = "oracle"` reads it at that
//!   instant, `"measured"` uses the VOQ occupancies sampled `control_delay`
//!   weeks earlier) is Sinkhorn-scaled to a doubly stochastic BAM
//!   (`sched::tms::sinkhorn`; idle pairs get a 1e-6 share so that every row
//!   and column can be scaled), decomposed by Birkhoff–von Neumann
//!   (`sched::tms::bvn`), and the days (longest first) get
//!   `weight × (week − days × night)`. Days shorter than `min_day` are dropped
//!   (longest-time-slot-first truncation), and the kept days are stretched to
//!   fill the week; `max_days` > 0 keeps at most that many (the n longest
//!   slots of Table 2). Traffic of pairs left out waits: its demand grows relative
//!   to the served pairs' until it is scheduled — or, with `packet_rate` >
//!   0, it is carried meanwhile by an electrical packet switch, the hybrid
//!   of §3.3. The packet switch also takes, from each pair a kept day
//!   connects, the share of the pair's demand that the dropped days held in
//!   its BAM entry ((BAM − Σ kept weights·P) / BAM, Table 2's "Packet"), at
//!   most that many bytes per week.
//! * The packet switch is a `net::Network` (the substrate of the packet
//!   fabrics, issue 11, as REACToR's EPS): a star of each rack's uplink at
//!   `packet_rate` into one output-queued switch whose port per rack, at
//!   `packet_rate`, reaches it `latency` after a packet's last bit; 1,500 B
//!   packets of flow bytes (no header), paced transport, one net flow per
//!   rack pair that grows as the ToR hands it bytes (`net::ClassFlows`),
//!   buffers large enough that nothing is dropped. The ToR hands it bytes
//!   at the start of every day and whenever a flow's last byte reaches the
//!   ToR: per rack, `packet_rate` × (time to the end of the day's night)
//!   less what its NIC has not sent yet, shared equally by its eligible
//!   backlogged pairs (within their budget), at most that much per
//!   destination; bytes handed over leave the VOQ (circuits never carry
//!   them). A flow completes with its last byte, by either path.
//!
//! # Time stepping
//! One internal event per day boundary while any VOQ holds traffic (plus one
//! event per intra-rack flow): at the end of a day's night, the day's
//! transmissions are worked out packet by packet in a tight loop over ports
//! (packets need no heap events) and delivered — all of them happened at or
//! before that instant because `latency ≤ night`. The packet switch adds
//! its network's events (a packet per hop) and one event per inter-rack
//! flow (its last byte at the ToR). Idle time is skipped: when
//! traffic arrives at an idle fabric the clock jumps to the day that contains
//! the arrival (the schedule is anchored at t = 0).

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

use crate::error::{bad, ConfigError};
use crate::fabric::registry::{BuildContext, FabricModule, FctBounds, ParamTable, Variant};
use crate::fabric::star::PacketStar;
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::net::{ClassFlows, PfcConfig, StarRouter};
use crate::queue::EventQueue;
use crate::recorder::Recorder;
use crate::sched::tms;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Where the TMS scheduler's demand matrix comes from.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Demand {
    /// The bytes queued per rack pair at the instant the week starts.
    Oracle,
    /// VOQ occupancies measured `control_delay` weeks before the week starts.
    Measured,
}

/// How hosts hand their flows' bytes to the ToR.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostNic {
    /// A host's NIC sends its flows one after another at R, in arrival order.
    Fifo,
    /// Every flow reaches the ToR at R from its start, whatever else its host
    /// sends (traffic generated at the ToR, as by the prototype's emulated
    /// ToRs of §5.2, which keep a queue per destination).
    PerFlow,
}

/// What a ToR does with a packet that would not finish before the night.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Straddle {
    /// Hold it for a later day (the link idles until the night).
    Hold,
    /// Send it anyway: the night cuts it and it is lost (counted, as on the
    /// prototype, §6.2); its bytes stay queued and are sent again later.
    Lose,
}

/// Parameters of the Mordia OCS (`fabric = "mordia"` or `"mordia_rr"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MordiaParams {
    /// Reconfiguration time between days, during which no port carries
    /// traffic (§6.1 measures 11.5 µs end to end).
    pub night: SimTime,
    /// `mordia_rr`: length of every day (the stable part of a slot; §6.2 uses
    /// 123.5 µs, Fig. 10 sweeps slots of 61–300 µs).
    pub day: SimTime,
    /// `mordia_rr`: include the loopback day (rack i to itself), carrying
    /// intra-rack traffic through the OCS as in the paper's Fig. 2(d)/Fig. 4.
    pub loopback: bool,
    /// `mordia`: length of a week (one schedule), nights included; "0s" =
    /// (N − 1) × (day + night), the round-robin week.
    pub week: SimTime,
    /// `mordia`: days shorter than this are dropped from a week (the
    /// prototype's shortest slot is 61 µs, §6.3).
    pub min_day: SimTime,
    /// `mordia`: keep at most this many days per week, the longest
    /// (longest-time-slot-first truncation to n slots, §3.3 / Table 2);
    /// 0 = no limit (only `min_day` truncates).
    pub max_days: u32,
    /// `mordia`: "oracle" or "measured" demand.
    pub demand: Demand,
    /// `mordia` with measured demand: weeks between measuring the VOQs and
    /// using the measurement (the control-loop delay, ≥ 1).
    pub control_delay: u32,
    /// Largest packet a ToR puts on a circuit (the prototype sends 9,000 B
    /// jumbo frames, §6.2).
    pub packet: ByteSize,
    /// Time after a day begins before the ToR's NIC starts sending (the
    /// prototype's 23.5 µs NIC delay, §6.3; 0 for an ideal ToR).
    pub nic_delay: SimTime,
    /// From a packet's last bit leaving the ToR to its arrival; at most `night`.
    pub latency: SimTime,
    /// "fifo" (a host's flows cross its NIC one after another at R) or
    /// "per_flow" (each flow reaches the ToR at R, as from the prototype's
    /// emulated ToRs).
    pub host_nic: HostNic,
    /// `mordia`: per-rack uplink to an electrical packet switch (a
    /// `net::Network` star) for the traffic the truncated week leaves off
    /// the circuits (§3.3: the pairs of the dropped slots); "0bps" = no
    /// packet switch (that traffic waits for a week that schedules it).
    pub packet_rate: Rate,
    /// A packet that would straddle the night: "hold" it for a later day or
    /// "lose" it (sent, cut by the night, counted in `lost_packets`, resent).
    pub straddle: Straddle,
    /// Rack whose VOQs `probe_day` samples (statistic `probe_voq_bytes`).
    pub probe_rack: u32,
    /// Day boundary (counted from t = 0) at which the probe samples the VOQs
    /// (Fig. 4); the statistic `probe_voq_units` divides by the bytes one
    /// host sends in a slot (day + night) at R.
    pub probe_day: u32,
}

impl Default for MordiaParams {
    fn default() -> Self {
        MordiaParams {
            night: SimTime::ns(11_500),
            day: SimTime::ns(94_500),
            loopback: false,
            week: SimTime::ZERO,
            min_day: SimTime::us(20),
            max_days: 0,
            demand: Demand::Oracle,
            control_delay: 1,
            packet: ByteSize(1500),
            nic_delay: SimTime::ZERO,
            latency: SimTime::ns(500),
            host_nic: HostNic::Fifo,
            straddle: Straddle::Hold,
            packet_rate: Rate(0),
            probe_rack: 0,
            probe_day: 0,
        }
    }
}

impl ParamTable for MordiaParams {
    const TABLE: &'static str = "mordia";
}

/// Registration of the Mordia OCS.
pub struct MordiaModule;

const VARIANTS: &[Variant] = &[
    Variant {
        name: "mordia",
        label: "Mordia (TMS)",
        description: "Mordia microsecond OCS (11.5 us nights) with Traffic Matrix Scheduling: Sinkhorn + BvN weeks from the queued demand, VOQs at ToRs (SIGCOMM'13)",
    },
    Variant {
        name: "mordia_rr",
        label: "Mordia (round-robin)",
        description: "Mordia microsecond OCS with the all-to-all TMS schedule: N-1 equal days, VOQs at ToRs (SIGCOMM'13 §3.2, §6)",
    },
];

impl MordiaParams {
    /// The TMS week for `n` racks.
    pub fn week_len(&self, n: u64) -> SimTime {
        if self.week == SimTime::ZERO {
            (self.day + self.night) * n.saturating_sub(1).max(1)
        } else {
            self.week
        }
    }
    /// Checks the keys every variant uses, and with `v` that variant's own
    /// (`day` for `mordia_rr`; `week`, `min_day`, `control_delay` for `mordia`).
    fn check(&self, v: Option<&Variant>, ctx: &BuildContext) -> Result<(), ConfigError> {
        let t = ctx.topology;
        let link = t.rack_uplink_rate();
        if self.packet.0 == 0 {
            return Err(bad(
                MordiaParams::TABLE,
                "packet",
                "0B",
                "a packet must carry at least one byte",
            ));
        }
        if self.latency > self.night {
            return Err(bad(MordiaParams::TABLE,
                "latency",
                self.latency,
                format!("must not exceed the night ({}): a day's packets are delivered by the end of its night", self.night),
            ));
        }
        if t.racks < 2 {
            return Err(ConfigError::new(
                "topology.racks",
                t.racks,
                "an OCS needs at least two racks",
            ));
        }
        if self.packet_rate > link {
            return Err(bad(
                MordiaParams::TABLE,
                "packet_rate",
                self.packet_rate,
                format!(
                    "the packet-switch uplink must not exceed the rack's OCS port ({} b/s)",
                    link.0
                ),
            ));
        }
        let Some(v) = v else { return Ok(()) };
        if v.name == "mordia_rr" {
            if self.day <= self.nic_delay || self.day - self.nic_delay < link.tx_time(self.packet.0)
            {
                return Err(bad(
                    MordiaParams::TABLE,
                    "day",
                    self.day,
                    format!(
                        "a day must hold the NIC delay ({}) plus one {} B packet at {} Gbps",
                        self.nic_delay,
                        self.packet.0,
                        link.as_f64() / 1e9
                    ),
                ));
            }
        } else {
            if self.control_delay == 0 && self.demand == Demand::Measured {
                return Err(bad(
                    MordiaParams::TABLE,
                    "control_delay",
                    0,
                    "measured demand is at least one week old",
                ));
            }
            if self.control_delay > 1000 {
                return Err(bad(
                    MordiaParams::TABLE,
                    "control_delay",
                    self.control_delay,
                    "at most 1000 weeks",
                ));
            }
            if self.min_day <= self.nic_delay
                || self.min_day - self.nic_delay < link.tx_time(self.packet.0)
            {
                return Err(bad(
                    MordiaParams::TABLE,
                    "min_day",
                    self.min_day,
                    "the shortest day must hold the NIC delay plus one packet",
                ));
            }
            let week = self.week_len(t.racks as u64);
            let rr_day = week.0 / (t.racks as u64 - 1).max(1);
            let need = (self.night + self.nic_delay + link.tx_time(self.packet.0)).0;
            if self.min_day + self.night > week || rr_day < need {
                return Err(bad(MordiaParams::TABLE,
                    "week",
                    self.week,
                    format!(
                        "days do not fit: the week must hold one day of min_day ({}) plus a night ({}), and N − 1 = {} days each with a night, the NIC delay and one packet",
                        self.min_day, self.night, t.racks.saturating_sub(1)
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl FabricModule for MordiaModule {
    type Params = MordiaParams;
    const VARIANTS: &'static [Variant] = VARIANTS;

    fn layout(p: &MordiaParams, ctx: &BuildContext) -> Result<(), ConfigError> {
        // The keys every variant uses; `build` checks the variant's own.
        p.check(None, ctx)
    }

    fn build(
        p: MordiaParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        p.check(Some(v), ctx)?;
        Ok(Box::new(Mordia::new(&p, v.name == "mordia", ctx)))
    }

    /// A lone flow: its bytes cross the host NIC at R (at least bytes/R plus
    /// the latency). Round-robin: it then waits at most one week for its day
    /// and needs at most ⌈bytes / C⌉ days, C = the bytes one day carries;
    /// bound = bytes/R + week·(⌈bytes/C⌉ + 1) + day + night + latency. TMS:
    /// at most `control_delay + 2 + ⌈bytes/C⌉` weeks after the bytes are at
    /// the ToR, C = the bytes a `min_day` carries (a lone pair's demand
    /// dominates the BAM, so it gets a day of at least min_day every week).
    fn lone_flow_fct(
        p: &MordiaParams,
        v: &Variant,
        ctx: &BuildContext,
        src: u32,
        dst: u32,
        bytes: u64,
    ) -> Result<FctBounds, ConfigError> {
        p.check(Some(v), ctx)?;
        let t = ctx.topology;
        let r = t.host_rate();
        let link = t.rack_uplink_rate();
        let at_r = r.tx_time(bytes);
        let min = at_r.saturating_sub(SimTime(1)) + p.latency;
        let intra = t.rack_of(src) == t.rack_of(dst);
        if intra && !(v.name == "mordia_rr" && p.loopback) {
            return Ok(FctBounds {
                min,
                max: at_r + p.latency + SimTime(1),
            });
        }
        let per_pkt = link.tx_time(p.packet.0);
        let day_bytes = |d: SimTime| ((d - p.nic_delay).0 / per_pkt.0) * p.packet.0;
        let max = if v.name == "mordia_rr" {
            let n = t.racks as u64 - if p.loopback { 0 } else { 1 };
            let week = (p.day + p.night) * n;
            at_r + week * (bytes.div_ceil(day_bytes(p.day)) + 1) + p.day + p.night + p.latency
        } else {
            let n = t.racks as u64;
            let rr_day = p.week_len(n).0 / (n - 1).max(1) - p.night.0;
            let c = day_bytes(p.min_day).min(day_bytes(SimTime(rr_day)));
            let weeks = p.control_delay as u64 + 2 + bytes.div_ceil(c);
            at_r + p.week_len(t.racks as u64) * weeks + p.latency
        };
        Ok(FctBounds { min, max })
    }
}

/// Payload bytes of a packet-switch packet (no header: the switch carries
/// `packet_rate` of flow bytes).
const PS_PACKET: u32 = 1_500;

/// The packet switch: a star of the n racks' uplinks at `packet_rate`
/// into one switch whose port per rack, at `packet_rate`, reaches the rack
/// `latency` after a packet's last bit; buffers large enough that the
/// per-day release never overflows them (lossless; PFC never pauses, but
/// paced sending needs queued ports).
fn packet_switch(p: &MordiaParams, n: usize, seed: u64) -> ClassFlows<StarRouter> {
    PacketStar {
        n: n as u32,
        uplink: p.packet_rate,
        port: p.packet_rate,
        downlink: None,
        latency: p.latency,
        tiers: &["ps_up", "ps_port"],
        payload: PS_PACKET,
        buffer: 1 << 50,
        pfc: PfcConfig {
            xoff: 1 << 49,
            xon: 1 << 48,
            pause_delay: SimTime::ZERO,
            resume_delay: SimTime::ZERO,
        },
        seed,
    }
    .build()
}

struct FlowSt {
    src_rack: u32,
    dst_rack: u32,
    bytes: u64,
    /// Bytes sent on a circuit or handed to the packet switch.
    sent: u64,
    /// When its last delivered byte so far arrived.
    last: SimTime,
    /// When the flow's first byte starts crossing the host NIC.
    nic_start: SimTime,
}

/// Tests: days (start, end of stable part, perm) and circuit packets
/// (src rack, dst rack, first bit, last bit).
#[cfg(test)]
type TestLog = (
    Vec<(SimTime, SimTime, Vec<u32>)>,
    Vec<(usize, usize, SimTime, SimTime)>,
);

struct Day {
    len: SimTime,
    /// perm[src rack] = dst rack, or u32::MAX for no circuit.
    perm: Vec<u32>,
}

/// The Mordia fabric.
pub struct Mordia {
    tms: bool,
    n: usize,
    week_len: SimTime,
    host_rate: Rate,
    link: Rate,
    hosts: usize,
    servers: u32,
    p: MordiaParams,
    flows: Vec<FlowSt>,
    nic_free: Vec<SimTime>,
    voq: Vec<VecDeque<FlowId>>,
    /// Flows waiting in VOQs.
    queued_flows: u64,
    /// Bytes in VOQs not yet sent (including bytes still crossing host NICs).
    queued_bytes: u64,
    intra: EventQueue<FlowId>,
    // The clock.
    active: bool,
    week: Vec<Day>,
    week_start: SimTime,
    day_idx: usize,
    day_start: SimTime,
    /// Global index of the current day since t = 0 (round-robin only; TMS
    /// counts days as they run).
    global_day: u64,
    measured: VecDeque<Vec<f64>>,
    // Statistics.
    days_run: u64,
    packets: u64,
    /// Pairs some day of the current week connects (n × n).
    covered: Vec<bool>,
    /// Bytes per pair the packet switch may take this week from pairs some
    /// kept day connects: their demand times the share of their BAM entry
    /// that the dropped days held (n × n; §3.3).
    packet_budget: Vec<u64>,
    /// The packet switch (`packet_rate` > 0): a `net::Network` star.
    ps: Option<Box<ClassFlows<StarRouter>>>,
    ps_out: Vec<(FlowId, SimTime, u64)>,
    /// When an inter-rack flow's last byte reaches its ToR: the packet
    /// switch may take it then, not only at the next day boundary.
    ps_wake: EventQueue<FlowId>,
    chunks: Vec<(FlowId, u64)>,
    /// Bytes the packet switch delivered.
    packet_bytes: u64,
    held: u64,
    lost: u64,
    lost_bytes: u64,
    sent_in_night: u64,
    circuit_bytes: u64,
    stable_time: u128,
    night_time: u128,
    peak_voq_bytes: u64,
    probe: Option<u64>,
    /// Tests: every day (start, end of its stable part, perm) and every
    /// circuit packet (src rack, dst rack, first bit, last bit).
    #[cfg(test)]
    log: Option<TestLog>,
    weeks_scheduled: u64,
    days_dropped: u64,
    fallback_weeks: u64,
}

impl Mordia {
    fn new(p: &MordiaParams, tms: bool, ctx: &BuildContext) -> Mordia {
        let t = ctx.topology;
        let n = t.racks as usize;
        let mut m = Mordia {
            tms,
            n,
            week_len: p.week_len(n as u64),
            host_rate: t.host_rate(),
            link: t.rack_uplink_rate(),
            hosts: t.hosts(),
            servers: t.servers_per_rack,
            p: p.clone(),
            flows: Vec::new(),
            nic_free: vec![SimTime::ZERO; t.hosts()],
            voq: vec![VecDeque::new(); n * n],
            queued_flows: 0,
            queued_bytes: 0,
            intra: EventQueue::new(),
            active: false,
            week: Vec::new(),
            week_start: SimTime::ZERO,
            day_idx: 0,
            day_start: SimTime::ZERO,
            global_day: 0,
            measured: VecDeque::new(),
            days_run: 0,
            packets: 0,
            covered: vec![true; n * n],
            packet_budget: vec![0; n * n],
            ps: (tms && p.packet_rate.0 > 0).then(|| Box::new(packet_switch(p, n, ctx.seed))),
            ps_out: Vec::new(),
            ps_wake: EventQueue::new(),
            chunks: Vec::new(),
            packet_bytes: 0,
            held: 0,
            lost: 0,
            lost_bytes: 0,
            sent_in_night: 0,
            circuit_bytes: 0,
            stable_time: 0,
            night_time: 0,
            peak_voq_bytes: 0,
            probe: None,
            #[cfg(test)]
            log: None,
            weeks_scheduled: 0,
            days_dropped: 0,
            fallback_weeks: 0,
        };
        if !tms {
            m.week = m.round_robin_week();
        }
        m
    }

    fn round_robin_week(&self) -> Vec<Day> {
        let n = self.n;
        let off = if self.p.loopback { 0 } else { 1 };
        (0..n - off)
            .map(|d| Day {
                len: self.p.day,
                perm: (0..n).map(|i| ((i + d + off) % n) as u32).collect(),
            })
            .collect()
    }

    fn slot(&self) -> SimTime {
        self.p.day + self.p.night
    }

    /// Bytes of flow `f` at its ToR by time `t`.
    fn at_tor(&self, f: &FlowSt, t: SimTime) -> u64 {
        if t <= f.nic_start {
            return 0;
        }
        self.host_rate.bytes_in(t - f.nic_start).min(f.bytes)
    }

    /// Bytes queued per rack pair at `t` (at the ToR, not yet sent).
    fn demand_matrix(&self, t: SimTime) -> Vec<f64> {
        let n = self.n;
        let mut d = vec![0.0; n * n];
        for (q, list) in self.voq.iter().enumerate() {
            for &f in list {
                let st = &self.flows[f as usize];
                d[q] += (self.at_tor(st, t).max(st.sent) - st.sent) as f64;
            }
        }
        d
    }

    /// The TMS week starting at `start`.
    fn tms_week(&mut self, start: SimTime) -> Vec<Day> {
        let n = self.n;
        let now_demand = self.demand_matrix(start);
        let d = match self.p.demand {
            Demand::Oracle => now_demand,
            Demand::Measured => {
                self.measured.push_back(now_demand);
                if self.measured.len() > self.p.control_delay as usize {
                    self.measured.pop_front().unwrap()
                } else {
                    vec![0.0; n * n]
                }
            }
        };
        self.weeks_scheduled += 1;
        let max = d.iter().cloned().fold(0.0, f64::max).max(1.0);
        let m: tms::Matrix = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            0.0
                        } else {
                            d[i * n + j] + 1e-3 * max
                        }
                    })
                    .collect()
            })
            .collect();
        // The 1e-3 fill gives every matrix total support, so Sinkhorn
        // converges quickly; if it does not, the week is the round-robin one
        // (traffic is never left without a schedule).
        // Slots shorter than min_day are dropped anyway: stop decomposing
        // once less than that is left.
        let stop = self.p.min_day.0 as f64 / self.week_len.0 as f64;
        let scaled = tms::sinkhorn(&m, 1e-9, 20_000).ok();
        let terms = match scaled
            .as_ref()
            .ok_or_else(String::new)
            .and_then(|s| tms::bvn_until(&s.bam, 1e-8, stop))
        {
            Ok(t) if !t.is_empty() => t,
            _ => {
                self.fallback_weeks += 1;
                (1..n)
                    .map(|d| tms::Term {
                        weight: 1.0 / (n - 1) as f64,
                        perm: (0..n).map(|i| (i + d) % n).collect(),
                    })
                    .collect()
            }
        };
        // Longest first; drop days below min_day, then stretch the rest.
        let mut kept: Vec<&tms::Term> = Vec::new();
        for k in 1..=terms.len() {
            let avail = self.week_len.0 as f64 - k as f64 * self.p.night.0 as f64;
            let total: f64 = terms[..k].iter().map(|t| t.weight).sum();
            let shortest = terms[k - 1].weight / total * avail;
            let too_many = self.p.max_days > 0 && k > self.p.max_days as usize;
            if too_many || avail <= 0.0 || shortest < self.p.min_day.0 as f64 {
                break;
            }
            kept = terms[..k].iter().collect();
        }
        self.days_dropped += (terms.len() - kept.len()) as u64;
        if kept.is_empty() {
            // Every day would be shorter than min_day: the round-robin week.
            self.fallback_weeks += 1;
            self.covered.iter_mut().for_each(|c| *c = true);
            self.packet_budget.iter_mut().for_each(|b| *b = 0);
            let len = SimTime(self.week_len.0 / (n as u64 - 1) - self.p.night.0);
            return (1..n)
                .map(|d| Day {
                    len,
                    perm: (0..n).map(|i| ((i + d) % n) as u32).collect(),
                })
                .collect();
        }
        let avail = self.week_len.0 - kept.len() as u64 * self.p.night.0;
        let total: f64 = kept.iter().map(|t| t.weight).sum();
        let mut days: Vec<Day> = kept
            .iter()
            .map(|t| Day {
                len: SimTime((t.weight / total * avail as f64).floor() as u64),
                perm: t.perm.iter().map(|&j| j as u32).collect(),
            })
            .collect();
        // Rounding remainder to the first day: the week is exact.
        let used: u64 = days.iter().map(|d| d.len.0).sum();
        days[0].len = SimTime(days[0].len.0 + avail - used);
        self.cover(&days);
        // The packet switch's share of each connected pair: the part of
        // its BAM entry the kept days do not hold, of its demand.
        self.packet_budget.iter_mut().for_each(|b| *b = 0);
        if let (Some(sc), true) = (&scaled, self.p.packet_rate.0 > 0) {
            let mut circ = vec![0.0; n * n];
            for t in &kept {
                for (i, &j) in t.perm.iter().enumerate() {
                    if j < n {
                        circ[i * n + j] += t.weight;
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    let b = sc.bam[i][j];
                    if i != j && b > 0.0 && self.covered[i * n + j] {
                        let frac = ((b - circ[i * n + j]) / b).clamp(0.0, 1.0);
                        self.packet_budget[i * n + j] = (frac * d[i * n + j]).round() as u64;
                    }
                }
            }
        }
        days
    }

    /// Marks the pairs `days` connect.
    fn cover(&mut self, days: &[Day]) {
        let n = self.n;
        self.covered.iter_mut().for_each(|c| *c = false);
        for d in days {
            for (i, &j) in d.perm.iter().enumerate() {
                if j != u32::MAX {
                    self.covered[i * n + j as usize] = true;
                }
            }
        }
    }

    /// Hands the packet switch, at the start of a day or when a flow's last
    /// byte reaches its ToR (`now`), the bytes it is to carry until the
    /// day's night ends: each rack's uplink gets `packet_rate × (that
    /// time)` less what its NIC has not sent yet,
    /// shared equally by its backlogged pairs the week's days leave out or
    /// that have packet budget left (at most that budget), each
    /// destination at most `packet_rate × (that time)` (sources in index
    /// order); only bytes already at the ToR.
    fn release_packet(&mut self, now: SimTime) {
        let Some(mut ps) = self.ps.take() else {
            return;
        };
        let n = self.n;
        let cap = self.p.packet_rate.bytes_in(self.next_boundary() - now);
        let mut down = vec![cap; n];
        for i in 0..n {
            let mut up = cap.saturating_sub(ps.net.host_unsent(i as u32));
            let pairs: Vec<usize> = (0..n)
                .filter(|&j| {
                    let q = i * n + j;
                    j != i
                        && (!self.covered[q] || self.packet_budget[q] > 0)
                        && !self.voq[q].is_empty()
                })
                .collect();
            let mut left = pairs.len() as u64;
            for j in pairs {
                let q = i * n + j;
                let mut give = (up / left).min(down[j]);
                if self.covered[q] {
                    give = give.min(self.packet_budget[q]);
                }
                left -= 1;
                self.chunks.clear();
                let mut took = 0;
                while give > 0 {
                    let Some(&f) = self.voq[q].front() else { break };
                    let st = &self.flows[f as usize];
                    let b = self.at_tor(st, now).saturating_sub(st.sent).min(give);
                    if b == 0 {
                        break;
                    }
                    let st = &mut self.flows[f as usize];
                    st.sent += b;
                    give -= b;
                    took += b;
                    self.queued_bytes -= b;
                    self.chunks.push((f, b));
                    if st.sent == st.bytes {
                        self.voq[q].pop_front();
                        self.queued_flows -= 1;
                    }
                }
                if took == 0 {
                    continue;
                }
                ps.hand(now, i as u32, j as u32, q, &self.chunks);
                up -= took;
                down[j] -= took;
                if self.covered[q] {
                    self.packet_budget[q] -= took;
                }
            }
        }
        self.ps = Some(ps);
    }

    /// Runs the packet switch up to `now` and delivers what reached racks.
    fn run_packet(&mut self, now: SimTime, rec: &mut Recorder) {
        let Some(ps) = &mut self.ps else {
            return;
        };
        let mut out = std::mem::take(&mut self.ps_out);
        rec.count_internal_events(ps.run(now, &mut out));
        for &(f, t, b) in &out {
            self.packet_bytes += b;
            self.deliver(f, t, b, rec);
        }
        self.ps_out = out;
    }

    /// `b` bytes of flow `f` arrive at `t`; the flow completes with its
    /// last byte (circuit and packet-switch bytes arrive out of order).
    fn deliver(&mut self, f: FlowId, t: SimTime, b: u64, rec: &mut Recorder) {
        let st = &mut self.flows[f as usize];
        st.last = st.last.max(t);
        rec.deliver_and_complete(f, t, b, st.last);
    }

    /// Starts the clock at the day that contains `now` (or the next one).
    fn activate(&mut self, now: SimTime) {
        self.active = true;
        if self.tms {
            // A week starts on the week grid, but never before the night of
            // the last day that ran has ended (`day_start` was left there when
            // the switch went idle; 0 before any day): the new week's days
            // need not line up with the old one's.
            let w = self.week_len;
            let k = now.0 / w.0;
            self.week_start = SimTime(k * w.0).max(self.day_start);
            self.week = self.tms_week(now);
            let mut s = self.week_start;
            self.day_idx = 0;
            while self.day_idx + 1 < self.week.len()
                && s + self.week[self.day_idx].len + self.p.night <= now
            {
                s = s + self.week[self.day_idx].len + self.p.night;
                self.day_idx += 1;
            }
            self.day_start = s;
        } else {
            let slot = self.slot();
            let g = now.0 / slot.0;
            self.global_day = g;
            self.day_idx = (g % self.week.len() as u64) as usize;
            self.day_start = SimTime(g * slot.0);
        }
    }

    fn next_boundary(&self) -> SimTime {
        self.day_start + self.week[self.day_idx].len + self.p.night
    }

    /// Works out the transmissions of the current day.
    fn run_day(&mut self, rec: &mut Recorder) {
        let len = self.week[self.day_idx].len;
        let s = self.day_start;
        let e = s + len;
        #[cfg(test)]
        if let Some(l) = &mut self.log {
            l.0.push((s, e, self.week[self.day_idx].perm.clone()));
        }
        self.days_run += 1;
        self.stable_time += len.0 as u128;
        self.night_time += self.p.night.0 as u128;
        let per_pkt_max = self.p.packet.0;
        for i in 0..self.n {
            let j = self.week[self.day_idx].perm[i];
            if j == u32::MAX {
                continue;
            }
            let q = i * self.n + j as usize;
            let mut t = s + self.p.nic_delay;
            while let Some(&f) = self.voq[q].front() {
                let st = &self.flows[f as usize];
                let pkt = per_pkt_max.min(st.bytes - st.sent);
                let ready = st.nic_start + self.host_rate.tx_time(st.sent + pkt);
                let start = t.max(ready);
                if start >= e {
                    break;
                }
                let end = start + self.link.tx_time(pkt);
                if end > e {
                    // Would straddle the night: held for a later day, or
                    // sent and cut by the night (its bytes stay queued).
                    match self.p.straddle {
                        Straddle::Hold => self.held += 1,
                        Straddle::Lose => {
                            self.lost += 1;
                            self.lost_bytes += self.link.bytes_in(e - start);
                        }
                    }
                    break;
                }
                if end > e || start < s {
                    self.sent_in_night += 1;
                }
                let st = &mut self.flows[f as usize];
                st.sent += pkt;
                self.queued_bytes -= pkt;
                self.circuit_bytes += pkt;
                self.packets += 1;
                let done = st.sent == st.bytes;
                self.deliver(f, end + self.p.latency, pkt, rec);
                #[cfg(test)]
                if let Some(l) = &mut self.log {
                    l.1.push((i, j as usize, start, end));
                }
                t = end;
                if done {
                    self.voq[q].pop_front();
                    self.queued_flows -= 1;
                }
            }
        }
    }

    fn probe_sample(&mut self, now: SimTime, global_day: u64) {
        if global_day == self.p.probe_day as u64 && self.probe.is_none() {
            let r = self.p.probe_rack as usize;
            if r < self.n {
                let d = self.demand_matrix(now);
                self.probe = Some(d[r * self.n..(r + 1) * self.n].iter().sum::<f64>() as u64);
            }
        }
    }
}

impl Fabric for Mordia {
    fn name(&self) -> String {
        if self.tms {
            "Mordia (TMS)"
        } else {
            "Mordia (round-robin)"
        }
        .into()
    }
    fn hosts(&self) -> usize {
        self.hosts
    }
    fn host_rate(&self) -> Rate {
        self.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        let sr = flow.src / self.servers;
        let dr = flow.dst / self.servers;
        let h = flow.src as usize;
        let nic_start = match self.p.host_nic {
            HostNic::Fifo => self.nic_free[h].max(now),
            HostNic::PerFlow => now,
        };
        let nic_done = nic_start + self.host_rate.tx_time(flow.bytes);
        if self.p.host_nic == HostNic::Fifo {
            self.nic_free[h] = nic_done;
        }
        self.flows.push(FlowSt {
            src_rack: sr,
            dst_rack: dr,
            bytes: flow.bytes,
            sent: 0,
            last: SimTime::ZERO,
            nic_start,
        });
        if sr == dr && (self.tms || !self.p.loopback) {
            self.intra.push(nic_done + self.p.latency, flow.id);
            return;
        }
        self.voq[sr as usize * self.n + dr as usize].push_back(flow.id);
        if self.ps.is_some() {
            self.ps_wake.push(nic_done, flow.id);
        }
        self.queued_flows += 1;
        self.queued_bytes += flow.bytes;
        self.peak_voq_bytes = self.peak_voq_bytes.max(self.queued_bytes);
        if !self.active {
            self.activate(now);
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        let b = self.active.then(|| self.next_boundary());
        let ps = self.ps.as_ref().and_then(|p| p.net.next_event());
        let wake = self.ps_wake.peek_time();
        [b, self.intra.peek_time(), ps, wake]
            .into_iter()
            .flatten()
            .min()
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        while let Some((t, f)) = self.intra.pop_due(now) {
            let b = self.flows[f as usize].bytes;
            self.flows[f as usize].sent = b;
            rec.deliver(f, t, b);
            rec.complete(f, t);
            rec.count_internal_events(1);
        }
        self.run_packet(now, rec);
        let mut wake = false;
        while self.ps_wake.pop_due(now).is_some() {
            wake = true;
        }
        if !self.active || self.next_boundary() != now {
            if wake && self.active {
                rec.count_internal_events(1);
                self.release_packet(now);
            }
            return;
        }
        rec.count_internal_events(1);
        self.run_day(rec);
        // Next day.
        self.day_idx += 1;
        self.global_day += 1;
        self.day_start = now;
        if self.day_idx == self.week.len() {
            self.day_idx = 0;
            if self.tms {
                self.week_start = now;
                self.week = self.tms_week(now);
            }
        }
        if !self.tms {
            self.probe_sample(now, self.global_day);
        }
        self.release_packet(now);
        if self.queued_flows == 0 {
            self.active = false;
        }
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        let duty = if self.stable_time + self.night_time > 0 {
            self.stable_time as f64 / (self.stable_time + self.night_time) as f64
        } else {
            0.0
        };
        let slot_units = self.host_rate.bytes_in(self.slot()).max(1) as f64;
        let mut s: FabricStats = [
            ("days", self.days_run as f64),
            ("packets", self.packets as f64),
            ("held_packets", self.held as f64),
            ("packet_switch_bytes", self.packet_bytes as f64),
            (
                "packet_switch_share",
                self.packet_bytes as f64 / (self.packet_bytes + self.circuit_bytes).max(1) as f64,
            ),
            ("lost_packets", self.lost as f64),
            ("lost_bytes_on_wire", self.lost_bytes as f64),
            ("circuit_bytes", self.circuit_bytes as f64),
            ("duty_cycle", duty),
            ("peak_voq_bytes", self.peak_voq_bytes as f64),
            ("packets_in_night", self.sent_in_night as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if self.tms {
            s.insert("weeks_scheduled".into(), self.weeks_scheduled as f64);
            s.insert("days_dropped".into(), self.days_dropped as f64);
            s.insert("fallback_weeks".into(), self.fallback_weeks as f64);
        }
        if let Some(b) = self.probe {
            s.insert("probe_voq_bytes".into(), b as f64);
            s.insert("probe_voq_units".into(), (b as f64 / slot_units).round());
        } else if !self.tms {
            // Cold start (day 0) or a day the run never reached with traffic.
            s.insert("probe_voq_bytes".into(), 0.0);
            s.insert("probe_voq_units".into(), 0.0);
        }
        s
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.sent_in_night != 0 {
            return Err(format!(
                "mordia: {} packets crossed a night",
                self.sent_in_night
            ));
        }
        let mut flows = 0u64;
        let mut bytes = 0u64;
        for (qi, q) in self.voq.iter().enumerate() {
            flows += q.len() as u64;
            for &f in q {
                let st = &self.flows[f as usize];
                if st.src_rack as usize * self.n + st.dst_rack as usize != qi {
                    return Err(format!("mordia: flow {f} in the wrong VOQ"));
                }
                if st.sent >= st.bytes {
                    return Err(format!("mordia: finished flow {f} still queued"));
                }
                bytes += st.bytes - st.sent;
            }
        }
        if flows != self.queued_flows || bytes != self.queued_bytes {
            return Err(format!(
                "mordia: VOQs hold {flows} flows / {bytes} B but the counters say {} / {}",
                self.queued_flows, self.queued_bytes
            ));
        }
        if let Some(ps) = &self.ps {
            if ps.net.drops() != 0 {
                return Err(format!(
                    "mordia: the packet switch dropped {} packets",
                    ps.net.drops()
                ));
            }
            ps.check_invariants()
                .map_err(|m| format!("mordia packet switch: {m}"))?;
        }
        if self.active {
            let d = &self.week[self.day_idx];
            let mut used = vec![false; self.n];
            for &j in &d.perm {
                if j != u32::MAX && std::mem::replace(&mut used[j as usize], true) {
                    return Err("mordia: two inputs on one OCS output".into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    fn ctx(t: &Topology) -> BuildContext<'_> {
        BuildContext {
            topology: t,
            seed: 1,
            check_invariants: true,
        }
    }

    fn flow(id: u32, src: u32, dst: u32, bytes: u64, start: SimTime) -> Flow {
        Flow {
            id,
            src,
            dst,
            bytes,
            start,
        }
    }

    /// Fig. 4: 8 ToRs, uniform all-to-all (each ToR sends to every ToR,
    /// itself included through the loopback day, at 1/8 of the link), uniform
    /// slots without nights. VOQ occupancies of ToR 0 at each slot boundary,
    /// in units of what one VOQ receives per slot, from the simulator.
    #[test]
    fn figure_4_voq_occupancy_from_cold_start() {
        let topo = Topology {
            racks: 8,
            servers_per_rack: 8,
            uplinks: 1,
            uplink_rate: Rate::gbps(80),
            server_rate: None,
        };
        let p = MordiaParams {
            night: SimTime::ZERO,
            latency: SimTime::ZERO,
            day: SimTime::us(100),
            loopback: true,
            ..MordiaParams::default()
        };
        let c = ctx(&topo);
        let mut m = Mordia::new(&p, false, &c);
        let mut rec = Recorder::new(None);
        // Host k of rack i sends to rack k, at 10 Gbps, for longer than the test.
        let mut id = 0;
        for i in 0..8u32 {
            for k in 0..8u32 {
                let f = flow(id, i * 8 + k, k * 8 + (i + 1) % 8, 1 << 30, SimTime::ZERO);
                rec.register(&f);
                m.add_flow(SimTime::ZERO, &f, &mut rec);
                id += 1;
            }
        }
        let unit = Rate::gbps(10).bytes_in(SimTime::us(100)) as f64; // 125,000 B
        let mut totals = vec![0u64];
        let mut per_voq = vec![vec![0u64; 8]];
        while totals.len() < 17 {
            let t = m.next_event().unwrap();
            m.advance(t, &mut rec);
            m.check_invariants().unwrap();
            let d = m.demand_matrix(t);
            let row: Vec<u64> = (0..8).map(|j| (d[j] / unit).round() as u64).collect();
            totals.push(row.iter().sum());
            per_voq.push(row);
        }
        assert_eq!(rec.violation_count(), 0);
        // The paper's Total row.
        assert_eq!(
            totals,
            vec![0, 7, 13, 18, 22, 25, 27, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28]
        );
        // Paper rows: VOQ k (destination k - 1) is drained during slot k - 1.
        for (t, row) in per_voq.iter().enumerate() {
            for (d, &v) in row.iter().enumerate() {
                let want = if t <= d { t } else { (t - d - 1) % 8 };
                assert_eq!(v as usize, want, "VOQ {} at slot {t}", d + 1);
            }
        }
        assert_eq!(m.sent_in_night, 0);
    }

    #[test]
    fn a_packet_that_would_straddle_the_night_is_held() {
        // 2 racks, 1 server each, 8 Gbps: a 1,000 B packet takes 1 µs. Days of
        // 2.5 µs: two packets fit, the third would straddle and waits for the
        // next day (after a 1 µs night, the week is one day of 3.5 µs).
        let topo = Topology {
            racks: 2,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(8),
            server_rate: None,
        };
        let p = MordiaParams {
            night: SimTime::us(1),
            latency: SimTime::ZERO,
            day: SimTime::ns(2_500),
            packet: ByteSize(1000),
            ..MordiaParams::default()
        };
        let c = ctx(&topo);
        let mut m = Mordia::new(&p, false, &c);
        let mut rec = Recorder::new(None);
        let f = flow(0, 0, 1, 3000, SimTime::ZERO);
        rec.register(&f);
        m.add_flow(SimTime::ZERO, &f, &mut rec);
        while let Some(t) = m.next_event() {
            m.advance(t, &mut rec);
            m.check_invariants().unwrap();
        }
        // Host NIC at 8 Gbps = link, and the ToR stores a whole packet before
        // sending it: packet k (k = 1, 2, 3) is at the ToR at k µs. Day 0
        // sends packet 1 (1-2 µs); packet 2 (2-3 µs) would straddle the night
        // at 2.5 µs and is held. Day 1 starts at 3.5 µs: packet 2 goes 3.5-4.5,
        // packet 3 4.5-5.5 µs.
        assert_eq!(rec.finish(0), Some(SimTime::ns(5_500)));
        assert_eq!(m.held, 1);
    }

    #[test]
    fn a_straddling_packet_can_be_lost_instead() {
        // The held-packet case above with straddle = "lose": packet 2 starts
        // at 2 µs and is cut by the night at 2.5 µs (500 B on the wire,
        // lost); it is sent again on day 1, so the flow still ends at 5.5 µs.
        let topo = Topology {
            racks: 2,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(8),
            server_rate: None,
        };
        let p = MordiaParams {
            night: SimTime::us(1),
            latency: SimTime::ZERO,
            day: SimTime::ns(2_500),
            packet: ByteSize(1000),
            straddle: Straddle::Lose,
            ..MordiaParams::default()
        };
        let c = ctx(&topo);
        let mut m = Mordia::new(&p, false, &c);
        let mut rec = Recorder::new(None);
        let f = flow(0, 0, 1, 3000, SimTime::ZERO);
        rec.register(&f);
        m.add_flow(SimTime::ZERO, &f, &mut rec);
        while let Some(t) = m.next_event() {
            m.advance(t, &mut rec);
            m.check_invariants().unwrap();
        }
        assert_eq!(rec.finish(0), Some(SimTime::ns(5_500)));
        assert_eq!((m.held, m.lost, m.lost_bytes), (0, 1, 500));
        assert_eq!(rec.delivered(0), 3000);
    }

    /// Bytes 0 → 1 delivered in each of the first `weeks` TMS weeks, with
    /// two long flows 0 → 1 and 2 → 3 (one per host) from t = 0.
    fn per_week_0_to_1(p: &MordiaParams, weeks: u64) -> Vec<u64> {
        let topo = Topology {
            racks: 4,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(10),
            server_rate: None,
        };
        let c = ctx(&topo);
        let mut m = Mordia::new(p, true, &c);
        let mut rec = Recorder::new(None);
        for f in [
            flow(0, 0, 1, 1 << 30, SimTime::ZERO),
            flow(1, 2, 3, 1 << 30, SimTime::ZERO),
        ] {
            rec.register(&f);
            m.add_flow(SimTime::ZERO, &f, &mut rec);
        }
        let week = m.week_len;
        let mut per_week = Vec::new();
        let mut last = 0;
        for w in 1..=weeks {
            while let Some(t) = m.next_event().filter(|&t| t <= week * w) {
                m.advance(t, &mut rec);
            }
            m.check_invariants().unwrap();
            per_week.push(rec.delivered(0) - last);
            last = rec.delivered(0);
        }
        assert_eq!(rec.violation_count(), 0);
        per_week
    }

    #[test]
    fn measured_demand_lags_the_oracle_by_the_control_delay() {
        // Only 0 → 1 and 2 → 3 carry traffic. At t = 0 nothing is at the
        // ToRs yet, so week 0's demand is empty for everyone: Sinkhorn of
        // the uniform fill, every pair at most a third of the week. From
        // week 1 the oracle sees the two backlogged VOQs and gives 0 → 1 one
        // day of nearly the whole week (the other BvN days fall below
        // min_day). Measured demand with a control delay of k weeks uses the
        // VOQs of k weeks earlier (nothing before week k): the skewed week
        // comes k weeks later, at week k + 1.
        let p = MordiaParams::default();
        let week = p.week_len(4);
        let full = Rate::gbps(10).bytes_in(week) as f64;
        let third = full / 3.0 + 1500.0;
        let o = per_week_0_to_1(&p, 6);
        assert!((o[0] as f64) <= third, "oracle {o:?}");
        for w in 1..6 {
            assert!(o[w] as f64 > 0.9 * full, "oracle week {w}: {o:?}");
        }
        for k in [1u32, 2, 4] {
            let m = per_week_0_to_1(
                &MordiaParams {
                    demand: Demand::Measured,
                    control_delay: k,
                    ..MordiaParams::default()
                },
                6,
            );
            for w in 0..6 {
                if w <= k as usize {
                    assert!((m[w] as f64) <= third, "k = {k}, week {w}: {m:?}");
                } else {
                    assert!(m[w] as f64 > 0.9 * full, "k = {k}, week {w}: {m:?}");
                }
            }
        }
    }

    /// Finish time of a small flow 0 → 2 that arrives (at 1.5 weeks) while
    /// a large backlog 0 → 1 dominates the TMS demand, and the bytes the
    /// packet switch carried.
    fn small_flow_beside_a_hotspot(packet_rate: Rate) -> (Option<SimTime>, u64) {
        // Hosts at 40 Gbps feed 10 Gbps OCS ports: the 0 → 1 VOQ grows by
        // 30 Gbps, so 10 kB to rack 2 is far below a min_day's share and its
        // BvN day is dropped: only a packet switch carries it.
        let topo = Topology {
            racks: 4,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(10),
            server_rate: Some(Rate::gbps(40)),
        };
        let p = MordiaParams {
            host_nic: HostNic::PerFlow,
            packet_rate,
            ..MordiaParams::default()
        };
        let c = ctx(&topo);
        let mut m = Mordia::new(&p, true, &c);
        let mut rec = Recorder::new(None);
        let week = m.week_len;
        let flows = [
            flow(0, 0, 1, 1 << 30, SimTime::ZERO),
            flow(1, 0, 2, 10_000, SimTime(week.0 * 3 / 2)),
        ];
        crate::fabric::drive(&mut m, &flows, &mut rec, week * 6, |_| true);
        assert_eq!(rec.violation_count(), 0);
        (rec.finish(1), m.packet_bytes)
    }

    #[test]
    fn the_packet_switch_carries_what_the_truncated_week_leaves_out() {
        let week = MordiaParams::default().week_len(4);
        // Without a packet switch the small flow waits behind the hotspot
        // for the whole run (6 weeks).
        let (none, pb) = small_flow_beside_a_hotspot(Rate(0));
        assert_eq!((none, pb), (None, 0));
        // With a 1 Gbps packet switch: it arrives at 1.5 weeks, in a week
        // whose days (scheduled at 1 week, before it existed, with 0 → 1
        // dominating) leave 0 → 2 off the circuits, so the packet switch
        // takes it as soon as it is at the ToR: its 10 kB need 80 µs at
        // 1 Gbps, within the same week.
        let (done, pb) = small_flow_beside_a_hotspot(Rate::gbps(1));
        assert_eq!(pb, 10_000);
        let t = done.expect("carried by the packet switch");
        let arrival = SimTime(week.0 * 3 / 2);
        assert!(
            t >= arrival + SimTime::us(80) && t <= week * 2 + SimTime::ns(500),
            "{t} vs week {week}"
        );
    }

    #[test]
    fn a_left_out_pair_crosses_the_net_star_store_and_forward() {
        // The case above, worked by hand on the `net/` star. The flow
        // (10,000 B, 0 → 2) arrives at 1.5 weeks = 477 µs and is at its ToR
        // 10,000 B / 40 Gbps = 2 µs later: the packet switch takes it at
        // 479 µs, alone on rack 0's uplink (the packet switch carries
        // nothing else in the run). Packets of 1,500 B at 1 Gbps: rack 0's
        // NIC sends 6 × 1,500 + 1,000 B back to back (80 µs); the switch
        // port forwards each packet once it has arrived: the sixth arrives
        // at 479 + 72 = 551 µs and leaves at 563 µs, the short seventh
        // (at the switch at 559 µs) waits for it and takes 8 µs, and it
        // reaches rack 2 `latency` (0.5 µs) later: 571.5 µs.
        assert_eq!(MordiaParams::default().week_len(4), SimTime::us(318));
        let (done, pb) = small_flow_beside_a_hotspot(Rate::gbps(1));
        assert_eq!(pb, 10_000);
        assert_eq!(done, Some(SimTime::ns(571_500)));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// Table 2's truncation: with `max_days = n` every week has at most
        /// n days, the stable time of a week of k days is week − k·night
        /// (D of Table 2), and every byte delivered went over a circuit or
        /// over the packet switch, never both and never neither. Long flows
        /// of random sizes per pair keep every VOQ backlogged, so the weeks
        /// run back to back on the 1 ms grid.
        #[test]
        fn max_days_truncates_each_week_and_the_packet_switch_takes_the_rest(
            n in 1u32..6,
            rates in proptest::collection::vec(1u64..40, 12),
        ) {
            let topo = Topology {
                racks: 4,
                servers_per_rack: 1,
                uplinks: 1,
                uplink_rate: Rate::gbps(10),
                server_rate: Some(Rate::gbps(2000)),
            };
            let p = MordiaParams {
                night: SimTime::us(10),
                week: SimTime::us(1000),
                min_day: SimTime::us(2),
                max_days: n,
                host_nic: HostNic::PerFlow,
                packet_rate: Rate::gbps(10),
                ..MordiaParams::default()
            };
            let c = ctx(&topo);
            let mut m = Mordia::new(&p, true, &c);
            m.log = Some((Vec::new(), Vec::new()));
            let mut fl = Vec::new();
            for i in 0..4u32 {
                for j in 0..4u32 {
                    if i != j {
                        let id = fl.len() as u32;
                        fl.push(flow(id, i, j, rates[id as usize] * 10_000_000, SimTime::ZERO));
                    }
                }
            }
            let mut rec = Recorder::new(None);
            let weeks = 6u64;
            crate::fabric::drive(&mut m, &fl, &mut rec, SimTime::us(1000 * weeks), |_| true);
            proptest::prop_assert_eq!(rec.violation_count(), 0);
            let delivered: u64 = fl.iter().map(|f| rec.delivered(f.id)).sum();
            proptest::prop_assert_eq!(m.circuit_bytes + m.packet_bytes, delivered);
            proptest::prop_assert!(m.packet_bytes > 0 || n >= 3);
            let (days, _) = m.log.take().unwrap();
            for w in 0..weeks {
                let (a, b) = (SimTime::us(1000 * w), SimTime::us(1000 * (w + 1)));
                let wd: Vec<_> = days.iter().filter(|d| d.0 >= a && d.0 < b).collect();
                proptest::prop_assert!(!wd.is_empty() && wd.len() as u32 <= n, "week {w}: {} days > {n}", wd.len());
                proptest::prop_assert!(wd.iter().all(|d| d.1 + p.night <= b), "week {w} runs past its end");
                let stable: u64 = wd.iter().map(|d| (d.1 - d.0).0).sum();
                proptest::prop_assert_eq!(stable, (b - a).0 - wd.len() as u64 * p.night.0);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// No OCS port carries traffic during a night: every packet lies in
        /// the stable part of a day that connects its pair and overlaps no
        /// night that follows a day (both variants, random flows).
        #[test]
        fn no_ocs_port_carries_traffic_during_a_night(
            tms in proptest::bool::ANY,
            flows in proptest::collection::vec((0u32..4, 1u32..4, 1u64..400_000, 0u64..2_000), 1..20),
        ) {
            let topo = Topology {
                racks: 4,
                servers_per_rack: 1,
                uplinks: 1,
                uplink_rate: Rate::gbps(10),
                server_rate: None,
            };
            let p = MordiaParams { day: SimTime::us(30), min_day: SimTime::us(20), ..MordiaParams::default() };
            let c = ctx(&topo);
            let mut m = Mordia::new(&p, tms, &c);
            m.log = Some((Vec::new(), Vec::new()));
            let mut fl: Vec<Flow> = flows.iter().map(|&(s, o, b, st)| flow(0, s, (s + o) % 4, b, SimTime::us(st))).collect();
            fl.sort_by_key(|f| f.start);
            for (k, f) in fl.iter_mut().enumerate() { f.id = k as u32; }
            let mut rec = Recorder::new(None);
            crate::fabric::drive(&mut m, &fl, &mut rec, SimTime::MAX, |_| false);
            for f in &fl { proptest::prop_assert!(rec.finish(f.id).is_some()); }
            let (days, sends) = m.log.take().unwrap();
            // A full night separates every day from the one before it, idle
            // spells included (the switch reconfigures in the night).
            for w in days.windows(2) {
                proptest::prop_assert!(w[1].0 >= w[0].1 + p.night, "day at {} starts less than a night after the day ending {}", w[1].0, w[0].1);
            }
            // The night after every day that ran: no packet may overlap it.
            for &(i, j, a, b) in &sends {
                for d in &days {
                    let (n0, n1) = (d.1, d.1 + p.night);
                    proptest::prop_assert!(b <= n0 || a >= n1, "packet {i}->{j} in [{a}, {b}] overlaps the night [{n0}, {n1}]");
                }
            }
            for &(i, j, a, b) in &sends {
                let ok = days.iter().any(|d| d.2[i] as usize == j && d.0 <= a && b <= d.1);
                proptest::prop_assert!(ok, "packet {i}->{j} in [{a}, {b}] outside every day");
            }
        }
    }

    #[test]
    fn nic_delay_and_bad_parameters() {
        let topo = Topology {
            racks: 4,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(10),
            server_rate: None,
        };
        let c = ctx(&topo);
        let p = MordiaParams {
            nic_delay: SimTime::us(100),
            ..MordiaParams::default()
        };
        let e = p.check(Some(&VARIANTS[1]), &c).unwrap_err();
        assert_eq!(e.key, "mordia.day");
        let p = MordiaParams {
            latency: SimTime::us(20),
            ..MordiaParams::default()
        };
        assert_eq!(
            MordiaModule::layout(&p, &c).unwrap_err().key,
            "mordia.latency"
        );
        let p = MordiaParams {
            week: SimTime::us(25),
            ..MordiaParams::default()
        };
        assert_eq!(
            p.check(Some(&VARIANTS[0]), &c).unwrap_err().key,
            "mordia.week"
        );
        assert!(MordiaModule::build(p, &VARIANTS[0], &c).is_err());
    }

    #[test]
    fn tms_serves_a_skewed_demand_and_never_uses_a_night() {
        // 4 racks; rack 0 sends a lot to rack 1 and a little to 2 and 3.
        let topo = Topology {
            racks: 4,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(10),
            server_rate: None,
        };
        let c = ctx(&topo);
        let p = MordiaParams::default();
        let mut m = Mordia::new(&p, true, &c);
        let mut rec = Recorder::new(None);
        let flows = [
            flow(0, 0, 1, 2_000_000, SimTime::ZERO),
            flow(1, 0, 2, 100_000, SimTime::ZERO),
            flow(2, 3, 2, 500_000, SimTime::ZERO),
        ];
        for f in &flows {
            rec.register(f);
            m.add_flow(SimTime::ZERO, f, &mut rec);
        }
        while let Some(t) = m.next_event() {
            m.advance(t, &mut rec);
            m.check_invariants().unwrap();
        }
        for i in 0..3 {
            assert!(rec.finish(i).is_some(), "flow {i}");
        }
        assert_eq!(m.sent_in_night, 0);
        assert!(m.weeks_scheduled >= 1);
    }
}

//! Mordia's parameters, its two variants and their checks, and the FCT
//! bounds of a lone flow.

use super::Mordia;
use crate::error::{bad, ConfigError};
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// `mordia_rr`: the length of each day of the week, in order, one per
    /// day (N − 1 of them, N with `loopback`; day d connects rack i to rack
    /// (i + d + 1) mod N, (i + d) with loopback), for the variable-length
    /// days of Fig. 7; empty (the default): every day is `day`.
    pub days: Vec<SimTime>,
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
            days: Vec::new(),
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

pub(super) const VARIANTS: &[Variant] = &[
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
    pub(super) fn check(&self, v: Option<&Variant>, ctx: &BuildContext) -> Result<(), ConfigError> {
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
            let week_days = t.racks as usize - if self.loopback { 0 } else { 1 };
            if !self.days.is_empty() && self.days.len() != week_days {
                return Err(bad(
                    MordiaParams::TABLE,
                    "days",
                    format!("{} days", self.days.len()),
                    format!(
                        "give one length per day of the round-robin week: {week_days} for {} racks",
                        t.racks
                    ),
                ));
            }
            let (key, day) = match self.days.iter().min() {
                Some(&d) => ("days", d),
                None => ("day", self.day),
            };
            if day <= self.nic_delay || day - self.nic_delay < link.tx_time(self.packet.0) {
                return Err(bad(
                    MordiaParams::TABLE,
                    key,
                    day,
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

    type Layout = ();

    fn plan(p: &MordiaParams, v: &Variant, ctx: &BuildContext) -> Result<(), ConfigError> {
        p.check(Some(v), ctx)
    }

    fn memory(_: &MordiaParams, _: &(), _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        let n = ctx.topology.racks as u128;
        vec![
            MemoryPart::of(
                n * n,
                128,
                "topology.racks",
                ctx.topology.racks,
                "VOQs and schedule entries for every pair of racks",
            ),
            MemoryPart::per_host(ctx, 256, "host NICs and the packet switch"),
        ]
    }
    fn build(
        p: MordiaParams,
        _: (),
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(Mordia::new(&p, v.name == "mordia", ctx)))
    }

    /// A lone flow: its bytes cross the host NIC at R (at least bytes/R plus
    /// the latency). Round-robin: it then waits at most one week for its day
    /// and needs at most ⌈bytes / C⌉ days, C = the bytes one day carries;
    /// bound = bytes/R + week·(⌈bytes/C⌉ + 1) + day + night + latency. TMS:
    /// at most `control_delay + 2 + ⌈bytes/C⌉` weeks after the bytes are at
    /// the ToR, C = the bytes a `min_day` carries (a lone pair's demand
    /// dominates the BAM, so it gets a day of at least min_day every week).
    fn lone_flow_fct(p: &MordiaParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (v, ctx, src, dst, bytes) = (f.variant, f.ctx, f.src, f.dst, f.bytes);
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
            let (week, shortest, longest) = if p.days.is_empty() {
                ((p.day + p.night) * n, p.day, p.day)
            } else {
                let w = p.days.iter().fold(SimTime::ZERO, |a, &d| a + d + p.night);
                (
                    w,
                    *p.days.iter().min().unwrap(),
                    *p.days.iter().max().unwrap(),
                )
            };
            at_r + week * (bytes.div_ceil(day_bytes(shortest)) + 1) + longest + p.night + p.latency
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

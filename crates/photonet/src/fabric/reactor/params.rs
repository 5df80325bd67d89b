//! REACToR's parameters, their checks (with the numbers derived from them
//! and the topology) and the FCT bounds of a lone flow.

use super::eps::EPS_PACKET;
use super::Reactor;
use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of REACToR (`fabric = "reactor"` or `"reactor_circuit"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReactorParams {
    /// Circuit reconfiguration time δ, during which no circuit carries
    /// traffic (§5.4: 20 µs).
    pub reconfiguration: SimTime,
    /// Accumulation period W: one circuit schedule per period (§5.4: 3 ms).
    pub period: SimTime,
    /// Shortest configuration, δ included (§5.4: 40 µs); must exceed δ.
    pub min_config: SimTime,
    /// Per-host packet uplink to the EPS (`reactor`; §5.4: 10 or 20 Gbps).
    pub eps_rate: Rate,
    /// Cap on circuit-bound traffic at the source NIC; "0bps" = line rate.
    /// The per-period limit is lower where the EPS needs room (§3.3).
    pub circuit_rate: Rate,
    /// EPS buffer per ingress port (lossless, with PFC).
    pub eps_buffer: ByteSize,
    /// Bytes buffered from one ingress link of the EPS (a host's NIC, or the
    /// EPS port into a downlink) above which it is paused; `eps_buffer −
    /// pfc_xoff` must absorb eps_rate × (pfc_off_max + 2 ticks) and at least
    /// eps_rate × pfc_off_max plus two 1,500 B packets.
    pub pfc_xoff: ByteSize,
    /// Bytes from one ingress link at or below which it is resumed.
    pub pfc_xon: ByteSize,
    /// Shortest time from a PFC pause frame to the host's last byte
    /// (§3.4: 1,014 ns measured).
    pub pfc_off_min: SimTime,
    /// Longest (§3.4: 2,188 ns); circuit pauses are sent this long before a
    /// circuit goes down.
    pub pfc_off_max: SimTime,
    /// Shortest time from an unpause frame to the host's first byte
    /// (§3.4: 1.2 µs).
    pub pfc_on_min: SimTime,
    /// Longest (§3.4: 1.3 µs).
    pub pfc_on_max: SimTime,
    /// Fluid time step; the period must be a whole number of ticks.
    pub tick: SimTime,
    /// From a byte leaving the ToR to the destination host.
    pub latency: SimTime,
}

impl Default for ReactorParams {
    fn default() -> Self {
        ReactorParams {
            reconfiguration: SimTime::us(20),
            period: SimTime::ms(3),
            min_config: SimTime::us(40),
            eps_rate: Rate::gbps(10),
            circuit_rate: Rate(0),
            eps_buffer: ByteSize(64 * 1024),
            pfc_xoff: ByteSize(48 * 1024),
            pfc_xon: ByteSize(32 * 1024),
            pfc_off_min: SimTime::ns(1_014),
            pfc_off_max: SimTime::ns(2_188),
            pfc_on_min: SimTime::ns(1_200),
            pfc_on_max: SimTime::ns(1_300),
            tick: SimTime::us(1),
            latency: SimTime::ns(500),
        }
    }
}

impl ParamTable for ReactorParams {
    const TABLE: &'static str = "reactor";
}

/// A bad value of `reactor.{key}`.
fn bad(key: &str, value: impl std::fmt::Display, reason: impl Into<String>) -> ConfigError {
    crate::error::bad(ReactorParams::TABLE, key, value, reason)
}

/// Registration of REACToR.
pub struct ReactorModule;

pub(super) const VARIANTS: &[Variant] = &[
    Variant {
        name: "reactor",
        label: "REACToR",
        description: "REACToR hybrid ToR: 100G circuits scheduled per period (Solstice-style) plus a slow EPS for unscheduled classes, PFC-paused host classes (NSDI'14)",
    },
    Variant {
        name: "reactor_circuit",
        label: "Circuit ToR",
        description: "Pure circuit-switched ToR of REACToR §5.4: every class scheduled on circuits, no packet switch",
    },
];

/// Numbers derived once from the parameters and the topology.
#[derive(Clone, Copy, Debug)]
pub struct Derived {
    pub n: usize,
    pub r: Rate,
    pub cap: Rate,
    pub hybrid: bool,
}

impl ReactorParams {
    pub(super) fn derive(&self, hybrid: bool, ctx: &BuildContext) -> Result<Derived, ConfigError> {
        let t = ctx.topology;
        let n = t.hosts();
        let r = t.host_rate();
        if n < 2 {
            return Err(ConfigError::new(
                "topology",
                n,
                "REACToR needs at least two hosts",
            ));
        }
        if n > 4096 {
            return Err(ConfigError::new(
                "topology",
                n,
                "at most 4,096 hosts on one REACToR (a class per host pair)",
            ));
        }
        if self.tick == SimTime::ZERO {
            return Err(bad("tick", self.tick, "must be positive"));
        }
        if self.reconfiguration >= self.min_config {
            return Err(bad(
                "reconfiguration",
                self.reconfiguration,
                format!(
                    "δ must be shorter than the minimum configuration length {} (which includes δ)",
                    self.min_config
                ),
            ));
        }
        if self.min_config > self.period {
            return Err(bad(
                "min_config",
                self.min_config,
                format!("longer than the period {}", self.period),
            ));
        }
        if !self.period.0.is_multiple_of(self.tick.0) {
            return Err(bad(
                "period",
                self.period,
                format!("must be a whole number of ticks ({})", self.tick),
            ));
        }
        if self.tick > self.min_config - self.reconfiguration {
            return Err(bad(
                "tick",
                self.tick,
                "must not exceed the shortest configuration's circuit time (min_config − δ)",
            ));
        }
        if self.pfc_off_min > self.pfc_off_max {
            return Err(bad(
                "pfc_off_min",
                self.pfc_off_min,
                "must not exceed pfc_off_max",
            ));
        }
        if self.pfc_on_min > self.pfc_on_max {
            return Err(bad(
                "pfc_on_min",
                self.pfc_on_min,
                "must not exceed pfc_on_max",
            ));
        }
        if self.pfc_on_max + self.pfc_off_max >= self.min_config - self.reconfiguration {
            return Err(bad(
                "min_config",
                self.min_config,
                "a configuration must outlast δ plus the PFC on and off delays",
            ));
        }
        if self.circuit_rate > r {
            return Err(bad(
                "circuit_rate",
                self.circuit_rate,
                format!("a rate limit above the line rate R = {} b/s", r.0),
            ));
        }
        let cap = if self.circuit_rate.0 == 0 {
            r
        } else {
            self.circuit_rate
        };
        if hybrid {
            if self.eps_rate.0 == 0 || self.eps_rate >= r {
                return Err(bad(
                    "eps_rate",
                    self.eps_rate,
                    format!(
                        "the EPS uplink must be positive and slower than the host rate ({} b/s)",
                        r.0
                    ),
                ));
            }
            if self.pfc_xon > self.pfc_xoff {
                return Err(bad("pfc_xon", self.pfc_xon, "must not exceed pfc_xoff"));
            }
            // After a link crosses xoff: what arrives until the PAUSE takes
            // effect, the packet then on the wire and the one that crossed.
            let need = self
                .eps_rate
                .bytes_in(self.pfc_off_max + self.tick + self.tick)
                .max(self.eps_rate.bytes_in(self.pfc_off_max) + 2 * EPS_PACKET);
            if self.pfc_xoff.0 >= self.eps_buffer.0 || self.eps_buffer.0 - self.pfc_xoff.0 < need {
                return Err(bad("pfc_xoff",
                    self.pfc_xoff,
                    format!(
                        "cannot absorb the pause reaction: eps_buffer − pfc_xoff must hold {need} B (eps_rate × (pfc_off_max + 2 ticks), at least eps_rate × pfc_off_max + two 1,500 B packets), eps_buffer is {} B",
                        self.eps_buffer.0
                    ),
                ));
            }
        }
        Ok(Derived { n, r, cap, hybrid })
    }

    /// Circuit time per period a class surely gets once scheduled: the
    /// shortest configuration less δ and the PFC reaction.
    fn min_window(&self) -> SimTime {
        self.min_config - self.reconfiguration - self.pfc_on_max - self.pfc_off_max
    }
}

impl FabricModule for ReactorModule {
    type Params = ReactorParams;
    const VARIANTS: &'static [Variant] = VARIANTS;

    type Layout = Derived;

    fn plan(p: &ReactorParams, v: &Variant, ctx: &BuildContext) -> Result<Derived, ConfigError> {
        p.derive(v.name == "reactor", ctx)
    }

    fn memory(_: &ReactorParams, d: &Derived, _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        vec![
            MemoryPart::per_pair(
                ctx,
                d.n,
                256,
                "classes and schedule matrices for every pair of hosts",
            ),
            MemoryPart::per_host(ctx, 8192, "the EPS network per host"),
        ]
    }
    fn build(
        p: ReactorParams,
        d: Derived,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(Reactor::new(p, d, ctx.seed)))
    }

    /// A lone flow at an idle ToR starts a period. If it is no larger than
    /// `eps_rate × W` (`reactor`), the EPS carries it at eps_rate within the
    /// period; otherwise its class gets at least one configuration per
    /// period carrying at least `(R − eps_rate) × (min_config − δ − PFC
    /// on/off)` bytes. Bound: `(k + 1) × W + 2 ticks + latency`, k = that
    /// many periods; at least bytes/R + latency.
    fn lone_flow_fct(p: &ReactorParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (v, ctx, bytes) = (f.variant, f.ctx, f.bytes);
        let d = p.derive(v.name == "reactor", ctx)?;
        let at_r = d.r.tx_time(bytes);
        let min = at_r.saturating_sub(SimTime(1)) + p.latency;
        let lim = if d.hybrid {
            Rate(d.cap.0.min(d.r.0 - p.eps_rate.0))
        } else {
            d.cap
        };
        let per_period = lim.bytes_in(p.min_window()).max(1);
        let k = bytes.div_ceil(per_period) + 1;
        let max = p.period * (k + 1) + p.tick * 2 + p.latency;
        Ok(FctBounds { min, max })
    }
}

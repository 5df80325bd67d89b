//! Baldur's parameters, the checked layout derived from them and the
//! topology, its registration, and the lone-flow FCT bounds.

use super::Baldur;
use crate::delivery::{unit_bytes, unit_count};
use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::model::baldur::TABLE_V_SWITCH_LATENCY_PS;
use crate::rng::RngStreams;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest multiplicity accepted (ports per direction).
pub const MAX_MULTIPLICITY: u32 = 64;

/// Parameters of Baldur (`fabric = "baldur"`). Defaults are the paper's
/// (Table VI: m = 4, 1.5 ns switches, 100 ns input and output links; §V-A:
/// 512 B packets).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BaldurParams {
    /// Path multiplicity m: ports per direction of every 2×2 switch (1…64).
    pub multiplicity: u32,
    /// Latency of one switch. Default: Table V's value for the multiplicity
    /// (0.14, 0.49, 0.94, 1.5, 2.25 ns for m = 1…5); required for m > 5.
    pub switch_latency: Option<SimTime>,
    /// Delay of the link from a node to the first stage (Table VI: 100 ns).
    pub injection_link: SimTime,
    /// Delay of each link between two stages (waveguides and fibre array
    /// units between interposers; the paper gives no value: 0 by default).
    pub stage_link: SimTime,
    /// Delay of the link from the last stage to a node (Table VI: 100 ns).
    pub ejection_link: SimTime,
    /// Links from the last stage into a node: 0 (the default) = m, the m
    /// outputs of its direction (a node receives up to m packets at once);
    /// 1..m keeps the first that many (one: a node with one receiver).
    pub ejection_links: u32,
    /// Largest data packet (payload): flows are cut into packets of at most
    /// this size (§V-A: 512 B).
    pub packet: ByteSize,
    /// Size of an ACK (the paper gives none).
    pub ack: ByteSize,
    /// Bit periods without light that end a packet (§IV-C: 6T): each switch
    /// output stays busy this long after a packet's tail, and a transmitter
    /// leaves this gap between packets.
    pub end_gap_bits: u32,
    /// Time from a data packet's transmission to its retransmission if no ACK
    /// arrived (the paper gives none; a lone packet's round trip at the
    /// defaults is about 0.6 us).
    pub timeout: SimTime,
    /// Binary exponential backoff slot (see `backoff`).
    pub backoff_slot: SimTime,
    /// Largest backoff exponent.
    pub backoff_cap: u32,
    /// What the binary exponential backoff throttles. `"node"` (the
    /// default, §IV-E: BEB "to throttle the transmitter nodes when the
    /// network starts to experience an increasing number of packet drops"):
    /// a node's stage c counts its timeouts since it last received an ACK;
    /// while c > 0 each of its data transmissions (new or resent; ACKs are
    /// never held) waits a uniform number of slots in [0, 2^min(c,
    /// backoff_cap) − 1] first. `"packet"`: only the timed-out packet
    /// waits, after its c-th timeout, and the node keeps sending the rest
    /// at line rate (without a window this can livelock under overload).
    pub backoff: Backoff,
    /// Wire each sorting group's outputs to the next stage by a seeded random
    /// permutation (the paper's "randomness", §IV-E); false: in order.
    pub random_wiring: bool,
    /// When racks × servers_per_rack is not a power of two: build the next
    /// larger butterfly and leave its extra ports unused (true), or refuse the
    /// topology (false). `photonet compare`'s 192-server scenario sets it.
    pub round_up_nodes: bool,
}

impl Default for BaldurParams {
    fn default() -> Self {
        BaldurParams {
            multiplicity: 4,
            switch_latency: None,
            injection_link: SimTime::ns(100),
            stage_link: SimTime::ZERO,
            ejection_link: SimTime::ns(100),
            ejection_links: 0,
            packet: ByteSize(512),
            ack: ByteSize(16),
            end_gap_bits: 6,
            timeout: SimTime::us(2),
            backoff_slot: SimTime::ns(200),
            backoff_cap: 10,
            backoff: Backoff::Node,
            random_wiring: true,
            round_up_nodes: false,
        }
    }
}

/// What Baldur's binary exponential backoff throttles (`baldur.backoff`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    /// The node's data transmissions (the paper's reading).
    Node,
    /// Only each timed-out packet's retransmission.
    Packet,
}

impl ParamTable for BaldurParams {
    const TABLE: &'static str = "baldur";
}

/// Checked numbers derived from the parameters and the topology.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub nodes: u32,
    pub stages: u32,
    pub m: u32,
    pub rate: Rate,
    pub switch_latency: SimTime,
    /// Head leaves the node → head reaches the destination node.
    pub head_latency: SimTime,
    /// One bit period, in picoseconds (rounded to the nearest).
    pub gap: SimTime,
}

impl Layout {
    pub fn new(p: &BaldurParams, ctx: &BuildContext) -> Result<Layout, ConfigError> {
        let n = ctx.topology.hosts();
        if n < 2 || (!n.is_power_of_two() && !p.round_up_nodes) {
            return Err(ConfigError::new(
                "topology.racks",
                format!("{} racks x {} servers", ctx.topology.racks, ctx.topology.servers_per_rack),
                format!("Baldur's nodes (racks x servers_per_rack = {n}) must be a power of two, at least 2 (a k-stage butterfly of 2x2 switches has 2^k nodes; baldur.round_up_nodes = true leaves the extra ports of the next larger one unused)"),
            ));
        }
        let m = p.multiplicity;
        if m == 0 || m > MAX_MULTIPLICITY {
            return Err(ConfigError::new(
                "baldur.multiplicity",
                m,
                format!("the multiplicity (ports per direction of a 2x2 switch) must be 1..{MAX_MULTIPLICITY}"),
            ));
        }
        if p.ejection_links > m {
            return Err(ConfigError::new(
                "baldur.ejection_links",
                p.ejection_links,
                format!("a node has at most m = {m} links from the last stage"),
            ));
        }
        let switch_latency = match p.switch_latency {
            Some(t) => t,
            None if m <= 5 => SimTime(TABLE_V_SWITCH_LATENCY_PS[m as usize - 1]),
            None => {
                return Err(ConfigError::new(
                    "baldur.switch_latency",
                    "(unset)",
                    format!("Table V gives switch latencies for multiplicity 1..5 only; set switch_latency for multiplicity {m}"),
                ))
            }
        };
        for (key, b) in [("baldur.packet", p.packet), ("baldur.ack", p.ack)] {
            if b.0 == 0 || b.0 > 1 << 24 {
                return Err(ConfigError::new(
                    key,
                    format!("\"{}B\"", b.0),
                    "must be 1 B..16 MiB",
                ));
            }
        }
        if p.backoff_cap > 30 {
            return Err(ConfigError::new(
                "baldur.backoff_cap",
                p.backoff_cap,
                "at most 30",
            ));
        }
        if p.timeout == SimTime::ZERO {
            return Err(ConfigError::new(
                "baldur.timeout",
                "\"0ns\"",
                "a retransmission timeout must be positive",
            ));
        }
        let rate = ctx.topology.host_rate();
        if rate.0 == 0 {
            return Err(ConfigError::new(
                "topology.server_rate",
                "0",
                "Baldur's link rate must be positive",
            ));
        }
        let stages = n.next_power_of_two().trailing_zeros();
        let head_latency = p.injection_link
            + switch_latency * stages as u64
            + p.stage_link * (stages as u64 - 1)
            + p.ejection_link;
        Ok(Layout {
            nodes: n as u32,
            stages,
            m,
            rate,
            switch_latency,
            head_latency,
            gap: bits_time(rate, p.end_gap_bits as u64),
        })
    }

    /// A packet of `bytes` on the wire: its bits plus 3 bit periods per
    /// length-encoded routing bit.
    pub fn wire_time(&self, bytes: u64) -> SimTime {
        bits_time(self.rate, bytes * 8 + 3 * self.stages as u64)
    }
}

/// `bits` at `rate`, rounded up to a picosecond.
fn bits_time(rate: Rate, bits: u64) -> SimTime {
    SimTime((bits as u128 * SimTime::S as u128).div_ceil(rate.0 as u128) as u64)
}

/// Registration of Baldur.
pub struct BaldurModule;

impl FabricModule for BaldurModule {
    type Params = BaldurParams;
    const VARIANTS: &'static [Variant] = &[Variant {
        name: "baldur",
        label: "Baldur",
        description: "Baldur: bufferless clock-less all-optical multi-butterfly of 2x2 TL switches with path multiplicity m, drops, ACKs, timeout retransmission and binary exponential backoff",
    }];

    type Layout = Layout;

    fn plan(p: &BaldurParams, _: &Variant, ctx: &BuildContext) -> Result<Layout, ConfigError> {
        Layout::new(p, ctx)
    }

    fn memory(_: &BaldurParams, _: &Layout, _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        vec![MemoryPart::per_host(
            ctx,
            16384,
            "switches, ports and links per host",
        )]
    }
    fn build(
        p: BaldurParams,
        l: Layout,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(
            Baldur::new(&p, l, &RngStreams::new(ctx.seed)).with_checks(ctx.check_invariants),
        ))
    }

    /// Exact when nothing is dropped: the source sends the flow's packets
    /// back to back (each its wire time plus the end gap), and the last one
    /// arrives the head latency (links and k switches) plus its wire time
    /// after it started. With m ≥ 2 a lone flow is never dropped: a switch
    /// direction sees at most one of its data packets and one ACK at once.
    /// With m = 1 an ACK can collide with data; the bound then allows one
    /// timeout plus the largest first backoff per packet.
    fn lone_flow_fct(p: &BaldurParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (ctx, bytes) = (f.ctx, f.bytes);
        let l = Layout::new(p, ctx)?;
        let n = unit_count(bytes, p.packet.0);
        let mut t = SimTime::ZERO;
        for s in 0..n {
            let w = l.wire_time(unit_bytes(s, bytes, p.packet.0));
            t += if s + 1 == n { w } else { w + l.gap };
        }
        let exact = t + l.head_latency;
        let slack = if l.m >= 2 {
            SimTime::ZERO
        } else {
            (p.timeout + p.backoff_slot + l.wire_time(p.packet.0) + l.gap) * n as u64
        };
        Ok(FctBounds {
            min: exact,
            max: exact + slack,
        })
    }
}

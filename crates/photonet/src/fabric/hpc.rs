//! Baldur's buffered electrical baselines (seed `baldur-all-optical.txt`
//! §V-A, Table VI) on the packet substrate `net/`: the electrical
//! multi-butterfly (`fabric = "multibutterfly"`, topology
//! [`net::multibutterfly`](crate::net::multibutterfly)) and the dragonfly
//! (`fabric = "dragonfly"`, [`net::dragonfly`](crate::net::dragonfly)). One
//! table, `[hpc]`, configures both. The third baseline, the 3-level fat-tree
//! with adaptive routing, is `fabric = "fat_tree"` with `routing =
//! "adaptive"` (see `experiments/baldur`).
//!
//! # Model
//! HPC networks are lossless: hosts send window-free at line rate (the
//! substrate's paced transport, no ACKs) and switches hold packets in
//! finite input buffers (`buffer`, Table VI: 24 KB per port) under
//! link-level flow control, cut-through (`cut_through`, Table VI's 90 ns
//! switches; or store-and-forward). A packet's latency is its
//! (one-packet) flow's completion time: from generation, through the NIC
//! queue, to delivery.
//!
//! Flow control (Table VI) is credit-based per virtual channel: `vcs` = 3
//! VCs share a port's `buffer` equally, a packet is sent only with credits
//! for all its bytes on its VC (`net/`'s credits). The dragonfly puts a
//! packet on the VC of its global hops so far (deadlock-free with UGAL);
//! the multi-butterfly, feed-forward, spreads packets over VCs by flow.
//! `flow_control = "pfc"` (multi-butterfly only: the dragonfly's routes
//! deadlock on one class) instead pauses an ingress link above `buffer`
//! minus the bytes one link round trip still delivers.
//!
//! The dragonfly routes by UGAL-L (`dragonfly_routing = "ugal"`, Table VI's
//! "adaptive" [16]) or minimally. Its links run at the host rate unless
//! `dragonfly_terminal_rate`, `dragonfly_local_rate` or
//! `dragonfly_global_rate` set their own (CODES's dragonfly model gives the
//! terminal, local and global channels separate bandwidths: 5.25, 5.25 and
//! 4.7 GiB/s by default; the paper states only the 25 Gb/s of §V-A).
//!
//! # Delays
//! Table VI gives a switch latency (90 ns) and link delays per link kind
//! (multi-butterfly 100 ns; dragonfly 10 ns within a group, 100 ns between
//! groups). Each link carries its own delay (`Graph::delays`): its Table VI
//! delay, plus the switch latency when a switch sends on it (the latency of
//! the switch it leaves), so every path's total is exact:
//! - multi-butterfly: NIC links `link_delay`, every other link
//!   `link_delay + switch_latency`: (k+1)·link + k·switch on every path;
//! - dragonfly: NIC links `local_link_delay`, router-to-host and local links
//!   `local_link_delay + switch_latency`, global links `link_delay +
//!   switch_latency`.

use crate::error::{bad, ConfigError};
use crate::fabric::fat_tree::NetFabric;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::net::calendar::shift_for;
use crate::net::dragonfly::Dragonfly;
use crate::net::multibutterfly::MultiButterfly;
use crate::net::{
    CreditConfig, FlowControl, Graph, NetConfig, Network, PfcConfig, Routing, Transport, MAX_VCS,
};
use crate::rng::RngStreams;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest multiplicity of the electrical multi-butterfly.
pub const MAX_MULTIPLICITY: u32 = 64;

/// Link-level flow control of the HPC baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HpcFlowControl {
    /// Credits per virtual channel (Table VI).
    Credit,
    /// Priority flow control per ingress link (one class).
    Pfc,
}

/// Dragonfly routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DragonflyRouting {
    /// UGAL-L: minimal or Valiant, chosen at the source router by queue x hops.
    Ugal,
    /// Minimal only.
    Minimal,
}

/// Parameters of Baldur's electrical baselines (`fabric = "multibutterfly"`
/// or `"dragonfly"`). Defaults are Table VI's.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HpcParams {
    /// Multi-butterfly: path multiplicity m, ports per direction of every
    /// radix-2 switch (Table VI: 4).
    pub multiplicity: u32,
    /// Multi-butterfly: last-stage outputs per direction that may carry a
    /// packet to its host: 0 (the default) = m, so a host receives on m
    /// links; 1..m: that many (one: a host with one receiver).
    pub ejection_links: u32,
    /// Multi-butterfly: wire each sorting group's outputs by a seeded random
    /// permutation (the same wiring as `fabric = "baldur"` for a seed);
    /// false: in order.
    pub random_wiring: bool,
    /// Dragonfly: hosts per router p (0 = the smallest balanced dragonfly,
    /// a = 2p = 2h, that has exactly the topology's hosts).
    pub dragonfly_p: u32,
    /// Dragonfly: routers per group a (0 = 2p).
    pub dragonfly_a: u32,
    /// Dragonfly: global links per router h (0 = p).
    pub dragonfly_h: u32,
    /// Dragonfly: "ugal" (UGAL-L, Table VI's adaptive routing) or "minimal".
    pub dragonfly_routing: DragonflyRouting,
    /// Dragonfly: rate of the links between a host and its router, both
    /// ways (unset: the topology's host rate). CODES's `cn_bandwidth`
    /// (default 5.25 GiB/s = 45.097 Gbps).
    pub dragonfly_terminal_rate: Option<Rate>,
    /// Dragonfly: rate of the links within a group (unset: the host rate).
    /// CODES's `local_bandwidth` (default 5.25 GiB/s).
    pub dragonfly_local_rate: Option<Rate>,
    /// Dragonfly: rate of the links between groups (unset: the host rate).
    /// CODES's `global_bandwidth` (default 4.7 GiB/s = 40.37 Gbps).
    pub dragonfly_global_rate: Option<Rate>,
    /// Latency of a switch, header to header (Table VI: 90 ns).
    pub switch_latency: SimTime,
    /// Multi-butterfly: every link; dragonfly: links between groups
    /// (Table VI: 100 ns).
    pub link_delay: SimTime,
    /// Dragonfly: links within a group and to hosts (Table VI: 10 ns).
    pub local_link_delay: SimTime,
    /// Payload of a packet: flows are cut into packets of at most this
    /// (§V-A: 512 B).
    pub packet: ByteSize,
    /// Header bytes added to every packet on the wire (the paper gives none).
    pub header: ByteSize,
    /// Input buffer per switch port, bytes (Table VI: 24 KB); with credits
    /// split equally among the VCs.
    pub buffer: ByteSize,
    /// "credit" (per virtual channel, Table VI) or "pfc".
    pub flow_control: HpcFlowControl,
    /// Credit: virtual channels per link, 1..16 (Table VI: 3; the dragonfly
    /// needs 3 for deadlock freedom with UGAL, 2 with minimal routing).
    /// Ignored with PFC (one class).
    pub vcs: u32,
    /// How a switch picks among equal next hops (the multi-butterfly's m
    /// ports of a direction): "adaptive" (least backlog), "spray", "ecmp".
    pub routing: Routing,
    /// Cut-through switching (true, Table VI's): a switch sends a packet on
    /// as soon as its header (`header` bytes; with 0, its first bit) has
    /// arrived and the output and the VC's credits for the whole packet
    /// are free (virtual cut-through); false: store-and-forward. Table VI's
    /// 90 ns EDR InfiniBand switch latency is shorter than the 163.84 ns a
    /// 512 B packet takes at 25 Gb/s, so its switches cut through.
    pub cut_through: bool,
    /// Multi-butterfly: when racks x servers_per_rack is not a power of two,
    /// build the next larger one and leave its extra hosts idle (true), or
    /// refuse the topology (false). `photonet compare`'s 192 servers set it.
    pub round_up_nodes: bool,
}

impl Default for HpcParams {
    fn default() -> Self {
        HpcParams {
            multiplicity: 4,
            ejection_links: 0,
            random_wiring: true,
            dragonfly_p: 0,
            dragonfly_a: 0,
            dragonfly_h: 0,
            dragonfly_routing: DragonflyRouting::Ugal,
            dragonfly_terminal_rate: None,
            dragonfly_local_rate: None,
            dragonfly_global_rate: None,
            switch_latency: SimTime::ns(90),
            link_delay: SimTime::ns(100),
            local_link_delay: SimTime::ns(10),
            packet: ByteSize(512),
            header: ByteSize(0),
            buffer: ByteSize(24_000),
            flow_control: HpcFlowControl::Credit,
            vcs: 3,
            routing: Routing::Adaptive,
            cut_through: true,
            round_up_nodes: false,
        }
    }
}

impl ParamTable for HpcParams {
    const TABLE: &'static str = "hpc";
}

/// The `multibutterfly` variant.
pub const MULTIBUTTERFLY: Variant = Variant {
    name: "multibutterfly",
    label: "Electrical multi-butterfly",
    description: "Electrical multi-butterfly (Baldur's Table VI baseline): radix-2 buffered switches with path multiplicity m, adaptive choice among the m ports, credits on 3 VCs, 90 ns switches",
};
/// The `dragonfly` variant.
pub const DRAGONFLY: Variant = Variant {
    name: "dragonfly",
    label: "Dragonfly",
    description: "Dragonfly (Baldur's Table VI baseline): balanced a = 2p = 2h groups, one global link per group pair, UGAL-L adaptive routing, credits on 3 VCs, 90 ns switches",
};

/// A checked topology: which network, its delay per link, its hosts.
pub enum Shape {
    Mb(MultiButterfly),
    Df(Dragonfly),
}

impl Shape {
    fn new(p: &HpcParams, v: &Variant, ctx: &BuildContext) -> Result<Shape, ConfigError> {
        Self::checked(p, v, ctx, true)
    }

    /// The checked shape; the multi-butterfly's wiring drawn only if
    /// `wired` (the lone-flow bounds, asked for ~70 pairs before a run,
    /// need only its stages).
    fn checked(
        p: &HpcParams,
        v: &Variant,
        ctx: &BuildContext,
        wired: bool,
    ) -> Result<Shape, ConfigError> {
        let n = ctx.topology.hosts();
        let topo_err = |why: String| {
            ConfigError::new(
                "topology.racks",
                format!(
                    "{} racks x {} servers",
                    ctx.topology.racks, ctx.topology.servers_per_rack
                ),
                why,
            )
        };
        if v.name == MULTIBUTTERFLY.name {
            if n < 2 || (!n.is_power_of_two() && !p.round_up_nodes) || n > 1 << 30 {
                return Err(topo_err(format!(
                    "a multi-butterfly of radix-2 switches has 2^k hosts; racks x servers_per_rack = {n} (hpc.round_up_nodes = true leaves the extra hosts of the next larger one idle)"
                )));
            }
            if p.multiplicity == 0 || p.multiplicity > MAX_MULTIPLICITY {
                return Err(bad(
                    HpcParams::TABLE,
                    "multiplicity",
                    p.multiplicity,
                    format!("ports per direction of a switch must be 1..{MAX_MULTIPLICITY}"),
                ));
            }
            if p.ejection_links > p.multiplicity {
                return Err(bad(
                    HpcParams::TABLE,
                    "ejection_links",
                    p.ejection_links,
                    format!(
                        "a host has at most m = {} links from the last stage",
                        p.multiplicity
                    ),
                ));
            }
            let k = n.next_power_of_two().trailing_zeros();
            let eject = if p.ejection_links == 0 {
                p.multiplicity
            } else {
                p.ejection_links
            };
            let mb = if wired {
                let mut rng = RngStreams::new(ctx.seed).stream("baldur.wiring");
                MultiButterfly::new(k, p.multiplicity, p.random_wiring.then_some(&mut rng))
            } else {
                MultiButterfly::unwired(k, p.multiplicity)
            };
            Ok(Shape::Mb(mb.with_ejection(eject)))
        } else {
            let hosts = u32::try_from(n).map_err(|_| topo_err(format!("{n} hosts")))?;
            let d = if p.dragonfly_p == 0 {
                if p.dragonfly_a != 0 || p.dragonfly_h != 0 {
                    return Err(bad(HpcParams::TABLE,
                        "dragonfly_p",
                        0,
                        "set dragonfly_p when setting dragonfly_a or dragonfly_h (0 = the balanced shape)",
                    ));
                }
                Dragonfly::balanced(hosts).map_err(|e| {
                    topo_err(format!(
                        "no balanced dragonfly (a = 2p = 2h) has exactly {hosts} hosts: {e}"
                    ))
                })?
            } else {
                let pp = p.dragonfly_p;
                let a = if p.dragonfly_a == 0 {
                    2 * pp
                } else {
                    p.dragonfly_a
                };
                let h = if p.dragonfly_h == 0 {
                    pp
                } else {
                    p.dragonfly_h
                };
                Dragonfly::new(hosts, pp, a, h).map_err(|e| {
                    bad(
                        HpcParams::TABLE,
                        "dragonfly_p",
                        format!("{pp} (a = {a}, h = {h}, {hosts} hosts)"),
                        e.to_string(),
                    )
                })?
            };
            Ok(Shape::Df(
                d.with_ugal(p.dragonfly_routing == DragonflyRouting::Ugal),
            ))
        }
    }

    /// The delay of a link of tier `tier` (see the module docs): its
    /// Table VI delay plus, if a switch sends on it, the switch latency.
    fn delay(&self, p: &HpcParams, tier: u8) -> SimTime {
        let from_switch = if tier == 0 {
            SimTime::ZERO
        } else {
            p.switch_latency
        };
        let link = match self {
            // Tiers: nic, stage, eject.
            Shape::Mb(_) => p.link_delay,
            // Tiers: nic, down, local, global.
            Shape::Df(_) => {
                if tier == 3 {
                    p.link_delay
                } else {
                    p.local_link_delay
                }
            }
        };
        link + from_switch
    }

    /// Each tier's link rate (nic, then the topology's own tiers): the
    /// host rate `r` unless the dragonfly sets its own.
    fn rates(&self, p: &HpcParams, r: Rate) -> [Rate; 4] {
        match self {
            Shape::Mb(_) => [r; 4],
            Shape::Df(_) => {
                let t = p.dragonfly_terminal_rate.unwrap_or(r);
                [
                    t,
                    t,
                    p.dragonfly_local_rate.unwrap_or(r),
                    p.dragonfly_global_rate.unwrap_or(r),
                ]
            }
        }
    }

    /// The longest link delay (for the PFC headroom).
    fn max_delay(&self, p: &HpcParams) -> SimTime {
        (0..4).map(|t| self.delay(p, t)).max().expect("tiers")
    }

    /// Total delay over the minimal path from `src` to `dst`.
    fn path_delay(&self, p: &HpcParams, src: u32, dst: u32) -> SimTime {
        match self {
            Shape::Mb(mb) => {
                let k = mb.stages() as u64;
                self.delay(p, 0) + self.delay(p, 1) * k
            }
            Shape::Df(d) => {
                let links = d.minimal_links(src, dst) as u64;
                let globals = d.minimal_globals(src, dst) as u64;
                self.delay(p, 0)
                    + self.delay(p, 1)
                    + self.delay(p, 3) * globals
                    + self.delay(p, 2) * (links - 2 - globals)
            }
        }
    }

    fn links(&self, src: u32, dst: u32) -> u64 {
        match self {
            Shape::Mb(mb) => mb.path_links() as u64,
            Shape::Df(d) => d.minimal_links(src, dst) as u64,
        }
    }
}

/// PFC thresholds for an ingress buffer: pause when the bytes one link round
/// trip still delivers (plus two frames) would no longer fit.
fn pfc(p: &HpcParams, rate: Rate, prop: SimTime) -> Result<PfcConfig, ConfigError> {
    let frame = p.packet.0 + p.header.0;
    let headroom = rate.bytes_in(prop * 2) + 1 + 2 * frame;
    if p.buffer.0 < headroom + frame {
        return Err(bad(HpcParams::TABLE,
            "buffer",
            format!("\"{}\"", p.buffer),
            format!(
                "an input buffer must hold one frame ({frame} B) above the {headroom} B one link round trip delivers after a pause"
            ),
        ));
    }
    let xoff = p.buffer.0 - headroom;
    Ok(PfcConfig {
        xoff,
        xon: xoff / 2,
        pause_delay: SimTime::ZERO,
        resume_delay: SimTime::ZERO,
    })
}

/// PFC here has one class: the dragonfly's routes (minimal local-global-local
/// hops, and UGAL's detours) form cyclic buffer dependencies without virtual
/// channels, so a loaded run deadlocks with flows pending.
fn pfc_on_dragonfly() -> ConfigError {
    bad(
        HpcParams::TABLE,
        "flow_control",
        "\"pfc\"",
        "the dragonfly's routing can deadlock under PFC (one class, cyclic buffer dependencies between local and global links); use flow_control = \"credit\" with vcs >= 2 (minimal) or 3 (ugal)",
    )
}

/// The link-level flow control the table asks for.
fn flow_control(p: &HpcParams, rate: Rate, prop: SimTime) -> Result<FlowControl, ConfigError> {
    let frame = p.packet.0 + p.header.0;
    match p.flow_control {
        HpcFlowControl::Pfc => Ok(FlowControl::Pfc(pfc(p, rate, prop)?)),
        HpcFlowControl::Credit => {
            if p.vcs == 0 || p.vcs > MAX_VCS as u32 {
                return Err(bad(
                    HpcParams::TABLE,
                    "vcs",
                    p.vcs,
                    format!("must be 1..{MAX_VCS}"),
                ));
            }
            let per_vc = p.buffer.0 / p.vcs as u64;
            if per_vc < frame {
                return Err(bad(HpcParams::TABLE,
                    "buffer",
                    format!("\"{}\"", p.buffer),
                    format!("buffer / vcs = {per_vc} B of credit per VC is less than one packet ({frame} B)"),
                ));
            }
            Ok(FlowControl::Credit(CreditConfig {
                vcs: p.vcs as u8,
                vc_buffer: per_vc,
                credit_delay: SimTime::ZERO,
            }))
        }
    }
}

fn check(p: &HpcParams) -> Result<(), ConfigError> {
    if p.packet.0 == 0 || p.packet.0 + p.header.0 > 9_216 {
        return Err(bad(
            HpcParams::TABLE,
            "packet",
            format!("\"{}\"", p.packet),
            format!(
                "a packet (with its {} B header) must be 1 B..9216 B",
                p.header.0
            ),
        ));
    }
    Ok(())
}

/// Registration of the electrical multi-butterfly and the dragonfly.
pub struct HpcModule;

impl FabricModule for HpcModule {
    type Params = HpcParams;
    const VARIANTS: &'static [Variant] = &[MULTIBUTTERFLY, DRAGONFLY];

    type Layout = (Shape, FlowControl);

    /// Each network's own keys (read only in `Shape::new`, `Shape::delay`
    /// and `Shape::rates`, for its own shape).
    fn unread_keys(v: &Variant, _: &HpcParams) -> &'static [&'static str] {
        const MB_ONLY: &[&str] = &[
            "multiplicity",
            "ejection_links",
            "random_wiring",
            "round_up_nodes",
        ];
        const DF_ONLY: &[&str] = &[
            "dragonfly_p",
            "dragonfly_a",
            "dragonfly_h",
            "dragonfly_routing",
            "dragonfly_terminal_rate",
            "dragonfly_local_rate",
            "dragonfly_global_rate",
            "local_link_delay",
        ];
        if v.name == MULTIBUTTERFLY.name {
            DF_ONLY
        } else {
            MB_ONLY
        }
    }

    fn plan(
        p: &HpcParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<(Shape, FlowControl), ConfigError> {
        check(p)?;
        let shape = Shape::new(p, v, ctx)?;
        if p.flow_control == HpcFlowControl::Pfc && matches!(shape, Shape::Df(_)) {
            return Err(pfc_on_dragonfly());
        }
        for (key, r) in [
            ("dragonfly_terminal_rate", p.dragonfly_terminal_rate),
            ("dragonfly_local_rate", p.dragonfly_local_rate),
            ("dragonfly_global_rate", p.dragonfly_global_rate),
        ] {
            if r == Some(Rate(0)) {
                return Err(bad(
                    HpcParams::TABLE,
                    key,
                    "\"0bps\"",
                    "a link needs a rate above zero (leave the key out for the host rate)",
                ));
            }
        }
        let fc = flow_control(p, ctx.topology.host_rate(), shape.max_delay(p))?;
        Ok((shape, fc))
    }

    fn memory(
        _: &HpcParams,
        _: &(Shape, FlowControl),
        _: &Variant,
        ctx: &BuildContext,
    ) -> Vec<MemoryPart> {
        vec![MemoryPart::per_host(
            ctx,
            16384,
            "switches, ports and links per host",
        )]
    }
    fn build(
        p: HpcParams,
        (shape, fc): (Shape, FlowControl),
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let rate = ctx.topology.host_rate();
        let n = ctx.topology.hosts();
        let prop = shape.max_delay(&p);
        let tier_delay: Vec<SimTime> = (0..4).map(|t| shape.delay(&p, t)).collect();
        let shape_rates = shape.rates(&p, rate);
        let cfg = NetConfig {
            payload: p.packet.0 as u32,
            header: p.header.0 as u32,
            ack_bytes: 64,
            propagation: prop,
            buffer: p.buffer.0,
            ecn_k: None,
            flow_control: fc,
            transport: Transport::Paced,
            routing: p.routing,
            cut_through: p.cut_through,
            loss: 0.0,
            seed: ctx.seed,
            ..NetConfig::default()
        };
        // Each link carries its tier's Table VI delay.
        let with_delays = |mut g: Graph| {
            g.delays = g
                .ports
                .iter()
                .map(|s| tier_delay[s.tier as usize])
                .collect();
            g
        };
        Ok(match shape {
            Shape::Mb(mb) => {
                let label = format!("Electrical multi-butterfly (m = {})", mb.multiplicity());
                let g = with_delays(mb.graph(rate));
                // Dense in time: up to ~2 events per packet-hop, k + 1 hops
                // per packet, every host a packet per frame time. Narrower
                // buckets than the default's 0.5 ns, which hold dozens of
                // entries at 1,024 nodes (each bucket sorted when reached).
                let frame = rate.tx_time(p.packet.0 + p.header.0).0;
                let per_frame = n as u64 * 2 * mb.path_links() as u64;
                let shift = shift_for(frame / per_frame.max(1));
                let mut net = Network::new(cfg, g, mb);
                net.set_calendar_shift(shift);
                net.retire_finished_flows(false);
                Box::new(NetFabric::with_network(label, n, rate, net, ()))
            }
            Shape::Df(d) => {
                let label = format!(
                    "Dragonfly (p = {}, a = {}, h = {}, g = {}, {})",
                    d.p,
                    d.a,
                    d.h,
                    d.g,
                    if d.ugal { "UGAL" } else { "minimal" }
                );
                let g = with_delays(d.graph_with_rates(shape_rates));
                // Saturated at Table VI's load, its ports are mostly free
                // with packets queued, where lazy port-free costs more than
                // it saves (docs/perf-notes/baldur-net.md), so its ends stay
                // events.
                let mut net = crate::net::Network::new(cfg, g, d);
                net.set_lazy_port_free(false);
                net.retire_finished_flows(false);
                Box::new(NetFabric::with_network(label, n, rate, net, ()))
            }
        })
    }

    /// Store-and-forward at one rate R over the path's `h` links with the
    /// uniform link delay d: FCT = wire/R + (h − 1)·s₀/R + h·d (s₀ the first
    /// packet's bytes on the wire), at least wire/R + h·d; plus a
    /// picosecond of rounding per packet-hop. Cut-through lies between:
    /// wire/R + (h − 1)·header/R + h·d.
    fn lone_flow_fct(p: &HpcParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (v, ctx, src, dst, bytes) = (f.variant, f.ctx, f.src, f.dst, f.bytes);
        let shape = Shape::checked(p, v, ctx, false)?;
        // With per-tier rates (the dragonfly's CODES rates) the fastest
        // link bounds the FCT below and the slowest above.
        let rates = shape.rates(p, ctx.topology.host_rate());
        let (r_fast, r) = (
            *rates.iter().max().expect("tiers"),
            *rates.iter().min().expect("tiers"),
        );
        let bytes = bytes.max(1);
        let npkts = bytes.div_ceil(p.packet.0);
        let wire = bytes + npkts * p.header.0;
        let first = bytes.min(p.packet.0) + p.header.0;
        let h = shape.links(src, dst);
        let prop = shape.path_delay(p, src, dst);
        Ok(FctBounds {
            min: r_fast.tx_time(wire).saturating_sub(SimTime(1)) + prop,
            max: r.tx_time(wire) + r.tx_time(first) * (h - 1) + prop + SimTime(npkts * h),
        })
    }
}

/// A packet network over topology `R` as a [`Fabric`].
pub type HpcFabric<R> = NetFabric<Network<R>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Flow;
    use crate::recorder::Recorder;
    use crate::topology::Topology;

    fn topo(n: u32) -> Topology {
        Topology {
            racks: n,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(25),
            ..Topology::default()
        }
    }

    #[test]
    fn bad_input_names_key_value_and_reason() {
        let t = topo(1024);
        let bad = |p: HpcParams, v: &Variant, t: &Topology, key: &str, why: &str| {
            let e = HpcModule::plan_and_build(p, v, &BuildContext::test(t))
                .err()
                .expect("refused");
            assert!(e.key == key && e.reason.contains(why), "{e}");
            assert!(!e.value.is_empty(), "{e}");
        };
        let d = HpcParams::default;
        bad(
            HpcParams {
                multiplicity: 0,
                ..d()
            },
            &MULTIBUTTERFLY,
            &t,
            "hpc.multiplicity",
            "1..64",
        );
        bad(d(), &MULTIBUTTERFLY, &topo(1000), "topology.racks", "2^k");
        // 34 groups of 32 hosts: one more than a balanced p = 4 group wires.
        bad(
            HpcParams {
                dragonfly_p: 4,
                ..d()
            },
            &DRAGONFLY,
            &topo(34 * 32),
            "hpc.dragonfly_p",
            "at most 33 groups",
        );
        bad(
            HpcParams {
                dragonfly_p: 4,
                ..d()
            },
            &DRAGONFLY,
            &topo(1000),
            "hpc.dragonfly_p",
            "whole number of groups",
        );
        bad(d(), &DRAGONFLY, &topo(7), "topology.racks", "balanced");
        bad(
            HpcParams {
                buffer: ByteSize(2_000),
                flow_control: HpcFlowControl::Pfc,
                ..d()
            },
            &MULTIBUTTERFLY,
            &t,
            "hpc.buffer",
            "round trip",
        );
        bad(
            HpcParams {
                buffer: ByteSize(1_200),
                ..d()
            },
            &MULTIBUTTERFLY,
            &t,
            "hpc.buffer",
            "per VC",
        );
        bad(
            HpcParams { vcs: 0, ..d() },
            &DRAGONFLY,
            &t,
            "hpc.vcs",
            "1..16",
        );

        bad(
            HpcParams {
                packet: ByteSize(0),
                ..d()
            },
            &DRAGONFLY,
            &t,
            "hpc.packet",
            "1 B",
        );
    }

    /// Runs one flow of `bytes` from `src` to `dst` alone; its FCT.
    fn lone_fct(p: &HpcParams, v: &Variant, n: u32, src: u32, dst: u32, bytes: u64) -> SimTime {
        let t = topo(n);
        let mut fab = HpcModule::plan_and_build(p.clone(), v, &BuildContext::test(&t)).unwrap();
        let f = Flow {
            id: 0,
            src,
            dst,
            bytes,
            start: SimTime::ZERO,
        };
        let mut rec = Recorder::new(None);
        rec.register(&f);
        fab.add_flow(SimTime::ZERO, &f, &mut rec);
        while let Some(t) = fab.next_event() {
            fab.advance(t, &mut rec);
            fab.check_invariants().unwrap();
        }
        rec.finish(0).expect("the flow completes")
    }

    #[test]
    fn cut_through_latency_is_hand_worked_on_both_baselines() {
        // 25 Gb/s: a 512 B packet takes 163.84 ns on a link. Multi-butterfly
        // of 8 nodes (3 stages): 4 links, NIC 100 ns + 3 x (100 + 90) ns =
        // 670 ns of delay on every path.
        //   store-and-forward, one packet: 4 x 163.84 + 670 = 1,325.36 ns;
        //   cut-through: each switch forwards the first bit on at once
        //   (header 0 B): 163.84 + 670 = 833.84 ns.
        //   Three packets (1,536 B), back to back: SF 3 x 163.84 + 3 x
        //   163.84 + 670 = 1,653.04 ns; CT 3 x 163.84 + 670 = 1,161.52 ns.
        //   A 16 B header (528 B = 168.96 ns; header 5.12 ns), one packet:
        //   CT 168.96 + 3 x 5.12 + 670 = 854.32 ns.
        let sf = HpcParams {
            cut_through: false,
            ..HpcParams::default()
        };
        let ct = HpcParams::default();
        assert!(ct.cut_through, "Table VI's switches cut through");
        let mb = &MULTIBUTTERFLY;
        assert_eq!(lone_fct(&sf, mb, 8, 0, 5, 512), SimTime(1_325_360));
        assert_eq!(lone_fct(&ct, mb, 8, 0, 5, 512), SimTime(833_840));
        assert_eq!(lone_fct(&sf, mb, 8, 3, 6, 1_536), SimTime(1_653_040));
        assert_eq!(lone_fct(&ct, mb, 8, 3, 6, 1_536), SimTime(1_161_520));
        let hdr = HpcParams {
            header: ByteSize(16),
            ..ct.clone()
        };
        assert_eq!(lone_fct(&hdr, mb, 8, 0, 5, 512), SimTime(854_320));
        // Dragonfly of 72 nodes (p = 2: a = 4, h = 2, 9 groups), hosts 0
        // and 1 on one router: NIC 10 ns + down 10 + 90 ns = 110 ns, 2
        // links: SF 2 x 163.84 + 110 = 437.68 ns; CT 163.84 + 110 = 273.84
        // ns. To another group (0 -> 71, a minimal path of `links` links
        // through links - 1 routers) CT saves one serialisation per router:
        // (links - 1) x 163.84 ns.
        let df = &DRAGONFLY;
        assert_eq!(lone_fct(&sf, df, 72, 0, 1, 512), SimTime(437_680));
        assert_eq!(lone_fct(&ct, df, 72, 0, 1, 512), SimTime(273_840));
        let t = topo(72);
        let Shape::Df(d) = Shape::new(&ct, df, &BuildContext::test(&t)).unwrap() else {
            unreachable!()
        };
        let links = d.minimal_links(0, 71) as u64;
        let (a, b) = (
            lone_fct(&sf, df, 72, 0, 71, 512),
            lone_fct(&ct, df, 72, 0, 71, 512),
        );
        assert_eq!(a.0 - b.0, (links - 1) * 163_840, "{a} vs {b}");
    }

    #[test]
    fn dragonfly_link_rates_per_tier_are_hand_worked() {
        // 72 nodes (p = 2, a = 4, h = 2, 9 groups). Host 0 (group 0, router
        // 0) to host 71 (group 8, router 3): group 0's link to group 8 is
        // its global port q = 7 (router 3), landing on router 0 of group 8,
        // so the path is nic, local, global, local, down: 500 ns of delay
        // (10 + 100 + 190 + 100 + 100). Store-and-forward, one 512 B packet
        // (4,096 bits):
        //   every link 25 Gb/s: 5 x 163.84 + 500 = 1,319.2 ns;
        //   terminal 50, local 40, global 20 Gb/s: 2 x 81.92 + 2 x 102.4 +
        //   204.8 + 500 = 1,073.44 ns.
        let sf = HpcParams {
            cut_through: false,
            ..HpcParams::default()
        };
        let df = &DRAGONFLY;
        assert_eq!(lone_fct(&sf, df, 72, 0, 71, 512), SimTime(1_319_200));
        let rates = HpcParams {
            dragonfly_terminal_rate: Some(Rate::gbps(50)),
            dragonfly_local_rate: Some(Rate::gbps(40)),
            dragonfly_global_rate: Some(Rate::gbps(20)),
            ..sf.clone()
        };
        assert_eq!(lone_fct(&rates, df, 72, 0, 71, 512), SimTime(1_073_440));
        // Unset rates are the host rate: the same graph as before.
        let t = topo(72);
        let ctx = BuildContext::test(&t);
        let s = Shape::new(&HpcParams::default(), df, &ctx).unwrap();
        assert_eq!(
            s.rates(&HpcParams::default(), Rate::gbps(25)),
            [Rate::gbps(25); 4]
        );
        let Shape::Df(d) = s else { unreachable!() };
        let (a, b) = (
            d.graph(Rate::gbps(25)),
            d.graph_with_rates([Rate::gbps(25); 4]),
        );
        assert!(a
            .ports
            .iter()
            .zip(&b.ports)
            .all(|(x, y)| x.rate == y.rate && x.to == y.to));
        // And a zero rate is refused, naming the key.
        let e = HpcModule::plan_and_build(
            HpcParams {
                dragonfly_global_rate: Some(Rate(0)),
                ..HpcParams::default()
            },
            df,
            &ctx,
        )
        .err()
        .expect("refused");
        assert!(
            e.key == "hpc.dragonfly_global_rate" && e.reason.contains("above zero"),
            "{e}"
        );
    }

    #[test]
    fn lone_flow_bounds_need_no_wiring() {
        // The unwired shape the bounds are computed on has the wired
        // one's links and delays on every path, and the same checks.
        let t = topo(1024);
        let ctx = BuildContext::test(&t);
        let p = HpcParams::default();
        let wired = Shape::new(&p, &MULTIBUTTERFLY, &ctx).unwrap();
        let bare = Shape::checked(&p, &MULTIBUTTERFLY, &ctx, false).unwrap();
        for dst in [1, 2, 511, 1023] {
            assert_eq!(wired.links(0, dst), bare.links(0, dst));
            assert_eq!(wired.path_delay(&p, 0, dst), bare.path_delay(&p, 0, dst));
        }
        assert_eq!(wired.max_delay(&p), bare.max_delay(&p));
        let bad = HpcParams {
            multiplicity: 0,
            ..p.clone()
        };
        assert!(Shape::checked(&bad, &MULTIBUTTERFLY, &ctx, false).is_err());
    }

    #[test]
    fn per_link_delays_make_every_path_exact() {
        // Table VI: 10 switches x 90 ns + 11 links x 100 ns = 2,000 ns.
        let t = topo(1024);
        let p = HpcParams::default();
        let s = Shape::new(&p, &MULTIBUTTERFLY, &BuildContext::test(&t)).unwrap();
        assert_eq!(s.path_delay(&p, 0, 1), SimTime::ns(2_000));
        // Dragonfly, longest minimal path: NIC 10, local 10 + 90, global
        // 100 + 90, local 10 + 90, down 10 + 90 = 500 ns; within one router:
        // NIC 10, down 10 + 90 = 110 ns.
        let s = Shape::new(&p, &DRAGONFLY, &BuildContext::test(&t)).unwrap();
        let Shape::Df(d) = &s else { unreachable!() };
        let (mut longest, mut shortest) = (SimTime::ZERO, SimTime::MAX);
        for dst in 1..1024 {
            let want = match (d.minimal_links(0, dst), d.minimal_globals(0, dst)) {
                (2, 0) => 110,
                (3, 0) => 210,
                (3, 1) => 300,
                (4, 1) => 400,
                (5, 1) => 500,
                other => panic!("{other:?}"),
            };
            let got = s.path_delay(&p, 0, dst);
            assert_eq!(got, SimTime::ns(want), "0 -> {dst}");
            longest = longest.max(got);
            shortest = shortest.min(got);
        }
        assert_eq!((shortest, longest), (SimTime::ns(110), SimTime::ns(500)));
    }
}

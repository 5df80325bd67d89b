//! Packet-level electrical networks: the k-ary 3-tier fat-tree
//! (`fabric = "fat_tree"`) and the 2-tier leaf-spine (`fabric =
//! "leaf_spine"`), on the packet substrate of `net/`: finite output-queued
//! buffers with drop-tail and ECN, optional PFC, per-flow ECMP / per-packet
//! spraying / adaptive routing on up-down paths, and DCTCP (or paced,
//! window-free) hosts; or, with `transport = "ndp"`, NDP hosts over
//! trimming switches (`net::ndp`, [`NdpFabric`]). One table, `[fat_tree]`,
//! configures both.
//!
//! # Shape
//! A 3-tier Clos of `P` pods; a pod has `T` ToRs of `H` hosts and `A`
//! aggregation switches; every ToR has one link to every aggregation switch
//! of its pod; aggregation switch `a` of every pod has `C` uplinks, one to
//! each core of core group `a` (`A·C` cores of `P` ports). A leaf-spine is
//! the same with one pod and no cores (leaves = ToRs, spines = aggregation
//! switches).
//! - Explicit `k` (even): the classic fat-tree `P = k`, `T = H = k/2`,
//!   `A = k/(2·tor_oversubscription)`, `C = k/(2·agg_oversubscription)`,
//!   k³/4 hosts; leaf-spine: `k` leaves of `k/2` hosts, `k/(2·tor_oversubscription)`
//!   spines. Every link runs at `topology.uplink_rate`.
//! - `k = 0`: from the common topology, so that `compare` puts the fabric
//!   beside ESN (Ideal): ToRs = racks, `H = servers_per_rack` at R =
//!   `host_rate()`, `A = uplinks` at `uplink_rate`; a fat-tree groups
//!   `pod_racks` racks per pod (`C = pod_racks / agg_oversubscription`,
//!   cores at `uplink_rate`), a leaf-spine has all racks under `uplinks`
//!   spines. ToR oversubscription is then the topology's own (set
//!   `topology.server_rate`).
//!
//! # Lone-flow latency
//! Store-and-forward over `h` links (2 within a ToR, 4 within a pod, 6
//! across pods) at one rate R, with packets of `s₀ = min(bytes, mtu) +
//! header` bytes first: FCT = wire/R + (h − 1)·s₀/R + h·propagation (wire =
//! bytes + one header per packet), when the window does not limit (a flow of
//! at most `init_cwnd` packets, or the paced transport). DCTCP's slow start
//! adds at most one round trip per doubling of the window.

mod clos;
mod ndp_fabric;
mod net_fabric;
mod params;
mod stats;
#[cfg(test)]
mod tests;

pub use clos::Clos;
pub use ndp_fabric::{ndp_config, NdpFabric};
pub use net_fabric::{NetExtras, NetFabric, PacketNet};
pub use params::{FatTreeParams, FlowControlKind, PriorityKind, TransportKind, MAX_FRAME};
pub use stats::ClosExtras;

use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, Variant,
};
use crate::fabric::Fabric;
use crate::net::{Network, Routing};
use crate::units::SimTime;
use params::{check_params, net_config};

/// Registration of the fat-tree and the leaf-spine.
pub struct FatTreeModule;

/// The `fat_tree` variant.
pub const FAT_TREE_VARIANT: Variant = Variant {
    name: "fat_tree",
    label: "Fat-tree (packet, DCTCP)",
    description: "Packet-level 3-tier fat-tree: finite buffers with drop-tail/ECN (or PFC), ECMP/spraying/adaptive routing, DCTCP hosts",
};
/// The `leaf_spine` variant.
pub const LEAF_SPINE_VARIANT: Variant = Variant {
    name: "leaf_spine",
    label: "Leaf-spine (packet, DCTCP)",
    description: "Packet-level 2-tier leaf-spine: racks under spines, same buffers, routing and transports as fat_tree (table [fat_tree])",
};

impl FabricModule for FatTreeModule {
    type Params = FatTreeParams;
    const VARIANTS: &'static [Variant] = &[FAT_TREE_VARIANT, LEAF_SPINE_VARIANT];

    type Layout = Clos;

    fn plan(p: &FatTreeParams, v: &Variant, ctx: &BuildContext) -> Result<Clos, ConfigError> {
        let clos = Clos::layout(p, v.name == LEAF_SPINE_VARIANT.name, ctx)?;
        check_params(p, &clos)?;
        Ok(clos)
    }

    fn memory(_: &FatTreeParams, c: &Clos, _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        let (pods, t, h, a, cc) = (
            c.pods as u128,
            c.t as u128,
            c.h as u128,
            c.a as u128,
            c.c as u128,
        );
        let hosts = pods * t * h;
        // Host NICs, ToR ports (down and up), aggregation ports, core ports.
        let ports = hosts + pods * t * (h + a) + pods * a * (t + cc) + pods * a * cc;
        let topo = ctx.topology;
        let (key, value) = if topo.uplinks >= topo.servers_per_rack {
            ("topology.uplinks", topo.uplinks)
        } else {
            ("topology.servers_per_rack", topo.servers_per_rack)
        };
        vec![
            MemoryPart::of(ports, 2048, key, value, "switch ports and links"),
            MemoryPart::per_host(ctx, 1024, "host transports"),
        ]
    }
    fn build(
        p: FatTreeParams,
        clos: Clos,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        if p.transport == TransportKind::Ndp {
            return Ok(Box::new(NdpFabric::new(&p, v, clos, ctx.seed)));
        }
        Ok(Box::new(PacketFabric::new(&p, v, clos, ctx.seed)))
    }

    /// At least the NIC's serialisation of every wire byte plus one
    /// propagation per link; at most the store-and-forward closed form at the
    /// path's slowest link (exact when all rates are equal) plus one round
    /// trip per slow-start doubling and a picosecond of rounding per packet-hop.
    fn lone_flow_fct(p: &FatTreeParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let clos = Clos::layout(p, f.variant.name == LEAF_SPINE_VARIANT.name, f.ctx)?;
        Ok(lone_flow_bounds(p, &clos, f.src, f.dst, f.bytes))
    }
}

/// See [`FatTreeModule::lone_flow_fct`].
pub fn lone_flow_bounds(
    p: &FatTreeParams,
    clos: &Clos,
    src: u32,
    dst: u32,
    bytes: u64,
) -> FctBounds {
    let bytes = bytes.max(1);
    let npkts = bytes.div_ceil(p.mtu.0);
    let wire = bytes + npkts * p.header.0;
    let first = bytes.min(p.mtu.0) + p.header.0;
    let h = clos.hops(src, dst) as u64;
    let rates = clos.path_rates(src, dst);
    let slowest = *rates.iter().min().expect("a path has links");
    let prop = p.path_propagation(h);
    let min = clos.host_rate.tx_time(wire).saturating_sub(SimTime(1)) + prop;
    let pipeline = slowest.tx_time(wire) + slowest.tx_time(first) * (h - 1) + prop;
    // Slow start: the window doubles per round trip until it covers the flow.
    let mut extra = SimTime::ZERO;
    if p.transport != TransportKind::Paced && npkts > p.init_cwnd as u64 {
        let rounds = 64 - (npkts.div_ceil(p.init_cwnd as u64)).leading_zeros() as u64;
        let ack = slowest.tx_time(p.ack_size.0) * h + prop;
        let rtt = slowest.tx_time(first) * h + prop + ack;
        extra = rtt * rounds;
    }
    if p.transport == TransportKind::Ndp {
        // The sender hears of the last packet an ACK's return later; past
        // the initial window, packets come one per PULL, at the pull rate.
        let ack = slowest.tx_time(p.ack_size.0) * h + prop;
        let pulled = npkts.saturating_sub(p.init_cwnd as u64);
        let gap =
            SimTime((slowest.tx_time(p.mtu.0 + p.header.0).0 as f64 / p.ndp_pull_rate) as u64);
        extra = ack + (gap + slowest.tx_time(p.mtu.0 + p.header.0)) * pulled.min(1) + gap * pulled;
    }
    FctBounds {
        min,
        max: pipeline + extra + SimTime(npkts * h),
    }
}

/// The Clos graph with each port's propagation delay: `host_propagation` on
/// the host links (tiers 0 and 1: NIC up, ToR down) when set.
pub(super) fn network_graph(p: &FatTreeParams, clos: &Clos) -> crate::net::Graph {
    let mut graph = clos.graph();
    if p.host_propagation.is_some() {
        graph.delays = graph
            .ports
            .iter()
            .map(|s| {
                if s.tier <= 1 {
                    p.host_prop()
                } else {
                    p.propagation
                }
            })
            .collect();
    }
    graph
}

/// "Leaf-spine" or "Fat-tree", for a fabric's name.
pub(super) fn shape_name(v: &Variant) -> &'static str {
    if v.name == LEAF_SPINE_VARIANT.name {
        "Leaf-spine"
    } else {
        "Fat-tree"
    }
}

/// A fat-tree or leaf-spine network as a [`Fabric`].
pub type PacketFabric = NetFabric<Network<Clos>, ClosExtras>;

impl PacketFabric {
    pub fn new(p: &FatTreeParams, v: &Variant, clos: Clos, seed: u64) -> PacketFabric {
        let graph = network_graph(p, &clos);
        let routing = match p.routing {
            Routing::Ecmp => "ECMP",
            Routing::Spray => "spraying",
            Routing::Adaptive => "adaptive",
        };
        let transport = match (p.transport, p.flow_control) {
            (TransportKind::Dctcp, FlowControlKind::None) => "DCTCP",
            (TransportKind::Dctcp, FlowControlKind::Pfc) => "DCTCP+PFC",
            (TransportKind::Dctcp, FlowControlKind::Credit) => "DCTCP+credit",
            (TransportKind::Paced, FlowControlKind::Credit) => "paced+credit",
            (TransportKind::Paced, _) => "paced+PFC",
            (TransportKind::Ndp, _) => "NDP",
            (TransportKind::Pfabric, _) => "pFabric",
        };
        let shape = shape_name(v);
        let label = format!(
            "{shape} (packet, {transport}, {routing}{})",
            match p.priority {
                PriorityKind::None => "",
                PriorityKind::Pias => ", PIAS classes",
                PriorityKind::Size => ", size classes",
            }
        );
        let mut net = Network::new(net_config(p, seed), graph, clos.clone());
        if p.transport == TransportKind::Paced {
            net.retire_finished_flows(true);
        }
        let hosts = net.hosts();
        let rate = clos.host_rate;
        let extra = ClosExtras::new(p.clone(), clos);
        NetFabric::with_network(label, hosts, rate, net, extra)
    }

    /// Slowdown of each completed flow (FCT over its lone-flow FCT with an
    /// unlimited window: wire/R + (hops − 1) first-packet serialisations +
    /// hops propagations), mean and p99 per size class (`<10KB`,
    /// `<100KB`, `>=100KB`, `all`).
    pub fn slowdowns(&self) -> Vec<(String, f64)> {
        self.extras().slowdowns(self.net())
    }

    pub fn clos(&self) -> &Clos {
        self.extras().clos()
    }
}

//! The fat-tree or leaf-spine with NDP hosts and trimming switches
//! (`transport = "ndp"`): the network of `net::ndp` as a [`Fabric`].

use super::{network_graph, shape_name, Clos, FatTreeParams, NetFabric};
use crate::fabric::registry::Variant;
use crate::net::ndp::{NdpConfig, NdpNetwork};

/// NDP's settings from the `[fat_tree]` table: `buffer` is each switch
/// port's data queue, `init_cwnd` the initial window.
pub fn ndp_config(p: &FatTreeParams, seed: u64) -> NdpConfig {
    NdpConfig {
        payload: p.mtu.0 as u32,
        header: p.header.0 as u32,
        ctrl: p.ack_size.0 as u32,
        propagation: p.propagation,
        buffer: p.buffer.0,
        init_window: p.init_cwnd,
        pull_rate: p.ndp_pull_rate,
        rto: p.ndp_rto,
        full_packets: p.ndp_full_packets,
        seed,
    }
}

/// The fat-tree or leaf-spine with NDP hosts as a [`Fabric`].
pub type NdpFabric = NetFabric<NdpNetwork<Clos>>;

impl NdpFabric {
    pub fn new(p: &FatTreeParams, v: &Variant, clos: Clos, seed: u64) -> NdpFabric {
        let graph = network_graph(p, &clos);
        let label = format!("{} (packet, NDP, per-packet source routing)", shape_name(v));
        let rate = clos.host_rate;
        let net = NdpNetwork::new(ndp_config(p, seed), graph, clos);
        NetFabric::with_network(label, net.hosts(), rate, net, ())
    }
}

//! The fat-tree or leaf-spine with NDP hosts and trimming switches
//! (`transport = "ndp"`): the network of `net::ndp` as a [`Fabric`].

use super::{network_graph, shape_name, Clos, FatTreeParams};
use crate::fabric::registry::Variant;
use crate::fabric::{step_until, Fabric, FabricStats};
use crate::flow::Flow;
use crate::net::ndp::{NdpConfig, NdpNetwork};
use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};

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

pub struct NdpFabric {
    label: String,
    rate: Rate,
    net: NdpNetwork<Clos>,
}

impl NdpFabric {
    pub fn new(p: &FatTreeParams, v: &Variant, clos: Clos, seed: u64) -> NdpFabric {
        let graph = network_graph(p, &clos);
        let shape = shape_name(v);
        NdpFabric {
            label: format!("{shape} (packet, NDP, per-packet source routing)"),
            rate: clos.host_rate,
            net: NdpNetwork::new(ndp_config(p, seed), graph, clos),
        }
    }

    pub fn net(&self) -> &NdpNetwork<Clos> {
        &self.net
    }
}

impl Fabric for NdpFabric {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn hosts(&self) -> usize {
        self.net.hosts()
    }
    fn host_rate(&self) -> Rate {
        self.rate
    }
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        self.net.add_flow(now, flow, rec);
    }
    fn next_event(&self) -> Option<SimTime> {
        self.net.next_event()
    }
    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.net.advance(now, rec);
    }
    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        step_until(now, bound, |t| {
            self.net.advance(t, rec);
            self.net.next_event()
        })
    }
    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}
    fn stats(&self) -> FabricStats {
        self.net.stats().into_iter().collect()
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.net.check_invariants()
    }
}

//! Any packet network of `net/` as a [`Fabric`]: what the fat-tree and the
//! HPC baselines share.

use crate::fabric::{step_until, Fabric, FabricStats};
use crate::flow::Flow;
use crate::net::{Network, Router};
use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};

/// A fabric over the packet network `net/` with router `R`: the network
/// does the work; `X` adds what one fabric reports besides the network's
/// statistics ([`NetExtras`]). The fat-tree ([`PacketFabric`]) and the HPC
/// baselines ([`HpcFabric`](crate::fabric::hpc::HpcFabric)) are this.
pub struct NetFabric<R: Router, X = ()> {
    label: String,
    /// The topology's hosts (the network may have more, idle).
    hosts: usize,
    rate: Rate,
    net: Network<R>,
    extra: X,
}

/// What a [`NetFabric`] adds to its network.
pub trait NetExtras<R: Router> {
    /// Called after each `advance` of the network.
    fn after_advance(&mut self, _net: &mut Network<R>) {}
    /// Statistics besides the network's.
    fn stats(&self, _net: &Network<R>, _out: &mut FabricStats) {}
}

impl<R: Router> NetExtras<R> for () {}

impl<R: Router, X> NetFabric<R, X> {
    /// The fabric `label` over `net`, with `hosts` endpoints at `rate`.
    pub fn with_network(
        label: String,
        hosts: usize,
        rate: Rate,
        net: Network<R>,
        extra: X,
    ) -> Self {
        NetFabric {
            label,
            hosts,
            rate,
            net,
            extra,
        }
    }

    /// The underlying packet network.
    /// What the fabric adds besides the network.
    pub fn extras(&self) -> &X {
        &self.extra
    }

    pub fn net(&self) -> &Network<R> {
        &self.net
    }
}

impl<R: Router, X: NetExtras<R>> Fabric for NetFabric<R, X> {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn hosts(&self) -> usize {
        self.hosts
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
        self.extra.after_advance(&mut self.net);
    }
    /// The steps one by one, without a trip through the run loop each
    /// (one step per event time: ~1 per packet-hop on a loaded network).
    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        step_until(now, bound, |t| {
            self.net.advance(t, rec);
            self.extra.after_advance(&mut self.net);
            self.net.next_event()
        })
    }
    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}
    fn stats(&self) -> FabricStats {
        let mut s: FabricStats = self.net.stats().into_iter().collect();
        self.extra.stats(&self.net, &mut s);
        s
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.net.check_invariants()
    }
}

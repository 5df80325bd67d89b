//! Any packet network of `net/` as a [`Fabric`]: what the fat-tree (with
//! DCTCP, paced, pFabric or NDP hosts) and the HPC baselines share.

use crate::fabric::{step_until, Fabric, FabricStats};
use crate::flow::Flow;
use crate::net::ndp::NdpNetwork;
use crate::net::{Network, Router};
use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};

/// What a [`NetFabric`] drives: the substrate's [`Network`] or NDP's
/// [`NdpNetwork`], over any router.
pub trait PacketNet {
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder);
    fn next_event(&self) -> Option<SimTime>;
    fn advance(&mut self, now: SimTime, rec: &mut Recorder);
    fn stats(&self) -> Vec<(String, f64)>;
    fn check_invariants(&self) -> Result<(), String>;
}

/// Each network's own methods (inherent ones win the path lookup), inlined
/// into the fabric's event loop.
macro_rules! packet_net {
    ($($net:ident),*) => {$(
        impl<R: Router> PacketNet for $net<R> {
            #[inline]
            fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
                $net::add_flow(self, now, flow, rec)
            }
            #[inline]
            fn next_event(&self) -> Option<SimTime> {
                $net::next_event(self)
            }
            #[inline]
            fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
                $net::advance(self, now, rec)
            }
            fn stats(&self) -> Vec<(String, f64)> {
                $net::stats(self)
            }
            fn check_invariants(&self) -> Result<(), String> {
                $net::check_invariants(self)
            }
        }
    )*};
}
packet_net!(Network, NdpNetwork);

/// A fabric over the packet network `N` of `net/`: the network does the
/// work; `X` adds what one fabric reports besides the network's statistics
/// ([`NetExtras`]). The fat-tree ([`PacketFabric`], [`NdpFabric`]) and the
/// HPC baselines ([`HpcFabric`](crate::fabric::hpc::HpcFabric)) are this.
pub struct NetFabric<N: PacketNet, X = ()> {
    label: String,
    /// The topology's hosts (the network may have more, idle).
    hosts: usize,
    rate: Rate,
    net: N,
    extra: X,
}

/// What a [`NetFabric`] adds to its network `N`.
pub trait NetExtras<N> {
    /// Called after each `advance` of the network.
    fn after_advance(&mut self, _net: &mut N) {}
    /// Statistics besides the network's.
    fn stats(&self, _net: &N, _out: &mut FabricStats) {}
}

impl<N> NetExtras<N> for () {}

impl<N: PacketNet, X> NetFabric<N, X> {
    /// The fabric `label` over `net`, with `hosts` endpoints at `rate`.
    pub fn with_network(label: String, hosts: usize, rate: Rate, net: N, extra: X) -> Self {
        NetFabric {
            label,
            hosts,
            rate,
            net,
            extra,
        }
    }

    /// What the fabric adds besides the network.
    pub fn extras(&self) -> &X {
        &self.extra
    }

    /// The underlying packet network.
    pub fn net(&self) -> &N {
        &self.net
    }
}

impl<N: PacketNet, X: NetExtras<N>> Fabric for NetFabric<N, X> {
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

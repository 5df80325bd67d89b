//! The fat-tree's statistics besides the network's: flow slowdowns by size
//! class.
//!
//! With `transport = "pfabric"` the ideal is pFabric's own (as YAPS defines
//! it): the flow alone with cut-through, up to the sender's receipt of the
//! last ACK; and the classes are those of pFabric comparisons: `<100KB`
//! (every flow below 100 KB), `>=100KB` and `all`, each with its mean, p50
//! and p99 (nearest rank).

use super::{Clos, FatTreeParams, NetExtras, TransportKind};
use crate::fabric::FabricStats;
use crate::net::Network;
use crate::units::SimTime;

/// The fat-tree's additions: its parameters and shape, and the slowdowns of
/// the flows the network retired (paced transport).
pub struct ClosExtras {
    params: FatTreeParams,
    clos: Clos,
    /// Retired flows in id order: slowdown and size class.
    retired: Vec<f64>,
    retired_class: Vec<u8>,
}

/// A completed flow's slowdown and size class (see
/// [`PacketFabric::slowdowns`]).
fn slowdown(
    p: &FatTreeParams,
    clos: &Clos,
    src: u32,
    dst: u32,
    bytes: u64,
    fct: SimTime,
) -> (f64, u8) {
    let npkts = bytes.div_ceil(p.mtu.0);
    let wire = bytes + npkts * p.header.0;
    let first = bytes.min(p.mtu.0) + p.header.0;
    let h = clos.hops(src, dst) as u64;
    let slowest = clos.host_rate.min(clos.uplink_rate);
    let ideal = if p.transport == TransportKind::Pfabric {
        pfabric_ideal(p, clos, src, dst, wire)
    } else {
        clos.host_rate.tx_time(wire) + slowest.tx_time(first) * (h - 1) + p.path_propagation(h)
    };
    let x = fct.0 as f64 / ideal.0 as f64;
    let c = if p.transport == TransportKind::Pfabric {
        // `<100KB` and `>=100KB` (see the module doc).
        if bytes < 100_000 {
            1
        } else {
            2
        }
    } else if bytes < 10_000 {
        0
    } else if bytes < 100_000 {
        1
    } else {
        2
    };
    (x, c)
}

/// pFabric's lone-flow FCT with YAPS's cut-through: every wire byte at the
/// NIC, a header's serialisation on each link but the last (where the last
/// packet is received whole), and the ACK back the same way, plus the
/// propagation both ways. YAPS's `get_oracle_fct` on its topology.
fn pfabric_ideal(p: &FatTreeParams, clos: &Clos, src: u32, dst: u32, wire: u64) -> SimTime {
    let rates = clos.path_rates(src, dst);
    let h = rates.len();
    let cut: SimTime = rates[..h - 1]
        .iter()
        .map(|r| r.tx_time(p.header.0))
        .fold(SimTime::ZERO, |a, b| a + b);
    clos.host_rate.tx_time(wire)
        + cut * 2
        + clos.host_rate.tx_time(p.ack_size.0)
        + p.path_propagation(h as u64) * 2
}

impl NetExtras<Network<Clos>> for ClosExtras {
    /// Inlined, with the common case (nothing retired) first: out of
    /// line it cost ~16 instructions per step of the fabric.
    #[inline]
    fn after_advance(&mut self, net: &mut Network<Clos>) {
        if net.has_retired() {
            self.take_retired(net);
        }
    }
    fn stats(&self, net: &Network<Clos>, out: &mut FabricStats) {
        for (k, v) in self.slowdowns(net) {
            out.insert(k, v);
        }
    }
}

impl ClosExtras {
    #[inline(never)]
    fn take_retired(&mut self, net: &mut Network<Clos>) {
        let (p, clos) = (&self.params, &self.clos);
        let (xs, cs) = (&mut self.retired, &mut self.retired_class);
        net.take_retired(|src, dst, bytes, fct| {
            let (x, c) = slowdown(p, clos, src, dst, bytes, fct);
            xs.push(x);
            cs.push(c);
        });
    }

    pub(super) fn new(params: FatTreeParams, clos: Clos) -> ClosExtras {
        ClosExtras {
            params,
            clos,
            retired: Vec::new(),
            retired_class: Vec::new(),
        }
    }

    pub(super) fn clos(&self) -> &Clos {
        &self.clos
    }

    pub(super) fn slowdowns(&self, net: &Network<Clos>) -> Vec<(String, f64)> {
        let mut classes: [(&str, Vec<f64>); 4] = [
            ("<10KB", vec![]),
            ("<100KB", vec![]),
            (">=100KB", vec![]),
            ("all", vec![]),
        ];
        // Retired flows first: all of them precede the held ones by id.
        let held = net
            .completed_flows()
            .map(|(src, dst, bytes, fct)| slowdown(&self.params, &self.clos, src, dst, bytes, fct));
        let retired = self
            .retired
            .iter()
            .copied()
            .zip(self.retired_class.iter().copied());
        for (x, c) in retired.chain(held) {
            classes[c as usize].1.push(x);
            classes[3].1.push(x);
        }
        let pfabric = self.params.transport == TransportKind::Pfabric;
        let mut out = Vec::new();
        for (name, mut v) in classes {
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let rank = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
            out.push((format!("slowdown_mean.{name}"), mean));
            if pfabric {
                out.push((format!("slowdown_p50.{name}"), rank(0.5)));
            }
            out.push((format!("slowdown_p99.{name}"), rank(0.99)));
        }
        out
    }
}

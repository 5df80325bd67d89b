//! The electrical packet switch beside a circuit switch, on `net/`: Mordia's
//! packet switch for what its truncated weeks leave off the circuits, and
//! REACToR's EPS. A star of the n endpoints' uplinks into one output-queued
//! switch with a port per endpoint, optionally followed by a downlink per
//! endpoint (REACToR's, shared with the circuits); packets of class bytes
//! (no header), paced transport, PFC on every ingress link, one net flow
//! per class (`net::ClassFlows`, n × n classes).

use crate::net::{
    ClassFlows, FlowControl, Graph, NetConfig, Network, PfcConfig, PortSpec, Routing, StarRouter,
    Transport,
};
use crate::units::{Rate, SimTime};

/// The shape and buffers of a packet star.
pub(crate) struct PacketStar {
    /// Endpoints (racks or hosts).
    pub n: u32,
    /// Each endpoint's uplink into the switch.
    pub uplink: Rate,
    /// The switch's port towards each endpoint.
    pub port: Rate,
    /// A further link per endpoint after the switch port (None: the port
    /// reaches the endpoint itself).
    pub downlink: Option<Rate>,
    /// Delay of the last hop, from a packet's last bit to the endpoint.
    pub latency: SimTime,
    /// Tier names: uplink, switch port (and downlink).
    pub tiers: &'static [&'static str],
    /// Payload bytes per packet.
    pub payload: u32,
    /// Buffer per ingress port, and the PFC thresholds and delays.
    pub buffer: u64,
    pub pfc: PfcConfig,
    pub seed: u64,
}

impl PacketStar {
    /// The network, with one net flow per class of the n × n.
    pub fn build(&self) -> ClassFlows<StarRouter> {
        let n = self.n;
        let hops = if self.downlink.is_some() { 3 } else { 2 };
        assert_eq!(self.tiers.len(), hops, "one tier name per hop");
        let mut ports = Vec::with_capacity(hops * n as usize);
        let mut delays = Vec::with_capacity(hops * n as usize);
        for _ in 0..n {
            ports.push(PortSpec {
                to: n,
                rate: self.uplink,
                tier: 0,
            });
            delays.push(SimTime::ZERO);
        }
        // Node n is the switch; downlink nodes (if any) are n + 1 + j.
        for j in 0..n {
            let to = if self.downlink.is_some() {
                n + 1 + j
            } else {
                j
            };
            ports.push(PortSpec {
                to,
                rate: self.port,
                tier: 1,
            });
            delays.push(if self.downlink.is_some() {
                SimTime::ZERO
            } else {
                self.latency
            });
        }
        if let Some(r) = self.downlink {
            for j in 0..n {
                ports.push(PortSpec {
                    to: j,
                    rate: r,
                    tier: 2,
                });
                delays.push(self.latency);
            }
        }
        // PFC frames travel back over a port's own link delay; `reverse`
        // names the port back: the uplink ↔ the port into the endpoint
        // (its downlink if there is one).
        let reverse = if self.downlink.is_some() {
            (0..3 * n)
                .map(|k| match k / n {
                    0 => 2 * n + k,
                    1 => 2 * n + k % n,
                    _ => k % n,
                })
                .collect()
        } else {
            (0..2 * n).map(|k| (k + n) % (2 * n)).collect()
        };
        let graph = Graph {
            hosts: n,
            ports,
            reverse,
            tiers: self.tiers.to_vec(),
            delays,
        };
        let cfg = NetConfig {
            payload: self.payload,
            header: 0,
            propagation: SimTime::ZERO,
            buffer: self.buffer,
            ecn_k: None,
            flow_control: FlowControl::Pfc(self.pfc),
            transport: Transport::Paced,
            routing: Routing::Ecmp,
            seed: self.seed,
            ..NetConfig::default()
        };
        let net = Network::new(cfg, graph, StarRouter(n));
        ClassFlows::new(net, (n as usize) * (n as usize))
    }
}

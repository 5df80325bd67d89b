//! REACToR's electrical packet switch (EPS) on `net/`: host NICs at
//! `eps_rate` → one output-queued switch (a port per host at `eps_rate`) →
//! the REACToR downlink of each host at R (where circuit bytes go first) →
//! the host; PFC on every ingress link. The fabric reaches the network only
//! through this file.

use super::params::{Derived, ReactorParams};
use crate::fabric::star::PacketStar;
use crate::fabric::FabricStats;
use crate::flow::FlowId;
use crate::net::{ClassFlows, PfcConfig, StarRouter};
use crate::units::SimTime;

/// Payload bytes of an EPS packet. No header: the EPS carries `eps_rate`
/// of class bytes, as the rate limits and the EPS split assume.
pub(super) const EPS_PACKET: u64 = 1_500;

pub(super) struct Eps {
    /// The star and the classes' net flows (`net::ClassFlows`).
    cf: ClassFlows<StarRouter>,
    n: usize,
    /// Per host: where its round-robin over EPS classes resumes.
    rr: Vec<u32>,
    deliveries: Vec<(FlowId, SimTime, u64)>,
}

impl Eps {
    pub fn new(p: &ReactorParams, d: &Derived, seed: u64) -> Self {
        let mut cf = PacketStar {
            n: d.n as u32,
            uplink: p.eps_rate,
            port: p.eps_rate,
            downlink: Some(d.r),
            latency: p.latency,
            tiers: &["eps_up", "eps_port", "downlink"],
            payload: EPS_PACKET as u32,
            buffer: p.eps_buffer.0,
            pfc: PfcConfig {
                xoff: p.pfc_xoff.0,
                xon: p.pfc_xon.0,
                pause_delay: p.pfc_off_min,
                resume_delay: p.pfc_on_min,
            },
            seed,
        }
        .build();
        cf.set_pfc_jitter(p.pfc_off_max - p.pfc_off_min, p.pfc_on_max - p.pfc_on_min);
        Eps {
            cf,
            n: d.n,
            rr: vec![0; d.n],
            deliveries: Vec::new(),
        }
    }

    /// Whether host `i`'s NIC is paused by PFC. The one place REACToR reads
    /// the network's host state (three levels down, `cf.net`): switch it to
    /// the narrow accessor on `net/` when that lands.
    pub fn host_paused(&self, i: usize) -> bool {
        self.cf.host_paused(i as u32)
    }

    /// Bytes host `i`'s NIC holds but has not sent yet (same note).
    pub fn host_unsent(&self, i: usize) -> u64 {
        self.cf.host_unsent(i as u32)
    }

    /// Circuit bytes that reach host `j`'s downlink at `t` and take it
    /// first (strict priority, non-preemptive).
    pub fn occupy_downlink(&mut self, t: SimTime, j: usize, bytes: u64) {
        self.cf.occupy_port(t, (2 * self.n + j) as u32, bytes);
    }

    /// Hands the chunks of class `q` (host `i` → `j`) to the NIC.
    pub fn hand(&mut self, now: SimTime, i: usize, j: usize, q: usize, chunks: &[(FlowId, u64)]) {
        self.cf.hand(now, i as u32, j as u32, q, chunks);
    }

    /// Where host `i`'s round-robin over its EPS classes resumes.
    pub fn rr(&self, i: usize) -> usize {
        self.rr[i] as usize
    }
    pub fn set_rr(&mut self, i: usize, k: usize) {
        self.rr[i] = k as u32;
    }

    /// Runs the network up to `now`; returns its events. What reached hosts
    /// is then in [`Eps::deliveries`], in the order it was handed over.
    pub fn run(&mut self, now: SimTime) -> u64 {
        self.cf.run(now, &mut self.deliveries)
    }
    pub fn deliveries(&self) -> &[(FlowId, SimTime, u64)] {
        &self.deliveries
    }

    /// Bytes handed to the NICs and not yet delivered.
    pub fn in_net(&self) -> u64 {
        self.cf.in_net()
    }
    pub fn next_event(&self) -> Option<SimTime> {
        self.cf.next_event()
    }
    pub fn drops(&self) -> u64 {
        self.cf.drops()
    }
    pub fn net_stats(&self) -> FabricStats {
        self.cf.stats().into_iter().collect()
    }
    pub fn check_invariants(&self) -> Result<(), String> {
        self.cf.check_invariants()
    }
}

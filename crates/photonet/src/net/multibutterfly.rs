//! The multi-butterfly topology (Baldur's, seed `baldur-all-optical.txt`
//! §IV-A/E) on the packet substrate: the electrical multi-butterfly baseline
//! of Table VI (`fabric = "multibutterfly"`, `fabric::hpc`).
//!
//! N = 2^k hosts, k stages of N/2 radix-2 switches with m ports per direction
//! (path multiplicity m); stage s routes on bit k−1−s of the destination. The
//! outputs of a sorting group are wired onto the inputs of the next stage's
//! group by [`crate::topology::wire_stage`] — the same function, and the same draws, as the
//! all-optical fabric (`fabric::baldur`), so a seed gives both networks one
//! wiring. Host i sends into switch i/2 of stage 0; the m outputs of
//! direction b of last-stage switch j are m links to host 2j+b.
//!
//! As a [`Graph`]: nodes `0..N` are hosts, node `N + s·N/2 + i` is switch i of
//! stage s; port `h < N` is host h's NIC, and switch i of stage s owns ports
//! `N + ((s·N/2 + i)·2 + b)·m + j` (direction b, j-th of m). The
//! [`Router`] offers the m ports of the packet's direction; the routing
//! policy (adaptive: least backlog) picks one; with credits a packet keeps
//! one virtual channel, by flow. Links are one-way: there is
//! no reverse link, so `Graph::reverse` maps each port to itself (flow
//! control frames travel out of band).

use crate::net::route::{Candidates, Hop, Router};
use crate::net::sim::{Graph, PortSpec};
use crate::rng::SimRng;
use crate::topology::wire_stage;
use crate::units::Rate;

/// A 2^k-host multi-butterfly of multiplicity m as a packet network.
#[derive(Clone, Debug)]
pub struct MultiButterfly {
    k: u32,
    m: u32,
    hosts: u32,
    /// Last-stage outputs per direction a packet may take to its host (m: all).
    eject: u32,
    /// `next[s·N·m + port]`: the switch (within stage s+1) that output `port`
    /// of stage s feeds, as [`wire_stage`] numbers them.
    next: Vec<u32>,
}

impl MultiButterfly {
    /// `k ≥ 1` stages, `m ≥ 1`; `rng` draws the wiring (None: in order).
    pub fn new(k: u32, m: u32, mut rng: Option<&mut SimRng>) -> MultiButterfly {
        assert!((1..=30).contains(&k) && m >= 1);
        let hosts = 1u32 << k;
        let per_stage = hosts as usize * m as usize;
        let mut next = vec![0u32; per_stage * (k as usize - 1)];
        let mut perm = Vec::new();
        for s in 0..k - 1 {
            let s_ = s as usize;
            wire_stage(
                k,
                m,
                s,
                rng.as_deref_mut(),
                &mut perm,
                &mut next[s_ * per_stage..(s_ + 1) * per_stage],
            );
        }
        MultiButterfly {
            k,
            m,
            eject: m,
            hosts,
            next,
        }
    }

    /// Its stages and multiplicity only, no wiring: enough for the path
    /// lengths ([`Self::path_links`], [`Self::stages`]); not for
    /// [`Self::graph`], [`Self::next_switch`] or routing.
    pub fn unwired(k: u32, m: u32) -> MultiButterfly {
        assert!((1..=30).contains(&k) && m >= 1);
        MultiButterfly {
            k,
            m,
            eject: m,
            hosts: 1 << k,
            next: Vec::new(),
        }
    }

    /// Routes packets to their host over only the first `links` (1..=m) of
    /// the m last-stage outputs of its direction (a host with that many
    /// receivers; the others carry nothing).
    pub fn with_ejection(mut self, links: u32) -> Self {
        self.eject = links.clamp(1, self.m);
        self
    }

    pub fn hosts(&self) -> u32 {
        self.hosts
    }
    pub fn stages(&self) -> u32 {
        self.k
    }
    pub fn multiplicity(&self) -> u32 {
        self.m
    }

    /// The node index of switch `i` of stage `s`.
    pub fn switch_node(&self, s: u32, i: u32) -> u32 {
        self.hosts + s * (self.hosts / 2) + i
    }

    /// The first of the m ports of direction `b` of switch `i` of stage `s`.
    pub fn port(&self, s: u32, i: u32, b: u32) -> u32 {
        self.hosts + ((s * (self.hosts / 2) + i) * 2 + b) * self.m
    }

    /// The switch of stage s+1 that output `port` (as [`wire_stage`]
    /// numbers them) of stage s feeds.
    pub fn next_switch(&self, s: u32, port: usize) -> u32 {
        self.next[s as usize * (self.hosts * self.m) as usize + port]
    }

    /// Links on every host-to-host path: the NIC link and one per stage.
    pub fn path_links(&self) -> u32 {
        self.k + 1
    }

    /// The nodes and links, every link at `rate`. Tiers: `nic`, `stage`
    /// (between stages), `eject` (last stage to hosts).
    pub fn graph(&self, rate: Rate) -> Graph {
        let (n, m, k) = (self.hosts, self.m, self.k);
        let half = n / 2;
        let mut ports = Vec::with_capacity((n + n * m * k) as usize);
        for h in 0..n {
            ports.push(PortSpec {
                to: self.switch_node(0, h / 2),
                rate,
                tier: 0,
            });
        }
        let per_stage = (n * m) as usize;
        for s in 0..k {
            for i in 0..half {
                for b in 0..2 {
                    for j in 0..m {
                        let out = ((i * 2 + b) * m + j) as usize;
                        let (to, tier) = if s + 1 < k {
                            let sw = self.next[s as usize * per_stage + out];
                            (self.switch_node(s + 1, sw), 1)
                        } else {
                            (2 * i + b, 2)
                        };
                        ports.push(PortSpec { to, rate, tier });
                    }
                }
            }
        }
        let reverse = (0..ports.len() as u32).collect();
        Graph {
            hosts: n,
            ports,
            reverse,
            tiers: vec!["nic", "stage", "eject"],
            delays: Vec::new(),
        }
    }
}

impl Router for MultiButterfly {
    #[inline]
    fn candidates(&self, node: u32, dst: u32) -> Candidates {
        // half = N/2 = 2^(k-1) switches per stage: shifts, not divisions.
        let idx = node - self.hosts;
        let s = idx >> (self.k - 1);
        let b = (dst >> (self.k - 1 - s)) & 1;
        // = self.port(s, idx % half, b): (s·half + i) is idx itself.
        Candidates {
            first: self.hosts + (idx * 2 + b) * self.m,
            count: if s + 1 == self.k { self.eject } else { self.m },
        }
    }

    /// Credits: packets spread over the VCs by flow. The network is
    /// feed-forward (every link leads to a later stage), so no VC
    /// assignment can deadlock; VCs only let packets pass a blocked one.
    #[inline]
    fn vc(&self, hop: &Hop, _out: u32) -> u8 {
        (hop.flow % hop.vcs as u32) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;
    use rand::Rng;

    /// Following any candidate at every switch reaches the destination in
    /// k + 1 links, and the stage-s switch reached agrees with the
    /// destination's top s bits (the sorting-group property).
    #[test]
    fn every_choice_of_ports_reaches_the_destination_in_k_plus_1_links() {
        for (k, m) in [(1, 1), (3, 1), (3, 4), (5, 2), (6, 3)] {
            let mut rng = RngStreams::new(9).stream("w");
            let mb = MultiButterfly::new(k, m, Some(&mut rng));
            let g = mb.graph(Rate::gbps(25));
            assert_eq!(g.ports.len() as u32, mb.hosts() + mb.hosts() * m * k);
            let mut pick = RngStreams::new(3).stream("pick");
            for src in 0..mb.hosts() {
                for dst in 0..mb.hosts() {
                    let mut node = g.ports[src as usize].to;
                    let mut links = 1;
                    while node >= mb.hosts() {
                        let c = mb.candidates(node, dst);
                        assert_eq!(c.count, m);
                        let port = c.first + pick.random_range(0..c.count);
                        node = g.ports[port as usize].to;
                        links += 1;
                        assert!(links <= k + 1);
                    }
                    assert_eq!((node, links), (dst, mb.path_links()), "k={k} m={m}");
                }
            }
        }
    }

    /// One ejection link: the last stage offers a packet one port (the
    /// first of its direction), every other stage m.
    #[test]
    fn one_ejection_link_leaves_one_candidate_at_the_last_stage() {
        let (k, m) = (4, 3);
        let mb = MultiButterfly::new(k, m, None).with_ejection(1);
        let g = mb.graph(Rate::gbps(25));
        let mut node = g.ports[0].to;
        let mut counts = Vec::new();
        while node >= mb.hosts() {
            let c = mb.candidates(node, 9);
            counts.push(c.count);
            node = g.ports[c.first as usize].to;
        }
        assert_eq!(node, 9);
        assert_eq!(counts, vec![3, 3, 3, 1]);
    }

    /// Every switch input of stages 1.. is fed by exactly 2m outputs (m per
    /// direction upstream): the wiring is one-to-one onto inputs.
    #[test]
    fn every_switch_has_2m_inputs_and_hosts_m_ejection_links() {
        let (k, m) = (6, 4);
        let mut rng = RngStreams::new(1).stream("w");
        let mb = MultiButterfly::new(k, m, Some(&mut rng));
        let g = mb.graph(Rate::gbps(25));
        let mut fan_in = vec![0u32; (mb.hosts() + mb.hosts() / 2 * k) as usize];
        for p in &g.ports {
            fan_in[p.to as usize] += 1;
        }
        for &f in fan_in.iter().take(mb.hosts() as usize) {
            assert_eq!(f, m);
        }
        for s in 0..k {
            for i in 0..mb.hosts() / 2 {
                let want = if s == 0 { 2 } else { 2 * m };
                assert_eq!(fan_in[mb.switch_node(s, i) as usize], want);
            }
        }
    }
}

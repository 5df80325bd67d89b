//! The dragonfly topology (Kim, Dally, Scott, Abts, ISCA '08) on the packet
//! substrate: Baldur's dragonfly baseline (Table VI, `fabric = "dragonfly"`,
//! `fabric::hpc`).
//!
//! `g` groups of `a` routers; every router has `p` hosts, a local link to
//! each of the other `a − 1` routers of its group and `h` global links. The
//! balanced dragonfly has `a = 2p = 2h`. Group-level wiring is the
//! consecutive ("absolute") arrangement: group G's global port q (router
//! q / h, slot q mod h) goes to group (G + q + 1) mod g, so every pair of
//! groups has exactly one global link; that needs `g ≤ a·h + 1` (global
//! ports q ≥ g − 1 stay unwired).
//!
//! As a [`Graph`]: hosts `0..N` (host x on router x / p), router R = G·a + r
//! is node N + R; router R owns, in order, p host ports, a − 1 local ports
//! (to the routers of its group other than itself, in order) and its wired
//! global ports. Minimal routing ([`Router::candidates`], one port): down to
//! the host, or across the group to the router owning the global link to
//! the destination's group, over it, and across that group: at most one
//! local, one global and one local hop.
//!
//! # UGAL (`ugal = true`)
//! Universal Globally-Adaptive Load-balanced routing with local information
//! (UGAL-L, Kim et al. §4.2): at the source router, a packet bound for
//! another group compares its minimal output port with the port toward a
//! random intermediate group I (≠ source, destination): it goes minimally
//! if q_min·H_min ≤ q_val·H_val, where q is the output port's queued bytes
//! (the substrate's `load`) and H the links left on each path; otherwise it
//! is routed (Valiant) minimally to group I and from there minimally to its
//! destination. I travels with the packet in `Hop::tag` (I + 1; 0 once the
//! packet is in I).
//!
//! # Virtual channels (credits)
//! A packet's VC on every link is the number of global links it has crossed
//! so far (0 on the NIC link and in the source group, 1 after its first
//! global hop, 2 after a Valiant packet's second), capped at vcs − 1. Every
//! hop of a route either crosses a global link or stays within a group at
//! most once per VC class, so with 3 VCs (2 for minimal routing only) the
//! channel dependency graph is acyclic: deadlock-free (Kim et al. §4.2).

use crate::net::route::{Candidates, Hop, Router};
use crate::net::sim::{Graph, PortSpec};
use crate::rng::SimRng;
use crate::units::Rate;
use rand::Rng;

/// The checked shape of a dragonfly.
#[derive(Clone, Debug, PartialEq)]
pub struct Dragonfly {
    /// Hosts per router.
    pub p: u32,
    /// Routers per group.
    pub a: u32,
    /// Global links per router.
    pub h: u32,
    /// Groups.
    pub g: u32,
    hosts: u32,
    /// First port of each router.
    port0: Vec<u32>,
    /// Per port: a global link.
    global: Vec<bool>,
    /// UGAL-L at source routers (else minimal routing only).
    pub ugal: bool,
}

/// Why a dragonfly cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// A size parameter is zero.
    Zero(&'static str),
    /// The hosts are not a whole number of groups of a·p hosts.
    Hosts { hosts: u32, per_group: u32 },
    /// More groups than global links per group + 1: some pair has no link.
    Groups { g: u32, global_per_group: u32 },
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeError::Zero(k) => write!(f, "{k} must be at least 1"),
            ShapeError::Hosts { hosts, per_group } => write!(
                f,
                "{hosts} hosts are not a whole number of groups of a x p = {per_group} hosts"
            ),
            ShapeError::Groups {
                g,
                global_per_group,
            } => write!(
                f,
                "{g} groups cannot be wired with one global link per pair: a group has a x h = {global_per_group} global links, so at most {} groups",
                global_per_group + 1
            ),
        }
    }
}

impl Dragonfly {
    /// A dragonfly of `hosts` hosts with `p` hosts and `h` global links per
    /// router and `a` routers per group.
    pub fn new(hosts: u32, p: u32, a: u32, h: u32) -> Result<Dragonfly, ShapeError> {
        for (k, v) in [("p", p), ("a", a), ("h", h)] {
            if v == 0 {
                return Err(ShapeError::Zero(k));
            }
        }
        let per_group = a * p;
        if hosts == 0 || !hosts.is_multiple_of(per_group) {
            return Err(ShapeError::Hosts { hosts, per_group });
        }
        let g = hosts / per_group;
        if g > a * h + 1 {
            return Err(ShapeError::Groups {
                g,
                global_per_group: a * h,
            });
        }
        let mut port0 = Vec::with_capacity((g * a) as usize);
        let mut next = hosts;
        for _ in 0..g {
            for r in 0..a {
                port0.push(next);
                next += p + a - 1 + Self::wired(g, h, r);
            }
        }
        let mut d = Dragonfly {
            p,
            a,
            h,
            g,
            hosts,
            port0,
            global: Vec::new(),
            ugal: false,
        };
        d.global = d.graph(Rate(1)).ports.iter().map(|s| s.tier == 3).collect();
        Ok(d)
    }

    /// The same network with UGAL-L routing.
    pub fn with_ugal(mut self, on: bool) -> Dragonfly {
        self.ugal = on;
        self
    }

    /// Links from router `router` (global index) to host `dst` on the
    /// minimal path, the final down link included.
    pub fn router_links(&self, router: u32, dst: u32) -> u32 {
        let dr = self.router_of(dst);
        if dr == router {
            return 1;
        }
        let (gs, gd) = (router / self.a, dr / self.a);
        if gs == gd {
            return 2;
        }
        let (o, _) = self.global_slot(gs, gd);
        let (o2, _) = self.global_slot(gd, gs);
        2 + (o != router % self.a) as u32 + (o2 != dr % self.a) as u32
    }

    /// The router of group `gd` where the global link from group `gs` lands.
    fn entry(&self, gs: u32, gd: u32) -> u32 {
        gd * self.a + self.global_slot(gd, gs).0
    }

    /// The smallest balanced dragonfly (a = 2p = 2h) with exactly `hosts`
    /// hosts: the least p such that 2p² divides `hosts` into at most
    /// 2p² + 1 groups.
    pub fn balanced(hosts: u32) -> Result<Dragonfly, ShapeError> {
        let mut p = 1;
        while 2 * p * p <= hosts {
            if let Ok(d) = Dragonfly::new(hosts, p, 2 * p, p) {
                return Ok(d);
            }
            p += 1;
        }
        Dragonfly::new(hosts, 1, 2, 1)
    }

    /// Wired global links of router r: global ports q = r·h .. r·h + h that
    /// are below g − 1.
    fn wired(g: u32, h: u32, r: u32) -> u32 {
        (g - 1).saturating_sub(r * h).min(h)
    }

    pub fn hosts(&self) -> u32 {
        self.hosts
    }
    pub fn routers(&self) -> u32 {
        self.g * self.a
    }
    pub fn router_of(&self, host: u32) -> u32 {
        host / self.p
    }
    pub fn group_of_router(&self, router: u32) -> u32 {
        router / self.a
    }

    /// Group G's global port toward group D ≠ G: (router in G, slot).
    fn global_slot(&self, from: u32, to: u32) -> (u32, u32) {
        let q = (to + self.g - from) % self.g - 1;
        (q / self.h, q % self.h)
    }

    /// Router (global index) R's port: its local port toward router `r2` of
    /// its group.
    fn local_port(&self, router: u32, r2: u32) -> u32 {
        let r = router % self.a;
        self.port0[router as usize] + self.p + if r2 < r { r2 } else { r2 - 1 }
    }

    /// The minimal next hop at `router` (global index) toward host `dst`.
    pub fn minimal_port(&self, router: u32, dst: u32) -> u32 {
        let dr = self.router_of(dst);
        if dr == router {
            return self.port0[router as usize] + dst % self.p;
        }
        let (gs, gd) = (router / self.a, dr / self.a);
        if gs == gd {
            return self.local_port(router, dr % self.a);
        }
        self.toward_group(router, gd)
    }

    /// The next hop at `router` toward group `gd` (≠ its own): its global
    /// link to `gd`, or the local link to the router that has it.
    pub fn toward_group(&self, router: u32, gd: u32) -> u32 {
        let gs = router / self.a;
        let (owner, slot) = self.global_slot(gs, gd);
        if owner == router % self.a {
            self.port0[router as usize] + self.p + self.a - 1 + slot
        } else {
            self.local_port(router, owner)
        }
    }

    /// Links on the minimal path from `src` to `dst` (hosts): 2 on one
    /// router, 3 within a group, 3 to 5 across groups.
    pub fn minimal_links(&self, src: u32, dst: u32) -> u32 {
        1 + self.router_links(self.router_of(src), dst)
    }

    /// Global links on the minimal path from `src` to `dst` (hosts): 1
    /// across groups, else 0.
    pub fn minimal_globals(&self, src: u32, dst: u32) -> u32 {
        let (rs, rd) = (self.router_of(src), self.router_of(dst));
        (rs / self.a != rd / self.a) as u32
    }

    /// Whether port `port` (of a router) is a global link.
    pub fn is_global(&self, port: u32) -> bool {
        self.global.get(port as usize).copied().unwrap_or(false)
    }

    /// The nodes and links, every link at `rate`. Tiers: `nic`, `down`
    /// (router to host), `local`, `global`.
    pub fn graph(&self, rate: Rate) -> Graph {
        self.graph_with_rates([rate; 4])
    }

    /// The nodes and links, each link at the rate of its tier (`rates`
    /// indexed by tier: nic, down, local, global). CODES's dragonfly gives
    /// terminal, local and global channels their own bandwidths.
    pub fn graph_with_rates(&self, rates: [Rate; 4]) -> Graph {
        let n = self.hosts;
        let mut ports = Vec::new();
        let mut reverse = Vec::new();
        for x in 0..n {
            let r = self.router_of(x);
            ports.push(PortSpec {
                to: n + r,
                rate: rates[0],
                tier: 0,
            });
            reverse.push(self.port0[r as usize] + x % self.p);
        }
        for router in 0..self.routers() {
            let (gs, r) = (router / self.a, router % self.a);
            debug_assert_eq!(ports.len() as u32, self.port0[router as usize]);
            for i in 0..self.p {
                ports.push(PortSpec {
                    to: router * self.p + i,
                    rate: rates[1],
                    tier: 1,
                });
                reverse.push(router * self.p + i);
            }
            for r2 in (0..self.a).filter(|&r2| r2 != r) {
                let other = gs * self.a + r2;
                ports.push(PortSpec {
                    to: n + other,
                    rate: rates[2],
                    tier: 2,
                });
                reverse.push(self.local_port(other, r));
            }
            for slot in 0..Self::wired(self.g, self.h, r) {
                let q = r * self.h + slot;
                let gd = (gs + q + 1) % self.g;
                let (owner, back) = self.global_slot(gd, gs);
                let other = gd * self.a + owner;
                ports.push(PortSpec {
                    to: n + other,
                    rate: rates[3],
                    tier: 3,
                });
                reverse.push(self.port0[other as usize] + self.p + self.a - 1 + back);
            }
        }
        Graph {
            hosts: n,
            ports,
            reverse,
            tiers: vec!["nic", "down", "local", "global"],
            delays: Vec::new(),
        }
    }
}

impl Router for Dragonfly {
    #[inline]
    fn candidates(&self, node: u32, dst: u32) -> Candidates {
        Candidates {
            first: self.minimal_port(node - self.hosts, dst),
            count: 1,
        }
    }

    fn route(&self, hop: &mut Hop, load: &dyn Fn(u32) -> u64, rng: &mut SimRng) -> Option<u32> {
        let router = hop.node - self.hosts;
        let gs = router / self.a;
        if hop.tag != 0 {
            let via = hop.tag - 1;
            if via != gs {
                return Some(self.toward_group(router, via));
            }
            hop.tag = 0;
        }
        let gd = self.router_of(hop.dst) / self.a;
        let min = self.minimal_port(router, hop.dst);
        // UGAL-L: only where the packet enters the network.
        if !self.ugal || gs == gd || self.g < 3 || hop.in_port >= self.hosts {
            return Some(min);
        }
        let mut via = rng.random_range(0..self.g - 2);
        for skip in [gs.min(gd), gs.max(gd)] {
            if via >= skip {
                via += 1;
            }
        }
        let val = self.toward_group(router, via);
        let h_min = self.router_links(router, hop.dst) as u64;
        let (owner, _) = self.global_slot(gs, via);
        let h_val = (owner != router % self.a) as u64
            + 1
            + self.router_links(self.entry(gs, via), hop.dst) as u64;
        if load(min) * h_min <= load(val) * h_val {
            Some(min)
        } else {
            hop.tag = via + 1;
            Some(val)
        }
    }

    #[inline]
    fn vc(&self, hop: &Hop, _out: u32) -> u8 {
        if hop.in_port == u32::MAX {
            return 0;
        }
        let globals = hop.vc + self.is_global(hop.in_port) as u8;
        globals.min(hop.vcs - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_shapes() {
        let d = Dragonfly::balanced(1024).unwrap();
        assert_eq!((d.p, d.a, d.h, d.g), (4, 8, 4, 32));
        let d = Dragonfly::balanced(8).unwrap();
        assert_eq!((d.p, d.a, d.h, d.g), (2, 4, 2, 1));
        // The largest balanced p = 4 dragonfly: 33 groups.
        let d = Dragonfly::balanced(33 * 32).unwrap();
        assert_eq!((d.p, d.g), (4, 33));
    }

    #[test]
    fn unwireable_shapes_are_refused_with_the_reason() {
        assert_eq!(
            Dragonfly::new(34 * 32, 4, 8, 4),
            Err(ShapeError::Groups {
                g: 34,
                global_per_group: 32
            })
        );
        assert_eq!(
            Dragonfly::new(100, 4, 8, 4),
            Err(ShapeError::Hosts {
                hosts: 100,
                per_group: 32
            })
        );
        assert_eq!(Dragonfly::new(8, 0, 2, 1), Err(ShapeError::Zero("p")));
        assert!(Dragonfly::new(34 * 32, 4, 8, 4)
            .unwrap_err()
            .to_string()
            .contains("at most 33 groups"));
    }

    /// Every link's reverse is a link back; every pair of groups has exactly
    /// one global link each way; minimal routes arrive in `minimal_links`
    /// links with at most one global hop.
    #[test]
    fn wiring_and_minimal_routes() {
        for (hosts, p, a, h) in [
            (1024, 4, 8, 4),
            (8, 2, 4, 2),
            (14, 1, 2, 3),
            (60, 2, 3, 3),
            (40, 2, 4, 3),
        ] {
            let d = Dragonfly::new(hosts, p, a, h).unwrap();
            let gr = d.graph(Rate::gbps(25));
            let n = d.hosts();
            for (i, s) in gr.ports.iter().enumerate() {
                let r = gr.reverse[i] as usize;
                assert_eq!(gr.reverse[r] as usize, i, "port {i}");
                let from_r = gr.ports[r].to;
                // The reverse leaves the node port i arrives at.
                let owner = if (r as u32) < n {
                    r as u32
                } else {
                    n + match d.port0.binary_search(&(r as u32)) {
                        Ok(x) => x as u32,
                        Err(x) => x as u32 - 1,
                    }
                };
                assert_eq!(owner, s.to, "port {i}");
                let _ = from_r;
            }
            let mut pair = vec![0u32; (d.g * d.g) as usize];
            for (i, s) in gr.ports.iter().enumerate() {
                if s.tier == 3 {
                    assert!(d.is_global(i as u32));
                    let from = d.port0.partition_point(|&x| x <= i as u32) as u32 - 1;
                    let (gs, gd) = (from / d.a, (s.to - n) / d.a);
                    assert_ne!(gs, gd);
                    pair[(gs * d.g + gd) as usize] += 1;
                } else {
                    assert!(!d.is_global(i as u32));
                }
            }
            for gs in 0..d.g {
                for gd in 0..d.g {
                    assert_eq!(pair[(gs * d.g + gd) as usize], (gs != gd) as u32);
                }
            }
            for src in 0..n {
                for dst in 0..n {
                    if src == dst {
                        continue;
                    }
                    let mut node = gr.ports[src as usize].to;
                    let (mut links, mut globals) = (1, 0);
                    while node >= n {
                        let c = d.candidates(node, dst);
                        assert_eq!(c.count, 1);
                        globals += (gr.ports[c.first as usize].tier == 3) as u32;
                        node = gr.ports[c.first as usize].to;
                        links += 1;
                        assert!(links <= 5);
                    }
                    assert_eq!(node, dst);
                    assert_eq!(links, d.minimal_links(src, dst), "{src}->{dst}");
                    let cross = d.router_of(src) / d.a != d.router_of(dst) / d.a;
                    assert_eq!(globals, cross as u32);
                }
            }
        }
    }

    /// Under UGAL every route still reaches its destination, crosses at
    /// most two global links, and its VCs (global hops so far) never
    /// decrease along the path; with an idle network (all loads 0) UGAL
    /// routes minimally, with the minimal port loaded it detours.
    #[test]
    fn ugal_routes_arrive_with_nondecreasing_vcs() {
        let d = Dragonfly::new(60, 2, 3, 3).unwrap().with_ugal(true);
        let gr = d.graph(Rate::gbps(25));
        let n = d.hosts();
        let mut rng = crate::rng::RngStreams::new(4).stream("r");
        for busy_min in [false, true] {
            let mut detours = 0;
            for src in 0..n {
                for dst in 0..n {
                    if d.router_of(src) == d.router_of(dst) {
                        continue;
                    }
                    let first = d.minimal_port(d.router_of(src), dst);
                    let load = |p: u32| if busy_min && p == first { 10_000 } else { 0 };
                    let mut hop = Hop {
                        node: gr.ports[src as usize].to,
                        flow: 0,
                        dst,
                        in_port: src,
                        vc: d.vc(
                            &Hop {
                                node: src,
                                flow: 0,
                                dst,
                                in_port: u32::MAX,
                                vc: 0,
                                vcs: 3,
                                tag: 0,
                                ack: false,
                            },
                            src,
                        ),
                        vcs: 3,
                        tag: 0,
                        ack: false,
                    };
                    let (mut links, mut globals, mut last_vc) = (1, 0, 0u8);
                    while hop.node >= n {
                        let out = d.route(&mut hop, &load, &mut rng).unwrap();
                        let vc = d.vc(&hop, out);
                        assert!(vc >= last_vc && vc < 3);
                        last_vc = vc;
                        globals += d.is_global(out) as u32;
                        hop.in_port = out;
                        hop.vc = vc;
                        hop.node = gr.ports[out as usize].to;
                        links += 1;
                        assert!(links <= 8, "{src}->{dst}");
                    }
                    assert_eq!(hop.node, dst);
                    assert!(globals <= 2);
                    if globals == 2 {
                        detours += 1;
                    }
                    if !busy_min {
                        assert_eq!(links, d.minimal_links(src, dst));
                    }
                }
            }
            assert_eq!(detours > 0, busy_min);
        }
    }
}

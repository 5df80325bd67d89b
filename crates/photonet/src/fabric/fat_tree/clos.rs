//! The checked shape of a 3-tier Clos (or a leaf-spine) as a packet graph,
//! and its up-down router.

use super::params::{err, FatTreeParams};
use crate::error::ConfigError;
use crate::fabric::registry::BuildContext;
use crate::net::{Candidates, Graph, PortSpec, Router};
use crate::units::Rate;

/// The checked shape of a 3-tier Clos (a leaf-spine has `pods = 1`, `c = 0`).
#[derive(Clone, Debug, PartialEq)]
pub struct Clos {
    pub pods: u32,
    /// ToRs per pod.
    pub t: u32,
    /// Hosts per ToR.
    pub h: u32,
    /// Aggregation switches per pod (= ToR uplinks).
    pub a: u32,
    /// Core uplinks per aggregation switch.
    pub c: u32,
    pub host_rate: Rate,
    pub uplink_rate: Rate,
    hosts: u32,
    tor_node0: u32,
    agg_node0: u32,
    core_node0: u32,
    tor_port0: u32,
    agg_port0: u32,
    core_port0: u32,
    tor_of: Vec<u32>,
    pod_of: Vec<u32>,
}

impl Clos {
    pub fn new(
        pods: u32,
        t: u32,
        h: u32,
        a: u32,
        c: u32,
        host_rate: Rate,
        uplink_rate: Rate,
    ) -> Clos {
        let tors = pods * t;
        let hosts = tors * h;
        let tor_node0 = hosts;
        let agg_node0 = tor_node0 + tors;
        let core_node0 = agg_node0 + pods * a;
        let tor_port0 = hosts;
        let agg_port0 = tor_port0 + tors * (h + a);
        let core_port0 = agg_port0 + pods * a * (t + c);
        Clos {
            pods,
            t,
            h,
            a,
            c,
            host_rate,
            uplink_rate,
            hosts,
            tor_node0,
            agg_node0,
            core_node0,
            tor_port0,
            agg_port0,
            core_port0,
            tor_of: (0..hosts).map(|x| x / h).collect(),
            pod_of: (0..hosts).map(|x| x / h / t).collect(),
        }
    }

    /// Checks the table against the topology and derives the shape.
    pub fn layout(
        p: &FatTreeParams,
        leaf_spine: bool,
        ctx: &BuildContext,
    ) -> Result<Clos, ConfigError> {
        let topo = ctx.topology;
        if p.tor_oversubscription == 0 {
            return Err(err("tor_oversubscription", 0, "a ratio must be at least 1"));
        }
        if p.agg_oversubscription == 0 {
            return Err(err("agg_oversubscription", 0, "a ratio must be at least 1"));
        }
        if leaf_spine && p.agg_oversubscription != 1 {
            return Err(err(
                "agg_oversubscription",
                p.agg_oversubscription,
                "a leaf-spine has no aggregation tier (leave it at 1)",
            ));
        }
        if p.k > 0 {
            if !p.k.is_multiple_of(2) || p.k < 2 {
                return Err(err("k", p.k, "a k-ary fat-tree needs an even k >= 2"));
            }
            let half = p.k / 2;
            if !half.is_multiple_of(p.tor_oversubscription) {
                return Err(err(
                    "tor_oversubscription",
                    p.tor_oversubscription,
                    format!(
                        "must divide k/2 = {half} (a ToR has k/2 hosts and k/(2·ratio) uplinks)"
                    ),
                ));
            }
            let a = half / p.tor_oversubscription;
            let r = topo.uplink_rate;
            if leaf_spine {
                return Ok(Clos::new(1, p.k, half, a, 0, r, r));
            }
            if !half.is_multiple_of(p.agg_oversubscription) {
                return Err(err(
                    "agg_oversubscription",
                    p.agg_oversubscription,
                    format!("must divide k/2 = {half}"),
                ));
            }
            return Ok(Clos::new(
                p.k,
                half,
                half,
                a,
                half / p.agg_oversubscription,
                r,
                r,
            ));
        }
        if p.tor_oversubscription != 1 {
            return Err(err(
                "tor_oversubscription",
                p.tor_oversubscription,
                "applies to an explicit k only; from [topology], set topology.server_rate",
            ));
        }
        let (h, a) = (topo.servers_per_rack, topo.uplinks);
        if leaf_spine {
            return Ok(Clos::new(
                1,
                topo.racks,
                h,
                a,
                0,
                topo.host_rate(),
                topo.uplink_rate,
            ));
        }
        let t = if p.pod_racks == 0 { a } else { p.pod_racks };
        if !topo.racks.is_multiple_of(t) {
            return Err(err(
                "pod_racks",
                t,
                format!(
                    "racks per pod must divide topology.racks = {} (pod_racks = 0 takes topology.uplinks)",
                    topo.racks
                ),
            ));
        }
        if !t.is_multiple_of(p.agg_oversubscription) {
            return Err(err(
                "agg_oversubscription",
                p.agg_oversubscription,
                format!("must divide the racks per pod ({t})"),
            ));
        }
        let pods = topo.racks / t;
        let c = if pods == 1 {
            0
        } else {
            t / p.agg_oversubscription
        };
        Ok(Clos::new(
            pods,
            t,
            h,
            a,
            c,
            topo.host_rate(),
            topo.uplink_rate,
        ))
    }

    pub fn hosts(&self) -> u32 {
        self.hosts
    }

    /// The ToR port that delivers to `host` (its downlink).
    pub fn tor_down_port(&self, host: u32) -> u32 {
        let tor = host / self.h;
        self.tor_port0 + tor * (self.h + self.a) + host % self.h
    }

    /// Links on the path from `src` to `dst`: 2, 4 or 6.
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        if self.tor_of[src as usize] == self.tor_of[dst as usize] {
            2
        } else if self.pod_of[src as usize] == self.pod_of[dst as usize] {
            4
        } else {
            6
        }
    }

    /// The rates of the links of the path, in order.
    pub fn path_rates(&self, src: u32, dst: u32) -> Vec<Rate> {
        let h = self.hops(src, dst) as usize;
        (0..h)
            .map(|i| {
                if i == 0 || i + 1 == h {
                    self.host_rate
                } else {
                    self.uplink_rate
                }
            })
            .collect()
    }

    /// The nodes and links.
    pub fn graph(&self) -> Graph {
        let mut ports = Vec::new();
        let mut reverse = Vec::new();
        let (h, t, a, c, pods) = (self.h, self.t, self.a, self.c, self.pods);
        let (nic, up) = (self.host_rate, self.uplink_rate);
        let tor_port = |tor: u32, i: u32| self.tor_port0 + tor * (h + a) + i;
        let agg_port = |g: u32, i: u32| self.agg_port0 + g * (t + c) + i;
        let core_port = |x: u32, pod: u32| self.core_port0 + x * pods + pod;
        // A port to node `to` at `rate` in `tier`, and the port back.
        let mut link = |to: u32, rate: Rate, tier: u8, back: u32| {
            ports.push(PortSpec { to, rate, tier });
            reverse.push(back);
        };
        // Tiers: 0 nic, 1 tor_down, 2 tor_up, 3 agg_down, 4 agg_up, 5 core_down.
        for host in 0..self.hosts {
            let tor = host / h;
            link(self.tor_node0 + tor, nic, 0, tor_port(tor, host % h));
        }
        for tor in 0..pods * t {
            let pod = tor / t;
            for i in 0..h {
                link(tor * h + i, nic, 1, tor * h + i);
            }
            for j in 0..a {
                let g = pod * a + j;
                link(self.agg_node0 + g, up, 2, agg_port(g, tor % t));
            }
        }
        for g in 0..pods * a {
            let (pod, j) = (g / a, g % a);
            for i in 0..t {
                let tor = pod * t + i;
                link(self.tor_node0 + tor, up, 3, tor_port(tor, h + j));
            }
            for k in 0..c {
                let x = j * c + k;
                link(self.core_node0 + x, up, 4, core_port(x, pod));
            }
        }
        for x in 0..a * c {
            let (j, k) = (x / c, x % c);
            for pod in 0..pods {
                let g = pod * a + j;
                link(self.agg_node0 + g, up, 5, agg_port(g, t + k));
            }
        }
        Graph {
            hosts: self.hosts,
            ports,
            reverse,
            tiers: vec![
                "nic",
                "tor_down",
                "tor_up",
                "agg_down",
                "agg_up",
                "core_down",
            ],
            delays: Vec::new(),
        }
    }
}

impl Router for Clos {
    #[inline]
    fn candidates(&self, node: u32, dst: u32) -> Candidates {
        // Down the one port towards `dst`, or up over every uplink.
        let dt = self.tor_of[dst as usize];
        let (first, count) = if node < self.agg_node0 {
            let tor = node - self.tor_node0;
            let base = self.tor_port0 + tor * (self.h + self.a);
            if dt == tor {
                (base + (dst - dt * self.h), 1)
            } else {
                (base + self.h, self.a)
            }
        } else if node < self.core_node0 {
            let g = node - self.agg_node0;
            let base = self.agg_port0 + g * (self.t + self.c);
            let dpod = self.pod_of[dst as usize];
            if dpod == g / self.a {
                (base + (dt - dpod * self.t), 1)
            } else {
                (base + self.t, self.c)
            }
        } else {
            let x = node - self.core_node0;
            (
                self.core_port0 + x * self.pods + self.pod_of[dst as usize],
                1,
            )
        };
        Candidates { first, count }
    }
}

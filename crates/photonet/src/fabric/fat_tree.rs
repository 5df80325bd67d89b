//! Packet-level electrical networks: the k-ary 3-tier fat-tree
//! (`fabric = "fat_tree"`) and the 2-tier leaf-spine (`fabric =
//! "leaf_spine"`), on the packet substrate of `net/`: finite output-queued
//! buffers with drop-tail and ECN, optional PFC, per-flow ECMP / per-packet
//! spraying / adaptive routing on up-down paths, and DCTCP (or paced,
//! window-free) hosts. One table, `[fat_tree]`, configures both.
//!
//! # Shape
//! A 3-tier Clos of `P` pods; a pod has `T` ToRs of `H` hosts and `A`
//! aggregation switches; every ToR has one link to every aggregation switch
//! of its pod; aggregation switch `a` of every pod has `C` uplinks, one to
//! each core of core group `a` (`A·C` cores of `P` ports). A leaf-spine is
//! the same with one pod and no cores (leaves = ToRs, spines = aggregation
//! switches).
//! - Explicit `k` (even): the classic fat-tree `P = k`, `T = H = k/2`,
//!   `A = k/(2·tor_oversubscription)`, `C = k/(2·agg_oversubscription)`,
//!   k³/4 hosts; leaf-spine: `k` leaves of `k/2` hosts, `k/(2·tor_oversubscription)`
//!   spines. Every link runs at `topology.uplink_rate`.
//! - `k = 0`: from the common topology, so that `compare` puts the fabric
//!   beside ESN (Ideal): ToRs = racks, `H = servers_per_rack` at R =
//!   `host_rate()`, `A = uplinks` at `uplink_rate`; a fat-tree groups
//!   `pod_racks` racks per pod (`C = pod_racks / agg_oversubscription`,
//!   cores at `uplink_rate`), a leaf-spine has all racks under `uplinks`
//!   spines. ToR oversubscription is then the topology's own (set
//!   `topology.server_rate`).
//!
//! # Lone-flow latency
//! Store-and-forward over `h` links (2 within a ToR, 4 within a pod, 6
//! across pods) at one rate R, with packets of `s₀ = min(bytes, mtu) +
//! header` bytes first: FCT = wire/R + (h − 1)·s₀/R + h·propagation (wire =
//! bytes + one header per packet), when the window does not limit (a flow of
//! at most `init_cwnd` packets, or the paced transport). DCTCP's slow start
//! adds at most one round trip per doubling of the window.

use crate::error::ConfigError;
use crate::fabric::registry::{BuildContext, FabricModule, FctBounds, ParamTable, Variant};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::Flow;
use crate::net::{
    Candidates, CreditConfig, DctcpConfig, FlowControl, Graph, NetConfig, Network, NicQueues,
    PfcConfig, PortSpec, Priority, Router, Routing, Transport,
};
use crate::recorder::Recorder;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Host transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// Reliable window transport with DCTCP congestion control.
    Dctcp,
    /// Window-free line-rate sending (lossless networks only: `flow_control = "pfc"` or `"credit"`).
    Paced,
}

/// Link-level flow control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowControlKind {
    /// Lossy: drop-tail at full buffers.
    None,
    /// Priority flow control: pause the upstream port above `pfc_xoff`.
    Pfc,
    /// Credit-based flow control per virtual channel (HPC style): `buffer`
    /// bytes per ingress link, split equally among `vcs` VCs; a port sends
    /// a packet only when it holds credits for all its bytes on its VC.
    Credit,
}

/// Priority classes at switch ports and NICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PriorityKind {
    /// One FIFO per port.
    None,
    /// PIAS-like: a packet's class is the number of `priority_thresholds` at
    /// or below the bytes its flow sent before it (short flows and the heads
    /// of long ones go first).
    Pias,
    /// Size-aware: a flow's class is the number of thresholds at or below
    /// its size.
    Size,
}

/// Parameters of the packet-level fat-tree and leaf-spine (`fabric =
/// "fat_tree"` or `"leaf_spine"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FatTreeParams {
    /// Switch radix k (even). Fat-tree: k pods of k/2 ToRs and k/2
    /// aggregation switches, (k/2)² cores, k³/4 hosts; leaf-spine: k leaves
    /// of k/2 hosts under k/2 spines. Every link at `topology.uplink_rate`.
    /// 0 = build from [topology] (racks, servers_per_rack, uplinks).
    pub k: u32,
    /// Fat-tree from [topology] (k = 0): racks per pod (0 = as many as a rack
    /// has uplinks, the fat-tree proportion). Must divide `topology.racks`.
    pub pod_racks: u32,
    /// Explicit k only: ToR oversubscription ratio; a ToR keeps k/2 hosts
    /// and gets k/(2·ratio) uplinks (must divide k/2). From [topology], set
    /// `topology.server_rate` instead.
    pub tor_oversubscription: u32,
    /// Fat-tree only: aggregation-tier oversubscription; an aggregation
    /// switch has (ToRs per pod)/ratio core uplinks (must divide).
    pub agg_oversubscription: u32,
    /// Propagation delay of every switch-to-switch link (and of the host
    /// links unless `host_propagation` is set).
    pub propagation: SimTime,
    /// Propagation delay of the host links (NIC to ToR and back); unset =
    /// `propagation`.
    pub host_propagation: Option<SimTime>,
    /// Payload bytes of a full data packet (the MSS).
    pub mtu: ByteSize,
    /// Header bytes added to every data packet.
    pub header: ByteSize,
    /// Bytes of an ACK on the wire.
    pub ack_size: ByteSize,
    /// Buffer per switch output port (per ingress link with PFC or credits), bytes.
    pub buffer: ByteSize,
    /// ECN marking threshold K: a data packet is marked if the output queue
    /// holds more than K bytes with it. "0B" = no marking.
    pub ecn_threshold: ByteSize,
    /// "ecmp" (per-flow hash), "spray" (per-packet random) or "adaptive"
    /// (least-occupied minimal port).
    pub routing: Routing,
    /// "dctcp" (window, ECN, retransmission) or "paced" (window-free; needs PFC or credits).
    pub transport: TransportKind,
    /// DCTCP initial window, packets.
    pub init_cwnd: u32,
    /// DCTCP largest window, packets.
    pub max_cwnd: u32,
    /// DCTCP gain g of the marked-fraction estimate α.
    pub dctcp_g: f64,
    /// Floor of the retransmission timeout (RTT estimate + 4 deviations).
    pub rto_min: SimTime,
    /// Retransmission timeout before a flow's first RTT sample (RFC 6298
    /// §2.1, which says 1 s for the Internet). Default 1 ms: 5 × `rto_min`,
    /// above the worst first round trip of the default network (every
    /// buffer of a 5-switch path full: 5 × 256 KB at 100 Gb/s = 102 µs,
    /// plus 12 µs of propagation), so a first packet that waits in full
    /// queues is not resent spuriously. At least `rto_min`.
    pub rto_init: SimTime,
    /// Duplicate ACKs that trigger a fast retransmit.
    pub dupack_threshold: u32,
    /// DCTCP: selective acknowledgements (SACK scoreboard, one hole
    /// retransmitted per ACK in recovery); false = NewReno.
    pub sack: bool,
    /// DCTCP: one ACK per this many in-order packets (1 = every packet;
    /// 2 = classic delayed ACKs), or after `delayed_ack_timeout`.
    pub delayed_ack: u32,
    /// DCTCP: the longest an ACK is delayed.
    pub delayed_ack_timeout: SimTime,
    /// "none" (lossy, drop-tail), "pfc" or "credit" (both lossless).
    pub flow_control: FlowControlKind,
    /// Credit: virtual channels per link (1..=16); each gets buffer/vcs
    /// bytes of credit. Packets take VC min(links crossed, vcs − 1).
    pub vcs: u32,
    /// Credit: from the downstream buffer freeing to the credit leaving
    /// (besides propagation).
    pub credit_delay: SimTime,
    /// PFC: an ingress link holding more than this many bytes is paused.
    pub pfc_xoff: ByteSize,
    /// PFC: the pause is lifted when the ingress link holds at most this.
    pub pfc_xon: ByteSize,
    /// PFC: from crossing xoff to the upstream port stopping (besides propagation).
    pub pfc_pause_delay: SimTime,
    /// PFC: from falling to xon to the upstream port restarting (besides propagation).
    pub pfc_resume_delay: SimTime,
    /// Priority classes: "none", "pias" or "size"; strict priority per port
    /// (ACKs in the top class); with PFC, pause/resume per class (each class
    /// of an ingress link has its own xoff/xon).
    pub priority: PriorityKind,
    /// Class boundaries, increasing (classes = thresholds + 1, at most 8).
    pub priority_thresholds: Vec<ByteSize>,
    /// Cut-through: switches start forwarding once a header has arrived
    /// (with credits: and the VC holds credits for the whole packet; a
    /// transmission never ends before the packet's last bit has arrived).
    pub cut_through: bool,
    /// Probability that a switch loses a packet it receives (loss-recovery
    /// studies; 0.0 = none).
    pub loss_rate: f64,
    /// DCTCP: how a host's NIC orders its flows' data packets:
    /// "round_robin" (a queue per flow, one packet each in turn, handed over
    /// when the NIC is free, as a fair-queueing qdisc with TCP small queues)
    /// or "fifo" (each flow puts its whole window into one shared FIFO).
    pub nic_queues: NicQueues,
}

impl Default for FatTreeParams {
    fn default() -> Self {
        FatTreeParams {
            k: 0,
            pod_racks: 0,
            tor_oversubscription: 1,
            agg_oversubscription: 1,
            propagation: SimTime::ns(1_000),
            host_propagation: None,
            mtu: ByteSize(4096),
            header: ByteSize(64),
            ack_size: ByteSize(64),
            buffer: ByteSize(256_000),
            ecn_threshold: ByteSize(80_000),
            routing: Routing::Ecmp,
            transport: TransportKind::Dctcp,
            init_cwnd: 10,
            max_cwnd: 1_000,
            dctcp_g: 1.0 / 16.0,
            rto_min: SimTime::us(200),
            rto_init: SimTime::ms(1),
            dupack_threshold: 3,
            sack: false,
            delayed_ack: 1,
            delayed_ack_timeout: SimTime::us(10),
            flow_control: FlowControlKind::None,
            vcs: 1,
            credit_delay: SimTime::ZERO,
            pfc_xoff: ByteSize(100_000),
            pfc_xon: ByteSize(50_000),
            pfc_pause_delay: SimTime::ns(1_000),
            pfc_resume_delay: SimTime::ns(1_200),
            priority: PriorityKind::None,
            priority_thresholds: vec![ByteSize(10_000), ByteSize(100_000)],
            cut_through: false,
            loss_rate: 0.0,
            nic_queues: NicQueues::RoundRobin,
        }
    }
}

impl FatTreeParams {
    /// Propagation delay of a host link.
    pub fn host_prop(&self) -> SimTime {
        self.host_propagation.unwrap_or(self.propagation)
    }

    /// Total propagation over a path of `h` links (two of them host links).
    pub fn path_propagation(&self, h: u64) -> SimTime {
        self.host_prop() * 2.min(h) + self.propagation * h.saturating_sub(2)
    }
}

impl ParamTable for FatTreeParams {
    const TABLE: &'static str = "fat_tree";
}

/// The largest frame (MTU + header) a switch forwards: the jumbo-frame limit.
pub const MAX_FRAME: u64 = 9_216;

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

fn err(key: &str, value: impl std::fmt::Display, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(format!("fat_tree.{key}"), value, reason)
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
        let tor_port = |tor: u32, i: u32| self.tor_port0 + tor * (h + a) + i;
        let agg_port = |g: u32, i: u32| self.agg_port0 + g * (t + c) + i;
        let core_port = |x: u32, pod: u32| self.core_port0 + x * pods + pod;
        // Tiers: 0 nic, 1 tor_down, 2 tor_up, 3 agg_down, 4 agg_up, 5 core_down.
        for host in 0..self.hosts {
            let tor = host / h;
            ports.push(PortSpec {
                to: self.tor_node0 + tor,
                rate: self.host_rate,
                tier: 0,
            });
            reverse.push(tor_port(tor, host % h));
        }
        for tor in 0..pods * t {
            let pod = tor / t;
            for i in 0..h {
                ports.push(PortSpec {
                    to: tor * h + i,
                    rate: self.host_rate,
                    tier: 1,
                });
                reverse.push(tor * h + i);
            }
            for j in 0..a {
                let g = pod * a + j;
                ports.push(PortSpec {
                    to: self.agg_node0 + g,
                    rate: self.uplink_rate,
                    tier: 2,
                });
                reverse.push(agg_port(g, tor % t));
            }
        }
        for g in 0..pods * a {
            let (pod, j) = (g / a, g % a);
            for i in 0..t {
                let tor = pod * t + i;
                ports.push(PortSpec {
                    to: self.tor_node0 + tor,
                    rate: self.uplink_rate,
                    tier: 3,
                });
                reverse.push(tor_port(tor, h + j));
            }
            for k in 0..c {
                let x = j * c + k;
                ports.push(PortSpec {
                    to: self.core_node0 + x,
                    rate: self.uplink_rate,
                    tier: 4,
                });
                reverse.push(core_port(x, pod));
            }
        }
        for x in 0..a * c {
            let (j, k) = (x / c, x % c);
            for pod in 0..pods {
                let g = pod * a + j;
                ports.push(PortSpec {
                    to: self.agg_node0 + g,
                    rate: self.uplink_rate,
                    tier: 5,
                });
                reverse.push(agg_port(g, t + k));
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
        let dt = self.tor_of[dst as usize];
        if node < self.agg_node0 {
            let tor = node - self.tor_node0;
            let base = self.tor_port0 + tor * (self.h + self.a);
            if dt == tor {
                Candidates {
                    first: base + (dst - dt * self.h),
                    count: 1,
                }
            } else {
                Candidates {
                    first: base + self.h,
                    count: self.a,
                }
            }
        } else if node < self.core_node0 {
            let g = node - self.agg_node0;
            let base = self.agg_port0 + g * (self.t + self.c);
            let dpod = self.pod_of[dst as usize];
            if dpod == g / self.a {
                Candidates {
                    first: base + (dt - dpod * self.t),
                    count: 1,
                }
            } else {
                Candidates {
                    first: base + self.t,
                    count: self.c,
                }
            }
        } else {
            let x = node - self.core_node0;
            Candidates {
                first: self.core_port0 + x * self.pods + self.pod_of[dst as usize],
                count: 1,
            }
        }
    }
}

/// Checks the transport, buffer, ECN, PFC and MTU settings against the
/// shape's fastest link.
fn check_params(p: &FatTreeParams, clos: &Clos) -> Result<(), ConfigError> {
    if p.mtu.0 == 0 {
        return Err(err(
            "mtu",
            "\"0B\"",
            "a packet must carry at least one byte",
        ));
    }
    let frame = p.mtu.0 + p.header.0;
    if frame > MAX_FRAME {
        return Err(err(
            "mtu",
            format!("\"{}\"", p.mtu),
            format!("mtu + header = {frame} B is above the {MAX_FRAME} B jumbo-frame limit of the switches"),
        ));
    }
    if p.ack_size.0 == 0 || p.ack_size.0 > frame {
        return Err(err(
            "ack_size",
            format!("\"{}\"", p.ack_size),
            format!("an ACK must be between 1 B and one frame ({frame} B)"),
        ));
    }
    if p.buffer.0 < frame {
        return Err(err(
            "buffer",
            format!("\"{}\"", p.buffer),
            format!("smaller than one MTU-sized packet (mtu + header = {frame} B)"),
        ));
    }
    if p.ecn_threshold.0 > p.buffer.0 {
        return Err(err(
            "ecn_threshold",
            format!("\"{}\"", p.ecn_threshold),
            format!(
                "above the buffer ({}): no packet would ever be marked before a drop",
                p.buffer
            ),
        ));
    }
    if p.init_cwnd == 0 || p.max_cwnd < p.init_cwnd {
        return Err(err(
            "init_cwnd",
            p.init_cwnd,
            format!("needs 1 <= init_cwnd <= max_cwnd ({})", p.max_cwnd),
        ));
    }
    if !(p.dctcp_g > 0.0 && p.dctcp_g <= 1.0) {
        return Err(err("dctcp_g", p.dctcp_g, "the gain must be in (0, 1]"));
    }
    if !(0.0..1.0).contains(&p.loss_rate) {
        return Err(err("loss_rate", p.loss_rate, "a probability in [0, 1)"));
    }
    if p.loss_rate > 0.0 && p.transport == TransportKind::Paced {
        return Err(err(
            "loss_rate",
            p.loss_rate,
            "the paced transport cannot recover losses",
        ));
    }
    if p.delayed_ack == 0 || p.delayed_ack > 64 {
        return Err(err(
            "delayed_ack",
            p.delayed_ack,
            "one ACK per 1 to 64 packets",
        ));
    }
    if p.delayed_ack > 1 && p.delayed_ack_timeout.0 == 0 {
        return Err(err(
            "delayed_ack_timeout",
            "\"0ps\"",
            "delayed ACKs need a timeout > 0",
        ));
    }
    if p.dupack_threshold == 0 {
        return Err(err("dupack_threshold", 0, "must be at least 1"));
    }
    if p.rto_min.0 == 0 {
        return Err(err(
            "rto_min",
            "\"0ps\"",
            "a retransmission timeout must be > 0",
        ));
    }
    if p.rto_init < p.rto_min {
        return Err(err(
            "rto_init",
            format!("\"{}\"", p.rto_init),
            format!(
                "the initial retransmission timeout must be at least rto_min ({})",
                p.rto_min
            ),
        ));
    }
    if p.vcs != 1 && p.flow_control != FlowControlKind::Credit {
        return Err(err(
            "vcs",
            p.vcs,
            "virtual channels need flow_control = \"credit\"",
        ));
    }
    let classes = if p.priority == PriorityKind::None {
        1
    } else {
        let t = &p.priority_thresholds;
        if t.is_empty() || t.len() as u32 >= crate::net::MAX_CLASSES {
            return Err(err(
                "priority_thresholds",
                t.len(),
                format!(
                    "needs 1 to {} thresholds (classes = thresholds + 1)",
                    crate::net::MAX_CLASSES - 1
                ),
            ));
        }
        if t[0].0 == 0 || t.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(err(
                "priority_thresholds",
                format!("{:?}", t.iter().map(|b| b.0).collect::<Vec<_>>()),
                "thresholds must be above 0 B and strictly increasing",
            ));
        }
        if p.flow_control == FlowControlKind::Credit {
            return Err(err(
                "priority",
                format!("{:?}", p.priority),
                "priority classes are not supported with flow_control = \"credit\" (use VCs)",
            ));
        }
        if p.cut_through {
            return Err(err(
                "cut_through",
                true,
                "is not supported with priority classes",
            ));
        }
        t.len() as u64 + 1
    };
    match p.flow_control {
        FlowControlKind::Credit => {
            if p.vcs == 0 || p.vcs > crate::net::MAX_VCS as u32 {
                return Err(err(
                    "vcs",
                    p.vcs,
                    format!("needs 1 to {} virtual channels", crate::net::MAX_VCS),
                ));
            }
            if p.buffer.0 / (p.vcs as u64) < frame {
                return Err(err(
                    "vcs",
                    p.vcs,
                    format!(
                        "buffer / vcs = {} B of credit per VC is less than one frame (mtu + header = {frame} B)",
                        p.buffer.0 / p.vcs as u64
                    ),
                ));
            }
        }
        FlowControlKind::None => {
            if p.transport == TransportKind::Paced {
                return Err(err(
                    "transport",
                    "\"paced\"",
                    "the window-free transport cannot recover losses: it needs flow_control = \"pfc\" or \"credit\"",
                ));
            }
        }
        FlowControlKind::Pfc => {
            if p.pfc_xon.0 > p.pfc_xoff.0 {
                return Err(err(
                    "pfc_xon",
                    format!("\"{}\"", p.pfc_xon),
                    format!("above pfc_xoff ({})", p.pfc_xoff),
                ));
            }
            let fastest = clos.host_rate.max(clos.uplink_rate);
            let rtt = p.propagation.max(p.host_prop()) * 2 + p.pfc_pause_delay;
            let headroom = fastest.bytes_in(rtt) + 1 + 2 * frame;
            if classes * (p.pfc_xoff.0 + headroom) > p.buffer.0 {
                return Err(err(
                    "pfc_xoff",
                    format!("\"{}\"", p.pfc_xoff),
                    format!(
                        "{classes} class(es) x (xoff + the bytes one link round trip still delivers after a pause ({headroom} B: \
                         {fastest} over 2 x {} + pfc_pause_delay {}, plus two frames)) = {} B exceeds the buffer ({} B)",
                        p.propagation.max(p.host_prop()),
                        p.pfc_pause_delay,
                        classes * (p.pfc_xoff.0 + headroom),
                        p.buffer.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn net_config(p: &FatTreeParams, seed: u64) -> NetConfig {
    NetConfig {
        payload: p.mtu.0 as u32,
        header: p.header.0 as u32,
        ack_bytes: p.ack_size.0 as u32,
        propagation: p.propagation,
        buffer: p.buffer.0,
        ecn_k: (p.ecn_threshold.0 > 0).then_some(p.ecn_threshold.0),
        flow_control: match p.flow_control {
            FlowControlKind::None => FlowControl::None,
            FlowControlKind::Pfc => FlowControl::Pfc(PfcConfig {
                xoff: p.pfc_xoff.0,
                xon: p.pfc_xon.0,
                pause_delay: p.pfc_pause_delay,
                resume_delay: p.pfc_resume_delay,
            }),
            FlowControlKind::Credit => FlowControl::Credit(CreditConfig {
                vcs: p.vcs as u8,
                vc_buffer: p.buffer.0 / p.vcs as u64,
                credit_delay: p.credit_delay,
            }),
        },
        transport: match p.transport {
            TransportKind::Dctcp => Transport::Dctcp(DctcpConfig {
                init_cwnd: p.init_cwnd,
                max_cwnd: p.max_cwnd,
                g: p.dctcp_g,
                rto_min: p.rto_min,
                rto_init: p.rto_init,
                dupack_threshold: p.dupack_threshold,
                sack: p.sack,
                delayed_ack: p.delayed_ack,
                delayed_ack_timeout: p.delayed_ack_timeout,
            }),
            TransportKind::Paced => Transport::Paced,
        },
        routing: p.routing,
        cut_through: p.cut_through,
        loss: p.loss_rate,
        seed,
        priority: {
            let t = p.priority_thresholds.iter().map(|b| b.0).collect();
            match p.priority {
                PriorityKind::None => Priority::None,
                PriorityKind::Pias => Priority::Pias(t),
                PriorityKind::Size => Priority::Size(t),
            }
        },
        nic: p.nic_queues,
    }
}

/// Registration of the fat-tree and the leaf-spine.
pub struct FatTreeModule;

/// The `fat_tree` variant.
pub const FAT_TREE_VARIANT: Variant = Variant {
    name: "fat_tree",
    label: "Fat-tree (packet, DCTCP)",
    description: "Packet-level 3-tier fat-tree: finite buffers with drop-tail/ECN (or PFC), ECMP/spraying/adaptive routing, DCTCP hosts",
};
/// The `leaf_spine` variant.
pub const LEAF_SPINE_VARIANT: Variant = Variant {
    name: "leaf_spine",
    label: "Leaf-spine (packet, DCTCP)",
    description: "Packet-level 2-tier leaf-spine: racks under spines, same buffers, routing and transports as fat_tree (table [fat_tree])",
};

impl FabricModule for FatTreeModule {
    type Params = FatTreeParams;
    const VARIANTS: &'static [Variant] = &[FAT_TREE_VARIANT, LEAF_SPINE_VARIANT];

    fn layout(p: &FatTreeParams, ctx: &BuildContext) -> Result<(), ConfigError> {
        // Both shapes must be buildable from the table: check the one asked
        // for at build time; here, the fat-tree unless it cannot be (then the
        // leaf-spine; `build` re-checks with the variant).
        let clos =
            Clos::layout(p, false, ctx).or_else(|e| Clos::layout(p, true, ctx).map_err(|_| e))?;
        check_params(p, &clos)
    }

    fn build(
        p: FatTreeParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let clos = Clos::layout(&p, v.name == LEAF_SPINE_VARIANT.name, ctx)?;
        check_params(&p, &clos)?;
        Ok(Box::new(PacketFabric::new(&p, v, clos, ctx.seed)))
    }

    /// At least the NIC's serialisation of every wire byte plus one
    /// propagation per link; at most the store-and-forward closed form at the
    /// path's slowest link (exact when all rates are equal) plus one round
    /// trip per slow-start doubling and a picosecond of rounding per packet-hop.
    fn lone_flow_fct(
        p: &FatTreeParams,
        v: &Variant,
        ctx: &BuildContext,
        src: u32,
        dst: u32,
        bytes: u64,
    ) -> Result<FctBounds, ConfigError> {
        let clos = Clos::layout(p, v.name == LEAF_SPINE_VARIANT.name, ctx)?;
        Ok(lone_flow_bounds(p, &clos, src, dst, bytes))
    }
}

/// See [`FatTreeModule::lone_flow_fct`].
pub fn lone_flow_bounds(
    p: &FatTreeParams,
    clos: &Clos,
    src: u32,
    dst: u32,
    bytes: u64,
) -> FctBounds {
    let bytes = bytes.max(1);
    let npkts = bytes.div_ceil(p.mtu.0);
    let wire = bytes + npkts * p.header.0;
    let first = bytes.min(p.mtu.0) + p.header.0;
    let h = clos.hops(src, dst) as u64;
    let rates = clos.path_rates(src, dst);
    let slowest = *rates.iter().min().expect("a path has links");
    let prop = p.path_propagation(h);
    let min = clos.host_rate.tx_time(wire).saturating_sub(SimTime(1)) + prop;
    let pipeline = slowest.tx_time(wire) + slowest.tx_time(first) * (h - 1) + prop;
    // Slow start: the window doubles per round trip until it covers the flow.
    let mut extra = SimTime::ZERO;
    if p.transport == TransportKind::Dctcp && npkts > p.init_cwnd as u64 {
        let rounds = 64 - (npkts.div_ceil(p.init_cwnd as u64)).leading_zeros() as u64;
        let ack = slowest.tx_time(p.ack_size.0) * h + prop;
        let rtt = slowest.tx_time(first) * h + prop + ack;
        extra = rtt * rounds;
    }
    FctBounds {
        min,
        max: pipeline + extra + SimTime(npkts * h),
    }
}

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
        // At most this many steps per call, so the run loop still reports
        // progress (and can be cancelled) every few thousand events.
        const MAX_STEPS: u64 = 1 << 12;
        let mut t = now;
        let mut steps = 0;
        loop {
            self.net.advance(t, rec);
            self.extra.after_advance(&mut self.net);
            steps += 1;
            match self.net.next_event() {
                Some(next) if next <= bound && steps < MAX_STEPS => t = next,
                _ => break,
            }
        }
        steps
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

/// A fat-tree or leaf-spine network as a [`Fabric`].
pub type PacketFabric = NetFabric<Clos, ClosExtras>;

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
    let ideal =
        clos.host_rate.tx_time(wire) + slowest.tx_time(first) * (h - 1) + p.path_propagation(h);
    let x = fct.0 as f64 / ideal.0 as f64;
    let c = if bytes < 10_000 {
        0
    } else if bytes < 100_000 {
        1
    } else {
        2
    };
    (x, c)
}

impl NetExtras<Clos> for ClosExtras {
    fn after_advance(&mut self, net: &mut Network<Clos>) {
        let (p, clos) = (&self.params, &self.clos);
        let (xs, cs) = (&mut self.retired, &mut self.retired_class);
        net.take_retired(|src, dst, bytes, fct| {
            let (x, c) = slowdown(p, clos, src, dst, bytes, fct);
            xs.push(x);
            cs.push(c);
        });
    }
    fn stats(&self, net: &Network<Clos>, out: &mut FabricStats) {
        for (k, v) in self.slowdowns(net) {
            out.insert(k, v);
        }
    }
}

impl ClosExtras {
    fn slowdowns(&self, net: &Network<Clos>) -> Vec<(String, f64)> {
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
        let mut out = Vec::new();
        for (name, mut v) in classes {
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let p99 = v[((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1];
            out.push((format!("slowdown_mean.{name}"), mean));
            out.push((format!("slowdown_p99.{name}"), p99));
        }
        out
    }
}

impl PacketFabric {
    pub fn new(p: &FatTreeParams, v: &Variant, clos: Clos, seed: u64) -> PacketFabric {
        let mut graph = clos.graph();
        if p.host_propagation.is_some() {
            // Tiers 0 and 1 are the host links (NIC up, ToR down).
            graph.delays = graph
                .ports
                .iter()
                .map(|s| {
                    if s.tier <= 1 {
                        p.host_prop()
                    } else {
                        p.propagation
                    }
                })
                .collect();
        }
        let routing = match p.routing {
            Routing::Ecmp => "ECMP",
            Routing::Spray => "spraying",
            Routing::Adaptive => "adaptive",
        };
        let transport = match (p.transport, p.flow_control) {
            (TransportKind::Dctcp, FlowControlKind::None) => "DCTCP",
            (TransportKind::Dctcp, FlowControlKind::Pfc) => "DCTCP+PFC",
            (TransportKind::Dctcp, FlowControlKind::Credit) => "DCTCP+credit",
            (TransportKind::Paced, FlowControlKind::Credit) => "paced+credit",
            (TransportKind::Paced, _) => "paced+PFC",
        };
        let shape = if v.name == LEAF_SPINE_VARIANT.name {
            "Leaf-spine"
        } else {
            "Fat-tree"
        };
        let label = format!(
            "{shape} (packet, {transport}, {routing}{})",
            match p.priority {
                PriorityKind::None => "",
                PriorityKind::Pias => ", PIAS classes",
                PriorityKind::Size => ", size classes",
            }
        );
        let mut net = Network::new(net_config(p, seed), graph, clos.clone());
        if p.transport == TransportKind::Paced {
            net.retire_finished_flows(true);
        }
        let hosts = net.hosts();
        let rate = clos.host_rate;
        let extra = ClosExtras {
            params: p.clone(),
            clos,
            retired: Vec::new(),
            retired_class: Vec::new(),
        };
        NetFabric::with_network(label, hosts, rate, net, extra)
    }

    /// Slowdown of each completed flow (FCT over its lone-flow FCT with an
    /// unlimited window: wire/R + (hops − 1) first-packet serialisations +
    /// hops propagations), mean and p99 per size class (`<10KB`,
    /// `<100KB`, `>=100KB`, `all`).
    pub fn slowdowns(&self) -> Vec<(String, f64)> {
        self.extra.slowdowns(&self.net)
    }

    pub fn clos(&self) -> &Clos {
        &self.extra.clos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    fn ctx(t: &Topology) -> BuildContext<'_> {
        BuildContext {
            topology: t,
            seed: 1,
            check_invariants: true,
        }
    }

    #[test]
    fn k16_has_1024_hosts_and_the_classic_port_counts() {
        let t = Topology {
            uplink_rate: Rate::gbps(100),
            ..Topology::default()
        };
        let p = FatTreeParams {
            k: 16,
            ..Default::default()
        };
        let c = Clos::layout(&p, false, &ctx(&t)).unwrap();
        assert_eq!(
            (c.hosts(), c.pods, c.t, c.h, c.a, c.c),
            (1024, 16, 8, 8, 8, 8)
        );
        let g = c.graph();
        // 1024 NICs; 128 ToRs x 16; 128 aggs x 16; 64 cores x 16.
        assert_eq!(g.ports.len(), 1024 + 2048 + 2048 + 1024);
        // Every link's reverse points back at its source node.
        for (i, s) in g.ports.iter().enumerate() {
            let r = g.reverse[i] as usize;
            assert_eq!(g.reverse[r] as usize, i, "port {i}");
            let back = g.ports[r].to;
            assert!(back != s.to);
        }
        let l = Clos::layout(&p, true, &ctx(&t)).unwrap();
        assert_eq!((l.hosts(), l.pods, l.t, l.a, l.c), (128, 1, 16, 8, 0));
    }

    #[test]
    fn up_down_routes_reach_every_host() {
        let t = Topology {
            racks: 8,
            servers_per_rack: 3,
            uplinks: 2,
            ..Topology::default()
        };
        for leaf in [false, true] {
            let p = FatTreeParams {
                pod_racks: 4,
                ..Default::default()
            };
            let c = Clos::layout(&p, leaf, &ctx(&t)).unwrap();
            let g = c.graph();
            for src in 0..c.hosts() {
                for dst in 0..c.hosts() {
                    if src == dst {
                        continue;
                    }
                    // Follow the first candidate and the last: both arrive in `hops` links.
                    for pick_last in [false, true] {
                        let mut node = g.ports[src as usize].to;
                        let mut links = 1;
                        while node >= c.hosts() {
                            let cand = c.candidates(node, dst);
                            let port = cand.first + if pick_last { cand.count - 1 } else { 0 };
                            node = g.ports[port as usize].to;
                            links += 1;
                            assert!(links <= 6);
                        }
                        assert_eq!(
                            (node, links),
                            (dst, c.hops(src, dst)),
                            "{src}->{dst} leaf={leaf}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bad_input_names_key_value_and_reason() {
        let t = Topology::default();
        let check = |p: FatTreeParams, key: &str, why: &str| {
            let e = Clos::layout(&p, false, &ctx(&t))
                .and_then(|c| check_params(&p, &c))
                .unwrap_err();
            assert!(
                e.key == format!("fat_tree.{key}") && e.reason.contains(why),
                "{e}"
            );
            assert!(!e.value.is_empty(), "{e}");
        };
        let d = FatTreeParams::default;
        check(FatTreeParams { k: 7, ..d() }, "k", "even");
        check(
            FatTreeParams {
                buffer: ByteSize(4000),
                ..d()
            },
            "buffer",
            "one MTU",
        );
        check(
            FatTreeParams {
                ecn_threshold: ByteSize(300_000),
                ..d()
            },
            "ecn_threshold",
            "above the buffer",
        );
        check(
            FatTreeParams {
                mtu: ByteSize(9200),
                ..d()
            },
            "mtu",
            "jumbo",
        );
        check(
            FatTreeParams {
                flow_control: FlowControlKind::Pfc,
                pfc_xoff: ByteSize(240_000),
                ..d()
            },
            "pfc_xoff",
            "round trip",
        );
        check(
            FatTreeParams {
                transport: TransportKind::Paced,
                ..d()
            },
            "transport",
            "pfc",
        );
        check(FatTreeParams { vcs: 2, ..d() }, "vcs", "credit");
        check(
            FatTreeParams {
                rto_init: SimTime::us(100),
                ..d()
            },
            "rto_init",
            "at least rto_min",
        );
        let prio = |t: Vec<u64>| FatTreeParams {
            priority: PriorityKind::Pias,
            priority_thresholds: t.into_iter().map(ByteSize).collect(),
            ..d()
        };
        check(prio(vec![]), "priority_thresholds", "1 to 7");
        check(prio((1..=8).collect()), "priority_thresholds", "1 to 7");
        check(prio(vec![10, 10]), "priority_thresholds", "increasing");
        check(prio(vec![0, 10]), "priority_thresholds", "above 0");
        check(
            FatTreeParams {
                flow_control: FlowControlKind::Credit,
                ..prio(vec![10])
            },
            "priority",
            "credit",
        );
        check(
            FatTreeParams {
                flow_control: FlowControlKind::Pfc,
                pfc_xoff: ByteSize(120_000),
                pfc_xon: ByteSize(50_000),
                ..prio(vec![10])
            },
            "pfc_xoff",
            "2 class(es)",
        );
        let credit = || FatTreeParams {
            flow_control: FlowControlKind::Credit,
            ..d()
        };
        check(FatTreeParams { vcs: 0, ..credit() }, "vcs", "1 to 16");
        check(
            FatTreeParams {
                vcs: 17,
                ..credit()
            },
            "vcs",
            "1 to 16",
        );
        check(
            FatTreeParams {
                vcs: 3,
                buffer: ByteSize(12_000),
                ecn_threshold: ByteSize(0),
                ..credit()
            },
            "vcs",
            "less than one frame",
        );
        check(
            FatTreeParams {
                pod_racks: 7,
                ..d()
            },
            "pod_racks",
            "divide",
        );
        check(
            FatTreeParams {
                k: 16,
                tor_oversubscription: 3,
                ..d()
            },
            "tor_oversubscription",
            "divide",
        );
    }
}

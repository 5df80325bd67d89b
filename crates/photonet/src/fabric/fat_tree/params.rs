//! The `[fat_tree]` table: parameters, their checks against a shape, and
//! the network configuration they give.

use super::Clos;
use crate::error::ConfigError;
use crate::fabric::registry::ParamTable;
use crate::net::{
    CreditConfig, DctcpConfig, FlowControl, NetConfig, NicQueues, PfcConfig, Priority, Routing,
    Transport,
};
use crate::units::{ByteSize, SimTime};
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
    /// NDP (receiver-pulled, trimming switches, per-packet source routing;
    /// `net::ndp`): `buffer` is each switch port's data queue, `init_cwnd`
    /// the initial window; `routing` does not apply.
    Ndp,
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
    /// "dctcp" (window, ECN, retransmission), "paced" (window-free; needs PFC or credits)
    /// or "ndp" (trimming switches, receiver pulls; lossy, one class).
    pub transport: TransportKind,
    /// DCTCP (and NDP) initial window, packets.
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
    /// NDP: a receiver's pull pacer runs at this fraction of its link rate.
    pub ndp_pull_rate: f64,
    /// NDP: a flow that hears nothing for this long resends what is unacknowledged.
    pub ndp_rto: SimTime,
    /// NDP: every data packet full size, the last too (as htsim sends them).
    pub ndp_full_packets: bool,
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
            ndp_pull_rate: 0.99,
            ndp_rto: SimTime::ms(50),
            ndp_full_packets: false,
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

/// A `[fat_tree]` parameter error: the key, the value and why.
pub(super) fn err(
    key: &str,
    value: impl std::fmt::Display,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::new(format!("fat_tree.{key}"), value, reason)
}

/// Checks the transport, buffer, ECN, PFC and MTU settings against the
/// shape's fastest link.
pub(super) fn check_params(p: &FatTreeParams, clos: &Clos) -> Result<(), ConfigError> {
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
    if p.ecn_threshold.0 > p.buffer.0 && p.transport != TransportKind::Ndp {
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
    if p.cut_through && clos.host_rate < clos.uplink_rate {
        // A switch would start a packet from a slow host on a fast link and
        // hold that link until the packet's last bit arrived: the port's
        // backlog would exceed what its buffer can hold.
        return Err(err(
            "cut_through",
            true,
            format!(
                "needs hosts at least as fast as the switch links: a {} host feeding a {} link would hold the link idle until each packet's tail arrived (set cut_through = false, or topology.server_rate >= {})",
                clos.host_rate, clos.uplink_rate, clos.uplink_rate
            ),
        ));
    }
    if p.transport == TransportKind::Ndp {
        check_ndp(p)?;
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

/// NDP runs lossy with one class and no loss model of its own.
fn check_ndp(p: &FatTreeParams) -> Result<(), ConfigError> {
    const WHY: &str = "is not supported with transport = \"ndp\"";
    if p.flow_control != FlowControlKind::None {
        return Err(err("flow_control", format!("{:?}", p.flow_control), WHY));
    }
    if p.priority != PriorityKind::None {
        return Err(err("priority", format!("{:?}", p.priority), WHY));
    }
    if p.cut_through {
        return Err(err("cut_through", true, WHY));
    }
    if p.loss_rate > 0.0 {
        return Err(err("loss_rate", p.loss_rate, WHY));
    }
    if !(p.ndp_pull_rate > 0.0 && p.ndp_pull_rate <= 1.0) {
        return Err(err(
            "ndp_pull_rate",
            p.ndp_pull_rate,
            "a fraction of the link rate in (0, 1]",
        ));
    }
    if p.ndp_rto.0 == 0 {
        return Err(err(
            "ndp_rto",
            "\"0ps\"",
            "a retransmission timeout must be > 0",
        ));
    }
    if p.mtu.0 + p.header.0 > u16::MAX as u64 {
        return Err(err("mtu", p.mtu.0, "NDP frames must fit 64 KiB"));
    }
    Ok(())
}

pub(super) fn net_config(p: &FatTreeParams, seed: u64) -> NetConfig {
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
            TransportKind::Ndp => unreachable!("NDP runs on net::ndp, not net::sim"),
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

//! The network's configuration (transport, flow control, priorities, NIC
//! queues) and its graph: what a topology hands [`super::Network::new`].

use crate::net::route::Routing;
use crate::units::{Rate, SimTime};

/// DCTCP transport settings.
#[derive(Clone, Debug, PartialEq)]
pub struct DctcpConfig {
    /// Initial window, packets.
    pub init_cwnd: u32,
    /// Largest window, packets.
    pub max_cwnd: u32,
    /// Gain g of the α estimate.
    pub g: f64,
    /// Floor of the retransmission timeout.
    pub rto_min: SimTime,
    /// The retransmission timeout before the flow's first RTT sample
    /// (RFC 6298 §2.1: 1 s on the Internet; a datacenter value here).
    /// After the first sample, RTO = max(SRTT + 4·RTTVAR, `rto_min`).
    pub rto_init: SimTime,
    /// Duplicate ACKs that trigger a fast retransmit.
    pub dupack_threshold: u32,
    /// Selective acknowledgements: every ACK of an out-of-order packet
    /// carries its number; the sender keeps a scoreboard, retransmits one
    /// hole per ACK during recovery and never resends a SACKed packet.
    /// Off: NewReno (one hole per round trip).
    pub sack: bool,
    /// Delayed ACKs: one ACK per this many in-order packets (1 = every
    /// packet), or when `delayed_ack_timeout` passes; out-of-order,
    /// duplicate and last packets, and a change of CE state (RFC 8257
    /// §3.2), are acknowledged at once.
    pub delayed_ack: u32,
    pub delayed_ack_timeout: SimTime,
}

/// How hosts send.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    Dctcp(DctcpConfig),
    /// Window-free line-rate sending for lossless networks (no ACKs).
    Paced,
    /// pFabric hosts and switch queues (`net::pfabric`, `sim/pfabric.rs`).
    Pfabric(PfabricConfig),
}

/// pFabric settings (the reference simulator YAPS's pFabric host).
#[derive(Clone, Debug, PartialEq)]
pub struct PfabricConfig {
    /// Initial and largest window, packets.
    pub init_cwnd: u32,
    pub max_cwnd: u32,
    /// The fixed retransmission timeout (re-armed on every new cumulative
    /// ACK; no RTT estimate, no back-off).
    pub rto: SimTime,
    /// Per host, the start of its NIC's round-robin spray counter (a packet
    /// for another ToR takes candidate `counter++ mod candidates` at its
    /// first switch); missing hosts start at 0.
    pub spray_init: Vec<u64>,
}

/// PFC settings (per ingress link).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfcConfig {
    pub xoff: u64,
    pub xon: u64,
    /// From crossing `xoff` to the upstream port stopping, besides propagation.
    pub pause_delay: SimTime,
    /// From falling to `xon` to the upstream port restarting, besides propagation.
    pub resume_delay: SimTime,
}

/// Credit-based flow control settings (per link and virtual channel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreditConfig {
    /// Virtual channels per link, `1..=MAX_VCS`.
    pub vcs: u8,
    /// Input buffer per (link, VC) at the receiving node, bytes: the
    /// credits a sender starts with. At least one frame (payload + header).
    pub vc_buffer: u64,
    /// From the buffer freeing to the credit leaving, besides propagation.
    pub credit_delay: SimTime,
}

/// The most virtual channels per link.
pub const MAX_VCS: u8 = 16;

/// Link-level flow control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlowControl {
    /// Lossy: drop-tail.
    None,
    Pfc(PfcConfig),
    /// Credit-based, per virtual channel (lossless by construction).
    Credit(CreditConfig),
}

/// Priority classes: strict priority at every port, class 0 first; ACKs
/// are class 0. With PFC, pauses are per class.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Priority {
    /// One class.
    #[default]
    None,
    /// PIAS-like (information-agnostic): a data packet's class is the number
    /// of thresholds at or below the bytes its flow sent before it.
    Pias(Vec<u64>),
    /// Size-aware: a flow's class is the number of thresholds at or below
    /// its size.
    Size(Vec<u64>),
}

impl Priority {
    /// The number of classes.
    pub fn classes(&self) -> u32 {
        match self {
            Priority::None => 1,
            Priority::Pias(t) | Priority::Size(t) => t.len() as u32 + 1,
        }
    }

    /// The class of a data packet that follows `sent` bytes of a flow of
    /// `bytes` bytes.
    #[inline]
    pub fn class(&self, sent: u64, bytes: u64) -> u8 {
        match self {
            Priority::None => 0,
            Priority::Pias(t) => t.iter().take_while(|&&x| x <= sent).count() as u8,
            Priority::Size(t) => t.iter().take_while(|&&x| x <= bytes).count() as u8,
        }
    }
}

/// The most priority classes.
pub const MAX_CLASSES: u32 = 8;

/// Everything the substrate needs besides the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Payload bytes per full data packet (MSS).
    pub payload: u32,
    /// Header bytes added to every data packet.
    pub header: u32,
    /// Bytes of an ACK on the wire.
    pub ack_bytes: u32,
    /// Propagation delay of every link.
    pub propagation: SimTime,
    /// Bytes of buffer per switch port (lossy) or per ingress link (PFC).
    pub buffer: u64,
    /// ECN marking threshold (bytes in the output queue); none if `None`.
    pub ecn_k: Option<u64>,
    pub flow_control: FlowControl,
    pub transport: Transport,
    pub routing: Routing,
    /// Cut-through forwarding: a switch starts forwarding once the header
    /// has arrived (lossy ports only).
    pub cut_through: bool,
    /// Probability that a switch loses a packet it receives (failure and
    /// loss-recovery studies; 0 = none).
    pub loss: f64,
    pub seed: u64,
    /// Priority classes (not with credits).
    pub priority: Priority,
    /// How a host's NIC orders the data packets of its flows (window
    /// transport only; ACKs and fast retransmissions go straight to the NIC).
    pub nic: NicQueues,
}

/// How a host's NIC orders the data packets of its flows.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NicQueues {
    /// One queue per flow, served one packet each in turn; a flow hands the
    /// NIC a packet only when the NIC is free, so a packet's send time (its
    /// RTT sample and its retransmission timer) starts when its first bit
    /// leaves, as with a fair-queueing qdisc and TCP small queues.
    #[default]
    RoundRobin,
    /// One shared FIFO: a flow puts its whole window into it at once, and
    /// its packets wait behind every other flow's (and its timer runs
    /// meanwhile).
    Fifo,
}

impl Default for NetConfig {
    /// 4,096 B payload + 64 B header, 64 B ACKs, 1 us propagation, 256 KB
    /// buffers, no ECN, lossy, DCTCP hosts (initial window 10, 200 us
    /// minimum RTO, 1 ms initial RTO), ECMP, one class.
    fn default() -> Self {
        NetConfig {
            payload: 4096,
            header: 64,
            ack_bytes: 64,
            propagation: SimTime::us(1),
            buffer: 256_000,
            ecn_k: None,
            flow_control: FlowControl::None,
            transport: Transport::Dctcp(DctcpConfig {
                init_cwnd: 10,
                max_cwnd: 1_000,
                g: 1.0 / 16.0,
                rto_min: SimTime::us(200),
                rto_init: SimTime::ms(1),
                dupack_threshold: 3,
                sack: false,
                delayed_ack: 1,
                delayed_ack_timeout: SimTime::us(10),
            }),
            routing: Routing::Ecmp,
            cut_through: false,
            loss: 0.0,
            seed: 1,
            priority: Priority::None,
            nic: NicQueues::RoundRobin,
        }
    }
}

/// One directed link, owned by the node it leaves.
#[derive(Clone, Copy, Debug)]
pub struct PortSpec {
    /// The node at the far end.
    pub to: u32,
    pub rate: Rate,
    /// Index into [`Graph::tiers`] (for per-tier statistics).
    pub tier: u8,
}

/// The network's nodes and links. Nodes `0..hosts` are hosts; host `h`'s
/// only port is port `h` (its NIC). Other nodes are switches.
#[derive(Clone, Debug)]
pub struct Graph {
    pub hosts: u32,
    pub ports: Vec<PortSpec>,
    /// For each port, the port of the far node that points back (its
    /// reverse link), for PFC frames.
    pub reverse: Vec<u32>,
    /// Names of the port tiers, e.g. `"tor_up"`.
    pub tiers: Vec<&'static str>,
    /// Propagation delay of each port's link (one per port), or empty: every
    /// link has [`NetConfig::propagation`]. PFC frames and credits travel
    /// back over a link in its own delay.
    pub delays: Vec<SimTime>,
}

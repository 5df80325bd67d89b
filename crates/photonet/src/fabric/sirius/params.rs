//! Sirius's parameters (the `[sirius]` table), its two registered variants,
//! the layout derived from them, the up-front memory estimate and the
//! lone-flow FCT bounds the conformance suite checks.

use super::edge::{DownLink, UpLink};
use super::Sirius;
use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::Fabric;
use crate::pool::List;
use crate::sched::awgr::default_ports;
use crate::sched::sirius::scaled_uplinks;
use crate::topology::Topology;
use crate::units::{ByteSize, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A node that fails during the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeFailure {
    /// Node (rack, or server in a server-based deployment) index.
    pub node: u32,
    /// When it fails; the failure takes effect at the next epoch boundary
    /// (detection and datacenter-wide notification are assumed to take < 1 epoch).
    pub at: SimTime,
}

/// How long the request/grant handshake of §4.3 takes (`sirius.handshake`).
/// Requests are drawn at each epoch start in every case; a message rides on
/// the next cell of the slot that connects the pair and arrives one slot plus
/// the propagation later.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Handshake {
    /// Fig. 15 by epochs: an intermediate grants at the next epoch start over
    /// the requests that reached it during the last epoch ("received in the
    /// previous epoch"), and the source moves a granted cell to its virtual
    /// queue at the epoch start after the grant reached it ("to be
    /// transmitted in the next epoch"): with no propagation a request of
    /// epoch e is granted at e+1 and its cell sent in e+2.
    #[default]
    TwoEpochs,
    /// An intermediate grants each request in the slot it arrives (§4.3's
    /// "an initial epoch-length worth of latency" read as one epoch of
    /// handshake); the cell still waits for the next epoch start: with no
    /// propagation a request of epoch e is granted during e and its cell sent
    /// in e+1 (e+2 when the grant's slot back falls after the epoch's end).
    OneEpoch,
    /// Both ends act in the slot a message arrives: grants as above, and a
    /// granted cell joins the virtual queue at once, sent on the next slot to
    /// the intermediate (the shortest handshake the schedule allows).
    OnArrival,
}

impl Handshake {
    fn is_default(&self) -> bool {
        *self == Handshake::TwoEpochs
    }
}

/// What Q bounds (`sirius.queue_bound_scope`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueScope {
    /// §4.3: an intermediate grants a cell for D only while it holds (or has
    /// granted) fewer than Q cells for D, from all sources together.
    #[default]
    Destination,
    /// The other reading: an intermediate bounds each (source, destination)
    /// pair's cells by Q, so it may hold up to Q cells for D from every source
    /// (`sirius` only; not with `failures`).
    SourceDestination,
}

impl QueueScope {
    fn is_default(&self) -> bool {
        *self == QueueScope::Destination
    }
}

/// Parameters of the Sirius fabric (`fabric = "sirius"` or `"sirius_ideal"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SiriusParams {
    /// Sirius uplinks per node = round(multiplier × `topology.uplinks`) (the
    /// electrical baseline's count). The paper uses 1×, 1.5× (default) and 2×.
    pub uplink_multiplier: f64,
    /// Grating ports G = slots per epoch; 0 picks the smallest G with U·G ≥ N.
    pub ports: u32,
    /// Transmission part of a slot; a cell carries `cell_time × uplink_rate`
    /// bytes (90 ns at 50 Gbps = 562 B). Give either this or `slot`.
    pub cell_time: Option<SimTime>,
    /// Whole slot (cell time + guardband), as an alternative to `cell_time`.
    pub slot: Option<SimTime>,
    /// Dead time between cells for laser tuning and clock recovery.
    pub guardband: SimTime,
    /// Q: the most cells an intermediate holds (or has granted) per destination.
    /// 4294967295 (u32::MAX) = no bound: with `sirius_ideal` that is plain
    /// Valiant relay without congestion control (NegotiaToR's
    /// traffic-oblivious baseline, §4.1 of that paper).
    pub queue_bound: u32,
    /// One-way delay of one optical hop (node → grating → node); rounded up to
    /// whole slots.
    pub propagation: SimTime,
    /// Credit each server has in its ToR's LOCAL buffer (rack-based only:
    /// server-based, LOCAL is the server's own and unbounded).
    pub server_buffer: ByteSize,
    /// Nodes that fail during the run.
    pub failures: Vec<NodeFailure>,
    /// After a failure, rebuild the schedule over the surviving nodes (epochs
    /// shrink when fewer ports suffice) instead of leaving the failed node's
    /// slots idle.
    pub reschedule_on_failure: bool,
    /// PIAS-style priority queues at sources (`sirius_ideal` only): a node
    /// sends LOCAL cells of flows whose next cell starts below the first
    /// threshold first, then below the second, … (NegotiaToR's baseline uses
    /// ["1KB", "10KB"]). Empty (default): round-robin over flows.
    // Left out of the complete config when empty: configs without it keep their result keys.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_priorities: Vec<ByteSize>,
    /// The request/grant handshake's length: "two_epochs" (default: grants at
    /// the epoch start after a request arrives, the cell in the epoch after
    /// the grant arrives), "one_epoch" (grants in the slot a request arrives)
    /// or "on_arrival" (the granted cell also leaves on the next slot to the
    /// intermediate). `sirius` only.
    // Left out of the complete config at its default: configs without it keep their result keys.
    #[serde(skip_serializing_if = "Handshake::is_default")]
    pub handshake: Handshake,
    /// What Q bounds at an intermediate: "destination" (default: its cells
    /// for D from all sources) or "source_destination" (each source's cells
    /// for D apart). `sirius` only, without `failures`.
    #[serde(skip_serializing_if = "QueueScope::is_default")]
    pub queue_bound_scope: QueueScope,
}

impl Default for SiriusParams {
    fn default() -> Self {
        SiriusParams {
            uplink_multiplier: 1.5,
            ports: 0,
            cell_time: None,
            slot: None,
            guardband: SimTime::ns(10),
            queue_bound: 4,
            propagation: SimTime::ns(500),
            server_buffer: ByteSize(32_000),
            failures: Vec::new(),
            reschedule_on_failure: false,
            source_priorities: Vec::new(),
            handshake: Handshake::TwoEpochs,
            queue_bound_scope: QueueScope::Destination,
        }
    }
}

const DEFAULT_CELL_TIME: SimTime = SimTime::ns(90);

pub(super) fn bad(
    key: &str,
    value: impl std::fmt::Display,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::new(key, value, reason).under(SiriusParams::TABLE)
}

impl ParamTable for SiriusParams {
    const TABLE: &'static str = "sirius";
}

/// Registration of SIRIUS and SIRIUS (IDEAL).
pub struct SiriusModule;

impl FabricModule for SiriusModule {
    type Params = SiriusParams;
    const VARIANTS: &'static [Variant] = &[
        Variant {
            name: "sirius",
            label: "SIRIUS",
            description: "SIRIUS (SIGCOMM '20): tunable-laser uplinks into one layer of AWGRs, static cyclic schedule, fixed cells, Valiant two-hop routing, request/grant congestion control (Fig. 15), time-stepped one event per slot",
        },
        Variant {
            name: "sirius_ideal",
            label: "SIRIUS (IDEAL)",
            description: "SIRIUS (IDEAL): the same fabric with zero-delay per-destination back-pressure instead of request/grant (the paper's bound)",
        },
    ];
    type Layout = SiriusLayout;
    fn plan(
        p: &SiriusParams,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<SiriusLayout, ConfigError> {
        p.layout(ctx.topology)
    }
    fn memory(
        p: &SiriusParams,
        l: &SiriusLayout,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Vec<MemoryPart> {
        l.memory_parts(ctx.topology, p)
    }
    fn build(
        p: SiriusParams,
        layout: SiriusLayout,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let ideal = v.name == "sirius_ideal";
        let f = Sirius::with_layout(
            ctx.topology,
            &p,
            layout,
            ideal,
            ctx.seed,
            ctx.check_invariants,
        )?;
        Ok(Box::new(f))
    }
    /// A lone flow of c cells between racks in an idle fabric.
    ///
    /// At least: its bytes at R over the server link (server-based: the
    /// server's NIC), then one slot on a cell's last hop plus the propagation
    /// (rounded up to slots). Intra-rack: bytes at R.
    ///
    /// At most: bytes at R and a slot of server-link granularity; two epochs
    /// of request/grant pipeline (plus, for each of its two legs, the epochs
    /// the propagation spans) plus one epoch per cell (at least one of the
    /// source's requests is granted each epoch — fewer intermediates pace the
    /// flow, see `one_request_per_intermediate_per_epoch_paces_a_flow`); two
    /// more epochs for each hop to wait for its link in the cyclic schedule;
    /// two hops of a slot plus propagation; the last cell down the server link
    /// at R; one slot of rounding.
    fn lone_flow_fct(p: &SiriusParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (ctx, src, dst, bytes) = (f.ctx, f.src, f.dst, f.bytes);
        let topo = ctx.topology;
        let l = p.layout(topo)?;
        let r = topo.host_rate();
        let at_r = r.tx_time(bytes).saturating_sub(SimTime(1));
        if topo.rack_of(src) == topo.rack_of(dst) && topo.servers_per_rack > 1 {
            let max = at_r + r.tx_time(l.cell_bytes) + l.slot * 3;
            return Ok(FctBounds { min: at_r, max });
        }
        let hop = l.slot * (1 + l.prop_slots);
        let epoch = l.slot * l.ports as u64;
        let cells = bytes.div_ceil(l.cell_bytes);
        // Each leg of the handshake waits for its cell's propagation, up to
        // ceil(propagation / epoch) epochs more than with none.
        let legs = 2 * l.prop_slots.div_ceil(l.ports as u64);
        let max =
            at_r + l.slot + epoch * (cells + 4 + legs) + hop * 2 + r.tx_time(l.cell_bytes) + l.slot;
        Ok(FctBounds {
            min: at_r + hop,
            max,
        })
    }
}

/// The numbers a Sirius fabric is built from, derived and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct SiriusLayout {
    pub nodes: usize,
    pub uplinks: usize,
    pub ports: usize,
    pub cell_time: SimTime,
    pub slot: SimTime,
    pub cell_bytes: u64,
    pub prop_slots: u64,
}

impl SiriusParams {
    /// Derives the layout for `topo`, or says which key makes it impossible.
    pub fn layout(&self, topo: &Topology) -> Result<SiriusLayout, ConfigError> {
        let m = self.uplink_multiplier;
        if !(m.is_finite() && m > 0.0) {
            return Err(bad("uplink_multiplier", m, "must be a finite number > 0"));
        }
        let uplinks = scaled_uplinks(topo.uplinks, m) as usize;
        if uplinks == 0 {
            return Err(bad(
                "uplink_multiplier",
                m,
                format!("round({m} × {} uplinks) leaves no uplink", topo.uplinks),
            ));
        }
        let nodes = topo.racks as usize;
        if nodes < 2 {
            return Err(ConfigError::new(
                "topology.racks",
                nodes,
                "Sirius needs at least two nodes (racks, or servers with servers_per_rack = 1)",
            ));
        }
        let ports = if self.ports == 0 {
            default_ports(nodes, uplinks)
        } else {
            self.ports as usize
        };
        if uplinks * ports < nodes {
            return Err(bad(
                "ports",
                self.ports,
                format!(
                    "U·G = {uplinks}·{ports} = {} < {nodes} nodes: not every node gets a grating port",
                    uplinks * ports
                ),
            ));
        }
        let (cell_time, slot) = match (self.cell_time, self.slot) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "slot",
                    format!("\"{}\"", self.slot.unwrap_or_default()),
                    "give either `cell_time` or `slot`, not both",
                ))
            }
            (Some(c), None) => (c, c + self.guardband),
            (None, Some(s)) => {
                if self.guardband >= s {
                    return Err(bad(
                        "guardband",
                        format!("\"{}\"", self.guardband),
                        format!("must be shorter than the slot ({s}): no time would be left to transmit"),
                    ));
                }
                (s - self.guardband, s)
            }
            (None, None) => (DEFAULT_CELL_TIME, DEFAULT_CELL_TIME + self.guardband),
        };
        let cell_bytes = topo.uplink_rate.bytes_in(cell_time);
        if cell_bytes == 0 {
            return Err(bad(
                "cell_time",
                format!("\"{cell_time}\""),
                format!("carries no whole byte at {}", topo.uplink_rate),
            ));
        }
        if self.queue_bound < 2 {
            return Err(bad(
                "queue_bound",
                self.queue_bound,
                "Q must be >= 2: a node may receive a new cell for a destination before it can send the previous one (§4.3)",
            ));
        }
        if topo.servers_per_rack > 1 && self.server_buffer.0 < cell_bytes {
            return Err(bad(
                "server_buffer",
                format!("\"{}\"", self.server_buffer),
                format!("must hold at least one cell ({cell_bytes} B)"),
            ));
        }
        let mut seen = vec![false; nodes];
        for (i, f) in self.failures.iter().enumerate() {
            let n = f.node as usize;
            if n >= nodes {
                return Err(bad(
                    &format!("failures[{i}].node"),
                    f.node,
                    format!("no such node (nodes are 0..{nodes})"),
                ));
            }
            if seen[n] {
                return Err(bad(&format!("failures[{i}].node"), f.node, "listed twice"));
            }
            seen[n] = true;
        }
        let layout = SiriusLayout {
            nodes,
            uplinks,
            ports,
            cell_time,
            slot,
            cell_bytes,
            prop_slots: self.propagation.0.div_ceil(slot.0),
        };
        layout.check_memory(topo, self)?;
        Ok(layout)
    }
}

impl SiriusLayout {
    /// Bytes the fabric allocates up front: the per-(node, node) queues and
    /// counters, the receive-port table of the padded schedule, the in-flight
    /// ring (one slot per slot of propagation) and the per-server links.
    pub fn memory_estimate(&self, topo: &Topology) -> MemoryEstimate {
        let n = self.nodes as u128;
        let pair = (2 * std::mem::size_of::<List>() + 4 + 1) as u128; // fwd, vq, occ, prefer_first_hop
        let padded = self.uplinks as u128 * self.ports as u128;
        MemoryEstimate {
            pairs: n * n * pair,
            receive_ports: padded * self.uplinks as u128 * 8 + padded * 4,
            // Cells' ring and the request/grant messages' ring.
            in_flight_ring: (2 * self.prop_slots as u128 + self.ports as u128 + 4)
                * std::mem::size_of::<Vec<(u32, u32, bool)>>() as u128,
            // Each server's up and down links and its credit count in LOCAL.
            servers: topo.hosts() as u128
                * (std::mem::size_of::<UpLink>() + 4 + std::mem::size_of::<DownLink>()) as u128,
        }
    }

    /// The estimate by part for the registry's shared check (the same
    /// keys as [`Self::check_memory`]).
    pub(super) fn memory_parts(&self, topo: &Topology, p: &SiriusParams) -> Vec<MemoryPart> {
        let m = self.memory_estimate(topo);
        let (ports_key, ports_value) = if p.ports == 0 {
            ("topology.uplinks", topo.uplinks.to_string())
        } else {
            ("sirius.ports", p.ports.to_string())
        };
        vec![
            MemoryPart::of(
                m.pairs,
                1,
                "topology.racks",
                topo.racks,
                "queues for every pair of nodes",
            ),
            MemoryPart::of(
                m.receive_ports,
                1,
                ports_key,
                ports_value,
                "receive-port table",
            ),
            MemoryPart::of(
                m.in_flight_ring,
                1,
                "sirius.propagation",
                format!("\"{}\"", p.propagation),
                "in-flight rings",
            ),
            MemoryPart::of(
                m.servers,
                1,
                "topology.servers_per_rack",
                topo.servers_per_rack,
                "server links",
            ),
        ]
    }

    /// Refuses a layout whose up-front allocation exceeds
    /// [`crate::units::limits::MEMORY_BYTES`], naming the key behind the biggest part.
    pub(super) fn check_memory(
        &self,
        topo: &Topology,
        p: &SiriusParams,
    ) -> Result<(), ConfigError> {
        let m = self.memory_estimate(topo);
        let limit = crate::units::limits::MEMORY_BYTES as u128;
        if m.total() <= limit {
            return Ok(());
        }
        let gb = |b: u128| b as f64 / (1u64 << 30) as f64;
        let parts = [
            (
                m.pairs,
                "topology.racks",
                topo.racks.to_string(),
                "queues for every pair of nodes",
            ),
            if p.ports == 0 {
                (
                    m.receive_ports,
                    "topology.uplinks",
                    topo.uplinks.to_string(),
                    "receive-port table of U·G ports × U uplinks (U = uplinks × sirius.uplink_multiplier)",
                )
            } else {
                (
                    m.receive_ports,
                    "sirius.ports",
                    p.ports.to_string(),
                    "receive-port table of U·G ports × U uplinks",
                )
            },
            (
                m.in_flight_ring,
                "sirius.propagation",
                format!("\"{}\"", p.propagation),
                "in-flight rings of one entry per slot of propagation",
            ),
            (
                m.servers,
                "topology.servers_per_rack",
                topo.servers_per_rack.to_string(),
                "server links",
            ),
        ];
        let (bytes, key, value, what) = parts.iter().max_by_key(|p| p.0).expect("four parts");
        Err(ConfigError::new(
            *key,
            value,
            format!(
                "the Sirius fabric would need about {:.3e} GB up front ({:.3e} GB of it for the {what}); the limit is {} GB",
                gb(m.total()),
                gb(*bytes),
                crate::units::limits::MEMORY_BYTES >> 30
            ),
        ))
    }
}

/// Up-front allocation of a Sirius fabric, in bytes, by part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryEstimate {
    pub pairs: u128,
    pub receive_ports: u128,
    pub in_flight_ring: u128,
    pub servers: u128,
}

impl MemoryEstimate {
    pub fn total(&self) -> u128 {
        self.pairs + self.receive_ports + self.in_flight_ring + self.servers
    }
}

//! Sirius (Ballani et al., SIGCOMM '20): nodes with tunable-laser uplinks into a
//! single layer of passive gratings (AWGRs), a static cyclic schedule, Valiant
//! two-hop routing over fixed-size cells, and the request/grant congestion
//! control of the paper's Fig. 15.
//!
//! # What is simulated, slot by slot
//!
//! The fabric is time-stepped: one event per slot for the whole fabric (a slot
//! is `cell_time + guardband`; an epoch is `G` slots), and no events while it is
//! idle. In each slot:
//!
//! 1. **Arrivals.** Cells sent `1 + propagation/slot` slots ago reach their next
//!    node: at the destination they go to the server's downlink; at an
//!    intermediate they join its queue for the destination.
//! 2. **Epoch start** (request/grant only): grant decisions that reached their
//!    sources during the last epoch are applied (a granted cell moves from
//!    LOCAL to the source's virtual queue for the intermediate, to go out this
//!    epoch); every intermediate grants among the requests that reached it
//!    during the last epoch ([`compute_grants`]); every node draws this epoch's
//!    requests ([`compute_requests`]). Requests and grants ride on the cell of
//!    the slot that connects the pair (once per epoch) and arrive with it, one
//!    slot plus the propagation later. With no propagation every message
//!    arrives by the next epoch start, so a request drawn in epoch e is granted
//!    at the start of e+1 and its cell is sent in e+2 (Fig. 15); a longer
//!    propagation adds the epochs it spans to each leg.
//! 3. **Transmission.** On each uplink, to the node the schedule connects it to,
//!    one cell: a cell queued here for that node as its destination (second
//!    hop), or a cell of our own granted by that node (first hop). When both
//!    wait, the link alternates between them.
//! 4. **Server links**: each server pushes cells of its flows (round-robin
//!    across flows) to its ToR at its rate R, as long as it has credit in the
//!    ToR's LOCAL buffer (`server_buffer`, the one-hop credit flow control of
//!    §4.3); intra-rack cells go straight to the destination server's
//!    downlink. Each downlink drains at R. Both directions are
//!    [`crate::access`] links; the LOCAL credit is Sirius's own. In a
//!    server-based deployment (`servers_per_rack = 1`) the node is the server
//!    and these are its NIC's two directions at R = `topology.server_rate`
//!    (by default its share of the baseline's uplinks): LOCAL is its own, with
//!    no credit, but its data enters the fabric and reaches the host no faster
//!    than R, however many Sirius uplinks it has.
//!
//! SIRIUS (IDEAL) replaces request/grant by zero-delay back-pressure: in any slot
//! a node may send a LOCAL cell via the node its uplink reaches if that node
//! holds (or has on the way) fewer than Q cells for the cell's destination;
//! there is no handshake, so a new flow starts at once.
//!
//! Cells are pooled and linked into per-(node, neighbour) queues by index
//! ([`crate::pool`]): no allocation per cell. LOCAL is a per-flow cell count; a
//! cell gets its sequence number when it leaves LOCAL, so the reorder buffer at
//! the destination ([`crate::delivery`]) sees exactly the reordering caused by
//! the two-hop paths. Every cell counts as delivered when it reaches its
//! server; the flow completes when the reorder buffer has released them all.
//!
//! `next_event` is O(1): the cells held at nodes are kept as running totals
//! (checked against the per-node counts by `check_invariants`).
//!
//! **Node failures** take effect at an epoch boundary. Cells of flows between
//! live nodes that the failed node held as intermediate, or that reach it
//! afterwards, are sent again by their source (back into LOCAL with their
//! sequence numbers, through request/grant): such flows finish. Cells of flows
//! with a failed end are stuck or given up. `stats()` says where every cell
//! pushed is — delivered, in LOCAL, queued, in flight, at downlinks, stuck at
//! failed nodes, stuck for failed destinations, given up — and these sum to
//! `cells_pushed` exactly (`check_invariants` checks it after every slot).
//!
//! # The parts
//!
//! [`Fabric::advance`] is the slot loop below; it threads the parts, each of
//! which owns its state behind a narrow API. The flows' table and the cell
//! pool are shared: every part reads the one and moves cells of the other.
//! - `params.rs`: the `[sirius]` table, the layout, the memory estimate and
//!   the lone-flow FCT bounds;
//! - `nodes.rs`: the cyclic schedule (`sched::awgr::CyclicSchedule`) over
//!   the nodes, and which have failed;
//! - `local.rs`: LOCAL, each node's cells not yet sent, and the order it
//!   serves flows in (`local_order.rs`: the O(log n) pick);
//! - `queues.rs`: the per-pair first- and second-hop queues, m of Fig. 15,
//!   and the cells on the wire;
//! - `request_grant.rs`: the handshake of Fig. 15 (`sched::sirius`);
//! - `edge.rs`: the server links and in-order delivery (`flow_reorder.rs`);
//! - `failures.rs`: node failures;
//! - `stats.rs`: where the cells are, and the reported rows; `tests.rs`.

mod edge;
mod failures;
mod flow_reorder;
mod local;
mod local_order;
mod nodes;
mod params;
mod queues;
mod request_grant;
mod stats;

use params::bad;
pub use params::{
    Handshake, MemoryEstimate, NodeFailure, QueueScope, SiriusLayout, SiriusModule, SiriusParams,
};

use crate::access::SlotCredit;
use crate::error::ConfigError;
use crate::fabric::{Fabric, FabricStats};
use crate::flow::Flow;
use crate::pool::{List, Pool};
use crate::queue::SlotClock;
use crate::recorder::Recorder;
use crate::rng::RngStreams;
use crate::sched::awgr::CyclicSchedule;
use crate::topology::Topology;
use crate::units::{Rate, SimTime};
use edge::Edge;
use failures::Failures;
use local::Local;
use nodes::Nodes;
use queues::{Queues, Wire};
use request_grant::RequestGrant;

const NIL: u32 = u32::MAX;

/// A cell in the fabric (after LOCAL), pooled and linked by index into
/// whatever queue holds it.
#[derive(Clone, Copy, Debug)]
struct Cell {
    flow: u32,
    seq: u32,
}

/// Per-flow state: one cache line, what the slot loop touches (in-order
/// delivery is kept apart, in `flow_reorder`). Flows live in slots that a
/// completed flow gives back: the table holds the flows in progress, not
/// every flow of the run (tens of millions in NegotiaToR's Fig. 13(c)), and
/// the lines the slot loop touches stay few. Cells, lists and rounds name
/// slots; only the recorder sees flow ids (`id`).
#[repr(C, align(64))]
struct FlowState {
    /// The flow's id (the recorder's name for it).
    id: u32,
    /// Bytes of its last cell (the others are full).
    last_bytes: u32,
    src_server: u32,
    dst_server: u32,
    src_node: u32,
    dst_node: u32,
    cells: u32,
    /// Cells the source server has pushed to its ToR (server-based: that the
    /// host has handed to its NIC).
    pushed: u32,
    /// Cells in LOCAL.
    in_local: u32,
    /// LOCAL cells with a request outstanding.
    requested: u32,
    /// Sequence number of the next cell to leave LOCAL.
    next_seq: u32,
    /// Cells at the destination ToR waiting for the server downlink.
    down_q: List,
    /// Position in the node's LOCAL order (fast PIAS pick only).
    local_pos: u32,
    on_local_list: bool,
    /// Completed, still on its node's LOCAL list (its slot is freed when it
    /// leaves).
    done: bool,
}

// The slot loop's fields fit in one line.
const _: () = assert!(std::mem::size_of::<FlowState>() == 64);

impl FlowState {
    fn cell_bytes(&self, seq: u32, cell: u64) -> u64 {
        if seq + 1 == self.cells {
            self.last_bytes as u64
        } else {
            cell
        }
    }
}

/// The Sirius fabric.
pub struct Sirius {
    label: String,
    ideal: bool,
    check: bool,
    layout: SiriusLayout,
    servers_per_rack: u32,
    host_rate: Rate,
    queue_bound: u32,
    clock: SlotClock,
    /// Flows in progress, by slot; `free_slots` lists the slots given back.
    flows: Vec<FlowState>,
    free_slots: Vec<u32>,
    /// Off only in tests (the oracle: every flow in a slot of its own).
    recycle_slots: bool,
    pool: Pool<Cell>,
    nodes: Nodes,
    local: Local,
    queues: Queues,
    wire: Wire,
    rg: RequestGrant,
    edge: Edge,
    failures: Failures,
    /// The last slot processed and the latest time seen (arrival or slot).
    last_slot: Option<u64>,
    latest: SimTime,
    slots: u64,
}

impl Sirius {
    /// Builds the fabric; `ideal` selects SIRIUS (IDEAL). `check` enables the
    /// per-slot contention check.
    pub fn new(
        topo: &Topology,
        p: &SiriusParams,
        ideal: bool,
        seed: u64,
        check: bool,
    ) -> Result<Sirius, ConfigError> {
        Sirius::with_layout(topo, p, p.layout(topo)?, ideal, seed, check)
    }

    /// [`Sirius::new`] from a layout already derived (`p.layout(topo)`).
    pub fn with_layout(
        topo: &Topology,
        p: &SiriusParams,
        layout: SiriusLayout,
        ideal: bool,
        seed: u64,
        check: bool,
    ) -> Result<Sirius, ConfigError> {
        let n = layout.nodes;
        let prio_cuts: Vec<u64> = p.source_priorities.iter().map(|b| b.0).collect();
        if !prio_cuts.is_empty() && !ideal {
            return Err(bad(
                "source_priorities",
                format!("{prio_cuts:?}"),
                "only with `sirius_ideal` (request/grant picks LOCAL cells by its own rules)",
            ));
        }
        if prio_cuts.windows(2).any(|w| w[0] >= w[1]) || prio_cuts.first() == Some(&0) {
            return Err(bad(
                "source_priorities",
                format!("{prio_cuts:?}"),
                "need increasing sizes > 0",
            ));
        }
        // SIRIUS (IDEAL) has no handshake and bounds m per destination: both
        // keys are ignored there, so one reading's table serves both series.
        let per_source = !ideal && p.queue_bound_scope == QueueScope::SourceDestination;
        if per_source && !p.failures.is_empty() {
            return Err(bad(
                "queue_bound_scope",
                "\"source_destination\"",
                "not with `failures` (their cleanup keeps m per destination only)",
            ));
        }
        let per_source_bytes = (n as u128).pow(3) * 4;
        if per_source && per_source_bytes > crate::units::limits::MEMORY_BYTES as u128 {
            return Err(bad(
                "queue_bound_scope",
                "\"source_destination\"",
                format!("a count per (intermediate, source, destination) needs {per_source_bytes} B for {n} nodes"),
            ));
        }
        let schedule = CyclicSchedule::new(n, layout.uplinks, layout.ports)
            .map_err(|e| bad("ports", p.ports, e))?;
        let hosts = topo.hosts();
        let label = if ideal { "SIRIUS (IDEAL)" } else { "SIRIUS" };
        // Every flow may go via any node: the O(log n) pick applies.
        let ordered = ideal
            && !prio_cuts.is_empty()
            && prio_cuts.len() < local_order::MAX_CLASSES
            && p.queue_bound == u32::MAX
            && p.failures.is_empty();
        // Server-based, LOCAL is the server's own: no credit bounds it.
        let credit_cells = if topo.servers_per_rack > 1 {
            (p.server_buffer.0 / layout.cell_bytes).max(1) as u32
        } else {
            u32::MAX
        };
        let failures = p.failures.iter().map(|f| (f.at, f.node)).collect();
        let access = SlotCredit::new(topo.host_rate(), layout.slot, layout.cell_bytes);
        Ok(Sirius {
            label: format!("{label} {}x{}", layout.uplinks, layout.ports),
            ideal,
            check,
            servers_per_rack: topo.servers_per_rack,
            host_rate: topo.host_rate(),
            queue_bound: p.queue_bound,
            clock: SlotClock::new(layout.slot),
            flows: Vec::new(),
            free_slots: Vec::new(),
            recycle_slots: true,
            pool: Pool::new(),
            nodes: Nodes::new(n, schedule, check),
            local: Local::new(
                n,
                hosts,
                credit_cells,
                layout.cell_bytes,
                prio_cuts,
                ordered,
            ),
            queues: Queues::new(n, per_source),
            wire: Wire::new(layout.prop_slots),
            rg: RequestGrant::new(
                n,
                layout.prop_slots,
                p.queue_bound,
                p.handshake,
                RngStreams::new(seed).stream("sirius.request_grant"),
            ),
            edge: Edge::new(
                hosts,
                topo.servers_per_rack as usize,
                access,
                layout.cell_bytes,
            ),
            failures: Failures::new(failures, p.reschedule_on_failure, layout.ports),
            last_slot: None,
            latest: SimTime::ZERO,
            layout,
            slots: 0,
        })
    }

    /// The derived layout (uplinks, ports, slot, cell size).
    pub fn layout(&self) -> &SiriusLayout {
        &self.layout
    }

    /// Anything left that can still move? O(1): `next_event` asks it.
    fn busy(&self) -> bool {
        self.edge.busy() || self.wire.cells() > 0 || self.rg.busy() || self.movable_cells() > 0
    }

    fn movable_cells(&self) -> u64 {
        (self.queues.total() + self.local.total()).saturating_sub(self.failures.frozen())
    }

    /// Cells that arrive in slot `t` reach their next node: at the
    /// destination they go to the server's downlink; at an intermediate they
    /// join its queue for the destination.
    #[inline(never)] // once per slot: kept apart in profiles
    fn arrivals(&mut self, t: u64) {
        let batch = self.wire.arrivals(t);
        for &(x, cell, first_hop) in &batch {
            let x = x as usize;
            let f = self.pool[cell].flow;
            let dst = self.flows[f as usize].dst_node as usize;
            if self.nodes.is_failed(x) {
                if failures::live_flow(&self.flows, self.nodes.failed(), f) {
                    self.local.retransmit(&mut self.flows, &mut self.pool, cell);
                } else {
                    self.failures.lost_at_failed += 1;
                    self.pool.release(cell);
                }
                continue;
            }
            if x == dst {
                if first_hop && !self.ideal {
                    self.queues.release(x, dst); // a cell granted direct arrived
                    let src = self.flows[f as usize].src_node as usize;
                    self.queues.release_src(x, src, dst);
                }
                self.edge
                    .queue_for_server(&mut self.flows, &mut self.pool, cell);
            } else {
                // m is unchanged: the cell moves from "on its way" to "queued".
                self.queues.enqueue_fwd(&mut self.pool, x, dst, cell);
                if self.nodes.is_failed(dst) {
                    self.failures.stuck_for_failed_dest();
                }
            }
        }
        self.wire.done(t, batch);
    }

    /// On each uplink of each node, to the node the schedule connects it to
    /// in slot `t`, one cell: a cell queued here for that node as its
    /// destination (second hop), or a cell of our own granted by that node
    /// (first hop; SIRIUS (IDEAL): picked from LOCAL). When both wait, the
    /// link alternates between them.
    #[inline(never)] // once per slot: kept apart in profiles
    fn transmit(&mut self, t: u64) {
        let n = self.layout.nodes;
        let k = self.nodes.slot_in_epoch(t);
        let uplinks = self.layout.uplinks;
        let g = self.nodes.ports();
        let arrive = self.wire.arrival_index(t, self.layout.prop_slots);
        let words = self.queues.words();
        debug_assert_eq!(words, n.div_ceil(64));
        for s in 0..n {
            if self.nodes.is_failed(s) {
                continue;
            }
            let has_local = self.ideal && self.local.cells(s) > 0;
            if self.queues.at_node(s) == 0 && !has_local {
                continue;
            }
            let offset = self.nodes.reach(s, k);
            if has_local {
                // SIRIUS (IDEAL) with LOCAL cells: any uplink may pick one.
                for u in 0..uplinks {
                    let x = self.nodes.node_at(u * g + offset);
                    if x != NIL && x as usize != s && !self.nodes.is_failed(x as usize) {
                        self.send_on_link(t, s, x as usize, arrive);
                    }
                }
                continue;
            }
            // Only the links with cells queued: the live nodes reached in
            // this slot (in node order, which is uplink order) that s holds
            // cells for, read from the bitsets a word at a time (the live
            // mask instead of a failed-node lookup per link). s never holds
            // cells for itself.
            for w in 0..words {
                let mut bits = self.queues.busy_word(s, w)
                    & self.nodes.reach_word(offset, w)
                    & self.nodes.live_word(w);
                while bits != 0 {
                    let x = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    self.send_on_link(t, s, x, arrive);
                }
            }
        }
    }

    /// Link s → x in slot `t`: one cell, of the second hop or the first (see
    /// [`Sirius::transmit`]), if any waits. The caller has checked that x is
    /// live and not s.
    #[inline(always)]
    fn send_on_link(&mut self, t: u64, s: usize, x: usize, arrive: usize) {
        debug_assert!(x != s && !self.nodes.is_failed(x));
        if !self.ideal {
            // Request/grant: the link's queues alone decide.
            let Some((cell, first)) = self.queues.take_for_link(&mut self.pool, s, x) else {
                return;
            };
            if !first && self.queues.per_source() {
                let src = self.flows[self.pool[cell].flow as usize].src_node as usize;
                self.queues.release_src(s, src, x);
            }
            self.nodes.heard(t, s, x);
            self.wire.send(arrive, x as u32, cell, first);
            return;
        }
        let second = self.queues.has_second_hop(s, x);
        let mut first = self.queues.has_first_hop(s, x);
        let mut ideal_flow = None;
        if !first && self.ideal && self.local.cells(s) > 0 {
            ideal_flow = self.local.ideal_pick(
                &mut self.flows,
                s,
                x,
                &self.queues,
                self.nodes.failed(),
                self.queue_bound,
            );
            first = ideal_flow.is_some();
        }
        let use_first = match (second, first) {
            (false, false) => return,
            (true, false) => false,
            (false, true) => true,
            (true, true) => self.queues.first_hop_turn(s, x),
        };
        let cell = if !use_first {
            let cell = self.queues.pop_second_hop(&mut self.pool, s, x);
            if self.queues.per_source() {
                let src = self.flows[self.pool[cell].flow as usize].src_node as usize;
                self.queues.release_src(s, src, x);
            }
            cell
        } else if let Some(f) = ideal_flow {
            let cell = self.local.take(&mut self.flows, &mut self.pool, f);
            let d = self.flows[f as usize].dst_node as usize;
            if d != x {
                self.queues.reserve(x, d); // on its way to x for d
            }
            cell
        } else {
            self.queues
                .pop_first_hop(&mut self.pool, s, x)
                .expect("non-empty")
        };
        self.nodes.heard(t, s, x);
        self.wire.send(arrive, x as u32, cell, use_first);
    }

    /// Gives back the slots of the flows that completed this slot (or, if
    /// still on their node's LOCAL list, marks them to be given back when
    /// they leave it) and of those that left it completed.
    fn free_completed(&mut self) {
        for f in self.edge.completed.drain(..) {
            let st = &mut self.flows[f as usize];
            debug_assert!(st.in_local == 0 && st.down_q.is_empty() && st.requested == 0);
            if st.on_local_list {
                st.done = true;
            } else {
                self.free_slots.push(f);
            }
        }
        self.free_slots.append(&mut self.local.left_done);
        if !self.recycle_slots {
            self.free_slots.clear();
        }
    }

    /// Test-only: loses one queued cell without counting it anywhere.
    #[cfg(test)]
    fn leak_a_queued_cell(&mut self) -> bool {
        self.queues.leak_one(&mut self.pool)
    }
}

impl Fabric for Sirius {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn hosts(&self) -> usize {
        self.edge.servers()
    }

    fn host_rate(&self) -> Rate {
        self.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _sink: &mut Recorder) {
        let spr = self.servers_per_rack;
        let cell = self.layout.cell_bytes;
        let cells = flow.bytes.div_ceil(cell);
        assert!(
            cells <= u32::MAX as u64,
            "flow {} has too many cells",
            flow.id
        );
        let st = FlowState {
            id: flow.id,
            last_bytes: u32::try_from(flow.bytes - cells.saturating_sub(1) * cell)
                .expect("a cell is under 4 GB"),
            src_server: flow.src,
            dst_server: flow.dst,
            src_node: flow.src / spr,
            dst_node: flow.dst / spr,
            cells: cells as u32,
            pushed: 0,
            in_local: 0,
            requested: 0,
            next_seq: 0,
            down_q: List::EMPTY,
            local_pos: 0,
            on_local_list: false,
            done: false,
        };
        // An end is down: the flow never starts.
        let down = self.nodes.is_failed(st.src_node as usize)
            || self.nodes.is_failed(st.dst_node as usize);
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.flows[s as usize] = st;
                s
            }
            None => {
                self.flows.push(st);
                (self.flows.len() - 1) as u32
            }
        };
        self.latest = self.latest.max(now);
        self.edge.add_flow(slot, flow.src, !down);
    }

    fn next_event(&self) -> Option<SimTime> {
        // Idle: no events (a pending failure is applied at the first epoch
        // boundary processed after it is due).
        if !self.busy() {
            return None;
        }
        let after_last = self.last_slot.map_or(0, |t| t + 1);
        let k = after_last.max(self.clock.first_slot_at_or_after(self.latest));
        Some(self.clock.start(k))
    }

    /// One slot: arrivals; at an epoch start, failures due and
    /// request/grant; the uplinks' cells; the server links.
    fn advance(&mut self, now: SimTime, sink: &mut Recorder) {
        let t = self.clock.slot_of(now);
        debug_assert_eq!(self.clock.start(t), now, "advance only at slot boundaries");
        self.slots += 1;
        sink.count_internal_events(1);
        self.arrivals(t);
        if self.nodes.slot_in_epoch(t) == 0 {
            if self.failures.any_pending() {
                self.failures.apply(
                    now,
                    t,
                    &mut self.nodes,
                    &mut self.queues,
                    &mut self.local,
                    &mut self.flows,
                    &mut self.pool,
                );
            }
            if !self.ideal {
                self.rg.epoch_start(
                    t,
                    &self.nodes,
                    &mut self.queues,
                    &mut self.local,
                    &mut self.flows,
                    &mut self.pool,
                );
            }
        } else if !self.ideal && self.rg.per_slot() {
            self.rg.slot(
                t,
                &self.nodes,
                &mut self.queues,
                &mut self.local,
                &mut self.flows,
                &mut self.pool,
            );
        }
        self.transmit(t);
        let end = self.clock.start(t + 1);
        let failed = self.nodes.failed_if_any();
        self.edge
            .downlinks(end, sink, &mut self.flows, &mut self.pool, failed);
        self.edge
            .uplinks(&mut self.flows, &mut self.pool, &mut self.local, failed);
        self.free_completed();
        self.last_slot = Some(t);
        self.latest = now;
    }

    fn finish(&mut self, _end: SimTime, _sink: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        stats::stats(self)
    }

    fn check_invariants(&self) -> Result<(), String> {
        for &f in &self.free_slots {
            let st = &self.flows[f as usize];
            if st.on_local_list || st.in_local > 0 || !st.down_q.is_empty() {
                return Err(format!(
                    "sirius: free slot {f} (flow {}) is listed in LOCAL ({}), holds {} LOCAL cells or {} at its downlink",
                    st.id,
                    st.on_local_list,
                    st.in_local,
                    st.down_q.len()
                ));
            }
        }
        self.queues.check(self.queue_bound)?;
        self.queues.hops.check(&self.queues)?;
        self.local.check(&self.flows)?;
        self.edge.check(self.flows.len())?;
        let at = stats::cell_partition(self);
        if at.total() != self.edge.cells_pushed {
            return Err(format!(
                "sirius: {} cells pushed but {} accounted for ({at:?})",
                self.edge.cells_pushed,
                at.total()
            ));
        }
        // The pool holds exactly the cells in queues, on the wire, at the
        // downlinks and waiting to be sent again.
        let retx = self.local.to_resend() as u64;
        let down = self.edge.downlink_cells();
        let placed = self.queues.total() + at.in_flight + down + retx;
        if self.pool.live() as u64 != placed || at.in_flight != self.wire.cells() {
            return Err(format!(
                "sirius: {} pooled cells but {placed} placed ({} queued, {} in flight (counted {}), {down} at downlinks, {retx} to resend)",
                self.pool.live(),
                self.queues.total(),
                at.in_flight,
                self.wire.cells(),
            ));
        }
        self.failures
            .check(&self.nodes, &self.queues, &self.local)?;
        if self.nodes.contention_violations > 0 {
            return Err(format!(
                "sirius: {} receive ports heard two senders in one slot",
                self.nodes.contention_violations
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

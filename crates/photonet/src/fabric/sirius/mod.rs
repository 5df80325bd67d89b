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
//!    node: at the destination they go to the server downlink (rack-based) or are
//!    delivered (server-based); at an intermediate they join its queue for the
//!    destination.
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
//! 4. **Server links** (rack-based): each server pushes cells of its flows
//!    (round-robin across flows) to its ToR at its rate R, as long as it has
//!    credit in the ToR's LOCAL buffer (`server_buffer`, the one-hop credit flow
//!    control of §4.3); intra-rack cells go straight to the destination
//!    server's downlink. Each downlink drains at R. Both directions are
//!    [`crate::access`] links; the LOCAL credit is Sirius's own.
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
//! # Files
//!
//! `params.rs` (the `[sirius]` table, the layout, the memory estimate, the
//! FCT bounds), `stats.rs` (counters, where the cells are, the reported
//! rows), `flow_reorder.rs` and `local_order.rs` (per-flow reordering and the
//! order LOCAL serves flows in), `tests.rs`; the slot loop and the node
//! state are here. The cyclic schedule is `sched::awgr::CyclicSchedule`.

mod flow_reorder;
mod local_order;
mod params;
mod stats;

use params::bad;
pub use params::{MemoryEstimate, NodeFailure, SiriusLayout, SiriusModule, SiriusParams};
use stats::{CellPartition, Counters};

use crate::access::{AccessLink, SlotCredit};
use crate::delivery::Receipt;
use crate::error::ConfigError;
use crate::fabric::{Fabric, FabricStats};
use crate::flow::Flow;
use crate::pool::{List, Pool};
use crate::queue::SlotClock;
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::sched::awgr::{default_ports, CyclicSchedule};
use crate::sched::sirius::{compute_grants, compute_requests, FlowCells, Received, Request};
use crate::topology::Topology;
use crate::units::{Rate, SimTime};
use flow_reorder::FlowReorder;
use local_order::{LocalOrder, Moved};

const NIL: u32 = u32::MAX;

/// A cell in the fabric (after LOCAL), pooled and linked by index into
/// whatever queue holds it.
#[derive(Clone, Copy, Debug)]
struct Cell {
    flow: u32,
    seq: u32,
}

/// Per-flow state: one cache line, what the slot loop touches. (Until
/// issue 10's Fig. 13(c) runs a second line held the flow's reorder buffer;
/// it is now [`FlowReorder`], 8 B per flow.)
#[repr(C, align(64))]
struct FlowState {
    bytes: u64,
    src_server: u32,
    dst_server: u32,
    src_node: u32,
    dst_node: u32,
    cells: u32,
    /// Cells the source server has pushed to its ToR (or, server-based, that
    /// the application has handed to the NIC).
    pushed: u32,
    /// Cells in LOCAL.
    in_local: u32,
    /// LOCAL cells with a request outstanding.
    requested: u32,
    /// Sequence number of the next cell to leave LOCAL.
    next_seq: u32,
    /// Cells at the destination ToR waiting for the server downlink.
    down_q: List,
    /// Position in the node's [`LocalOrder`] (fast PIAS pick only).
    local_pos: u32,
    on_local_list: bool,
}

// The slot loop's fields fit in one line; in-order delivery is kept apart
// ([`FlowReorder`]: 8 B per flow, a window only while cells are held).
const _: () = assert!(std::mem::size_of::<FlowState>() == 64);

impl FlowState {
    fn cell_bytes(&self, seq: u32, cell: u64) -> u64 {
        let start = seq as u64 * cell;
        cell.min(self.bytes - start)
    }
}

/// A server's link to its ToR ([`AccessLink`]: credit at R, round-robin over
/// the flows with cells not yet pushed — per-flow queues, as in the electrical
/// baseline's switches) and its credit in the ToR's LOCAL buffer.
#[derive(Default)]
struct UpLink {
    link: AccessLink,
    /// Cells of this server in LOCAL (bounded by the credit).
    in_local: u32,
    /// The front cell (inter-rack) also waits for room in LOCAL. With the
    /// link's `need`, lets a slot skip the link without touching its flows.
    need_local: bool,
}

/// The ToR's link down to a server: round-robin over the flows with cells
/// waiting at the ToR.
#[derive(Default)]
struct DownLink {
    link: AccessLink,
    /// Cells waiting at the ToR for this server.
    queued: u32,
}

/// A request/grant message riding on a cell.
#[derive(Clone, Copy, Debug)]
enum Message {
    /// A request for intermediate `to`.
    Request { to: u32, req: Received },
    /// The answer to a request: (source, intermediate, flow, granted).
    Decision(u32, u32, u32, bool),
}

/// The Sirius fabric.
pub struct Sirius {
    label: String,
    ideal: bool,
    check: bool,
    layout: SiriusLayout,
    servers_per_rack: u32,
    host_rate: Rate,
    server_credit_cells: u32,
    /// Server links' credit per slot (R × slot) and per cell.
    access: SlotCredit,
    queue_bound: u32,
    /// Source priority thresholds in bytes (empty: off).
    prio_cuts: Vec<u64>,
    reschedule: bool,
    clock: SlotClock,
    schedule: CyclicSchedule,
    /// Absolute slot index where the current schedule's epoch 0 began.
    epoch_origin: u64,
    /// Schedule position of each node and node at each position (NIL = dark).
    pos_of: Vec<u32>,
    node_at: Vec<u32>,
    failed: Vec<bool>,
    pending_failures: Vec<(SimTime, u32)>,

    pool: Pool<Cell>,
    /// `fwd[i·N + d]`: cells at node i whose destination is d (second hop).
    fwd: Vec<List>,
    /// `vq[s·N + x]`: cells of node s granted to go via x (first hop).
    vq: Vec<List>,
    /// `occ[i·N + d]`: m of Fig. 15 — cells at i for d plus cells granted (or,
    /// ideal, sent) towards i for d that have not arrived yet.
    occ: Vec<u32>,
    /// Per link: when both a second-hop and a first-hop cell wait, send the
    /// first-hop one next.
    prefer_first_hop: Vec<bool>,
    /// Cells queued at each node (`fwd` and `vq`), and their sum.
    node_queued: Vec<u32>,
    queued_total: u64,
    /// Cells in each node's LOCAL, and their sum.
    local_cells: Vec<u64>,
    local_total: u64,
    local_flows: Vec<Vec<u32>>,
    /// With source priorities, no per-destination bound and no failures
    /// (NegotiaToR's baseline), every flow may go via any node, and the
    /// LOCAL flows' order lives here instead of `local_flows`: the same
    /// picks in O(log n) ([`local_order`]).
    local_order: Vec<LocalOrder>,
    /// Cells on the wire, by arrival slot (ring indexed by slot mod len):
    /// (next node, cell, sent by its source, i.e. on its first hop).
    in_flight: Vec<Vec<(u32, u32, bool)>>,
    in_flight_cells: u64,

    /// Requests that have reached each intermediate, granted at its next
    /// epoch start (with their sending order, see `msg_seq`).
    inbox: Vec<Vec<(u64, Received)>>,
    /// Grant decisions that have reached their sources, applied at the next
    /// epoch start: (order, source, intermediate, flow, granted).
    decisions: Vec<(u64, u32, u32, u32, bool)>,
    /// Requests and grant decisions on the wire, riding on the cell of the
    /// slot that connects the pair, by arrival slot (ring indexed by slot mod
    /// len, G + propagation + 2 slots long).
    messages: Vec<Vec<(u64, Message)>>,
    /// Order in which messages were created: applied in this order, so that
    /// with no propagation the result is that of applying them all at once.
    msg_seq: u64,
    outstanding_requests: u64,

    flows: Vec<FlowState>,
    /// In-order delivery at the destination, per flow (read only by `receive`).
    reorder: FlowReorder,
    up: Vec<UpLink>,
    down: Vec<DownLink>,
    up_active: Vec<u32>,
    down_active: Vec<u32>,
    downlink_cells: u64,
    /// Cells that can never move (at or for failed nodes), excluded from "busy".
    frozen_cells: u64,
    /// Cells back in their source's LOCAL after a failure, by flow: they keep
    /// their sequence numbers and leave LOCAL before the flow's new cells.
    retx: std::collections::BTreeMap<u32, List>,
    rng: SimRng,
    scratch_flows: Vec<FlowCells>,
    scratch_candidates: Vec<u32>,
    scratch_requests: Vec<Request>,
    scratch_grants: Vec<Received>,
    rx_seen: Vec<u64>,
    /// The last slot processed and the latest time seen (arrival or slot).
    last_slot: Option<u64>,
    latest: SimTime,
    c: Counters,
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
        let schedule = CyclicSchedule::new(n, layout.uplinks, layout.ports)
            .map_err(|e| bad("ports", p.ports, e))?;
        let hosts = topo.hosts();
        let label = if ideal { "SIRIUS (IDEAL)" } else { "SIRIUS" };
        let mut pending: Vec<(SimTime, u32)> = p.failures.iter().map(|f| (f.at, f.node)).collect();
        pending.sort();
        pending.reverse(); // pop from the back in time order
        let padded = schedule.padded();
        // Every flow may go via any node: the O(log n) pick applies.
        let ordered = ideal
            && !prio_cuts.is_empty()
            && prio_cuts.len() < local_order::MAX_CLASSES
            && p.queue_bound == u32::MAX
            && p.failures.is_empty();
        let mut node_at = vec![NIL; padded];
        for (i, slot) in node_at.iter_mut().enumerate().take(n) {
            *slot = i as u32;
        }
        Ok(Sirius {
            label: format!("{label} {}x{}", layout.uplinks, layout.ports),
            ideal,
            check,
            servers_per_rack: topo.servers_per_rack,
            host_rate: topo.host_rate(),
            server_credit_cells: (p.server_buffer.0 / layout.cell_bytes).max(1) as u32,
            access: SlotCredit::new(topo.host_rate(), layout.slot, layout.cell_bytes),
            queue_bound: p.queue_bound,
            prio_cuts,
            reschedule: p.reschedule_on_failure,
            clock: SlotClock::new(layout.slot),
            schedule,
            epoch_origin: 0,
            pos_of: (0..n as u32).collect(),
            node_at,
            failed: vec![false; n],
            pending_failures: pending,
            pool: Pool::new(),
            fwd: vec![List::EMPTY; n * n],
            vq: vec![List::EMPTY; n * n],
            occ: vec![0; n * n],
            prefer_first_hop: vec![false; n * n],
            node_queued: vec![0; n],
            queued_total: 0,
            local_cells: vec![0; n],
            local_total: 0,
            local_flows: vec![Vec::new(); n],
            local_order: if ordered {
                vec![LocalOrder::new(); n]
            } else {
                Vec::new()
            },
            in_flight: vec![Vec::new(); layout.prop_slots as usize + 2],
            in_flight_cells: 0,
            inbox: vec![Vec::new(); n],
            decisions: Vec::new(),
            messages: vec![Vec::new(); layout.ports + layout.prop_slots as usize + 2],
            msg_seq: 0,
            outstanding_requests: 0,
            flows: Vec::new(),
            reorder: FlowReorder::new(),
            up: (0..hosts).map(|_| UpLink::default()).collect(),
            down: (0..hosts).map(|_| DownLink::default()).collect(),
            up_active: Vec::new(),
            down_active: Vec::new(),
            downlink_cells: 0,
            frozen_cells: 0,
            retx: std::collections::BTreeMap::new(),
            rng: RngStreams::new(seed).stream("sirius.request_grant"),
            scratch_flows: Vec::new(),
            scratch_candidates: Vec::new(),
            scratch_requests: Vec::new(),
            scratch_grants: Vec::new(),
            rx_seen: vec![u64::MAX; padded * layout.uplinks],
            last_slot: None,
            latest: SimTime::ZERO,
            layout,
            c: Counters::default(),
        })
    }

    /// The derived layout (uplinks, ports, slot, cell size).
    pub fn layout(&self) -> &SiriusLayout {
        &self.layout
    }

    fn n(&self) -> usize {
        self.layout.nodes
    }

    fn rack_based(&self) -> bool {
        self.servers_per_rack > 1
    }

    /// Anything left that can still move? O(1): `next_event` asks it.
    fn busy(&self) -> bool {
        !self.up_active.is_empty()
            || !self.down_active.is_empty()
            || self.in_flight_cells > 0
            || self.outstanding_requests > 0
            || !self.decisions.is_empty()
            || self.movable_cells() > 0
    }

    fn movable_cells(&self) -> u64 {
        (self.queued_total + self.local_total).saturating_sub(self.frozen_cells)
    }

    fn slot_in_epoch(&self, t: u64) -> usize {
        ((t - self.epoch_origin) % self.schedule.ports() as u64) as usize
    }

    // ---- LOCAL -----------------------------------------------------------

    fn add_to_local(&mut self, f: u32, cells: u32) {
        let st = &mut self.flows[f as usize];
        st.in_local += cells;
        let node = st.src_node as usize;
        if !self.local_order.is_empty() {
            self.order_flow(f);
        } else if !st.on_local_list {
            st.on_local_list = true;
            self.local_flows[node].push(f);
        }
        self.local_cells[node] += cells as u64;
        self.local_total += cells as u64;
        self.c.peak_local_cells = self.c.peak_local_cells.max(self.local_cells[node]);
    }

    /// Key of flow `f` in its node's [`LocalOrder`]: empty, or 1 + the
    /// priority class of its next cell (as `ideal_pick_pias` ranks it).
    fn order_key(&self, f: u32) -> u8 {
        let st = &self.flows[f as usize];
        if st.in_local == 0 {
            return local_order::EMPTY;
        }
        let sent = st.next_seq as u64 * self.layout.cell_bytes;
        1 + self.prio_cuts.partition_point(|&c| c <= sent) as u8
    }

    /// Puts flow `f` on its node's [`LocalOrder`] (at the back) or updates
    /// its key there.
    fn order_flow(&mut self, f: u32) {
        let key = self.order_key(f);
        let st = &mut self.flows[f as usize];
        let node = st.src_node as usize;
        if st.on_local_list {
            self.local_order[node].set_key(st.local_pos, key);
            return;
        }
        let flows = &mut self.flows;
        self.local_order[node].push(f, key, &mut |m| Self::moved(flows, m));
    }

    /// Records a move in the [`LocalOrder`] in the flow's state.
    fn moved(flows: &mut [FlowState], m: Moved) {
        match m {
            Moved::At(g, p) => {
                let st = &mut flows[g as usize];
                st.local_pos = p;
                st.on_local_list = true;
            }
            Moved::Out(g) => flows[g as usize].on_local_list = false,
        }
    }

    /// Drops `cells` cells of flow `f` from LOCAL because their destination
    /// failed: the source learns of the failure and gives up on them (counted,
    /// and their server gets the credit back).
    fn discard_local(&mut self, f: u32, cells: u32) {
        for _ in 0..cells {
            match self.retx.get_mut(&f).and_then(|l| self.pool.pop_front(l)) {
                Some(c) => self.pool.release(c),
                None => break,
            }
        }
        if self.retx.get(&f).is_some_and(|l| l.is_empty()) {
            self.retx.remove(&f);
        }
        let st = &mut self.flows[f as usize];
        st.in_local -= cells;
        let (node, server) = (st.src_node as usize, st.src_server as usize);
        if !self.local_order.is_empty() && st.on_local_list {
            self.order_flow(f);
        }
        self.local_cells[node] -= cells as u64;
        self.local_total -= cells as u64;
        if self.rack_based() {
            self.up[server].in_local -= cells;
        }
        self.c.discarded_for_failed_dest += cells as u64;
    }

    /// Takes one cell of flow `f` out of LOCAL: a cell being sent again
    /// first, else a new one, which gets its sequence number now.
    fn take_from_local(&mut self, f: u32) -> u32 {
        let again = if self.retx.is_empty() {
            None
        } else {
            self.retx.get_mut(&f).and_then(|l| self.pool.pop_front(l))
        };
        let st = &mut self.flows[f as usize];
        debug_assert!(st.in_local > 0);
        st.in_local -= 1;
        let seq = st.next_seq;
        if again.is_none() {
            st.next_seq += 1;
        }
        let (node, server) = (st.src_node as usize, st.src_server as usize);
        if !self.local_order.is_empty() {
            self.order_flow(f);
        }
        self.local_cells[node] -= 1;
        self.local_total -= 1;
        if self.rack_based() {
            self.up[server].in_local -= 1;
        }
        match again {
            Some(c) => {
                if self.retx.get(&f).is_some_and(|l| l.is_empty()) {
                    self.retx.remove(&f);
                }
                c
            }
            None => self.pool.alloc(Cell { flow: f, seq }),
        }
    }

    /// A cell of a flow between live nodes was lost at a failed node: its
    /// source sends it again (back into LOCAL, through request/grant). The
    /// source learns of the loss at once — the paper's fast, datacenter-wide
    /// failure notification (§4.4); a transport timeout would add delay.
    fn retransmit(&mut self, cell: u32) {
        let f = self.pool[cell].flow;
        let server = self.flows[f as usize].src_server as usize;
        let list = self.retx.entry(f).or_insert(List::EMPTY);
        self.pool.push_back(list, cell);
        self.add_to_local(f, 1);
        if self.rack_based() {
            self.up[server].in_local += 1;
        }
        self.c.cells_retransmitted += 1;
    }

    /// Both ends of flow `f` are up.
    fn live_flow(&self, f: usize) -> bool {
        let st = &self.flows[f];
        !self.failed[st.src_node as usize] && !self.failed[st.dst_node as usize]
    }

    // ---- queues ----------------------------------------------------------

    fn enqueue_fwd(&mut self, node: usize, dst: usize, cell: u32) {
        let n = self.n();
        let q = &mut self.fwd[node * n + dst];
        self.pool.push_back(q, cell);
        self.c.peak_dest_queue_cells = self.c.peak_dest_queue_cells.max(q.len() as u32);
        self.bump_node(node);
    }

    fn enqueue_vq(&mut self, node: usize, via: usize, cell: u32) {
        let n = self.n();
        self.pool.push_back(&mut self.vq[node * n + via], cell);
        self.bump_node(node);
    }

    fn bump_node(&mut self, node: usize) {
        self.node_queued[node] += 1;
        self.queued_total += 1;
        self.c.peak_node_queue_cells = self.c.peak_node_queue_cells.max(self.node_queued[node]);
    }

    /// `cells` cells left node `node`'s queues.
    fn unqueue(&mut self, node: usize, cells: u32) {
        self.node_queued[node] -= cells;
        self.queued_total -= cells as u64;
    }

    // ---- delivery --------------------------------------------------------

    /// A cell reached its destination node at `t`.
    fn at_destination(&mut self, cell: u32, t: SimTime, sink: &mut Recorder) {
        if self.rack_based() {
            self.queue_for_server(cell);
        } else {
            let Cell { flow, seq } = self.pool[cell];
            self.pool.release(cell);
            self.receive(flow, seq, t, sink);
        }
    }

    /// Queues a cell at the destination ToR for its server.
    fn queue_for_server(&mut self, cell: u32) {
        let f = self.pool[cell].flow;
        let st = &mut self.flows[f as usize];
        let server = st.dst_server as usize;
        let was_empty = st.down_q.is_empty();
        self.pool.push_back(&mut st.down_q, cell);
        self.downlink_cells += 1;
        let d = &mut self.down[server];
        d.queued += 1;
        self.c.peak_downlink_cells = self.c.peak_downlink_cells.max(d.queued as usize);
        // A flow joins the downlink's round when its first cell waits.
        let newly_active = if was_empty {
            d.link.add_flow(f)
        } else {
            d.link.activate()
        };
        if newly_active {
            self.down_active.push(server as u32);
        }
    }

    /// The destination server got cell `seq` of flow `f` at `t`. Every cell is
    /// reported delivered when it arrives; the flow completes when its reorder
    /// buffer has released them all.
    fn receive(&mut self, f: u32, seq: u32, t: SimTime, sink: &mut Recorder) {
        let cell = self.layout.cell_bytes;
        let st = &self.flows[f as usize];
        let bytes = st.cell_bytes(seq, cell);
        let cells = st.cells;
        self.c.cells_delivered += 1;
        let a = self.reorder.receive(f, seq);
        let done = match a.receipt {
            Receipt::InOrder { .. } => a.next >= cells,
            Receipt::Early => {
                self.c.cells_out_of_order += 1;
                // Held after this arrival; the peak is over all flows.
                let held = a.held as u64 * cell;
                self.c.peak_reorder_bytes = self.c.peak_reorder_bytes.max(held);
                false
            }
            // Sirius never sends a cell twice; check_invariants reports it.
            Receipt::Duplicate => {
                self.c.duplicate_cells += 1;
                false
            }
        };
        sink.deliver(f, t, bytes);
        if done {
            sink.complete(f, t);
        }
    }

    // ---- per-slot steps ----------------------------------------------------

    fn process_arrivals(&mut self, t: u64, now: SimTime, sink: &mut Recorder) {
        let len = self.in_flight.len();
        let mut batch = std::mem::take(&mut self.in_flight[(t % len as u64) as usize]);
        let n = self.n();
        for &(x, cell, first_hop) in &batch {
            self.in_flight_cells -= 1;
            let x = x as usize;
            let f = self.pool[cell].flow as usize;
            let dst = self.flows[f].dst_node as usize;
            if self.failed[x] {
                if self.live_flow(f) {
                    self.retransmit(cell);
                } else {
                    self.c.lost_at_failed += 1;
                    self.pool.release(cell);
                }
                continue;
            }
            if x == dst {
                if first_hop && !self.ideal {
                    self.occ[x * n + dst] -= 1; // a cell granted direct arrived
                }
                self.at_destination(cell, now, sink);
            } else {
                // m is unchanged: the cell moves from "on its way" to "queued".
                self.enqueue_fwd(x, dst, cell);
                if self.failed[dst] {
                    self.frozen_cells += 1;
                    self.c.for_failed_dest += 1;
                }
            }
        }
        batch.clear();
        self.in_flight[(t % len as u64) as usize] = batch;
    }

    /// Requests and grants that arrive in slot `t` join their inbox (or the
    /// decisions to apply) for the next epoch start.
    fn process_messages(&mut self, t: u64) {
        let len = self.messages.len() as u64;
        let mut batch = std::mem::take(&mut self.messages[(t % len) as usize]);
        for &(seq, m) in &batch {
            match m {
                Message::Request { to, req } => self.inbox[to as usize].push((seq, req)),
                Message::Decision(src, via, f, granted) => {
                    self.decisions.push((seq, src, via, f, granted))
                }
            }
        }
        batch.clear();
        self.messages[(t % len) as usize] = batch;
    }

    /// Sends `m` from `from` to `to` on the cell of the slot of epoch-start
    /// slot `t`'s epoch that connects them: it arrives one slot plus the
    /// propagation later.
    fn send_message(&mut self, t: u64, from: usize, to: usize, m: Message) {
        let (_, k) = self
            .schedule
            .link(self.pos_of[from] as usize, self.pos_of[to] as usize);
        let arrive = t + k as u64 + 1 + self.layout.prop_slots;
        let len = self.messages.len() as u64;
        let seq = self.msg_seq;
        self.msg_seq += 1;
        self.messages[(arrive % len) as usize].push((seq, m));
    }

    fn server_uplinks(&mut self) {
        let rate = self.access;
        let cell = self.layout.cell_bytes;
        let spr = self.servers_per_rack as usize;
        let local_cap = self.server_credit_cells;
        let mut i = 0;
        while i < self.up_active.len() {
            let s = self.up_active[i] as usize;
            let failed = self.failed[s / spr];
            // Fast path: the front cell still waits for credit or LOCAL room.
            let u = &mut self.up[s];
            let ready = u.link.accrue(&rate);
            let waiting = !ready || (u.need_local && u.in_local >= local_cap);
            if waiting && !failed {
                u.link.wait(&rate);
                i += 1;
                continue;
            }
            if failed {
                u.link.clear_flows(); // the ToR is down: nothing more leaves the server
            }
            while let Some(f) = self.up[s].link.front() {
                let st = &self.flows[f as usize];
                if self.failed[st.dst_node as usize] {
                    self.up[s].link.drop_front(); // the source gives up on a dead destination
                    continue;
                }
                let cost = SlotCredit::cost(st.cell_bytes(st.pushed, cell));
                let intra = st.src_node == st.dst_node;
                let more = st.pushed + 1 < st.cells;
                let u = &mut self.up[s];
                if !u.link.can_send(cost) || (!intra && u.in_local >= local_cap) {
                    // Blocked: an idle link cannot bank more than one cell's worth.
                    u.link.hold(cost, &rate);
                    u.need_local = !intra;
                    break;
                }
                u.link.sent(cost, more);
                if !intra {
                    u.in_local += 1;
                }
                let st = &mut self.flows[f as usize];
                let seq = st.pushed;
                st.pushed += 1;
                self.c.cells_pushed += 1;
                if intra {
                    st.next_seq += 1;
                    let c = self.pool.alloc(Cell { flow: f, seq });
                    self.queue_for_server(c);
                } else {
                    self.add_to_local(f, 1);
                }
            }
            if self.up[s].link.end_slot() {
                self.up_active.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn server_downlinks(&mut self, end_of_slot: SimTime, sink: &mut Recorder) {
        let rate = self.access;
        let cell = self.layout.cell_bytes;
        let mut i = 0;
        while i < self.down_active.len() {
            let s = self.down_active[i] as usize;
            if self.failed[s / self.servers_per_rack as usize] {
                // The ToR is down: its queued cells stay (counted), nothing drains.
                self.down[s].link.deactivate();
                self.down_active.swap_remove(i);
                continue;
            }
            if !self.down[s].link.accrue(&rate) {
                i += 1;
                continue;
            }
            while let Some(f) = self.down[s].link.front() {
                let st = &mut self.flows[f as usize];
                let head = st.down_q.front().expect("a flow in the round has a cell");
                let seq = self.pool[head].seq;
                let cost = SlotCredit::cost(st.cell_bytes(seq, cell));
                let d = &mut self.down[s];
                if !d.link.can_send(cost) {
                    d.link.hold(cost, &rate);
                    break;
                }
                self.pool.pop_front(&mut st.down_q);
                self.pool.release(head);
                d.link.sent(cost, !st.down_q.is_empty());
                d.queued -= 1;
                self.downlink_cells -= 1;
                self.receive(f, seq, end_of_slot, sink);
            }
            if self.down[s].link.end_slot() {
                self.down_active.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Epoch start (slot `t`) of request/grant: apply the grant decisions
    /// that have arrived, grant the requests that have arrived, draw this
    /// epoch's requests. Requests and decisions ride on the cell of the slot
    /// that connects the pair and count from when that cell arrives.
    fn epoch_start(&mut self, t: u64) {
        let n = self.n();
        // 1. Decisions that reached their sources during the last epoch.
        let mut decisions = std::mem::take(&mut self.decisions);
        decisions.sort_unstable_by_key(|d| d.0);
        for &(_, src, via, f, granted) in &decisions {
            self.outstanding_requests -= 1;
            let st = &mut self.flows[f as usize];
            st.requested -= 1;
            let dst = st.dst_node as usize;
            if granted {
                self.c.grants += 1;
            }
            if granted && (self.failed[src as usize] || self.failed[dst]) {
                // The source died after asking, or the destination did: release
                // the intermediate's reservation.
                self.occ[via as usize * n + dst] -= 1;
            }
            if self.failed[dst] && !self.failed[src as usize] {
                self.discard_local(f, 1);
                continue;
            }
            if !granted || self.failed[src as usize] {
                continue;
            }
            if self.failed[via as usize] {
                // Granted just before the intermediate failed: the cell stays
                // in LOCAL and is requested again.
                continue;
            }
            let cell = self.take_from_local(f);
            self.enqueue_vq(src as usize, via as usize, cell);
        }
        self.decisions = decisions;
        self.decisions.clear();

        // 2. Grants, at each intermediate, over the requests that reached it
        // during the last epoch.
        let q = self.queue_bound;
        let mut reqs = Vec::new();
        for i in 0..n {
            if self.inbox[i].is_empty() {
                continue;
            }
            let mut inbox = std::mem::take(&mut self.inbox[i]);
            inbox.sort_unstable_by_key(|r| r.0);
            reqs.clear();
            reqs.extend(inbox.iter().map(|r| r.1));
            inbox.clear();
            self.inbox[i] = inbox;
            if self.failed[i] {
                // The sources learn of the failure (§4.4) and ask again.
                for r in &reqs {
                    self.msg_seq += 1;
                    self.decisions
                        .push((self.msg_seq, r.src, i as u32, r.flow, false));
                }
            } else {
                self.scratch_grants.clear();
                let m = &mut self.occ[i * n..(i + 1) * n];
                compute_grants(&mut reqs, m, q, &mut self.rng, &mut self.scratch_grants);
                // compute_grants shuffles `reqs` and grants a prefix-respecting
                // subset; mark which were granted by walking both in order.
                let mut g = 0;
                for r in &reqs {
                    let granted = g < self.scratch_grants.len() && self.scratch_grants[g] == *r;
                    if granted {
                        g += 1;
                    }
                    let d = Message::Decision(r.src, i as u32, r.flow, granted);
                    if self.failed[r.src as usize] {
                        // Nothing reaches a failed node; applied (and its
                        // reservation released) at the next epoch start.
                        self.msg_seq += 1;
                        self.decisions
                            .push((self.msg_seq, r.src, i as u32, r.flow, granted));
                    } else {
                        self.send_message(t, i, r.src as usize, d);
                    }
                }
                debug_assert_eq!(g, self.scratch_grants.len());
            }
        }

        // 3. Requests for this epoch.
        for s in 0..n {
            if self.failed[s] || self.local_flows[s].is_empty() {
                continue;
            }
            let mut list = std::mem::take(&mut self.local_flows[s]);
            self.scratch_flows.clear();
            list.retain(|&f| {
                let st = &mut self.flows[f as usize];
                if st.in_local == 0 {
                    st.on_local_list = false;
                    return false;
                }
                let free = st.in_local - st.requested;
                if free > 0 && !self.failed[st.dst_node as usize] {
                    self.scratch_flows.push(FlowCells {
                        flow: f,
                        dst: st.dst_node,
                        cells: free as u64,
                    });
                }
                true
            });
            self.local_flows[s] = list;
            if self.scratch_flows.is_empty() {
                continue;
            }
            self.scratch_candidates.clear();
            for x in 0..n {
                // One request per intermediate per epoch (Fig. 15); we also skip
                // intermediates whose virtual queue here still holds two or more
                // cells, so that a link busy with second-hop traffic cannot make
                // first-hop cells pile up without bound.
                if x != s && !self.failed[x] && self.vq[s * n + x].len() < 2 {
                    self.scratch_candidates.push(x as u32);
                }
            }
            self.scratch_requests.clear();
            compute_requests(
                &mut self.scratch_flows,
                &mut self.scratch_candidates,
                &mut self.rng,
                &mut self.scratch_requests,
            );
            for k in 0..self.scratch_requests.len() {
                let r = self.scratch_requests[k];
                self.flows[r.flow as usize].requested += 1;
                self.outstanding_requests += 1;
                self.c.requests += 1;
                let req = Received {
                    src: s as u32,
                    dst: r.dst,
                    flow: r.flow,
                };
                let m = Message::Request { to: r.via, req };
                self.send_message(t, s, r.via as usize, m);
            }
        }
    }

    /// Picks the LOCAL cell node `s` sends via `x` in SIRIUS (IDEAL): the first
    /// flow, round-robin, whose destination is `x` or has room at `x`.
    fn ideal_pick(&mut self, s: usize, x: usize) -> Option<u32> {
        if !self.prio_cuts.is_empty() {
            return self.ideal_pick_pias(s, x);
        }
        let n = self.n();
        let q = self.queue_bound;
        let list = &mut self.local_flows[s];
        let mut k = 0;
        while k < list.len() {
            let f = list[k];
            let st = &self.flows[f as usize];
            if st.in_local == 0 {
                self.flows[f as usize].on_local_list = false;
                list.swap_remove(k);
                continue;
            }
            let d = st.dst_node as usize;
            if !self.failed[d] && (d == x || self.occ[x * n + d] < q) {
                // Rotate for round-robin fairness across flows.
                list[k..].rotate_left(1);
                return Some(f);
            }
            k += 1;
        }
        None
    }

    /// `ideal_pick` with source priority queues: of the flows that may go via
    /// `x`, one whose next cell has the highest priority (fewest bytes of
    /// the flow sent), round-robin among equals.
    fn ideal_pick_pias(&mut self, s: usize, x: usize) -> Option<u32> {
        if !self.local_order.is_empty() {
            // Every flow may go via x: the same pick without the scan.
            let flows = &mut self.flows;
            return self.local_order[s].pick(&mut |m| Self::moved(flows, m));
        }
        let n = self.n();
        let q = self.queue_bound;
        let cell = self.layout.cell_bytes;
        let list = &mut self.local_flows[s];
        let mut best: Option<(usize, usize)> = None;
        let mut k = 0;
        while k < list.len() {
            let f = list[k];
            let st = &self.flows[f as usize];
            if st.in_local == 0 {
                self.flows[f as usize].on_local_list = false;
                list.swap_remove(k);
                continue;
            }
            let d = st.dst_node as usize;
            if !self.failed[d] && (d == x || self.occ[x * n + d] < q) {
                let sent = st.next_seq as u64 * cell;
                let class = self.prio_cuts.partition_point(|&c| c <= sent);
                if best.is_none_or(|(c, _)| class < c) {
                    best = Some((class, k));
                    if class == 0 {
                        break;
                    }
                }
            }
            k += 1;
        }
        let (_, k) = best?;
        let f = list[k];
        list[k..].rotate_left(1);
        Some(f)
    }

    fn transmit(&mut self, t: u64) {
        let n = self.n();
        let k = self.slot_in_epoch(t);
        let uplinks = self.layout.uplinks;
        let arrive = ((t + 1 + self.layout.prop_slots) % self.in_flight.len() as u64) as usize;
        for s in 0..n {
            if self.failed[s] {
                continue;
            }
            let has_local = self.ideal && self.local_cells[s] > 0;
            if self.node_queued[s] == 0 && !has_local {
                continue;
            }
            let pos = self.pos_of[s] as usize;
            // Uplink u reaches node (u, (pos mod G + k) mod G): group u, the
            // same offset in every group (sched::awgr), so one modulo per node.
            let (g, offset) = (self.schedule.ports(), self.schedule.dest(pos, 0, k));
            for u in 0..uplinks {
                let xpos = u * g + offset;
                debug_assert_eq!(xpos, self.schedule.dest(pos, u, k));
                let x = self.node_at[xpos];
                if x == NIL || x as usize == s || self.failed[x as usize] {
                    continue;
                }
                let x = x as usize;
                let link = s * n + x;
                let second = !self.fwd[link].is_empty();
                let mut first = !self.vq[link].is_empty();
                let mut ideal_flow = None;
                if !first && self.ideal && self.local_cells[s] > 0 {
                    ideal_flow = self.ideal_pick(s, x);
                    first = ideal_flow.is_some();
                }
                let use_first = match (second, first) {
                    (false, false) => continue,
                    (true, false) => false,
                    (false, true) => true,
                    (true, true) => {
                        let p = self.prefer_first_hop[link];
                        self.prefer_first_hop[link] = !p;
                        p
                    }
                };
                let cell = if use_first {
                    if let Some(f) = ideal_flow {
                        let cell = self.take_from_local(f);
                        let d = self.flows[f as usize].dst_node as usize;
                        if d != x {
                            self.occ[x * n + d] += 1; // on its way to x for d
                        }
                        cell
                    } else {
                        let c = self.pool.pop_front(&mut self.vq[link]).expect("non-empty");
                        self.unqueue(s, 1);
                        c
                    }
                } else {
                    let c = self.pool.pop_front(&mut self.fwd[link]).expect("non-empty");
                    self.unqueue(s, 1);
                    self.occ[link] -= 1;
                    self.c.cells_forwarded += 1;
                    c
                };
                if self.check {
                    // Receive port of x that hears s: must hear no one else this slot.
                    let port = self.schedule.rx_port(pos, u);
                    let key = xpos * uplinks + port;
                    if self.rx_seen[key] == t {
                        self.c.contention_violations += 1;
                    }
                    self.rx_seen[key] = t;
                }
                self.c.cells_sent += 1;
                self.in_flight[arrive].push((x as u32, cell, use_first));
                self.in_flight_cells += 1;
            }
        }
    }

    /// Applies failures due by `now` (at an epoch boundary).
    fn apply_failures(&mut self, now: SimTime, t: u64) {
        let mut changed = false;
        while let Some(&(at, node)) = self.pending_failures.last() {
            if at > now {
                break;
            }
            self.pending_failures.pop();
            let x = node as usize;
            if self.failed[x] {
                continue;
            }
            self.failed[x] = true;
            changed = true;
            let n = self.n();
            let mut cells = Vec::new();
            // Cells of live flows that x held as their intermediate are lost
            // with it: their sources send them again.
            for d in 0..n {
                if d == x || self.failed[d] {
                    continue;
                }
                cells.clear();
                let mut keep = List::EMPTY;
                while let Some(c) = self.pool.pop_front(&mut self.fwd[x * n + d]) {
                    if self.live_flow(self.pool[c].flow as usize) {
                        cells.push(c);
                    } else {
                        self.pool.push_back(&mut keep, c);
                    }
                }
                self.fwd[x * n + d] = keep;
                self.unqueue(x, cells.len() as u32);
                for &c in &cells {
                    self.retransmit(c);
                }
            }
            for s in 0..n {
                if s == x || self.failed[s] {
                    continue;
                }
                // Second-hop cells for x can never be delivered.
                self.c.for_failed_dest += self.fwd[s * n + x].len() as u64;
                // First-hop cells granted via x go back to LOCAL and are
                // requested again (unless x was their destination too).
                cells.clear();
                let mut keep = List::EMPTY;
                while let Some(c) = self.pool.pop_front(&mut self.vq[s * n + x]) {
                    if self.flows[self.pool[c].flow as usize].dst_node as usize == x {
                        self.c.for_failed_dest += 1;
                        self.pool.push_back(&mut keep, c);
                    } else {
                        cells.push(c);
                    }
                }
                self.vq[s * n + x] = keep;
                self.unqueue(s, cells.len() as u32);
                for &c in &cells {
                    self.retransmit(c);
                }
                // LOCAL cells for x are given up (those with a request out are
                // given up when its answer comes back).
                for k in 0..self.local_flows[s].len() {
                    let f = self.local_flows[s][k];
                    let st = &self.flows[f as usize];
                    if st.dst_node as usize == x && st.in_local > st.requested {
                        let c = st.in_local - st.requested;
                        self.discard_local(f, c);
                    }
                }
            }
            self.frozen_cells = self.frozen_scan();
        }
        if changed && self.reschedule {
            let live: Vec<u32> = (0..self.n() as u32)
                .filter(|&i| !self.failed[i as usize])
                .collect();
            let u = self.layout.uplinks;
            let g = default_ports(live.len().max(1), u).min(self.layout.ports);
            self.schedule =
                CyclicSchedule::new(live.len().max(1), u, g).expect("fewer nodes always fit");
            self.node_at = vec![NIL; self.schedule.padded()];
            self.rx_seen = vec![u64::MAX; self.schedule.padded() * u];
            for (p, &node) in live.iter().enumerate() {
                self.node_at[p] = node;
                self.pos_of[node as usize] = p as u32;
            }
            self.epoch_origin = t;
        }
    }

    /// Cells that can never move, counted from the queues: everything held
    /// at a failed node, and cells at live nodes for failed destinations.
    fn frozen_scan(&self) -> u64 {
        let n = self.n();
        let mut frozen = 0;
        for x in (0..n).filter(|&x| self.failed[x]) {
            frozen += self.node_queued[x] as u64 + self.local_cells[x];
            for s in (0..n).filter(|&s| !self.failed[s]) {
                frozen += (self.fwd[s * n + x].len() + self.vq[s * n + x].len()) as u64;
            }
        }
        frozen
    }

    /// Where every cell pushed to a ToR (or, server-based, handed to the NIC)
    /// is, one place each; counted from the queues, not the running totals.
    fn cell_partition(&self) -> CellPartition {
        let n = self.n();
        let spr = self.servers_per_rack as usize;
        let mut p = CellPartition {
            delivered: self.c.cells_delivered,
            in_flight: self.in_flight.iter().map(|b| b.len() as u64).sum(),
            stuck_at_failed_nodes: self.c.lost_at_failed,
            given_up: self.c.discarded_for_failed_dest,
            ..CellPartition::default()
        };
        for x in 0..n {
            let held = self.node_queued[x] as u64;
            let local = self.local_cells[x];
            let down: u64 = if self.rack_based() {
                (x * spr..(x + 1) * spr)
                    .map(|s| self.down[s].queued as u64)
                    .sum()
            } else {
                0
            };
            if self.failed[x] {
                p.stuck_at_failed_nodes += held + local + down;
                continue;
            }
            let for_failed: u64 = (0..n)
                .filter(|&d| self.failed[d])
                .map(|d| (self.fwd[x * n + d].len() + self.vq[x * n + d].len()) as u64)
                .sum();
            p.stuck_for_failed_destinations += for_failed;
            p.queued += held - for_failed;
            p.in_local += local;
            p.at_downlinks += down;
        }
        p
    }

    /// Test-only: loses one queued cell without counting it anywhere (the
    /// running totals stay consistent, so only conservation can notice).
    #[cfg(test)]
    fn leak_a_queued_cell(&mut self) -> bool {
        for i in 0..self.fwd.len() {
            if let Some(c) = self.pool.pop_front(&mut self.fwd[i]) {
                self.pool.release(c);
                self.occ[i] -= 1;
                self.unqueue(i / self.n(), 1);
                return true;
            }
        }
        false
    }
}

impl Fabric for Sirius {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn hosts(&self) -> usize {
        self.up.len()
    }

    fn host_rate(&self) -> Rate {
        self.host_rate
    }

    fn add_flow(&mut self, _now: SimTime, flow: &Flow, _sink: &mut Recorder) {
        let spr = self.servers_per_rack;
        let cell = self.layout.cell_bytes;
        let cells = flow.bytes.div_ceil(cell);
        assert!(
            cells <= u32::MAX as u64,
            "flow {} has too many cells",
            flow.id
        );
        let id = flow.id;
        debug_assert_eq!(id as usize, self.flows.len());
        self.flows.push(FlowState {
            src_server: flow.src,
            dst_server: flow.dst,
            src_node: flow.src / spr,
            dst_node: flow.dst / spr,
            bytes: flow.bytes,
            cells: cells as u32,
            pushed: 0,
            in_local: 0,
            requested: 0,
            next_seq: 0,
            down_q: List::EMPTY,
            local_pos: 0,
            on_local_list: false,
        });
        self.reorder.push_flow();
        self.latest = self.latest.max(_now);
        if self.failed[(flow.src / spr) as usize] || self.failed[(flow.dst / spr) as usize] {
            return; // an end is down: the flow never starts
        }
        if self.rack_based() {
            if self.up[flow.src as usize].link.add_flow(id) {
                self.up_active.push(flow.src);
            }
        } else {
            // Server-based: the node is the server; the whole flow is in LOCAL.
            self.flows[id as usize].pushed = cells as u32;
            self.c.cells_pushed += cells;
            self.add_to_local(id, cells as u32);
        }
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

    fn advance(&mut self, now: SimTime, sink: &mut Recorder) {
        let t = self.clock.slot_of(now);
        debug_assert_eq!(self.clock.start(t), now, "advance only at slot boundaries");
        self.c.slots += 1;
        sink.count_internal_events(1);
        self.process_arrivals(t, now, sink);
        if !self.ideal && self.outstanding_requests > 0 {
            self.process_messages(t);
        }
        let epoch_start = self.slot_in_epoch(t) == 0;
        if epoch_start {
            if !self.pending_failures.is_empty() {
                self.apply_failures(now, t);
            }
            if !self.ideal {
                self.epoch_start(t);
            }
        }
        self.transmit(t);
        if self.rack_based() {
            let end = self.clock.start(t + 1);
            self.server_downlinks(end, sink);
            self.server_uplinks();
        }
        self.last_slot = Some(t);
        self.latest = now;
    }

    fn finish(&mut self, _end: SimTime, _sink: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        stats::stats(self)
    }

    fn check_invariants(&self) -> Result<(), String> {
        let n = self.n();
        // The running totals `busy()` reads against the per-node counts, and
        // those against the queues themselves.
        let queued: u64 = self.node_queued.iter().map(|&x| x as u64).sum();
        let local: u64 = self.local_cells.iter().sum();
        if (queued, local) != (self.queued_total, self.local_total) {
            return Err(format!(
                "sirius: nodes hold {queued} queued and {local} LOCAL cells but the running totals say {} and {}",
                self.queued_total, self.local_total
            ));
        }
        if self.reorder.len() != self.flows.len() {
            return Err(format!(
                "sirius: {} flows but {} reorder states",
                self.flows.len(),
                self.reorder.len()
            ));
        }
        self.reorder.check().map_err(|e| format!("sirius: {e}"))?;
        if self.c.duplicate_cells > 0 {
            return Err(format!(
                "sirius: {} cells reached their server twice",
                self.c.duplicate_cells
            ));
        }
        let at = self.cell_partition();
        if at.total() != self.c.cells_pushed {
            return Err(format!(
                "sirius: {} cells pushed but {} accounted for ({at:?})",
                self.c.cells_pushed,
                at.total()
            ));
        }
        // The pool holds exactly the cells in queues, on the wire, at the
        // downlinks and waiting to be sent again.
        let retx: usize = self.retx.values().map(|l| l.len()).sum();
        let down: u64 = self.down.iter().map(|d| d.queued as u64).sum();
        let placed = self.queued_total + at.in_flight + down + retx as u64;
        if self.pool.live() as u64 != placed
            || at.in_flight != self.in_flight_cells
            || down != self.downlink_cells
        {
            return Err(format!(
                "sirius: {} pooled cells but {placed} placed ({} queued, {} in flight (counted {}), {down} at downlinks (counted {}), {retx} to resend)",
                self.pool.live(),
                self.queued_total,
                at.in_flight,
                self.in_flight_cells,
                self.downlink_cells
            ));
        }
        if self.frozen_cells != self.frozen_scan() {
            return Err(format!(
                "sirius: {} cells can never move but the running total says {}",
                self.frozen_scan(),
                self.frozen_cells
            ));
        }
        if self.c.contention_violations > 0 {
            return Err(format!(
                "sirius: {} receive ports heard two senders in one slot",
                self.c.contention_violations
            ));
        }
        for (s, o) in self.local_order.iter().enumerate() {
            let mut cells = 0;
            for (p, f, key) in o.iter() {
                let st = &self.flows[f as usize];
                if st.src_node as usize != s
                    || !st.on_local_list
                    || st.local_pos != p
                    || key != self.order_key(f)
                {
                    return Err(format!(
                        "sirius: flow {f} at position {p} of node {s}'s LOCAL order with key {key} is from node {}, at {} (listed: {}), key {}",
                        st.src_node, st.local_pos, st.on_local_list, self.order_key(f)
                    ));
                }
                cells += st.in_local as u64;
            }
            if cells != self.local_cells[s] {
                return Err(format!(
                    "sirius: node {s}'s LOCAL order holds {cells} cells but LOCAL counts {}",
                    self.local_cells[s]
                ));
            }
        }
        let q = self.queue_bound;
        for i in 0..n {
            let in_queues: usize = (0..n)
                .map(|x| self.fwd[i * n + x].len() + self.vq[i * n + x].len())
                .sum();
            if in_queues != self.node_queued[i] as usize {
                return Err(format!(
                    "sirius: node {i} has {in_queues} cells in its queues but counts {}",
                    self.node_queued[i]
                ));
            }
            for d in 0..n {
                let (len, m) = (self.fwd[i * n + d].len() as u32, self.occ[i * n + d]);
                if len > q || m > q {
                    return Err(format!(
                        "sirius: node {i} holds {len} cells (m = {m}) for {d}, above Q = {q}"
                    ));
                }
                if len > m {
                    return Err(format!(
                        "sirius: node {i} holds {len} cells for {d} but m = {m}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

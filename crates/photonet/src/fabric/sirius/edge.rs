//! The host edge: each server's link up to its ToR and the ToR's link down
//! to it, both [`crate::access`] links at R, and in-order delivery at the
//! destination server ([`FlowReorder`]). Server-based, the same two links
//! are the server's NIC between host and fabric: R bounds both directions.
//!
//! Up: each server pushes cells of its flows (round-robin across flows) at
//! R, as long as it has credit in the ToR's LOCAL buffer (`server_buffer`,
//! the one-hop credit flow control of §4.3, counted in [`Local`]);
//! intra-rack cells go straight to the destination server's downlink.
//! Down: each downlink drains the cells waiting at the ToR for its server
//! at R, round-robin over flows. Every cell counts as delivered when it
//! reaches its server; a flow completes when its reorder buffer has
//! released them all.

use super::flow_reorder::FlowReorder;
use super::local::Local;
use super::{Cell, FlowState};
use crate::access::{AccessLink, SlotCredit};
use crate::delivery::Receipt;
use crate::pool::Pool;
use crate::recorder::Recorder;
use crate::units::SimTime;

/// A server's link to its ToR ([`AccessLink`]: credit at R, round-robin over
/// the flows with cells not yet pushed — per-flow queues, as in the electrical
/// baseline's switches).
#[derive(Default)]
pub(super) struct UpLink {
    link: AccessLink,
    /// The front cell (inter-rack) also waits for room in LOCAL. With the
    /// link's `need`, lets a slot skip the link without touching its flows.
    need_local: bool,
}

/// The ToR's link down to a server: round-robin over the flows with cells
/// waiting at the ToR.
#[derive(Default)]
pub(super) struct DownLink {
    link: AccessLink,
    /// Cells waiting at the ToR for this server.
    queued: u32,
}

pub(super) struct Edge {
    servers_per_rack: usize,
    cell_bytes: u64,
    /// Server links' credit per slot (R × slot) and per cell.
    access: SlotCredit,
    up: Vec<UpLink>,
    down: Vec<DownLink>,
    up_active: Vec<u32>,
    down_active: Vec<u32>,
    downlink_cells: u64,
    /// In-order delivery at the destination, per flow.
    reorder: FlowReorder,
    /// Cells the servers have pushed to their ToRs (server-based: that the
    /// host has handed to its NIC).
    pub cells_pushed: u64,
    pub cells_delivered: u64,
    pub cells_out_of_order: u64,
    pub peak_reorder_bytes: u64,
    /// Cells each server holds for reordering, summed over its flows, and
    /// the peak of any server's sum (Fig. 10d's "buffer needed at the
    /// server" read per server rather than per flow).
    server_held: Vec<u32>,
    pub peak_server_reorder_cells: u32,
    pub peak_downlink_cells: usize,
    /// Cells that reached their server twice (never, in Sirius).
    pub duplicate_cells: u64,
    /// Flows (slots) completed since the fabric last looked.
    pub completed: Vec<u32>,
}

impl Edge {
    pub fn new(
        servers: usize,
        servers_per_rack: usize,
        access: SlotCredit,
        cell_bytes: u64,
    ) -> Edge {
        Edge {
            servers_per_rack,
            cell_bytes,
            access,
            up: (0..servers).map(|_| UpLink::default()).collect(),
            down: (0..servers).map(|_| DownLink::default()).collect(),
            up_active: Vec::new(),
            down_active: Vec::new(),
            downlink_cells: 0,
            reorder: FlowReorder::new(),
            cells_pushed: 0,
            cells_delivered: 0,
            cells_out_of_order: 0,
            peak_reorder_bytes: 0,
            server_held: vec![0; servers],
            peak_server_reorder_cells: 0,
            peak_downlink_cells: 0,
            duplicate_cells: 0,
            completed: Vec::new(),
        }
    }

    pub fn servers(&self) -> usize {
        self.up.len()
    }

    /// A link has work.
    #[inline]
    pub fn busy(&self) -> bool {
        !self.up_active.is_empty() || !self.down_active.is_empty()
    }

    /// A new flow in slot `f` (its reorder state); `push` puts it on its
    /// server's uplink (false: an end is down, the flow never starts).
    pub fn add_flow(&mut self, f: u32, src: u32, push: bool) {
        self.reorder.start_flow(f);
        if push && self.up[src as usize].link.add_flow(f) {
            self.up_active.push(src);
        }
    }

    /// Queues a cell at the destination ToR for its server. Always inlined:
    /// once per delivered cell, from the arrivals.
    #[inline(always)]
    pub fn queue_for_server(&mut self, flows: &mut [FlowState], pool: &mut Pool<Cell>, cell: u32) {
        let f = pool[cell].flow;
        let st = &mut flows[f as usize];
        let server = st.dst_server as usize;
        let was_empty = st.down_q.is_empty();
        pool.push_back(&mut st.down_q, cell);
        self.downlink_cells += 1;
        let d = &mut self.down[server];
        d.queued += 1;
        self.peak_downlink_cells = self.peak_downlink_cells.max(d.queued as usize);
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

    /// The destination server got cell `seq` (of `bytes`) of the flow in
    /// slot `f` at `t`. Every cell is reported delivered when it arrives; the
    /// flow completes when its reorder buffer has released them all.
    #[inline]
    fn receive(
        &mut self,
        st: &FlowState,
        f: u32,
        seq: u32,
        bytes: u64,
        t: SimTime,
        sink: &mut Recorder,
    ) {
        let cell = self.cell_bytes;
        let cells = st.cells;
        self.cells_delivered += 1;
        let a = self.reorder.receive(f, seq);
        // The server's sum moves by this flow's change: up by one when a
        // cell is held, down by those an in-order arrival releases.
        let done = match a.receipt {
            Receipt::InOrder { released } => {
                if released > 1 {
                    self.server_held[st.dst_server as usize] -= released - 1;
                }
                a.next >= cells
            }
            Receipt::Early => {
                self.cells_out_of_order += 1;
                let h = &mut self.server_held[st.dst_server as usize];
                *h += 1;
                self.peak_server_reorder_cells = self.peak_server_reorder_cells.max(*h);
                // Held after this arrival; the peak is over all flows.
                let held = a.early_held as u64 * cell;
                self.peak_reorder_bytes = self.peak_reorder_bytes.max(held);
                false
            }
            // Sirius never sends a cell twice; check_invariants reports it.
            Receipt::Duplicate => {
                self.duplicate_cells += 1;
                false
            }
        };
        if done {
            sink.deliver_last(st.id, t, bytes);
            self.completed.push(f);
        } else {
            sink.deliver_point(st.id, t, bytes);
        }
    }

    /// One slot of the server uplinks: each active server pushes what its
    /// credit at R and its room in LOCAL allow.
    #[inline(never)] // once per slot: kept apart in profiles
    pub fn uplinks(
        &mut self,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
        local: &mut Local,
        failed: &[bool],
    ) {
        let rate = self.access;
        let cell = self.cell_bytes;
        let spr = self.servers_per_rack;
        let mut i = 0;
        while i < self.up_active.len() {
            let s = self.up_active[i] as usize;
            let down = !failed.is_empty() && failed[s / spr];
            // Fast path: the front cell still waits for credit or LOCAL room.
            let u = &mut self.up[s];
            let ready = u.link.accrue(&rate);
            let waiting = !ready || (u.need_local && local.full(s));
            if waiting && !down {
                u.link.wait(&rate);
                i += 1;
                continue;
            }
            if down {
                u.link.clear_flows(); // the ToR is down: nothing more leaves the server
            }
            while let Some(f) = self.up[s].link.front() {
                let st = &flows[f as usize];
                if is_down(failed, st.dst_node as usize) {
                    self.up[s].link.drop_front(); // the source gives up on a dead destination
                    continue;
                }
                let cost = SlotCredit::cost(st.cell_bytes(st.pushed, cell));
                let intra = st.src_node == st.dst_node;
                let more = st.pushed + 1 < st.cells;
                let u = &mut self.up[s];
                if !u.link.can_send(cost) || (!intra && local.full(s)) {
                    // Blocked: an idle link cannot bank more than one cell's worth.
                    u.link.hold(cost, &rate);
                    u.need_local = !intra;
                    break;
                }
                u.link.sent(cost, more);
                let st = &mut flows[f as usize];
                let seq = st.pushed;
                st.pushed += 1;
                self.cells_pushed += 1;
                if intra {
                    st.next_seq += 1;
                    let c = pool.alloc(Cell { flow: f, seq });
                    self.queue_for_server(flows, pool, c);
                } else {
                    local.push(flows, s, f);
                }
            }
            if self.up[s].link.end_slot() {
                self.up_active.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// One slot of the server downlinks: each delivers what its credit at R
    /// allows, the cells counting at `end_of_slot`.
    #[inline(never)] // once per slot: kept apart in profiles
    pub fn downlinks(
        &mut self,
        end_of_slot: SimTime,
        sink: &mut Recorder,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
        failed: &[bool],
    ) {
        let rate = self.access;
        let cell = self.cell_bytes;
        let mut i = 0;
        while i < self.down_active.len() {
            let s = self.down_active[i] as usize;
            if !failed.is_empty() && failed[s / self.servers_per_rack] {
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
                let st = &mut flows[f as usize];
                let head = st.down_q.front().expect("a flow in the round has a cell");
                let seq = pool[head].seq;
                let bytes = st.cell_bytes(seq, cell);
                let cost = SlotCredit::cost(bytes);
                let d = &mut self.down[s];
                if !d.link.can_send(cost) {
                    d.link.hold(cost, &rate);
                    break;
                }
                pool.pop_front(&mut st.down_q);
                pool.release(head);
                d.link.sent(cost, !st.down_q.is_empty());
                d.queued -= 1;
                self.downlink_cells -= 1;
                let st = &flows[f as usize];
                self.receive(st, f, seq, bytes, end_of_slot, sink);
            }
            if self.down[s].link.end_slot() {
                self.down_active.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Cells waiting at node `x`'s ToR for its servers.
    pub fn at_downlinks(&self, x: usize) -> u64 {
        let spr = self.servers_per_rack;
        (x * spr..(x + 1) * spr)
            .map(|s| self.down[s].queued as u64)
            .sum()
    }

    /// The downlinks' count against their queues, and the reorder states
    /// against the flows.
    pub fn check(&self, flows: usize) -> Result<(), String> {
        if self.reorder.len() != flows {
            return Err(format!(
                "sirius: {flows} flows but {} reorder states",
                self.reorder.len()
            ));
        }
        self.reorder.check().map_err(|e| format!("sirius: {e}"))?;
        if self.duplicate_cells > 0 {
            return Err(format!(
                "sirius: {} cells reached their server twice",
                self.duplicate_cells
            ));
        }
        let down: u64 = self.down.iter().map(|d| d.queued as u64).sum();
        if down != self.downlink_cells {
            return Err(format!(
                "sirius: {down} cells at downlinks but the running total says {}",
                self.downlink_cells
            ));
        }
        Ok(())
    }

    /// Cells waiting at every downlink (running total).
    pub fn downlink_cells(&self) -> u64 {
        self.downlink_cells
    }
}

/// Whether `node` has failed; `failed` is empty while no node has (the
/// server links then skip the per-link lookup).
#[inline]
fn is_down(failed: &[bool], node: usize) -> bool {
    !failed.is_empty() && failed[node]
}

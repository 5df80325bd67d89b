//! LOCAL: the cells a node has from its own servers, not yet sent into the
//! fabric (§4.3). A per-flow cell count, not cells: a cell gets its
//! sequence number when it leaves, so the reorder buffer at the destination
//! sees exactly the reordering of the two-hop paths. Cells lost at a failed
//! node come back here with their sequence numbers and leave first.
//!
//! Which flow a node serves next: request/grant asks for cells of any flow
//! with cells not yet requested ([`Local::requestable`]); SIRIUS (IDEAL)
//! picks round-robin over the flows that may go via the node the uplink
//! reaches ([`Local::ideal_pick`]), by source priority first if configured.
//! Each server's credit in LOCAL (`server_buffer`, rack-based) is counted
//! here too.

use super::local_order::{self, LocalOrder, Moved};
use super::queues::Queues;
use super::{Cell, FlowState};
use crate::pool::{List, Pool};
use crate::sched::sirius::FlowCells;
use std::collections::BTreeMap;

pub(super) struct Local {
    cell_bytes: u64,
    /// Cells in each node's LOCAL, and their sum.
    cells: Vec<u64>,
    total: u64,
    /// Per node: the flows with cells in LOCAL (round-robin order).
    flows: Vec<Vec<u32>>,
    /// With source priorities, no per-destination bound and no failures
    /// (NegotiaToR's baseline), every flow may go via any node, and the
    /// LOCAL flows' order lives here instead of `flows`: the same picks in
    /// O(log n) ([`local_order`]).
    order: Vec<LocalOrder>,
    /// Source priority thresholds in bytes (empty: off).
    prio_cuts: Vec<u64>,
    /// Cells back in their source's LOCAL after a failure, by flow: they keep
    /// their sequence numbers and leave LOCAL before the flow's new cells.
    retx: BTreeMap<u32, List>,
    /// Cells of each server in LOCAL, bounded by its credit (server-based:
    /// unbounded).
    server_cells: Vec<u32>,
    credit_cells: u32,
    pub peak_local_cells: u64,
    /// LOCAL cells whose destination failed, given up by their source.
    pub discarded_for_failed_dest: u64,
    /// Cells sent again after a failure (see [`Local::retransmit`]).
    pub cells_retransmitted: u64,
    /// Completed flows that have left their node's list since the fabric
    /// last looked: nothing refers to them any more, their slots are free.
    pub left_done: Vec<u32>,
}

impl Local {
    /// `servers` with `credit_cells` of LOCAL each; `ordered` selects the
    /// O(log n) pick.
    pub fn new(
        nodes: usize,
        servers: usize,
        credit_cells: u32,
        cell_bytes: u64,
        prio_cuts: Vec<u64>,
        ordered: bool,
    ) -> Local {
        Local {
            cell_bytes,
            cells: vec![0; nodes],
            total: 0,
            flows: vec![Vec::new(); nodes],
            order: if ordered {
                vec![LocalOrder::new(); nodes]
            } else {
                Vec::new()
            },
            prio_cuts,
            retx: BTreeMap::new(),
            server_cells: vec![0; servers],
            credit_cells,
            peak_local_cells: 0,
            discarded_for_failed_dest: 0,
            cells_retransmitted: 0,
            left_done: Vec::new(),
        }
    }

    /// Cells in node `s`'s LOCAL.
    #[inline]
    pub fn cells(&self, s: usize) -> u64 {
        self.cells[s]
    }

    /// Cells in every LOCAL.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether server `s` has used up its credit in LOCAL.
    #[inline]
    pub fn full(&self, s: usize) -> bool {
        self.server_cells[s] >= self.credit_cells
    }

    /// Server `s` pushes a cell of flow `f` into LOCAL.
    #[inline]
    pub fn push(&mut self, flows: &mut [FlowState], s: usize, f: u32) {
        self.server_cells[s] += 1;
        self.add(flows, f, 1);
    }

    /// `cells` cells of flow `f` join LOCAL (the caller counts the credit).
    fn add(&mut self, flows: &mut [FlowState], f: u32, cells: u32) {
        let st = &mut flows[f as usize];
        st.in_local += cells;
        let node = st.src_node as usize;
        if !self.order.is_empty() {
            self.order_flow(flows, f);
        } else if !st.on_local_list {
            st.on_local_list = true;
            self.flows[node].push(f);
        }
        self.cells[node] += cells as u64;
        self.total += cells as u64;
        self.peak_local_cells = self.peak_local_cells.max(self.cells[node]);
    }

    /// Key of flow `f` in its node's [`LocalOrder`]: empty, or 1 + the
    /// priority class of its next cell (as `ideal_pick` ranks it).
    fn order_key(&self, flows: &[FlowState], f: u32) -> u8 {
        let st = &flows[f as usize];
        if st.in_local == 0 {
            return local_order::EMPTY;
        }
        let sent = st.next_seq as u64 * self.cell_bytes;
        1 + self.prio_cuts.partition_point(|&c| c <= sent) as u8
    }

    /// Puts flow `f` on its node's [`LocalOrder`] (at the back) or updates
    /// its key there.
    fn order_flow(&mut self, flows: &mut [FlowState], f: u32) {
        let key = self.order_key(flows, f);
        let st = &mut flows[f as usize];
        let node = st.src_node as usize;
        if st.on_local_list {
            self.order[node].set_key(st.local_pos, key);
            return;
        }
        let left = &mut self.left_done;
        self.order[node].push(f, key, &mut |m| moved(flows, left, m));
    }

    /// Gives `cells` of credit back to `server`.
    #[inline]
    fn free_credit(&mut self, server: usize, cells: u32) {
        self.server_cells[server] -= cells;
    }

    /// Drops `cells` cells of flow `f` from LOCAL because their destination
    /// failed: the source learns of the failure and gives up on them (counted,
    /// and their server gets the credit back).
    pub fn discard(&mut self, flows: &mut [FlowState], pool: &mut Pool<Cell>, f: u32, cells: u32) {
        for _ in 0..cells {
            match self.retx.get_mut(&f).and_then(|l| pool.pop_front(l)) {
                Some(c) => pool.release(c),
                None => break,
            }
        }
        if self.retx.get(&f).is_some_and(|l| l.is_empty()) {
            self.retx.remove(&f);
        }
        let st = &mut flows[f as usize];
        st.in_local -= cells;
        let (node, server) = (st.src_node as usize, st.src_server as usize);
        if !self.order.is_empty() && st.on_local_list {
            self.order_flow(flows, f);
        }
        self.cells[node] -= cells as u64;
        self.total -= cells as u64;
        self.free_credit(server, cells);
        self.discarded_for_failed_dest += cells as u64;
    }

    /// Takes one cell of flow `f` out of LOCAL: a cell being sent again
    /// first, else a new one, which gets its sequence number now. Always
    /// inlined: called once per granted cell, the call's register saves
    /// were a tenth of its cost.
    #[inline(always)]
    pub fn take(&mut self, flows: &mut [FlowState], pool: &mut Pool<Cell>, f: u32) -> u32 {
        let again = if self.retx.is_empty() {
            None
        } else {
            self.retx.get_mut(&f).and_then(|l| pool.pop_front(l))
        };
        let st = &mut flows[f as usize];
        debug_assert!(st.in_local > 0);
        st.in_local -= 1;
        let seq = st.next_seq;
        if again.is_none() {
            st.next_seq += 1;
        }
        let (node, server) = (st.src_node as usize, st.src_server as usize);
        if !self.order.is_empty() {
            self.order_flow(flows, f);
        }
        self.cells[node] -= 1;
        self.total -= 1;
        self.free_credit(server, 1);
        match again {
            Some(c) => {
                if self.retx.get(&f).is_some_and(|l| l.is_empty()) {
                    self.retx.remove(&f);
                }
                c
            }
            None => pool.alloc(Cell { flow: f, seq }),
        }
    }

    /// A cell of a flow between live nodes was lost at a failed node: its
    /// source sends it again (back into LOCAL, through request/grant). The
    /// source learns of the loss at once — the paper's fast, datacenter-wide
    /// failure notification (§4.4); a transport timeout would add delay.
    pub fn retransmit(&mut self, flows: &mut [FlowState], pool: &mut Pool<Cell>, cell: u32) {
        let f = pool[cell].flow;
        let server = flows[f as usize].src_server as usize;
        let list = self.retx.entry(f).or_insert(List::EMPTY);
        pool.push_back(list, cell);
        self.add(flows, f, 1);
        self.server_cells[server] += 1;
        self.cells_retransmitted += 1;
    }

    /// Node `s`'s flows with cells not yet requested, towards live
    /// destinations, into `out` (request/grant draws its requests from
    /// them); flows whose LOCAL emptied leave the list.
    pub fn requestable(
        &mut self,
        s: usize,
        flows: &mut [FlowState],
        failed: &[bool],
        out: &mut Vec<FlowCells>,
    ) {
        out.clear();
        let left = &mut self.left_done;
        self.flows[s].retain(|&f| {
            let st = &mut flows[f as usize];
            if st.in_local == 0 {
                leave_list(st, f, left);
                return false;
            }
            let free = st.in_local - st.requested;
            if free > 0 && !failed[st.dst_node as usize] {
                out.push(FlowCells {
                    flow: f,
                    dst: st.dst_node,
                    cells: free as u64,
                });
            }
            true
        });
    }

    /// Whether node `s` has flows listed in LOCAL.
    #[inline]
    pub fn has_flows(&self, s: usize) -> bool {
        !self.flows[s].is_empty()
    }

    /// Destination `x` failed: node `s` gives up its LOCAL cells for `x`
    /// (those with a request out are given up when its answer comes back).
    pub fn give_up_for(
        &mut self,
        s: usize,
        x: usize,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        for k in 0..self.flows[s].len() {
            let f = self.flows[s][k];
            let st = &flows[f as usize];
            if st.dst_node as usize == x && st.in_local > st.requested {
                let c = st.in_local - st.requested;
                self.discard(flows, pool, f, c);
            }
        }
    }

    /// Picks the LOCAL cell node `s` sends via `x` in SIRIUS (IDEAL): of the
    /// flows whose destination is `x` or has room at `x` (m below `q`), the
    /// first round-robin; with source priority queues, one whose next cell
    /// has the highest priority (fewest bytes of the flow sent), round-robin
    /// among equals.
    pub fn ideal_pick(
        &mut self,
        flows: &mut [FlowState],
        s: usize,
        x: usize,
        queues: &Queues,
        failed: &[bool],
        q: u32,
    ) -> Option<u32> {
        if !self.prio_cuts.is_empty() && !self.order.is_empty() {
            // Every flow may go via x: the same pick without the scan.
            let left = &mut self.left_done;
            return self.order[s].pick(&mut |m| moved(flows, left, m));
        }
        let eligible = Eligible {
            x,
            queues,
            failed,
            q,
        };
        let (cell, cuts) = (self.cell_bytes, &self.prio_cuts);
        pick_lowest(
            &mut self.flows[s],
            flows,
            &mut self.left_done,
            &eligible,
            |st| {
                if cuts.is_empty() {
                    return 0;
                }
                let sent = st.next_seq as u64 * cell;
                cuts.partition_point(|&c| c <= sent)
            },
        )
    }

    /// Cells waiting to be sent again.
    pub fn to_resend(&self) -> usize {
        self.retx.values().map(|l| l.len()).sum()
    }

    /// The running totals, and the ordered pick's positions and keys,
    /// against the flows.
    pub fn check(&self, flows: &[FlowState]) -> Result<(), String> {
        let local: u64 = self.cells.iter().sum();
        if local != self.total {
            return Err(format!(
                "sirius: nodes hold {local} LOCAL cells but the running total says {}",
                self.total
            ));
        }
        for (s, o) in self.order.iter().enumerate() {
            let mut cells = 0;
            for (p, f, key) in o.iter() {
                let st = &flows[f as usize];
                if st.src_node as usize != s
                    || !st.on_local_list
                    || st.local_pos != p
                    || key != self.order_key(flows, f)
                {
                    return Err(format!(
                        "sirius: flow {f} at position {p} of node {s}'s LOCAL order with key {key} is from node {}, at {} (listed: {}), key {}",
                        st.src_node, st.local_pos, st.on_local_list, self.order_key(flows, f)
                    ));
                }
                cells += st.in_local as u64;
            }
            if cells != self.cells[s] {
                return Err(format!(
                    "sirius: node {s}'s LOCAL order holds {cells} cells but LOCAL counts {}",
                    self.cells[s]
                ));
            }
        }
        Ok(())
    }

    /// Test-only: whether the O(log n) pick applies, and turning it off
    /// (the plain scan).
    #[cfg(test)]
    pub fn ordered(&self) -> bool {
        !self.order.is_empty()
    }
    #[cfg(test)]
    pub fn unorder(&mut self) {
        self.order.clear();
    }
    /// Test-only: the most flows any node has on its LOCAL order.
    #[cfg(test)]
    pub fn most_ordered(&self) -> usize {
        self.order.iter().map(|o| o.len()).max().unwrap_or(0)
    }
}

/// Which LOCAL flows may go via `x` in SIRIUS (IDEAL): those whose
/// destination is `x`, or is live with room at `x` (m below `q`).
struct Eligible<'a> {
    x: usize,
    queues: &'a Queues,
    failed: &'a [bool],
    q: u32,
}

impl Eligible<'_> {
    #[inline]
    fn allows(&self, st: &FlowState) -> bool {
        let d = st.dst_node as usize;
        !self.failed[d] && (d == self.x || self.queues.occ(self.x, d) < self.q)
    }
}

/// Walks a node's LOCAL flows `list` in round-robin order, dropping those
/// whose LOCAL has emptied, and picks the first eligible flow of the lowest
/// `rank` (stopping at a rank 0); the picked flow goes to the back of the
/// round.
fn pick_lowest(
    list: &mut Vec<u32>,
    flows: &mut [FlowState],
    left_done: &mut Vec<u32>,
    eligible: &Eligible,
    rank: impl Fn(&FlowState) -> usize,
) -> Option<u32> {
    let mut best: Option<(usize, usize)> = None; // (rank, position)
    let mut k = 0;
    while let Some(&f) = list.get(k) {
        let st = &mut flows[f as usize];
        if st.in_local == 0 {
            // LOCAL emptied: the flow leaves the round.
            leave_list(st, f, left_done);
            list.swap_remove(k);
            continue;
        }
        k += 1;
        if !eligible.allows(st) {
            continue;
        }
        let r = rank(st);
        if best.is_some_and(|(b, _)| b <= r) {
            continue;
        }
        best = Some((r, k - 1));
        if r == 0 {
            break;
        }
    }
    let (_, k) = best?;
    list[k..].rotate_left(1);
    list.last().copied()
}

/// Records a move in the [`LocalOrder`] in the flow's state.
fn moved(flows: &mut [FlowState], left_done: &mut Vec<u32>, m: Moved) {
    match m {
        Moved::At(g, p) => {
            let st = &mut flows[g as usize];
            st.local_pos = p;
            st.on_local_list = true;
        }
        Moved::Out(g) => leave_list(&mut flows[g as usize], g, left_done),
    }
}

/// Flow `f` leaves its node's LOCAL list; a completed one's slot is free
/// from now on (the list was the last thing that named it).
#[inline]
fn leave_list(st: &mut FlowState, f: u32, left_done: &mut Vec<u32>) {
    st.on_local_list = false;
    if st.done {
        free_slot(f, left_done);
    }
}

#[cold]
#[inline(never)]
fn free_slot(f: u32, left_done: &mut Vec<u32>) {
    left_done.push(f);
}

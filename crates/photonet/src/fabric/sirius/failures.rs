//! Node failures (§4.4), applied at an epoch boundary.
//!
//! Cells of flows between live nodes that the failed node held as
//! intermediate, or that reach it afterwards, are sent again by their
//! source (back into LOCAL with their sequence numbers, through
//! request/grant): such flows finish. First-hop cells granted via the failed
//! node go back to LOCAL too. Cells of flows with a failed end are stuck
//! (counted where they are) or, still in LOCAL, given up. With
//! `reschedule_on_failure` the schedule is rebuilt over the survivors.

use super::local::Local;
use super::nodes::Nodes;
use super::queues::Queues;
use super::{Cell, FlowState};
use crate::pool::Pool;
use crate::units::SimTime;

pub(super) struct Failures {
    /// Failures still to come, latest first (popped from the back).
    pending: Vec<(SimTime, u32)>,
    reschedule: bool,
    /// The most slots per epoch a rebuilt schedule may have.
    max_ports: usize,
    /// Cells that can never move (at or for failed nodes), excluded from "busy".
    frozen_cells: u64,
    /// Cells that reached a node after it failed (gone from every queue).
    pub lost_at_failed: u64,
    /// Cells queued (or arriving) at live nodes for failed destinations.
    pub for_failed_dest: u64,
}

impl Failures {
    pub fn new(mut pending: Vec<(SimTime, u32)>, reschedule: bool, max_ports: usize) -> Failures {
        pending.sort();
        pending.reverse(); // pop from the back in time order
        Failures {
            pending,
            reschedule,
            max_ports,
            frozen_cells: 0,
            lost_at_failed: 0,
            for_failed_dest: 0,
        }
    }

    /// Failures still to come.
    #[inline]
    pub fn any_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Cells that can never move (running total).
    #[inline]
    pub fn frozen(&self) -> u64 {
        self.frozen_cells
    }

    /// A cell reached live node `x` for failed destination: it can never move.
    #[inline]
    pub fn stuck_for_failed_dest(&mut self) {
        self.frozen_cells += 1;
        self.for_failed_dest += 1;
    }

    /// Applies the failures due by `now` (slot `t`, an epoch boundary).
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        now: SimTime,
        t: u64,
        nodes: &mut Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        let mut changed = false;
        while let Some(&(at, node)) = self.pending.last() {
            if at > now {
                break;
            }
            self.pending.pop();
            let x = node as usize;
            if !nodes.fail(x) {
                continue;
            }
            changed = true;
            let n = nodes.count();
            let failed = nodes.failed();
            let mut cells = Vec::new();
            // Cells of live flows that x held as their intermediate are lost
            // with it: their sources send them again.
            for d in 0..n {
                if d == x || failed[d] {
                    continue;
                }
                let live = |c: &Cell| live_flow(flows, failed, c.flow);
                queues.drain(pool, false, x, d, live, &mut cells);
                for &c in &cells {
                    local.retransmit(flows, pool, c);
                }
            }
            for s in 0..n {
                if s == x || nodes.is_failed(s) {
                    continue;
                }
                // Second-hop cells for x can never be delivered.
                self.for_failed_dest += queues.fwd_len(s, x) as u64;
                // First-hop cells granted via x go back to LOCAL and are
                // requested again (unless x was their destination too).
                let mut stuck = 0;
                let back = |c: &Cell| {
                    let to_x = flows[c.flow as usize].dst_node as usize == x;
                    stuck += to_x as u64;
                    !to_x
                };
                queues.drain(pool, true, s, x, back, &mut cells);
                self.for_failed_dest += stuck;
                for &c in &cells {
                    local.retransmit(flows, pool, c);
                }
                // LOCAL cells for x are given up (those with a request out are
                // given up when its answer comes back).
                local.give_up_for(s, x, flows, pool);
            }
            self.frozen_cells = frozen_scan(nodes, queues, local);
        }
        if changed && self.reschedule {
            nodes.reschedule(t, self.max_ports);
        }
    }

    /// The running total of frozen cells against the queues.
    pub fn check(&self, nodes: &Nodes, queues: &Queues, local: &Local) -> Result<(), String> {
        let scan = frozen_scan(nodes, queues, local);
        if self.frozen_cells != scan {
            return Err(format!(
                "sirius: {scan} cells can never move but the running total says {}",
                self.frozen_cells
            ));
        }
        Ok(())
    }

    /// Test-only: node `x` fails at `at`.
    #[cfg(test)]
    pub fn schedule(&mut self, at: SimTime, x: u32) {
        self.pending = vec![(at, x)];
    }
}

/// Both ends of flow `f` are up.
#[inline]
pub(super) fn live_flow(flows: &[FlowState], failed: &[bool], f: u32) -> bool {
    let st = &flows[f as usize];
    !failed[st.src_node as usize] && !failed[st.dst_node as usize]
}

/// Cells that can never move, counted from the queues: everything held
/// at a failed node, and cells at live nodes for failed destinations.
fn frozen_scan(nodes: &Nodes, queues: &Queues, local: &Local) -> u64 {
    let n = nodes.count();
    let failed = nodes.failed();
    let mut frozen = 0;
    for x in (0..n).filter(|&x| failed[x]) {
        frozen += queues.at_node(x) as u64 + local.cells(x);
        for s in (0..n).filter(|&s| !failed[s]) {
            frozen += queues.held_for(s, x) as u64;
        }
    }
    frozen
}

//! Sirius's statistics: where every pushed cell is, and the rows the
//! fabric reports (each part keeps its own counters).

use super::queues::Queues;
use super::Sirius;
use crate::fabric::FabricStats;

/// A node's queues split by hop, for Fig. 10c's "aggregate queue occupancy
/// per ToR" read two ways: the second-hop queues alone (the per-destination
/// queues that Q bounds, §4.3) or with the granted first-hop cells (the
/// node's total, `peak_node_queue_cells`). Only the second-hop count is kept
/// per node: the first-hop count is the node's total minus it.
#[derive(Default)]
pub(super) struct HopPeaks {
    second_hop: Vec<u32>,
    pub peak_second_hop_cells: u32,
    pub peak_first_hop_cells: u32,
}

impl HopPeaks {
    pub fn new(n: usize) -> HopPeaks {
        HopPeaks {
            second_hop: vec![0; n],
            ..HopPeaks::default()
        }
    }

    /// A cell joined one of `node`'s second-hop queues.
    #[inline]
    pub fn second_hop_in(&mut self, node: usize) {
        let c = &mut self.second_hop[node];
        *c += 1;
        self.peak_second_hop_cells = self.peak_second_hop_cells.max(*c);
    }

    /// `cells` cells left `node`'s second-hop queues.
    #[inline]
    pub fn second_hop_out(&mut self, node: usize, cells: u32) {
        self.second_hop[node] -= cells;
    }

    /// A cell joined one of `node`'s first-hop (virtual) queues; the node now
    /// queues `node_total` cells of both hops.
    #[inline]
    pub fn first_hop_in(&mut self, node: usize, node_total: u32) {
        let first = node_total - self.second_hop[node];
        self.peak_first_hop_cells = self.peak_first_hop_cells.max(first);
    }

    /// The per-node second-hop counts against the queues themselves.
    pub fn check(&self, q: &Queues) -> Result<(), String> {
        let n = self.second_hop.len();
        for (i, &counted) in self.second_hop.iter().enumerate() {
            let held: usize = (0..n).map(|d| q.fwd_len(i, d)).sum();
            if held != counted as usize {
                return Err(format!(
                    "sirius: node {i} holds {held} second-hop cells but counts {counted}"
                ));
            }
        }
        Ok(())
    }
}

/// Where the cells are ([`cell_partition`]); the fields sum to the cells
/// pushed.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
pub(super) struct CellPartition {
    pub delivered: u64,
    /// In LOCAL at live nodes.
    pub in_local: u64,
    /// Queued at live nodes for live destinations.
    pub queued: u64,
    pub in_flight: u64,
    /// At live ToRs, waiting for a server downlink.
    pub at_downlinks: u64,
    /// Held at a failed node (queues, LOCAL, downlinks) or lost arriving at
    /// one (cells of flows with a failed end, which nobody sends again).
    pub stuck_at_failed_nodes: u64,
    /// Queued at live nodes for failed destinations.
    pub stuck_for_failed_destinations: u64,
    /// Given up in LOCAL by their source when the destination failed.
    pub given_up: u64,
}

impl CellPartition {
    pub fn total(&self) -> u64 {
        self.delivered
            + self.in_local
            + self.queued
            + self.in_flight
            + self.at_downlinks
            + self.stuck_at_failed_nodes
            + self.stuck_for_failed_destinations
            + self.given_up
    }
}

/// Where every cell pushed to a ToR (or, server-based, handed to the NIC)
/// is, one place each; counted from the queues, not the running totals.
pub(super) fn cell_partition(f: &Sirius) -> CellPartition {
    let n = f.layout.nodes;
    let failed = f.nodes.failed();
    let mut p = CellPartition {
        delivered: f.edge.cells_delivered,
        in_flight: f.wire.counted(),
        stuck_at_failed_nodes: f.failures.lost_at_failed,
        given_up: f.local.discarded_for_failed_dest,
        ..CellPartition::default()
    };
    for x in 0..n {
        let held = f.queues.at_node(x) as u64;
        let local = f.local.cells(x);
        let down = f.edge.at_downlinks(x);
        if failed[x] {
            p.stuck_at_failed_nodes += held + local + down;
            continue;
        }
        let for_failed: u64 = (0..n)
            .filter(|&d| failed[d])
            .map(|d| f.queues.held_for(x, d) as u64)
            .sum();
        p.stuck_for_failed_destinations += for_failed;
        p.queued += held - for_failed;
        p.in_local += local;
        p.at_downlinks += down;
    }
    p
}

pub(super) fn stats(f: &Sirius) -> FabricStats {
    let l = &f.layout;
    let (e, q, lo, fl) = (&f.edge, &f.queues, &f.local, &f.failures);
    let cb = l.cell_bytes as f64;
    let at = cell_partition(f);
    let mut rows: Vec<(&str, f64)> = vec![
        ("uplinks", l.uplinks as f64),
        ("ports", l.ports as f64),
        ("dark_nodes", (l.uplinks * l.ports - l.nodes) as f64),
        ("cell_bytes", cb),
        ("slot_ns", l.slot.0 as f64 / 1e3),
        ("epoch_ns", (l.slot.0 * l.ports as u64) as f64 / 1e3),
        ("slots_simulated", f.slots as f64),
        ("cells_pushed", e.cells_pushed as f64),
        ("cells_sent", f.wire.cells_sent as f64),
        ("cells_forwarded", q.cells_forwarded as f64),
        ("cells_delivered", e.cells_delivered as f64),
        ("cells_out_of_order", e.cells_out_of_order as f64),
        ("peak_reorder_bytes", e.peak_reorder_bytes as f64),
        (
            "peak_server_reorder_bytes",
            e.peak_server_reorder_cells as f64 * cb,
        ),
        ("peak_node_queue_bytes", q.peak_node_queue_cells as f64 * cb),
        (
            "peak_second_hop_queue_bytes",
            q.hops.peak_second_hop_cells as f64 * cb,
        ),
        (
            "peak_first_hop_queue_bytes",
            q.hops.peak_first_hop_cells as f64 * cb,
        ),
        ("peak_dest_queue_cells", q.peak_dest_queue_cells as f64),
        ("peak_local_bytes", lo.peak_local_cells as f64 * cb),
        (
            "peak_downlink_queue_bytes",
            e.peak_downlink_cells as f64 * cb,
        ),
        // Where the pushed cells are at the end: these eight sum to
        // cells_pushed exactly (cells_delivered above is the first).
        ("cells_in_local", at.in_local as f64),
        ("cells_queued", at.queued as f64),
        ("cells_in_flight", at.in_flight as f64),
        ("cells_at_downlinks", at.at_downlinks as f64),
        (
            "cells_stuck_at_failed_nodes",
            at.stuck_at_failed_nodes as f64,
        ),
        (
            "cells_stuck_for_failed_destinations",
            at.stuck_for_failed_destinations as f64,
        ),
        ("cells_given_up_for_failed_destinations", at.given_up as f64),
        ("failed_nodes", f.nodes.failed_count() as f64),
        ("cells_for_failed_destinations", fl.for_failed_dest as f64),
        ("cells_retransmitted", lo.cells_retransmitted as f64),
    ];
    if !f.ideal {
        rows.push(("requests", f.rg.requests as f64));
        rows.push(("grants", f.rg.grants as f64));
    }
    if f.check {
        rows.push((
            "contention_violations",
            f.nodes.contention_violations as f64,
        ));
    }
    rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::Cell;
    use super::*;
    use crate::pool::Pool;

    #[test]
    fn hop_peaks_follow_a_hand_worked_sequence() {
        // Node 0 takes two second-hop cells (peak 2), then a granted one with
        // 3 queued in all (first hop 1); the second hop drains, and two more
        // granted cells make 2 of 2 first-hop (peak 2). Node 1 reaches 3
        // second-hop cells, the peak of that hop.
        let mut h = HopPeaks::new(2);
        h.second_hop_in(0);
        h.second_hop_in(0);
        h.first_hop_in(0, 3);
        assert_eq!((h.peak_second_hop_cells, h.peak_first_hop_cells), (2, 1));
        h.second_hop_out(0, 2);
        h.first_hop_in(0, 2);
        for _ in 0..3 {
            h.second_hop_in(1);
        }
        assert_eq!((h.peak_second_hop_cells, h.peak_first_hop_cells), (3, 2));
        assert_eq!(h.second_hop, vec![0, 3]);
    }

    #[test]
    fn the_queues_count_each_hop_apart() {
        // Three nodes; every way a cell enters or leaves a queue, by hand.
        let mut pool: Pool<Cell> = Pool::new();
        let mut q = Queues::new(3, false);
        let mut cell = |k: u32| pool.alloc(Cell { flow: 0, seq: k });
        let c: Vec<u32> = (0..9).map(&mut cell).collect();
        // Node 1: second hop for 2 and 0, then granted via 2 and via 0.
        for d in [2, 0] {
            q.reserve(1, d);
        }
        q.enqueue_fwd(&mut pool, 1, 2, c[0]);
        q.enqueue_fwd(&mut pool, 1, 0, c[1]);
        q.enqueue_vq(&mut pool, 1, 2, c[2]);
        q.enqueue_vq(&mut pool, 1, 0, c[3]);
        // 4 queued at node 1: 2 of each hop.
        assert_eq!(q.peak_node_queue_cells, 4);
        assert_eq!(
            (q.hops.peak_second_hop_cells, q.hops.peak_first_hop_cells),
            (2, 2)
        );
        // Link 1 -> 2 sends both its cells; a new grant via 2 makes 2
        // first-hop of 3 queued again (no new peak).
        assert_eq!(q.pop_second_hop(&mut pool, 1, 2), c[0]);
        assert_eq!(q.pop_first_hop(&mut pool, 1, 2), Some(c[2]));
        q.enqueue_vq(&mut pool, 1, 2, c[4]);
        assert_eq!(q.hops.peak_first_hop_cells, 2);
        // Node 0: three second-hop cells (the new peak), two of them for 2
        // drained by a failure, then one more: 2 held, no new peak.
        for (d, k) in [(2, 5), (1, 6), (2, 7)] {
            q.reserve(0, d);
            q.enqueue_fwd(&mut pool, 0, d, c[k]);
        }
        let mut out = Vec::new();
        q.drain(&mut pool, false, 0, 2, |_| true, &mut out);
        assert_eq!(out, vec![c[5], c[7]]);
        q.enqueue_fwd(&mut pool, 0, 2, c[8]);
        assert_eq!(
            (q.hops.peak_second_hop_cells, q.hops.peak_first_hop_cells),
            (3, 2)
        );
        assert_eq!(q.peak_node_queue_cells, 4);
        q.hops.check(&q).unwrap();
        // A count that drifts from the queues is caught.
        q.hops.second_hop_in(2);
        let e = q.hops.check(&q).unwrap_err();
        assert!(
            e.contains("node 2 holds 0 second-hop cells but counts 1"),
            "{e}"
        );
    }
}

//! Sirius's statistics: where every pushed cell is, and the rows the
//! fabric reports (each part keeps its own counters).

use super::Sirius;
use crate::fabric::FabricStats;

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

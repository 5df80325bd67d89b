//! Sirius's statistics: the slot loop's counters, where every pushed cell
//! is, and the rows the fabric reports.

use super::Sirius;
use crate::fabric::FabricStats;

/// Counters reported in `stats()`.
#[derive(Default, Clone)]
pub(super) struct Counters {
    pub cells_pushed: u64,
    pub cells_delivered: u64,
    pub cells_out_of_order: u64,
    pub cells_sent: u64,
    pub cells_forwarded: u64,
    pub requests: u64,
    pub grants: u64,
    pub slots: u64,
    pub peak_node_queue_cells: u32,
    pub peak_dest_queue_cells: u32,
    pub peak_local_cells: u64,
    pub peak_reorder_bytes: u64,
    pub peak_downlink_cells: usize,
    /// Cells that reached a node after it failed (gone from every queue).
    pub lost_at_failed: u64,
    pub for_failed_dest: u64,
    /// LOCAL cells whose destination failed, given up by their source.
    pub discarded_for_failed_dest: u64,
    pub contention_violations: u64,
    /// Cells that reached their server twice (never, in Sirius).
    pub duplicate_cells: u64,
    /// Cells of flows between live nodes lost at a failed node (held there
    /// when it failed, or arriving after) and sent again by their source, and
    /// first-hop cells granted via a node that failed before they left.
    pub cells_retransmitted: u64,
}

/// Where the cells are ([`Sirius::cell_partition`]); the fields sum to the
/// cells pushed.
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

pub(super) fn stats(f: &Sirius) -> FabricStats {
    let (l, c) = (&f.layout, &f.c);
    let cb = l.cell_bytes as f64;
    let failed = f.failed.iter().filter(|&&f| f).count();
    let at = f.cell_partition();
    let mut rows: Vec<(&str, f64)> = vec![
        ("uplinks", l.uplinks as f64),
        ("ports", l.ports as f64),
        ("dark_nodes", (l.uplinks * l.ports - l.nodes) as f64),
        ("cell_bytes", cb),
        ("slot_ns", l.slot.0 as f64 / 1e3),
        ("epoch_ns", (l.slot.0 * l.ports as u64) as f64 / 1e3),
        ("slots_simulated", c.slots as f64),
        ("cells_pushed", c.cells_pushed as f64),
        ("cells_sent", c.cells_sent as f64),
        ("cells_forwarded", c.cells_forwarded as f64),
        ("cells_delivered", c.cells_delivered as f64),
        ("cells_out_of_order", c.cells_out_of_order as f64),
        ("peak_reorder_bytes", c.peak_reorder_bytes as f64),
        ("peak_node_queue_bytes", c.peak_node_queue_cells as f64 * cb),
        ("peak_dest_queue_cells", c.peak_dest_queue_cells as f64),
        ("peak_local_bytes", c.peak_local_cells as f64 * cb),
        (
            "peak_downlink_queue_bytes",
            c.peak_downlink_cells as f64 * cb,
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
        ("failed_nodes", failed as f64),
        ("cells_for_failed_destinations", c.for_failed_dest as f64),
        ("cells_retransmitted", c.cells_retransmitted as f64),
    ];
    if !f.ideal {
        rows.push(("requests", c.requests as f64));
        rows.push(("grants", c.grants as f64));
    }
    if f.check {
        rows.push(("contention_violations", c.contention_violations as f64));
    }
    rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

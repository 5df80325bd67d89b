//! Baldur's counters and the statistics a run reports from them.

use super::params::Layout;
use crate::fabric::FabricStats;

/// Packet counts, kept by the run loop (`mod.rs`) as packets are sent,
/// dropped and arrive; `in_flight` and `pending_tx` are also checked by
/// `check_invariants`.
#[derive(Clone, Debug, Default)]
pub(super) struct Counters {
    /// `TxFree` events pending.
    pub(super) pending_tx: u64,
    /// Packets injected whose arrival (or drop) has not been taken.
    pub(super) in_flight: u64,
    pub(super) data_sent: u64,
    pub(super) data_first: u64,
    pub(super) retransmissions: u64,
    pub(super) timeouts: u64,
    pub(super) data_dropped: u64,
    pub(super) acks_sent: u64,
    pub(super) acks_dropped: u64,
    pub(super) data_arrived: u64,
    pub(super) acks_arrived: u64,
    pub(super) duplicates: u64,
    pub(super) drops_by_stage: Vec<u64>,
}

impl Counters {
    pub(super) fn new(stages: u32) -> Counters {
        Counters {
            drops_by_stage: vec![0; stages as usize],
            ..Counters::default()
        }
    }

    /// The run's statistics: these counts, the layout's shape, each node's
    /// peak retransmission-buffer bytes (`peaks`), its peak backlog (bytes
    /// waiting to be sent plus un-ACKed, `backlog`) and the most
    /// outstanding packets held at once (`high_water`).
    pub(super) fn stats(
        &self,
        l: &Layout,
        peaks: &[u64],
        backlog: &[u64],
        high_water: usize,
    ) -> FabricStats {
        let injected = self.data_sent + self.acks_sent;
        let dropped = self.data_dropped + self.acks_dropped;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let mut v: Vec<(String, f64)> = vec![
            ("multiplicity".into(), l.m as f64),
            ("stages".into(), l.stages as f64),
            ("packets_sent".into(), self.data_first as f64),
            ("data_transmissions".into(), self.data_sent as f64),
            ("retransmissions".into(), self.retransmissions as f64),
            ("timeouts".into(), self.timeouts as f64),
            ("data_dropped".into(), self.data_dropped as f64),
            ("acks_sent".into(), self.acks_sent as f64),
            ("acks_dropped".into(), self.acks_dropped as f64),
            ("duplicates_received".into(), self.duplicates as f64),
            ("drop_rate".into(), ratio(dropped, injected)),
            (
                "data_drop_rate".into(),
                ratio(self.data_dropped, self.data_sent),
            ),
            (
                "ack_drop_rate".into(),
                ratio(self.acks_dropped, self.acks_sent),
            ),
            (
                "retx_buffer_peak_bytes".into(),
                peaks.iter().copied().max().unwrap_or(0) as f64,
            ),
            (
                "retx_buffer_peak_mean_bytes".into(),
                peaks.iter().sum::<u64>() as f64 / peaks.len().max(1) as f64,
            ),
            (
                "backlog_peak_bytes".into(),
                backlog.iter().copied().max().unwrap_or(0) as f64,
            ),
            ("outstanding_slots_high_water".into(), high_water as f64),
        ];
        for (s, &d) in self.drops_by_stage.iter().enumerate() {
            v.push((format!("drops_stage_{s}"), d as f64));
        }
        v.into_iter().collect()
    }
}

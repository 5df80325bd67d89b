//! REACToR's statistics: the counters a run keeps and the map it reports.

use crate::fabric::FabricStats;
use crate::units::Rate;

/// What a run counts.
#[derive(Default)]
pub(super) struct Counters {
    pub periods: u64,
    pub configs_total: u64,
    pub circuit_bytes: u64,
    /// Bytes the EPS delivered.
    pub eps_delivered: u64,
    /// Circuit time (up to down) of every configuration, ps.
    pub circuit_time_ps: u128,
    /// Circuit sends outside their window (an invariant: always 0).
    pub night_bytes: u64,
    pub ticks: u64,
}

impl Counters {
    /// The statistics of a run on `n` hosts at `r`, with the EPS network's
    /// own statistics (`reactor`) renamed for the fabric.
    pub fn map(&self, r: Rate, n: usize, eps: Option<FabricStats>) -> FabricStats {
        let mut s: FabricStats = [
            ("periods", self.periods as f64),
            ("configurations", self.configs_total as f64),
            (
                "configurations_per_period",
                self.configs_total as f64 / self.periods.max(1) as f64,
            ),
            ("circuit_bytes", self.circuit_bytes as f64),
            (
                "circuit_utilisation",
                if self.circuit_time_ps > 0 {
                    self.circuit_bytes as f64 * 8.0
                        / (self.circuit_time_ps as f64 * 1e-12 * r.as_f64() * n as f64)
                } else {
                    0.0
                },
            ),
            ("circuit_in_night", self.night_bytes as f64),
            ("ticks", self.ticks as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(net) = eps {
            s.insert("eps_bytes".into(), self.eps_delivered as f64);
            for (k, v) in net {
                let key = match k.as_str() {
                    "pfc_pauses" => "pfc_pauses".to_string(),
                    "drops" => "eps_overflows".to_string(),
                    "peak_queue_bytes.eps_up" => "peak_eps_ingress_bytes".to_string(),
                    "data_packets_delivered"
                    | "pfc_pause_time_us"
                    | "peak_queue_bytes.eps_port"
                    | "peak_queue_bytes.downlink" => format!("eps_{k}"),
                    _ => continue,
                };
                s.insert(key, v);
            }
        }
        s
    }
}

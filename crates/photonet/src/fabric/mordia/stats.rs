//! Mordia's statistics: the counters a run keeps and the map it reports.

use crate::fabric::FabricStats;

/// What a run counts.
#[derive(Default)]
pub(super) struct Counters {
    pub days_run: u64,
    /// Circuit packets sent.
    pub packets: u64,
    /// Packets held for a later day (`straddle = "hold"`).
    pub held: u64,
    /// Packets cut by a night (`straddle = "lose"`) and their bytes on the wire.
    pub lost: u64,
    pub lost_bytes: u64,
    /// Packets that overlapped a night (an invariant: always 0).
    pub sent_in_night: u64,
    pub circuit_bytes: u64,
    /// Bytes the packet switch delivered.
    pub packet_bytes: u64,
    /// Stable and night time of the days that ran (ps).
    pub stable_time: u128,
    pub night_time: u128,
    pub peak_voq_bytes: u64,
    /// Bytes in the probed rack's VOQs at the probed day.
    pub probe: Option<u64>,
    pub weeks_scheduled: u64,
    pub days_dropped: u64,
    pub fallback_weeks: u64,
}

impl Counters {
    /// The statistics of a run (`tms` for the TMS variant; `slot_units`: the
    /// bytes one host sends in a slot at R, the probe's unit).
    pub fn map(&self, tms: bool, slot_units: f64) -> FabricStats {
        let duty = if self.stable_time + self.night_time > 0 {
            self.stable_time as f64 / (self.stable_time + self.night_time) as f64
        } else {
            0.0
        };
        let mut s: FabricStats = [
            ("days", self.days_run as f64),
            ("packets", self.packets as f64),
            ("held_packets", self.held as f64),
            ("packet_switch_bytes", self.packet_bytes as f64),
            (
                "packet_switch_share",
                self.packet_bytes as f64 / (self.packet_bytes + self.circuit_bytes).max(1) as f64,
            ),
            ("lost_packets", self.lost as f64),
            ("lost_bytes_on_wire", self.lost_bytes as f64),
            ("circuit_bytes", self.circuit_bytes as f64),
            ("duty_cycle", duty),
            ("peak_voq_bytes", self.peak_voq_bytes as f64),
            ("packets_in_night", self.sent_in_night as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if tms {
            s.insert("weeks_scheduled".into(), self.weeks_scheduled as f64);
            s.insert("days_dropped".into(), self.days_dropped as f64);
            s.insert("fallback_weeks".into(), self.fallback_weeks as f64);
        }
        if let Some(b) = self.probe {
            s.insert("probe_voq_bytes".into(), b as f64);
            s.insert("probe_voq_units".into(), (b as f64 / slot_units).round());
        } else if !tms {
            // Cold start (day 0) or a day the run never reached with traffic.
            s.insert("probe_voq_bytes".into(), 0.0);
            s.insert("probe_voq_units".into(), 0.0);
        }
        s
    }
}

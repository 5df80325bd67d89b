//! NegotiaToR's statistics: the slot loop's counters and the rows the
//! fabric reports (layout, matching, queues, failures, relay, ToR-to-ToR FCT
//! of mice).

use super::source::Flows;
use super::Negotiator;
use crate::fabric::FabricStats;

/// Counters of the slot loop.
#[derive(Default, Clone, Debug)]
pub(super) struct Counters {
    pub slots: u64,
    pub epochs: u64,
    pub piggyback_bytes: u64,
    pub scheduled_bytes: u64,
    pub matched_port_slots: u64,
    pub used_port_slots: u64,
    pub queue_samples: u64,
    pub queue_sum: f64,
}

/// With invariant checks: the slot each receive port last heard a sender,
/// and how often one heard two in one slot.
pub(super) struct Contention {
    pub check: bool,
    rx_seen: Vec<u64>,
    pub count: u64,
}

impl Contention {
    pub fn new(check: bool, ports: usize) -> Contention {
        Contention {
            check,
            rx_seen: if check { vec![u64::MAX; ports] } else { vec![] },
            count: 0,
        }
    }
    /// Receive port `key` hears a sender in global slot `g`.
    #[inline]
    pub fn heard(&mut self, key: usize, g: u64) {
        if self.rx_seen[key] == g {
            self.count += 1;
        }
        self.rx_seen[key] = g;
    }
}

/// ToR-to-ToR FCT of mice (< `mice_below`) that reached their destination
/// ToR by `end`: (p99 µs, mean µs, count, unfinished).
fn tor_fct_mice(
    flows: &Flows,
    mice_below: u64,
    end: crate::units::SimTime,
) -> (f64, f64, f64, f64) {
    let mut v: Vec<u64> = Vec::new();
    let mut unfinished = 0u64;
    for f in &flows.0 {
        if f.bytes >= mice_below || f.bytes == 0 {
            continue;
        }
        if f.tor_done <= end {
            v.push((f.tor_done - f.start).0);
        } else {
            unfinished += 1;
        }
    }
    if v.is_empty() {
        return (f64::NAN, f64::NAN, 0.0, unfinished as f64);
    }
    v.sort_unstable();
    let p99 = crate::recorder::percentile_sorted(&v, 99.0) as f64 / 1e6;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e6;
    (p99, mean, v.len() as f64, unfinished as f64)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        f64::NAN
    }
}

pub(super) fn stats(f: &Negotiator) -> FabricStats {
    let l = &f.l;
    let c = &f.c;
    let m = f.matching.counters();
    let mut r = f.matching.ratios().to_vec();
    r.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let pct = |p: f64| -> f64 {
        if r.is_empty() {
            return f64::NAN;
        }
        let i = ((p / 100.0) * (r.len() - 1) as f64).round() as usize;
        r[i] as f64
    };
    let mut rows: Vec<(&str, f64)> = vec![
        ("tors", l.n as f64),
        ("ports", l.s as f64),
        ("speedup", l.speedup()),
        ("epoch_ns", l.epoch.0 as f64 / 1e3),
        ("predefined_slots", l.pre_slots as f64),
        ("scheduled_slots", l.sched_slots as f64),
        ("piggyback_payload_bytes", l.pre_payload as f64),
        ("scheduled_payload_bytes", l.sched_payload as f64),
        ("pipeline_step_epochs", l.k as f64),
        ("slots_simulated", c.slots as f64),
        ("epochs_simulated", c.epochs as f64),
        ("requests", m.requests as f64),
        ("grants", m.grants as f64),
        ("accepts", m.accepts as f64),
        ("match_ratio", ratio(m.accepts, m.grants)),
        ("match_ratio_epoch_p5", pct(5.0)),
        ("match_ratio_epoch_p50", pct(50.0)),
        ("match_ratio_epoch_p95", pct(95.0)),
        ("ports_withheld_by_receiver_limit", m.ports_withheld as f64),
        ("piggyback_bytes", c.piggyback_bytes as f64),
        ("scheduled_bytes", c.scheduled_bytes as f64),
        (
            "scheduled_port_slot_use",
            ratio(c.used_port_slots, c.matched_port_slots),
        ),
        ("peak_tor_queue_bytes", f.src.peak_tor_queue as f64),
        (
            "mean_tor_queue_bytes",
            if c.queue_samples > 0 {
                c.queue_sum / c.queue_samples as f64
            } else {
                0.0
            },
        ),
        ("peak_host_queue_bytes", f.edge.peak_bytes() as f64),
        ("requests_lost", m.requests_lost as f64),
        ("grants_lost", m.grants_lost as f64),
        ("packets_lost", f.fail.packets_lost as f64),
        ("bytes_retransmitted", f.fail.bytes_lost as f64),
        ("contention_violations", f.contention.count as f64),
        ("relay_requests", m.relay_requests as f64),
        ("relay_refused_by_intermediate", m.relay_refused as f64),
        ("relay_accepts", m.relay_accepts as f64),
        ("relayed_bytes", f.relay.relayed_bytes as f64),
        ("failure_window_goodput_ratio", f.fail.goodput_ratio()),
    ];
    let (p99, mean, count, unfinished) = tor_fct_mice(&f.flows, f.mice_below, f.time.end);
    rows.push(("tor_fct_mice_p99_us", p99));
    rows.push(("tor_fct_mice_mean_us", mean));
    rows.push(("tor_fct_mice_count", count));
    rows.push(("tor_fct_mice_unfinished", unfinished));
    let mut out: FabricStats = rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    // With relay on: every intermediate's relayed bytes, zeros included.
    let via = f.relay.relayed_via.iter().enumerate();
    out.extend(via.map(|(m, &b)| (format!("relayed_bytes_via_{m}"), b as f64)));
    out
}

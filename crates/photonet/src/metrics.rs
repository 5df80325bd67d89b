//! Flow records, FCT percentiles by size class, goodput, and time series.

use crate::engine::RunOutput;
use crate::units::ByteSize;
use serde::Serialize;
use std::collections::BTreeMap;

/// FCT statistics of one size class, in microseconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FctStats {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// The `p`-th percentile by nearest rank of sorted values (p in (0, 100]).
pub fn percentile_sorted(sorted: &[u64], p: f64) -> u64 {
    assert!(!sorted.is_empty());
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn fct_stats(mut v: Vec<u64>) -> Option<FctStats> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let us = |ps: u64| ps as f64 / 1e6;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e6;
    Some(FctStats {
        count: v.len() as u64,
        mean_us: mean,
        p50_us: us(percentile_sorted(&v, 50.0)),
        p90_us: us(percentile_sorted(&v, 90.0)),
        p99_us: us(percentile_sorted(&v, 99.0)),
        p999_us: us(percentile_sorted(&v, 99.9)),
        max_us: us(*v.last().expect("non-empty")),
    })
}

/// What a run measured, as written to `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub fabric: String,
    pub hosts: usize,
    pub host_rate_bps: u64,
    pub flows: u64,
    pub completed: u64,
    pub unfinished: u64,
    pub sim_time_us: f64,
    pub offered_bytes: u64,
    pub delivered_bytes: u64,
    /// Offered load measured from the generated flows: bytes / (T · N · R).
    pub offered_load: f64,
    /// Bytes delivered during the run / (T · N · R).
    pub goodput: f64,
    /// FCT statistics per size class (`all`, `<10KB`, …, `>=100KB`), completed flows only.
    pub fct: BTreeMap<String, FctStats>,
    pub events: u64,
    pub fabric_stats: BTreeMap<String, f64>,
    pub invariant_violations: Vec<String>,
}

/// Size-class label for flows smaller than `cut`.
pub fn class_below(cut: u64) -> String {
    format!("<{}", ByteSize(cut))
}

/// Summarises a run. Classes are cumulative (`<100KB` includes `<10KB`), plus
/// `all` and `>=` the largest cut-off.
pub fn summarise(
    out: &RunOutput,
    fabric: &str,
    hosts: usize,
    host_rate_bps: u64,
    cuts: &[u64],
    fabric_stats: BTreeMap<String, f64>,
) -> Summary {
    let s = &out.recorder;
    let mut classes: Vec<(String, Vec<u64>)> = vec![("all".into(), Vec::new())];
    for &c in cuts {
        classes.push((class_below(c), Vec::new()));
    }
    let top = cuts.iter().copied().max();
    if let Some(t) = top {
        classes.push((format!(">={}", ByteSize(t)), Vec::new()));
    }
    for f in &out.flows {
        let Some(fin) = s.finish(f.id) else {
            continue;
        };
        let fct = fin.0 - f.start.0;
        classes[0].1.push(fct);
        for (i, &c) in cuts.iter().enumerate() {
            if f.bytes < c {
                classes[i + 1].1.push(fct);
            }
        }
        if top.is_some_and(|t| f.bytes >= t) {
            classes.last_mut().expect("has top").1.push(fct);
        }
    }
    let fct = classes
        .into_iter()
        .filter_map(|(k, v)| fct_stats(v).map(|st| (k, st)))
        .collect();
    let offered: u64 = out.flows.iter().map(|f| f.bytes).sum();
    let delivered: u64 = s.delivered_total();
    let t = out.end_time.as_secs_f64();
    let cap = t * host_rate_bps as f64 * hosts as f64;
    let norm = |bytes: u64| {
        if cap > 0.0 {
            bytes as f64 * 8.0 / cap
        } else {
            0.0
        }
    };
    Summary {
        fabric: fabric.to_string(),
        hosts,
        host_rate_bps,
        flows: out.flows.len() as u64,
        completed: s.completed(),
        unfinished: out.flows.len() as u64 - s.completed(),
        sim_time_us: out.end_time.as_us_f64(),
        offered_bytes: offered,
        delivered_bytes: delivered,
        offered_load: norm(offered),
        goodput: norm(delivered),
        fct,
        events: out.events,
        fabric_stats,
        invariant_violations: s.violations().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 99.0), 99);
        assert_eq!(percentile_sorted(&v, 50.0), 50);
        assert_eq!(percentile_sorted(&v, 100.0), 100);
        assert_eq!(percentile_sorted(&[7], 99.9), 7);
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile_sorted(&v, 99.0), 10);
        assert_eq!(percentile_sorted(&v, 10.0), 1);
    }
}

//! Run summaries: FCT percentiles by size class (completed flows, plus a
//! censored variant that counts unfinished flows at their elapsed time),
//! goodput over the whole run and over a steady-state window, per-flow
//! throughput of large flows, and how the load was set.

use crate::engine::RunOutput;
use crate::recorder::FlowRecords;
use crate::units::{ByteSize, SimTime};
use crate::workload::{LoadBasis, LoadInfo};
use serde::Serialize;
use std::collections::BTreeMap;

/// FCT statistics of one size class, in microseconds.
///
/// `count` flows of the class completed; `unfinished` did not by the end of
/// the run (none when the run drains). `mean_us` … `max_us` are over completed
/// flows only, so when flows are unfinished they flatter the fabric; the
/// `censored_*` statistics count every unfinished flow at its elapsed time
/// (end of run − start), a lower bound on its FCT, so they are lower bounds on
/// the true statistics. With nothing unfinished both variants are equal.
/// Statistics of an empty set are NaN (`null` in JSON).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FctStats {
    pub count: u64,
    pub unfinished: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub censored_mean_us: f64,
    pub censored_p50_us: f64,
    pub censored_p90_us: f64,
    pub censored_p99_us: f64,
    pub censored_p999_us: f64,
}

pub use crate::recorder::{nearest_rank, percentile_sorted};

#[derive(Clone, Copy)]
struct Dist {
    mean: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

/// A picosecond count as the FCT scratch holds it: u32 when every value of
/// the run fits (half the memory), else u64. The statistics only depend on
/// the values, not on their width.
trait Ps: Copy + Ord + Into<u64> + TryFrom<u64> {}
impl Ps for u32 {}
impl Ps for u64 {}

/// Statistics of `v` (picoseconds) in microseconds; NaN when empty.
fn dist_us<T: Ps>(v: &mut [T]) -> Dist {
    if v.is_empty() {
        let n = f64::NAN;
        return Dist {
            mean: n,
            p50: n,
            p90: n,
            p99: n,
            p999: n,
            max: n,
        };
    }
    let us = |ps: T| ps.into() as f64 / 1e6;
    // The mean is the f64 sum in sorted order, as it always was. While the
    // exact sum stays below 2^53 every partial f64 sum is an exact integer,
    // whatever the order: then the integer sum is that value, and only the
    // ranks are needed (selection, O(n), instead of a sort of millions).
    let exact: u128 = v.iter().map(|&x| x.into() as u128).sum();
    let ranks = [50.0, 90.0, 99.0, 99.9].map(|p| nearest_rank(v.len(), p));
    let (sum, p, max) = if exact < 1u128 << 53 {
        let p = select_ranks(v, ranks);
        // Everything above the top rank is at least its value.
        let max = v[ranks[3]..].iter().copied().max().unwrap_or(p[3]);
        (exact as f64, p, max)
    } else {
        v.sort_unstable();
        let sum = v.iter().map(|&x| x.into() as f64).sum::<f64>();
        (sum, ranks.map(|r| v[r - 1]), v[v.len() - 1])
    };
    Dist {
        mean: sum / v.len() as f64 / 1e6,
        p50: us(p[0]),
        p90: us(p[1]),
        p99: us(p[2]),
        p999: us(p[3]),
        max: us(max),
    }
}

/// The values of non-decreasing 1-based `ranks` of `v`, as a sort would put
/// them (`sorted[r - 1]`), by successive selections on what lies above the
/// previous rank. Leaves `v` partitioned at each rank.
fn select_ranks<T: Ps, const K: usize>(v: &mut [T], ranks: [usize; K]) -> [T; K] {
    let mut out = [v[0]; K];
    let mut lo = 0;
    for (o, &r) in out.iter_mut().zip(&ranks) {
        let i = r - 1;
        if i < lo {
            // A repeated rank: the value is already in place.
            *o = v[i];
            continue;
        }
        let (_, x, _) = v[lo..].select_nth_unstable(i - lo);
        *o = *x;
        lo = i + 1;
    }
    out
}

/// The FCT statistics of the flows whose size `pick` accepts (None if
/// there are none): completed flows' FCTs, then unfinished flows' elapsed
/// times (`end` − start), gathered in `scratch` (one buffer for every class
/// of a run).
fn class_stats<T: Ps>(
    r: &FlowRecords,
    end: u64,
    pick: impl Fn(u64) -> bool,
    scratch: &mut Vec<T>,
) -> Option<FctStats> {
    let narrow = |x: u64| match T::try_from(x) {
        Ok(v) => v,
        Err(_) => unreachable!("the scratch is wide enough for every value"),
    };
    scratch.clear();
    let flows = || r.bytes.iter().zip(&r.start_ps).zip(&r.finish_ps);
    let mut left = 0usize;
    for ((&b, &s), &f) in flows() {
        if pick(b) {
            if f != FlowRecords::UNFINISHED {
                scratch.push(narrow(f - s));
            } else {
                left += 1;
            }
        }
    }
    let count = scratch.len();
    // The unfinished flows' elapsed times after the FCTs (a second pass only
    // when there are some).
    if left > 0 {
        for ((&b, &s), &f) in flows() {
            if f == FlowRecords::UNFINISHED && pick(b) {
                scratch.push(narrow(end.saturating_sub(s)));
            }
        }
    }
    if scratch.is_empty() {
        return None;
    }
    let unfinished = scratch.len() - count;
    let d = dist_us(&mut scratch[..count]);
    // Nothing unfinished: the censored statistics are the same (one pass).
    let a = if unfinished == 0 {
        d
    } else {
        dist_us(&mut scratch[..])
    };
    Some(FctStats {
        count: count as u64,
        unfinished: unfinished as u64,
        mean_us: d.mean,
        p50_us: d.p50,
        p90_us: d.p90,
        p99_us: d.p99,
        p999_us: d.p999,
        max_us: d.max,
        censored_mean_us: a.mean,
        censored_p50_us: a.p50,
        censored_p90_us: a.p90,
        censored_p99_us: a.p99,
        censored_p999_us: a.p999,
    })
}

/// Every class's statistics, in the summary's order: `all`, each `<cut`,
/// `>=` the largest cut (classes without flows left out). A class holding
/// every flow (all below its cut, say) has the statistics of `all`.
/// Also the number of flows of at least the largest cut (0 without cuts).
fn fct_classes<T: Ps>(r: &FlowRecords, end: u64, cuts: &[u64]) -> (Vec<(String, FctStats)>, usize) {
    let n = r.len();
    // Every flow lands in `all`: room for all of them at once (no regrowth
    // copies of a vector of millions).
    let mut scratch: Vec<T> = Vec::with_capacity(n);
    let mut fct: Vec<(String, FctStats)> = Vec::with_capacity(cuts.len() + 2);
    let Some(all) = class_stats(r, end, |_| true, &mut scratch) else {
        return (fct, 0);
    };
    fct.push(("all".into(), all));
    let top = cuts.iter().copied().max();
    let mut at_least_top = 0;
    for &c in cuts {
        let below = r.bytes.iter().filter(|&&b| b < c).count();
        if Some(c) == top {
            at_least_top = n - below;
        }
        let stats = if below == n {
            Some(fct[0].1.clone())
        } else {
            class_stats(r, end, |b| b < c, &mut scratch)
        };
        if let Some(st) = stats {
            fct.push((class_below(c), st));
        }
    }
    if let Some(t) = top {
        // A class without flows is left out (no pass when it is known empty).
        let stats = if at_least_top == 0 {
            None
        } else {
            class_stats(r, end, |b| b >= t, &mut scratch)
        };
        if let Some(st) = stats {
            fct.push((format!(">={}", ByteSize(t)), st));
        }
    }
    (fct, at_least_top)
}

/// How the offered load was set, for a reader of the summary.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LoadSummary {
    /// The configured L = F / (R · N · τ).
    pub load: f64,
    /// Which F set τ: "nominal" (the distribution's mean) or "realised" (the
    /// mean of the sizes the run draws).
    pub basis: String,
    /// The size distribution's mean flow size.
    pub mean_bytes_nominal: f64,
    /// The mean size of the flows this run generated.
    pub mean_bytes_realised: f64,
    /// L computed with each mean: F / (R · N · τ).
    pub load_nominal: f64,
    pub load_realised: f64,
}

/// Per-flow throughput (bytes · 8 / FCT) of completed large flows, as a
/// fraction of R.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ThroughputStats {
    /// The class: flows of at least this many bytes.
    pub class: String,
    pub count: u64,
    pub unfinished: u64,
    pub mean_of_r: f64,
    pub p10_of_r: f64,
    pub p50_of_r: f64,
    pub p90_of_r: f64,
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
    pub offered_bytes: u128,
    pub delivered_bytes: u128,
    /// How the arrival rate was set (absent for trace replay).
    pub load: Option<LoadSummary>,
    /// Offered load measured from the generated flows: bytes / (T · N · R).
    pub offered_load: f64,
    /// Bytes delivered during the run / (T · N · R).
    pub goodput: f64,
    /// Bytes delivered in the steady-state window / (window · N · R).
    pub goodput_steady: f64,
    /// The steady-state window [start, end) in µs: `metrics.steady_state`
    /// fractions of the arrival period (first to last arrival).
    pub steady_window_us: [f64; 2],
    /// FCT statistics per size class (`all`, `<10KB`, …, `>=100KB`): completed
    /// flows, unfinished counts, and censored lower bounds (see [`FctStats`]).
    pub fct: BTreeMap<String, FctStats>,
    /// Per-flow throughput of the largest size class, if there are cut-offs.
    pub throughput: Option<ThroughputStats>,
    pub events: u64,
    pub fabric_stats: BTreeMap<String, f64>,
    pub invariant_violations: Vec<String>,
    /// Collective and dependent workloads: per job completion, algbw,
    /// busbw, iteration time and slowdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<crate::workload::collective::CollectiveSummary>,
    /// Mixed workloads (`workload.overlay`): per stream, the main one first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<StreamSummary>>,
}

/// One stream of a mixed workload.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StreamSummary {
    pub flows: u64,
    /// FCT statistics per size class, as the whole run's.
    pub fct: BTreeMap<String, FctStats>,
    /// Arrival events (an incast's flows, which share a start; else one
    /// flow) all of whose flows finished, and those with one unfinished.
    pub events: u64,
    pub events_unfinished: u64,
    /// Mean over finished events of the slowest flow's FCT (an incast's
    /// finish time), µs.
    pub event_finish_mean_us: f64,
}

/// Per stream of `tags` (each flow id's stream): its flows' FCT classes
/// and its arrival events' finish times.
pub fn stream_summaries(
    r: &FlowRecords,
    end: u64,
    cuts: &[u64],
    tags: &[u8],
) -> Vec<StreamSummary> {
    let streams = tags.iter().map(|&t| t as usize + 1).max().unwrap_or(0);
    (0..streams)
        .map(|k| {
            let ids: Vec<usize> = (0..r.len()).filter(|&i| tags[i] as usize == k).collect();
            let col = |c: &[u64]| ids.iter().map(|&i| c[i]).collect::<Vec<u64>>();
            let sub = FlowRecords {
                src: ids.iter().map(|&i| r.src[i]).collect(),
                dst: ids.iter().map(|&i| r.dst[i]).collect(),
                bytes: col(&r.bytes),
                start_ps: col(&r.start_ps),
                finish_ps: col(&r.finish_ps),
                delivered: col(&r.delivered),
            };
            // An event: consecutive flows of the stream with one start.
            let (mut done, mut open, mut sum) = (0u64, 0u64, 0.0);
            let mut i = 0;
            while i < sub.len() {
                let j = (i..sub.len())
                    .find(|&j| sub.start_ps[j] != sub.start_ps[i])
                    .unwrap_or(sub.len());
                let fin = (i..j).map(|x| sub.finish(x)).collect::<Option<Vec<u64>>>();
                match fin.and_then(|f| f.into_iter().max()) {
                    Some(last) => {
                        done += 1;
                        sum += SimTime(last - sub.start_ps[i]).as_us_f64();
                    }
                    None => open += 1,
                }
                i = j;
            }
            StreamSummary {
                flows: sub.len() as u64,
                fct: fct_classes::<u64>(&sub, end, cuts).0.into_iter().collect(),
                events: done,
                events_unfinished: open,
                event_finish_mean_us: if done > 0 {
                    sum / done as f64
                } else {
                    f64::NAN
                },
            }
        })
        .collect()
}

/// Size-class label for flows smaller than `cut`.
pub fn class_below(cut: u64) -> String {
    format!("<{}", ByteSize(cut))
}

/// What `summarise` needs besides the run's output.
pub struct SummaryInput<'a> {
    pub fabric: &'a str,
    pub hosts: usize,
    pub host_rate_bps: u64,
    /// FCT size-class cut-offs (bytes).
    pub cuts: &'a [u64],
    /// `metrics.steady_state`: the window as fractions of the arrival period.
    pub steady_state: [f64; 2],
    pub load: Option<LoadInfo>,
    pub fabric_stats: BTreeMap<String, f64>,
}

/// Summarises a run. Classes are cumulative (`<100KB` includes `<10KB`), plus
/// `all` and `>=` the largest cut-off.
pub fn summarise(out: &RunOutput, input: SummaryInput) -> Summary {
    let s = &out.recorder;
    let cuts = input.cuts;
    let top = cuts.iter().copied().max();
    let rate = input.host_rate_bps as f64;
    let r = out.recorder.records();
    let end = out.end_time.0;
    // FCTs and elapsed times in 32 bits when all fit (4.29 ms).
    let widest = r
        .start_ps
        .iter()
        .zip(&r.finish_ps)
        .map(|(&s, &f)| {
            if f != FlowRecords::UNFINISHED {
                f - s
            } else {
                end.saturating_sub(s)
            }
        })
        .max()
        .unwrap_or(0);
    let (fct, at_least_top) = if widest <= u32::MAX as u64 {
        fct_classes::<u32>(r, end, cuts)
    } else {
        fct_classes::<u64>(r, end, cuts)
    };
    let mut large_tput: Vec<f64> = Vec::new();
    let mut large_unfinished = 0u64;
    // (No pass when no flow is that large.)
    if let Some(top) = top.filter(|_| at_least_top > 0) {
        for ((&bytes, &start), &finish) in r.bytes.iter().zip(&r.start_ps).zip(&r.finish_ps) {
            if bytes < top {
                continue;
            }
            if finish == FlowRecords::UNFINISHED {
                large_unfinished += 1;
            } else if finish > start {
                let t = finish - start;
                large_tput.push(bytes as f64 * 8.0 / (t as f64 / SimTime::S as f64) / rate);
            }
        }
    }
    let fct = fct.into_iter().collect();
    let throughput = top.map(|t| {
        large_tput.sort_by(f64::total_cmp);
        let pick = |p: f64| {
            if large_tput.is_empty() {
                f64::NAN
            } else {
                percentile_sorted(&large_tput, p)
            }
        };
        let mean = if large_tput.is_empty() {
            f64::NAN
        } else {
            large_tput.iter().sum::<f64>() / large_tput.len() as f64
        };
        ThroughputStats {
            class: format!(">={}", ByteSize(t)),
            count: large_tput.len() as u64,
            unfinished: large_unfinished,
            mean_of_r: mean,
            p10_of_r: pick(10.0),
            p50_of_r: pick(50.0),
            p90_of_r: pick(90.0),
        }
    });
    let offered: u128 = r.bytes.iter().map(|&b| b as u128).sum();
    let delivered: u128 = s.delivered_total();
    let capacity = |secs: f64| secs * rate * input.hosts as f64;
    let norm = |bytes: f64, secs: f64| {
        let cap = capacity(secs);
        if cap > 0.0 {
            bytes * 8.0 / cap
        } else {
            0.0
        }
    };
    let t = out.end_time.as_secs_f64();
    // Steady state: a window inside the arrival period.
    let (a0, a1) = match (r.start_ps.first(), r.start_ps.last()) {
        (Some(&f), Some(&l)) => (f, l.min(out.end_time.0)),
        _ => (0, 0),
    };
    let span = a1.saturating_sub(a0) as f64;
    let [f0, f1] = input.steady_state;
    let (w0, w1) = (
        SimTime(a0 + (span * f0) as u64),
        SimTime(a0 + (span * f1) as u64),
    );
    let steady_bytes = s.coarse().bytes_between(w0, w1);
    let goodput_steady = norm(steady_bytes, (w1.0 - w0.0) as f64 / SimTime::S as f64);
    let load = input.load.map(|l| {
        let realised = if r.is_empty() {
            f64::NAN
        } else {
            offered as f64 / r.len() as f64
        };
        LoadSummary {
            load: l.load,
            basis: match l.basis {
                LoadBasis::Nominal => "nominal",
                LoadBasis::Realised => "realised",
            }
            .into(),
            mean_bytes_nominal: l.nominal_mean_bytes,
            mean_bytes_realised: realised,
            load_nominal: l.load * l.nominal_mean_bytes / l.basis_mean_bytes,
            load_realised: l.load * realised / l.basis_mean_bytes,
        }
    });
    let goodput = norm(delivered as f64, t);
    // Goodput above N·R is refused by the sanity layer (`crate::sanity`),
    // which knows the fabrics it does not bound.
    let violations = s.violations().to_vec();
    Summary {
        fabric: input.fabric.to_string(),
        hosts: input.hosts,
        host_rate_bps: input.host_rate_bps,
        flows: r.len() as u64,
        completed: s.completed(),
        unfinished: r.len() as u64 - s.completed(),
        sim_time_us: out.end_time.as_us_f64(),
        offered_bytes: offered,
        delivered_bytes: delivered,
        load,
        offered_load: norm(offered as f64, t),
        goodput,
        goodput_steady,
        steady_window_us: [w0.as_us_f64(), w1.as_us_f64()],
        fct,
        throughput,
        events: out.events,
        fabric_stats: input.fabric_stats,
        invariant_violations: violations,
        collectives: None,
        streams: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Flow;
    use crate::recorder::Recorder;
    use proptest::prelude::*;

    /// The statistics as they were computed before selection: a sort, the
    /// f64 sum in sorted order, nearest ranks of the sorted values.
    fn by_sorting(v: &[u64]) -> [f64; 6] {
        let mut s = v.to_vec();
        s.sort_unstable();
        let us = |ps: u64| ps as f64 / 1e6;
        [
            s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64 / 1e6,
            us(percentile_sorted(&s, 50.0)),
            us(percentile_sorted(&s, 90.0)),
            us(percentile_sorted(&s, 99.0)),
            us(percentile_sorted(&s, 99.9)),
            us(s[s.len() - 1]),
        ]
    }

    proptest! {
        /// Selection gives bit-for-bit the statistics of a sort, small and
        /// repeated values, and sums past 2^53 (the sorted fallback) included.
        #[test]
        fn selected_statistics_equal_sorted_ones(
            v in prop::collection::vec(0u64..2_000, 1..300),
            big in prop::collection::vec(1u64 << 50..1u64 << 60, 0..40),
            use_big in any::<bool>(),
        ) {
            let mut v = if use_big { [v, big].concat() } else { v };
            let want = by_sorting(&v);
            let d = dist_us(&mut v);
            let got = [d.mean, d.p50, d.p90, d.p99, d.p999, d.max];
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g.to_bits(), w.to_bits());
            }
        }
    }

    /// A class's name, statistics of completed flows and of all, counts.
    type Expected = (String, [f64; 6], [f64; 6], u64, u64);

    /// The statistics of `v` (empty: NaN), as `FctStats` lists them.
    fn oracle(v: &[u64]) -> [f64; 6] {
        if v.is_empty() {
            [f64::NAN; 6]
        } else {
            by_sorting(v)
        }
    }

    proptest! {
        /// Every class, by the one reused scratch (u32 and u64), against a
        /// vector per class (completed; completed + unfinished) sorted.
        #[test]
        fn class_statistics_equal_a_sort_per_class(
            flows in prop::collection::vec((1u64..300, 0u64..1_000, prop::option::of(0u64..5_000)), 0..200),
            cuts in prop::sample::subsequence(vec![50u64, 100, 200, 400], 0..4),
            scale in prop::sample::select(vec![1u64, 1 << 22]),
        ) {
            let end = 6_000 * scale;
            let mut r = FlowRecords::default();
            for &(b, s, f) in &flows {
                r.src.push(0);
                r.dst.push(1);
                r.delivered.push(0);
                r.bytes.push(b);
                r.start_ps.push(s * scale);
                r.finish_ps.push(f.map_or(FlowRecords::UNFINISHED, |f| (s + f) * scale));
            }
            let mut want: Vec<Expected> = Vec::new();
            let mut class = |name: String, pick: &dyn Fn(u64) -> bool| {
                let (mut done, mut elapsed) = (Vec::new(), Vec::new());
                for &(b, s, f) in &flows {
                    if pick(b) {
                        match f {
                            Some(f) => done.push(f * scale),
                            None => elapsed.push(end - s * scale),
                        }
                    }
                }
                if !done.is_empty() || !elapsed.is_empty() {
                    let all = [done.clone(), elapsed.clone()].concat();
                    want.push((name, oracle(&done), oracle(&all), done.len() as u64, elapsed.len() as u64));
                }
            };
            class("all".into(), &|_| true);
            for &c in &cuts {
                class(class_below(c), &|b| b < c);
            }
            if let Some(&t) = cuts.iter().max() {
                class(format!(">={}", ByteSize(t)), &|b| b >= t);
            }
            let large = cuts.iter().max().map_or(0, |&t| flows.iter().filter(|f| f.0 >= t).count());
            let wide = fct_classes::<u64>(&r, end, &cuts);
            let got = if scale == 1 { vec![wide.clone(), fct_classes::<u32>(&r, end, &cuts)] } else { vec![wide] };
            for (g, at_least_top) in got {
                prop_assert_eq!(at_least_top, if flows.is_empty() { 0 } else { large });
                prop_assert_eq!(g.len(), want.len());
                for ((name, st), (wname, d, a, count, unfinished)) in g.iter().zip(&want) {
                    prop_assert_eq!(name, wname);
                    prop_assert_eq!((st.count, st.unfinished), (*count, *unfinished));
                    let gd = [st.mean_us, st.p50_us, st.p90_us, st.p99_us, st.p999_us, st.max_us];
                    let ga = [st.censored_mean_us, st.censored_p50_us, st.censored_p90_us, st.censored_p99_us, st.censored_p999_us];
                    for (x, y) in gd.iter().zip(d) {
                        prop_assert_eq!(x.to_bits(), y.to_bits(), "{}", name);
                    }
                    for (x, y) in ga.iter().zip(a) {
                        prop_assert_eq!(x.to_bits(), y.to_bits(), "{} censored", name);
                    }
                }
            }
        }
    }

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

    /// Ten 1 KB flows starting at 0, 1, …, 9 us; flow i completes after
    /// (i + 1) us except flows 8 and 9, unfinished when the run ends at 12 us.
    fn ten_flows() -> RunOutput {
        let mut rec = Recorder::new(None);
        for i in 0..10u32 {
            let bytes = if i < 5 { 1_000 } else { 200_000 };
            let f = Flow::new(i, 0, 1, bytes, SimTime::us(i as u64));
            rec.register(&f);
            if i < 8 {
                let done = SimTime::us(2 * i as u64 + 1);
                rec.deliver(i, done, f.bytes);
                rec.complete(i, done);
            }
        }
        ended(rec, SimTime::us(12))
    }

    /// A run that ended at `end` with the flows `rec` recorded.
    fn ended(rec: Recorder, end: SimTime) -> RunOutput {
        RunOutput {
            recorder: rec,
            end_time: end,
            events: 0,
            cancelled: false,
            stalled: None,
        }
    }

    fn input(cuts: &[u64]) -> SummaryInput<'_> {
        SummaryInput {
            fabric: "t",
            hosts: 2,
            host_rate_bps: 8_000_000_000,
            cuts,
            steady_state: [0.0, 1.0],
            load: None,
            fabric_stats: BTreeMap::new(),
        }
    }

    #[test]
    fn censored_statistics_count_unfinished_flows_at_their_elapsed_time() {
        let out = ten_flows();
        let s = summarise(&out, input(&[100_000]));
        let all = &s.fct["all"];
        // Completed: FCT of flow i is i + 1 us, i = 0..7.
        assert_eq!((all.count, all.unfinished), (8, 2));
        assert_eq!(all.max_us, 8.0);
        assert_eq!(all.mean_us, 4.5);
        // Censored: add 12 - 8 = 4 us and 12 - 9 = 3 us.
        assert_eq!(all.censored_mean_us, (36.0 + 4.0 + 3.0) / 10.0);
        assert_eq!(all.censored_p99_us, 8.0);
        let big = &s.fct[">=100KB"];
        assert_eq!((big.count, big.unfinished), (3, 2));
        assert_eq!(big.p50_us, 7.0); // FCTs 6, 7, 8
        assert_eq!(big.censored_p50_us, 6.0); // nearest rank 3 of 3, 4, 6, 7, 8
        let small = &s.fct["<100KB"];
        assert_eq!((small.count, small.unfinished), (5, 0));
        assert_eq!(small.censored_p99_us, small.p99_us);
        // Large flows' throughput: 200 KB in 6, 7, 8 us at R = 8 Gbps.
        let t = s.throughput.unwrap();
        assert_eq!((t.count, t.unfinished), (3, 2));
        let want = |us: f64| 200_000.0 * 8.0 / (us * 1e-6) / 8e9;
        assert!((t.p50_of_r - want(7.0)).abs() < 1e-12);
        assert!((t.p10_of_r - want(8.0)).abs() < 1e-12);
    }

    #[test]
    fn a_class_with_only_unfinished_flows_is_reported() {
        let mut out = ten_flows();
        out.end_time = SimTime::us(30);
        let s = summarise(&out, input(&[100_000, 1_000_000]));
        let c = &s.fct["<1MB"];
        assert_eq!((c.count, c.unfinished), (8, 2));
        let s = summarise(&out, input(&[1_000]));
        let big = &s.fct[">=1KB"];
        assert_eq!((big.count, big.unfinished), (8, 2));
        assert!(!s.fct.contains_key("<1KB"));
    }

    #[test]
    fn steady_state_goodput_excludes_the_edges_of_the_arrival_period() {
        // 1 KB delivered at each of 0..=9 us plus 100 KB at 9 us: the whole
        // arrival period [0, 9] us sees a burst at its end.
        let mut rec = Recorder::new(None);
        for i in 0..10u32 {
            let bytes = if i == 9 { 101_000 } else { 1_000 };
            let f = Flow::new(i, 0, 1, bytes, SimTime::us(i as u64));
            rec.register(&f);
            rec.deliver(i, SimTime::us(i as u64), f.bytes);
            rec.complete(i, SimTime::us(i as u64));
        }
        let out = ended(rec, SimTime::us(10));
        let mut inp = input(&[]);
        inp.steady_state = [0.1, 0.9];
        let s = summarise(&out, inp);
        // Window [0.9, 8.1) us holds the deliveries at 1..=8 us: 8 KB over
        // 7.2 us on 2 hosts at 8 Gbps.
        assert_eq!(s.steady_window_us, [0.9, 8.1]);
        let want = 8_000.0 * 8.0 / (7.2e-6 * 2.0 * 8e9);
        assert!(
            (s.goodput_steady - want).abs() / want < 0.02,
            "{} vs {want}",
            s.goodput_steady
        );
        assert!(s.goodput > 3.0 * s.goodput_steady);
    }
}

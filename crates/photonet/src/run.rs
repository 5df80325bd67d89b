//! From a config to results: resolve files, build the fabric and workload (all
//! checks happen here, before any simulated time), run, and summarise.

use crate::config::{Config, ConfigError, PatternKind, SizeDistKind};
use crate::engine::{self, Arrivals, FromIter, Progress, StopRule};
use crate::fabric::Fabric;
use crate::flow::Flow;
use crate::metrics::{summarise, Summary, SummaryInput};
use crate::recorder::{FlowRecords, Recorder, TimeSeries};
use crate::rng::RngStreams;
use crate::sanity::{self, Floor, RunError};
use crate::units::{limits, SimTime};
use crate::workload::collective::{self, Plan};
use crate::workload::{trace, Generator, LoadInfo, Pattern, PingPong};

mod streams;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where relative file names in a config are looked up: next to the config
/// first, then in each search directory in order.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    pub base_dir: Option<PathBuf>,
    pub search: Vec<PathBuf>,
}

impl Paths {
    pub fn resolve(&self, key: &str, file: &str) -> Result<PathBuf, ConfigError> {
        let p = Path::new(file);
        let mut tried = Vec::new();
        if p.is_absolute() {
            if p.exists() {
                return Ok(p.to_path_buf());
            }
            tried.push(p.to_path_buf());
        } else {
            let dirs = self.base_dir.iter().chain(self.search.iter());
            for d in dirs {
                let c = d.join(p);
                if c.exists() {
                    return Ok(c);
                }
                tried.push(c);
            }
            if tried.is_empty() {
                if p.exists() {
                    return Ok(p.to_path_buf());
                }
                tried.push(p.to_path_buf());
            }
        }
        let list: Vec<String> = tried.iter().map(|t| t.display().to_string()).collect();
        Err(ConfigError::new(
            key,
            format!("{file:?}"),
            format!("file not found (looked in: {})", list.join(", ")),
        ))
    }
}

/// A fabric and workload ready to run; building one performs every check.
pub struct Prepared {
    pub config: Config,
    pub fabric: Box<dyn Fabric + Send>,
    pub arrivals: Box<dyn Arrivals + Send>,
    pub stop: StopRule,
    /// How the arrival rate was set (none for trace replay).
    pub load: Option<LoadInfo>,
    /// A dependent workload's graph and jobs (collectives), for its metrics.
    pub dependent: Option<Arc<Plan>>,
}

impl Prepared {
    /// Arrivals that set no rate (closed loop, trace replay): no load basis.
    fn without_load(
        config: &Config,
        fabric: Box<dyn Fabric + Send>,
        arrivals: Box<dyn Arrivals + Send>,
    ) -> Prepared {
        Prepared {
            config: config.clone(),
            fabric,
            arrivals,
            stop: stop_rule(config),
            load: None,
            dependent: None,
        }
    }
}

/// The files a config reads (its CDF of flow sizes, its trace), as
/// (config key, resolved path), resolved exactly as [`prepare`] resolves
/// them. A sweep keys its points by these files' contents, so an edited file
/// is never answered with a stale result; a new file-reading key must be
/// listed here too (a test checks `prepare` and this agree).
pub fn input_files(
    config: &Config,
    paths: &Paths,
) -> Result<Vec<(&'static str, PathBuf)>, ConfigError> {
    let mut out = Vec::new();
    let w = &config.workload;
    if w.sizes.dist == SizeDistKind::Cdf {
        let key = "workload.sizes.file";
        out.push((
            key,
            paths.resolve(key, w.sizes.file.as_deref().unwrap_or(""))?,
        ));
    }
    for o in w.overlay.iter().filter_map(|o| o.sizes.as_ref()) {
        if o.dist == SizeDistKind::Cdf {
            let key = "workload.overlay.sizes.file";
            out.push((key, paths.resolve(key, o.file.as_deref().unwrap_or(""))?));
        }
    }
    if matches!(
        w.pattern.kind,
        PatternKind::Trace | PatternKind::Dependent | PatternKind::Htsim
    ) {
        let key = "workload.pattern.file";
        out.push((
            key,
            paths.resolve(key, w.pattern.file.as_deref().unwrap_or(""))?,
        ));
    }
    Ok(out)
}

/// Checks `config` and builds the fabric named by `config.fabric`, through
/// the registry (planned once, built once).
pub fn build_fabric(config: &Config) -> Result<Box<dyn Fabric + Send>, ConfigError> {
    config.plan()?.build(&config.build_context())
}

/// Checks `config` (it need only have been parsed: [`Config::parse`]) and
/// builds its fabric and workload.
pub fn prepare(config: &Config, paths: &Paths) -> Result<Prepared, ConfigError> {
    let fabric = build_fabric(config)?;
    let hosts = fabric.hosts() as u32;
    let streams = RngStreams::new(config.seed);
    let w = &config.workload;
    let sizes = streams::size_dist(&w.sizes, "workload.sizes", paths)?;
    let pt = &w.pattern;
    let pattern = match pt.kind {
        PatternKind::PingPong => {
            // Closed loop: each host sends ⌈flows / hosts⌉ (or without a
            // flow count, until the duration).
            let per_node = config
                .stop
                .flows
                .map_or(u64::MAX, |f| f.div_ceil(hosts as u64));
            check_run_size(config, 0.0, config.stop.flows.unwrap_or(0))?;
            let arrivals: Box<dyn Arrivals + Send> =
                Box::new(PingPong::new(hosts, pt.group, sizes, per_node, &streams));
            return Ok(Prepared::without_load(config, fabric, arrivals));
        }
        PatternKind::Collective | PatternKind::Dependent | PatternKind::Htsim => {
            return prepare_dependent(config, paths, fabric, &streams);
        }
        PatternKind::Trace => {
            let file = pt.file.clone().unwrap_or_default();
            let path = paths.resolve("workload.pattern.file", &file)?;
            let flows = trace::read_trace(&path, hosts).map_err(|reason| {
                ConfigError::new("workload.pattern.file", format!("{file:?}"), reason)
            })?;
            let span = flows.last().map_or(0.0, |f| f.start.as_secs_f64());
            if span == 0.0 {
                at_once_needs_an_end(config, "trace")?;
            }
            check_run_size(config, span, flows.len() as u64)?;
            let arrivals: Box<dyn Arrivals + Send> = Box::new(FromIter::new(flows.into_iter()));
            return Ok(Prepared::without_load(config, fabric, arrivals));
        }
        _ => streams::poisson_pattern(pt).expect("the open-loop patterns"),
    };
    let per_event = streams::per_event(&pattern);
    let all_to_all = matches!(pattern, Pattern::AllToAll { .. });
    let generator = Generator::new(hosts, fabric.host_rate(), w.load, pattern, sizes, &streams)
        .with_basis(w.load_basis, config.stop.flows);
    let load_info = Some(generator.load_info());
    let (overlays, overlays_per_s) =
        streams::overlays(w, hosts, fabric.host_rate(), paths, &streams)?;
    if all_to_all {
        at_once_needs_an_end(config, "all_to_all")?;
        let n = hosts as u64 * (hosts as u64 - 1);
        check_run_size(config, 0.0, config.stop.flows.map_or(n, |f| f.min(n)))?;
    } else {
        // Arrivals stop at the flow count or the duration, whichever comes first.
        let flows = config.stop.flows.unwrap_or(u64::MAX);
        let mut span = flows as f64 / per_event as f64 * generator.mean_gap();
        if overlays_per_s > 0.0 {
            span = flows as f64 / (per_event as f64 / generator.mean_gap() + overlays_per_s);
        }
        if let Some(d) = config.stop.duration {
            span = span.min(d.as_secs_f64());
        }
        if span * SimTime::S as f64 > limits::TIME_PS as f64 {
            return Err(ConfigError::new(
                "workload.load",
                w.load,
                format!(
                    "at this load the {flows} flows would take about {span:.3e} s to arrive; simulated time is limited to {} (give a higher load, fewer flows or a duration)",
                    SimTime(limits::TIME_PS)
                ),
            ));
        }
        let expected_flows = config
            .stop
            .flows
            .unwrap_or((span / generator.mean_gap()) as u64 * per_event)
            + (span * overlays_per_s) as u64;
        check_run_size(config, span, expected_flows)?;
    }
    let arrivals: Box<dyn Arrivals + Send> = if overlays.is_empty() {
        Box::new(FromIter::new(generator))
    } else {
        let all = std::iter::once(generator).chain(overlays).collect();
        Box::new(crate::workload::mix::Mixed::new(all))
    };
    Ok(Prepared {
        config: config.clone(),
        fabric,
        arrivals,
        stop: stop_rule(config),
        load: load_info,
        dependent: None,
    })
}

/// A collective or dependency-graph workload: built and checked (cycles,
/// missing flows, endpoints) before the run; the run drains.
fn prepare_dependent(
    config: &Config,
    paths: &Paths,
    fabric: Box<dyn Fabric + Send>,
    streams: &RngStreams,
) -> Result<Prepared, ConfigError> {
    let hosts = fabric.hosts() as u32;
    let pt = &config.workload.pattern;
    let (plan, key, value, labels) = if pt.kind == PatternKind::Collective {
        let jobs = pt.jobs.clone().unwrap_or_default();
        let plan = collective::build(&jobs, hosts, &mut streams.stream("collective"))?;
        (plan, "workload.pattern.jobs", "…".to_string(), None)
    } else {
        let file = pt.file.clone().unwrap_or_default();
        let path = paths.resolve("workload.pattern.file", &file)?;
        let bad = |reason| ConfigError::new("workload.pattern.file", format!("{file:?}"), reason);
        let text = crate::files::read_text(&path, "workload file", crate::files::MAX_TRACE_BYTES)
            .map_err(bad)?;
        let (dag, labels) = if pt.kind == PatternKind::Htsim {
            crate::workload::htsim::parse_cm(&text, hosts)
        } else {
            crate::workload::dag::parse_dag(&text)
        }
        .map_err(bad)?;
        let plan = collective::Plan {
            instances: (0..dag.len() as u32).map(|i| (0, i)).collect(),
            dag,
            jobs: Vec::new(),
        };
        (
            plan,
            "workload.pattern.file",
            format!("{file:?}"),
            Some(labels),
        )
    };
    let label = |i: u32| match &labels {
        Some(l) => l
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| format!("flow {i}")),
        None => format!("flow {i}"),
    };
    plan.dag
        .check(hosts, &label)
        .map_err(|why| ConfigError::new(key, value, why))?;
    check_run_size(config, 0.0, plan.dag.len() as u64)?;
    let plan = Arc::new(plan);
    let arrivals: Box<dyn Arrivals + Send> =
        Box::new(crate::dependent::Dependent::new(Arc::new(plan.dag.clone())));
    Ok(Prepared {
        config: config.clone(),
        fabric,
        arrivals,
        stop: StopRule {
            max_flows: None,
            duration: config.stop.duration,
            drain: true,
            drain_limit: config.stop.drain_limit,
            stall_limit: Some(stall_limit(config)),
        },
        load: None,
        dependent: Some(plan),
    })
}

/// Bytes of memory a run keeps per flow (its record, the recorder's counters,
/// the result table and a fabric's per-flow state), for the estimate below.
const BYTES_PER_FLOW: u64 = 160;
/// A run that would need more than this is refused before it starts.
pub const MEMORY_LIMIT: u64 = crate::units::limits::MEMORY_BYTES;
/// The most bins a goodput time series may have.
pub const MAX_SERIES_BINS: u64 = 1 << 24;

/// Refuses runs that cannot fit: too many flows for memory, or a goodput time
/// series with more bins than `MAX_SERIES_BINS` over the arrival `span_s`.
fn check_run_size(config: &Config, span_s: f64, flows: u64) -> Result<(), ConfigError> {
    if flows > crate::config::MAX_FLOWS || flows.saturating_mul(BYTES_PER_FLOW) > MEMORY_LIMIT {
        let key = if config.workload.pattern.kind == PatternKind::AllToAll {
            "workload.pattern"
        } else {
            "stop.flows"
        };
        return Err(ConfigError::new(
            key,
            flows,
            format!(
                "{flows} flows would need about {} GB for their records; the limit is {} GB (and {} flows)",
                flows.saturating_mul(BYTES_PER_FLOW) >> 30,
                MEMORY_LIMIT >> 30,
                crate::config::MAX_FLOWS
            ),
        ));
    }
    if let Some(bin) = config.metrics.time_series {
        let span_ps = span_s * SimTime::S as f64;
        let bins = span_ps / bin.0 as f64;
        if bins > MAX_SERIES_BINS as f64 {
            let least = SimTime((span_ps / MAX_SERIES_BINS as f64).ceil() as u64);
            return Err(ConfigError::new(
                "metrics.time_series",
                format!("\"{bin}\""),
                format!(
                    "the arrivals alone span about {} s, which needs {bins:.3e} bins; at most {MAX_SERIES_BINS}: use a bin of at least {least}",
                    span_s
                ),
            ));
        }
    }
    Ok(())
}

/// Arrivals that all start at t = 0 (`what`): without `stop.drain` or a
/// `stop.duration` the run would end at its last arrival, t = 0, having
/// simulated nothing; refused with the reason instead of a run of 0 µs.
fn at_once_needs_an_end(config: &Config, what: &str) -> Result<(), ConfigError> {
    if config.stop.drain || config.stop.duration.is_some() {
        return Ok(());
    }
    Err(ConfigError::new(
        "stop.drain",
        "false",
        format!(
            "every flow of this {what} workload starts at t = 0, and a run without drain stops at its last \
             arrival, so it would simulate 0 µs: set stop.drain = true or a stop.duration"
        ),
    ))
}

fn stop_rule(config: &Config) -> StopRule {
    StopRule {
        max_flows: config.stop.flows,
        duration: config.stop.duration,
        drain: config.stop.drain,
        drain_limit: config.stop.drain_limit,
        stall_limit: Some(stall_limit(config)),
    }
}

fn stall_limit(config: &Config) -> SimTime {
    config
        .stop
        .stall_limit
        .unwrap_or(crate::config::StopConfig::DEFAULT_STALL_LIMIT)
}

/// Per-flow records as columns (times in picoseconds; unfinished flows have
/// `finish_ps = FlowTable::UNFINISHED`, see [`FlowRecords::finish`]): the
/// recorder's columns, moved; a flow's id is its index.
pub type FlowTable = FlowRecords;

pub struct RunResult {
    pub summary: Summary,
    pub flows: FlowTable,
    /// (bin start in ps, bytes delivered in the bin), when a time series was asked for.
    pub series: Option<TimeSeries>,
    pub cancelled: bool,
}

/// Runs a prepared simulation, calling `progress` now and then (return false
/// to stop). A run that stalls (the watchdog) or whose output breaks
/// physical sanity ([`crate::sanity`]) is an error naming why.
pub fn simulate(
    mut p: Prepared,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<RunResult, RunError> {
    // The floor is the fabric's own lone-flow bound: computed before the run
    // (the fabric is freed before the checks).
    let floor = match p.config.selected() {
        Ok((spec, variant)) => Floor::of(&p.config, spec, variant, p.fabric.hosts() as u32),
        Err(_) => Floor {
            rate: Some(p.config.topology.host_rate()),
            latency: SimTime::ZERO,
        },
    };
    let series = p.config.metrics.time_series.map(TimeSeries::new);
    let rec = Recorder::new(series);
    let out = if p.config.metrics.check_invariants {
        let mut checked = Checked {
            inner: p.fabric.as_mut(),
        };
        engine::run_arrivals(&mut checked, p.arrivals.as_mut(), &p.stop, rec, progress)
    } else {
        engine::run_arrivals(
            p.fabric.as_mut(),
            p.arrivals.as_mut(),
            &p.stop,
            rec,
            progress,
        )
    };
    let cuts: Vec<u64> = p.config.metrics.size_classes.iter().map(|c| c.0).collect();
    let (fabric, hosts, rate, fabric_stats) = (
        p.fabric.name(),
        p.fabric.hosts(),
        p.fabric.host_rate().0,
        p.fabric.stats(),
    );
    // The fabric's per-flow state is no longer needed: free it before the
    // summary's scratch and the table's one new column are made (paper-scale
    // runs hold millions of flows).
    drop(p.fabric);
    let summary = summarise(
        &out,
        SummaryInput {
            fabric: &fabric,
            hosts,
            host_rate_bps: rate,
            cuts: &cuts,
            steady_state: p.config.metrics.steady_state,
            load: p.load,
            fabric_stats,
        },
    );
    let mut summary = summary;
    if let (Some(plan), Some(origins)) = (&p.dependent, p.arrivals.origins()) {
        summary.collectives = Some(dependent_summary(plan, origins, &out, rate));
    }
    if let Some(tags) = p.arrivals.streams() {
        let r = out.recorder.records();
        summary.streams = Some(crate::metrics::stream_summaries(
            r,
            out.end_time.0,
            &cuts,
            tags,
        ));
    }
    if let Some(why) = &out.stalled {
        return Err(RunError(why.clone()));
    }
    sanity::check(&sanity::Run {
        records: out.recorder.records(),
        end: out.end_time,
        floor,
        goodput: summary.goodput,
        // Configured node failures strand their flows by design (Sirius:
        // a failed node's own traffic and traffic to it): not a lost drain.
        drain: p.stop.drain
            && summary
                .fabric_stats
                .get("failed_nodes")
                .is_none_or(|&n| n == 0.0),
        drain_limit: p.stop.drain_limit,
        cancelled: out.cancelled,
    })?;
    let mut recorder = out.recorder;
    let series = recorder.take_series();
    Ok(RunResult {
        summary,
        flows: recorder.into_records(),
        series,
        cancelled: out.cancelled,
    })
}

/// Per job of a dependent workload: completion, algbw/busbw and slowdown
/// against the ideal flat network (the `ideal` fabric's default latency).
fn dependent_summary(
    plan: &Plan,
    origins: &[u32],
    out: &engine::RunOutput,
    rate: u64,
) -> collective::CollectiveSummary {
    let r = out.recorder.records();
    let n = plan.dag.len();
    let (mut start, mut finish) = (vec![u64::MAX; n], vec![u64::MAX; n]);
    for (id, &node) in origins.iter().enumerate() {
        start[node as usize] = r.start_ps[id];
        finish[node as usize] = r.finish_ps[id];
    }
    let latency = crate::fabric::ideal::IdealParams::default().latency;
    let ideal = collective::ideal_finish(plan, crate::units::Rate(rate), latency);
    collective::summarise(plan, &start, &finish, &ideal)
}

/// Wraps a fabric and checks its invariants after every call, recording
/// violations in the rec (run-time checking, `metrics.check_invariants`).
/// It forwards the fast paths (`batches_arrivals`, `add_flows`,
/// `advance_until`), so a checked run takes the path an unchecked one does;
/// invariants are then checked after each batch and after each
/// `advance_until` (the states a caller can observe), not between the steps
/// the fabric takes inside it.
struct Checked<'a> {
    inner: &'a mut (dyn Fabric + Send),
}

impl Checked<'_> {
    fn check(&self, rec: &mut Recorder) {
        if let Err(e) = self.inner.check_invariants() {
            rec.violation(e);
        }
    }
}

impl Fabric for Checked<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn hosts(&self) -> usize {
        self.inner.hosts()
    }
    fn host_rate(&self) -> crate::units::Rate {
        self.inner.host_rate()
    }
    fn add_flow(&mut self, now: crate::units::SimTime, flow: &Flow, rec: &mut Recorder) {
        self.inner.add_flow(now, flow, rec);
        self.check(rec);
    }
    fn batches_arrivals(&self) -> bool {
        self.inner.batches_arrivals()
    }
    fn add_flows(&mut self, now: SimTime, flows: &[Flow], rec: &mut Recorder) {
        self.inner.add_flows(now, flows, rec);
        self.check(rec);
    }
    fn next_event(&self) -> Option<crate::units::SimTime> {
        self.inner.next_event()
    }
    fn advance(&mut self, now: crate::units::SimTime, rec: &mut Recorder) {
        self.inner.advance(now, rec);
        self.check(rec);
    }
    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        let steps = self.inner.advance_until(now, bound, rec);
        self.check(rec);
        steps
    }
    fn finish(&mut self, end: crate::units::SimTime, rec: &mut Recorder) {
        self.inner.finish(end, rec);
        self.check(rec);
    }
    fn stats(&self) -> crate::fabric::FabricStats {
        self.inner.stats()
    }
}

/// Ping-pong is the closed-loop workload: completions release its flows.
impl Arrivals for PingPong {
    fn peek(&mut self) -> Option<SimTime> {
        PingPong::peek(self)
    }
    fn pop(&mut self) -> Option<Flow> {
        PingPong::pop(self)
    }
    fn closed_loop(&self) -> bool {
        true
    }
    fn completed(&mut self, flow: &Flow, t: SimTime) {
        PingPong::completed(self, flow, t)
    }
}

/// Parses, prepares and runs a TOML config in one call (no progress reporting).
pub fn run_toml(text: &str, paths: &Paths) -> Result<RunResult, Box<dyn std::error::Error>> {
    let cfg = Config::parse(text)?;
    let p = prepare(&cfg, paths)?;
    Ok(simulate(p, &mut |_| true)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::toy::Toy;
    use proptest::prelude::*;

    /// The table of a toy run that ends at `end` (no drain).
    fn toy_table(flows: &[Flow], end: u64, batches: bool) -> FlowTable {
        let mut toy = Toy::new(batches);
        let stop = StopRule {
            duration: Some(SimTime(end)),
            ..StopRule::default()
        };
        let out = engine::run(
            &mut toy,
            &mut flows.iter().copied(),
            &stop,
            Recorder::new(None),
            &mut |_| true,
        );
        assert_eq!(out.recorder.violation_count(), 0);
        out.recorder.into_records()
    }

    #[test]
    fn a_checked_run_takes_the_fast_paths() {
        let flows: Vec<Flow> = (0..20u32)
            .map(|i| Flow::new(i, 0, 1, 100, SimTime(u64::from(i / 2) * 70)))
            .collect();
        for batches in [false, true] {
            let mut toy = Toy::new(batches);
            let mut checked = Checked { inner: &mut toy };
            let out = engine::run(
                &mut checked,
                &mut flows.iter().copied(),
                &StopRule {
                    drain: true,
                    ..StopRule::default()
                },
                Recorder::new(None),
                &mut |_| true,
            );
            assert_eq!(out.recorder.completed(), 20);
            // Open loop, one arrival at a time: the run loop steps the
            // fabric between arrivals by `advance_until`, through the wrapper.
            let c = &toy.calls;
            if batches {
                assert!(c.add_flows > 0, "batches reach the fabric");
            } else {
                assert!(c.advance_until > 0, "advance_until reaches the fabric");
                assert_eq!(c.add_flows, 0);
            }
            // Every call through the wrapper is checked.
            let calls = c.advance + c.advance_until + c.add_flows;
            assert!(c.checks.get() >= calls, "{} checks", c.checks.get());
        }
    }

    #[test]
    fn a_hand_worked_table_with_censored_flows() {
        let f = |id, bytes, start| Flow {
            id,
            src: id,
            dst: 7 - id,
            bytes,
            start: SimTime(start),
        };
        // Ends at 600 ps: flow 0 done at 100; flow 1 has its first half
        // (500 B at 510); flow 2 nothing (first half due at 1,020); flow 3
        // starts after the end.
        let flows = [f(0, 100, 0), f(1, 1_000, 10), f(2, 2_000, 20), f(3, 5, 601)];
        for batches in [false, true] {
            let t = toy_table(&flows, 600, batches);
            assert_eq!(t.len(), 3);
            assert_eq!((&t.src, &t.dst), (&vec![0, 1, 2], &vec![7, 6, 5]));
            assert_eq!(t.bytes, [100, 1_000, 2_000]);
            assert_eq!(t.start_ps, [0, 10, 20]);
            assert_eq!(t.finish_ps, [100, u64::MAX, u64::MAX]);
            assert_eq!((t.finish(0), t.finish(1)), (Some(100), None));
            assert_eq!(t.delivered, [100, 500, 0]);
        }
    }

    proptest! {
        /// The table holds every flow that arrived by the end, in order,
        /// with the finish time and bytes delivered the toy's rule gives
        /// (flows still running at the end: unfinished, part delivered).
        #[test]
        fn the_flow_table_holds_every_flow_in_order(
            spec in prop::collection::vec((0u64..50, 1u64..200, 0u32..1_000, 0u32..1_000), 0..300),
            end in 0u64..6_000,
            batches in any::<bool>(),
        ) {
            let mut t = 0;
            let flows: Vec<Flow> = spec
                .iter()
                .enumerate()
                .map(|(i, &(gap, bytes, src, dst))| {
                    t += gap;
                    Flow { id: i as u32, src, dst, bytes, start: SimTime(t) }
                })
                .collect();
            let table = toy_table(&flows, end, batches);
            let arrived: Vec<&Flow> = flows.iter().filter(|f| f.start.0 <= end).collect();
            let n = arrived.len();
            prop_assert_eq!(table.len(), n);
            prop_assert_eq!(&table.src, &arrived.iter().map(|f| f.src).collect::<Vec<_>>());
            prop_assert_eq!(&table.dst, &arrived.iter().map(|f| f.dst).collect::<Vec<_>>());
            prop_assert_eq!(&table.bytes, &arrived.iter().map(|f| f.bytes).collect::<Vec<_>>());
            prop_assert_eq!(&table.start_ps, &arrived.iter().map(|f| f.start.0).collect::<Vec<_>>());
            for (i, f) in arrived.iter().enumerate() {
                let (s, b) = (f.start.0, f.bytes);
                let done = s + b <= end;
                prop_assert_eq!(table.finish(i), done.then_some(s + b));
                let want = if done { b } else if s + b / 2 <= end { b / 2 } else { 0 };
                prop_assert_eq!(table.delivered[i], want, "flow {}", i);
            }
        }
    }

    /// A run plans and builds its fabric once, through the path the CLI and
    /// Python take (`Config::parse`, then `prepare`) and `run_toml`.
    #[test]
    fn a_run_builds_its_fabric_once() {
        use crate::fabric::registry::builds_on_this_thread;
        let text = "fabric = \"sirius\"\n[topology]\nracks = 4\nservers_per_rack = 2\nuplinks = 2\n[stop]\nflows = 20\n";
        let before = builds_on_this_thread();
        let r = run_toml(text, &crate::scenarios::workload_paths()).unwrap();
        assert!(r.summary.completed > 0);
        assert_eq!(builds_on_this_thread() - before, 1);
    }

    /// `input_files` lists exactly the files `prepare` reads: the CDF and the
    /// trace a config names (resolved the same way), nothing for configs that
    /// read none; a missing file is the same error, naming the same key.
    #[test]
    fn input_files_are_the_files_prepare_reads() {
        let dir = std::env::temp_dir().join(format!("pn-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("t.csv"), "src,dst,bytes,start\n0,1,1000,1us\n").unwrap();
        let paths = Paths {
            base_dir: Some(dir.clone()),
            search: crate::scenarios::workload_paths().search,
        };
        let cfg = |extra: &str| {
            Config::from_toml(&format!(
                "[topology]\nracks = 2\nservers_per_rack = 2\nuplinks = 2\n{extra}"
            ))
            .unwrap()
        };
        let none = cfg("");
        assert!(input_files(&none, &paths).unwrap().is_empty());
        let cdf = cfg("[workload.sizes]\ndist = \"cdf\"\nfile = \"meta_hadoop.cdf\"\n");
        let files = input_files(&cdf, &paths).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "workload.sizes.file");
        assert!(files[0].1.ends_with("meta_hadoop.cdf") && files[0].1.is_file());
        assert!(prepare(&cdf, &paths).is_ok());
        let trace = cfg("[workload.pattern]\nkind = \"trace\"\nfile = \"t.csv\"\n");
        let files = input_files(&trace, &paths).unwrap();
        assert_eq!(files, vec![("workload.pattern.file", dir.join("t.csv"))]);
        assert!(prepare(&trace, &paths).is_ok());
        let missing = cfg("[workload.sizes]\ndist = \"cdf\"\nfile = \"nope.cdf\"\n");
        let a = input_files(&missing, &paths).unwrap_err().to_string();
        let b = prepare(&missing, &paths).err().unwrap().to_string();
        assert_eq!(a, b);
        assert!(a.contains("workload.sizes.file"), "{a}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// All-to-all (every flow at t = 0) without drain or duration used to
    /// simulate 0 µs and report 0 flows with exit 0; now it says why it
    /// cannot run, and runs once it has an end.
    #[test]
    fn flows_all_at_t0_need_drain_or_a_duration() {
        let base = "[topology]\nracks = 4\nservers_per_rack = 2\nuplinks = 2\n\
                    [workload.pattern]\nkind = \"all_to_all\"\nsize = \"10KB\"\n";
        let paths = Paths {
            base_dir: None,
            search: vec![],
        };
        let no_end = Config::from_toml(base).unwrap();
        let e = prepare(&no_end, &paths).err().unwrap().to_string();
        assert!(e.contains("stop.drain") && e.contains("0 µs"), "{e}");
        let drained = Config::from_toml(&format!("{base}[stop]\ndrain = true\n")).unwrap();
        let r = simulate(prepare(&drained, &paths).unwrap(), &mut |_| true).unwrap();
        assert_eq!(r.summary.completed, 56);
    }
}

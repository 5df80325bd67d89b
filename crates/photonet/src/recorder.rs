//! The result recorder: what fabrics report about flows (bytes delivered to the
//! application, completions) and an optional goodput time series. It checks
//! what it is told — no flow gets more bytes than it has, and a flow completes
//! once, with all its bytes — and records violations instead of panicking.

use crate::flow::{Flow, FlowId};
use crate::units::SimTime;

/// At most this many violation messages are kept (the count is exact).
const MAX_VIOLATION_MESSAGES: usize = 100;

/// Bytes delivered per fixed-width time bin. At most `MAX_BINS` bins: a
/// delivery beyond them widens the bins (a run is refused up front when its
/// arrivals alone would need more at the bin asked for).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    pub bin: SimTime,
    pub bytes: Vec<f64>,
}

impl TimeSeries {
    pub fn new(bin: SimTime) -> Self {
        assert!(bin.0 > 0);
        TimeSeries {
            bin,
            bytes: Vec::new(),
        }
    }

    pub const MAX_BINS: usize = 1 << 24;

    /// Doubles the bin width (merging neighbours) until time `t` falls in
    /// the last bin or before.
    fn widen(&mut self, t: u64) {
        while t / self.bin.0 >= Self::MAX_BINS as u64 {
            let n = self.bytes.len().div_ceil(2);
            for i in 0..n {
                let pair = self.bytes[2 * i] + self.bytes.get(2 * i + 1).copied().unwrap_or(0.0);
                self.bytes[i] = pair;
            }
            self.bytes.truncate(n);
            self.bin = SimTime(self.bin.0.saturating_mul(2));
        }
    }

    /// Adds `bytes` spread evenly over [t0, t1] (a point if t0 == t1).
    pub fn add_span(&mut self, t0: SimTime, t1: SimTime, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let (b0, b1) = (
            (t0.0 / self.bin.0) as usize,
            (t1.0.saturating_sub(1).max(t0.0) / self.bin.0) as usize,
        );
        if b1 >= Self::MAX_BINS {
            // Sized for the run: a drained run may outlast the bins its
            // arrivals needed; the bins widen (pairs merge) instead of
            // dropping later deliveries. `bin` says the width kept.
            self.widen(t1.0.saturating_sub(1).max(t0.0));
            return self.add_span(t0, t1, bytes);
        }
        if self.bytes.len() <= b1 {
            self.bytes.resize(b1 + 1, 0.0);
        }
        if b0 == b1 || t1 <= t0 {
            self.bytes[b0] += bytes as f64;
            return;
        }
        let span = (t1.0 - t0.0) as f64;
        for b in b0..=b1 {
            let lo = (b as u64 * self.bin.0).max(t0.0);
            let hi = ((b as u64 + 1) * self.bin.0).min(t1.0);
            self.bytes[b] += bytes as f64 * (hi.saturating_sub(lo)) as f64 / span;
        }
    }
}

/// Bytes delivered over time at a coarse, self-adjusting resolution: at most
/// `MAX_BINS` bins whose width doubles (merging neighbours) whenever a
/// delivery falls beyond the last one. It lets summaries measure goodput over
/// a window chosen after the run (steady state), to within two bins, with
/// bounded memory and O(1) amortised cost per delivery.
#[derive(Clone, Debug, PartialEq)]
pub struct CoarseSeries {
    bin: u64,
    /// `bin` is 1 ns · 2^`shift` (it starts at 1 ns and only doubles).
    shift: u32,
    bytes: Vec<f64>,
}

impl CoarseSeries {
    pub const MAX_BINS: usize = 1024;
    /// The first bin width, in ps (1 ns).
    const BIN0: u64 = 1_000;

    pub fn new() -> Self {
        CoarseSeries {
            bin: Self::BIN0,
            shift: 0,
            bytes: vec![0.0; Self::MAX_BINS],
        }
    }

    fn fit(&mut self, t: u64) {
        while t / self.bin >= Self::MAX_BINS as u64 {
            for i in 0..Self::MAX_BINS / 2 {
                self.bytes[i] = self.bytes[2 * i] + self.bytes[2 * i + 1];
            }
            self.bytes[Self::MAX_BINS / 2..].fill(0.0);
            self.bin *= 2;
            self.shift += 1;
        }
    }

    /// `bytes` delivered evenly over [t0, t1].
    pub fn add_span(&mut self, t0: SimTime, t1: SimTime, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.fit(t1.0);
        let (b0, b1) = (t0.0 / self.bin, t1.0.saturating_sub(1).max(t0.0) / self.bin);
        if b0 == b1 || t1 <= t0 {
            self.bytes[b0 as usize] += bytes as f64;
            return;
        }
        let span = (t1.0 - t0.0) as f64;
        for b in b0..=b1 {
            let lo = (b * self.bin).max(t0.0);
            let hi = ((b + 1) * self.bin).min(t1.0);
            self.bytes[b as usize] += bytes as f64 * hi.saturating_sub(lo) as f64 / span;
        }
    }

    /// `bytes` delivered at the point `t`: the same as `add_span(t, t, bytes)`
    /// without a division (a packet-level fabric's hot path).
    #[inline]
    pub fn add_point(&mut self, t: SimTime, bytes: u64) {
        if bytes == 0 {
            return;
        }
        // The bin is 1 ns · 2^shift: a division by a constant and a shift
        // (⌊⌊t/a⌋/b⌋ = ⌊t/(ab)⌋).
        let mut b = (t.0 / Self::BIN0) >> self.shift;
        if b >= Self::MAX_BINS as u64 {
            self.fit(t.0);
            b = t.0 / self.bin;
        }
        self.bytes[b as usize] += bytes as f64;
    }

    /// Bytes delivered in [t0, t1), taking a bin's bytes as spread evenly over it.
    pub fn bytes_between(&self, t0: SimTime, t1: SimTime) -> f64 {
        let mut total = 0.0;
        for (i, &b) in self.bytes.iter().enumerate() {
            let (lo, hi) = (i as u64 * self.bin, (i as u64 + 1) * self.bin);
            let overlap = hi.min(t1.0).saturating_sub(lo.max(t0.0));
            total += b * overlap as f64 / self.bin as f64;
        }
        total
    }

    /// The current bin width (the resolution of `bytes_between`).
    pub fn bin(&self) -> SimTime {
        SimTime(self.bin)
    }
}

impl Default for CoarseSeries {
    fn default() -> Self {
        Self::new()
    }
}

/// The per-flow record of a run, one column per field (struct of arrays;
/// index = flow id): what the workload gave (`src`, `dst`, `bytes`,
/// `start_ps`) and what the fabric reported (`finish_ps`, `delivered`). 40 B
/// per flow, the run's only per-flow memory outside the fabric; it becomes
/// the result table without a copy ([`Recorder::into_records`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowRecords {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub bytes: Vec<u64>,
    pub start_ps: Vec<u64>,
    /// Completion time in ps; [`FlowRecords::UNFINISHED`] while unfinished.
    pub finish_ps: Vec<u64>,
    /// Bytes delivered to the destination application.
    pub delivered: Vec<u64>,
}

impl FlowRecords {
    /// `finish_ps` of a flow that has not completed. No simulated time reaches
    /// it (times are at most `limits::TIME_PS`, 2^60 ps).
    pub const UNFINISHED: u64 = u64::MAX;

    pub fn len(&self) -> usize {
        self.src.len()
    }
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
    /// Flow `i`'s completion time in ps (None: unfinished).
    pub fn finish(&self, i: usize) -> Option<u64> {
        let f = self.finish_ps[i];
        (f != Self::UNFINISHED).then_some(f)
    }
    /// Flow `i` as the workload gave it.
    pub fn flow(&self, i: usize) -> Flow {
        Flow {
            id: i as FlowId,
            src: self.src[i],
            dst: self.dst[i],
            bytes: self.bytes[i],
            start: SimTime(self.start_ps[i]),
        }
    }
    fn reserve_exact(&mut self, n: usize) {
        self.src.reserve_exact(n);
        self.dst.reserve_exact(n);
        self.bytes.reserve_exact(n);
        self.start_ps.reserve_exact(n);
        self.finish_ps.reserve_exact(n);
        self.delivered.reserve_exact(n);
    }
    #[inline(always)]
    fn push(&mut self, f: &Flow) {
        self.src.push(f.src);
        self.dst.push(f.dst);
        self.bytes.push(f.bytes);
        self.start_ps.push(f.start.0);
        self.finish_ps.push(Self::UNFINISHED);
        self.delivered.push(0);
    }
}

/// Collects what a fabric reports during a run.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Every flow registered so far, with its deliveries and completion.
    flows: FlowRecords,
    completed: u64,
    last_completion: SimTime,
    internal_events: u64,
    /// Deliveries reported so far (the run loop's progress watchdog).
    deliveries: u64,
    series: Option<TimeSeries>,
    coarse: CoarseSeries,
    violations: Vec<String>,
    violation_count: u64,
    /// Completions not yet taken, when logging (closed-loop workloads).
    completion_log: Option<Vec<(FlowId, SimTime)>>,
}

impl Recorder {
    pub fn new(series: Option<TimeSeries>) -> Self {
        Recorder {
            series,
            ..Default::default()
        }
    }

    /// Room for `n` flows (when the run's flow count is known).
    pub fn reserve(&mut self, n: usize) {
        self.flows.reserve_exact(n);
    }

    /// Keep a log of completions for [`Recorder::take_completions`] (the
    /// run loop's feedback to closed-loop workloads).
    pub fn log_completions(&mut self, on: bool) {
        self.completion_log = on.then(Vec::new);
    }

    /// Moves the completions logged since the last call into `out` (cleared
    /// first), in the order they were reported.
    pub fn take_completions(&mut self, out: &mut Vec<(FlowId, SimTime)>) {
        out.clear();
        if let Some(log) = &mut self.completion_log {
            std::mem::swap(log, out);
        }
    }

    /// Whether completions were logged and not yet taken.
    #[inline]
    pub fn has_logged_completions(&self) -> bool {
        self.completion_log.as_ref().is_some_and(|l| !l.is_empty())
    }

    /// A new flow (ids must be dense and in arrival order).
    #[inline(always)]
    pub fn register(&mut self, f: &Flow) {
        assert_eq!(
            f.id as usize,
            self.flows.len(),
            "flow ids must be dense and in order"
        );
        self.flows.push(f);
    }

    /// Flow `id` grew by `extra` bytes (a carrier's flow that outside
    /// traffic extends, `net::ClassFlows`): it is unfinished again until
    /// they are delivered, so its checks keep holding.
    pub fn grow(&mut self, id: FlowId, extra: u64) {
        let i = id as usize;
        let b = &mut self.flows.bytes[i];
        *b = b.checked_add(extra).expect("recorder: flow size overflow");
        if self.flows.finish_ps[i] != FlowRecords::UNFINISHED {
            self.flows.finish_ps[i] = FlowRecords::UNFINISHED;
            self.completed -= 1;
        }
    }

    /// Records a broken invariant (a fabric bug, or a check failing at run time).
    pub fn violation(&mut self, msg: String) {
        self.violation_count += 1;
        if self.violations.len() < MAX_VIOLATION_MESSAGES {
            self.violations.push(msg);
        }
    }

    /// `bytes` of flow `id` reached the destination application at `t`.
    pub fn deliver(&mut self, id: FlowId, t: SimTime, bytes: u64) {
        self.deliver_span(id, t, t, bytes);
    }

    /// `bytes` of flow `id` arrived at `t` and, if they were its last (the
    /// recorder now holds all its bytes), the flow completes at `done`. A
    /// fabric whose bytes of one flow arrive out of order (by circuit and by
    /// packet switch) passes the latest arrival so far; others pass `t`.
    pub fn deliver_and_complete(&mut self, id: FlowId, t: SimTime, bytes: u64, done: SimTime) {
        self.deliver(id, t, bytes);
        let i = id as usize;
        if self.flows.delivered[i] == self.flows.bytes[i] {
            self.complete(id, done);
        }
    }

    /// `bytes` of flow `id` arrived evenly over [t0, t1] (fluid models).
    pub fn deliver_span(&mut self, id: FlowId, t0: SimTime, t1: SimTime, bytes: u64) {
        self.tally_delivery(id, bytes);
        if let Some(s) = &mut self.series {
            s.add_span(t0, t1, bytes);
        }
        self.coarse.add_span(t0, t1, bytes);
    }

    /// The same as [`Recorder::deliver`] (`bytes` of flow `id` at the point
    /// `t`), with the coarse series' point path.
    #[inline]
    pub fn deliver_point(&mut self, id: FlowId, t: SimTime, bytes: u64) {
        if self.series.is_some() {
            // The fine series: the span path.
            self.deliver_span(id, t, t, bytes);
            return;
        }
        self.tally_delivery(id, bytes);
        self.coarse.add_point(t, bytes);
    }

    /// Adds `bytes` to flow `id`'s delivered count (a violation past its size).
    #[inline]
    fn tally_delivery(&mut self, id: FlowId, bytes: u64) {
        self.deliveries += 1;
        let i = id as usize;
        let d = &mut self.flows.delivered[i];
        *d = d.saturating_add(bytes);
        let (delivered, size) = (*d, self.flows.bytes[i]);
        if delivered > size {
            let msg = format!("flow {id}: delivered {delivered} B of a {size} B flow");
            self.violation(msg);
        }
    }

    /// The last `bytes` of flow `id` reached the destination application at
    /// `t`, completing it: the same as [`Recorder::deliver_point`] then
    /// [`Recorder::complete`] (the same checks, violations and messages, in
    /// the same order), with one look at the flow's record when it all holds
    /// (a single-packet flow's hot path).
    #[inline]
    pub fn deliver_last(&mut self, id: FlowId, t: SimTime, bytes: u64) {
        let i = id as usize;
        let size = self.flows.bytes[i];
        let delivered = self.flows.delivered[i].saturating_add(bytes);
        if self.series.is_none()
            && delivered == size
            && self.flows.finish_ps[i] == FlowRecords::UNFINISHED
            && t.0 != FlowRecords::UNFINISHED
        {
            // Neither call would record a violation.
            self.deliveries += 1;
            self.flows.delivered[i] = delivered;
            self.coarse.add_point(t, bytes);
            self.finished(id, t);
        } else {
            self.deliver_point(id, t, bytes);
            self.complete(id, t);
        }
    }

    /// Flow `id` completed at `t` (all its bytes delivered to the application).
    pub fn complete(&mut self, id: FlowId, t: SimTime) {
        let i = id as usize;
        if self.flows.finish_ps[i] != FlowRecords::UNFINISHED {
            self.violation(format!("flow {id} completed twice"));
            return;
        }
        if t.0 == FlowRecords::UNFINISHED {
            // Beyond every simulated time (and the record's "unfinished").
            self.violation(format!("flow {id} completed at {t}, past every time"));
            return;
        }
        let (delivered, size) = (self.flows.delivered[i], self.flows.bytes[i]);
        if delivered != size {
            let msg = format!("flow {id} completed with {delivered} of {size} B delivered");
            self.violation(msg);
        }
        self.finished(id, t);
    }

    /// Records flow `id`'s completion at `t` (checked by the caller).
    #[inline]
    fn finished(&mut self, id: FlowId, t: SimTime) {
        self.flows.finish_ps[id as usize] = t.0;
        if let Some(log) = &mut self.completion_log {
            log.push((id, t));
        }
        self.completed += 1;
        self.last_completion = self.last_completion.max(t);
    }

    /// Counts `n` events a fabric processed internally (slots, completions),
    /// for the manifest's event count.
    pub fn count_internal_events(&mut self, n: u64) {
        self.internal_events += n;
    }

    pub fn flows(&self) -> usize {
        self.flows.len()
    }
    /// Flow `id` as registered.
    pub fn flow(&self, id: FlowId) -> Flow {
        self.flows.flow(id as usize)
    }
    /// Every flow's record so far.
    pub fn records(&self) -> &FlowRecords {
        &self.flows
    }
    pub fn delivered(&self, id: FlowId) -> u64 {
        self.flows.delivered[id as usize]
    }
    pub fn finish(&self, id: FlowId) -> Option<SimTime> {
        self.flows.finish(id as usize).map(SimTime)
    }
    pub fn completed(&self) -> u64 {
        self.completed
    }
    pub fn last_completion(&self) -> SimTime {
        self.last_completion
    }
    pub fn internal_events(&self) -> u64 {
        self.internal_events
    }
    /// Deliveries reported so far (any flow, any size).
    #[inline]
    pub fn deliveries(&self) -> u64 {
        self.deliveries
    }

    /// Flows completed after `end` are unfinished again: a run's results
    /// stop at its end (one pass over the record, once per run). Their
    /// bytes stay delivered.
    pub fn censor_after(&mut self, end: SimTime) {
        if self.last_completion <= end {
            return;
        }
        let mut last = SimTime::ZERO;
        for f in self.flows.finish_ps.iter_mut() {
            if *f == FlowRecords::UNFINISHED {
                continue;
            }
            if *f > end.0 {
                *f = FlowRecords::UNFINISHED;
                self.completed -= 1;
            } else {
                last = last.max(SimTime(*f));
            }
        }
        self.last_completion = last;
    }
    /// Bytes delivered over all flows (u128: a sum of many large flows must
    /// not wrap).
    pub fn delivered_total(&self) -> u128 {
        self.flows.delivered.iter().map(|&d| d as u128).sum()
    }
    /// Deliveries over time at a coarse resolution (always kept).
    pub fn coarse(&self) -> &CoarseSeries {
        &self.coarse
    }
    pub fn series(&self) -> Option<&TimeSeries> {
        self.series.as_ref()
    }
    pub fn take_series(&mut self) -> Option<TimeSeries> {
        self.series.take()
    }
    /// Consumes the recorder: the per-flow record (no copy).
    pub fn into_records(self) -> FlowRecords {
        self.flows
    }
    /// The first violation messages (see [`Recorder::violation_count`]).
    pub fn violations(&self) -> &[String] {
        &self.violations
    }
    pub fn violation_count(&self) -> u64 {
        self.violation_count
    }
}

/// The 1-based nearest rank of the `p`-th percentile of `n` values (p in
/// (0, 100]): the one percentile rule of photonet.
pub fn nearest_rank(n: usize, p: f64) -> usize {
    (((p / 100.0) * n as f64).ceil() as usize).clamp(1, n)
}

/// The `p`-th percentile by nearest rank of sorted values (p in (0, 100]).
/// Here, below the fabrics, so a fabric's own statistics use the same rule
/// as the run's summary.
pub fn percentile_sorted<T: Copy>(sorted: &[T], p: f64) -> T {
    assert!(!sorted.is_empty());
    sorted[nearest_rank(sorted.len(), p) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u32, bytes: u64) -> Flow {
        Flow {
            id,
            src: 0,
            dst: 1,
            bytes,
            start: SimTime::ZERO,
        }
    }

    #[test]
    fn time_series_spreads_bytes_in_proportion() {
        let mut ts = TimeSeries::new(SimTime(10));
        ts.add_span(SimTime(5), SimTime(25), 200);
        assert_eq!(ts.bytes, vec![50.0, 100.0, 50.0]);
        ts.add_span(SimTime(30), SimTime(30), 7);
        assert_eq!(ts.bytes[3], 7.0);
        let total: f64 = ts.bytes.iter().sum();
        assert_eq!(total, 207.0);
    }

    /// A drained run outlasting the series' bins used to drop later
    /// deliveries (and flag it); the bins now widen and keep every byte.
    #[test]
    fn a_series_widens_instead_of_dropping_late_deliveries() {
        let mut ts = TimeSeries::new(SimTime(1));
        ts.add_span(SimTime(3), SimTime(3), 5);
        let far = TimeSeries::MAX_BINS as u64 * 3;
        ts.add_span(SimTime(far), SimTime(far), 7);
        assert_eq!(ts.bin, SimTime(4));
        assert!(ts.bytes.len() <= TimeSeries::MAX_BINS);
        assert_eq!((ts.bytes[0], ts.bytes[(far / 4) as usize]), (5.0, 7.0));
        assert_eq!(ts.bytes.iter().sum::<f64>(), 12.0);
    }

    /// Completions reported after the run's end are not counted.
    #[test]
    fn completions_after_the_end_are_censored() {
        let mut r = Recorder::new(None);
        for (i, t) in [10u64, 20, 30].into_iter().enumerate() {
            r.register(&flow(i as u32, 1));
            r.deliver(i as u32, SimTime(t), 1);
            r.complete(i as u32, SimTime(t));
        }
        r.censor_after(SimTime(20));
        assert_eq!((r.completed(), r.last_completion()), (2, SimTime(20)));
        assert_eq!((r.finish(1), r.finish(2)), (Some(SimTime(20)), None));
    }

    #[test]
    fn coarse_series_keeps_totals_and_windows_as_it_widens() {
        let mut c = CoarseSeries::new();
        // 1 B every 100 ns for 1 ms, then a span of 1,000 B over [2 ms, 3 ms].
        for k in 0..10_000u64 {
            c.add_span(SimTime(k * 100_000), SimTime(k * 100_000), 1);
        }
        c.add_span(SimTime::ms(2), SimTime::ms(3), 1_000);
        assert!(c.bin().0 >= SimTime::ms(3).0 / CoarseSeries::MAX_BINS as u64);
        let all = c.bytes_between(SimTime::ZERO, SimTime::ms(10));
        assert!((all - 11_000.0).abs() < 1e-6, "{all}");
        // A window far wider than a bin is exact to within two bins' worth.
        let w = c.bytes_between(SimTime::us(200), SimTime::us(700));
        let per_bin = c.bin().0 as f64 / 100_000.0;
        assert!((w - 5_000.0).abs() <= 2.0 * per_bin, "{w}");
        let w = c.bytes_between(
            SimTime::ms(2),
            SimTime(SimTime::ms(2).0 + SimTime::us(500).0),
        );
        assert!(
            (w - 500.0).abs() <= 2.0 * 1_000.0 * c.bin().0 as f64 / SimTime::ms(1).0 as f64,
            "{w}"
        );
    }

    #[test]
    fn over_delivery_and_double_completion_are_violations() {
        let mut r = Recorder::new(None);
        r.register(&flow(0, 100));
        r.register(&flow(1, 50));
        r.deliver(0, SimTime(1), 60);
        r.complete(0, SimTime(2)); // 60 of 100
        assert_eq!(r.violation_count(), 1);
        r.deliver(1, SimTime(1), 50);
        r.complete(1, SimTime(3));
        r.complete(1, SimTime(4));
        assert_eq!(r.violation_count(), 2);
        r.deliver(1, SimTime(5), 1);
        assert_eq!(r.violation_count(), 3);
        assert!(r.violations()[2].contains("delivered 51 B of a 50 B flow"));
        assert_eq!((r.completed(), r.last_completion()), (2, SimTime(3)));
        assert_eq!(r.delivered_total(), 111);
    }

    #[test]
    fn a_grown_flow_is_unfinished_until_its_new_bytes_arrive() {
        let mut r = Recorder::new(None);
        r.register(&flow(0, 1_000));
        r.deliver(0, SimTime(10), 1_000);
        r.complete(0, SimTime(10));
        assert_eq!((r.completed(), r.finish(0)), (1, Some(SimTime(10))));
        r.grow(0, 500);
        assert_eq!((r.completed(), r.finish(0)), (0, None));
        r.deliver(0, SimTime(20), 500);
        r.complete(0, SimTime(20));
        assert_eq!((r.completed(), r.finish(0)), (1, Some(SimTime(20))));
        assert_eq!(r.violation_count(), 0);
        // Growing a flow still in flight only raises its size.
        r.register(&flow(1, 100));
        r.grow(1, 100);
        r.deliver(1, SimTime(30), 200);
        r.complete(1, SimTime(30));
        assert_eq!((r.delivered(1), r.violation_count()), (200, 0));
        // Without the growth, the same deliveries break the flow's checks.
        r.register(&flow(2, 100));
        r.deliver(2, SimTime(40), 200);
        assert_eq!(r.violation_count(), 1);
    }

    #[test]
    fn the_record_keeps_each_flow_and_its_outcome() {
        let mut r = Recorder::new(None);
        let f = Flow {
            id: 0,
            src: 3,
            dst: 9,
            bytes: 700,
            start: SimTime(40),
        };
        r.register(&f);
        r.register(&flow(1, 5));
        assert_eq!(r.flow(0), f);
        r.deliver_point(0, SimTime(50), 300);
        r.deliver_point(0, SimTime(60), 400);
        r.complete(0, SimTime(60));
        // A completion at the sentinel time cannot be recorded.
        r.deliver(1, SimTime(1), 5);
        r.complete(1, SimTime(u64::MAX));
        assert_eq!(r.violation_count(), 1);
        assert_eq!((r.finish(0), r.finish(1)), (Some(SimTime(60)), None));
        let t = r.into_records();
        assert_eq!(t.finish_ps, [60, FlowRecords::UNFINISHED]);
        assert_eq!(t.delivered, [700, 5]);
        assert_eq!(
            (t.src, t.dst, t.bytes, t.start_ps),
            (vec![3, 0], vec![9, 1], vec![700, 5], vec![40, 0])
        );
    }

    /// One step of a fabric's reports about flow `flow` (of 4) at `t`.
    #[derive(Clone, Debug)]
    enum Op {
        /// `deliver_last`, or (oracle) `deliver_point` then `complete`.
        Last {
            flow: u32,
            t: u64,
            bytes: u64,
        },
        Point {
            flow: u32,
            t: u64,
            bytes: u64,
        },
        Complete {
            flow: u32,
            t: u64,
        },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        // Small sizes and byte counts so that exact, short and over-deliveries
        // all happen; times up to 2^50 ps widen the coarse series, and the
        // sentinel time is a violation (and past the fine series' last bin).
        let t = prop_oneof![0u64..5_000_000, 0u64..(1 << 50), Just(u64::MAX)];
        prop_oneof![
            (0u32..4, t.clone(), 0u64..6).prop_map(|(flow, t, bytes)| Op::Last { flow, t, bytes }),
            (0u32..4, t.clone(), 0u64..6).prop_map(|(flow, t, bytes)| Op::Point { flow, t, bytes }),
            (0u32..4, t).prop_map(|(flow, t)| Op::Complete { flow, t }),
        ]
    }

    proptest::proptest! {
        /// `deliver_last` against its definition, `deliver_point` then
        /// `complete`, on random report sequences (over-deliveries, short
        /// completions, double completions and the sentinel time included),
        /// with and without a fine time series and a completion log: every
        /// record, count, message, series and log is the same.
        #[test]
        fn deliver_last_is_deliver_point_then_complete(
            sizes in proptest::collection::vec(1u64..6, 4),
            ops in proptest::collection::vec(op(), 0..40),
            fine in proptest::bool::ANY,
            log in proptest::bool::ANY,
        ) {
            let mk = || {
                let mut r = Recorder::new(fine.then(|| TimeSeries::new(SimTime(1 << 39))));
                r.log_completions(log);
                for (i, &b) in sizes.iter().enumerate() {
                    r.register(&flow(i as u32, b));
                }
                r
            };
            let (mut fused, mut oracle) = (mk(), mk());
            for o in &ops {
                match *o {
                    Op::Last { flow, t, bytes } => {
                        fused.deliver_last(flow, SimTime(t), bytes);
                        oracle.deliver_point(flow, SimTime(t), bytes);
                        oracle.complete(flow, SimTime(t));
                    }
                    Op::Point { flow, t, bytes } => {
                        fused.deliver_point(flow, SimTime(t), bytes);
                        oracle.deliver_point(flow, SimTime(t), bytes);
                    }
                    Op::Complete { flow, t } => {
                        fused.complete(flow, SimTime(t));
                        oracle.complete(flow, SimTime(t));
                    }
                }
            }
            proptest::prop_assert_eq!(fused.records(), oracle.records());
            proptest::prop_assert_eq!(fused.violations(), oracle.violations());
            proptest::prop_assert_eq!(fused.violation_count(), oracle.violation_count());
            proptest::prop_assert_eq!(fused.completed(), oracle.completed());
            proptest::prop_assert_eq!(fused.last_completion(), oracle.last_completion());
            proptest::prop_assert_eq!(fused.coarse(), oracle.coarse());
            proptest::prop_assert_eq!(fused.series(), oracle.series());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            fused.take_completions(&mut a);
            oracle.take_completions(&mut b);
            proptest::prop_assert_eq!(a, b);
        }

        /// The coarse series' point path against its span path (a division
        /// by the bin width), as the series widens.
        #[test]
        fn coarse_point_is_a_zero_width_span(
            pts in proptest::collection::vec((0u64..(1 << 62), 0u64..1_000), 1..60),
        ) {
            let (mut p, mut s) = (CoarseSeries::new(), CoarseSeries::new());
            for &(t, b) in &pts {
                p.add_point(SimTime(t), b);
                s.add_span(SimTime(t), SimTime(t), b);
                proptest::prop_assert_eq!(&p, &s);
            }
        }
    }
}

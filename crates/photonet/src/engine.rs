//! The run loop: feeds a workload to a [`Fabric`] in time order, interleaving
//! arrivals with the fabric's own events, and collects what it reports in a
//! [`Recorder`].
//!
//! The loop asks the fabric for `next_event()` once per iteration, so that call
//! must be O(1) (keep a counter or the head of a queue; never scan ports).

use crate::fabric::{Fabric, Looks};
use crate::flow::Flow;
use crate::recorder::Recorder;
use crate::units::SimTime;

/// Where the run loop takes its flows from, in start-time order. An open-loop
/// workload knows every flow in advance (any `Iterator<Item = Flow>`, through
/// [`FromIter`]); a closed-loop one (ping-pong) releases flows when earlier
/// ones complete: the run loop reports every completion to it.
pub trait Arrivals {
    /// The start time of the next flow known now; None if none is known
    /// (for a closed-loop workload, completions may release more later).
    fn peek(&mut self) -> Option<SimTime>;
    /// Takes the next flow known now (the one `peek` timed, if it was
    /// called). Ids are dense, in the order flows are taken.
    fn pop(&mut self) -> Option<Flow>;
    /// Whether completions can release flows (the run loop then reports them
    /// through `completed` and keeps going while `peek` is None).
    fn closed_loop(&self) -> bool {
        false
    }
    /// `flow` completed at `t` (called in completion order, only when
    /// `closed_loop`). Flows it releases start at `t` or later.
    fn completed(&mut self, _flow: &Flow, _t: SimTime) {}
    /// A dependent workload's node behind each flow id taken so far (for
    /// its metrics); None for other workloads.
    fn origins(&self) -> Option<&[u32]> {
        None
    }
    /// A mixed workload's stream behind each flow id taken so far; None
    /// for a single stream.
    fn streams(&self) -> Option<&[u8]> {
        None
    }
}

impl Arrivals for crate::workload::mix::Mixed {
    fn peek(&mut self) -> Option<SimTime> {
        crate::workload::mix::Mixed::peek(self)
    }
    fn pop(&mut self) -> Option<Flow> {
        crate::workload::mix::Mixed::pop(self)
    }
    fn streams(&self) -> Option<&[u8]> {
        Some(self.tags())
    }
}

/// An iterator of flows sorted by start time, as [`Arrivals`].
pub struct FromIter<I: Iterator<Item = Flow>> {
    it: I,
    head: Option<Flow>,
}

impl<I: Iterator<Item = Flow>> FromIter<I> {
    pub fn new(it: I) -> Self {
        FromIter { it, head: None }
    }
}

impl<I: Iterator<Item = Flow>> Arrivals for FromIter<I> {
    fn peek(&mut self) -> Option<SimTime> {
        if self.head.is_none() {
            self.head = self.it.next();
        }
        self.head.as_ref().map(|f| f.start)
    }
    fn pop(&mut self) -> Option<Flow> {
        match self.head.take() {
            Some(f) => Some(f),
            None => self.it.next(),
        }
    }
}

/// When the run stops.
#[derive(Clone, Debug, Default)]
pub struct StopRule {
    /// Stop generating flows after this many.
    pub max_flows: Option<u64>,
    /// Stop generating flows after this time, and end the run there (unless draining).
    pub duration: Option<SimTime>,
    /// Keep simulating after the last arrival until every flow completes.
    pub drain: bool,
    /// Cap on the simulated time spent draining, after the last arrival.
    pub drain_limit: Option<SimTime>,
    /// The progress watchdog: stop with [`RunOutput::stalled`] when flows are
    /// pending and nothing was delivered for this long (None: no watchdog).
    pub stall_limit: Option<SimTime>,
}

impl StopRule {
    /// Without drain, the run ends when arrivals stop: at the last arrival
    /// when the flow count stopped them first (or when there is no duration),
    /// else at the duration.
    fn end_without_drain(&self, last_arrival: SimTime, count_came_first: bool) -> SimTime {
        match self.duration {
            Some(d) if !count_came_first => d,
            _ => last_arrival,
        }
    }
}

/// What the run loop reports to a progress observer; returning `false` cancels.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: SimTime,
    pub flows_arrived: u64,
    pub flows_completed: u64,
    pub events: u64,
}

/// Everything a run produced, before it is summarised. The flows themselves
/// are in the recorder ([`Recorder::records`]): the run loop keeps nothing
/// per flow.
pub struct RunOutput {
    pub recorder: Recorder,
    pub end_time: SimTime,
    pub events: u64,
    pub cancelled: bool,
    /// Set when the watchdog stopped the run: "stalled: N flows pending, …".
    pub stalled: Option<String>,
}

/// The progress watchdog's state: when a delivery (or an idle moment, no
/// flow pending) was last seen by the run loop; and when progress is next
/// reported.
struct Watchdog {
    limit: SimTime,
    deliveries: u64,
    since: SimTime,
    next_report: u64,
}

/// Why the run loop stopped early.
enum Halt {
    /// The watchdog's message.
    Stalled(String),
    /// The progress callback cancelled the run.
    Cancelled,
}

/// Progress is reported every this many events of the run loop.
const REPORT_EVERY: u64 = 1 << 14;

impl Watchdog {
    fn new(limit: Option<SimTime>) -> Self {
        Watchdog {
            limit: limit.unwrap_or(SimTime::MAX),
            deliveries: 0,
            since: SimTime::ZERO,
            next_report: 0,
        }
    }

    /// After each trip of the run loop (at `now`, `events` so far): the
    /// stall check, then every [`REPORT_EVERY`] events a progress report.
    /// Some: the run stops.
    #[inline]
    fn after_trip(
        &mut self,
        now: SimTime,
        events: u64,
        rec: &Recorder,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Option<Halt> {
        if let Some(m) = self.look(now, rec) {
            return Some(Halt::Stalled(m));
        }
        if events >= self.next_report {
            self.next_report = events + REPORT_EVERY;
            if !report(progress, now, rec, events) {
                return Some(Halt::Cancelled);
            }
        }
        None
    }

    /// Looks at the run at `now`: Some(message) once pending flows have seen
    /// no delivery for longer than the limit.
    #[inline]
    fn look(&mut self, now: SimTime, rec: &Recorder) -> Option<String> {
        let d = rec.deliveries();
        if d != self.deliveries || rec.completed() == rec.flows() as u64 {
            self.deliveries = d;
            self.since = now;
            return None;
        }
        if now.0.saturating_sub(self.since.0) <= self.limit.0 {
            return None;
        }
        Some(format!(
            "stalled: {} flows pending, no delivery since {} (stop.stall_limit = {}; at {})",
            rec.flows() as u64 - rec.completed(),
            self.since,
            self.limit,
            now
        ))
    }

    /// What a look would skip after `events` (see [`Looks`]): exactly the
    /// steps at which [`Watchdog::after_trip`] changes nothing.
    #[inline]
    fn looks(&self, events: u64) -> Looks {
        Looks {
            deliveries: self.deliveries,
            quiet_until: self.since.saturating_add(self.limit),
            report_in: self.next_report.saturating_sub(events),
            skipped: 0,
        }
    }

    /// The latest time the fabric may run to before the run loop looks again.
    #[inline]
    fn bound(&self, limit: SimTime) -> SimTime {
        limit.min(
            self.since
                .saturating_add(self.limit)
                .saturating_add(SimTime(1)),
        )
    }
}

/// Tells `progress` where the run is (`events` the loop's own so far);
/// false: cancel.
fn report(
    progress: &mut dyn FnMut(Progress) -> bool,
    now: SimTime,
    rec: &Recorder,
    events: u64,
) -> bool {
    progress(Progress {
        now,
        flows_arrived: rec.flows() as u64,
        flows_completed: rec.completed(),
        events: events + rec.internal_events(),
    })
}

/// Feeds `arrivals` (sorted by start time) to `fabric` until `stop`, collecting
/// completions. Fabric events at time t run before arrivals at the same t.
pub fn run(
    fabric: &mut dyn Fabric,
    arrivals: &mut dyn Iterator<Item = Flow>,
    stop: &StopRule,
    rec: Recorder,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> RunOutput {
    run_arrivals(fabric, &mut FromIter::new(arrivals), stop, rec, progress)
}

/// [`run`] for any [`Arrivals`], closed-loop ones included: completions are
/// reported to the workload before each step, so the flows they release
/// start at their completion time.
pub fn run_arrivals(
    fabric: &mut dyn Fabric,
    arrivals: &mut dyn Arrivals,
    stop: &StopRule,
    mut rec: Recorder,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> RunOutput {
    if let Some(m) = stop.max_flows {
        // The flow count is known: no regrowth (copies, and up to twice the
        // memory) for runs of millions of flows.
        rec.reserve(m.min(1 << 24) as usize);
    }
    // The flows arrived so far are the recorder's; one batch of arrivals
    // at a time is here (fabrics that take them together).
    let mut batch: Vec<Flow> = Vec::new();
    let closed = arrivals.closed_loop();
    if closed {
        rec.log_completions(true);
    }
    let mut done_log: Vec<(u32, SimTime)> = Vec::new();
    let mut events: u64 = 0;
    // Set when the stop rule ends the arrivals (for good).
    let mut arrivals_over = false;
    let mut last_arrival = SimTime::ZERO;
    let mut halt = None;
    let horizon = stop.duration.unwrap_or(SimTime::MAX);
    // Set when the flow count ends the arrivals before the duration does.
    let mut count_came_first = false;
    let mut watchdog = Watchdog::new(stop.stall_limit);

    // Open loop, one arrival at a time (most fabrics): the next flow is
    // taken at once and held here, so a trip only compares its start with
    // the fabric's next event. When arrivals end (no flow left, or the count
    // or the duration reached) this stretch marks them over exactly as the
    // general loop below would, and that loop finishes the run (the flow
    // held past the stop rule is one it would never take either).
    if !closed && !fabric.batches_arrivals() {
        let max_flows = stop.max_flows.unwrap_or(u64::MAX);
        let mut next = arrivals.pop();
        loop {
            let Some(f) = &next else {
                arrivals_over = true;
                break;
            };
            let a = f.start;
            let over_count = rec.flows() as u64 >= max_flows;
            if over_count || a > horizon {
                count_came_first = over_count && a <= horizon;
                arrivals_over = true;
                break;
            }
            let now = match fabric.next_event() {
                Some(b) if b <= a => {
                    events += fabric.advance_until(b, watchdog.bound(a), &mut rec) - 1;
                    b
                }
                _ => {
                    debug_assert!(a >= last_arrival, "arrivals must be sorted by start");
                    last_arrival = a;
                    rec.register(f);
                    fabric.add_flow(a, f, &mut rec);
                    next = arrivals.pop();
                    a
                }
            };
            events += 1;
            halt = watchdog.after_trip(now, events, &rec, progress);
            if halt.is_some() {
                break;
            }
        }
    }

    while halt.is_none() {
        if closed {
            rec.take_completions(&mut done_log);
            for &(id, t) in &done_log {
                arrivals.completed(&rec.flow(id), t);
            }
        }
        // Arrivals past the stop rule end the workload.
        let mut ta = if arrivals_over { None } else { arrivals.peek() };
        if let Some(t) = ta {
            let over_count = stop.max_flows.is_some_and(|m| rec.flows() as u64 >= m);
            if over_count || t > horizon {
                count_came_first = over_count && t <= horizon;
                arrivals_over = true;
                ta = None;
            }
        } else if !closed {
            arrivals_over = true;
        }
        // A closed-loop workload waiting for completions runs to the horizon.
        let mut waiting = !arrivals_over && ta.is_none();
        if waiting && fabric.next_event().is_none_or(|t| t > horizon) {
            // No flow can complete by the horizon, so none can be released
            // by it: arrivals are over, and a drained run finishes the flows
            // in flight instead of stopping at the horizon with them pending.
            arrivals_over = true;
            waiting = false;
        }
        let limit = match (ta, stop.drain) {
            (Some(_), _) => horizon,
            (None, _) if waiting => horizon,
            (None, false) => stop.end_without_drain(last_arrival, count_came_first),
            (None, true) => match stop.drain_limit {
                Some(d) => last_arrival.saturating_add(d),
                None => SimTime::MAX,
            },
        };
        let tf = fabric.next_event().filter(|t| *t <= limit);
        if closed {
            // The fabric's steps up to the next arrival (or the limit) until
            // one completes a flow, in one call: while none completes, each
            // trip of this loop would find the same arrivals and limit, and
            // take one more step and its watchdog look.
            if let Some(b) = tf.filter(|&b| ta.is_none_or(|a| b <= a)) {
                let bound = ta.unwrap_or(limit);
                let (e0, looks) = (events, watchdog.looks(events));
                let mut after = |t: SimTime, rec: &Recorder, skipped: u64| {
                    events += skipped + 1;
                    match watchdog.after_trip(t, events, rec, progress) {
                        None => Some(watchdog.looks(events)),
                        h => {
                            halt = h;
                            None
                        }
                    }
                };
                let steps = fabric.advance_until_completion(b, bound, &mut rec, looks, &mut after);
                // Each step is one event of the loop's, looked at or not.
                events = e0 + steps;
                continue;
            }
        }
        // An open-loop workload's fabric steps up to the next arrival (or
        // the limit) need no trip round this loop each: nothing else can
        // happen before it.
        let now = match (ta, tf) {
            (None, None) => break,
            (Some(a), Some(b)) if b <= a => {
                events += fabric.advance_until(b, watchdog.bound(a), &mut rec) - 1;
                b
            }
            (None, Some(b)) => {
                events += fabric.advance_until(b, watchdog.bound(limit), &mut rec) - 1;
                b
            }
            (Some(a), _) if fabric.batches_arrivals() => {
                // Every arrival at `a` (within the stop rule), in one call.
                batch.clear();
                while arrivals.peek() == Some(a) {
                    let f = arrivals.pop().expect("peeked");
                    last_arrival = f.start;
                    rec.register(&f);
                    batch.push(f);
                    if stop.max_flows.is_some_and(|m| rec.flows() as u64 >= m) {
                        break;
                    }
                }
                fabric.add_flows(a, &batch, &mut rec);
                events += (batch.len() - 1) as u64;
                a
            }
            (Some(a), _) => {
                let f = arrivals.pop().expect("peeked");
                debug_assert!(f.start >= last_arrival, "arrivals must be sorted by start");
                last_arrival = f.start;
                rec.register(&f);
                fabric.add_flow(a, &f, &mut rec);
                a
            }
        };
        events += 1;
        halt = watchdog.after_trip(now, events, &rec, progress);
        if halt.is_some() {
            break;
        }
    }
    let end_time = if stop.drain {
        // Drained: the run ends when the last thing happened, or at the cap
        // (`drain_limit` after the last arrival) if work was left.
        let last_done = rec.last_completion().max(last_arrival);
        match stop.drain_limit {
            Some(d) if fabric.next_event().is_some() => last_arrival.saturating_add(d),
            _ => last_done,
        }
    } else {
        stop.end_without_drain(last_arrival, count_came_first)
    };
    fabric.finish(end_time, &mut rec);
    // The one rule for the run's end: a completion a fabric reports after it
    // (a latency added past the last step, a slot finishing late) does not
    // count; with drain the end is the last completion, so none is lost.
    rec.censor_after(end_time);
    let events = events + rec.internal_events();
    progress(Progress {
        now: end_time,
        flows_arrived: rec.flows() as u64,
        flows_completed: rec.completed(),
        events,
    });
    RunOutput {
        recorder: rec,
        end_time,
        events,
        cancelled: matches!(halt, Some(Halt::Cancelled)),
        stalled: match halt {
            Some(Halt::Stalled(m)) => Some(m),
            _ => None,
        },
    }
}

/// A test fabric for the run loop's tests (here, in `run` and in
/// `dependent`).
#[cfg(test)]
pub(crate) mod toy {
    use super::*;
    use crate::units::Rate;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Flow f delivers `bytes / 2` at `start + bytes / 2` ps and the rest
    /// at `start + bytes` ps, where it completes. With `batches`, the run
    /// loop hands it an instant's arrivals together: the general loop,
    /// where without it the open-loop fast path runs. It counts the calls
    /// it receives, so a test can see which path reached it.
    #[derive(Default)]
    pub(crate) struct Toy {
        /// (time, flow, bytes, completes)
        due: BinaryHeap<Reverse<(u64, u32, u64, bool)>>,
        batches: bool,
        pub(crate) calls: Calls,
    }

    /// How often each stepping call and the invariant check ran.
    #[derive(Default)]
    pub(crate) struct Calls {
        pub(crate) advance: u64,
        pub(crate) advance_until: u64,
        pub(crate) add_flows: u64,
        pub(crate) checks: std::cell::Cell<u64>,
    }

    impl Toy {
        pub(crate) fn new(batches: bool) -> Toy {
            Toy {
                batches,
                ..Toy::default()
            }
        }

        fn deliver_due(&mut self, now: SimTime, rec: &mut Recorder) {
            while let Some(&Reverse((t, id, bytes, completes))) = self.due.peek() {
                if t != now.0 {
                    break;
                }
                self.due.pop();
                rec.deliver_point(id, now, bytes);
                if completes {
                    rec.complete(id, now);
                }
            }
        }
    }

    impl Fabric for Toy {
        fn name(&self) -> String {
            "toy".into()
        }
        fn hosts(&self) -> usize {
            2
        }
        fn host_rate(&self) -> Rate {
            Rate(8_000_000_000)
        }
        fn add_flow(&mut self, now: SimTime, f: &Flow, _rec: &mut Recorder) {
            let half = f.bytes / 2;
            self.due.push(Reverse((now.0 + half, f.id, half, false)));
            self.due
                .push(Reverse((now.0 + f.bytes, f.id, f.bytes - half, true)));
        }
        fn batches_arrivals(&self) -> bool {
            self.batches
        }
        fn add_flows(&mut self, now: SimTime, flows: &[Flow], rec: &mut Recorder) {
            self.calls.add_flows += 1;
            for f in flows {
                self.add_flow(now, f, rec);
            }
        }
        fn next_event(&self) -> Option<SimTime> {
            self.due.peek().map(|Reverse(e)| SimTime(e.0))
        }
        fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
            self.calls.advance += 1;
            self.deliver_due(now, rec);
        }
        fn advance_until(&mut self, now: SimTime, _bound: SimTime, rec: &mut Recorder) -> u64 {
            self.calls.advance_until += 1;
            self.deliver_due(now, rec);
            1
        }
        fn check_invariants(&self) -> Result<(), String> {
            self.calls.checks.set(self.calls.checks.get() + 1);
            Ok(())
        }
        fn finish(&mut self, _end: SimTime, _rec: &mut Recorder) {}
    }
}

#[cfg(test)]
mod tests {
    use super::toy::Toy;
    use super::*;
    use proptest::prelude::*;

    /// A fabric that ticks every microsecond and never delivers.
    struct Mute(u64);

    impl Fabric for Mute {
        fn name(&self) -> String {
            "mute".into()
        }
        fn hosts(&self) -> usize {
            2
        }
        fn host_rate(&self) -> crate::units::Rate {
            crate::units::Rate(8_000_000_000)
        }
        fn add_flow(&mut self, now: SimTime, _: &Flow, _: &mut Recorder) {
            self.0 = self.0.max(now.0 + 1_000_000);
        }
        fn next_event(&self) -> Option<SimTime> {
            (self.0 > 0).then_some(SimTime(self.0))
        }
        fn advance(&mut self, now: SimTime, _: &mut Recorder) {
            self.0 = now.0 + 1_000_000;
        }
        fn finish(&mut self, _: SimTime, _: &mut Recorder) {}
    }

    /// A drained run on a fabric that never delivers used to run forever;
    /// the watchdog stops it and says how many flows and since when. A
    /// fabric that delivers is never stopped.
    #[test]
    fn the_watchdog_stops_a_run_without_progress() {
        let flows: Vec<Flow> = (0..3u32)
            .map(|i| Flow::new(i, 0, 1, 100, SimTime(u64::from(i) * 10)))
            .collect();
        let stop = StopRule {
            drain: true,
            stall_limit: Some(SimTime::ms(1)),
            ..StopRule::default()
        };
        let out = run(
            &mut Mute(0),
            &mut flows.iter().copied(),
            &stop,
            Recorder::new(None),
            &mut |_| true,
        );
        let why = out.stalled.expect("stalled");
        assert!(
            why.starts_with("stalled: 3 flows pending, no delivery since 0ps"),
            "{why}"
        );
        assert!(out.end_time <= SimTime::ms(2), "{}", out.end_time);
        for batches in [false, true] {
            let out = run(
                &mut Toy::new(batches),
                &mut flows.iter().copied(),
                &StopRule {
                    stall_limit: Some(SimTime(50)),
                    ..stop.clone()
                },
                Recorder::new(None),
                &mut |_| true,
            );
            assert_eq!((out.stalled, out.recorder.completed()), (None, 3));
        }
    }

    proptest! {
        /// The open-loop fast path against the general loop (the same toy
        /// fabric taking its arrivals in batches: flows of at least 2 B have
        /// no event at their arrival instant, so batching changes nothing):
        /// every stop rule gives the same records, end, event count and
        /// last progress report, and a cancel at the first report cancels
        /// both at the same point.
        #[test]
        fn the_fast_path_is_the_general_loop(
            spec in prop::collection::vec((0u64..40, 2u64..200), 0..120),
            max_flows in prop::option::of(0u64..130),
            // The duration often just after some flow's start, or the last
            // counted flow's, so that the count and the duration end the
            // arrivals in either order (or at the same flow).
            duration in prop::option::of((0usize..130, 0u64..40, 0u8..3)),
            drain in any::<bool>(),
            drain_limit in prop::option::of(0u64..300),
            cancel in any::<bool>(),
        ) {
            let mut t = 0;
            let flows: Vec<Flow> = spec
                .iter()
                .enumerate()
                .map(|(i, &(gap, bytes))| {
                    // A cancel at the first report comes after the first
                    // arrival, or (batched) after every arrival at its
                    // instant: no ties then.
                    t += if cancel { gap.max(1) } else { gap };
                    Flow { id: i as u32, src: 0, dst: 1, bytes, start: SimTime(t) }
                })
                .collect();
            let duration = duration.map(|(j, d, mode)| {
                let at = match mode {
                    1 => flows.get(j),
                    2 => max_flows.and_then(|m| flows.get((m as usize).max(1) - 1)),
                    _ => None,
                };
                SimTime(at.map_or(j as u64 * 40, |f| f.start.0) + d)
            });
            let stop = StopRule {
                max_flows,
                duration,
                drain,
                drain_limit: drain_limit.map(SimTime),
                stall_limit: None,
            };
            let go = |batches: bool| {
                let mut toy = Toy::new(batches);
                let mut last = None;
                let out = run(
                    &mut toy,
                    &mut flows.iter().copied(),
                    &stop,
                    Recorder::new(None),
                    &mut |p| {
                        last = Some((p.now, p.flows_arrived, p.flows_completed, p.events));
                        !cancel
                    },
                );
                let r = &out.recorder;
                let summary = (r.completed(), r.last_completion(), r.violation_count());
                (out.recorder.records().clone(), summary, out.end_time, out.events, out.cancelled, last)
            };
            let (fast, general) = (go(false), go(true));
            prop_assert_eq!(fast, general);
        }
    }
}

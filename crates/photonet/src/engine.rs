//! The run loop: feeds a workload to a [`Fabric`] in time order, interleaving
//! arrivals with the fabric's own events, and collects what it reports in a
//! [`Recorder`].
//!
//! The loop asks the fabric for `next_event()` once per iteration, so that call
//! must be O(1) (keep a counter or the head of a queue; never scan ports).

use crate::fabric::Fabric;
use crate::flow::Flow;
use crate::recorder::Recorder;
use crate::units::SimTime;

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

/// Everything a run produced, before it is summarised.
pub struct RunOutput {
    pub flows: Vec<Flow>,
    pub recorder: Recorder,
    pub end_time: SimTime,
    pub events: u64,
    pub cancelled: bool,
}

/// Feeds `arrivals` (sorted by start time) to `fabric` until `stop`, collecting
/// completions. Fabric events at time t run before arrivals at the same t.
pub fn run(
    fabric: &mut dyn Fabric,
    arrivals: &mut dyn Iterator<Item = Flow>,
    stop: &StopRule,
    mut rec: Recorder,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> RunOutput {
    let mut flows: Vec<Flow> = Vec::new();
    let mut events: u64 = 0;
    let mut next_arrival = arrivals.next();
    let mut last_arrival = SimTime::ZERO;
    let mut cancelled = false;
    let mut next_report = 0u64;
    const REPORT_EVERY: u64 = 1 << 14;
    let horizon = stop.duration.unwrap_or(SimTime::MAX);
    // Set when the flow count ends the arrivals before the duration does.
    let mut count_came_first = false;

    loop {
        // Arrivals past the stop rule end the workload.
        if let Some(f) = &next_arrival {
            let over_count = stop.max_flows.is_some_and(|m| flows.len() as u64 >= m);
            if over_count || f.start > horizon {
                count_came_first = over_count && f.start <= horizon;
                next_arrival = None;
            }
        }
        let limit = match (&next_arrival, stop.drain) {
            (Some(_), _) => horizon,
            (None, false) => stop.end_without_drain(last_arrival, count_came_first),
            (None, true) => match stop.drain_limit {
                Some(d) => last_arrival.saturating_add(d),
                None => SimTime::MAX,
            },
        };
        let ta = next_arrival.as_ref().map(|f| f.start);
        let tf = fabric.next_event().filter(|t| *t <= limit);
        let now = match (ta, tf) {
            (None, None) => break,
            (Some(a), Some(b)) if b <= a => {
                fabric.advance(b, &mut rec);
                b
            }
            (None, Some(b)) => {
                fabric.advance(b, &mut rec);
                b
            }
            (Some(a), _) if fabric.batches_arrivals() => {
                // Every arrival at `a` (within the stop rule), in one call.
                let first = flows.len();
                while let Some(f) = next_arrival.take_if(|f| f.start == a) {
                    last_arrival = f.start;
                    rec.register(&f);
                    flows.push(f);
                    next_arrival = arrivals.next();
                    if stop.max_flows.is_some_and(|m| flows.len() as u64 >= m) {
                        break;
                    }
                }
                fabric.add_flows(a, &flows[first..], &mut rec);
                events += (flows.len() - first - 1) as u64;
                a
            }
            (Some(a), _) => {
                let f = next_arrival.take().expect("arrival present");
                debug_assert!(f.start >= last_arrival, "arrivals must be sorted by start");
                last_arrival = f.start;
                rec.register(&f);
                fabric.add_flow(a, &f, &mut rec);
                flows.push(f);
                next_arrival = arrivals.next();
                a
            }
        };
        events += 1;
        if events >= next_report {
            next_report = events + REPORT_EVERY;
            let p = Progress {
                now,
                flows_arrived: flows.len() as u64,
                flows_completed: rec.completed(),
                events: events + rec.internal_events(),
            };
            if !progress(p) {
                cancelled = true;
                break;
            }
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
    let events = events + rec.internal_events();
    progress(Progress {
        now: end_time,
        flows_arrived: flows.len() as u64,
        flows_completed: rec.completed(),
        events,
    });
    RunOutput {
        flows,
        recorder: rec,
        end_time,
        events,
        cancelled,
    }
}

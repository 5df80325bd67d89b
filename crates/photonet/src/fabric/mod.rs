//! The `Fabric` trait every architecture and baseline implements, and the list
//! of registered fabrics: a fabric joins `compare`, `reproduce`, `bench`,
//! `default-config` and the conformance suite by its `mod` line and its line
//! in [`REGISTRY`] (the machinery is in [`registry`]).
//!
//! A fabric module holds the architecture (its state, its per-slot or
//! per-event logic), its parameter table and its registration; pure scheduling
//! algorithms live in `sched/`, shared building blocks (queues, pools, timers,
//! in-order delivery) in the core modules below it.

pub mod baldur;
pub mod esn;
pub mod fat_tree;
pub mod hpc;
pub mod ideal;
pub mod mordia;
pub mod negotiator;
pub mod reactor;
pub mod registry;
pub mod sirius;
pub(crate) mod star;
pub mod stats_decl;

use crate::flow::Flow;
use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};
use registry::FabricSpec;
use std::collections::BTreeMap;

/// Every fabric photonet has, in the order `photonet compare` runs them.
pub const REGISTRY: &[FabricSpec] = &[
    FabricSpec::of::<esn::EsnIdeal>(),
    FabricSpec::of::<esn::EsnOsub>(),
    FabricSpec::of::<sirius::SiriusModule>(),
    FabricSpec::of::<ideal::IdealFlat>(),
    FabricSpec::of::<fat_tree::FatTreeModule>(),
    FabricSpec::of::<negotiator::NegotiatorModule>(),
    FabricSpec::of::<baldur::BaldurModule>(),
    FabricSpec::of::<hpc::HpcModule>(),
    FabricSpec::of::<mordia::MordiaModule>(),
    FabricSpec::of::<reactor::ReactorModule>(),
];

/// Per-architecture statistics, by name (e.g. `peak_queue_bytes`).
pub type FabricStats = BTreeMap<String, f64>;

/// A simulated network. The run loop calls `add_flow` at each arrival and
/// `advance(t)` whenever `next_event()` returns `t`; the fabric reports progress
/// to the [`Recorder`]. Slotted fabrics return their next slot boundary from
/// `next_event` only while they have work, which is how idle time is skipped.
///
/// Costs: `next_event` is called once per loop iteration, so it must be O(1)
/// (a counter of pending work or the head of a queue — never a scan over ports
/// or nodes). `advance` may cost what one slot or one event costs.
pub trait Fabric {
    /// Short name used in tables and plots, e.g. `"ESN (Ideal)"`.
    fn name(&self) -> String;
    /// Number of traffic endpoints (N in the load formula).
    fn hosts(&self) -> usize;
    /// Per-endpoint bandwidth (R in the load formula and goodput normalisation).
    fn host_rate(&self) -> Rate;
    /// A flow arrives at `now` (= `flow.start`).
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder);
    /// Whether the run loop should hand every arrival of one instant to
    /// [`Fabric::add_flows`] at once (after the fabric's own events at that
    /// instant) instead of calling `add_flow` for each with the fabric's
    /// events in between. For fabrics whose work per arrival is large and the
    /// same for a batch (the fluid models' re-solve).
    fn batches_arrivals(&self) -> bool {
        false
    }
    /// Flows that all arrive at `now`, in arrival order (only called when
    /// `batches_arrivals`). Must be equivalent to `add_flow` for each in turn.
    fn add_flows(&mut self, now: SimTime, flows: &[Flow], rec: &mut Recorder) {
        for f in flows {
            self.add_flow(now, f, rec);
        }
    }
    /// The time of the fabric's next internal event, if it has one. O(1).
    fn next_event(&self) -> Option<SimTime>;
    /// Process every internal event due at `now`.
    fn advance(&mut self, now: SimTime, rec: &mut Recorder);
    /// `advance(now)`, then `advance(t)` for each later `t = next_event()`
    /// while `t <= bound`, for as many steps as the fabric likes (at least
    /// one); returns the number of steps. The run loop calls it instead of
    /// `advance` when nothing can arrive before `bound` (an open-loop
    /// workload whose next arrival is at `bound`, or the end of the run), so
    /// it must be exactly the same as those calls one by one. The default
    /// takes one step.
    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        let _ = bound;
        self.advance(now, rec);
        1
    }
    /// For a closed-loop workload (completions release flows):
    /// `advance(now)`, then `advance(t)` for each later `t = next_event()`
    /// while `t <= bound`, the run loop's look after each step, until a
    /// step completes a flow (the recorder then holds logged completions,
    /// [`Recorder::has_logged_completions`]) or the look says stop;
    /// returns the number of steps. The look after a step is
    /// `after(t, rec, skipped)`, which returns the next [`Looks`] (None:
    /// stop), unless `looks.skip(t, rec)` says it would change nothing;
    /// `skipped`: the steps skipped since the last look. It must be exactly
    /// those calls one by one (the run loop would make them, one trip
    /// each, while no flow completes). The default takes one step.
    fn advance_until_completion(
        &mut self,
        now: SimTime,
        bound: SimTime,
        rec: &mut Recorder,
        looks: Looks,
        after: &mut dyn FnMut(SimTime, &Recorder, u64) -> Option<Looks>,
    ) -> u64 {
        let _ = (bound, looks);
        self.advance(now, rec);
        after(now, rec, 0);
        1
    }
    /// The run ends at `end`: account for progress made up to then.
    fn finish(&mut self, end: SimTime, rec: &mut Recorder);
    /// Architecture-specific statistics.
    fn stats(&self) -> FabricStats {
        FabricStats::new()
    }
    /// Checks the fabric's internal invariants (queue bounds, conservation …).
    fn check_invariants(&self) -> Result<(), String> {
        Ok(())
    }
}

/// When the run loop's look after a fabric step (its watchdog and progress
/// report, `engine::run_arrivals`) would do nothing, so that a fabric
/// stepping on its own ([`Fabric::advance_until_completion`]) may skip it:
/// no delivery since the last look, not every flow complete, the stall
/// limit not passed and no progress report due. On ring64 the look was
/// ~40 instructions a step through a virtual call, the test is ~8 inline.
#[derive(Clone, Copy, Debug)]
pub struct Looks {
    /// The recorder's deliveries at the last look.
    pub deliveries: u64,
    /// The watchdog stays quiet at steps up to this time.
    pub quiet_until: SimTime,
    /// Steps after the last look at which a progress report is due.
    pub report_in: u64,
    /// Steps skipped since the last look.
    pub skipped: u64,
}

impl Looks {
    /// Whether the look after the step at `t` would change nothing (then
    /// counted as skipped).
    #[inline]
    pub fn skip(&mut self, t: SimTime, rec: &Recorder) -> bool {
        let quiet = rec.deliveries() == self.deliveries
            && t <= self.quiet_until
            && self.skipped + 1 < self.report_in
            && rec.completed() != rec.flows() as u64;
        self.skipped += quiet as u64;
        quiet
    }
}

/// Test driver for one fabric without the engine (fabrics sit below it):
/// feeds `flows` (sorted by start) and runs the fabric's events up to
/// `until`, fabric events first at equal times as the engine does, checking
/// invariants after the steps (counted from 1) for which `check` holds.
#[cfg(test)]
pub(crate) fn drive(
    fabric: &mut dyn Fabric,
    flows: &[Flow],
    rec: &mut Recorder,
    until: SimTime,
    check: impl Fn(u64) -> bool,
) {
    let mut k = 0;
    let mut step = 0u64;
    loop {
        step += 1;
        let ta = flows.get(k).map(|f| f.start);
        match (ta, fabric.next_event().filter(|&t| t <= until)) {
            (None, None) => break,
            (Some(a), Some(b)) if b <= a => fabric.advance(b, rec),
            (None, Some(b)) => fabric.advance(b, rec),
            (Some(a), _) => {
                rec.register(&flows[k]);
                fabric.add_flow(a, &flows[k], rec);
                k += 1;
            }
        }
        if check(step) {
            fabric.check_invariants().unwrap();
        }
    }
}

/// [`Fabric::advance_until`] for a fabric that steps one event time at a
/// time: `step(t)` advances to `t` and returns the next event. At most 4,096
/// steps a call, so the run loop still reports progress (and can be
/// cancelled) every few thousand events.
pub fn step_until(
    now: SimTime,
    bound: SimTime,
    mut step: impl FnMut(SimTime) -> Option<SimTime>,
) -> u64 {
    const MAX_STEPS: u64 = 1 << 12;
    let mut t = now;
    let mut steps = 0;
    loop {
        let next = step(t);
        steps += 1;
        match next {
            Some(next) if next <= bound && steps < MAX_STEPS => t = next,
            _ => break,
        }
    }
    steps
}

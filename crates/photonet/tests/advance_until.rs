//! A fabric's `advance_until` (many steps per call) against one `advance`
//! per call (the trait's default), through the run loop: the same
//! completions, statistics, event count and end, drained or cut short by a
//! duration or a flow count. Here, beside the engine, because fabrics sit
//! below the run loop and may not call it.

use crate::common;

use photonet::engine::{run, StopRule};
use photonet::fabric::baldur::{BaldurModule, BaldurParams};
use photonet::fabric::hpc::{HpcModule, HpcParams, DRAGONFLY, MULTIBUTTERFLY};
use photonet::fabric::registry::{BuildContext, FabricModule, Variant};
use photonet::fabric::{Fabric, FabricStats};
use photonet::flow::Flow;
use photonet::recorder::Recorder;
use photonet::rng::RngStreams;
use photonet::topology::Topology;
use photonet::units::{Rate, SimTime};
use rand::Rng;

/// The stop rules `advance_until` is checked under: drained, cut short at
/// `duration`, and a flow count `count` drained with a `drain_limit` cap.
fn stop_rules(duration: SimTime, count: u64, drain_limit: SimTime) -> [StopRule; 3] {
    [
        StopRule {
            drain: true,
            ..Default::default()
        },
        StopRule {
            duration: Some(duration),
            ..Default::default()
        },
        StopRule {
            max_flows: Some(count),
            drain: true,
            drain_limit: Some(drain_limit),
            ..Default::default()
        },
    ]
}

/// What a run of `flows` on `f` under `stop` leaves: per flow its finish
/// and delivered bytes, the event count, the end and the stats.
type Outcome = (Vec<(Option<SimTime>, u64)>, u64, SimTime, FabricStats);

fn outcome(f: &mut dyn Fabric, flows: &[Flow], stop: &StopRule) -> Outcome {
    let out = run(
        f,
        &mut flows.iter().cloned(),
        stop,
        Recorder::new(None),
        &mut |_| true,
    );
    let fin = (0..out.recorder.flows() as u32)
        .map(|i| (out.recorder.finish(i), out.recorder.delivered(i)))
        .collect();
    (fin, out.events, out.end_time, f.stats())
}

/// A fabric behind the plain `Fabric` interface, one `advance` per call
/// (the trait's default `advance_until`): the reference a fabric's own
/// `advance_until` must agree with.
struct OneStep(Box<dyn Fabric + Send>);

impl Fabric for OneStep {
    fn name(&self) -> String {
        self.0.name()
    }
    fn hosts(&self) -> usize {
        self.0.hosts()
    }
    fn host_rate(&self) -> Rate {
        self.0.host_rate()
    }
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        self.0.add_flow(now, flow, rec)
    }
    fn batches_arrivals(&self) -> bool {
        self.0.batches_arrivals()
    }
    fn add_flows(&mut self, now: SimTime, flows: &[Flow], rec: &mut Recorder) {
        self.0.add_flows(now, flows, rec)
    }
    fn next_event(&self) -> Option<SimTime> {
        self.0.next_event()
    }
    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.0.advance(now, rec)
    }
    fn finish(&mut self, end: SimTime, rec: &mut Recorder) {
        self.0.finish(end, rec)
    }
    fn stats(&self) -> FabricStats {
        self.0.stats()
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.0.check_invariants()
    }
}

/// One host per rack at `gbps`: the HPC fabrics' endpoints.
fn topo(n: u32, gbps: u64) -> Topology {
    let mut t = Topology::default();
    common::one_host_per_rack(&mut t, n, 1, gbps);
    t
}

fn context(topology: &Topology, seed: u64, check_invariants: bool) -> BuildContext<'_> {
    BuildContext {
        topology,
        seed,
        check_invariants,
    }
}

/// `per_node · n` flows of 512 B (every `big.0`-th of `big.1` B) from random
/// sources to their partner in a random derangement, gaps uniform below
/// `max_gap` ps (stream "load" of `seed`).
fn permutation_load(n: u32, seed: u64, per_node: u32, max_gap: u64, big: (u32, u64)) -> Vec<Flow> {
    let mut r = RngStreams::new(seed).stream("load");
    let perm = photonet::workload::derangement(n, &mut r);
    let mut at = 0u64;
    (0..n * per_node)
        .map(|i| {
            at += r.random_range(0..max_gap);
            let src = r.random_range(0..n);
            let bytes = if i % big.0 == 0 { big.1 } else { 512 };
            Flow::new(i, src, perm[src as usize], bytes, SimTime(at))
        })
        .collect()
}

/// `many` (the fabric as built) and `one` (the same, one step per call)
/// agree on `flows` under every stop rule; returns the event counts.
fn agree(
    build: impl Fn() -> Box<dyn Fabric + Send>,
    flows: &[Flow],
    stops: &[StopRule],
    what: &str,
) -> Vec<u64> {
    stops
        .iter()
        .map(|stop| {
            let mut many = build();
            let mut one = OneStep(build());
            let a = outcome(many.as_mut(), flows, stop);
            let b = outcome(&mut one, flows, stop);
            assert!(a.0.iter().any(|f| f.0.is_some()), "{what}");
            assert_eq!(a, b, "{what}");
            a.1
        })
        .collect()
}

#[test]
fn baldur_steps_up_to_the_next_arrival_in_one_call_change_nothing() {
    let p = BaldurParams {
        multiplicity: 2,
        ..Default::default()
    };
    let t = topo(64, 25);
    let ctx = context(&t, 5, false);
    let flows = permutation_load(64, 5, 60, 30_000, (5, 2_000));
    let at = flows.last().unwrap().start.0;
    let v = &BaldurModule::VARIANTS[0];
    let build = || BaldurModule::plan_and_build(p.clone(), v, &ctx).unwrap();
    let stops = stop_rules(SimTime(at / 2), 1_000, SimTime::us(3));
    for events in agree(build, &flows, &stops, "baldur") {
        assert!(events > 3 * 64 * 60 / 2, "{events}");
    }
}

#[test]
fn hpc_baselines_step_up_to_the_next_arrival_in_one_call_change_nothing() {
    // The packet substrate's `advance_until` on both baselines under load.
    let variants: [(&Variant, u32); 2] = [(&MULTIBUTTERFLY, 64), (&DRAGONFLY, 72)];
    for (v, n) in variants {
        let t = topo(n, 25);
        let ctx = context(&t, 1, true);
        let flows = permutation_load(n, 7, 40, 12_000, (7, 3_000));
        let at = flows.last().unwrap().start.0;
        let build = || HpcModule::plan_and_build(HpcParams::default(), v, &ctx).unwrap();
        let stops = stop_rules(SimTime(at / 2), u64::from(n) * 20, SimTime::us(2));
        for events in agree(build, &flows, &stops, v.name) {
            assert!(events > u64::from(n) * 40, "{}: {events} events", v.name);
        }
    }
}

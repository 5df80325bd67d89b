//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use photonet::config::{Config, PatternKind, SizesConfig};
use photonet::fabric::Fabric;
use photonet::flow::Flow;
use photonet::recorder::Recorder;
use photonet::run::{prepare, simulate, Paths, RunResult};
use photonet::topology::Topology;
use photonet::units::{Rate, SimTime};

pub mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new() -> Dir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "photonet-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A default config that replays `trace` (CSV `src,dst,bytes,start`) and
/// drains; the directory holding the trace lives as long as the guard.
pub fn trace_config(trace: &str) -> (Config, Paths, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let mut c = Config::default();
    let paths = replay(&mut c, &dir, "t.csv", trace);
    (c, paths, dir)
}

/// Makes `c` replay `trace`, written to `name` in `dir`, and drain: every
/// flow runs to its end. Returns the paths to run it with.
pub fn replay(c: &mut Config, dir: &tempdir::Dir, name: &str, trace: &str) -> Paths {
    std::fs::write(dir.path.join(name), trace).unwrap();
    c.workload.pattern.kind = PatternKind::Trace;
    c.workload.pattern.file = Some(name.into());
    c.stop.flows = None;
    c.stop.drain = true;
    Paths {
        base_dir: Some(dir.path.clone()),
        search: vec![],
    }
}

/// Runs `c` end to end; the run must report no invariant violation.
pub fn run_clean(c: &Config, p: &Paths) -> RunResult {
    let r = simulate(prepare(c, p).unwrap(), &mut |_| true).unwrap();
    assert!(
        r.summary.invariant_violations.is_empty(),
        "{}: {:?}",
        c.fabric,
        r.summary.invariant_violations
    );
    r
}

/// `racks` racks of one host, each with `uplinks` links of `gbps` Gbps.
pub fn one_host_per_rack(t: &mut Topology, racks: u32, uplinks: u32, gbps: u64) {
    t.racks = racks;
    t.servers_per_rack = 1;
    t.uplinks = uplinks;
    t.uplink_rate = Rate::gbps(gbps);
}

/// A default config of `fabric` offering `flows` random flows of `sizes`
/// at `load`, drained: every flow runs to its end.
pub fn loaded(fabric: &str, load: f64, sizes: SizesConfig, flows: u64) -> Config {
    let mut c = Config {
        fabric: fabric.into(),
        ..Config::default()
    };
    c.workload.load = load;
    c.workload.sizes = sizes;
    c.stop.flows = Some(flows);
    c.stop.drain = true;
    c
}

/// `Flow::new` with the start in ns.
pub fn flow(id: u32, src: u32, dst: u32, bytes: u64, start_ns: u64) -> Flow {
    Flow::new(id, src, dst, bytes, SimTime::ns(start_ns))
}

/// `flows` sorted by start and numbered in that order (what a driver wants).
pub fn numbered(mut flows: Vec<Flow>) -> Vec<Flow> {
    flows.sort_by_key(|f| f.start);
    for (i, f) in flows.iter_mut().enumerate() {
        f.id = i as u32;
    }
    flows
}

/// What a test driver needs of a simulator: every fabric, and a bare
/// `net::Network` through a wrapper of the test's own.
pub trait Steps {
    fn next_event(&self) -> Option<SimTime>;
    fn advance(&mut self, now: SimTime, rec: &mut Recorder);
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder);
    fn check_invariants(&self) -> Result<(), String>;
}

impl<F: Fabric> Steps for F {
    fn next_event(&self) -> Option<SimTime> {
        Fabric::next_event(self)
    }
    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        Fabric::advance(self, now, rec)
    }
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        Fabric::add_flow(self, now, flow, rec)
    }
    fn check_invariants(&self) -> Result<(), String> {
        Fabric::check_invariants(self)
    }
}

/// Runs `flows` (sorted by start) to the end, the simulator's events first
/// at equal times, checking invariants after the steps (counted from 1) for
/// which `check` holds and at the end; `sample(net, rec, now)` after every
/// step. The recorder must hold no violation.
pub fn drain_with<S: Steps>(
    net: &mut S,
    flows: &[Flow],
    check: impl Fn(u64) -> bool,
    mut sample: impl FnMut(&S, &Recorder, SimTime),
) -> Recorder {
    let mut rec = Recorder::new(None);
    let mut k = 0;
    let mut step = 0u64;
    loop {
        let ta = flows.get(k).map(|f| f.start);
        let now = match (ta, net.next_event()) {
            (None, None) => break,
            (Some(a), Some(b)) if b <= a => {
                net.advance(b, &mut rec);
                b
            }
            (None, Some(b)) => {
                net.advance(b, &mut rec);
                b
            }
            (Some(a), _) => {
                rec.register(&flows[k]);
                net.add_flow(a, &flows[k], &mut rec);
                k += 1;
                a
            }
        };
        step += 1;
        if check(step) {
            net.check_invariants().unwrap();
        }
        sample(net, &rec, now);
    }
    net.check_invariants().unwrap();
    assert_eq!(rec.violation_count(), 0, "{:?}", rec.violations());
    rec
}

/// `drain_with` checking invariants every `every` steps, sampling nothing.
pub fn drain<S: Steps>(net: &mut S, flows: &[Flow], every: u64) -> Recorder {
    drain_with(net, flows, |s| s.is_multiple_of(every), |_, _, _| {})
}

/// Every flow delivered all its bytes and finished.
pub fn all_delivered(rec: &Recorder, flows: &[Flow]) {
    for f in flows {
        assert_eq!(rec.delivered(f.id), f.bytes, "flow {} delivered", f.id);
        assert!(rec.finish(f.id).is_some(), "flow {} unfinished", f.id);
    }
}

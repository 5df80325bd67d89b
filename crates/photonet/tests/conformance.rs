//! The conformance suite: every fabric in the registry, automatically. A new
//! fabric joins it by being registered; nothing here names a fabric.
//!
//! For each fabric: a lone flow's FCT is at least bytes/R plus the fabric's
//! fixed latency and within its documented bound; bytes are conserved and
//! every flow completes at low load with drain; the same seed gives identical
//! outputs; no invariant is violated with run-time checks on; its parameters
//! appear documented in `default-config`; its complete config (which keys a
//! sweep point) holds only its own table; a run emits exactly the statistics
//! it declares.

use crate::common;
use common::{replay, tempdir};

use photonet::config::{documented_default_config, Config, PatternKind, SizesConfig};
use photonet::fabric::registry::{self, FabricSpec, FctBounds, LoneFlow, Variant, REGISTRY};
use photonet::run::{prepare, simulate, Paths, RunResult};
use photonet::units::{ByteSize, Rate, SimTime};

/// 4 racks x 2 servers, 2 x 50 Gbps uplinks per rack (R = 50 Gbps): small
/// enough for every fabric, with inter- and intra-rack pairs.
fn small(fabric: &str) -> Config {
    let mut c = Config {
        fabric: fabric.into(),
        ..Config::default()
    };
    c.topology.racks = 4;
    c.topology.servers_per_rack = 2;
    c.topology.uplinks = 2;
    c.topology.uplink_rate = Rate::gbps(50);
    c.metrics.check_invariants = true;
    c
}

fn run(c: &Config, paths: &Paths) -> RunResult {
    let p = prepare(c, paths).unwrap_or_else(|e| panic!("{}: {e}", c.fabric));
    simulate(p, &mut |_| true).unwrap()
}

fn no_violations(r: &RunResult, what: &str) {
    assert!(
        r.summary.invariant_violations.is_empty(),
        "{what}: {:?}",
        r.summary.invariant_violations
    );
}

/// Runs `c` with one flow `(src, dst, bytes)` starting at 3 µs (a trace in
/// `dir`), drained and checked: its FCT and the bounds the fabric states.
fn lone_flow(
    c: &Config,
    spec: &FabricSpec,
    v: &Variant,
    dir: &tempdir::Dir,
    (src, dst, bytes): (u32, u32, u64),
    what: &str,
) -> (SimTime, FctBounds) {
    let mut c = c.clone();
    let trace = format!("src,dst,bytes,start\n{src},{dst},{bytes},3us\n");
    let paths = replay(&mut c, dir, "one.csv", &trace);
    let r = run(&c, &paths);
    no_violations(&r, what);
    let fct = SimTime(r.flows.finish(0).expect(what) - r.flows.start_ps[0]);
    let table = c.fabric_table(spec).unwrap();
    let ctx = c.build_context();
    let b = spec
        .lone_flow_fct(&table, &LoneFlow::new(v, &ctx, src, dst, bytes))
        .unwrap();
    (fct, b)
}

#[test]
fn a_lone_flow_takes_at_least_bytes_over_r_and_at_most_the_documented_bound() {
    let dir = tempdir::Dir::new();
    for (spec, v) in registry::variants() {
        for (src, dst) in [(0u32, 7u32), (0, 1), (5, 2)] {
            for bytes in [1u64, 562, 1_500, 40_000, 1_000_000] {
                let what = format!("{}: {bytes} B from {src} to {dst}", v.name);
                let c = small(v.name);
                let (fct, b) = lone_flow(&c, spec, v, &dir, (src, dst, bytes), &what);
                let at_r = c.topology.host_rate().tx_time(bytes);
                assert!(
                    b.min + SimTime(1) >= at_r,
                    "{what}: stated minimum {} is below bytes/R = {at_r}",
                    b.min
                );
                assert!(
                    b.min <= fct && fct <= b.max,
                    "{what}: FCT {fct} outside [{}, {}]",
                    b.min,
                    b.max
                );
            }
        }
    }
}

#[test]
fn esn_osub_lone_flow_bounds_hold_at_both_tiers() {
    // Pods of 2 racks: (0, 3) crosses racks within a pod, (0, 7) and (5, 2)
    // cross pods, (0, 1) stays in a rack.
    use photonet::fabric::esn::{EsnOsubParams, OsubTier};
    let dir = tempdir::Dir::new();
    let (spec, v) = registry::variants()
        .into_iter()
        .find(|(_, v)| v.name == "esn_osub")
        .unwrap();
    for (tier, pod_racks) in [
        (OsubTier::Rack, 0),
        (OsubTier::Aggregation, 2),
        (OsubTier::Aggregation, 0),
    ] {
        for (src, dst) in [(0u32, 7u32), (0, 1), (0, 3), (5, 2)] {
            for bytes in [1u64, 1_500, 1_000_000] {
                let what = format!("{tier:?}/{pod_racks}: {bytes} B from {src} to {dst}");
                let mut c = small("esn_osub");
                c.edit(|o: &mut EsnOsubParams| {
                    o.tier = tier;
                    o.pod_racks = pod_racks;
                });
                let (fct, b) = lone_flow(&c, spec, v, &dir, (src, dst, bytes), &what);
                assert!(
                    b.min <= fct && fct <= b.max,
                    "{what}: FCT {fct} outside [{}, {}]",
                    b.min,
                    b.max
                );
                // R = 50 Gbps, rack uplinks 100 Gbps: 33.3 Gbps across a
                // thinned rack link or a 1-rack pod, 66.7 across a 2-rack pod.
                let pods =
                    |a: u32, b: u32| (a / 2) / pod_racks.max(1) != (b / 2) / pod_racks.max(1);
                let gbps = match tier {
                    OsubTier::Rack if src / 2 != dst / 2 => 100.0 / 3.0,
                    OsubTier::Aggregation if pods(src, dst) => {
                        (100.0 * pod_racks.max(1) as f64 / 3.0).min(50.0)
                    }
                    _ => 50.0,
                };
                let want = bytes as f64 * 8.0 / gbps / 1e9;
                let fct_s = fct.as_secs_f64() - 1e-6;
                assert!(
                    (fct_s - want).abs() <= 2e-12 + 1e-9 * want,
                    "{what}: {fct_s} s vs closed form {want} s"
                );
            }
        }
    }
}

fn random_load(fabric: &str, load: f64, flows: u64, drain: bool, seed: u64) -> Config {
    let mut c = small(fabric);
    c.seed = seed;
    c.workload.load = load;
    c.workload.sizes = SizesConfig::pareto(1.5, ByteSize(20_000));
    c.stop.flows = Some(flows);
    c.stop.drain = drain;
    c
}

/// Runs `c`, which must report no invariant violation.
fn checked_run(c: &Config) -> RunResult {
    let r = run(c, &Paths::default());
    no_violations(&r, &c.fabric);
    r
}

#[test]
fn at_low_load_with_drain_every_flow_completes_and_bytes_are_conserved() {
    for name in registry::names() {
        let r = checked_run(&random_load(name, 0.2, 400, true, 7));
        let s = &r.summary;
        assert_eq!(s.completed, s.flows, "{name}: unfinished flows");
        assert_eq!(s.delivered_bytes, s.offered_bytes, "{name}");
        let per_flow: u128 = r.flows.delivered.iter().map(|&d| d as u128).sum();
        assert_eq!(per_flow, s.offered_bytes, "{name}");
        for (i, (&d, &b)) in r.flows.delivered.iter().zip(&r.flows.bytes).enumerate() {
            assert_eq!(d, b, "{name}: flow {i}");
        }
    }
}

#[test]
fn under_heavy_load_no_invariant_is_violated_and_no_byte_is_invented() {
    for name in registry::names() {
        let r = checked_run(&random_load(name, 0.95, 600, false, 3));
        let s = &r.summary;
        assert!(s.delivered_bytes <= s.offered_bytes, "{name}");
        for (i, (&d, &b)) in r.flows.delivered.iter().zip(&r.flows.bytes).enumerate() {
            assert!(d <= b, "{name}: flow {i} got {d} of {b} B");
            // A finished flow has all its bytes; one whose completion fell
            // after the run's end may hold them too, censored (issue 27
            // item 18: no completion after the end counts).
            let finished = r.flows.finish(i).is_some();
            assert!(
                !finished || d == b,
                "{name}: flow {i} finished with {d} of {b} B"
            );
        }
    }
}

#[test]
fn the_same_seed_gives_identical_outputs() {
    for name in registry::names() {
        let a = run(&random_load(name, 0.6, 300, true, 11), &Paths::default());
        let b = run(&random_load(name, 0.6, 300, true, 11), &Paths::default());
        assert_eq!(a.flows.finish_ps, b.flows.finish_ps, "{name}");
        assert_eq!(a.flows.delivered, b.flows.delivered, "{name}");
        assert_eq!(
            serde_json::to_string(&a.summary).unwrap(),
            serde_json::to_string(&b.summary).unwrap(),
            "{name}"
        );
        let c = run(&random_load(name, 0.6, 300, true, 12), &Paths::default());
        assert_ne!(
            a.flows.start_ps, c.flows.start_ps,
            "{name}: the seed is ignored"
        );
    }
}

#[test]
fn a_run_emits_exactly_the_statistics_its_fabric_declares() {
    use photonet::fabric::stats_decl::mismatches;
    for (spec, v) in registry::variants() {
        for checked in [false, true] {
            let mut c = random_load(v.name, 0.5, 300, true, 5);
            c.metrics.check_invariants = checked;
            let r = run(&c, &Paths::default());
            let names = r.summary.fabric_stats.keys().map(String::as_str);
            let bad = mismatches(spec.table, v.name, checked, names);
            assert!(bad.is_empty(), "checked = {checked}:\n{}", bad.join("\n"));
        }
    }
}

fn schema_keys(spec: &FabricSpec) -> Vec<String> {
    let schema = serde_json::Value::from(spec.schema());
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_parameter_appears_in_default_config_with_its_doc() {
    let text = documented_default_config();
    let lines: Vec<&str> = text.lines().collect();
    for spec in REGISTRY {
        let header = format!("[{}]", spec.table);
        let start = lines
            .iter()
            .position(|l| *l == header)
            .unwrap_or_else(|| panic!("default-config has no {header}"));
        let section: Vec<&str> = lines[start + 1..]
            .iter()
            .take_while(|l| !l.starts_with('['))
            .copied()
            .collect();
        for key in schema_keys(spec) {
            let at = section
                .iter()
                .position(|l| {
                    l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key} = "))
                })
                .unwrap_or_else(|| panic!("{}.{key} missing from default-config", spec.table));
            assert!(
                at > 0 && section[at - 1].starts_with("# ") && section[at - 1].len() > 3,
                "{}.{key} has no doc comment above it",
                spec.table
            );
        }
    }
    // And the whole documented config parses back to the default run.
    let c = Config::from_toml(&text).expect("default-config parses");
    assert_eq!(c, Config::default());
}

#[test]
fn a_complete_config_holds_only_the_selected_fabrics_table() {
    for (spec, v) in registry::variants() {
        let own = small(v.name);
        let alone = Config::from_toml(&own.to_toml()).unwrap().to_toml();
        // The same run with every other fabric's (empty) table given too.
        let mut text = own.to_toml();
        for s in REGISTRY.iter().filter(|s| s.table != spec.table) {
            text.push_str(&format!("\n[{}]\n", s.table));
        }
        let with_all = Config::from_toml(&text).unwrap().to_toml();
        assert_eq!(alone, with_all, "{}", v.name);
        for s in REGISTRY {
            let present = with_all.lines().any(|l| l == format!("[{}]", s.table));
            assert_eq!(
                present,
                s.table == spec.table,
                "{}: table [{}]",
                v.name,
                s.table
            );
        }
    }
}

#[test]
fn every_fabric_runs_every_collective_as_a_dependent_workload() {
    use photonet::workload::collective::{CollectiveKind, JobConfig};
    for (_, v) in registry::variants() {
        for (kind, alg) in CollectiveKind::every_algorithm() {
            let what = format!("{}: {} {}", v.name, kind.name(), alg.name());
            let mut c = small(v.name);
            c.stop.flows = None;
            c.workload.pattern.kind = PatternKind::Collective;
            // Every endpoint (4 on rack-level fabrics, 8 otherwise: both
            // powers of two), two chunks, two iterations with a compute gap.
            c.workload.pattern.jobs = Some(vec![JobConfig {
                collective: kind,
                algorithm: Some(alg),
                message: ByteSize(16_000),
                hosts: None,
                first: None,
                count: None,
                random: false,
                chunks: 2,
                iterations: 2,
                compute: SimTime::us(1),
                start: SimTime::ZERO,
            }]);
            let r = run(&c, &Paths::default());
            no_violations(&r, &what);
            let s = r.summary.collectives.as_ref().expect(&what);
            assert_eq!(s.unfinished_flows, 0, "{what}");
            let j = &s.jobs[0];
            assert_eq!(j.completed_iterations, 2, "{what}");
            // The reference is the ideal network (200 ns) as a fluid: a
            // fabric with less latency (Baldur) can beat it at small sizes.
            assert!(
                j.slowdown > 0.5 && j.slowdown.is_finite(),
                "{what}: {}",
                j.slowdown
            );
            assert!(j.busbw_gbps > 0.0, "{what}");
        }
    }
}

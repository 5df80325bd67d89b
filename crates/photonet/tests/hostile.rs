//! Bad input that used to produce nonsense: each case is refused with the key,
//! the value and why, or runs within physical bounds.

mod common;
use common::tempdir;

use photonet::config::{Config, PatternKind, SizesConfig};
use photonet::run::{prepare, simulate, Paths, RunResult};
use photonet::units::{ByteSize, Rate, SimTime};

/// A small ESN run: 4 racks x 2 servers, 2 uplinks, 2,000 flows.
fn small() -> Config {
    let mut c = Config::default();
    c.topology.racks = 4;
    c.topology.servers_per_rack = 2;
    c.topology.uplinks = 2;
    c.topology.uplink_rate = Rate::gbps(50);
    c.workload.sizes = SizesConfig::pareto(1.5, ByteSize(20_000));
    c.stop.flows = Some(2_000);
    c
}

fn with(toml_tables: &str) -> String {
    // Replace whole tables of the small config by the given ones.
    let mut cfg: toml::Table = toml::from_str(&small().to_toml()).unwrap();
    let extra: toml::Table = toml::from_str(toml_tables).unwrap();
    for (k, v) in extra {
        match (cfg.get_mut(&k), v) {
            (Some(toml::Value::Table(t)), toml::Value::Table(e)) => t.extend(e),
            (_, v) => {
                cfg.insert(k, v);
            }
        }
    }
    toml::to_string(&cfg).unwrap()
}

fn refused_with(tables: &str) -> photonet::ConfigError {
    match Config::from_toml(&with(tables)) {
        Err(e) => e,
        Ok(c) => match prepare(&c, &Paths::default()) {
            Err(e) => e,
            Ok(_) => panic!("accepted: {tables}"),
        },
    }
}

fn run(c: &Config) -> RunResult {
    simulate(prepare(c, &Paths::default()).unwrap(), &mut |_| true).unwrap()
}

#[test]
fn a_load_whose_arrivals_cannot_be_represented_is_refused() {
    let e = refused_with("[workload]\nload = 1e-300\n");
    assert!(
        e.key == "workload.load" && e.reason.contains("simulated time is limited"),
        "{e}"
    );
    let e = refused_with("[workload]\nload = 1e300\n");
    assert!(
        e.key == "workload.load" && e.reason.contains("at once"),
        "{e}"
    );
}

#[test]
fn sizes_and_times_beyond_the_limits_are_refused() {
    let e =
        refused_with("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\nmean = \"18000000TB\"\n");
    assert!(
        e.key == "workload.sizes.mean" && e.reason.contains("largest byte size"),
        "{e}"
    );
    let e = refused_with("[esn]\nbase_latency = \"18446744073709551615ps\"\n");
    assert!(
        e.key == "esn.base_latency" && e.reason.contains("largest duration"),
        "{e}"
    );
    let e = refused_with("[topology]\nuplink_rate = \"18446744073709551615bps\"\n");
    assert!(e.key == "topology.uplink_rate", "{e}");
    let e = refused_with("[esn]\nrate_update_interval = \"10s\"\n");
    assert!(
        e.key == "esn.rate_update_interval" && e.reason.contains("stall"),
        "{e}"
    );
}

#[test]
fn files_with_sizes_beyond_the_limits_are_refused() {
    let dir = tempdir::Dir::new();
    std::fs::write(dir.path.join("big.cdf"), "1 0\n18000000000000000000 1\n").unwrap();
    std::fs::write(
        dir.path.join("big.csv"),
        "src,dst,bytes,start\n0,1,18000000000000000000,1us\n",
    )
    .unwrap();
    let paths = Paths {
        base_dir: Some(dir.path.clone()),
        search: vec![],
    };
    let mut c = small();
    c.workload.sizes = SizesConfig::cdf("big.cdf");
    let e = prepare(&c, &paths).err().expect("refused");
    assert!(
        e.key == "workload.sizes.file" && e.reason.contains("largest flow"),
        "{e}"
    );
    let mut c = small();
    c.workload.pattern.kind = PatternKind::Trace;
    c.workload.pattern.file = Some("big.csv".into());
    let e = prepare(&c, &paths).err().expect("refused");
    assert!(
        e.key == "workload.pattern.file" && e.reason.contains("largest flow"),
        "{e}"
    );
}

#[test]
fn topologies_and_runs_too_large_to_allocate_are_refused_before_allocating() {
    let e = refused_with("[topology]\nracks = 4294967295\n");
    assert!(e.key == "topology" && e.reason.contains("at most"), "{e}");
    let e = refused_with("[topology]\nservers_per_rack = 4294967295\n");
    assert!(e.key == "topology", "{e}");
    let e = refused_with("[stop]\nflows = 5000000000\n");
    assert!(e.key == "stop.flows", "{e}");
    let e = refused_with("[stop]\nflows = 1000000000\n");
    assert!(e.key == "stop.flows" && e.reason.contains("GB"), "{e}");
}

#[test]
fn a_time_series_with_too_many_bins_is_refused_with_the_bin_that_fits() {
    let e = refused_with("[metrics]\ntime_series = \"1ps\"\n");
    assert!(
        e.key == "metrics.time_series" && e.reason.contains("use a bin of at least"),
        "{e}"
    );
    // The suggested bin is accepted.
    let mut c = small();
    c.metrics.time_series = Some(SimTime::ns(100));
    assert!(prepare(&c, &Paths::default()).is_ok());
}

#[test]
fn drain_limit_is_a_cap_after_the_last_arrival() {
    let e = refused_with("[stop]\ndrain_limit = \"1ns\"\n");
    assert!(
        e.key == "stop.drain_limit" && e.reason.contains("drain"),
        "{e}"
    );
    // The case: a cap shorter than the arrival period used to end the
    // run at the cap (sim_time 0, goodput 0 or 10^6).
    let mut c = small();
    c.stop.drain = true;
    c.stop.drain_limit = Some(SimTime::ns(1));
    let r = run(&c);
    let last = *r.flows.start_ps.iter().max().unwrap();
    assert!(
        r.summary.sim_time_us * 1e6 >= last as f64,
        "{}",
        r.summary.sim_time_us
    );
    assert!(
        r.summary.goodput > 0.0 && r.summary.goodput <= 1.0,
        "{}",
        r.summary.goodput
    );
    assert!(r.summary.invariant_violations.is_empty());
    // A generous cap drains everything.
    c.stop.drain_limit = Some(SimTime::ms(100));
    let r = run(&c);
    assert_eq!(r.summary.completed, r.summary.flows);
}

#[test]
fn a_flow_count_reached_before_the_duration_ends_the_run_at_the_last_arrival() {
    let mut c = small();
    c.workload.load = 0.5;
    let by_count = run(&c);
    c.stop.duration = Some(SimTime::ms(50)); // far beyond the 2,000th arrival
    let both = run(&c);
    assert_eq!(both.summary.flows, 2_000);
    assert_eq!(both.summary.sim_time_us, by_count.summary.sim_time_us);
    assert_eq!(both.summary.offered_load, by_count.summary.offered_load);
    // When the duration comes first, the run ends at the duration.
    c.stop.duration = Some(SimTime::us(20));
    let r = run(&c);
    assert!(r.summary.flows < 2_000);
    assert_eq!(r.summary.sim_time_us, 20.0);
}

#[test]
fn another_fabrics_settings_give_a_warning_naming_them() {
    let c = Config::from_toml(&with(
        "[sirius]\nqueue_bound = 8\nfailures = [{ node = 1, at = \"1us\" }]\n",
    ))
    .unwrap();
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    let w = &c.warnings[0];
    assert!(
        w.contains("[sirius]")
            && w.contains("queue_bound")
            && w.contains("failures")
            && w.contains("esn"),
        "{w}"
    );
    // Default-valued tables (as a sweep over `fabric` carries) are not noise.
    let c = Config::from_toml(&with("[sirius]\nqueue_bound = 4\n[ideal]\n")).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

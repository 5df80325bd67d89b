//! Bad input that used to produce nonsense: each case is refused with the key,
//! the value and why, or runs within physical bounds.

use crate::common;
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

/// The small config with `tables` is refused on `key`, with a reason that
/// contains `why` if given.
fn refused_on(tables: &str, key: &str, why: Option<&str>) {
    let e = refused_with(tables);
    assert!(
        e.key == key && why.is_none_or(|w| e.reason.contains(w)),
        "{tables}: {e}"
    );
}

#[test]
fn a_load_whose_arrivals_cannot_be_represented_is_refused() {
    refused_on(
        "[workload]\nload = 1e-300\n",
        "workload.load",
        Some("simulated time is limited"),
    );
    refused_on(
        "[workload]\nload = 1e300\n",
        "workload.load",
        Some("at once"),
    );
}

#[test]
fn sizes_and_times_beyond_the_limits_are_refused() {
    // (the tables, the key they are refused on, a part of the reason, if checked)
    let cases = [
        (
            "[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\nmean = \"18000000TB\"\n",
            "workload.sizes.mean",
            Some("largest byte size"),
        ),
        (
            "[esn]\nbase_latency = \"18446744073709551615ps\"\n",
            "esn.base_latency",
            Some("largest duration"),
        ),
        (
            "[topology]\nuplink_rate = \"18446744073709551615bps\"\n",
            "topology.uplink_rate",
            None,
        ),
        (
            "[esn]\nrate_update_interval = \"10s\"\n",
            "esn.rate_update_interval",
            Some("stall"),
        ),
    ];
    for (tables, key, why) in cases {
        refused_on(tables, key, why);
    }
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
    for (tables, key, why) in [
        (
            "[topology]\nracks = 4294967295\n",
            "topology",
            Some("at most"),
        ),
        (
            "[topology]\nservers_per_rack = 4294967295\n",
            "topology",
            None,
        ),
        ("[stop]\nflows = 5000000000\n", "stop.flows", None),
        ("[stop]\nflows = 1000000000\n", "stop.flows", Some("GB")),
    ] {
        refused_on(tables, key, why);
    }
}

#[test]
fn a_time_series_with_too_many_bins_is_refused_with_the_bin_that_fits() {
    refused_on(
        "[metrics]\ntime_series = \"1ps\"\n",
        "metrics.time_series",
        Some("use a bin of at least"),
    );
    // The suggested bin is accepted.
    let mut c = small();
    c.metrics.time_series = Some(SimTime::ns(100));
    assert!(prepare(&c, &Paths::default()).is_ok());
}

#[test]
fn drain_limit_is_a_cap_after_the_last_arrival() {
    refused_on(
        "[stop]\ndrain_limit = \"1ns\"\n",
        "stop.drain_limit",
        Some("drain"),
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

//! Collectives and dependent workloads against closed forms (the issue's
//! oracles), and the release rule on every registered fabric.

use photonet::config::Config;
use photonet::dependent::Dependent;
use photonet::engine::{run_arrivals, Arrivals, StopRule};
use photonet::fabric::registry;
use photonet::recorder::Recorder;
use photonet::run::{build_fabric, prepare, simulate, Paths, RunResult};
use photonet::units::SimTime;
use photonet::workload::dag::{Dag, Node};
use proptest::prelude::*;
use std::sync::Arc;

/// `racks` × `spr` hosts at R = 100 Gbps (one 100 Gbps uplink per server),
/// the jobs given as TOML, drained.
fn config(fabric: &str, racks: u32, spr: u32, jobs: &str, extra: &str) -> Config {
    let text = format!(
        r#"fabric = "{fabric}"
[topology]
racks = {racks}
servers_per_rack = {spr}
uplinks = {spr}
uplink_rate = "100Gbps"
[workload.pattern]
kind = "collective"
jobs = [{jobs}]
{extra}"#
    );
    Config::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(c: &Config) -> RunResult {
    let p = prepare(c, &Paths::default()).unwrap_or_else(|e| panic!("{}: {e}", c.fabric));
    simulate(p, &mut |_| true).unwrap()
}

/// Last finish − first start over every flow (every flow must finish).
fn makespan(r: &RunResult) -> u64 {
    let t = &r.flows;
    assert!(t.finish_ps.iter().all(|&f| f != u64::MAX), "unfinished");
    t.finish_ps.iter().max().unwrap() - t.start_ps.iter().min().unwrap()
}

// 512 B packets at 100 Gbps take 40.96 ns exactly: no rounding anywhere.
const R_BPS: u64 = 100_000_000_000;

fn tx_ps(bytes: u64) -> u64 {
    bytes * 8 * 1_000_000_000_000 / R_BPS
}

#[test]
fn ring_all_reduce_on_the_ideal_network_to_the_picosecond() {
    for (n, s) in [(8u64, 8 * 65_536u64), (5, 5 * 2_048), (2, 1_024)] {
        let c = config(
            "ideal",
            n as u32,
            1,
            &format!(r#"{{collective = "all_reduce", algorithm = "ring", message = "{s}B"}}"#),
            "",
        );
        let r = run(&c);
        let latency = 200_000;
        let want = 2 * (n - 1) * (tx_ps(s / n) + latency);
        assert_eq!(makespan(&r), want, "n = {n}, S = {s}");
        let j = &r.summary.collectives.as_ref().unwrap().jobs[0];
        assert!((j.completion_us - want as f64 / 1e6).abs() < 1e-9);
        // The fluid reference of the same network agrees: slowdown 1.
        assert!((j.slowdown - 1.0).abs() < 1e-9, "{}", j.slowdown);
        // nccl-tests: busbw = algbw × 2(n − 1)/n.
        let algbw = s as f64 / (want as f64 * 1e-12) / 1e9;
        assert!((j.algbw_gbps - algbw).abs() < 1e-9 * algbw);
        let f = 2.0 * (n as f64 - 1.0) / n as f64;
        assert!((j.busbw_gbps - algbw * f).abs() < 1e-9 * algbw);
    }
}

#[test]
fn halving_doubling_all_reduce_on_the_ideal_network() {
    // 2·log2(n) steps of S/2, S/4, …, S/n, S/n, …, S/2, each + latency.
    let (n, s) = (8u64, 8 * 4_096u64);
    let c = config(
        "ideal",
        n as u32,
        1,
        &format!(
            r#"{{collective = "all_reduce", algorithm = "halving_doubling", message = "{s}B"}}"#
        ),
        "",
    );
    let steps: u64 = [s / 2, s / 4, s / 8]
        .iter()
        .map(|&b| tx_ps(b) + 200_000)
        .sum();
    assert_eq!(makespan(&run(&c)), 2 * steps);
}

#[test]
fn all_to_all_where_bisection_is_not_the_bottleneck() {
    // (n − 1)·(S/n)/R + latency, on the ideal network (exact) and on the
    // non-blocking ESN (fluid: to a picosecond per flow).
    let (n, s) = (8u64, 8 * 8_192u64);
    for (fabric, latency, slack) in [("ideal", 200_000u64, 0u64), ("esn", 1_000_000, 8)] {
        let c = config(
            fabric,
            4,
            2,
            &format!(r#"{{collective = "all_to_all", algorithm = "direct", message = "{s}B"}}"#),
            "",
        );
        let got = makespan(&run(&c));
        let want = (n - 1) * tx_ps(s / n) + latency;
        assert!(
            got >= want && got <= want + slack,
            "{fabric}: {got} vs {want}"
        );
    }
}

#[test]
fn a_lone_ring_on_esn_equals_the_flat_network_and_osub_is_three_times_slower() {
    // 4 racks × 4 servers; the ring visits the racks in turn (0, 4, 8, 12,
    // 1, 5, …) so that every hop leaves its rack: at the 3:1 rack tier each
    // rack's s flows share s·R/3, so every step's transfer takes 3× as long.
    let (n, s) = (16u64, 16 * 16_384u64);
    let order: Vec<u32> = (0..4)
        .flat_map(|i| (0..4).map(move |r| r * 4 + i))
        .collect();
    let job = format!(
        r#"{{collective = "all_reduce", algorithm = "ring", message = "{s}B", hosts = {order:?}}}"#
    );
    let flat = makespan(&run(&config(
        "ideal",
        4,
        4,
        &job,
        "[ideal]\nlatency = \"1us\"",
    )));
    let esn = makespan(&run(&config("esn", 4, 4, &job, "")));
    let steps = 2 * (n - 1);
    assert_eq!(flat, steps * (tx_ps(s / n) + 1_000_000));
    assert!(esn.abs_diff(flat) <= steps, "ESN {esn} vs flat {flat}");
    let osub = makespan(&run(&config(
        "esn_osub",
        4,
        4,
        &job,
        "[esn_osub]\ntier = \"rack\"",
    )));
    let want = steps * (3 * tx_ps(s / n) + 1_000_000);
    assert!(
        osub.abs_diff(want) <= 2 * steps,
        "ESN-OSUB {osub} vs {want}"
    );
}

#[test]
fn bad_input_is_refused_before_the_run_naming_the_key() {
    let refuse = |c: Config, key: &str, value: &str| {
        let e = prepare(&c, &Paths::default())
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains(key) && e.contains(value), "{e}");
    };
    refuse(
        config(
            "ideal",
            6,
            1,
            r#"{collective = "all_reduce", algorithm = "halving_doubling", message = "1MB"}"#,
            "",
        ),
        "workload.pattern.jobs[0].hosts",
        "6 participants",
    );
    refuse(
        config(
            "ideal",
            8,
            1,
            r#"{collective = "all_reduce", message = "8B", chunks = 2}"#,
            "",
        ),
        "workload.pattern.jobs[0].message",
        "8B",
    );
    refuse(
        config(
            "ideal",
            8,
            1,
            r#"{collective = "broadcast", message = "1KB", hosts = [0, 3, 8]}"#,
            "",
        ),
        "workload.pattern.jobs[0].hosts",
        "8",
    );
    let dir = std::env::temp_dir().join(format!("photonet-dag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = Paths {
        base_dir: Some(dir.clone()),
        search: vec![],
    };
    for (csv, why) in [
        ("a,0,1,1KB,0,0,b\nb,1,0,1KB,0,0,a\n", "cycle"),
        (
            "a,0,1,1KB,0,0,\nb,1,0,1KB,0,0,zz\n",
            "\"zz\" does not exist",
        ),
        ("a,0,9,1KB,0,0,\n", "dst 9 is outside"),
    ] {
        std::fs::write(
            dir.join("g.csv"),
            format!("id,src,dst,bytes,start,delay,deps\n{csv}"),
        )
        .unwrap();
        let c = Config::from_toml(
            "fabric = \"ideal\"\n[topology]\nracks = 4\nservers_per_rack = 1\n[workload.pattern]\nkind = \"dependent\"\nfile = \"g.csv\"\n",
        )
        .unwrap();
        let e = prepare(&c, &paths).err().expect("refused").to_string();
        assert!(
            e.contains("workload.pattern.file") && e.contains("g.csv") && e.contains(why),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A random DAG over `hosts` endpoints: node i depends on some earlier nodes.
fn dag_strategy(hosts: u32) -> impl Strategy<Value = Dag> {
    prop::collection::vec(
        (
            0..hosts,
            1..hosts,
            1u64..20_000,
            0u64..3_000_000,
            0u64..2_000_000,
            prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        ),
        1..25,
    )
    .prop_map(move |spec| {
        let mut d = Dag::new();
        for (i, (src, off, bytes, earliest, delay, deps)) in spec.into_iter().enumerate() {
            let deps: Vec<u32> = if i == 0 {
                vec![]
            } else {
                deps.iter().map(|x| x.index(i) as u32).collect()
            };
            d.push(
                Node {
                    src,
                    dst: (src + off) % hosts,
                    bytes,
                    earliest: SimTime(earliest),
                    delay: SimTime(delay),
                    instance: 0,
                },
                &deps,
            );
        }
        d
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    /// No flow starts before its earliest time, nor before its last
    /// dependency finished plus its delay; a flow released by a completion
    /// starts exactly then (max of the two); every flow completes.
    #[test]
    fn no_dependent_flow_starts_before_its_last_dependency_plus_delay(dag in dag_strategy(4)) {
        for (spec, v) in registry::variants() {
            let _ = spec;
            let mut c = config(v.name, 2, 2, r#"{collective = "broadcast", message = "1KB"}"#, "");
            c.fabric = v.name.into();
            let mut fabric = build_fabric(&c).unwrap();
            let hosts = fabric.hosts() as u32;
            // Fold endpoints onto the fabric's (rack-level fabrics have fewer).
            let mut d = dag.clone();
            for nd in &mut d.nodes {
                nd.src %= hosts;
                nd.dst %= hosts;
                if nd.src == nd.dst {
                    nd.dst = (nd.dst + 1) % hosts;
                }
            }
            let d = Arc::new(d);
            let mut a = Dependent::new(d.clone());
            let stop = StopRule { drain: true, ..Default::default() };
            let out = run_arrivals(fabric.as_mut(), &mut a, &stop, Recorder::new(None), &mut |_| true);
            let r = out.recorder.records();
            let origins = a.origins().unwrap().to_vec();
            prop_assert_eq!(origins.len(), d.len(), "{}: every flow released", v.name);
            let mut start = vec![0u64; d.len()];
            let mut finish = vec![0u64; d.len()];
            for (id, &nd) in origins.iter().enumerate() {
                start[nd as usize] = r.start_ps[id];
                finish[nd as usize] = r.finish_ps[id];
                prop_assert!(r.finish_ps[id] != u64::MAX, "{}: flow {} unfinished", v.name, nd);
            }
            for i in 0..d.len() as u32 {
                let nd = &d.nodes[i as usize];
                let deps = d.deps_of(i);
                let ready = deps.iter().map(|&k| finish[k as usize] + nd.delay.0).max();
                let want = ready.unwrap_or(0).max(nd.earliest.0);
                prop_assert_eq!(start[i as usize], want, "{}: node {}", v.name, i);
            }
        }
    }
}

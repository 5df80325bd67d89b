//! Criterion benchmarks of whole runs and of the hot algorithms.
//! `cargo bench -p photonet` (the paper-scale runs take ~0.3 s (ESN) and ~4 s
//! (Sirius) per iteration).

use criterion::{criterion_group, criterion_main, Criterion};
use photonet::config::Config;
use photonet::run::Paths;
use photonet::sched::maxmin::{reference, Problem, Solver};
use std::hint::black_box;

mod common;

/// Times whole paper-scale runs of `cfg` (prepare + simulate).
fn bench_run(c: &mut Criterion, name: &str, cfg: &Config) {
    common::bench_run(c, "run", name, cfg, &Paths::default());
}

fn esn_paper_scale(c: &mut Criterion) {
    // Issue target: ESN (Ideal), 128 racks x 24 servers, 8 x 50 Gbps uplinks,
    // Pareto(1.05, 100 KB), 200,000 flows at load 0.5.
    let mut cfg = Config::default();
    cfg.workload.load = 0.5;
    cfg.stop.flows = Some(200_000);
    bench_run(c, "esn_128x24_200k_flows_load0.5", &cfg);
}

fn sirius_paper_scale(c: &mut Criterion) {
    // Issue target: SIRIUS, 128 racks x 24 servers, 12 uplinks (1.5 x 8),
    // Pareto(1.05, 100 KB), 200,000 flows at load 1.0.
    let mut cfg = Config {
        fabric: "sirius".into(),
        ..Config::default()
    };
    cfg.workload.load = 1.0;
    cfg.stop.flows = Some(200_000);
    bench_run(c, "sirius_128x24_12up_200k_flows_load1.0", &cfg);
}

/// Where the standard flow-size CDFs are: `$PHOTONET_WORKLOADS`, else the
/// Python package's `workloads/` folder.
fn workload_paths() -> Paths {
    let mut search: Vec<std::path::PathBuf> = std::env::var_os("PHOTONET_WORKLOADS")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    search.push(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/photonet/workloads"),
    );
    Paths {
        base_dir: None,
        search,
    }
}

fn negotiator_paper_network(c: &mut Criterion) {
    // Issue target: NegotiaToR on the parallel network, 128 ToRs x 8 x 100 Gbps,
    // 400 Gbps of hosts per ToR, Meta Hadoop, load 1.0. The issue's run is
    // 30 ms (`photonet bench negotiator-paper`); criterion times 3 ms of it
    // (the cost per simulated ms is flat after the first few hundred µs).
    let text = r#"
        fabric = "negotiator"
        [topology]
        racks = 128
        servers_per_rack = 1
        uplinks = 8
        uplink_rate = "100Gbps"
        server_rate = "400Gbps"
        [workload]
        load = 1.0
        sizes = { dist = "cdf", file = "meta_hadoop.cdf" }
        [stop]
        flows = 100000000
        duration = "3ms"
    "#;
    let cfg = Config::from_toml(text).unwrap();
    common::bench_run(
        c,
        "run",
        "negotiator_parallel_128x8_hadoop_load1.0_3ms",
        &cfg,
        &workload_paths(),
    );
}

fn sirius_request_grant(c: &mut Criterion) {
    // One epoch of Fig. 15 at one node of the paper's setup: 60 flows in LOCAL,
    // 127 candidate intermediates; then one intermediate granting 127 requests.
    use photonet::rng::RngStreams;
    use photonet::sched::sirius::{compute_grants, compute_requests, FlowCells, Received};
    let mut rng = RngStreams::new(1).stream("bench");
    let flows: Vec<FlowCells> = (0..60)
        .map(|i| FlowCells {
            flow: i,
            dst: i % 128,
            cells: 1 + (i as u64 % 7),
        })
        .collect();
    let (mut f, mut cand, mut out) = (Vec::new(), Vec::new(), Vec::new());
    c.bench_function("sirius_compute_requests_60_flows_127_nodes", |b| {
        b.iter(|| {
            f.clear();
            f.extend_from_slice(&flows);
            cand.clear();
            cand.extend(1..128u32);
            out.clear();
            compute_requests(&mut f, &mut cand, &mut rng, &mut out);
            black_box(out.len())
        })
    });
    let reqs: Vec<Received> = (0..127)
        .map(|i| Received {
            src: i,
            dst: (i * 7) % 128,
            flow: i,
        })
        .collect();
    let (mut r, mut m, mut g) = (Vec::new(), vec![0u32; 128], Vec::new());
    c.bench_function("sirius_compute_grants_127_requests", |b| {
        b.iter(|| {
            r.clear();
            r.extend_from_slice(&reqs);
            m.iter_mut().for_each(|x| *x = 2);
            g.clear();
            compute_grants(&mut r, &mut m, 4, &mut rng, &mut g);
            black_box(g.len())
        })
    });
}

fn maxmin_solve(c: &mut Criterion) {
    // 1,000 flows over 256 hosts (512 NIC links) and 16 racks (32 rack links).
    let mut p = Problem::new(vec![1.0; 512 + 32]);
    let mut x: u64 = 12345;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for r in 512..544 {
        p.capacity[r] = 16.0 / 3.0;
    }
    for _ in 0..1000 {
        let s = (next() % 256) as u32;
        let d = (next() % 256) as u32;
        p.add_flow(&[s, 256 + d, 512 + s / 16, 528 + d / 16]);
    }
    let mut solver = Solver::default();
    let mut rates = Vec::new();
    c.bench_function("maxmin_1000_flows", |b| {
        b.iter(|| {
            solver.solve(black_box(&p), &mut rates);
            black_box(rates[0])
        })
    });
}

/// An oversubscribed-Clos sharing problem: `flows` random flows over 3,072
/// hosts (6,144 NIC links of capacity 1 = R) and 128 racks (256 rack links
/// of 8 = 24 servers x R / 3: the paper's 3:1 at the rack tier).
fn clos_problem(flows: usize) -> Problem {
    let (hosts, racks) = (3072u32, 128u32);
    let mut p = Problem::new(vec![1.0; (2 * hosts + 2 * racks) as usize]);
    for r in 2 * hosts..2 * hosts + 2 * racks {
        p.capacity[r as usize] = 8.0;
    }
    let mut x: u64 = 12345;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..flows {
        let s = (next() % hosts as u64) as u32;
        let d = (next() % hosts as u64) as u32;
        let (rs, rd) = (s / 24, d / 24);
        p.add_flow(&[s, hosts + d, 2 * hosts + rs, 2 * hosts + racks + rd]);
    }
    p
}

fn maxmin_vs_reference(c: &mut Criterion) {
    // The solver against the water-filling it replaced (its test oracle).
    let mut g = c.benchmark_group("maxmin_clos");
    for flows in [2_000usize, 20_000] {
        let p = clos_problem(flows);
        let mut solver = Solver::default();
        let mut rates = Vec::new();
        g.bench_function(format!("lazy_heap_{flows}_flows"), |b| {
            b.iter(|| {
                solver.solve(black_box(&p), &mut rates);
                black_box(rates[0])
            })
        });
        g.bench_function(format!("reference_{flows}_flows"), |b| {
            b.iter(|| black_box(reference::water_filling(black_box(&p))[0]))
        });
    }
    g.finish();
}

fn fluid_many_flows(c: &mut Criterion) {
    // Issue 8's fluid targets that fit a criterion loop: the quick-scale
    // all-to-all (32 racks x 6 servers, 2 x 50 Gbps, 20 KB, first 10,000
    // pairs, drained) and 100,000 simultaneous flows at paper scale.
    use photonet::config::PatternKind;
    use photonet::units::ByteSize;
    let mut quick = Config::default();
    quick.topology.racks = 32;
    quick.topology.servers_per_rack = 6;
    quick.topology.uplinks = 2;
    quick.workload.pattern.kind = PatternKind::AllToAll;
    quick.workload.pattern.size = Some(ByteSize(20_000));
    quick.stop.flows = Some(10_000);
    quick.stop.drain = true;
    bench_run(c, "esn_a2a_quick_20KB_10k_flows", &quick);
    let mut big = quick.clone();
    big.topology = Config::default().topology;
    big.stop.flows = Some(100_000);
    bench_run(c, "esn_100k_simultaneous_flows", &big);
}

criterion_group!(
    benches,
    maxmin_vs_reference,
    fluid_many_flows,
    esn_paper_scale,
    sirius_paper_scale,
    negotiator_paper_network,
    sirius_request_grant,
    maxmin_solve
);
criterion_main!(benches);

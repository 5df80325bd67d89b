//! Criterion benchmarks of whole runs and of the hot algorithms.
//! `cargo bench -p photonet` (the paper-scale runs take ~0.3 s (ESN) and ~4 s
//! (Sirius) per iteration).

use criterion::{criterion_group, criterion_main, Criterion};
use photonet::config::Config;
use photonet::run::{prepare, simulate, Paths};
use photonet::sched::maxmin::{Problem, Solver};
use std::hint::black_box;

/// Times whole paper-scale runs of `cfg` (prepare + simulate).
fn bench_run(c: &mut Criterion, name: &str, cfg: &Config) {
    let mut g = c.benchmark_group("run");
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter(|| {
            let p = prepare(cfg, &Paths::default()).unwrap();
            black_box(simulate(p, &mut |_| true).summary.goodput)
        })
    });
    g.finish();
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

criterion_group!(
    benches,
    esn_paper_scale,
    sirius_paper_scale,
    sirius_request_grant,
    maxmin_solve
);
criterion_main!(benches);

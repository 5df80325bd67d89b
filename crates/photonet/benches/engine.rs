//! Criterion benchmarks of whole runs and of the hot algorithms.
//! `cargo bench -p photonet` (the paper-scale run takes ~0.3 s per iteration).

use criterion::{criterion_group, criterion_main, Criterion};
use photonet::config::Config;
use photonet::run::{prepare, simulate, Paths};
use photonet::sched::maxmin::{Problem, Solver};
use std::hint::black_box;

fn esn_paper_scale(c: &mut Criterion) {
    // Issue target: ESN (Ideal), 128 racks x 24 servers, 8 x 50 Gbps uplinks,
    // Pareto(1.05, 100 KB), 200,000 flows at load 0.5.
    let mut cfg = Config::default();
    cfg.workload.load = 0.5;
    cfg.stop.flows = Some(200_000);
    let mut g = c.benchmark_group("run");
    g.sample_size(10);
    g.bench_function("esn_128x24_200k_flows_load0.5", |b| {
        b.iter(|| {
            let p = prepare(&cfg, &Paths::default()).unwrap();
            black_box(simulate(p, &mut |_| true).summary.goodput)
        })
    });
    g.finish();
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

criterion_group!(benches, esn_paper_scale, maxmin_solve);
criterion_main!(benches);

//! Criterion benchmarks of the packet substrate (`net/`) and the packet
//! fat-tree: `cargo bench -p photonet --bench net`.
//!
//! - `queue/*`: the event queue candidates on a hold model shaped like the
//!   fat-tree's events (50,000 pending, each pop schedules one event 1-13 us
//!   ahead at picosecond resolution): the binary heap of the core
//!   (`queue::EventQueue`) and the calendar wheel (`net::calendar`, the one
//!   `net::sim` uses).
//! - `fat_tree/*`: the issue-7 benchmark, k = 16 (1,024 hosts), 100 Gbps,
//!   1 us propagation, 4,096 + 64 B packets, 34-packet queues, every host
//!   sending one 2 MiB flow to a derangement partner at t = 0, until done;
//!   per-packet spraying and per-flow ECMP. (`examples/net_bench.rs` runs the
//!   same scenario once and prints ns per delivered packet and per hop.)
//! - `fat_tree/k16_websearch_load0.4_2ms`: the same network (ECMP), Poisson
//!   arrivals at load 0.4 with web-search sizes (`websearch.cdf` from
//!   `$PHOTONET_WORKLOADS` or the package's `python/photonet/workloads`), 2 ms of arrivals, no
//!   drain (the `photonet bench` scenario `fat-tree-k16-websearch`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use photonet::net::calendar::CalendarQueue;
use photonet::net::Routing;
use photonet::queue::EventQueue;
use photonet::rng::RngStreams;
use photonet::scenarios;
use photonet::units::SimTime;
use rand::Rng;
use std::hint::black_box;

const PENDING: usize = 50_000;
const OPS: usize = 200_000;

fn deltas() -> Vec<u64> {
    let mut r = RngStreams::new(1).stream("bench.queue");
    (0..PENDING + OPS)
        .map(|_| 1_000_000 + r.random_range(0..12_000_000u64))
        .collect()
}

fn queues(c: &mut Criterion) {
    let d = deltas();
    let mut g = c.benchmark_group("queue");
    g.bench_function("binary_heap_hold_200k", |b| {
        b.iter_batched(
            || {
                let mut q = EventQueue::new();
                for (i, &x) in d[..PENDING].iter().enumerate() {
                    q.push(SimTime(x), i as u32);
                }
                q
            },
            |mut q| {
                for &x in &d[PENDING..] {
                    let (t, e) = q.pop().unwrap();
                    q.push(SimTime(t.0 + x), e);
                }
                black_box(q.len())
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("calendar_hold_200k", |b| {
        b.iter_batched(
            || {
                let mut q = CalendarQueue::new();
                for (i, &x) in d[..PENDING].iter().enumerate() {
                    q.push(x, i as u32);
                }
                q
            },
            |mut q| {
                for &x in &d[PENDING..] {
                    let (t, e) = q.pop_due(u64::MAX).unwrap();
                    q.push(t + x, e);
                }
                black_box(q.len())
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// The issue-7 permutation on a k-ary fat-tree; returns delivered packets.
pub fn permutation(k: u32, routing: Routing) -> f64 {
    let c = scenarios::fat_tree_config(k, routing, scenarios::default_dupacks(routing));
    let (fabric, out) = scenarios::run_permutation(&c, 2 << 20);
    let n = fabric.hosts() as u32;
    assert_eq!(out.recorder.completed(), n as u64);
    fabric.stats()["data_packets_delivered"]
}

/// The issue-7 web-search scenario; returns delivered packets.
pub fn websearch() -> f64 {
    use photonet::run::{prepare, simulate};
    let c = scenarios::websearch_config(16);
    let paths = scenarios::workload_paths();
    let r = simulate(prepare(&c, &paths).unwrap(), &mut |_| true).unwrap();
    r.summary.fabric_stats["data_packets_delivered"]
}

fn fat_tree(c: &mut Criterion) {
    let mut g = c.benchmark_group("fat_tree");
    g.sample_size(10);
    g.bench_function("k16_permutation_2MiB_spray", |b| {
        b.iter(|| black_box(permutation(16, Routing::Spray)))
    });
    g.bench_function("k16_permutation_2MiB_ecmp", |b| {
        b.iter(|| black_box(permutation(16, Routing::Ecmp)))
    });
    g.bench_function("k16_websearch_load0.4_2ms", |b| {
        b.iter(|| black_box(websearch()))
    });
    g.finish();
}

criterion_group!(benches, queues, fat_tree);
criterion_main!(benches);

//! Criterion benchmarks of Baldur (issue 12): `cargo bench -p photonet --bench baldur`.
//! - Baldur at paper scale: 1,024 nodes, m = 4, 10,000 packets per node,
//!   random permutation at load 0.7 (target: < 5 s CPU per run);
//! - the §IV-E one-shot analysis at 2^20 nodes, m = 1..5 (target: < 1 min);
//! - the Table VI baselines (electrical multi-butterfly, dragonfly, fat-tree)
//!   at 1,024 nodes, 100 packets per node (their paper-scale runs, 10,000
//!   packets per node, are `photonet bench` scenarios `*-baldur-paper`).

use criterion::{criterion_group, criterion_main, Criterion};
use photonet::config::Config;
use photonet::run::Paths;
use std::hint::black_box;

mod common;

fn config(fabric: &str, packets_per_node: u64) -> Config {
    let text = format!(
        r#"
fabric = "{fabric}"
seed = 1
[topology]
racks = 1024
servers_per_rack = 1
uplinks = 1
uplink_rate = "25Gbps"
[workload]
load = 0.7
pattern = {{ kind = "permutation" }}
sizes = {{ dist = "fixed", size = "512B" }}
[stop]
flows = {flows}
drain = true
[baldur]
multiplicity = 4
[fat_tree]
k = 16
routing = "adaptive"
transport = "paced"
flow_control = "credit"
vcs = 3
mtu = "512B"
header = "0B"
buffer = "24KB"
ecn_threshold = "0B"
propagation = "128ns"
"#,
        flows = 1024 * packets_per_node
    );
    Config::from_toml(&text).expect("a valid config")
}

fn run(c: &mut Criterion, name: &str, cfg: &Config) {
    common::bench_run(c, "baldur", name, cfg, &Paths::default());
}

fn baldur_paper_scale(c: &mut Criterion) {
    run(
        c,
        "baldur_1024_m4_10k_per_node_load0.7",
        &config("baldur", 10_000),
    );
}

fn baselines_quick(c: &mut Criterion) {
    for f in ["multibutterfly", "dragonfly", "fat_tree"] {
        run(
            c,
            &format!("{f}_1024_100_per_node_load0.7"),
            &config(f, 100),
        );
    }
}

fn one_shot_2_20(c: &mut Criterion) {
    let mut g = c.benchmark_group("baldur");
    g.sample_size(10);
    g.bench_function("one_shot_2^20_m1..5", |b| {
        b.iter(|| {
            black_box(
                photonet::model::evaluate(
                    "baldur",
                    "min_log2_nodes = 20\nmax_log2_nodes = 20\n",
                    &serde_json::Value::Null,
                )
                .unwrap(),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, baselines_quick, one_shot_2_20, baldur_paper_scale);
criterion_main!(benches);

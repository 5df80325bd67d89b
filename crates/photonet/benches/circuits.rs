//! Criterion benchmarks of single paper-scale points of the circuit-switch
//! reproductions (issue 11): REACToR §5.4 (64 hosts at 100 Gbps, 12 ms) and
//! Mordia (Fig. 10, Table 2 method), read from `experiments/` with their
//! traces. `cargo bench -p photonet --bench circuits`. Whole figures (every
//! point) are timed by `photonet bench` (scenarios `reactor-fig10-paper`, …).

use criterion::{criterion_group, criterion_main, Criterion};
use photonet::config::Config;
use photonet::run::Paths;
use std::path::PathBuf;

mod common;

fn experiments() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

/// The figure file `paper/file` without its `[reproduce]` table, with
/// `set` (dotted key, TOML value) applied.
fn figure_config(paper: &str, file: &str, set: &[(&str, toml::Value)]) -> (Config, Paths) {
    let dir = experiments().join(paper);
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let mut t: toml::Table = toml::from_str(&text).unwrap();
    t.remove("reproduce");
    for (key, v) in set {
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().unwrap();
        let mut cur = &mut t;
        for p in parts {
            cur = cur
                .entry(p)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .unwrap();
        }
        cur.insert(last.to_string(), v.clone());
    }
    let cfg = Config::from_toml(&toml::to_string(&t).unwrap()).unwrap();
    let paths = Paths {
        base_dir: Some(dir),
        search: Vec::new(),
    };
    (cfg, paths)
}

fn bench_point(c: &mut Criterion, name: &str, cfg: &Config, paths: &Paths) {
    common::bench_run(c, "circuits", name, cfg, paths);
}

fn s(v: &str) -> toml::Value {
    toml::Value::String(v.into())
}

fn reactor_points(c: &mut Criterion) {
    let (cfg, paths) = figure_config(
        "reactor",
        "fig10_demand.toml",
        &[
            ("fabric", s("reactor")),
            ("reactor.eps_rate", s("10Gbps")),
            ("workload.pattern.file", s("fig10_D90.csv")),
        ],
    );
    bench_point(c, "reactor_fig10_D90_10G_eps_64_hosts_12ms", &cfg, &paths);
    let (cfg, paths) = figure_config(
        "reactor",
        "fig10_demand.toml",
        &[
            ("fabric", s("reactor_circuit")),
            ("workload.pattern.file", s("fig10_D99.csv")),
        ],
    );
    bench_point(c, "reactor_circuit_fig10_D99_64_hosts_12ms", &cfg, &paths);
}

fn mordia_points(c: &mut Criterion) {
    let (cfg, paths) = figure_config("mordia", "fig10_day.toml", &[("mordia.day", s("94.5us"))]);
    bench_point(c, "mordia_rr_fig10_day94.5us_23_hosts", &cfg, &paths);
    let (cfg, paths) = figure_config(
        "mordia",
        "table2_packet.toml",
        &[("mordia.max_days", toml::Value::Integer(5))],
    );
    bench_point(c, "mordia_tms_table2_n5_20_weeks", &cfg, &paths);
}

criterion_group!(benches, reactor_points, mordia_points);
criterion_main!(benches);

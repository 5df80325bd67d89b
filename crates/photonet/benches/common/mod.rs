//! Helpers shared by the benchmarks.

use criterion::Criterion;
use photonet::config::Config;
use photonet::run::{prepare, simulate, Paths};
use std::hint::black_box;

/// Times whole runs of `cfg` (prepare + simulate), 10 samples, as `name` in
/// benchmark group `group`.
pub fn bench_run(c: &mut Criterion, group: &str, name: &str, cfg: &Config, paths: &Paths) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter(|| {
            let p = prepare(cfg, paths).unwrap();
            black_box(simulate(p, &mut |_| true).unwrap().summary.completed)
        })
    });
    g.finish();
}

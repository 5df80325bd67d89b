//! Runs one TOML config and prints its summary as JSON (for benchmarks and
//! debugging without Python): `cargo run --release --example run_config -- CFG`.

use photonet::run::{prepare, simulate, Paths};
use photonet::Config;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: run_config CONFIG.toml");
    let text = std::fs::read_to_string(&path).expect("read config");
    let cfg = Config::from_toml(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let base = std::path::Path::new(&path)
        .parent()
        .map(|p| p.to_path_buf());
    let paths = Paths {
        base_dir: base,
        search: vec![],
    };
    let t0 = std::time::Instant::now();
    let r = simulate(
        prepare(&cfg, &paths).unwrap_or_else(|e| panic!("{e}")),
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("wall {:.3} s", t0.elapsed().as_secs_f64());
    println!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
}

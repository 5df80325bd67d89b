//! Runs one TOML config and prints its summary as JSON (for benchmarks and
//! debugging without Python): `cargo run --release --example run_config --
//! CFG [FLOWS.csv]`. With FLOWS.csv, the per-flow records are written there
//! too (id, src, dst, bytes, start_ps, finish_ps, delivered), so that two
//! builds can be compared flow by flow.

use photonet::run::{prepare, simulate, Paths};
use photonet::Config;
use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: run_config CONFIG.toml [FLOWS.csv]");
    let flows_out = args.next();
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
    if let Some(out) = flows_out {
        let f = std::fs::File::create(&out).unwrap_or_else(|e| panic!("{out}: {e}"));
        let mut w = std::io::BufWriter::new(f);
        writeln!(w, "id,src,dst,bytes,start_ps,finish_ps,delivered").unwrap();
        let t = &r.flows;
        for i in 0..t.len() {
            writeln!(
                w,
                "{i},{},{},{},{},{},{}",
                t.src[i], t.dst[i], t.bytes[i], t.start_ps[i], t.finish_ps[i], t.delivered[i]
            )
            .unwrap();
        }
        w.flush().unwrap();
    }
}

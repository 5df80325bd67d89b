//! A workload with overlaid streams (`workload.overlay`) end to end: the
//! background's flows are those of the run without the overlay, each
//! stream is summarised apart, and the overlay offers its own load.

use photonet::config::Config;
use photonet::run::{prepare, simulate, Paths, RunResult};

const BASE: &str = r#"
fabric = "ideal"
seed = 7
[topology]
racks = 16
servers_per_rack = 1
uplinks = 1
uplink_rate = "10Gbps"
[workload]
load = 0.3
pattern = { kind = "uniform" }
sizes = { dist = "fixed", size = "20KB" }
[stop]
duration = "2ms"
flows = 100000000
drain = true
"#;

const OVERLAY: &str = r#"
[[workload.overlay]]
load = 0.05
pattern = { kind = "incast", degree = 5, size = "1KB" }
"#;

fn run(text: &str) -> RunResult {
    let c = Config::from_toml(text).unwrap();
    simulate(prepare(&c, &Paths::default()).unwrap(), &mut |_| true).unwrap()
}

#[test]
fn streams_are_merged_in_time_and_summarised_apart() {
    let alone = run(BASE);
    let mixed = run(&format!("{BASE}{OVERLAY}"));
    assert!(alone.summary.streams.is_none());
    let s = mixed
        .summary
        .streams
        .as_ref()
        .expect("per-stream summaries");
    assert_eq!(s.len(), 2);
    let f = &mixed.flows;
    assert!(f.start_ps.windows(2).all(|w| w[0] <= w[1]), "time-ordered");
    // The background is the run without the overlay, flow for flow.
    let bg: Vec<(u32, u32, u64, u64)> = (0..f.len())
        .filter(|&i| f.bytes[i] == 20_000)
        .map(|i| (f.src[i], f.dst[i], f.bytes[i], f.start_ps[i]))
        .collect();
    let a = &alone.flows;
    let want: Vec<_> = (0..a.len())
        .map(|i| (a.src[i], a.dst[i], a.bytes[i], a.start_ps[i]))
        .collect();
    assert_eq!(bg, want);
    assert_eq!(s[0].flows as usize, want.len());
    // Incasts: whole groups of 5, one event each, every one finished.
    assert_eq!(s[1].flows % 5, 0);
    assert_eq!(s[1].events * 5, s[1].flows);
    assert_eq!(s[1].events_unfinished, 0);
    assert!(s[1].event_finish_mean_us >= s[1].fct["all"].mean_us);
    // Each stream offers its own load: 0.3 and 0.05 of 16 x 10 Gbps.
    let bytes = |k: usize| s[k].flows as f64 * if k == 0 { 20e3 } else { 1e3 };
    let cap = 2e-3 * 16.0 * 10e9 / 8.0;
    assert!((bytes(0) / cap - 0.3).abs() < 0.03, "{}", bytes(0) / cap);
    assert!((bytes(1) / cap - 0.05).abs() < 0.01, "{}", bytes(1) / cap);
}

#[test]
fn overlay_keys_are_checked_by_name() {
    let bad = |extra: &str| {
        Config::from_toml(&format!("{BASE}{extra}"))
            .and_then(|c| c.validate())
            .expect_err("should be rejected")
            .to_string()
    };
    let e = bad("[[workload.overlay]]\nload = 0.05\npattern = { kind = \"incast\", degree = 99, size = \"1KB\" }\n");
    assert!(e.contains("workload.overlay[0].pattern.degree"), "{e}");
    let e = bad("[[workload.overlay]]\nload = 0.0\npattern = { kind = \"uniform\" }\n");
    assert!(e.contains("workload.overlay[0].load"), "{e}");
    let e = bad(
        "[[workload.overlay]]\nload = 0.1\npattern = { kind = \"all_to_all\", size = \"1KB\" }\n",
    );
    assert!(e.contains("workload.overlay[0].pattern.kind"), "{e}");
}

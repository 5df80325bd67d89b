//! The fabric fuzzer: random small, valid-looking configs for every
//! registered fabric (a new fabric joins by being registered; nothing here
//! names one), each run to the end. A config may be refused (a clear error:
//! the case draws again, so fabrics with many constraints still run); a run
//! may not panic, stall, break the physical-sanity layer or report an
//! invariant violation.
//!
//! Each fabric's own parameters are drawn by mutating its default table:
//! numbers scaled by 1/2 or 2 (unit strings too), booleans flipped.
//! `PHOTONET_FUZZ_CASES` (cases per fabric, default 2) runs more,
//! `PHOTONET_FUZZ_SEED` another sequence, `PHOTONET_FUZZ_MINUTES` stops a
//! long run after that much wall; every finding is printed as found.

use photonet::config::Config;
use photonet::fabric::registry;
use photonet::run::{prepare, simulate, Paths};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Scales the number at the front of a unit string ("100ns" → "50ns").
fn scale_unit(s: &str, f: f64) -> Option<String> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    if end == 0 || end == s.len() {
        return None;
    }
    let x: f64 = s[..end].parse().ok()?;
    if x == 0.0 {
        // 0 often means "derive it" (a rate from the topology): kept.
        return None;
    }
    let y = (x * f).round().max(1.0);
    Some(format!("{y}{}", &s[end..]))
}

/// Mutates a fabric's default table in place within sane ranges.
fn mutate(t: &mut toml::Table, rng: &mut Xoshiro256PlusPlus) {
    for (_, v) in t.iter_mut() {
        if !rng.random_bool(0.3) {
            continue;
        }
        let f = if rng.random_bool(0.5) { 0.5 } else { 2.0 };
        match v {
            toml::Value::Integer(i) => *i = ((*i as f64 * f).round() as i64).max(0),
            toml::Value::Float(x) => *x *= f,
            toml::Value::Boolean(b) => *b = !*b,
            toml::Value::String(s) => {
                if let Some(n) = scale_unit(s, f) {
                    *s = n;
                }
            }
            toml::Value::Table(inner) => mutate(inner, rng),
            _ => {}
        }
    }
}

/// A random small config for `fabric` as TOML.
fn draw(fabric: &str, table: &str, defaults: &toml::Table, rng: &mut Xoshiro256PlusPlus) -> String {
    let racks = rng.random_range(2..=6u32);
    let spr = rng.random_range(1..=3u32);
    let uplinks = rng.random_range(1..=4u32);
    let rate = [10, 25, 50, 100][rng.random_range(0..4)];
    let load = [0.05, 0.2, 0.5, 0.8, 1.0, 1.5][rng.random_range(0..6)];
    let flows = rng.random_range(10..=200u32);
    let sizes = match rng.random_range(0..3) {
        0 => format!(
            "dist = \"fixed\"\nsize = \"{}B\"",
            [1u64, 64, 562, 1_500, 10_000, 100_000][rng.random_range(0..6)]
        ),
        1 => format!(
            "dist = \"pareto\"\nshape = {}\nmean = \"{}B\"",
            [1.05, 1.5, 2.0][rng.random_range(0..3)],
            [1_000u64, 10_000, 100_000][rng.random_range(0..3)]
        ),
        _ => "dist = \"cdf\"\nfile = \"meta_hadoop.cdf\"".to_string(),
    };
    let pattern = match rng.random_range(0..5) {
        0 | 1 => "kind = \"uniform\"".to_string(),
        2 => "kind = \"permutation\"".to_string(),
        3 => format!("kind = \"incast\"\ndegree = {}", rng.random_range(2..=4)),
        _ => "kind = \"hotspot\"\nnode = 0".to_string(),
    };
    let drain = rng.random_bool(0.6);
    let limit = if drain && rng.random_bool(0.3) {
        "drain_limit = \"2ms\"\n"
    } else {
        ""
    };
    let check = rng.random_bool(0.5);
    let mut own = defaults.clone();
    mutate(&mut own, rng);
    let own = toml::to_string(&toml::Table::from_iter([(
        table.to_string(),
        toml::Value::Table(own),
    )]))
    .unwrap();
    format!(
        "fabric = \"{fabric}\"\nseed = {}\n[topology]\nracks = {racks}\nservers_per_rack = {spr}\nuplinks = {uplinks}\n\
         uplink_rate = \"{rate}Gbps\"\n[workload]\nload = {load}\n[workload.sizes]\n{sizes}\n[workload.pattern]\n{pattern}\n\
         [stop]\nflows = {flows}\ndrain = {drain}\n{limit}[metrics]\ncheck_invariants = {check}\n{own}",
        rng.random_range(1..1000u32)
    )
}

/// Draws per case before a fabric's case counts as refused.
const DRAWS: u32 = 16;

enum Outcome {
    Ran,
    Refused,
    Finding(String),
}

fn one(text: &str, paths: &Paths, wall_limit_s: f64) -> Outcome {
    let cfg = match Config::from_toml(text) {
        Ok(c) => c,
        Err(_) => return Outcome::Refused,
    };
    let p = match prepare(&cfg, paths) {
        Ok(p) => p,
        Err(_) => return Outcome::Refused,
    };
    let t0 = std::time::Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| {
        simulate(p, &mut |_| t0.elapsed().as_secs_f64() < wall_limit_s)
    }));
    match r {
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Outcome::Finding(format!("panic: {msg}"))
        }
        Ok(Err(e)) => Outcome::Finding(e.to_string()),
        Ok(Ok(r)) if r.cancelled => {
            Outcome::Finding(format!("slow: more than {wall_limit_s} s of wall"))
        }
        Ok(Ok(r)) if !r.summary.invariant_violations.is_empty() => Outcome::Finding(format!(
            "invariant violations: {:?}",
            &r.summary.invariant_violations[..r.summary.invariant_violations.len().min(3)]
        )),
        Ok(Ok(_)) => Outcome::Ran,
    }
}

#[test]
fn random_configs_on_every_fabric_stay_physical() {
    let cases = env_u64("PHOTONET_FUZZ_CASES", 2);
    let seed = env_u64("PHOTONET_FUZZ_SEED", 27);
    let wall = env_u64("PHOTONET_FUZZ_WALL_S", 20) as f64;
    // A long run on demand: stop after this many minutes of wall.
    let minutes = env_u64("PHOTONET_FUZZ_MINUTES", u64::MAX / 120);
    let t0 = std::time::Instant::now();
    let paths = photonet::scenarios::workload_paths();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // Per fabric: (cases ran, draws refused, findings).
    let mut tally: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    let mut findings: Vec<String> = Vec::new();
    // Case-major, so a long run covers every fabric evenly at any point.
    for case in 0..cases {
        if t0.elapsed().as_secs() >= minutes * 60 {
            break;
        }
        for (spec, v) in registry::variants() {
            let defaults = spec.defaults();
            let e = tally.entry(v.name).or_default();
            // Rejection sampling: a refused draw is redrawn (up to DRAWS
            // times), so every fabric runs mostly valid configs however
            // many of its mutated tables its plan refuses; each refusal
            // still went through the config checks and is counted.
            let mut draws = 0;
            let (text, outcome) = loop {
                let text = draw(v.name, spec.table, &defaults, &mut rng);
                draws += 1;
                match one(&text, &paths, wall) {
                    Outcome::Refused if draws < DRAWS => e.1 += 1,
                    o => break (text, o),
                }
            };
            match outcome {
                Outcome::Ran => e.0 += 1,
                Outcome::Refused => e.1 += 1,
                Outcome::Finding(what) => {
                    e.2 += 1;
                    let f = format!("case {case} {}: {what}\n--- config ---\n{text}", v.name);
                    eprintln!("FINDING {f}");
                    findings.push(f);
                }
            }
        }
    }
    eprintln!("fabric: ran / refused draws (share of draws) / findings");
    for (name, (ran, refused, bad)) in &tally {
        let share = *refused as f64 / (ran + refused + bad).max(1) as f64;
        eprintln!(
            "  {name}: {ran} / {refused} ({:.0} %) / {bad}",
            100.0 * share
        );
    }
    assert!(
        findings.is_empty(),
        "{} findings; the first:\n{}",
        findings.len(),
        findings[0]
    );
}

/// A Baldur config (nodes rounded up to a power of two, drained, checked)
/// of `[racks, servers_per_rack, uplinks, Gbps]`, the workload's load,
/// size and pattern lines, its flow count and `[baldur]` lines.
fn baldur(
    seed: u32,
    topo: [u32; 4],
    load: f64,
    workload: [&str; 2],
    flows: u32,
    own: &str,
) -> String {
    let [racks, spr, uplinks, gbps] = topo;
    let [sizes, pattern] = workload;
    format!(
        "fabric = \"baldur\"\nseed = {seed}\n[topology]\nracks = {racks}\nservers_per_rack = {spr}\n\
         uplinks = {uplinks}\nuplink_rate = \"{gbps}Gbps\"\n[workload]\nload = {load}\n\
         [workload.sizes]\n{sizes}\n[workload.pattern]\n{pattern}\n[stop]\nflows = {flows}\n\
         drain = true\n[metrics]\ncheck_invariants = true\n[baldur]\nround_up_nodes = true\n{own}"
    )
}

/// The two Baldur stalls of the 31-minute run. baldur_6478: 12 nodes (16
/// built) at load 0.8, 1 KB packets at 10 Gbps, timeout 2 us (the loaded
/// round trip is 1.4–2.3 us). baldur_2502: a hotspot at load 1 into a node
/// that takes m = 2 packets at once, timeout 1 us, backoff capped at 2^5.
fn baldur_stalls() -> [(&'static str, String); 2] {
    [
        (
            "6478",
            baldur(
                112,
                [6, 2, 1, 10],
                0.8,
                ["dist = \"fixed\"\nsize = \"100000B\"", "kind = \"uniform\""],
                110,
                "multiplicity = 2\nejection_link = \"200ns\"\npacket = \"1024B\"\n\
                 end_gap_bits = 12\nbackoff_slot = \"100ns\"\n",
            ),
        ),
        (
            "2502",
            baldur(
                807,
                [5, 2, 2, 25],
                1.0,
                [
                    "dist = \"cdf\"\nfile = \"meta_hadoop.cdf\"",
                    "kind = \"hotspot\"\nnode = 0",
                ],
                155,
                "multiplicity = 2\ninjection_link = \"200ns\"\nejection_link = \"200ns\"\n\
                 timeout = \"1us\"\nbackoff_cap = 5\n",
            ),
        ),
    ]
}

fn run_text(text: &str) -> Result<photonet::run::RunResult, String> {
    let cfg = Config::from_toml(text).map_err(|e| e.to_string())?;
    let p = prepare(&cfg, &photonet::scenarios::workload_paths()).map_err(|e| e.to_string())?;
    simulate(p, &mut |_| true).map_err(|e| e.to_string())
}

/// The two Baldur stalls of the 31-minute run complete with the paper's
/// node-level backoff (the default), every flow.
#[test]
fn baldur_fuzzer_stalls_complete_with_node_backoff() {
    for (name, text) in baldur_stalls() {
        let r = run_text(&text).unwrap_or_else(|e| panic!("baldur_{name}: {e}"));
        let s = &r.summary;
        assert_eq!(s.completed, s.flows, "baldur_{name}");
        assert!(s.invariant_violations.is_empty(), "baldur_{name}");
    }
}

/// With the backoff per packet the same configs livelock (a node keeps
/// sending at line rate while its ACKs are lost in the flood it makes):
/// the watchdog stops them.
#[test]
fn baldur_fuzzer_stalls_livelock_with_packet_backoff() {
    for (_, text) in baldur_stalls() {
        let text = text.replace(
            "drain = true",
            "drain = true\nstall_limit = \"300us\"\ndrain_limit = \"50ms\"",
        ) + "backoff = \"packet\"\n";
        let e = run_text(&text).err().expect("stalls");
        assert!(e.starts_with("stalled:"), "{e}");
    }
}

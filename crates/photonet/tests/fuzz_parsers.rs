//! Fuzzing the parsers on stable Rust: proptest-driven mutation of a corpus
//! made of the real files (example configs, experiment configs, the standard
//! workload CDFs, traces) plus arbitrary text. Each parser must return Ok or a
//! clear error — never panic — and whatever it accepts must hold together
//! (round trips, sorted traces, monotone CDFs).
//!
//! CI runs a short pass (256 cases per parser). A long run, e.g. 10 minutes
//! per parser:
//! `PHOTONET_FUZZ_CASES=2000000 PHOTONET_FUZZ_SECONDS=600 cargo test --release -p photonet --test integration fuzz_parsers:: -- --test-threads 1`
//! Every crash found becomes a test in `tests/hostile.rs` or beside the parser.

use photonet::config::Config;
use photonet::units::{ByteSize, Rate, SimTime};
use photonet::workload::{trace, Cdf};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::path::Path;
use std::time::{Duration, Instant};

fn cases() -> u32 {
    std::env::var("PHOTONET_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn deadline() -> Option<Instant> {
    std::env::var("PHOTONET_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|s| Instant::now() + Duration::from_secs(s))
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

/// Text files of a kind from the repository (the standard workloads included).
fn corpus(ext: &str) -> Vec<String> {
    let mut dirs = vec![
        repo().join("examples"),
        repo().join("python/photonet/scenarios"),
        repo().join("python/photonet/workloads"),
    ];
    if let Ok(rd) = std::fs::read_dir(repo().join("experiments")) {
        dirs.extend(rd.flatten().map(|e| e.path()));
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == ext) {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    out.push(t);
                }
            }
        }
    }
    assert!(!out.is_empty(), "no .{ext} corpus found");
    out
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, String),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let junk = prop_oneof![
        Just("0".to_string()),
        Just("-".to_string()),
        Just("1e308".to_string()),
        Just("18446744073709551616".to_string()),
        Just("\"".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("=".to_string()),
        Just("\n".to_string()),
        Just(".".to_string()),
        Just("ns".to_string()),
        Just("Gbps".to_string()),
        Just("TB".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just(",".to_string()),
        Just("µ".to_string()),
        "\\PC{0,6}",
    ];
    prop_oneof![
        (any::<usize>(), 0usize..8).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), junk.clone()).prop_map(|(a, s)| Edit::Insert(a, s)),
        (any::<usize>(), junk).prop_map(|(a, s)| Edit::Replace(a, s)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ]
}

fn char_index(s: &str, a: usize) -> usize {
    if s.is_empty() {
        return 0;
    }
    let n = s.chars().count();
    s.char_indices().nth(a % n).map_or(s.len(), |(i, _)| i)
}

fn apply(mut s: String, edits: &[Edit]) -> String {
    for e in edits {
        match e {
            Edit::Delete(a, n) => {
                let i = char_index(&s, *a);
                let j = s[i..]
                    .char_indices()
                    .nth(*n)
                    .map_or(s.len(), |(k, _)| i + k);
                s.replace_range(i..j, "");
            }
            Edit::Insert(a, t) => {
                let i = char_index(&s, *a);
                s.insert_str(i, t);
            }
            Edit::Replace(a, t) => {
                let i = char_index(&s, *a);
                let j = s[i..].chars().next().map_or(i, |c| i + c.len_utf8());
                s.replace_range(i..j, t);
            }
            Edit::DuplicateLine(a) => {
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let k = a % lines.len();
                    lines.insert(k, lines[k]);
                }
                s = lines.join("\n");
            }
            Edit::SwapLines(a, b) => {
                let mut lines: Vec<String> = s.lines().map(String::from).collect();
                if !lines.is_empty() {
                    let n = lines.len();
                    lines.swap(a % n, b % n);
                }
                s = lines.join("\n");
            }
        }
    }
    s
}

/// Mutated corpus files, or arbitrary text now and then.
fn inputs(corpus: Vec<String>) -> impl Strategy<Value = String> {
    let n = corpus.len();
    prop_oneof![
        9 => (0..n, prop::collection::vec(edit(), 0..6))
            .prop_map(move |(i, e)| apply(corpus[i].clone(), &e)),
        1 => "\\PC{0,200}",
    ]
}

/// Runs `check` on inputs from `strategy`: `PHOTONET_FUZZ_CASES` cases in all
/// (default 256), in chunks of fresh seeds, stopping early at
/// `PHOTONET_FUZZ_SECONDS` if given. Prints how many cases ran.
fn fuzz(
    name: &str,
    strategy: impl Strategy<Value = String>,
    check: impl Fn(&str) -> Result<(), TestCaseError>,
) {
    const CHUNK: u32 = 4096;
    let total = cases();
    let end = deadline();
    let (mut done, mut chunk) = (0u32, 0u64);
    while done < total && end.is_none_or(|d| Instant::now() <= d) {
        let n = CHUNK.min(total - done);
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&chunk.to_le_bytes());
        seed[8..16].copy_from_slice(&(name.len() as u64).to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
        let config = PtConfig {
            cases: n,
            failure_persistence: None,
            ..PtConfig::default()
        };
        let mut runner = TestRunner::new_with_rng(config, rng);
        if let Err(e) = runner.run(&strategy, |text| check(&text)) {
            panic!("{name} (chunk {chunk}): {e}");
        }
        done += n;
        chunk += 1;
    }
    eprintln!("{name}: {done} cases");
}

#[test]
fn config_parser_never_panics_and_what_it_accepts_round_trips() {
    let mut seeds = corpus("toml");
    seeds.push(Config::default().to_toml());
    seeds.push(photonet::config::documented_default_config());
    fuzz("config", inputs(seeds), |text| {
        if let Ok(c) = Config::from_toml(text) {
            let again = Config::from_toml(&c.to_toml());
            prop_assert!(again.is_ok(), "complete config rejected: {:?}", again.err());
            prop_assert_eq!(again.unwrap(), c);
        }
        Ok(())
    });
}

#[test]
fn unit_parsers_never_panic_and_round_trip() {
    let unit = prop_oneof![
        "[0-9]{0,22}(\\.[0-9]{0,14})?(ps|ns|us|µs|ms|s|bps|Kbps|Mbps|Gbps|Tbps|B|KB|MB|GB|TB|KiB|MiB|GiB)?",
        "\\PC{0,20}",
    ];
    fuzz("units", unit, |text| {
        if let Ok(t) = SimTime::parse(text) {
            prop_assert_eq!(SimTime::parse(&t.to_string()).ok(), Some(t));
        }
        if let Ok(r) = Rate::parse(text) {
            prop_assert_eq!(Rate::parse(&r.to_string()).ok(), Some(r));
        }
        if let Ok(b) = ByteSize::parse(text) {
            prop_assert_eq!(ByteSize::parse(&b.to_string()).ok(), Some(b));
        }
        Ok(())
    });
}

#[test]
fn cdf_parser_never_panics_and_what_it_accepts_is_a_distribution() {
    fuzz("cdf", inputs(corpus("cdf")), |text| {
        if let Ok(c) = Cdf::parse(text) {
            let m = c.mean();
            prop_assert!(m.is_finite() && m >= 0.0, "mean {m}");
            let (lo, hi) = (c.quantile(0.0), c.quantile(1.0));
            prop_assert!(lo <= hi);
            for k in 0..=20 {
                let q = c.quantile(k as f64 / 20.0);
                prop_assert!(q >= lo && q <= hi && q.is_finite(), "quantile {q}");
            }
        }
        Ok(())
    });
}

#[test]
fn trace_parser_never_panics_and_what_it_accepts_is_sorted() {
    let seeds = vec![
        "src,dst,bytes,start\n0,1,562,0ns\n1,0,100,2us\n".to_string(),
        "src,dst,bytes,start\n3,2,64KB,12.5us\n2,3,1,1ns\n0,3,1000000,1ms\n".to_string(),
        "# comment\nsrc,dst,bytes,start\n\n0,1,10,5us\n".to_string(),
    ];
    fuzz("trace", inputs(seeds), |text| {
        if let Ok(flows) = trace::parse_trace(text, 4) {
            prop_assert!(!flows.is_empty());
            for (i, f) in flows.iter().enumerate() {
                prop_assert_eq!(f.id as usize, i);
                prop_assert!(f.src < 4 && f.dst < 4 && f.src != f.dst && f.bytes > 0);
            }
            prop_assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
        }
        Ok(())
    });
}

//! Issue 27 item 9: every fabric estimates its up-front memory in its plan
//! and refuses above the limit. The oracle here is the allocator: building
//! each registered fabric at a few sizes, the bytes it holds once built
//! (counted by a wrapping global allocator) must not exceed its estimate,
//! and the estimate must not be wildly above them (an estimate that refuses
//! runs which would fit is wrong too).

use photonet::config::Config;
use photonet::fabric::registry;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// What a fabric may hold beyond its estimate: fixed costs that do not
/// grow with the topology (the packet network's ~2 MB of tables; the limit
/// is in GB).
const FIXED: u128 = 4 << 20;

/// One measurement at a time (the counters are global).
static ONE: Mutex<()> = Mutex::new(());

fn config(fabric: &str, racks: u32, spr: u32, uplinks: u32) -> Config {
    let mut c = Config {
        fabric: fabric.into(),
        ..Config::default()
    };
    c.topology.racks = racks;
    c.topology.servers_per_rack = spr;
    c.topology.uplinks = uplinks;
    c
}

#[test]
fn every_fabric_holds_no_more_than_its_estimate() {
    let _g = ONE.lock().unwrap();
    let shapes = [
        (8, 2, 2),
        (16, 2, 2),
        (8, 2, 8),
        (32, 1, 4),
        (4, 8, 2),
        (64, 2, 2),
    ];
    let mut report = String::new();
    let mut bad = Vec::new();
    for (spec, v) in registry::variants() {
        for &(racks, spr, up) in &shapes {
            let c = config(v.name, racks, spr, up);
            let table = c.fabric_table(spec).unwrap();
            let ctx = c.build_context();
            let Ok(estimate) = spec.memory(&table, v, &ctx) else {
                continue; // a shape the fabric cannot build
            };
            let base = LIVE.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let fabric = spec.plan(&table, v, &ctx).unwrap().build(&ctx).unwrap();
            let held = LIVE.load(Ordering::Relaxed).saturating_sub(base) as u128;
            drop(fabric);
            report.push_str(&format!(
                "{} {racks}x{spr}x{up}: held {held} B, estimate {estimate} B\n",
                v.name
            ));
            if held > estimate + FIXED {
                bad.push(format!(
                    "{} {racks}x{spr}x{up}: holds {held} B, above its estimate {estimate} B",
                    v.name
                ));
            }
            if estimate > 64 * held.max(FIXED) {
                bad.push(format!(
                    "{} {racks}x{spr}x{up}: estimate {estimate} B, over 64x the {held} B it holds",
                    v.name
                ));
            }
        }
    }
    eprintln!("{report}");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

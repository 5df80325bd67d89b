#![allow(clippy::field_reassign_with_default)] // tests tweak a default config key by key
//! Baldur's hotspot (Fig. 7) against its bound: every node sends to node 0,
//! which has m receivers (the m last-stage outputs of its direction), so no
//! network drains the hotspot faster than m · R. The electrical
//! multi-butterfly, buffered and lossless, runs at that bound; Baldur loses
//! time to drops and to the idle periods of binary exponential backoff, and
//! gets closer to it as the backoff slot shrinks (the paper gives no slot).

use photonet::config::{Config, PatternKind, SizesConfig};
use photonet::fabric::baldur::{Backoff, BaldurParams};
use photonet::run::{Paths, RunResult};
use photonet::units::{ByteSize, SimTime};

use crate::common;
use common::{loaded, one_host_per_rack, run_clean};

const HOSTS: u32 = 64;
const PER_SENDER: u64 = 40;

fn hotspot(fabric: &str) -> Config {
    let sizes = SizesConfig::fixed(ByteSize(512));
    let mut c = loaded(fabric, 0.7, sizes, (HOSTS as u64 - 1) * PER_SENDER);
    one_host_per_rack(&mut c.topology, HOSTS, 1, 25);
    c.workload.pattern.kind = PatternKind::Hotspot;
    c
}

fn run(c: &Config) -> RunResult {
    let r = run_clean(c, &Paths::default());
    assert_eq!(r.summary.unfinished, 0);
    r
}

/// Bytes into node 0 per second, from the first arrival to the last delivery.
fn drain_gbps(r: &RunResult) -> f64 {
    r.summary.delivered_bytes as f64 * 8.0 / (r.summary.sim_time_us * 1e3)
}

#[test]
fn the_hotspot_drains_at_most_m_links_and_baldur_loses_time_to_backoff() {
    let m = 4u32;
    let bound = m as f64 * 25.0;
    let mut c = hotspot("baldur");
    // Per-packet backoff: the nodes keep the hotspot saturated (the default
    // node backoff throttles them and drops far less).
    c.edit(|p: &mut BaldurParams| {
        p.multiplicity = m;
        p.backoff = Backoff::Packet;
    });
    let slow = |slot: SimTime| {
        let mut c = c.clone();
        c.edit(|p: &mut BaldurParams| p.backoff_slot = slot);
        run(&c)
    };
    let (short, long) = (slow(SimTime::ns(20)), slow(SimTime::us(1)));
    for r in [&short, &long] {
        assert!(drain_gbps(r) <= bound * 1.0001, "{}", drain_gbps(r));
        assert!(r.summary.fabric_stats["data_drop_rate"] > 0.3, "saturated");
    }
    // Shorter backoff: the receivers idle less, the hotspot drains faster.
    assert!(
        drain_gbps(&short) > 1.5 * drain_gbps(&long),
        "{} vs {}",
        drain_gbps(&short),
        drain_gbps(&long)
    );
    // The buffered electrical multi-butterfly with m = 4 runs near the bound
    // (lossless: its 4 ejection links stay busy while packets wait).
    let mut c = hotspot("multibutterfly");
    c.edit(|p: &mut photonet::fabric::hpc::HpcParams| p.multiplicity = m);
    let e = run(&c);
    assert!(drain_gbps(&e) <= bound * 1.0001);
    assert!(drain_gbps(&e) > drain_gbps(&long), "{}", drain_gbps(&e));
}

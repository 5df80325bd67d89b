#![allow(clippy::field_reassign_with_default)] // tests tweak a default config key by key
//! End-to-end checks of the ideal electrical baselines against hand-worked cases.

use photonet::config::{Config, SizesConfig};
use photonet::fabric::esn::{EsnOsubParams, EsnParams};
use photonet::run::{prepare, run_toml, simulate, Paths};
use photonet::units::{ByteSize, Rate, SimTime};

fn small_config(trace: &str) -> (Config, Paths, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    std::fs::write(dir.path.join("t.csv"), trace).unwrap();
    let mut c = Config::default();
    c.topology.racks = 2;
    c.topology.servers_per_rack = 4;
    c.topology.uplinks = 4;
    c.topology.uplink_rate = Rate::gbps(10); // 40 Gbps per rack, 10 Gbps per server
    c.workload.pattern.kind = photonet::config::PatternKind::Trace;
    c.workload.pattern.file = Some("t.csv".into());
    c.stop.flows = None;
    c.stop.drain = true;
    c.edit(|p: &mut EsnParams| p.base_latency = SimTime::ns(500));
    c.edit(|p: &mut EsnOsubParams| p.base_latency = SimTime::ns(500));
    let paths = Paths {
        base_dir: Some(dir.path.clone()),
        search: vec![],
    };
    (c, paths, dir)
}

mod common;
use common::tempdir;

fn finishes(c: &Config, p: &Paths) -> Vec<Option<u64>> {
    let r = simulate(prepare(c, p).unwrap(), &mut |_| true);
    assert!(
        r.summary.invariant_violations.is_empty(),
        "{:?}",
        r.summary.invariant_violations
    );
    r.flows
        .finish_ps
        .iter()
        .zip(&r.flows.start_ps)
        .map(|(f, s)| f.map(|f| f - s))
        .collect()
}

#[test]
fn single_flow_matches_the_analytic_fct() {
    // 1 MB at 10 Gbps = 800 us, plus 500 ns latency.
    let (c, p, _d) = small_config("src,dst,bytes,start\n0,5,1MB,0ns\n");
    let fct = finishes(&c, &p);
    assert_eq!(fct, vec![Some(800_000_000 + 500_000)]);
}

#[test]
fn hand_worked_sharing_of_a_source_nic() {
    // A: 0->1, 1 MB at t=0. B: 0->2, 1 MB at t=400us (A half done).
    // Both then get 5 Gbps: A's last 0.5 MB takes 800 us -> done at 1200 us.
    // B has 0.5 MB left at 1200 us, alone at 10 Gbps: 400 us more -> 1600 us.
    let (c, p, _d) = small_config("src,dst,bytes,start\n0,1,1MB,0ns\n0,2,1MB,400us\n");
    let fct = finishes(&c, &p);
    let lat = 500_000;
    assert_eq!(fct[0], Some(1_200_000_000 + lat));
    assert_eq!(fct[1], Some(1_600_000_000 - 400_000_000 + lat));
}

#[test]
fn incast_shares_the_receiver_fairly() {
    // Three senders to host 7, 300 KB each: each gets 10/3 Gbps, all done at 720 us.
    let (c, p, _d) =
        small_config("src,dst,bytes,start\n0,7,300KB,0ns\n1,7,300KB,0ns\n4,7,300KB,0ns\n");
    let fct = finishes(&c, &p);
    for f in fct {
        let f = f.unwrap() - 500_000;
        assert!((f as i64 - 720_000_000).abs() <= 2, "{f}");
    }
}

#[test]
fn oversubscription_limits_inter_rack_but_not_intra_rack_traffic() {
    // Rack 0 = hosts 0..3, rack 1 = hosts 4..7; 4 x 10 Gbps NICs, rack uplink 40 Gbps.
    // 3:1 leaves 13.33 Gbps above the rack: four inter-rack 1 MB flows share it.
    let trace = "src,dst,bytes,start\n0,4,1MB,0ns\n1,5,1MB,0ns\n2,6,1MB,0ns\n3,7,1MB,0ns\n";
    let (mut c, p, _d) = small_config(trace);
    c.fabric = "esn_osub".into();
    let fct = finishes(&c, &p);
    // 4 MB over 40/3 Gbps = 2400 us.
    for f in &fct {
        let f = f.unwrap() - 500_000;
        assert!((f as i64 - 2_400_000_000).abs() <= 2, "{f}");
    }
    c.fabric = "esn".into();
    let fct = finishes(&c, &p);
    assert!(fct.iter().all(|f| f.unwrap() == 800_000_000 + 500_000));
    // Intra-rack traffic under OSUB is not limited by the uplink.
    let (mut c, p, _d) = small_config("src,dst,bytes,start\n0,1,1MB,0ns\n2,3,1MB,0ns\n");
    c.fabric = "esn_osub".into();
    assert!(finishes(&c, &p)
        .iter()
        .all(|f| f.unwrap() == 800_000_000 + 500_000));
}

#[test]
fn random_workload_conserves_bytes_and_respects_link_capacity() {
    for fabric in ["esn", "esn_osub"] {
        let mut c = Config::default();
        c.fabric = fabric.into();
        c.topology.racks = 8;
        c.topology.servers_per_rack = 4;
        c.workload.load = 0.8;
        c.workload.sizes = SizesConfig::pareto(1.2, ByteSize(50_000));
        c.stop.flows = Some(3_000);
        c.stop.drain = true;
        c.metrics.check_invariants = true;
        let r = simulate(prepare(&c, &Paths::default()).unwrap(), &mut |_| true);
        let s = &r.summary;
        assert!(
            s.invariant_violations.is_empty(),
            "{fabric}: {:?}",
            s.invariant_violations
        );
        assert_eq!(
            s.completed, 3_000,
            "{fabric}: draining completes every flow"
        );
        assert_eq!(
            s.delivered_bytes, s.offered_bytes,
            "{fabric}: bytes conserved"
        );
        for i in 0..r.flows.id.len() {
            let fct = r.flows.finish_ps[i].unwrap() - r.flows.start_ps[i];
            let alone = Rate(s.host_rate_bps).tx_time(r.flows.bytes[i]).0;
            assert!(fct + 2 >= alone, "{fabric}: flow {i} beat its line rate");
        }
    }
}

#[test]
fn same_seed_same_results_different_seed_different_results() {
    let text = "[topology]\nracks = 4\nservers_per_rack = 4\n[stop]\nflows = 2000\n[workload]\nload = 0.7\n";
    let a = run_toml(text, &Paths::default()).unwrap();
    let b = run_toml(text, &Paths::default()).unwrap();
    assert_eq!(a.flows.finish_ps, b.flows.finish_ps);
    assert_eq!(a.flows.bytes, b.flows.bytes);
    assert_eq!(
        serde_json::to_string(&a.summary.fct).unwrap(),
        serde_json::to_string(&b.summary.fct).unwrap()
    );
    let c = run_toml(&format!("seed = 2\n{text}"), &Paths::default()).unwrap();
    assert_ne!(a.flows.bytes, c.flows.bytes);
}

#[test]
fn run_without_drain_ends_at_the_last_arrival() {
    let text = "[topology]\nracks = 4\nservers_per_rack = 4\n[stop]\nflows = 500\n";
    let r = run_toml(text, &Paths::default()).unwrap();
    let last = *r.flows.start_ps.last().unwrap();
    assert_eq!((r.summary.sim_time_us * 1e6).round() as u64, last);
    assert!(
        r.summary.unfinished > 0,
        "heavy-tailed flows cannot all finish at once"
    );
    assert!(r.summary.goodput > 0.0 && r.summary.goodput <= r.summary.offered_load + 1e-9);
}

#[test]
fn rate_update_interval_delays_the_start_to_the_next_update() {
    // Flow starts at 0.3 us; rates are updated every 1 us, so it starts at 1 us.
    let (mut c, p, _d) = small_config("src,dst,bytes,start\n0,5,1MB,300ns\n");
    c.edit(|p: &mut EsnParams| p.rate_update_interval = SimTime::us(1));
    let fct = finishes(&c, &p);
    assert_eq!(fct, vec![Some(700_000 + 800_000_000 + 500_000)]);
}

#[test]
fn rate_update_interval_approaches_the_exact_model() {
    let run = |interval: u64| {
        let mut c = Config::default();
        c.fabric = "esn_osub".into();
        c.topology.racks = 8;
        c.topology.servers_per_rack = 8;
        c.workload.load = 0.9;
        c.workload.sizes = SizesConfig::pareto(1.5, ByteSize(30_000));
        c.stop.flows = Some(4_000);
        c.stop.drain = true;
        c.edit(|p: &mut EsnOsubParams| p.rate_update_interval = SimTime(interval));
        let r = simulate(prepare(&c, &Paths::default()).unwrap(), &mut |_| true);
        assert!(r.summary.invariant_violations.is_empty());
        assert_eq!(r.summary.delivered_bytes, r.summary.offered_bytes);
        (
            r.summary.fct["all"].mean_us,
            r.summary.fabric_stats["rate_solves"],
        )
    };
    let (exact, solves_exact) = run(0);
    let (fine, solves_fine) = run(100_000); // 100 ns
    let (coarse, _) = run(5_000_000); // 5 us
    assert!(solves_fine < solves_exact);
    // Each flow waits < 1 interval to start, and departures leave capacity idle < 1 interval.
    assert!(
        (fine - exact).abs() < 0.05 * exact,
        "exact {exact} vs 100ns {fine}"
    );
    assert!(
        coarse > exact,
        "a slow control loop costs FCT: exact {exact} vs 5us {coarse}"
    );
}

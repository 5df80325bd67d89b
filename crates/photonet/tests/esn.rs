#![allow(clippy::field_reassign_with_default)] // tests tweak a default config key by key
//! End-to-end checks of the ideal electrical baselines against hand-worked cases.

use photonet::config::{Config, SizesConfig};
use photonet::fabric::esn::{EsnOsubParams, EsnParams, OsubTier};
use photonet::run::{prepare, run_toml, simulate, Paths};
use photonet::units::{ByteSize, Rate, SimTime};

fn small_config(trace: &str) -> (Config, Paths, tempdir::Dir) {
    let (mut c, paths, dir) = trace_config(trace);
    c.topology.racks = 2;
    c.topology.servers_per_rack = 4;
    c.topology.uplinks = 4;
    c.topology.uplink_rate = Rate::gbps(10); // 40 Gbps per rack, 10 Gbps per server
    c.edit(|p: &mut EsnParams| p.base_latency = SimTime::ns(500));
    c.edit(|p: &mut EsnOsubParams| p.base_latency = SimTime::ns(500));
    (c, paths, dir)
}

use crate::common;
use common::{loaded, run_clean, tempdir, trace_config};

fn finishes(c: &Config, p: &Paths) -> Vec<Option<u64>> {
    let r = run_clean(c, p);
    (0..r.flows.len())
        .map(|i| r.flows.finish(i).map(|f| f - r.flows.start_ps[i]))
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
    c.edit(|o: &mut EsnOsubParams| o.tier = OsubTier::Rack);
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
    c.edit(|o: &mut EsnOsubParams| o.tier = OsubTier::Rack);
    assert!(finishes(&c, &p)
        .iter()
        .all(|f| f.unwrap() == 800_000_000 + 500_000));
}

#[test]
fn random_workload_conserves_bytes_and_respects_link_capacity() {
    for fabric in ["esn", "esn_osub"] {
        let mut c = loaded(
            fabric,
            0.8,
            SizesConfig::pareto(1.2, ByteSize(50_000)),
            3_000,
        );
        c.topology.racks = 8;
        c.topology.servers_per_rack = 4;
        c.metrics.check_invariants = true;
        let r = run_clean(&c, &Paths::default());
        let s = &r.summary;
        assert_eq!(
            s.completed, 3_000,
            "{fabric}: draining completes every flow"
        );
        assert_eq!(
            s.delivered_bytes, s.offered_bytes,
            "{fabric}: bytes conserved"
        );
        for i in 0..r.flows.len() {
            let fct = r.flows.finish(i).unwrap() - r.flows.start_ps[i];
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
        let mut c = loaded(
            "esn_osub",
            0.9,
            SizesConfig::pareto(1.5, ByteSize(30_000)),
            4_000,
        );
        c.topology.racks = 8;
        c.topology.servers_per_rack = 8;
        c.edit(|p: &mut EsnOsubParams| p.rate_update_interval = SimTime(interval));
        let r = run_clean(&c, &Paths::default());
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

/// `racks` racks of 2 servers with 10 Gbps NICs and 2 x 10 Gbps uplinks per
/// rack (non-blocking below the oversubscribed tier), ESN-OSUB 3:1 at `tier`.
fn pod_config(
    trace: &str,
    racks: u32,
    tier: OsubTier,
    pod_racks: u32,
) -> (Config, Paths, tempdir::Dir) {
    let (mut c, p, d) = small_config(trace);
    c.fabric = "esn_osub".into();
    c.topology.racks = racks;
    c.topology.servers_per_rack = 2;
    c.topology.uplinks = 2;
    c.topology.uplink_rate = Rate::gbps(10);
    c.edit(|o: &mut EsnOsubParams| {
        o.tier = tier;
        o.pod_racks = pod_racks;
    });
    (c, p, d)
}

fn assert_fcts_us(fct: &[Option<u64>], want_us: &[f64]) {
    for (f, w) in fct.iter().zip(want_us) {
        let f = f.unwrap() - 500_000;
        let w = (w * 1e6).round() as i64;
        assert!((f as i64 - w).abs() <= 2, "{f} ps vs {w} ps ({fct:?})");
    }
}

#[test]
fn aggregation_tier_closed_form_inter_pod_capacity() {
    // 4 racks in pods of 2: pod 0 = hosts 0..3, pod 1 = hosts 4..7. The core
    // links of a pod carry 2 racks x 20 Gbps / 3 = 13.33 Gbps. Four 1 MB flows
    // from pod 0 to pod 1 share it: 4 x 8 Mb / 13.33 Gbps = 2400 us each.
    let trace = "src,dst,bytes,start\n0,4,1MB,0ns\n1,5,1MB,0ns\n2,6,1MB,0ns\n3,7,1MB,0ns\n";
    let (c, p, _d) = pod_config(trace, 4, OsubTier::Aggregation, 2);
    assert_fcts_us(&finishes(&c, &p), &[2400.0; 4]);
    // The same flows under ESN take 8 Mb / 10 Gbps = 800 us.
    let (mut c, p, _d) = pod_config(trace, 4, OsubTier::Aggregation, 2);
    c.fabric = "esn".into();
    assert_fcts_us(&finishes(&c, &p), &[800.0; 4]);
}

#[test]
fn aggregation_tier_runs_intra_pod_traffic_at_full_rate_where_the_rack_tier_does_not() {
    // Rack 0 (hosts 0, 1) to rack 1 (hosts 2, 3): one pod at the aggregation
    // tier, so both flows run at R = 10 Gbps (800 us). At the rack tier they
    // share rack 0's 20/3 Gbps: 2 x 8 Mb / 6.67 Gbps = 2400 us.
    let trace = "src,dst,bytes,start\n0,2,1MB,0ns\n1,3,1MB,0ns\n";
    let (c, p, _d) = pod_config(trace, 4, OsubTier::Aggregation, 2);
    assert_fcts_us(&finishes(&c, &p), &[800.0, 800.0]);
    let (c, p, _d) = pod_config(trace, 4, OsubTier::Rack, 2);
    assert_fcts_us(&finishes(&c, &p), &[2400.0, 2400.0]);
}

#[test]
fn a_smaller_last_pod_has_proportionally_smaller_core_links() {
    // 3 racks in pods of 2: the last pod is rack 2 alone (hosts 4, 5), with
    // 1 x 20 / 3 = 6.67 Gbps to the core. Its two 1 MB flows out share that:
    // 2400 us; a flow out of the full pod 0 alone gets min(R, 13.33) = 10 Gbps.
    let trace = "src,dst,bytes,start\n4,0,1MB,0ns\n5,1,1MB,0ns\n2,3,1MB,0ns\n";
    let (c, p, _d) = pod_config(trace, 3, OsubTier::Aggregation, 2);
    let fct = finishes(&c, &p);
    assert_fcts_us(&fct[..2], &[2400.0, 2400.0]);
    // 2 -> 3 is intra-pod (racks 1 -> 1): 800 us at R.
    assert_fcts_us(&fct[2..], &[800.0]);
}

#[test]
fn pods_of_one_rack_are_exactly_the_rack_tier() {
    let mut c = Config::default();
    c.fabric = "esn_osub".into();
    c.topology.racks = 8;
    c.topology.servers_per_rack = 4;
    c.topology.uplinks = 2;
    c.workload.load = 0.8;
    c.stop.flows = Some(3000);
    let run = |tier, pod_racks| {
        let mut c = c.clone();
        c.edit(|o: &mut EsnOsubParams| {
            o.tier = tier;
            o.pod_racks = pod_racks;
        });
        simulate(prepare(&c, &Paths::default()).unwrap(), &mut |_| true).unwrap()
    };
    let rack = run(OsubTier::Rack, 0);
    let pods = run(OsubTier::Aggregation, 1);
    assert_eq!(rack.flows.finish_ps, pods.flows.finish_ps);
    assert_eq!(rack.summary.goodput, pods.summary.goodput);
    // Bigger pods relieve the core: more traffic at full rate.
    let big = run(OsubTier::Aggregation, 4);
    assert!(big.summary.goodput > rack.summary.goodput);
}

#[test]
fn pod_size_defaults_to_eight_pods_and_one_pod_is_refused() {
    let p = EsnOsubParams::default();
    assert_eq!(p.tier, OsubTier::Aggregation);
    assert_eq!(p.group_racks(128), 16);
    assert_eq!(p.group_racks(32), 4);
    assert_eq!(p.group_racks(4), 1);
    let (c, paths, _d) = pod_config(
        "src,dst,bytes,start\n0,2,1MB,0ns\n",
        4,
        OsubTier::Aggregation,
        4,
    );
    let err = prepare(&c, &paths)
        .err()
        .expect("one pod must be refused")
        .to_string();
    assert!(err.contains("pod_racks"), "{err}");
}

/// An oversubscription that leaves a rack almost nothing (1e15:1 on 40 Gb/s
/// racks: 4e-5 b/s) used to complete more flows than ESN, with FCTs below
/// the base latency; it is refused naming the key, and 1 kb/s still runs.
#[test]
fn an_oversubscription_that_rounds_a_link_to_nothing_is_refused() {
    let (mut c, p, _dir) = small_config("src,dst,bytes,start\n0,4,1000,0us\n");
    c.fabric = "esn_osub".into();
    c.edit(|o: &mut EsnOsubParams| o.oversubscription = 1e15);
    let e = prepare(&c, &p).err().expect("refused").to_string();
    assert!(
        e.contains("esn_osub.oversubscription") && e.contains("b/s"),
        "{e}"
    );
    c.edit(|o: &mut EsnOsubParams| o.oversubscription = 4e7); // 40 Gb/s / 4e7 = 1 kb/s
    assert!(prepare(&c, &p).is_ok());
}

//! Mordia against hand-worked cases, the paper's Fig. 4 and Table 2, and
//! properties (no traffic in a night, truncation, conservation).

use super::params::VARIANTS;
use super::*;
use crate::fabric::registry::FabricModule;
use crate::topology::Topology;
use crate::units::ByteSize;

fn topo(racks: u32, servers_per_rack: u32, gbps: u64, server_rate: Option<Rate>) -> Topology {
    Topology {
        racks,
        servers_per_rack,
        uplinks: 1,
        uplink_rate: Rate::gbps(gbps),
        server_rate,
    }
}

fn mordia(p: &MordiaParams, tms: bool, topo: &Topology) -> (Mordia, Recorder) {
    (
        Mordia::new(p, tms, &BuildContext::test(topo)),
        Recorder::new(None),
    )
}

/// Hands `flows` to the fabric at `now`, in order.
fn start(m: &mut Mordia, rec: &mut Recorder, flows: &[Flow], now: SimTime) {
    for f in flows {
        rec.register(f);
        m.add_flow(now, f, rec);
    }
}

/// Runs every event until none is left, checking invariants after each.
fn run_dry(m: &mut Mordia, rec: &mut Recorder) {
    while let Some(t) = m.next_event() {
        m.advance(t, rec);
        m.check_invariants().unwrap();
    }
}

/// Fig. 4: 8 ToRs, uniform all-to-all (each ToR sends to every ToR,
/// itself included through the loopback day, at 1/8 of the link), uniform
/// slots without nights. VOQ occupancies of ToR 0 at each slot boundary,
/// in units of what one VOQ receives per slot, from the simulator.
#[test]
fn figure_4_voq_occupancy_from_cold_start() {
    let topo = topo(8, 8, 80, None);
    let p = MordiaParams {
        night: SimTime::ZERO,
        latency: SimTime::ZERO,
        day: SimTime::us(100),
        loopback: true,
        ..MordiaParams::default()
    };
    let (mut m, mut rec) = mordia(&p, false, &topo);
    // Host k of rack i sends to rack k, at 10 Gbps, for longer than the test.
    let mut id = 0;
    for i in 0..8u32 {
        for k in 0..8u32 {
            let f = Flow::new(id, i * 8 + k, k * 8 + (i + 1) % 8, 1 << 30, SimTime::ZERO);
            start(&mut m, &mut rec, &[f], SimTime::ZERO);
            id += 1;
        }
    }
    let unit = Rate::gbps(10).bytes_in(SimTime::us(100)) as f64; // 125,000 B
    let mut totals = vec![0u64];
    let mut per_voq = vec![vec![0u64; 8]];
    while totals.len() < 17 {
        let t = m.next_event().unwrap();
        m.advance(t, &mut rec);
        m.check_invariants().unwrap();
        let d = m.demand_matrix(t);
        let row: Vec<u64> = (0..8).map(|j| (d[j] / unit).round() as u64).collect();
        totals.push(row.iter().sum());
        per_voq.push(row);
    }
    assert_eq!(rec.violation_count(), 0);
    // The paper's Total row.
    assert_eq!(
        totals,
        vec![0, 7, 13, 18, 22, 25, 27, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28]
    );
    // Paper rows: VOQ k (destination k - 1) is drained during slot k - 1.
    for (t, row) in per_voq.iter().enumerate() {
        for (d, &v) in row.iter().enumerate() {
            let want = if t <= d { t } else { (t - d - 1) % 8 };
            assert_eq!(v as usize, want, "VOQ {} at slot {t}", d + 1);
        }
    }
    assert_eq!(m.stats.sent_in_night, 0);
}

/// 2 racks, 1 server each, 8 Gbps: a 1,000 B packet takes 1 µs. Days of
/// 2.5 µs: two packets fit, the third would straddle the night (1 µs; the
/// week is one day of 3.5 µs). One flow of 3,000 B from t = 0, run dry.
fn straddle_case(straddle: Straddle) -> (Mordia, Recorder) {
    let topo = topo(2, 1, 8, None);
    let p = MordiaParams {
        night: SimTime::us(1),
        latency: SimTime::ZERO,
        day: SimTime::ns(2_500),
        packet: ByteSize(1000),
        straddle,
        ..MordiaParams::default()
    };
    let (mut m, mut rec) = mordia(&p, false, &topo);
    let f = Flow::new(0, 0, 1, 3000, SimTime::ZERO);
    start(&mut m, &mut rec, &[f], SimTime::ZERO);
    run_dry(&mut m, &mut rec);
    (m, rec)
}

#[test]
fn a_packet_that_would_straddle_the_night_is_held() {
    let (m, rec) = straddle_case(Straddle::Hold);
    // Host NIC at 8 Gbps = link, and the ToR stores a whole packet before
    // sending it: packet k (k = 1, 2, 3) is at the ToR at k µs. Day 0
    // sends packet 1 (1-2 µs); packet 2 (2-3 µs) would straddle the night
    // at 2.5 µs and is held. Day 1 starts at 3.5 µs: packet 2 goes 3.5-4.5,
    // packet 3 4.5-5.5 µs.
    assert_eq!(rec.finish(0), Some(SimTime::ns(5_500)));
    assert_eq!(m.stats.held, 1);
}

#[test]
fn a_straddling_packet_can_be_lost_instead() {
    // The held-packet case above with straddle = "lose": packet 2 starts
    // at 2 µs and is cut by the night at 2.5 µs (500 B on the wire,
    // lost); it is sent again on day 1, so the flow still ends at 5.5 µs.
    let (m, rec) = straddle_case(Straddle::Lose);
    assert_eq!(rec.finish(0), Some(SimTime::ns(5_500)));
    assert_eq!(
        (m.stats.held, m.stats.lost, m.stats.lost_bytes),
        (0, 1, 500)
    );
    assert_eq!(rec.delivered(0), 3000);
}

/// Bytes 0 → 1 delivered in each of the first `weeks` TMS weeks, with
/// two long flows 0 → 1 and 2 → 3 (one per host) from t = 0.
fn per_week_0_to_1(p: &MordiaParams, weeks: u64) -> Vec<u64> {
    let topo = topo(4, 1, 10, None);
    let (mut m, mut rec) = mordia(p, true, &topo);
    let flows = [
        Flow::new(0, 0, 1, 1 << 30, SimTime::ZERO),
        Flow::new(1, 2, 3, 1 << 30, SimTime::ZERO),
    ];
    start(&mut m, &mut rec, &flows, SimTime::ZERO);
    let week = m.week_len;
    let mut per_week = Vec::new();
    let mut last = 0;
    for w in 1..=weeks {
        while let Some(t) = m.next_event().filter(|&t| t <= week * w) {
            m.advance(t, &mut rec);
        }
        m.check_invariants().unwrap();
        per_week.push(rec.delivered(0) - last);
        last = rec.delivered(0);
    }
    assert_eq!(rec.violation_count(), 0);
    per_week
}

#[test]
fn measured_demand_lags_the_oracle_by_the_control_delay() {
    // Only 0 → 1 and 2 → 3 carry traffic. At t = 0 nothing is at the
    // ToRs yet, so week 0's demand is empty for everyone: Sinkhorn of
    // the uniform fill, every pair at most a third of the week. From
    // week 1 the oracle sees the two backlogged VOQs and gives 0 → 1 one
    // day of nearly the whole week (the other BvN days fall below
    // min_day). Measured demand with a control delay of k weeks uses the
    // VOQs of k weeks earlier (nothing before week k): the skewed week
    // comes k weeks later, at week k + 1.
    let p = MordiaParams::default();
    let week = p.week_len(4);
    let full = Rate::gbps(10).bytes_in(week) as f64;
    let third = full / 3.0 + 1500.0;
    let o = per_week_0_to_1(&p, 6);
    assert!((o[0] as f64) <= third, "oracle {o:?}");
    for w in 1..6 {
        assert!(o[w] as f64 > 0.9 * full, "oracle week {w}: {o:?}");
    }
    for k in [1u32, 2, 4] {
        let m = per_week_0_to_1(
            &MordiaParams {
                demand: Demand::Measured,
                control_delay: k,
                ..MordiaParams::default()
            },
            6,
        );
        for w in 0..6 {
            if w <= k as usize {
                assert!((m[w] as f64) <= third, "k = {k}, week {w}: {m:?}");
            } else {
                assert!(m[w] as f64 > 0.9 * full, "k = {k}, week {w}: {m:?}");
            }
        }
    }
}

/// Finish time of a small flow 0 → 2 that arrives (at 1.5 weeks) while
/// a large backlog 0 → 1 dominates the TMS demand, and the bytes the
/// packet switch carried.
fn small_flow_beside_a_hotspot(packet_rate: Rate) -> (Option<SimTime>, u64) {
    // Hosts at 40 Gbps feed 10 Gbps OCS ports: the 0 → 1 VOQ grows by
    // 30 Gbps, so 10 kB to rack 2 is far below a min_day's share and its
    // BvN day is dropped: only a packet switch carries it.
    let topo = topo(4, 1, 10, Some(Rate::gbps(40)));
    let p = MordiaParams {
        host_nic: HostNic::PerFlow,
        packet_rate,
        ..MordiaParams::default()
    };
    let (mut m, mut rec) = mordia(&p, true, &topo);
    let week = m.week_len;
    let flows = [
        Flow::new(0, 0, 1, 1 << 30, SimTime::ZERO),
        Flow::new(1, 0, 2, 10_000, SimTime(week.0 * 3 / 2)),
    ];
    crate::fabric::drive(&mut m, &flows, &mut rec, week * 6, |_| true);
    assert_eq!(rec.violation_count(), 0);
    (rec.finish(1), m.stats.packet_bytes)
}

#[test]
fn the_packet_switch_carries_what_the_truncated_week_leaves_out() {
    let week = MordiaParams::default().week_len(4);
    // Without a packet switch the small flow waits behind the hotspot
    // for the whole run (6 weeks).
    let (none, pb) = small_flow_beside_a_hotspot(Rate(0));
    assert_eq!((none, pb), (None, 0));
    // With a 1 Gbps packet switch: it arrives at 1.5 weeks, in a week
    // whose days (scheduled at 1 week, before it existed, with 0 → 1
    // dominating) leave 0 → 2 off the circuits, so the packet switch
    // takes it as soon as it is at the ToR: its 10 kB need 80 µs at
    // 1 Gbps, within the same week.
    let (done, pb) = small_flow_beside_a_hotspot(Rate::gbps(1));
    assert_eq!(pb, 10_000);
    let t = done.expect("carried by the packet switch");
    let arrival = SimTime(week.0 * 3 / 2);
    assert!(
        t >= arrival + SimTime::us(80) && t <= week * 2 + SimTime::ns(500),
        "{t} vs week {week}"
    );
}

#[test]
fn a_left_out_pair_crosses_the_net_star_store_and_forward() {
    // The case above, worked by hand on the `net/` star. The flow
    // (10,000 B, 0 → 2) arrives at 1.5 weeks = 477 µs and is at its ToR
    // 10,000 B / 40 Gbps = 2 µs later: the packet switch takes it at
    // 479 µs, alone on rack 0's uplink (the packet switch carries
    // nothing else in the run). Packets of 1,500 B at 1 Gbps: rack 0's
    // NIC sends 6 × 1,500 + 1,000 B back to back (80 µs); the switch
    // port forwards each packet once it has arrived: the sixth arrives
    // at 479 + 72 = 551 µs and leaves at 563 µs, the short seventh
    // (at the switch at 559 µs) waits for it and takes 8 µs, and it
    // reaches rack 2 `latency` (0.5 µs) later: 571.5 µs.
    assert_eq!(MordiaParams::default().week_len(4), SimTime::us(318));
    let (done, pb) = small_flow_beside_a_hotspot(Rate::gbps(1));
    assert_eq!(pb, 10_000);
    assert_eq!(done, Some(SimTime::ns(571_500)));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
    /// Table 2's truncation: with `max_days = n` every week has at most
    /// n days, the stable time of a week of k days is week − k·night
    /// (D of Table 2), and every byte delivered went over a circuit or
    /// over the packet switch, never both and never neither. Long flows
    /// of random sizes per pair keep every VOQ backlogged, so the weeks
    /// run back to back on the 1 ms grid.
    #[test]
    fn max_days_truncates_each_week_and_the_packet_switch_takes_the_rest(
        n in 1u32..6,
        rates in proptest::collection::vec(1u64..40, 12),
    ) {
        let topo = topo(4, 1, 10, Some(Rate::gbps(2000)));
        let p = MordiaParams {
            night: SimTime::us(10),
            week: SimTime::us(1000),
            min_day: SimTime::us(2),
            max_days: n,
            host_nic: HostNic::PerFlow,
            packet_rate: Rate::gbps(10),
            ..MordiaParams::default()
        };
        let (mut m, mut rec) = mordia(&p, true, &topo);
        m.log = Some((Vec::new(), Vec::new()));
        let mut fl = Vec::new();
        for i in 0..4u32 {
            for j in 0..4u32 {
                if i != j {
                    let id = fl.len() as u32;
                    fl.push(Flow::new(id, i, j, rates[id as usize] * 10_000_000, SimTime::ZERO));
                }
            }
        }
        let weeks = 6u64;
        crate::fabric::drive(&mut m, &fl, &mut rec, SimTime::us(1000 * weeks), |_| true);
        proptest::prop_assert_eq!(rec.violation_count(), 0);
        let delivered: u64 = fl.iter().map(|f| rec.delivered(f.id)).sum();
        proptest::prop_assert_eq!(m.stats.circuit_bytes + m.stats.packet_bytes, delivered);
        proptest::prop_assert!(m.stats.packet_bytes > 0 || n >= 3);
        let (days, _) = m.log.take().unwrap();
        for w in 0..weeks {
            let (a, b) = (SimTime::us(1000 * w), SimTime::us(1000 * (w + 1)));
            let wd: Vec<_> = days.iter().filter(|d| d.0 >= a && d.0 < b).collect();
            proptest::prop_assert!(!wd.is_empty() && wd.len() as u32 <= n, "week {w}: {} days > {n}", wd.len());
            proptest::prop_assert!(wd.iter().all(|d| d.1 + p.night <= b), "week {w} runs past its end");
            let stable: u64 = wd.iter().map(|d| (d.1 - d.0).0).sum();
            proptest::prop_assert_eq!(stable, (b - a).0 - wd.len() as u64 * p.night.0);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// No OCS port carries traffic during a night: every packet lies in
    /// the stable part of a day that connects its pair and overlaps no
    /// night that follows a day (both variants, random flows).
    #[test]
    fn no_ocs_port_carries_traffic_during_a_night(
        tms in proptest::bool::ANY,
        flows in proptest::collection::vec((0u32..4, 1u32..4, 1u64..400_000, 0u64..2_000), 1..20),
    ) {
        let topo = topo(4, 1, 10, None);
        let p = MordiaParams { day: SimTime::us(30), min_day: SimTime::us(20), ..MordiaParams::default() };
        let (mut m, mut rec) = mordia(&p, tms, &topo);
        m.log = Some((Vec::new(), Vec::new()));
        let mut fl: Vec<Flow> = flows.iter().map(|&(s, o, b, st)| Flow::new(0, s, (s + o) % 4, b, SimTime::us(st))).collect();
        fl.sort_by_key(|f| f.start);
        for (k, f) in fl.iter_mut().enumerate() { f.id = k as u32; }
        crate::fabric::drive(&mut m, &fl, &mut rec, SimTime::MAX, |_| false);
        for f in &fl { proptest::prop_assert!(rec.finish(f.id).is_some()); }
        let (days, sends) = m.log.take().unwrap();
        // A full night separates every day from the one before it, idle
        // spells included (the switch reconfigures in the night).
        for w in days.windows(2) {
            proptest::prop_assert!(w[1].0 >= w[0].1 + p.night, "day at {} starts less than a night after the day ending {}", w[1].0, w[0].1);
        }
        // The night after every day that ran: no packet may overlap it.
        for &(i, j, a, b) in &sends {
            for d in &days {
                let (n0, n1) = (d.1, d.1 + p.night);
                proptest::prop_assert!(b <= n0 || a >= n1, "packet {i}->{j} in [{a}, {b}] overlaps the night [{n0}, {n1}]");
            }
        }
        for &(i, j, a, b) in &sends {
            let ok = days.iter().any(|d| d.2[i] as usize == j && d.0 <= a && b <= d.1);
            proptest::prop_assert!(ok, "packet {i}->{j} in [{a}, {b}] outside every day");
        }
    }
}

#[test]
fn nic_delay_and_bad_parameters() {
    let topo = topo(4, 1, 10, None);
    let c = BuildContext::test(&topo);
    let p = MordiaParams {
        nic_delay: SimTime::us(100),
        ..MordiaParams::default()
    };
    let e = p.check(Some(&VARIANTS[1]), &c).unwrap_err();
    assert_eq!(e.key, "mordia.day");
    let p = MordiaParams {
        latency: SimTime::us(20),
        ..MordiaParams::default()
    };
    assert_eq!(
        MordiaModule::plan(&p, &VARIANTS[0], &c).unwrap_err().key,
        "mordia.latency"
    );
    let p = MordiaParams {
        week: SimTime::us(25),
        ..MordiaParams::default()
    };
    assert_eq!(
        p.check(Some(&VARIANTS[0]), &c).unwrap_err().key,
        "mordia.week"
    );
    assert!(MordiaModule::plan_and_build(p, &VARIANTS[0], &c).is_err());
}

#[test]
fn tms_serves_a_skewed_demand_and_never_uses_a_night() {
    // 4 racks; rack 0 sends a lot to rack 1 and a little to 2 and 3.
    let topo = topo(4, 1, 10, None);
    let (mut m, mut rec) = mordia(&MordiaParams::default(), true, &topo);
    let flows = [
        Flow::new(0, 0, 1, 2_000_000, SimTime::ZERO),
        Flow::new(1, 0, 2, 100_000, SimTime::ZERO),
        Flow::new(2, 3, 2, 500_000, SimTime::ZERO),
    ];
    start(&mut m, &mut rec, &flows, SimTime::ZERO);
    run_dry(&mut m, &mut rec);
    for i in 0..3 {
        assert!(rec.finish(i).is_some(), "flow {i}");
    }
    assert_eq!(m.stats.sent_in_night, 0);
    assert!(m.stats.weeks_scheduled >= 1);
}

/// Fig. 7: variable-length days (80/160/240 µs, no NIC delay). Rack 0 sends
/// to racks 1, 2, 3 without pause; by the end of each whole week each pair
/// has crossed ⌊day / 1.2 µs⌋ packets of 1,500 B (held, not cut, at the
/// night), so the bytes are in proportion to the days up to the packet
/// left over at each day's end. Days are found in the week when an arrival
/// wakes the switch mid-week.
#[test]
fn variable_length_days_share_the_link_by_day_length() {
    let topo = topo(4, 1, 10, None);
    let c = BuildContext::test(&topo);
    let days = vec![SimTime::us(80), SimTime::us(160), SimTime::us(240)];
    let p = MordiaParams {
        days: days.clone(),
        latency: SimTime::ZERO,
        host_nic: HostNic::PerFlow,
        ..MordiaParams::default()
    };
    let bad = MordiaParams {
        days: vec![SimTime::us(80)],
        ..MordiaParams::default()
    };
    assert_eq!(
        bad.check(Some(&VARIANTS[1]), &c).unwrap_err().key,
        "mordia.days"
    );
    p.check(Some(&VARIANTS[1]), &c).unwrap();
    let (mut m, mut rec) = mordia(&p, false, &topo);
    // Arrive in the middle of the second day of the first week.
    let at = SimTime::us(100);
    let flows: Vec<Flow> = (1..4u32)
        .map(|j| Flow::new(j - 1, 0, j, 1 << 30, at))
        .collect();
    start(&mut m, &mut rec, &flows, at);
    let week = SimTime::us(80 + 160 + 240) + SimTime::ns(3 * 11_500);
    let end = SimTime(week.0 * 5);
    while let Some(t) = m.next_event() {
        if t > end {
            break;
        }
        m.advance(t, &mut rec);
        m.check_invariants().unwrap();
    }
    assert_eq!(rec.violation_count(), 0);
    let sent: Vec<u64> = (0..3).map(|i| m.flows[i].sent).collect();
    // Weeks 2-5 are whole; week 1 served the 240 µs day and the rest of the 160 µs one.
    let per_day = |d: SimTime| d.0 / Rate::gbps(10).tx_time(1500).0 * 1500;
    assert_eq!(sent[0], 4 * per_day(days[0]), "{sent:?}");
    assert_eq!(sent[2], 5 * per_day(days[2]), "{sent:?}");
    assert!(
        sent[1] > 4 * per_day(days[1]) && sent[1] < 5 * per_day(days[1]),
        "{sent:?}"
    );
}

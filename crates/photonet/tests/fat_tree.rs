//! End-to-end tests of the packet-level fat-tree and leaf-spine (`net/` +
//! `fabric/fat_tree/`): hand-worked store-and-forward timings, DCTCP
//! fairness and queue control, buffer bounds, lossless PFC incast,
//! exactly-once delivery under random loss, determinism, and the
//! cross-check against ESN (Ideal), the max-min fluid model.

use photonet::config::{Config, PatternKind, SizesConfig};
use photonet::fabric::fat_tree::{
    lone_flow_bounds, Clos, FatTreeParams, FlowControlKind, PacketFabric, PriorityKind,
    TransportKind, FAT_TREE_VARIANT, LEAF_SPINE_VARIANT,
};
use photonet::fabric::registry::BuildContext;
use photonet::fabric::Fabric;
use photonet::flow::Flow;
use photonet::net::{NicQueues, Routing};
use photonet::recorder::Recorder;
use photonet::run::{prepare, simulate, Paths};
use photonet::topology::Topology;
use photonet::units::{ByteSize, Rate, SimTime};
use proptest::prelude::*;

use crate::common;
use common::{all_delivered, drain_with, flow, numbered};

fn topo100() -> Topology {
    Topology {
        uplink_rate: Rate::gbps(100),
        ..Topology::default()
    }
}

/// A fabric with explicit `k` and 100 Gbps links (or from `topo` if k = 0).
fn build(p: &FatTreeParams, leaf: bool, topo: &Topology, seed: u64) -> PacketFabric {
    let ctx = BuildContext {
        topology: topo,
        seed,
        check_invariants: true,
    };
    let clos = Clos::layout(p, leaf, &ctx).unwrap();
    let v = if leaf {
        LEAF_SPINE_VARIANT
    } else {
        FAT_TREE_VARIANT
    };
    PacketFabric::new(p, &v, clos, seed)
}

/// Runs `flows` (sorted by start) to completion, checking invariants
/// (every step in small runs: full checks are O(ports + flows)); `sample(fabric,
/// rec, now)` is called after each step.
fn drain(
    net: &mut PacketFabric,
    flows: &[Flow],
    sample: impl FnMut(&PacketFabric, &Recorder, SimTime),
) -> Recorder {
    let small = flows.len() < 8;
    drain_with(net, flows, |s| small || s.is_multiple_of(16), sample)
}

/// A 16 x 1 MB incast on a k-ary fat-tree (seed 9) under lossless flow
/// control: every flow completes, nothing is dropped, and back-pressure
/// keeps the 100 Gbps downlink busy (>= 90 % of the 1.28 ms the 16 MB
/// take). Returns the fabric and the last FCT.
fn lossless_incast(p: &FatTreeParams) -> (PacketFabric, SimTime) {
    let mut net = build(p, false, &topo100(), 9);
    let flows = incast(16, 1_000_000);
    let rec = drain(&mut net, &flows, |_, _, _| {});
    let s = net.stats();
    let what = (p.transport, p.flow_control);
    assert_eq!(rec.completed(), 16, "{what:?}");
    assert_eq!(s["drops"], 0.0, "{what:?}: {s:?}");
    let last = flows.iter().map(|f| fct(&rec, f)).max().unwrap();
    assert!(last.0 as f64 <= 1.28e9 / 0.9, "{what:?}: {last}");
    (net, last)
}

fn fct(rec: &Recorder, f: &Flow) -> SimTime {
    rec.finish(f.id).expect("flow completed") - f.start
}

#[test]
fn one_flow_fct_equals_the_store_and_forward_closed_form() {
    // k = 4 fat-tree, 100 Gbps (80 ps/B), 1 us propagation, 4,096 B payload
    // + 64 B header: a full packet is 4,160 B = 332.8 ns on a link.
    // Across pods a packet crosses 6 links; the flow's wire bytes leave the
    // NIC back to back, and the last packet trails the first by the rest:
    //   FCT = wire/R + (hops - 1) x 332.8 ns + hops x 1 us.
    // 10 packets (40,960 B; wire 41,600 B = 3.328 us), within the initial
    // window of 10: 3.328 + 5 x 0.3328 + 6 = 10.992 us.
    // 10,000 B (4,096 + 4,096 + 1,808; wire 10,192 B = 0.81536 us):
    //   0.81536 + 1.664 + 6 = 8.47936 us.
    // Same ToR (hosts 0 -> 1, 2 links): 3.328 + 0.3328 + 2 = 5.6608 us.
    // Same pod (0 -> 2, 4 links): 3.328 + 3 x 0.3328 + 4 = 8.3264 us.
    let p = FatTreeParams {
        k: 4,
        ..FatTreeParams::default()
    };
    let cases = [
        (0, 15, 40_960, 10_992_000),
        (0, 15, 10_000, 8_479_360),
        (0, 1, 40_960, 5_660_800),
        (0, 2, 40_960, 8_326_400),
    ];
    for (src, dst, bytes, want) in cases {
        let mut net = build(&p, false, &topo100(), 1);
        let f = flow(0, src, dst, bytes, 0);
        let rec = drain(&mut net, &[f], |_, _, _| {});
        assert_eq!(fct(&rec, &f), SimTime(want), "{src}->{dst} {bytes} B");
        // The slowdown statistics use the same closed form as the ideal.
        assert_eq!(net.stats()["slowdown_mean.all"], 1.0);
    }
    // Lossless and window-free (paced + PFC), 1 MB: 244 full packets and
    // one of 576 B; wire 1,015,680 B = 81.2544 us; + 1.664 + 6 = 88.9184 us.
    let paced = FatTreeParams {
        transport: TransportKind::Paced,
        flow_control: FlowControlKind::Pfc,
        ..p.clone()
    };
    let mut net = build(&paced, false, &topo100(), 1);
    let f = flow(0, 0, 15, 1_000_000, 0);
    let rec = drain(&mut net, &[f], |_, _, _| {});
    assert_eq!(fct(&rec, &f), SimTime(88_918_400));
    // Cut-through: each switch starts sending after the 64 B header
    // (5.12 ns) instead of the whole packet: 5 switches save 5 x (332.8 -
    // 5.12) ns on a lone 10-packet flow: 10.992 - 1.6384 = 9.3536 us.
    let ct = FatTreeParams {
        cut_through: true,
        ..p.clone()
    };
    let mut net = build(&ct, false, &topo100(), 1);
    let f = flow(0, 0, 15, 40_960, 0);
    let rec = drain(&mut net, &[f], |_, _, _| {});
    assert_eq!(fct(&rec, &f), SimTime(9_353_600));
    // The same with lossless queued ports (credits on 3 VCs, or PFC) and the
    // window-free transport: the same 9.3536 us (store-and-forward:
    // 10.992 us, as above).
    for (fc, vcs) in [(FlowControlKind::Credit, 3), (FlowControlKind::Pfc, 1)] {
        for (cut_through, want) in [(true, 9_353_600), (false, 10_992_000)] {
            let q = FatTreeParams {
                cut_through,
                flow_control: fc,
                vcs,
                transport: TransportKind::Paced,
                ecn_threshold: ByteSize(0),
                buffer: ByteSize(300_000),
                ..p.clone()
            };
            let mut net = build(&q, false, &topo100(), 1);
            let rec = drain(&mut net, &[f], |_, _, _| {});
            assert_eq!(
                fct(&rec, &f),
                SimTime(want),
                "{fc:?} cut-through {cut_through}"
            );
        }
    }
}

#[test]
fn the_first_rto_is_rto_init_before_any_rtt_sample() {
    // k = 4, 30 us propagation on every link: a lone one-packet flow across
    // pods (6 links) has a first round trip of 12 x 30 us of propagation
    // plus serialisation, 0.36 ms: longer than rto_min (200 us), shorter
    // than the 1 ms default rto_init (RFC 6298 §2.1: the RTO before the
    // first sample). With rto_init = 300 us the timer fires once, before the
    // ACK is back, and the packet is resent (spuriously: nothing was lost);
    // with the default it does not. The data arrives with the first copy
    // either way: the store-and-forward closed form, 6 links x (332.8 ns
    // serialisation of 4,160 B + 30 us).
    let base = FatTreeParams {
        k: 4,
        propagation: SimTime::us(30),
        ..FatTreeParams::default()
    };
    assert_eq!(base.rto_init, SimTime::ms(1));
    // 4,160 B wire = 332.8 ns per link, 6 links: 6 x 332.8 ns + 180 us.
    let want = SimTime(6 * 332_800 + 180_000_000);
    for (rto_init, timeouts) in [(SimTime::us(300), 1.0), (SimTime::ms(1), 0.0)] {
        let p = FatTreeParams {
            rto_init,
            ..base.clone()
        };
        let mut net = build(&p, false, &topo100(), 1);
        let f = flow(0, 0, 15, 4_096, 0);
        let rec = drain(&mut net, &[f], |_, _, _| {});
        assert_eq!(fct(&rec, &f), want, "rto_init {rto_init}");
        let s = net.stats();
        assert_eq!(s["timeouts"], timeouts, "rto_init {rto_init}");
        assert_eq!(s["spurious_timeouts"], timeouts, "rto_init {rto_init}");
        assert_eq!(s["retransmissions"], timeouts, "rto_init {rto_init}");
    }
}

#[test]
fn two_long_dctcp_flows_share_a_bottleneck_within_5_percent() {
    // Hosts 0 and 4 (different ToRs) each send 100 MB to host 8: the
    // receiver's ToR downlink is the bottleneck. After start-up and DCTCP's
    // (slow, tens of RTTs) convergence, each gets its half: the bytes each
    // delivers between 4 ms and the first completion are within 5 % of each
    // other, and together they keep the bottleneck >= 95 % busy.
    for (routing, seed) in [
        (Routing::Ecmp, 3),
        (Routing::Spray, 3),
        (Routing::Ecmp, 4),
        (Routing::Spray, 4),
        (Routing::Ecmp, 5),
    ] {
        let p = FatTreeParams {
            k: 4,
            routing,
            dupack_threshold: 10,
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), seed);
        let flows = [flow(0, 0, 8, 100_000_000, 0), flow(1, 4, 8, 100_000_000, 0)];
        let mut at_1ms: Option<[u64; 2]> = None;
        let mut at_first: Option<([u64; 2], SimTime)> = None;
        let rec = drain(&mut net, &flows, |_, rec, now| {
            if rec.flows() < 2 {
                return;
            }
            let d = [rec.delivered(0), rec.delivered(1)];
            if at_1ms.is_none() && now >= SimTime::ms(4) {
                at_1ms = Some(d);
            }
            if at_first.is_none() && rec.completed() > 0 {
                at_first = Some((d, now));
            }
        });
        let (a0, (a1, t1)) = (at_1ms.unwrap(), at_first.unwrap());
        let (x, y) = ((a1[0] - a0[0]) as f64, (a1[1] - a0[1]) as f64);
        assert!(
            x.min(y) / x.max(y) >= 0.95,
            "{routing:?}: {x} B and {y} B from 4 ms to {t1}"
        );
        let rate = (x + y) * 8.0 / ((t1 - SimTime::ms(4)).as_secs_f64() * 100e9);
        assert!(
            rate >= 0.95,
            "{routing:?}: bottleneck {:.1} % busy",
            rate * 100.0
        );
        for f in &flows {
            assert!(rec.finish(f.id).is_some());
        }
    }
}

fn incast(n: u32, bytes: u64) -> Vec<Flow> {
    // Senders 1..=n (several ToRs and pods) to host 0.
    (0..n).map(|i| flow(i, i + 1, 0, bytes, 0)).collect()
}

#[test]
fn no_queue_ever_exceeds_its_buffer() {
    // A 20-to-1 incast into 10-packet buffers without ECN: drops happen,
    // and neither the run-time check (every 16 steps) nor the per-port
    // peaks ever see more than the buffer.
    let buffer = 10 * 4160;
    let p = FatTreeParams {
        k: 6,
        buffer: ByteSize(buffer),
        ecn_threshold: ByteSize(0),
        ..FatTreeParams::default()
    };
    let mut net = build(&p, false, &topo100(), 5);
    let mut peak_seen = 0u64;
    let port = net.clos().tor_down_port(0);
    let rec = drain(&mut net, &incast(20, 400_000), |f, _, now| {
        peak_seen = peak_seen.max(f.net().queue_bytes(port, now));
    });
    assert_eq!(rec.completed(), 20);
    let s = net.stats();
    assert!(s["drops"] > 0.0, "the test must stress the buffer");
    assert!(s["peak_queue_bytes"] <= buffer as f64, "{s:?}");
    assert!(s["peak_queue_bytes"] > (buffer - 4160) as f64, "{s:?}");
    assert!(peak_seen <= buffer);
}

#[test]
fn with_pfc_a_16_to_1_incast_drops_nothing() {
    // 16 senders to one host with 5-packet-deep... lossless: PFC pauses
    // upstream ports instead. Both transports; the same incast without PFC
    // (DCTCP, same buffers) does drop, so the test can tell.
    let base = FatTreeParams {
        k: 6,
        buffer: ByteSize(100_000),
        ecn_threshold: ByteSize(0),
        pfc_xoff: ByteSize(40_000),
        pfc_xon: ByteSize(20_000),
        ..FatTreeParams::default()
    };
    for transport in [TransportKind::Paced, TransportKind::Dctcp] {
        let p = FatTreeParams {
            flow_control: FlowControlKind::Pfc,
            transport,
            ..base.clone()
        };
        let (net, _) = lossless_incast(&p);
        let s = net.stats();
        assert!(s["pfc_pauses"] > 0.0, "{transport:?}: PFC never acted");
        assert!(s["pfc_pause_time_us"] > 0.0);
    }
    let mut lossy = build(&base, false, &topo100(), 9);
    drain(&mut lossy, &incast(16, 1_000_000), |_, _, _| {});
    assert!(lossy.stats()["drops"] > 0.0);
}

#[test]
fn the_dctcp_queue_stays_near_k_under_a_long_lived_incast() {
    // 8 long flows into one receiver with a deep buffer (1 MB) and K = 80 KB
    // (about 19 packets). After slow start, the bottleneck queue hovers
    // around K: its time average is within [K/2, K + 8 packets], it never
    // approaches the buffer, and nothing is dropped. Without ECN the same
    // run fills the buffer instead (so the test can fail).
    let k_bytes = 80_000u64;
    let run = |ecn: u64| {
        let p = FatTreeParams {
            k: 4,
            buffer: ByteSize(1_000_000),
            ecn_threshold: ByteSize(ecn),
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), 2);
        let port = net.clos().tor_down_port(0);
        let flows: Vec<Flow> = (0..8).map(|i| flow(i, 4 + i, 0, 20_000_000, 0)).collect();
        let (mut sum, mut n, mut max) = (0f64, 0u64, 0u64);
        let mut next = SimTime::us(300);
        let rec = drain(&mut net, &flows, |f, _, now| {
            // Sample every 2 us between 0.3 ms and 10 ms.
            while now >= next && next < SimTime::ms(10) {
                let q = f.net().queue_bytes(port, next);
                sum += q as f64;
                n += 1;
                max = max.max(q);
                next += SimTime::us(2);
            }
        });
        assert_eq!(rec.completed(), 8);
        (sum / n as f64, max, net.stats())
    };
    let (mean, max, s) = run(k_bytes);
    assert!(
        mean >= k_bytes as f64 / 2.0 && mean <= (k_bytes + 8 * 4160) as f64,
        "mean queue {mean:.0} B with K = {k_bytes} B"
    );
    assert!(max < 400_000, "peak {max}");
    assert_eq!(s["drops"], 0.0);
    assert!(s["ecn_marks"] > 0.0);
    let (mean_no_ecn, _, _) = run(0);
    assert!(mean_no_ecn > 3.0 * k_bytes as f64, "{mean_no_ecn}");
}

#[test]
fn with_credits_a_16_to_1_incast_drops_nothing_and_keeps_the_link_busy() {
    // The same incast as with PFC, under credit flow control with 3 VCs of
    // 100,000 / 3 = 33,333 B (8 frames) per ingress link: no port ever
    // sends without a credit, so nothing can drop; the ports wait instead.
    for transport in [TransportKind::Paced, TransportKind::Dctcp] {
        let p = FatTreeParams {
            k: 6,
            buffer: ByteSize(100_000),
            ecn_threshold: ByteSize(0),
            flow_control: FlowControlKind::Credit,
            vcs: 3,
            transport,
            ..FatTreeParams::default()
        };
        let (net, last) = lossless_incast(&p);
        let s = net.stats();
        assert!(
            s["credit_stalls"] > 0.0,
            "{transport:?}: credits never limited"
        );
        // No VC input buffer ever held more than its 33,333 B, and the
        // incast filled some to within a frame.
        assert!(
            s["peak_vc_buffer_bytes"] <= 33_333.0,
            "{transport:?}: {s:?}"
        );
        assert!(
            s["peak_vc_buffer_bytes"] > 33_333.0 - 4_160.0,
            "{transport:?}: {s:?}"
        );
        // 16 MB through one 100 Gbps downlink take >= 1.28 ms.
        assert!(last.0 >= 1_280_000_000, "{transport:?}: {last}");
    }
}

#[test]
fn credits_leave_the_lone_flow_fct_unchanged_with_big_buffers_and_throttle_small_ones() {
    // Big buffers (1 MB per link, 2 VCs): a credit is always there, so the
    // closed forms of `one_flow_fct_equals_the_store_and_forward_closed_form`
    // hold exactly: DCTCP 10 packets across pods 10.992 us; paced 1 MB
    // 88.9184 us.
    let big = FatTreeParams {
        k: 4,
        flow_control: FlowControlKind::Credit,
        vcs: 2,
        buffer: ByteSize(1_000_000),
        ..FatTreeParams::default()
    };
    for (transport, bytes, want) in [
        (TransportKind::Dctcp, 40_960, 10_992_000),
        (TransportKind::Paced, 1_000_000, 88_918_400),
    ] {
        let p = FatTreeParams {
            transport,
            ..big.clone()
        };
        let mut net = build(&p, false, &topo100(), 1);
        let f = flow(0, 0, 15, bytes, 0);
        let rec = drain(&mut net, &[f], |_, _, _| {});
        assert_eq!(fct(&rec, &f), SimTime(want), "{transport:?}");
        assert_eq!(net.stats()["credit_stalls"], 0.0);
    }
    // One frame of credit per link (buffer 4,160 B, 1 VC), paced, within a
    // ToR (host 0 -> 1: NIC link, then ToR downlink), s = 332.8 ns per
    // frame, d = 1 us. Packet i leaves the NIC only when the ToR has sent
    // packet i-1 on (s after it arrived) and that credit has flown back
    // (d): one packet per 2s + 2d, and packet i arrives at (i+1)(2s + 2d).
    // 10 packets: 10 x 2.6656 us = 26.656 us (vs 5.6608 us unthrottled).
    let tiny = FatTreeParams {
        k: 4,
        flow_control: FlowControlKind::Credit,
        transport: TransportKind::Paced,
        buffer: ByteSize(4_160),
        ecn_threshold: ByteSize(0),
        ..FatTreeParams::default()
    };
    let mut net = build(&tiny, false, &topo100(), 1);
    let f = flow(0, 0, 1, 40_960, 0);
    let rec = drain(&mut net, &[f], |_, _, _| {});
    assert_eq!(fct(&rec, &f), SimTime(26_656_000));
    // A credit delay of c adds to every wait: packet i leaves at
    // i(2s + 2d + c), so + 9 x 100 ns.
    let slow = FatTreeParams {
        credit_delay: SimTime::ns(100),
        ..tiny
    };
    let mut net = build(&slow, false, &topo100(), 1);
    let rec = drain(&mut net, &[f], |_, _, _| {});
    assert_eq!(fct(&rec, &f), SimTime(27_556_000));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]
    /// Credit flow control with random VC counts, tiny per-VC buffers (one
    /// to three frames), credit delays, routings and transports, and random
    /// flows (incasts included): after every step, no VC buffer holds more
    /// than its credits allow and no sender holds more credits than the
    /// buffer (`check_invariants`; a negative credit would panic); nothing
    /// is dropped, every flow completes, every byte arrives once.
    #[test]
    fn credits_never_overrun_a_buffer_and_never_drop(
        seed in 0u64..1000,
        vcs in 1u32..=4,
        frames in 1u64..=3,
        delay_ns in 0u64..500,
        routing in prop_oneof![Just(Routing::Ecmp), Just(Routing::Spray), Just(Routing::Adaptive)],
        paced in any::<bool>(),
        sizes in prop::collection::vec((1u64..200_000, 0u64..20_000, 0u32..16, 0u32..16), 1..16),
    ) {
        let p = FatTreeParams {
            k: 4,
            routing,
            flow_control: FlowControlKind::Credit,
            vcs,
            buffer: ByteSize(vcs as u64 * frames * 4_160),
            ecn_threshold: ByteSize(4_160),
            credit_delay: SimTime::ns(delay_ns),
            transport: if paced { TransportKind::Paced } else { TransportKind::Dctcp },
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), seed);
        let flows = numbered(sizes
            .iter()
            .map(|&(b, t, src, d)| {
                let dst = if d == src { (src + 1) % 16 } else { d };
                flow(0, src, dst, b, t)
            })
            .collect());
        let rec = drain(&mut net, &flows, |_, _, _| {});
        all_delivered(&rec, &flows);
        let s = net.stats();
        // (Timeouts may happen: one-frame buffers stretch round trips past
        // rto_min, a spurious timeout; they resend, never lose.)
        prop_assert_eq!(s["drops"], 0.0);
        prop_assert!(s["peak_vc_buffer_bytes"] <= (frames * 4_160) as f64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]
    /// Random loss at every switch, random flows, any routing: every byte
    /// reaches the application exactly once and every flow completes (the
    /// recorder flags over-delivery and double completion as violations).
    #[test]
    fn every_byte_arrives_exactly_once_despite_losses(
        seed in 0u64..1000,
        loss in 0.0f64..0.05,
        routing in prop_oneof![Just(Routing::Ecmp), Just(Routing::Spray), Just(Routing::Adaptive)],
        sizes in prop::collection::vec((1u64..300_000, 0u64..50_000), 1..12),
        sack in any::<bool>(),
        delayed_ack in 1u32..=3,
    ) {
        let p = FatTreeParams {
            k: 4,
            routing,
            sack,
            delayed_ack,
            loss_rate: loss,
            buffer: ByteSize(30_000),
            rto_min: SimTime::us(50),
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), seed);
        let flows = numbered(sizes
            .iter()
            .enumerate()
            .map(|(i, &(b, t))| {
                let src = ((seed + i as u64 * 7) % 16) as u32;
                let dst = (src + 1 + ((seed / 3 + i as u64) % 15) as u32) % 16;
                flow(0, src, dst, b, t)
            })
            .collect());
        let rec = drain(&mut net, &flows, |_, _, _| {});
        all_delivered(&rec, &flows);
        prop_assert_eq!(rec.violation_count(), 0);
        let s = net.stats();
        if s["random_data_losses"] > 0.0 {
            prop_assert!(s["retransmissions"] > 0.0);
        }
    }
}

fn small_config(fabric: &str, load: f64, seed: u64) -> Config {
    let mut c = Config {
        fabric: fabric.into(),
        seed,
        ..Config::default()
    };
    c.topology = Topology {
        racks: 8,
        servers_per_rack: 4,
        uplinks: 4,
        uplink_rate: Rate::gbps(25),
        server_rate: None,
    };
    c.workload.load = load;
    c.workload.sizes = SizesConfig::pareto(1.5, ByteSize(50_000));
    c.stop.flows = Some(1_500);
    c.stop.drain = true;
    c
}

#[test]
fn the_same_seed_gives_identical_runs_with_spraying() {
    let go = |seed| {
        let mut c = small_config("fat_tree", 0.7, seed);
        c.edit(|p: &mut FatTreeParams| p.routing = Routing::Spray);
        let r = simulate(prepare(&c, &Paths::default()).unwrap(), &mut |_| true).unwrap();
        (
            r.flows.finish_ps,
            serde_json::to_string(&r.summary.fabric_stats).unwrap(),
        )
    };
    assert_eq!(go(4), go(4));
    assert_ne!(go(4).0, go(5).0);
}

/// Mean FCT (us) of completed flows of a run.
fn mean_fct(c: &Config) -> (f64, Vec<(u32, u32, u64, u64)>) {
    let r = simulate(prepare(c, &Paths::default()).unwrap(), &mut |_| true).unwrap();
    assert!(r.summary.invariant_violations.is_empty());
    assert_eq!(r.summary.completed, r.summary.flows);
    let t = &r.flows;
    let rows: Vec<_> = (0..t.len())
        .map(|i| {
            (
                t.src[i],
                t.dst[i],
                t.bytes[i],
                t.finish(i).unwrap() - t.start_ps[i],
            )
        })
        .collect();
    let mean = rows.iter().map(|r| r.3 as f64).sum::<f64>() / rows.len() as f64 / 1e6;
    (mean, rows)
}

#[test]
fn the_fluid_model_is_a_lower_bound_and_close_at_low_load() {
    // The same workload (8 racks x 4 servers at 25 Gbps, Pareto(1.5, 50 KB),
    // 1,500 flows, drained) on ESN (Ideal) with zero base latency, and on the
    // packet fat-tree. Path latency of a flow on the fat-tree: its hops x
    // 1 us of propagation plus (hops - 1) store-and-forward serialisations
    // of its first packet.
    let ctx_topo = small_config("fat_tree", 0.1, 1).topology;
    let p = FatTreeParams::default();
    let clos = Clos::layout(
        &p,
        false,
        &BuildContext {
            topology: &ctx_topo,
            seed: 1,
            check_invariants: false,
        },
    )
    .unwrap();
    let r = ctx_topo.host_rate();
    let path = |src: u32, dst: u32, bytes: u64| {
        let h = clos.hops(src, dst) as u64;
        let first = bytes.min(4096) + 64;
        (SimTime::us(1) * h + r.tx_time(first) * (h - 1)).0 as f64 / 1e6
    };
    for (load, margin) in [
        (0.1, 0.25),
        (0.3, f64::INFINITY),
        (0.5, f64::INFINITY),
        (0.8, f64::INFINITY),
    ] {
        let mut esn = small_config("esn", load, 1);
        esn.edit(|e: &mut photonet::fabric::esn::EsnParams| e.base_latency = SimTime::ZERO);
        let (fluid, rows) = mean_fct(&esn);
        let (packet, prow) = mean_fct(&small_config("fat_tree", load, 1));
        assert_eq!(rows.len(), prow.len());
        let lat = rows.iter().map(|r| path(r.0, r.1, r.2)).sum::<f64>() / rows.len() as f64;
        eprintln!(
            "load {load}: fluid {fluid:.2} us, fluid + path {:.2} us, packet {packet:.2} us ({:+.1} %)",
            fluid + lat,
            (packet / (fluid + lat) - 1.0) * 100.0
        );
        assert!(
            packet >= fluid,
            "load {load}: packet {packet} < fluid {fluid}"
        );
        assert!(
            packet <= (fluid + lat) * (1.0 + margin),
            "load {load}: packet {packet} vs fluid + path {}",
            fluid + lat
        );
    }
}

#[test]
fn leaf_spine_and_fat_tree_run_from_the_common_topology() {
    for fabric in ["fat_tree", "leaf_spine"] {
        let mut c = small_config(fabric, 0.5, 2);
        c.stop.flows = Some(300);
        c.metrics.check_invariants = true;
        let (mean, _) = mean_fct(&c);
        assert!(mean > 0.0);
    }
    // A trace: a permutation shot on the leaf-spine.
    let mut c = small_config("leaf_spine", 0.5, 2);
    c.workload.pattern.kind = PatternKind::Permutation;
    c.stop.flows = Some(100);
    let (mean, _) = mean_fct(&c);
    assert!(mean > 0.0);
}

/// A router over a fat-tree that uses the full hooks: at a ToR it sends
/// every packet up its *last* uplink through `route` (tagging it with the
/// ToR's node index), and it puts every switch hop on the last VC. It
/// records what the next hops see.
struct Hooked {
    clos: Clos,
    seen: std::cell::RefCell<Vec<(u32, u8, u32)>>,
}

impl photonet::net::Router for Hooked {
    fn candidates(&self, node: u32, dst: u32) -> photonet::net::Candidates {
        self.clos.candidates(node, dst)
    }
    fn route(
        &self,
        hop: &mut photonet::net::Hop,
        _load: &dyn Fn(u32) -> u64,
        _rng: &mut photonet::rng::SimRng,
    ) -> Option<u32> {
        self.seen.borrow_mut().push((hop.node, hop.vc, hop.tag));
        let c = self.clos.candidates(hop.node, hop.dst);
        if c.count > 1 && hop.tag == 0 {
            hop.tag = hop.node;
            return Some(c.first + c.count - 1);
        }
        None
    }
    fn vc(&self, hop: &photonet::net::Hop, _out: u32) -> u8 {
        if hop.in_port == u32::MAX {
            0
        } else {
            hop.vcs - 1
        }
    }
}

#[test]
fn the_route_and_vc_hooks_steer_packets_and_travel_with_them() {
    use photonet::net::{CreditConfig, FlowControl, NetConfig, Network, Transport};
    let t = topo100();
    let p = FatTreeParams {
        k: 4,
        ..FatTreeParams::default()
    };
    let ctx = BuildContext {
        topology: &t,
        seed: 1,
        check_invariants: true,
    };
    let clos = Clos::layout(&p, false, &ctx).unwrap();
    let cfg = NetConfig {
        payload: 4096,
        header: 64,
        ack_bytes: 64,
        propagation: SimTime::us(1),
        buffer: 3 * 4160,
        ecn_k: None,
        flow_control: FlowControl::Credit(CreditConfig {
            vcs: 3,
            vc_buffer: 4160,
            credit_delay: SimTime::ZERO,
        }),
        transport: Transport::Paced,
        routing: Routing::Spray,
        ..NetConfig::default()
    };
    let router = Hooked {
        clos: clos.clone(),
        seen: Default::default(),
    };
    let mut net = Network::new(cfg, clos.graph(), router);
    let mut rec = Recorder::new(None);
    // Host 0 (ToR node 16 + 0) to host 15 (another pod), 5 packets.
    let f = flow(0, 0, 15, 5 * 4096, 0);
    rec.register(&f);
    net.add_flow(SimTime::ZERO, &f, &mut rec);
    while let Some(t) = net.next_event() {
        net.advance(t, &mut rec);
        net.check_invariants().unwrap();
    }
    assert_eq!(rec.completed(), 1);
    // ToR 0's uplinks are ports tor_down_port(0) + 2 and + 3: only the
    // last one carried anything (spraying alone would use both).
    let up = clos.tor_down_port(0) + 2;
    assert_eq!(net.port_stats(up).0, 0);
    assert!(net.port_stats(up + 1).0 > 0);
    // At the ToR the packet arrived on VC 0 (NIC link) untagged; at every
    // later switch on VC 2, tagged with the ToR's node (16).
    let seen = net_router_seen(&net);
    assert_eq!(seen.len(), 5 * 5, "5 switches per packet");
    for (node, vc, tag) in seen {
        if node == 16 {
            assert_eq!((vc, tag), (0, 0));
        } else {
            assert_eq!((vc, tag), (2, 16), "at node {node}");
        }
    }
}

fn net_router_seen(net: &photonet::net::Network<Hooked>) -> Vec<(u32, u8, u32)> {
    net.router().seen.borrow().clone()
}

#[test]
fn priority_classes_follow_the_thresholds() {
    use photonet::net::Priority;
    let t = vec![10_000, 100_000];
    // PIAS: by bytes sent before the packet, whatever the flow's size.
    let pias = Priority::Pias(t.clone());
    assert_eq!(pias.classes(), 3);
    let got: Vec<u8> = [0, 9_999, 10_000, 99_999, 100_000, 5_000_000]
        .iter()
        .map(|&sent| pias.class(sent, 10_000_000))
        .collect();
    assert_eq!(got, [0, 0, 1, 1, 2, 2]);
    // Size: by the flow's size, whatever was sent.
    let size = Priority::Size(t);
    assert_eq!(size.class(0, 100_000), 2);
    assert_eq!(size.class(90_000, 99_999), 1);
    assert_eq!(size.class(0, 1), 0);
    assert_eq!(Priority::None.class(1 << 40, 1 << 40), 0);
}

/// Long DCTCP flows into host 0 from other ToRs and pods, and short flows
/// into host 0 from hosts 1-3 (same ToR, same pod) while they run.
fn short_under_long() -> (Vec<Flow>, Vec<u32>) {
    let mut flows: Vec<Flow> = [4u32, 8, 12, 5]
        .iter()
        .enumerate()
        .map(|(i, &s)| flow(i as u32, s, 0, 3_000_000, 0))
        .collect();
    let mut short = vec![];
    for j in 0..20u32 {
        let id = flows.len() as u32;
        short.push(id);
        flows.push(flow(id, 1 + j % 3, 0, 20_000, 60_000 + 20_000 * j as u64));
    }
    (flows, short)
}

#[test]
fn strict_priority_shortens_short_flows_under_long_ones() {
    // Lossy DCTCP, 256 KB buffers, K = 80 KB: with one FIFO the short flows
    // queue behind the long flows' standing queue (~K) at host 0's
    // downlink; with size-aware classes (< 100 KB first) they skip it.
    let mut mean = vec![];
    for priority in [PriorityKind::None, PriorityKind::Size] {
        let p = FatTreeParams {
            k: 4,
            priority,
            priority_thresholds: vec![ByteSize(100_000)],
            ecn_threshold: ByteSize(80_000),
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), 2);
        let (flows, short) = short_under_long();
        let rec = drain(&mut net, &flows, |_, _, _| {});
        assert_eq!(rec.completed(), flows.len() as u64);
        let m = short
            .iter()
            .map(|&i| fct(&rec, &flows[i as usize]).0 as f64)
            .sum::<f64>()
            / short.len() as f64;
        if priority == PriorityKind::Size {
            // Non-preemptive strict priority: a short flow waits at most for
            // one class-1 frame in service on each link of its path.
            for &i in &short {
                let f = &flows[i as usize];
                let lone = lone_flow_bounds(&p, net.clos(), f.src, f.dst, f.bytes).max;
                let hops = net.clos().hops(f.src, f.dst) as u64;
                let got = fct(&rec, f);
                assert!(got.0 <= lone.0 + hops * 332_800, "{got} vs lone {lone}");
            }
        }
        mean.push(m);
    }
    // Measured: 10.9 us with one FIFO, 6.0 us with classes.
    assert!(mean[1] < mean[0], "{mean:?}");
}

#[test]
fn per_class_pfc_pauses_only_the_congested_class() {
    // Lossless (PFC), two classes by size (< 100 KB first): an 8-to-1
    // incast of 1 MB flows (class 1) into host 0, and a 50 KB flow (class 0)
    // from host 1 (same ToR) while it runs. Class 1 is paused; class 0 never
    // is, and the short flow passes the incast's queue.
    let p = FatTreeParams {
        k: 4,
        flow_control: FlowControlKind::Pfc,
        transport: TransportKind::Paced,
        priority: PriorityKind::Size,
        priority_thresholds: vec![ByteSize(100_000)],
        buffer: ByteSize(200_000),
        ecn_threshold: ByteSize(0),
        pfc_xoff: ByteSize(40_000),
        pfc_xon: ByteSize(20_000),
        ..FatTreeParams::default()
    };
    let mut net = build(&p, false, &topo100(), 4);
    let mut flows: Vec<Flow> = (0..8u32).map(|i| flow(i, 4 + i, 0, 1_000_000, 0)).collect();
    flows.push(flow(8, 1, 0, 50_000, 100_000));
    let rec = drain(&mut net, &flows, |_, _, _| {});
    assert_eq!(rec.completed(), 9);
    let s = net.stats();
    assert_eq!(s["drops"], 0.0, "{s:?}");
    assert!(s["pfc_pause_time_us.class1"] > 0.0, "{s:?}");
    assert_eq!(s["pfc_pause_time_us.class0"], 0.0, "{s:?}");
    // Alone, 50 KB within a ToR: 13 packets, wire 50,832 B = 4.06656 us
    // + 332.8 ns + 2 us = 6.39936 us; under the incast at most one
    // class-1 frame in service on each of its two links delays it.
    let short = fct(&rec, &flows[8]);
    assert!(short.0 <= 6_399_360 + 2 * 332_800, "{short}");
    assert!(short.0 >= 6_399_360, "{short}");
}

#[test]
fn sack_repairs_multiple_losses_with_fewer_timeouts_than_newreno() {
    // 2 % random loss at every switch, 12 flows of 1 MB between random
    // pairs, 5 seeds, identical inputs for both: NewReno repairs one hole
    // per round trip and falls back on timeouts when a window loses
    // several packets; SACK retransmits a hole per duplicate ACK.
    let mut timeouts = [0.0; 2];
    let mut fct_sum = [0u64; 2];
    for (i, sack) in [false, true].into_iter().enumerate() {
        for seed in 0..5u64 {
            let p = FatTreeParams {
                k: 4,
                sack,
                loss_rate: 0.02,
                rto_min: SimTime::us(50),
                ..FatTreeParams::default()
            };
            let mut net = build(&p, false, &topo100(), seed);
            let flows: Vec<Flow> = (0..12u32)
                .map(|j| {
                    let src = (j * 5 + seed as u32) % 16;
                    flow(j, src, (src + 3 + j) % 16, 1_000_000, j as u64 * 1_000)
                })
                .collect();
            let rec = drain(&mut net, &flows, |_, _, _| {});
            for f in &flows {
                assert_eq!(rec.delivered(f.id), f.bytes);
                fct_sum[i] += fct(&rec, f).0;
            }
            timeouts[i] += net.stats()["timeouts"];
        }
    }
    eprintln!("timeouts NewReno/SACK {timeouts:?}, FCT sums {fct_sum:?}");
    assert!(timeouts[0] > 0.0, "the test must make NewReno time out");
    assert!(timeouts[1] < timeouts[0], "{timeouts:?}");
}

#[test]
fn delayed_acks_wait_for_a_second_packet_or_the_timeout() {
    // A lone 3-packet flow within a ToR with an initial window of 1 (s =
    // 332.8 ns per frame, 5.12 ns per 64 B ACK, d = 1 us per link).
    // Immediate ACKs: packet 0 arrives at 2s + 2d = 2.6656 us, its ACK is
    // back at + 2 x 5.12 ns + 2d = 4.67584 us, then packets 1 and 2 go
    // back to back: the last arrives 3s + 2d later, at 7.67424 us.
    // Delayed ACKs (every 2, 10 us timeout): packet 0's ACK waits for the
    // timeout, exactly 10 us more; packet 2 completes the flow and is
    // acknowledged at once. 3 ACKs without delay, 2 with.
    let mut got = vec![];
    for delayed_ack in [1, 2] {
        let p = FatTreeParams {
            k: 4,
            init_cwnd: 1,
            delayed_ack,
            delayed_ack_timeout: SimTime::us(10),
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), 1);
        let f = flow(0, 0, 1, 3 * 4096, 0);
        let rec = drain(&mut net, &[f], |_, _, _| {});
        got.push((fct(&rec, &f).0, net.stats()["acks"]));
    }
    assert_eq!(got, [(7_674_240, 3.0), (17_674_240, 2.0)]);
    // A long flow with delayed ACKs sends about one ACK per two packets.
    let p = FatTreeParams {
        k: 4,
        delayed_ack: 2,
        ..FatTreeParams::default()
    };
    let mut net = build(&p, false, &topo100(), 1);
    let f = flow(0, 0, 15, 4_096_000, 0);
    drain(&mut net, &[f], |_, _, _| {});
    let s = net.stats();
    let ratio = s["acks"] / s["data_packets_delivered"];
    assert!((0.5..0.55).contains(&ratio), "{ratio}: {s:?}");
}

#[test]
fn a_short_flow_does_not_wait_behind_a_long_flow_at_its_nic() {
    // Host 0 sends 20 MB to host 15; at 300 us, when the long flow's window
    // has grown far past the path's bandwidth-delay product (all links run
    // at the NIC's 100 Gbps, so the excess waits at host 0's NIC), host 0
    // starts a 2-packet flow to host 14. With per-flow NIC queues served
    // round-robin, its first packet waits for the long flow's packet on the
    // wire, the one the NIC already holds next, and at most one more (the
    // long flow may be next in the round), and its second one more: FCT <=
    // the lone-flow bound + 4 x 332.8 ns, and nothing times out. With one shared FIFO it waits behind the long flow's
    // backlog (tens of microseconds or more) and its timer runs meanwhile.
    let frame = SimTime(332_800);
    for nic in [NicQueues::RoundRobin, NicQueues::Fifo] {
        let p = FatTreeParams {
            k: 4,
            nic_queues: nic,
            ..FatTreeParams::default()
        };
        let mut net = build(&p, false, &topo100(), 1);
        let flows = [
            flow(0, 0, 15, 20_000_000, 0),
            flow(1, 0, 14, 8_192, 300_000),
        ];
        let rec = drain(&mut net, &flows, |_, _, _| {});
        let lone = lone_flow_bounds(&p, net.clos(), 0, 14, 8_192).max;
        let short = fct(&rec, &flows[1]);
        let s = net.stats();
        match nic {
            NicQueues::RoundRobin => {
                assert!(short <= lone + frame * 4, "{short} vs lone {lone}");
                assert_eq!(s["timeouts"], 0.0, "{s:?}");
            }
            NicQueues::Fifo => {
                assert!(short > lone + SimTime::us(20), "{short} vs lone {lone}");
            }
        }
    }
}

#[test]
fn one_flow_fct_with_per_link_delays_equals_the_closed_form() {
    // k = 4, 100 Gbps, host links 200 ns, switch-to-switch links 1 us; a
    // 10-packet flow (wire 41,600 B = 3.328 us; 332.8 ns per frame):
    //   FCT = wire/R + (hops - 1) x 332.8 ns + 2 x 0.2 us + (hops - 2) x 1 us.
    // Across pods (6 links): 3.328 + 1.664 + 0.4 + 4 = 9.392 us.
    // Same pod (4 links): 3.328 + 0.9984 + 0.4 + 2 = 6.7264 us.
    // Same ToR (2 links): 3.328 + 0.3328 + 0.4 = 4.0608 us.
    let p = FatTreeParams {
        k: 4,
        host_propagation: Some(SimTime::ns(200)),
        ..FatTreeParams::default()
    };
    for (dst, want) in [(15, 9_392_000), (2, 6_726_400), (1, 4_060_800)] {
        let mut net = build(&p, false, &topo100(), 1);
        let f = flow(0, 0, dst, 40_960, 0);
        let rec = drain(&mut net, &[f], |_, _, _| {});
        assert_eq!(fct(&rec, &f), SimTime(want), "0 -> {dst}");
        let b = lone_flow_bounds(&p, net.clos(), 0, dst, 40_960);
        assert!(b.min <= SimTime(want) && SimTime(want) <= b.max, "{b:?}");
    }
}

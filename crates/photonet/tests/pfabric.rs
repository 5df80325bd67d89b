//! pFabric on the packet substrate (`transport = "pfabric"`) on YAPS's
//! 144-host leaf-spine: a flow alone reproduces YAPS's ideal-FCT column
//! exactly; under load every byte arrives once, no queue exceeds its
//! buffer, and runs are deterministic.

use photonet::fabric::fat_tree::{
    Clos, FatTreeParams, PacketFabric, TransportKind, LEAF_SPINE_VARIANT,
};
use photonet::fabric::registry::BuildContext;
use photonet::fabric::Fabric;
use photonet::flow::Flow;
use photonet::net::Routing;
use photonet::recorder::Recorder;
use photonet::topology::Topology;
use photonet::units::{ByteSize, Rate, SimTime};
use proptest::prelude::*;

use crate::common;
use common::{all_delivered, flow, numbered};

/// YAPS's `PFabricTopology`: 9 ToRs of 16 hosts at 40 Gb/s, 4 cores at
/// 160 Gb/s.
fn yaps_topology() -> Topology {
    Topology {
        racks: 9,
        servers_per_rack: 16,
        uplinks: 4,
        uplink_rate: Rate::gbps(160),
        server_rate: Some(Rate::gbps(40)),
    }
}

/// YAPS's pFabric parameters (`validation/yaps/parameters.md`).
fn yaps_params() -> FatTreeParams {
    FatTreeParams {
        propagation: SimTime::ns(200),
        mtu: ByteSize(1460),
        header: ByteSize(40),
        ack_size: ByteSize(40),
        buffer: ByteSize(36_864),
        ecn_threshold: ByteSize(0),
        routing: Routing::Spray,
        transport: TransportKind::Pfabric,
        init_cwnd: 12,
        max_cwnd: 15,
        pfabric_rto: SimTime::us(45),
        cut_through: true,
        ..FatTreeParams::default()
    }
}

fn build(p: &FatTreeParams, topo: &Topology) -> PacketFabric {
    let ctx = BuildContext {
        topology: topo,
        seed: 1,
        check_invariants: true,
    };
    let clos = Clos::layout(p, true, &ctx).unwrap();
    PacketFabric::new(p, &LEAF_SPINE_VARIANT, clos, 1)
}

/// Runs `flows` (sorted by start) to completion, checking invariants every
/// `every` steps; every byte delivered once (the recorder's checks).
fn drain(net: &mut PacketFabric, flows: &[Flow], every: u64) -> Recorder {
    let rec = common::drain(net, flows, every);
    all_delivered(&rec, flows);
    rec
}

/// YAPS's `get_oracle_fct` with cut-through, in ps (40 Gb/s = 200 ps/B,
/// 160 Gb/s = 50 ps/B): 2·hops·200 ns + (n·1,500 + 40 + 80) B at 40 Gb/s,
/// + 2·80 B at 160 Gb/s across ToRs.
fn yaps_oracle_ps(npkts: u64, hops: u64) -> u64 {
    let cross = if hops == 4 { 160 * 50 } else { 0 };
    2 * hops * 200_000 + (npkts * 1_500 + 120) * 200 + cross
}

#[test]
fn a_flow_alone_reproduces_the_yaps_ideal_fct_exactly() {
    let topo = yaps_topology();
    let p = yaps_params();
    // The first three flows of the YAPS case, which ran alone there: FCT =
    // oracle_fct_us (flows.csv: 3.7320, 12.4320, 88.0320 us).
    let cases = [
        (81, 28, 10_220, 3_732_000),
        (126, 62, 52_560, 12_432_000),
        (54, 105, 420_480, 88_032_000),
    ];
    for (src, dst, bytes, want) in cases {
        let mut net = build(&p, &topo);
        let f = flow(0, src, dst, bytes, 793);
        let rec = drain(&mut net, &[f], 1);
        assert_eq!(
            rec.finish(0).unwrap() - f.start,
            SimTime(want),
            "{src}->{dst}"
        );
        assert_eq!(yaps_oracle_ps(bytes / 1460, 4), want);
    }
    // The formula for every size from 1 to 40 packets (beyond the window of
    // 12 too), within a ToR (2 links) and across (4).
    for n in 1..=40u64 {
        for (src, dst, hops) in [(0, 1, 2), (0, 16, 4), (143, 5, 4)] {
            let mut net = build(&p, &topo);
            let f = flow(0, src, dst, n * 1460, 0);
            let rec = drain(&mut net, &[f], 7);
            assert_eq!(
                rec.finish(0).unwrap(),
                SimTime(yaps_oracle_ps(n, hops)),
                "{n} packets {src}->{dst}"
            );
            let s = net.stats();
            assert_eq!(s["drops"], 0.0);
            // The slowdown statistics use the same ideal.
            assert_eq!(s["slowdown_mean.all"], 1.0, "{n} packets {src}->{dst}");
        }
    }
}

#[test]
fn an_incast_drops_but_delivers_everything_and_keeps_queues_bounded() {
    let topo = yaps_topology();
    let p = yaps_params();
    // 40 senders on other ToRs at once into host 0, sizes 6..200 packets:
    // the ToR downlink queue overflows.
    let flows: Vec<Flow> = (0..40u32)
        .map(|i| {
            flow(
                i,
                16 + i * 3,
                0,
                1460 * (6 + (i as u64 * 37) % 195),
                i as u64 * 10,
            )
        })
        .collect();
    let mut net = build(&p, &topo);
    let rec = drain(&mut net, &flows, 5);
    let s = net.stats();
    assert!(s["drops"] > 0.0, "an incast of 40 windows must overflow");
    assert!(s["timeouts"] > 0.0);
    assert!(
        s["peak_queue_bytes"] <= 36_864.0,
        "{}",
        s["peak_queue_bytes"]
    );
    // Shortest remaining first: the smallest flow finishes before the largest.
    let fct = |i: u32| rec.finish(i).unwrap() - flows[i as usize].start;
    let smallest = (0..40).min_by_key(|&i| flows[i as usize].bytes).unwrap();
    let largest = (0..40).max_by_key(|&i| flows[i as usize].bytes).unwrap();
    assert!(fct(smallest) < fct(largest));
    // Deterministic.
    let mut again = build(&p, &topo);
    let rec2 = drain(&mut again, &flows, 1 << 40);
    for f in &flows {
        assert_eq!(rec.finish(f.id), rec2.finish(f.id));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Random flows on a small leaf-spine with tiny buffers: every byte
    /// arrives once, every flow finishes, and no queue (NICs included)
    /// ever holds more than its buffer (`check_invariants` every step).
    #[test]
    fn random_flows_deliver_once_within_buffers(
        specs in prop::collection::vec((0u32..12, 1u32..12, 1u64..30_000, 0u64..20_000), 1..30),
        buffer in 3_000u64..12_000,
    ) {
        let topo = Topology {
            racks: 3,
            servers_per_rack: 4,
            uplinks: 2,
            uplink_rate: Rate::gbps(80),
            server_rate: Some(Rate::gbps(40)),
        };
        let p = FatTreeParams {
            buffer: ByteSize(buffer),
            ..yaps_params()
        };
        let flows = numbered(specs.iter().map(|&(s, d, b, t)| flow(0, s, (s + d) % 12, b, t)).collect());
        let mut net = build(&p, &topo);
        drain(&mut net, &flows, 1);
        prop_assert!(net.stats()["peak_queue_bytes"] <= buffer as f64);
    }
}

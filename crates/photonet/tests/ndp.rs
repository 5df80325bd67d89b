//! NDP on the packet substrate (`net::ndp` via `fabric = "fat_tree"`,
//! `transport = "ndp"`): a lone flow's FCT against the closed form,
//! exactly-once in-order delivery, data queues within their bound, and
//! every trimmed packet NACKed and resent once.

use photonet::fabric::fat_tree::{Clos, FatTreeParams, NdpFabric, TransportKind, FAT_TREE_VARIANT};
use photonet::fabric::registry::BuildContext;
use photonet::fabric::Fabric;
use photonet::flow::Flow;
use photonet::recorder::Recorder;
use photonet::topology::Topology;
use photonet::units::{ByteSize, Rate, SimTime};
use proptest::prelude::*;

use crate::common;
use common::{all_delivered, drain, flow, numbered};

/// htsim's NDP settings on a k-ary fat-tree of 100 Gb/s, 1 us links.
fn params(k: u32) -> FatTreeParams {
    FatTreeParams {
        k,
        transport: TransportKind::Ndp,
        buffer: ByteSize(35 * 4096),
        init_cwnd: 50,
        ndp_full_packets: true,
        ..FatTreeParams::default()
    }
}

fn build(p: &FatTreeParams, seed: u64) -> NdpFabric {
    let topo = Topology {
        uplink_rate: Rate::gbps(100),
        ..Topology::default()
    };
    let ctx = BuildContext {
        topology: &topo,
        seed,
        check_invariants: true,
    };
    let clos = Clos::layout(p, false, &ctx).unwrap();
    NdpFabric::new(p, &FAT_TREE_VARIANT, clos, seed)
}

fn fct(rec: &Recorder, f: &Flow) -> SimTime {
    rec.finish(f.id).expect("completed") - f.start
}

/// A lone flow of n full packets over h links (T = 4,160 B at 100 Gb/s =
/// 332.8 ns, a = 64 B = 5.12 ns, d = 1 us): the sender's NIC stays busy
/// (the first PULLs return within the initial window, and past it PULLs
/// come every T/0.99, slower than T by only 3.4 ns a packet), so the last
/// packet leaves at nT, reaches the receiver (h − 1)T + hd later, and its
/// ACK returns in h(a + d): FCT = (n + h − 1)T + h·a + 2hd.
#[test]
fn lone_flow_fct_is_the_closed_form() {
    let (t, a, d) = (332_800u64, 5_120u64, 1_000_000u64);
    // k = 4: hosts 0,1 share a ToR; 0 and 2 a pod; 0 and 15 are in different pods.
    for (dst, h) in [(1u32, 2u64), (2, 4), (15, 6)] {
        for n in [1u64, 10, 50, 512] {
            let mut net = build(&params(4), 1);
            let f = flow(0, 0, dst, n * 4096, 0);
            let rec = drain(&mut net, &[f], 1);
            let want = (n + h - 1) * t + h * a + 2 * h * d;
            assert_eq!(fct(&rec, &f), SimTime(want), "n = {n}, h = {h}");
            let s = net.stats();
            assert_eq!(s["ndp_trimmed"], 0.0);
            assert_eq!(s["data_packets_sent"], n as f64);
        }
    }
}

/// An incast overflows the receiver's ToR downlink: packets are trimmed,
/// NACKed and resent, each exactly once, and every byte arrives once.
#[test]
fn incast_trims_and_every_trimmed_packet_is_resent_once() {
    let p = params(4);
    let mut net = build(&p, 3);
    let flows: Vec<Flow> = (1..16).map(|s| flow(s - 1, s, 0, 1 << 20, 0)).collect();
    let rec = drain(&mut net, &flows, 97);
    for f in &flows {
        assert_eq!(rec.delivered(f.id), f.bytes);
        assert!(rec.finish(f.id).is_some());
    }
    let s = net.stats();
    assert!(s["ndp_trimmed"] > 100.0, "{s:?}");
    assert_eq!(s["ndp_header_drops"], 0.0);
    assert_eq!(s["timeouts"], 0.0);
    assert_eq!(s["ndp_nacks"], s["ndp_trimmed"]);
    assert_eq!(s["retransmissions"], s["ndp_nacks"]);
    assert_eq!(s["data_packets_sent"], 15.0 * 256.0);
    assert_eq!(s["duplicates"], 0.0);
    assert!(s["peak_data_queue_bytes"] <= p.buffer.0 as f64);
    // 15 MiB into one 100 Gb/s link, at the pull rate: no faster than the line.
    let last = flows
        .iter()
        .map(|f| rec.finish(f.id).unwrap())
        .max()
        .unwrap();
    assert!(last >= Rate::gbps(100).tx_time(15 * 256 * 4160));
}

/// Same seed, same run.
#[test]
fn deterministic() {
    let run = || {
        let mut net = build(&params(4), 9);
        let flows: Vec<Flow> = (0..16)
            .map(|s| flow(s, s, (s * 7 + 3) % 16, 300_000, s as u64 * 100))
            .collect();
        let rec = drain(&mut net, &flows, 1000);
        (
            flows.iter().map(|f| rec.finish(f.id)).collect::<Vec<_>>(),
            net.stats(),
        )
    };
    assert_eq!(run(), run());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Random flows (uneven sizes, some sharing hosts) under small
    /// buffers: every flow completes with each byte delivered once and in
    /// order (the recorder flags any excess), no data queue exceeds its
    /// bound, and trimmed packets are resent exactly once.
    #[test]
    fn random_traffic_delivers_every_byte_once(
        flows in proptest::collection::vec((0u32..16, 1u32..16, 1u64..400_000, 0u64..20_000), 1..40),
        small in any::<bool>(),
        full in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let mut p = params(4);
        p.ndp_full_packets = full;
        if small {
            p.buffer = ByteSize(8 * 4160);
            p.init_cwnd = 12;
        }
        let flows = numbered(flows
            .iter()
            .map(|&(s, d, b, t)| flow(0, s, (s + d) % 16, b, t))
            .collect());
        let mut net = build(&p, seed);
        let rec = drain(&mut net, &flows, 50);
        all_delivered(&rec, &flows);
        let s = net.stats();
        prop_assert!(s["peak_data_queue_bytes"] <= p.buffer.0 as f64);
        prop_assert_eq!(s["timeouts"], 0.0);
        prop_assert_eq!(s["ndp_header_drops"], 0.0);
        prop_assert_eq!(s["retransmissions"], s["ndp_trimmed"]);
    }
}

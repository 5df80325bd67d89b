//! The packet engine's results are pinned: a change that makes `net/` faster
//! (event queue, dispatch, packet layout) must not change what it simulates.
//! Small issue-7 permutations (every host sends one flow to a derangement
//! partner at t = 0, 100 Gbps, 1 us propagation, 4,096 + 64 B packets,
//! 34-packet queues) under spraying, ECMP and adaptive routing; the counts
//! and the flows' completion times must equal those the engine produced
//! before its calendar became per-bucket slot vectors (commit 76204ca, slab
//! lists), entry for entry.

use photonet::config::Config;
use photonet::engine::{run, StopRule};
use photonet::fabric::fat_tree::FatTreeParams;
use photonet::flow::Flow;
use photonet::net::Routing;
use photonet::recorder::Recorder;
use photonet::rng::RngStreams;
use photonet::units::{ByteSize, Rate, SimTime};

/// (end time ps, data packets delivered, packet hops, drops, timeouts,
/// retransmissions, sum of completion times ps, xor-fold of completion times).
type Pin = (u64, u64, u64, u64, u64, u64, u64, u64);

fn permutation(k: u32, routing: Routing, bytes: u64) -> Pin {
    let mut c = Config {
        fabric: "fat_tree".into(),
        ..Config::default()
    };
    c.topology.uplink_rate = Rate::gbps(100);
    c.set_params(&FatTreeParams {
        k,
        routing,
        buffer: ByteSize(34 * 4160),
        dupack_threshold: if routing == Routing::Ecmp { 3 } else { 10 },
        ..FatTreeParams::default()
    });
    let mut fabric = photonet::run::build_fabric(&c).unwrap();
    let n = fabric.hosts() as u32;
    let perm = photonet::workload::derangement(n, &mut RngStreams::new(1).stream("perm"));
    let mut flows = (0..n).map(|i| Flow {
        id: i,
        src: i,
        dst: perm[i as usize],
        bytes,
        start: SimTime::ZERO,
    });
    let stop = StopRule {
        drain: true,
        ..StopRule::default()
    };
    let out = run(
        fabric.as_mut(),
        &mut flows,
        &stop,
        Recorder::new(None),
        &mut |_| true,
    );
    assert_eq!(out.recorder.completed(), n as u64);
    let s = fabric.stats();
    let (mut sum, mut fold) = (0u64, 0u64);
    for i in 0..n {
        let f = out.recorder.finish(i).unwrap().0;
        sum += f;
        fold = fold.rotate_left(7) ^ f;
    }
    (
        out.end_time.0,
        s["data_packets_delivered"] as u64,
        s["packet_hops"] as u64,
        s["drops"] as u64,
        s["timeouts"] as u64,
        s["retransmissions"] as u64,
        sum,
        fold,
    )
}

#[test]
fn pinned_permutations() {
    let cases = [
        (4, Routing::Spray, 1 << 20),
        (4, Routing::Ecmp, 1 << 20),
        (6, Routing::Spray, 1 << 20),
        (6, Routing::Ecmp, 1 << 20),
        (6, Routing::Adaptive, 1 << 20),
    ];
    let got: Vec<Pin> = cases
        .iter()
        .map(|&(k, r, b)| permutation(k, r, b))
        .collect();
    for (c, g) in cases.iter().zip(&got) {
        println!("{c:?} => {g:?}");
    }
    let want: [Pin; 5] = PINNED;
    assert_eq!(got, want);
}

/// Produced by the engine of commit 76204ca (before the speed work).
const PINNED: [Pin; 5] = [
    (
        141753600,
        4096,
        48128,
        0,
        0,
        0,
        2053049600,
        7953997552604172316,
    ),
    (
        809304320,
        4228,
        50083,
        175,
        1,
        289,
        5696736640,
        7937417369666304454,
    ),
    (
        167568000,
        13957,
        157244,
        0,
        0,
        133,
        6851608320,
        1240676149747252083,
    ),
    (
        917076480,
        13825,
        156645,
        420,
        1,
        416,
        16256176640,
        17008250387717452068,
    ),
    (
        649511040,
        14038,
        158983,
        215,
        1,
        412,
        10823624320,
        656010555253225463,
    ),
];

use super::*;
use crate::net::Router;
use crate::topology::Topology;
use crate::units::{ByteSize, Rate};

fn ctx(t: &Topology) -> BuildContext<'_> {
    BuildContext {
        topology: t,
        seed: 1,
        check_invariants: true,
    }
}

/// `racks` racks of `servers_per_rack` with `uplinks` each, the rest default.
fn topo(racks: u32, servers_per_rack: u32, uplinks: u32) -> Topology {
    Topology {
        racks,
        servers_per_rack,
        uplinks,
        ..Topology::default()
    }
}

/// Laying out `p` (a leaf-spine if `leaf`) on `t` fails on
/// `fat_tree.{key}` with a reason that says `why` and names the value.
fn rejects(p: &FatTreeParams, leaf: bool, t: &Topology, key: &str, why: &str) {
    let e = Clos::layout(p, leaf, &ctx(t))
        .and_then(|c| check_params(p, &c))
        .unwrap_err();
    assert!(
        e.key == format!("fat_tree.{key}") && e.reason.contains(why),
        "{e}"
    );
    assert!(!e.value.is_empty(), "{e}");
}

#[test]
fn k16_has_1024_hosts_and_the_classic_port_counts() {
    let p = FatTreeParams {
        k: 16,
        ..Default::default()
    };
    let t = Topology {
        uplink_rate: Rate::gbps(100),
        ..Topology::default()
    };
    let c = Clos::layout(&p, false, &ctx(&t)).unwrap();
    assert_eq!(
        (c.hosts(), c.pods, c.t, c.h, c.a, c.c),
        (1024, 16, 8, 8, 8, 8)
    );
    let g = c.graph();
    // 1024 NICs; 128 ToRs x 16; 128 aggs x 16; 64 cores x 16.
    assert_eq!(g.ports.len(), 1024 + 2048 + 2048 + 1024);
    // Every link's reverse points back at its source node.
    for (i, s) in g.ports.iter().enumerate() {
        let r = g.reverse[i] as usize;
        assert_eq!(g.reverse[r] as usize, i, "port {i}");
        let back = g.ports[r].to;
        assert!(back != s.to);
    }
    let l = Clos::layout(&p, true, &ctx(&t)).unwrap();
    assert_eq!((l.hosts(), l.pods, l.t, l.a, l.c), (128, 1, 16, 8, 0));
}

#[test]
fn up_down_routes_reach_every_host() {
    let t = topo(8, 3, 2);
    for leaf in [false, true] {
        let p = FatTreeParams {
            pod_racks: 4,
            ..Default::default()
        };
        let c = Clos::layout(&p, leaf, &ctx(&t)).unwrap();
        let g = c.graph();
        for src in 0..c.hosts() {
            for dst in 0..c.hosts() {
                if src == dst {
                    continue;
                }
                // Follow the first candidate and the last: both arrive in `hops` links.
                for pick_last in [false, true] {
                    let mut node = g.ports[src as usize].to;
                    let mut links = 1;
                    while node >= c.hosts() {
                        let cand = c.candidates(node, dst);
                        let port = cand.first + if pick_last { cand.count - 1 } else { 0 };
                        node = g.ports[port as usize].to;
                        links += 1;
                        assert!(links <= 6);
                    }
                    assert_eq!(
                        (node, links),
                        (dst, c.hops(src, dst)),
                        "{src}->{dst} leaf={leaf}"
                    );
                }
            }
        }
    }
}

#[test]
fn bad_input_names_key_value_and_reason() {
    let t = Topology::default();
    let check = |p: FatTreeParams, key: &str, why: &str| rejects(&p, false, &t, key, why);
    let d = FatTreeParams::default;
    check(FatTreeParams { k: 7, ..d() }, "k", "even");
    check(
        FatTreeParams {
            buffer: ByteSize(4000),
            ..d()
        },
        "buffer",
        "one MTU",
    );
    check(
        FatTreeParams {
            ecn_threshold: ByteSize(300_000),
            ..d()
        },
        "ecn_threshold",
        "above the buffer",
    );
    check(
        FatTreeParams {
            mtu: ByteSize(9200),
            ..d()
        },
        "mtu",
        "jumbo",
    );
    check(
        FatTreeParams {
            flow_control: FlowControlKind::Pfc,
            pfc_xoff: ByteSize(240_000),
            ..d()
        },
        "pfc_xoff",
        "round trip",
    );
    check(
        FatTreeParams {
            transport: TransportKind::Paced,
            ..d()
        },
        "transport",
        "pfc",
    );
    check(FatTreeParams { vcs: 2, ..d() }, "vcs", "credit");
    check(
        FatTreeParams {
            rto_init: SimTime::us(100),
            ..d()
        },
        "rto_init",
        "at least rto_min",
    );
    let prio = |t: Vec<u64>| FatTreeParams {
        priority: PriorityKind::Pias,
        priority_thresholds: t.into_iter().map(ByteSize).collect(),
        ..d()
    };
    check(prio(vec![]), "priority_thresholds", "1 to 7");
    check(prio((1..=8).collect()), "priority_thresholds", "1 to 7");
    check(prio(vec![10, 10]), "priority_thresholds", "increasing");
    check(prio(vec![0, 10]), "priority_thresholds", "above 0");
    check(
        FatTreeParams {
            flow_control: FlowControlKind::Credit,
            ..prio(vec![10])
        },
        "priority",
        "credit",
    );
    check(
        FatTreeParams {
            flow_control: FlowControlKind::Pfc,
            pfc_xoff: ByteSize(120_000),
            pfc_xon: ByteSize(50_000),
            ..prio(vec![10])
        },
        "pfc_xoff",
        "2 class(es)",
    );
    let credit = || FatTreeParams {
        flow_control: FlowControlKind::Credit,
        ..d()
    };
    check(FatTreeParams { vcs: 0, ..credit() }, "vcs", "1 to 16");
    check(
        FatTreeParams {
            vcs: 17,
            ..credit()
        },
        "vcs",
        "1 to 16",
    );
    check(
        FatTreeParams {
            vcs: 3,
            buffer: ByteSize(12_000),
            ecn_threshold: ByteSize(0),
            ..credit()
        },
        "vcs",
        "less than one frame",
    );
    check(
        FatTreeParams {
            pod_racks: 7,
            ..d()
        },
        "pod_racks",
        "divide",
    );
    check(
        FatTreeParams {
            k: 16,
            tor_oversubscription: 3,
            ..d()
        },
        "tor_oversubscription",
        "divide",
    );
}

#[test]
fn pfabric_refuses_what_it_cannot_model_naming_key_value_and_reason() {
    let t = topo(4, 2, 2);
    let pf = || FatTreeParams {
        transport: TransportKind::Pfabric,
        routing: Routing::Spray,
        ..FatTreeParams::default()
    };
    let check = |p: FatTreeParams, key: &str, why: &str| rejects(&p, true, &t, key, why);
    let ok = pf();
    assert!(Clos::layout(&ok, true, &ctx(&t))
        .and_then(|c| check_params(&ok, &c))
        .is_ok());
    check(
        FatTreeParams {
            flow_control: FlowControlKind::Pfc,
            ..pf()
        },
        "flow_control",
        "lossy",
    );
    check(
        FatTreeParams {
            routing: Routing::Ecmp,
            ..pf()
        },
        "routing",
        "spray",
    );
    check(
        FatTreeParams {
            spray_init: vec![1, 2, 3],
            ..pf()
        },
        "spray_init",
        "one counter per host (8)",
    );
    check(
        FatTreeParams {
            pfabric_rto: SimTime::ZERO,
            ..pf()
        },
        "pfabric_rto",
        "> 0",
    );
}

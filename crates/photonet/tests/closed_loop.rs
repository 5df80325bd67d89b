#![allow(clippy::field_reassign_with_default)] // tests tweak a default config key by key
//! Closed-loop (completion-driven) arrivals end to end: Baldur §V-A's
//! ping-pong, where a node sends its next packet the instant its partner's
//! packet reaches it.

use photonet::config::{Config, PatternKind, SizesConfig};
use photonet::fabric::ideal::IdealParams;
use photonet::run::{prepare, Paths, RunResult};
use photonet::units::{ByteSize, SimTime};

use crate::common;
use common::{loaded, one_host_per_rack, run_clean};

fn ping_pong(fabric: &str, hosts: u32, per_node: u64, group: Option<u32>) -> Config {
    let load = Config::default().workload.load;
    let sizes = SizesConfig::fixed(ByteSize(512));
    let mut c = loaded(fabric, load, sizes, hosts as u64 * per_node);
    one_host_per_rack(&mut c.topology, hosts, 1, 25);
    c.workload.pattern.kind = PatternKind::PingPong;
    c.workload.pattern.group = group;
    c.metrics.check_invariants = true;
    c
}

fn run(c: &Config) -> RunResult {
    run_clean(c, &Paths::default())
}

/// Per node, its flows' (start, finish) in the order it sent them.
fn by_source(r: &RunResult, hosts: u32) -> Vec<Vec<(u64, u64)>> {
    let mut v = vec![Vec::new(); hosts as usize];
    for i in 0..r.flows.len() {
        let fin = r.flows.finish(i).expect("every flow completes (drained)");
        v[r.flows.src[i] as usize].push((r.flows.start_ps[i], fin));
    }
    v
}

fn partner_of(r: &RunResult, hosts: u32) -> Vec<u32> {
    let mut p = vec![u32::MAX; hosts as usize];
    for i in 0..r.flows.len() {
        let (s, d) = (r.flows.src[i] as usize, r.flows.dst[i]);
        assert!(p[s] == u32::MAX || p[s] == d, "node {s} changed partner");
        p[s] = d;
    }
    p
}

#[test]
fn ideal_ping_pong_round_trips_are_hand_worked() {
    // Ideal network, finite NIC: a 512 B packet takes 512 x 8 / 25 Gbps =
    // 163.84 ns to send and arrives 200 ns after its last bit: 363.84 ns.
    // Both partners send at 0; each sends its j-th packet (from 0) when the
    // partner's (j-1)-th arrives, at j x 363.84 ns.
    let (hosts, per_node) = (8, 5);
    let mut c = ping_pong("ideal", hosts, per_node, None);
    c.edit(|p: &mut IdealParams| {
        p.latency = SimTime::ns(200);
        p.infinite_bandwidth = false;
    });
    let r = run(&c);
    assert_eq!(r.flows.len() as u64, hosts as u64 * per_node);
    let step = 163_840 + 200_000;
    for (h, sent) in by_source(&r, hosts).iter().enumerate() {
        assert_eq!(sent.len() as u64, per_node, "node {h}");
        for (j, &(start, fin)) in sent.iter().enumerate() {
            assert_eq!(start, j as u64 * step, "node {h} packet {j}");
            assert_eq!(fin - start, step, "node {h} packet {j}");
        }
    }
    let p = partner_of(&r, hosts);
    for h in 0..hosts {
        assert_ne!(p[h as usize], h);
        assert_eq!(p[p[h as usize] as usize], h, "pairs are mutual");
    }
    assert_eq!(r.summary.sim_time_us, (per_node * step) as f64 / 1e6);
    // Infinite bandwidth: the paper's ideal, 200 ns per packet.
    c.edit(|p: &mut IdealParams| p.infinite_bandwidth = true);
    let r = run(&c);
    for sent in by_source(&r, hosts) {
        for (j, &(start, fin)) in sent.iter().enumerate() {
            assert_eq!((start, fin - start), (j as u64 * 200_000, 200_000));
        }
    }
}

#[test]
fn ping_pong2_pairs_every_node_with_one_of_its_partner_group() {
    let (hosts, g) = (32, 4);
    let r = run(&ping_pong("ideal", hosts, 2, Some(g)));
    let p = partner_of(&r, hosts);
    for h in 0..hosts {
        let q = p[h as usize];
        assert_eq!(p[q as usize], h);
        assert_ne!(q / g, h / g, "partner in another group");
        // Every member of h's group is paired into the same partner group.
        for o in (h / g * g)..(h / g * g + g) {
            assert_eq!(p[o as usize] / g, q / g);
        }
    }
}

#[test]
fn baldur_ping_pong_releases_each_packet_when_the_partners_arrives() {
    // m = 1 on 64 nodes: ACKs and data collide, so some packets are dropped
    // and retransmitted; the closed loop must still release every node's
    // next packet exactly at the arrival of its partner's previous one.
    let (hosts, per_node) = (64u32, 20u64);
    let mut c = ping_pong("baldur", hosts, per_node, None);
    c.edit(|p: &mut photonet::fabric::baldur::BaldurParams| p.multiplicity = 1);
    let r = run(&c);
    let sent = by_source(&r, hosts);
    let p = partner_of(&r, hosts);
    // A node answers whichever of its partner's packets arrives: its j-th
    // packet goes out at the j-th arrival from the partner (a retransmitted
    // packet can arrive after a later one).
    let mut reordered = false;
    for h in 0..hosts as usize {
        assert_eq!(sent[h].len() as u64, per_node);
        assert_eq!(sent[h][0].0, 0);
        let partner = &sent[p[h] as usize];
        let mut arrivals: Vec<u64> = partner.iter().map(|x| x.1).collect();
        reordered |= arrivals.windows(2).any(|w| w[0] > w[1]);
        arrivals.sort_unstable();
        for j in 1..per_node as usize {
            assert_eq!(sent[h][j].0, arrivals[j - 1], "node {h} packet {j}");
        }
    }
    assert!(reordered, "a case where a retransmission arrives late");
    assert_eq!(r.summary.completed, hosts as u64 * per_node);
    assert!(
        r.summary.fabric_stats["retransmissions"] > 0.0,
        "a case with drops"
    );
}

#[test]
fn ping_pong_bad_input_names_key_value_and_reason() {
    let mut c = ping_pong("ideal", 6, 1, None);
    c.topology.racks = 7;
    let e = prepare(&c, &Paths::default()).err().unwrap().to_string();
    assert!(
        e.contains("workload.pattern.kind") && e.contains("even"),
        "{e}"
    );
    let c = ping_pong("ideal", 24, 1, Some(8)); // 3 groups: odd
    let e = prepare(&c, &Paths::default()).err().unwrap().to_string();
    assert!(
        e.contains("workload.pattern.group") && e.contains("8"),
        "{e}"
    );
    let mut c = ping_pong("ideal", 8, 1, None);
    c.workload.pattern.node = Some(1);
    let e = prepare(&c, &Paths::default()).err().unwrap().to_string();
    assert!(e.contains("workload.pattern.node"), "{e}");
}

#[test]
fn a_closed_loop_without_a_flow_count_runs_to_its_duration() {
    // 8 hosts, 363.84 ns per round trip, 10 us: rounds start at j x 363.84 ns
    // for j = 0..=27 (27 x 363.84 = 9,823.68 ns); the last round is in flight
    // when the run ends.
    let mut c = ping_pong("ideal", 8, 1, None);
    c.edit(|p: &mut IdealParams| p.infinite_bandwidth = false);
    c.stop.flows = None;
    c.stop.drain = false;
    c.stop.duration = Some(SimTime::us(10));
    let r = run(&c);
    assert_eq!(r.summary.flows, 8 * 28);
    assert_eq!(r.summary.completed, 8 * 27);
    assert_eq!(r.summary.sim_time_us, 10.0);
}

#[test]
fn a_drained_closed_loop_finishes_the_flows_in_flight_at_its_duration() {
    // As above, with drain: the 28 rounds released by 10 us all complete, the
    // last at 28 x 363.84 ns = 10,187.52 ns, and the 29th (released then,
    // after the duration) never starts. Before the fix the run stopped at the
    // duration with round 28 pending and ended at the last completion.
    let mut c = ping_pong("ideal", 8, 1, None);
    c.edit(|p: &mut IdealParams| p.infinite_bandwidth = false);
    c.stop.flows = None;
    c.stop.drain = true;
    c.stop.duration = Some(SimTime::us(10));
    let r = run(&c);
    assert_eq!(r.summary.flows, 8 * 28);
    assert_eq!(r.summary.completed, 8 * 28);
    assert_eq!(r.summary.sim_time_us, 10.18752);
}

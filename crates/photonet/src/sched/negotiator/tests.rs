use super::*;
use crate::rng::RngStreams;
use proptest::prelude::*;

/// `requests[d]` from a list of (src, dst) pairs.
fn reqs(n: usize, pairs: &[(u32, u32)]) -> Vec<Vec<Request>> {
    let mut r = vec![Vec::new(); n];
    for &(s, d) in pairs {
        r[d as usize].push(Request { src: s, weight: 0 });
    }
    for v in &mut r {
        v.sort();
    }
    r
}

fn g(src: u32, src_port: u32, dst: u32, dst_port: u32) -> Grant {
    Grant {
        src,
        src_port,
        dst,
        dst_port,
    }
}

/// The GRANTs of every destination on `m`, no pair withheld.
fn grants(
    net: &Network,
    r: &[Vec<Request>],
    m: &Matching,
    rings: &mut Rings,
    weighted: bool,
) -> Vec<Grant> {
    let (mut out, all) = (Vec::new(), &mut |_: u32, _: u32| true);
    grant(
        net,
        r,
        m,
        rings,
        weighted,
        all,
        &mut Scratch::default(),
        &mut out,
    );
    out
}

/// One unweighted round from an empty matching: its GRANTs and ACCEPTs.
fn one_round(net: &Network, r: &[Vec<Request>], rings: &mut Rings) -> (Vec<Grant>, Vec<Grant>) {
    let mut m = Matching::new(net);
    let gs = grants(net, r, &m, rings, false);
    let mut acc = Vec::new();
    accept(
        net,
        &gs,
        &mut m,
        rings,
        None,
        &mut Scratch::default(),
        &mut acc,
    );
    (gs, acc)
}

#[test]
fn parallel_a_lone_requester_gets_every_port_and_rings_move_past_the_granted() {
    // 4 ToRs x 2 ports, rings at 0. ToR 0 hears requests from 1, 2, 3; ToR 1 from 0.
    let net = Network::parallel(4, 2).unwrap();
    let mut rings = Rings::zero(&net);
    let r = reqs(4, &[(1, 0), (2, 0), (3, 0), (0, 1)]);
    let (gs, acc) = one_round(&net, &r, &mut rings);
    // ToR 0: port 0 -> 1, port 1 -> 2 (ring order from 0); pointer past 2.
    // ToR 1: both ports to its only requester 0 ("m/n ports per request").
    assert_eq!(
        gs,
        vec![g(1, 0, 0, 0), g(2, 1, 0, 1), g(0, 0, 1, 0), g(0, 1, 1, 1)]
    );
    assert_eq!(rings.grant, vec![3, 1, 0, 0]);
    // No source port got two grants: all accepted.
    assert_eq!(acc.len(), 4);
    assert_eq!(rings.accept[0], 2); // source 0 port 0 accepted ToR 1 -> pointer 2
}

#[test]
fn parallel_three_tors_one_port_two_epochs_by_hand() {
    // Everyone requests everyone; 3 ToRs, 1 port, all pointers at 0.
    let net = Network::parallel(3, 1).unwrap();
    let mut rings = Rings::zero(&net);
    let all = reqs(3, &[(1, 0), (2, 0), (0, 1), (2, 1), (0, 2), (1, 2)]);
    // Epoch 1: ToR 0 grants 1; ToR 1 grants 0; ToR 2 grants 0. Source 0 has
    // grants from 1 and 2 and accepts 1 (first from its pointer 0).
    let (gs, acc) = one_round(&net, &all, &mut rings);
    assert_eq!(gs, vec![g(1, 0, 0, 0), g(0, 0, 1, 0), g(0, 0, 2, 0)]);
    assert_eq!(acc, vec![g(0, 0, 1, 0), g(1, 0, 0, 0)]);
    assert_eq!(rings.grant, vec![2, 1, 1]);
    assert_eq!(rings.accept, vec![2, 1, 0]);
    // Epoch 2: ToR 0 (ptr 2) grants 2; ToR 1 (ptr 1) grants 2; ToR 2 (ptr 1)
    // grants 1. Source 2 (ptr 0) accepts ToR 0.
    let (gs, acc) = one_round(&net, &all, &mut rings);
    assert_eq!(gs, vec![g(2, 0, 0, 0), g(2, 0, 1, 0), g(1, 0, 2, 0)]);
    assert_eq!(acc, vec![g(1, 0, 2, 0), g(2, 0, 0, 0)]);
    // Match ratio 2/3 both epochs.
}

#[test]
fn thin_clos_grants_per_port_among_reachable_sources_only() {
    // 4 ToRs, 2 ports, W = 2: groups {0,1} and {2,3}. Source 0 reaches ToR 3
    // on its port 1 (group of 3), arriving on 3's port 0 (group of 0).
    let net = Network::thin_clos(4, 2, 2).unwrap();
    assert_eq!(net.dst_port(0, 3, 1), Some(0));
    assert_eq!(net.dst_port(0, 3, 0), None);
    assert_eq!(net.src_port(2, 3, 1), Some(1));
    let mut rings = Rings::zero(&net);
    let r = reqs(4, &[(0, 3), (1, 3), (2, 3)]);
    let (gs, acc) = one_round(&net, &r, &mut rings);
    // Port 0 of 3 hears {0, 1}: grants 0 (ring at 0). Port 1 hears {2, 3}: grants 2.
    assert_eq!(gs, vec![g(0, 1, 3, 0), g(2, 1, 3, 1)]);
    assert_eq!(acc.len(), 2);
    assert_eq!(rings.grant[3 * 2], 1);
    assert_eq!(rings.grant[3 * 2 + 1], 3);
    // Next epoch port 0 of 3 grants 1; port 1 wraps within its group to 2.
    let (gs, _) = one_round(&net, &r, &mut rings);
    assert_eq!(gs, vec![g(1, 1, 3, 0), g(2, 1, 3, 1)]);
}

#[test]
fn iterative_rounds_fill_ports_left_free() {
    // Parallel, 3 ToRs, 1 port, all-to-all: one round matches 2 of 3 ports
    // (above); a second round cannot add one (the free ports are 2's source
    // port and 2's... ) unless a requested pair is free on both sides.
    let net = Network::parallel(3, 1).unwrap();
    let all = reqs(3, &[(1, 0), (2, 0), (0, 1), (2, 1), (0, 2), (1, 2)]);
    let mut rings = Rings::zero(&net);
    let (_, _, m1) = negotiate(&net, &all, 1, &mut rings.clone());
    let (_, _, m3) = negotiate(&net, &all, 3, &mut rings);
    assert_eq!(m1.len(), 2);
    // After round 1: 0->1, 1->0. Free: source 2, destination 2. 2->2 is not a pair.
    assert_eq!(m3.len(), 2);
    // 4 ToRs x 1 port, requests 0->1, 2->1, 2->3: round 1 grants 1:0, 3:2 -> both
    // accepted by distinct sources; all matched.
    let net = Network::parallel(4, 1).unwrap();
    let r = reqs(4, &[(0, 1), (2, 1), (2, 3), (0, 3)]);
    let mut rings = Rings::zero(&net);
    // Both destinations grant 0 (first from pointer 0): 0 accepts 1; round 2:
    // 3 grants 2 and it is accepted.
    let (g1, a1, m1) = negotiate(&net, &r, 1, &mut rings.clone());
    assert_eq!((g1, a1, m1.len()), (2, 1, 1));
    let (_, _, m2) = negotiate(&net, &r, 2, &mut rings);
    assert_eq!(m2.len(), 2);
    assert_eq!(m2.src[2], 3);
}

#[test]
fn weighted_grants_order_requesters_by_weight() {
    let net = Network::parallel(4, 1).unwrap();
    let mut rings = Rings::zero(&net);
    let r = vec![
        vec![
            Request { src: 1, weight: 5 },
            Request { src: 2, weight: 9 },
            Request { src: 3, weight: 9 },
        ],
        vec![],
        vec![],
        vec![],
    ];
    let out = grants(&net, &r, &Matching::new(&net), &mut rings, true);
    // 2 and 3 tie on weight; ring order from 0 picks 2.
    assert_eq!(out, vec![g(2, 0, 0, 0)]);
}

#[test]
fn projector_requests_one_bundle_per_port_oldest_first() {
    let net = Network::parallel(8, 3).unwrap();
    let mut b = vec![(5, 1, 10), (2, 3, 50), (7, 1, 50)];
    let mut out = Vec::new();
    projector_requests(&net, 0, &mut b, true, &mut out);
    // Weight 50 first (2 before 7 on ties), then 5; 2's second bundle would come next.
    assert_eq!(out, vec![(0, 2), (1, 7), (2, 5)]);
    let mut reqs = vec![(0, 0, 4, 50), (1, 0, 4, 70), (3, 1, 4, 10)];
    let mut rings = Rings::zero(&net);
    let mut gs = Vec::new();
    projector_grant(&net, &mut reqs, &mut rings, &mut gs);
    assert_eq!(gs, vec![g(1, 0, 4, 0), g(3, 1, 4, 1)]);
}

/// Mean first-round accepts / grants under saturated all-to-all demand over
/// many random ring initialisations.
fn saturated_ratio(net: &Network, trials: u64) -> f64 {
    let n = net.tors();
    let mut pairs = Vec::new();
    for s in 0..n as u32 {
        for d in 0..n as u32 {
            if s != d {
                pairs.push((s, d));
            }
        }
    }
    let r = reqs(n, &pairs);
    let (mut gs, mut acc) = (0usize, 0usize);
    let streams = RngStreams::new(5);
    let mut rng = streams.stream("test.rings");
    for _ in 0..trials {
        let mut rings = Rings::random(net, &mut rng);
        let (g, a, _) = negotiate(net, &r, 1, &mut rings);
        gs += g;
        acc += a;
    }
    acc as f64 / gs as f64
}

#[test]
fn saturated_match_ratio_agrees_with_the_analysis() {
    // §3.2.2: a source port competes with the grants of the n' other ToRs that
    // can reach it, each granting it w.p. 1/n': E = 1 − (1 − 1/n')^n'. A ToR
    // never requests itself, so n' = N − 1 on the parallel network (the paper
    // writes n = N; at N = 128 the two differ by 0.0004) and n' = W on
    // thin-clos (the W sources of another group).
    for (n, s) in [(4usize, 2usize), (8, 4), (16, 8), (64, 8)] {
        let net = Network::parallel(n, s).unwrap();
        let got = saturated_ratio(&net, 4000 / n as u64 * 4);
        let want = expected_match_ratio(n - 1);
        assert!((got - want).abs() < 0.01, "parallel N={n}: {got} vs {want}");
    }
    // Thin-clos, 128 ToRs x 8 ports, W = 16 (the paper's: E[Y] = 0.644).
    let net = Network::thin_clos(128, 8, 16).unwrap();
    let got = saturated_ratio(&net, 60);
    // Grants to a port come from the W ToRs of one group; for the port facing
    // its own group only W − 1 (mixture: 7/8 of ports see W, 1/8 see W − 1).
    let want = (7.0 * expected_match_ratio(16) + expected_match_ratio(15)) / 8.0;
    assert!((got - want).abs() < 0.01, "thin-clos: {got} vs {want}");
    assert!((expected_match_ratio(128) - 0.634).abs() < 0.001);
    assert!((expected_match_ratio(16) - 0.644).abs() < 0.001);
}

fn arb_case() -> impl Strategy<Value = (bool, usize, usize, usize, Vec<bool>, u64, usize)> {
    (any::<bool>(), 2usize..12, 1usize..5, 0usize..3).prop_flat_map(|(par, n, s, extra)| {
        let w = n.div_ceil(s) + extra;
        (
            Just(par),
            Just(n),
            Just(s),
            Just(w),
            prop::collection::vec(any::<bool>(), n * n),
            0u64..1000,
            1usize..4,
        )
    })
}

proptest! {
    /// The result is a valid matching: every match a requested pair on a port
    /// pair the network connects; no source port and no destination port used
    /// twice (the bufferless AWGR needs one sender per receive port); every
    /// free destination port with an eligible requester granted; every source
    /// port with a grant accepts exactly one; and enough rounds reach a
    /// maximal matching.
    #[test]
    fn matching_is_valid_and_rounds_are_maximal((par, n, s, w, demand, seed, rounds) in arb_case()) {
        let net = if par { Network::parallel(n, s).unwrap() } else { Network::thin_clos(n, s, w).unwrap() };
        let mut pairs = Vec::new();
        for a in 0..n {
            for b in 0..n {
                if a != b && demand[a * n + b] {
                    pairs.push((a as u32, b as u32));
                }
            }
        }
        let r = reqs(n, &pairs);
        let mut rng = RngStreams::new(seed).stream("test");
        let mut rings = Rings::random(&net, &mut rng);
        let mut m = Matching::new(&net);
        let mut sc = Scratch::default();
        for round in 0..(rounds.max(if seed % 2 == 0 { n * s + 1 } else { 1 })) {
            let before = m.clone();
            let (mut gs, mut acc) = (Vec::new(), Vec::new());
            grant(&net, &r, &m, &mut rings, false, &mut |_, _| true, &mut sc, &mut gs);
            // Grants: requested pairs, connected ports, free on both sides, one per dst port.
            let mut dst_used = vec![false; n * s];
            let mut got = vec![0u32; n * s];
            for x in &gs {
                let (a, b, p, q) = (x.src as usize, x.dst as usize, x.src_port as usize, x.dst_port as usize);
                prop_assert!(demand[a * n + b] && a != b, "grant of an unrequested pair");
                prop_assert_eq!(net.dst_port(a, b, p), Some(q));
                prop_assert!(!dst_used[b * s + q], "destination port granted twice");
                dst_used[b * s + q] = true;
                prop_assert!(before.dst_free(b, q) && before.src_free(a, p));
                got[a * s + p] += 1;
            }
            // Grant maximality: a free destination port with an eligible requester is granted.
            for b in 0..n {
                for q in 0..s {
                    if !before.dst_free(b, q) { continue; }
                    let eligible = (0..n).any(|a| demand[a * n + b] && a != b
                        && net.src_port(a, b, q).is_some_and(|p| before.src_free(a, p)));
                    prop_assert_eq!(eligible, dst_used[b * s + q], "port {} of {} (round {})", q, b, round);
                }
            }
            accept(&net, &gs, &mut m, &mut rings, None, &mut sc, &mut acc);
            let mut src_used = vec![false; n * s];
            for x in &acc {
                let i = x.src as usize * s + x.src_port as usize;
                prop_assert!(!src_used[i], "source port accepted twice");
                src_used[i] = true;
                prop_assert!(gs.contains(x));
            }
            for i in 0..n * s {
                prop_assert_eq!(src_used[i], got[i] > 0, "a source port with grants accepts exactly one");
            }
            // The matching's two views agree.
            for a in 0..n {
                for p in 0..s {
                    let b = m.src[a * s + p];
                    if b != FREE {
                        let q = net.dst_port(a, b as usize, p).unwrap();
                        prop_assert_eq!(m.dst[b as usize * s + q], a as u32);
                    }
                }
            }
        }
        if seed % 2 == 0 {
            // Maximal: no requested pair has a free source port and the free
            // destination port it reaches.
            for a in 0..n {
                for b in 0..n {
                    if a == b || !demand[a * n + b] { continue; }
                    for p in 0..s {
                        if let Some(q) = net.dst_port(a, b, p) {
                            prop_assert!(!(m.src_free(a, p) && m.dst_free(b, q)), "not maximal: {}->{} on {}/{}", a, b, p, q);
                        }
                    }
                }
            }
        }
    }
}

/// Figure 16's situation on a hand-worked thin-clos of 8 ToRs, 2 ports,
/// 4-port AWGRs (groups {0..3} and {4..7}; a ToR reaches group x on its port
/// x). ToR 4 relays elephant data to ToR 3.
#[test]
fn relay_candidates_follow_the_hand_worked_case() {
    let port_to = |m: usize| m / 4;
    let mut out = Vec::new();
    // Port 0 of ToR 4 carries its direct data to 3 (loaded): 0, 1, 2 share
    // that link and are out; 5, 6, 7 are reached on the idle port 1.
    let loaded = [true, false];
    relay_candidates(8, 4, 3, &port_to, &loaded, &|_| false, 8, 0, &mut out);
    assert_eq!(out, vec![5, 6, 7]);
    // ToR 4 also requests 6 directly: 6 is out; the fan-out keeps the first
    // candidates from `start` on, cyclically.
    relay_candidates(8, 4, 3, &port_to, &loaded, &|m| m == 6, 1, 6, &mut out);
    assert_eq!(out, vec![7]);
    relay_candidates(8, 4, 3, &port_to, &loaded, &|m| m == 6, 2, 6, &mut out);
    assert_eq!(out, vec![7, 5]);
    // Heavy direct traffic on both ports: no relay at all (the scheme turns
    // itself off under load).
    relay_candidates(8, 4, 3, &port_to, &[true, true], &|_| false, 8, 0, &mut out);
    assert!(out.is_empty());
    // Neither the source nor the destination is ever an intermediate.
    relay_candidates(
        8,
        4,
        5,
        &port_to,
        &[false, false],
        &|_| false,
        8,
        0,
        &mut out,
    );
    assert_eq!(out, vec![0, 1, 2, 3, 6, 7]);
}

use super::*;
use proptest::prelude::*;

/// The oracle: the predefined links of `s` in slot `j`, port by port, as
/// `pre_dest` defines them on the parallel network, kept where the pair's
/// bit is set.
fn ports_by_port(bits: &[bool], n: usize, sp: usize, s: usize, j: usize, r: usize) -> u64 {
    let mut m = 0u64;
    for p in 0..sp {
        let o = 1 + j * sp + (p + r) % sp;
        if o >= n {
            continue;
        }
        let d = (s + o) % n;
        if bits[s * n + d] {
            m |= 1 << p;
        }
    }
    m
}

fn pack(bits: &[bool]) -> Vec<u64> {
    let mut v = vec![0u64; bits.len().div_ceil(64)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            v[i / 64] |= 1 << (i % 64);
        }
    }
    v
}

#[test]
fn pre_ports_hand_worked() {
    // N = 5, S = 2: slot 0 reaches offsets 1, 2; slot 1 offsets 3, 4.
    // Source 3 has data for ToRs 4 (offset 1) and 1 (offset 3).
    let n = 5;
    let mut bits = vec![false; n * n];
    bits[3 * n + 4] = true;
    bits[3 * n + 1] = true;
    let v = pack(&bits);
    // Slot 0, no rotation: port 0 → offset 1 (ToR 4), port 1 → ToR 0.
    assert_eq!(pre_ports(&v, n, 2, 3, 0, 0), 0b01);
    // Rotated by 1: port 0 → offset 2 (ToR 0), port 1 → offset 1 (ToR 4).
    assert_eq!(pre_ports(&v, n, 2, 3, 0, 1), 0b10);
    // Slot 1: port 0 → offset 3 (ToR 1), port 1 → offset 4 (ToR 2).
    assert_eq!(pre_ports(&v, n, 2, 3, 1, 0), 0b01);
    // Slot 2 reaches no ToR (offsets 5, 6 ≥ N).
    assert_eq!(pre_ports(&v, n, 2, 3, 2, 0), 0);
}

proptest! {
    /// The bit-extracted ports equal the port-by-port links, for every
    /// source, slot and rotation (rows crossing words, wrapping past the
    /// last ToR, a last slot with fewer offsets than ports, S up to 64).
    #[test]
    fn pre_ports_equal_the_port_by_port_links(
        n in 2usize..140,
        sp in 1usize..=64,
        seed in any::<u64>(),
        density in 0u32..=100,
    ) {
        let mut x = seed | 1;
        let bits: Vec<bool> = (0..n * n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 100) < density as u64
            })
            .collect();
        let v = pack(&bits);
        let slots = (n - 1).div_ceil(sp) + 1;
        for s in 0..n {
            for j in 0..slots {
                for r in 0..sp {
                    prop_assert_eq!(
                        pre_ports(&v, n, sp, s, j, r),
                        ports_by_port(&bits, n, sp, s, j, r),
                        "s {} j {} r {}", s, j, r
                    );
                }
            }
        }
    }
}

/// A pair 0 → 1 of two ToRs with PIAS classes 0 and 1 holding, in order:
/// flow 0's 300 B and flow 1's 200 B in class 0, flow 2's 800 B in class 1.
fn three_segments() -> (SourceQueues, Flows) {
    let mut q = SourceQueues::new(2, 2, false, false);
    let mut flows = Flows::default();
    for (flow, prio, left) in [(0u32, 0usize, 300u64), (1, 0, 200), (2, 1, 800)] {
        flows.0.push(FlowSt {
            dst_ep: 1,
            unsent: 1,
            bytes: left,
            start: SimTime::ZERO,
            tor_done: SimTime::MAX,
        });
        let seg = Seg {
            flow,
            ep: 1,
            left,
            since: SimTime::ZERO,
        };
        q.push_seg(0, 1, prio, seg, false);
    }
    (q, flows)
}

/// (flow, bytes, packets, last) of each piece.
fn pieces(v: &[Pkt]) -> Vec<(u32, u64, u64, bool)> {
    v.iter()
        .map(|p| (p.flow, p.bytes, p.packets, p.last))
        .collect()
}

#[test]
fn packed_packets_fill_from_several_segments() {
    // 595 B packets (a predefined slot's payload), one at a time.
    let mut out = Vec::new();
    // Within one class: [300 + 200] (class 0 is then empty), [595], [205].
    let (mut q, mut f) = three_segments();
    let mut got = Vec::new();
    while q.take_packed((0, 1), (595, 1), false, &mut f, &mut out) > 0 {
        got.push(pieces(&out));
    }
    assert_eq!(
        got,
        vec![
            vec![(0, 300, 1, true), (1, 200, 0, true)],
            vec![(2, 595, 1, false)],
            vec![(2, 205, 1, true)],
        ]
    );
    // Across classes: [300 + 200 + 95], [595], [110].
    let (mut q, mut f) = three_segments();
    let mut got = Vec::new();
    while q.take_packed((0, 1), (595, 1), true, &mut f, &mut out) > 0 {
        got.push(pieces(&out));
    }
    assert_eq!(
        got,
        vec![
            vec![(0, 300, 1, true), (1, 200, 0, true), (2, 95, 0, false)],
            vec![(2, 595, 1, false)],
            vec![(2, 110, 1, true)],
        ]
    );
    assert_eq!((q.queued(), q.bytes(0, 1), q.active(0).len()), (0, 0, 0));
    q.check(0).unwrap();
}

#[test]
fn packed_takes_of_several_packets_are_the_byte_stream() {
    // Three 1,115 B packets at once (a pair's three ports in a scheduled
    // slot). Across classes: 1,115 of the 1,300 B, then 185: two packets.
    let mut out = Vec::new();
    let (mut q, mut f) = three_segments();
    assert_eq!(q.take_packed((0, 1), (1115, 3), true, &mut f, &mut out), 2);
    assert_eq!(
        pieces(&out),
        vec![
            (0, 300, 1, true),
            (1, 200, 0, true),
            (2, 615, 0, false),
            (2, 185, 1, true)
        ]
    );
    // Within one class: class 0's 500 B, then class 1's 800 B: two packets.
    let (mut q, mut f) = three_segments();
    assert_eq!(q.take_packed((0, 1), (1115, 3), false, &mut f, &mut out), 2);
    assert_eq!(
        pieces(&out),
        vec![(0, 300, 1, true), (1, 200, 0, true), (2, 800, 1, true)]
    );
    // Limited to one packet: only the first 1,115 B leave; the rest waits.
    let (mut q, mut f) = three_segments();
    assert_eq!(q.take_packed((0, 1), (1115, 1), true, &mut f, &mut out), 1);
    assert_eq!(q.bytes(0, 1), 185);
    q.check(0).unwrap();
    // Without packing the same queue needs three packets of 300, 200, 800.
    let (mut q, mut f) = three_segments();
    let cut: Vec<u64> =
        std::iter::from_fn(|| q.take(0, 1, 1115, 1, &mut f).map(|p| p.bytes)).collect();
    assert_eq!(cut, vec![300, 200, 800]);
}

#[test]
fn fresh_requests_wait_until_their_first_matching() {
    use super::stats::Waits;
    // Two ToRs' worth of pairs, a pipeline of 2 epochs (REQUEST at e,
    // data at e + 2).
    let mut w = Waits::new(3, 2);
    // Pair 5 requests at epoch 10; the process of epoch 10 matches it for
    // data epoch 12: a wait of 2.
    w.requested(5, 10);
    w.requests_done(10);
    // It keeps requesting at 11 (not fresh) and is matched again: no new wait.
    w.requested(5, 11);
    w.requests_done(11);
    w.matched(5, 10, 12);
    w.matched(5, 11, 13);
    assert_eq!(w.request_to_data, vec![2]);
    // A fresh request at 20 that an older process (started at 19) answers
    // stays open; the process of 21 answers it for data epoch 23: 3.
    w.requested(5, 20);
    w.requests_done(20);
    w.matched(5, 19, 21);
    w.requested(5, 21);
    w.requests_done(21);
    w.matched(5, 21, 23);
    assert_eq!(w.request_to_data, vec![2, 3]);
    // Pair 7 requests once at 30 and never again: open while a process
    // could still answer it (epochs 31, 32), unserved from epoch 33.
    w.requested(7, 30);
    for e in 30..=32 {
        w.requests_done(e);
    }
    assert_eq!(w.drained_unserved, 0);
    w.requests_done(33);
    assert_eq!(w.drained_unserved, 1);
    w.matched(7, 30, 32);
    assert_eq!(w.request_to_data, vec![2, 3]);
}

/// The ProjecToR tests' network: 4 ToRs of 3 ports at 100 Gbps, 3
/// scheduled slots.
fn projector_test_layout() -> super::params::NegotiatorLayout {
    let topo = crate::topology::Topology {
        racks: 4,
        servers_per_rack: 1,
        uplinks: 3,
        uplink_rate: crate::units::Rate::gbps(100),
        server_rate: None,
    };
    let p = NegotiatorParams {
        scheduled_slots: 3,
        ..NegotiatorParams::default()
    };
    p.layout(&topo, false).unwrap()
}

#[test]
fn projector_tor_bundles_ask_for_fewer_ports_than_port_bundles_in_either_order() {
    use super::matching::{projector_bundle_bytes, projector_bundles};
    use crate::sched::negotiator::projector_requests;
    // 4 ToRs of 3 ports at 100 Gbps, 3 scheduled slots. A scheduled slot of
    // 90 ns carries 1,125 B, 1,115 B after the 10 B header: one port's phase
    // is 3 × 1,115 = 3,345 B, a ToR's 3 × 3,345 = 10,035 B. A predefined slot
    // carries (60 − 10) ns = 625 B − 30 B header = 595 B, so a queue is
    // requested above 3 × 595 = 1,785 B.
    let l = projector_test_layout();
    let port = projector_bundle_bytes(&l, ProjectorBundle::Port);
    let tor = projector_bundle_bytes(&l, ProjectorBundle::Tor);
    assert_eq!((port, tor), (3_345, 10_035));
    // Source 0 queues 7,000 B for ToR 1 (since 0), 2,000 B for ToR 2 (since
    // 1 µs) and 1,000 B for ToR 3 (below the threshold: no request).
    let mut q = SourceQueues::new(4, 3, false, false);
    for (flow, d, left, since) in [
        (0u32, 1usize, 7_000u64, 0u64),
        (1, 2, 2_000, 1),
        (2, 3, 1_000, 2),
    ] {
        let seg = Seg {
            flow,
            ep: d as u32,
            left,
            since: SimTime::us(since),
        };
        q.push_seg(0, d, 2, seg, false);
    }
    let threshold = 3 * l.pre_payload;
    assert_eq!(threshold, 1_785);
    let now = SimTime::us(10);
    let ask_in = |bundle: u64, interleave: bool| {
        let (mut b, mut out) = (Vec::new(), Vec::new());
        projector_bundles(&q, 0, (threshold, bundle), now, &mut b);
        let counts: Vec<(u32, u32)> = b.iter().map(|x| (x.0, x.1)).collect();
        projector_requests(&l.net, 0, &mut b, interleave, &mut out);
        (counts, out)
    };
    let ask = |bundle: u64| ask_in(bundle, true);
    // Port bundles: ToR 1 ⌈7,000 / 3,345⌉ = 3, ToR 2 ⌈2,000 / 3,345⌉ = 1.
    // Oldest first (ToR 1 waited 10 µs, ToR 2 9 µs), one bundle each: port 0
    // → 1, port 1 → 2; then ToR 1's second bundle takes port 2.
    assert_eq!(
        ask(port),
        (vec![(1, 3), (2, 1)], vec![(0, 1), (1, 2), (2, 1)])
    );
    // ToR bundles: ⌈7,000 / 10,035⌉ = 1 and ⌈2,000 / 10,035⌉ = 1: ports 0
    // and 1 are asked for, port 2 is not (ToR 1 has no second bundle).
    assert_eq!(ask(tor), (vec![(1, 1), (2, 1)], vec![(0, 1), (1, 2)]));
    // Strictly by waiting delay (`by_delay`), ToR 1's three port bundles,
    // which share its 10 µs, take all three ports and ToR 2 asks for none;
    // with ToR bundles ToR 1 has one, so ToR 2 still gets port 1.
    assert_eq!(ask_in(port, false).1, vec![(0, 1), (1, 1), (2, 1)]);
    assert_eq!(ask_in(tor, false).1, vec![(0, 1), (1, 2)]);
}

#[test]
fn projector_per_bundle_age_orders_a_pairs_later_bundles_by_their_own_data() {
    use super::matching::{projector_bundle_ages, projector_bundle_bytes, projector_bundles};
    use crate::sched::negotiator::projector_requests;
    // The layout of the test above: 4 ToRs of 3 ports, a port bundle of
    // 3 × 1,115 = 3,345 B, a ToR bundle of 10,035 B, threshold 1,785 B.
    let l = projector_test_layout();
    let port = projector_bundle_bytes(&l, ProjectorBundle::Port);
    let tor = projector_bundle_bytes(&l, ProjectorBundle::Tor);
    let threshold = 3 * l.pre_payload;
    // Source 0 queues for ToR 1 4,000 B at priority 2 (since 0 µs), then
    // 3,000 B at priority 0 (since 8 µs: sent first, but younger); for
    // ToR 2 2,000 B (since 1 µs).
    let mut q = SourceQueues::new(4, 3, false, false);
    for (flow, d, prio, left, since) in [
        (0u32, 1usize, 2usize, 4_000u64, 0u64),
        (1, 1, 0, 3_000, 8),
        (2, 2, 2, 2_000, 1),
    ] {
        let seg = Seg {
            flow,
            ep: d as u32,
            left,
            since: SimTime::us(since),
        };
        q.push_seg(0, d, prio, seg, false);
    }
    let now = SimTime::us(10);
    let us = |x: u64| SimTime::us(x).0;
    let mut segs = Vec::new();
    let ages = |bundle: u64, segs: &mut Vec<(SimTime, u64)>| {
        let mut b = Vec::new();
        projector_bundle_ages(&q, 0, (threshold, bundle), (now, 3), segs, &mut b);
        b
    };
    // Port bundles of ToR 1 (7,000 B, ⌈7,000 / 3,345⌉ = 3) in arrival order:
    // bytes 0-3,999 came at 0 µs, 4,000-6,999 at 8 µs. Bundle 0 starts at
    // byte 0 (age 10 − 0 = 10 µs), bundle 1 at 3,345 < 4,000 (10 µs),
    // bundle 2 at 6,690 ≥ 4,000 (10 − 8 = 2 µs). ToR 2: one bundle, 9 µs.
    let mut b = ages(port, &mut segs);
    assert_eq!(
        b,
        vec![(1, 1, us(10)), (1, 1, us(10)), (1, 1, us(2)), (2, 1, us(9))]
    );
    // By age: 10 (ToR 1), 10 (ToR 1), 9 (ToR 2), 2 (ToR 1): ports 0 and 1 →
    // ToR 1, port 2 → ToR 2; ToR 1's 2 µs bundle gets none.
    let mut out = Vec::new();
    projector_requests(&l.net, 0, &mut b, false, &mut out);
    assert_eq!(out, vec![(0, 1), (1, 1), (2, 2)]);
    // The other two orders on the same queues: interleaved 1, 2, 1; by_delay
    // (ToR 1's three bundles all aged 10 µs) 1, 1, 1.
    let other = |interleave: bool| {
        let (mut b, mut out) = (Vec::new(), Vec::new());
        projector_bundles(&q, 0, (threshold, port), now, &mut b);
        projector_requests(&l.net, 0, &mut b, interleave, &mut out);
        out
    };
    assert_eq!(other(true), vec![(0, 1), (1, 2), (2, 1)]);
    assert_eq!(other(false), vec![(0, 1), (1, 1), (2, 1)]);
    // ToR bundles: ⌈7,000 / 10,035⌉ = 1 (10 µs) and 1 (9 µs): ports 0 → 1,
    // 1 → 2, as in every order.
    let mut b = ages(tor, &mut segs);
    assert_eq!(b, vec![(1, 1, us(10)), (2, 1, us(9))]);
    out.clear();
    projector_requests(&l.net, 0, &mut b, false, &mut out);
    assert_eq!(out, vec![(0, 1), (1, 2)]);
    // At most `ports` bundles per pair: with 2 ports ToR 1 lists two.
    let mut b = Vec::new();
    projector_bundle_ages(&q, 0, (threshold, port), (now, 2), &mut segs, &mut b);
    assert_eq!(b, vec![(1, 1, us(10)), (1, 1, us(10)), (2, 1, us(9))]);
}

/// The arrival of the byte at each offset of `offsets` when `segs` are laid
/// out in the order given (the oracle below sorts them all first).
fn arrival_at(segs: &[(SimTime, u64)], offsets: &[u64]) -> Vec<SimTime> {
    offsets
        .iter()
        .map(|&o| {
            let mut end = 0;
            segs.iter()
                .find(|x| {
                    end += x.1;
                    end > o
                })
                .expect("offset inside the queue")
                .0
        })
        .collect()
}

proptest! {
    /// `oldest_first` (ProjecToR's per-bundle ages) against sorting every
    /// segment: the same arrival at each bundle's first byte, ties included.
    #[test]
    fn oldest_first_ages_bundles_as_a_full_sort_does(
        raw in prop::collection::vec((0u64..40, 1u64..5_000), 1..300),
        bundle in 1u64..40_000,
        ports in 1u64..9,
    ) {
        use super::matching::oldest_first;
        let segs: Vec<(SimTime, u64)> = raw.iter().map(|&(t, b)| (SimTime::ns(t), b)).collect();
        let total: u64 = segs.iter().map(|x| x.1).sum();
        let count = total.div_ceil(bundle).min(ports);
        let offsets: Vec<u64> = (0..count).map(|k| k * bundle).collect();
        let mut sorted = segs.clone();
        sorted.sort_by_key(|x| x.0);
        let mut work = segs.clone();
        let head = oldest_first(&mut work, (count - 1) * bundle + 1);
        prop_assert!(head.windows(2).all(|w| w[0].0 <= w[1].0));
        prop_assert_eq!(arrival_at(head, &offsets), arrival_at(&sorted, &offsets));
    }
}

use super::stages::free_mask;
use super::*;
use crate::error::ConfigError;
use crate::fabric::registry::BuildContext;
use crate::topology::Topology;
use proptest::prelude::*;
use rand::Rng;

fn topo(n: u32, gbps: u64) -> Topology {
    Topology {
        racks: n,
        servers_per_rack: 1,
        uplinks: 1,
        uplink_rate: Rate::gbps(gbps),
        server_rate: None,
    }
}

fn net(n: u32, p: &BaldurParams, seed: u64) -> Baldur {
    let t = topo(n, 25);
    let ctx = BuildContext {
        topology: &t,
        seed,
        check_invariants: true,
    };
    let l = Layout::new(p, &ctx).unwrap();
    Baldur::new(p, l, &RngStreams::new(seed)).with_checks(true)
}

fn drain(net: &mut Baldur, flows: &[Flow]) -> Recorder {
    let mut rec = Recorder::new(None);
    // Every call while little is in flight; then every 64th (the check
    // walks every outstanding packet).
    let check = |step: u64| step < 2_000 || step.is_multiple_of(64);
    crate::fabric::drive(net, flows, &mut rec, SimTime::MAX, check);
    net.check_invariants().unwrap();
    rec
}

#[test]
fn a_lone_packet_takes_exactly_links_plus_switches_plus_serialisation() {
    // 8 nodes = 3 stages, m = 1 (0.14 ns switches), 25 Gbps (40 ps/bit).
    // Wire: 512 B = 4,096 bits + 3 routing bits x 3 bit periods = 4,105
    // bits = 164,200 ps. Head: 100 ns + 3 x 140 ps + 100 ns = 200,420 ps.
    let p = BaldurParams {
        multiplicity: 1,
        ..Default::default()
    };
    let mut b = net(8, &p, 1);
    let rec = drain(&mut b, &[Flow::new(0, 6, 1, 512, SimTime::ns(10))]);
    assert_eq!(
        rec.finish(0),
        Some(SimTime::ns(10) + SimTime(164_200 + 200_420))
    );
    assert_eq!(rec.delivered(0), 512);
    let s = b.stats();
    assert_eq!(s["drop_rate"], 0.0);
    assert_eq!(s["retransmissions"], 0.0);
    // The ACK came back and emptied the retransmission buffer.
    assert_eq!(s["retx_buffer_peak_bytes"], 512.0);
    assert_eq!(b.nodes[6].buffer_bytes, 0);
    assert_eq!(b.out.live(), 0);
}

#[test]
fn the_backlog_counts_packets_waiting_to_be_sent_as_well_as_un_acked_ones() {
    // Eight 512 B packets arrive at node 0 at once: the backlog (waiting
    // plus un-ACKed) peaks at 8 x 512 = 4,096 B when the last arrives. The
    // retransmission buffer holds only what has been sent and not ACKed:
    // packet k starts at k x 164.2 ns (plus the gap), packet 0's ACK is back
    // at 164.2 + 200.42 (head) + 200.42 + ~5.5 (the ACK) ~ 570.5 ns, after
    // packet 3 starts (~493 ns) and before packet 4 (~657 ns): four at once.
    let p = BaldurParams {
        multiplicity: 1,
        ..Default::default()
    };
    let mut b = net(8, &p, 1);
    let flows: Vec<Flow> = (0..8)
        .map(|i| Flow::new(i, 0, 6, 512, SimTime::ZERO))
        .collect();
    let rec = drain(&mut b, &flows);
    assert!((0..8).all(|i| rec.finish(i).is_some()));
    let s = b.stats();
    assert_eq!(s["backlog_peak_bytes"], 4_096.0);
    assert_eq!(s["retx_buffer_peak_bytes"], 2_048.0);
    // Drained: nothing waits, nothing is un-ACKed.
    assert!(b.queued_bytes.iter().all(|&q| q == 0));
    assert_eq!(b.nodes[0].buffer_bytes, 0);
}

#[test]
fn with_m1_the_route_is_the_unique_butterfly_path_to_the_destination() {
    let mut rng = RngStreams::new(5).stream("w");
    for k in 1..=6u32 {
        let n = 1u32 << k;
        let mut bf = Butterfly::new(k, 1, Some(&mut rng));
        for src in 0..n {
            for dst in 0..n {
                let mut path = Vec::new();
                // Far apart in time: the network is idle for each.
                let t0 = SimTime::us(1 + (src * n + dst) as u64);
                let fate = bf.traverse(src, dst, t0, SimTime(1), SimTime(10), |s, port, _, _| {
                    path.push((s, port))
                });
                assert_eq!(fate, Fate::Delivered);
                assert_eq!(path.len(), k as usize);
                assert_eq!(path[0].1 / 2, (src / 2) as usize, "enters at its switch");
                for w in path.windows(2) {
                    let (s, port) = w[0];
                    assert_eq!(bf.next_switch(s, port) as usize, w[1].1 / 2);
                }
                // The last output (switch j, direction b) is node 2j + b.
                assert_eq!(path[k as usize - 1].1 as u32, dst);
            }
        }
    }
}

/// One packet per node at the same instant, destinations a random
/// permutation: the fraction dropped (§IV-E's one-shot analysis).
fn one_shot_drops(k: u32, m: u32, trials: u32) -> f64 {
    let n = 1u32 << k;
    let streams = RngStreams::new(9);
    let mut rng = streams.stream("perm");
    let mut wiring = streams.stream("wiring");
    let mut dropped = 0u64;
    for _ in 0..trials {
        let mut bf = Butterfly::new(k, m, Some(&mut wiring));
        let mut perm: Vec<u32> = (0..n).collect();
        for i in (1..n as usize).rev() {
            perm.swap(i, rng.random_range(0..=i));
        }
        for src in 0..n {
            let fate = bf.traverse(
                src,
                perm[src as usize],
                SimTime(0),
                SimTime(1),
                SimTime(10),
                |_, _, _, _| {},
            );
            dropped += matches!(fate, Fate::Dropped { .. }) as u64;
        }
    }
    dropped as f64 / (trials as u64 * n as u64) as f64
}

#[test]
fn one_shot_drops_fall_monotonically_with_multiplicity() {
    let rates: Vec<f64> = (1..=5).map(|m| one_shot_drops(6, m, 200)).collect();
    assert!(rates[0] > 0.2, "{rates:?}");
    for w in rates.windows(2) {
        assert!(w[1] <= w[0], "{rates:?}");
    }
    assert!(rates[4] < 0.01, "{rates:?}");
}

/// Two nodes to one destination at the same instant, m = 1: the second
/// packet loses the last switch's only output towards the destination.
#[test]
fn a_dropped_packet_is_retransmitted_and_delivered_exactly_once() {
    let p = BaldurParams {
        multiplicity: 1,
        random_wiring: false,
        ..Default::default()
    };
    let mut b = net(8, &p, 1);
    let t = SimTime::ns(10);
    let rec = drain(
        &mut b,
        &[Flow::new(0, 0, 5, 512, t), Flow::new(1, 1, 5, 512, t)],
    );
    let s = b.stats();
    assert_eq!(s["data_dropped"], 1.0, "{s:?}");
    assert_eq!(s["retransmissions"], 1.0, "{s:?}");
    let lone = SimTime(164_200 + 200_420);
    assert_eq!(rec.finish(0), Some(t + lone));
    // Node 1 resends after the 2 us timeout plus its backoff draw
    // (0 or 1 slot of 200 ns), and the copy goes through.
    let f1 = rec.finish(1).unwrap();
    assert!(
        f1 == t + p.timeout + lone || f1 == t + p.timeout + p.backoff_slot + lone,
        "{f1}"
    );
    assert_eq!((rec.delivered(0), rec.delivered(1)), (512, 512));
    assert_eq!(rec.violation_count(), 0);
    assert_eq!(b.out.live(), 0);
}

#[test]
fn spurious_retransmissions_are_delivered_once_and_counted_as_duplicates() {
    // A timeout shorter than the round trip: every packet is resent
    // (backoff 0 or 1 slots) before its ACK arrives, several times.
    let p = BaldurParams {
        timeout: SimTime::ns(150),
        backoff_slot: SimTime::ns(10),
        backoff_cap: 2,
        ..Default::default()
    };
    let mut b = net(16, &p, 3);
    let flows: Vec<Flow> = (0..16)
        .map(|i| Flow::new(i, i, (i * 5 + 3) % 16, 3_000, SimTime::ns(i as u64 * 37)))
        .collect();
    let rec = drain(&mut b, &flows);
    assert_eq!(rec.violation_count(), 0, "{:?}", rec.violations());
    for f in &flows {
        assert_eq!(rec.delivered(f.id), 3_000);
        assert!(rec.finish(f.id).is_some());
    }
    let s = b.stats();
    assert!(s["retransmissions"] > 16.0, "{s:?}");
    assert!(s["duplicates_received"] > 0.0, "{s:?}");
    assert_eq!(b.out.live(), 0);
}

fn loaded(m: u32, seed: u64) -> (FabricStats, Recorder) {
    // 64 nodes, a random permutation at load 0.7 of 512 B packets
    // (exponential gaps), 200 packets per node.
    let p = BaldurParams {
        multiplicity: m,
        ..Default::default()
    };
    let mut b = net(64, &p, seed);
    let streams = RngStreams::new(seed);
    let mut r = streams.stream("load");
    let perm = crate::workload::derangement(64, &mut r);
    let gap = 512.0 * 8.0 / (0.7 * 25e9) / 64.0;
    let mut t = 0.0;
    let flows: Vec<Flow> = (0..64 * 200)
        .map(|i| {
            t += -crate::rng::open_unit(&mut r).ln() * gap;
            let src = r.random_range(0..64);
            Flow::new(i, src, perm[src as usize], 512, SimTime((t * 1e12) as u64))
        })
        .collect();
    let rec = drain(&mut b, &flows);
    assert_eq!(rec.violation_count(), 0);
    for f in &flows {
        assert_eq!(rec.delivered(f.id), 512);
    }
    (b.stats(), rec)
}

#[test]
fn under_load_more_paths_drop_less_and_everything_arrives_once() {
    let (s1, _) = loaded(1, 4);
    let (s4, _) = loaded(4, 4);
    assert!(s1["drop_rate"] > 0.05, "{s1:?}");
    assert!(
        s4["drop_rate"] < s1["drop_rate"] / 10.0,
        "m=1 {s1:?} m=4 {s4:?}"
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another_wiring() {
    let (a, ra) = loaded(2, 7);
    let (b, rb) = loaded(2, 7);
    assert_eq!(a, b);
    let fa: Vec<_> = (0..ra.flows() as u32).map(|i| ra.finish(i)).collect();
    let fb: Vec<_> = (0..rb.flows() as u32).map(|i| rb.finish(i)).collect();
    assert_eq!(fa, fb);
    let mut w1 = RngStreams::new(1).stream("baldur.wiring");
    let mut w2 = RngStreams::new(2).stream("baldur.wiring");
    let wiring = |b: Butterfly| -> Vec<u32> {
        (0..4)
            .flat_map(|s| (0..64).map(move |p| (s, p)))
            .map(|(s, p)| b.next_switch(s, p))
            .collect()
    };
    assert_ne!(
        wiring(Butterfly::new(5, 2, Some(&mut w1))),
        wiring(Butterfly::new(5, 2, Some(&mut w2)))
    );
}

#[test]
fn bad_input_names_key_value_and_reason() {
    let ctx = |t: &Topology| -> Result<Layout, ConfigError> {
        let c = BuildContext {
            topology: t,
            seed: 1,
            check_invariants: false,
        };
        Layout::new(&BaldurParams::default(), &c)
    };
    let e = ctx(&topo(12, 25)).unwrap_err();
    assert_eq!(e.key, "topology.racks");
    assert!(e.reason.contains("power of two"), "{e}");
    let t = topo(16, 25);
    let c = BuildContext {
        topology: &t,
        seed: 1,
        check_invariants: false,
    };
    for (m, key) in [
        (0, "baldur.multiplicity"),
        (65, "baldur.multiplicity"),
        (6, "baldur.switch_latency"),
    ] {
        let p = BaldurParams {
            multiplicity: m,
            ..Default::default()
        };
        assert_eq!(Layout::new(&p, &c).unwrap_err().key, key);
    }
    let p = BaldurParams {
        round_up_nodes: true,
        ..Default::default()
    };
    let t12 = topo(12, 25);
    let c12 = BuildContext {
        topology: &t12,
        seed: 1,
        check_invariants: false,
    };
    assert_eq!(Layout::new(&p, &c12).unwrap().stages, 4);
}

#[test]
fn deferred_batched_switching_gives_the_same_run_as_immediate() {
    // `check` pushes every packet through at once; without it packets
    // wait and go through in batches. Same seed: same run.
    for m in [1, 2, 4] {
        let p = BaldurParams {
            multiplicity: m,
            ..Default::default()
        };
        let t = topo(64, 25);
        let run = |check: bool| {
            let ctx = BuildContext {
                topology: &t,
                seed: 11,
                check_invariants: check,
            };
            let l = Layout::new(&p, &ctx).unwrap();
            let mut b = Baldur::new(&p, l, &RngStreams::new(11)).with_checks(check);
            let mut r = RngStreams::new(11).stream("load");
            let perm = crate::workload::derangement(64, &mut r);
            let mut t = 0u64;
            let flows: Vec<Flow> = (0..64 * 100)
                .map(|i| {
                    t += r.random_range(0..20_000);
                    let src = r.random_range(0..64);
                    // Mostly one packet, some several (short last ones).
                    let bytes = if i % 7 == 0 { 1_300 } else { 512 };
                    Flow::new(i, src, perm[src as usize], bytes, SimTime(t))
                })
                .collect();
            let mut rec = Recorder::new(None);
            crate::fabric::drive(&mut b, &flows, &mut rec, SimTime::MAX, |_| false);
            let fin: Vec<_> = (0..flows.len() as u32).map(|i| rec.finish(i)).collect();
            (b.stats(), fin)
        };
        let (sa, fa) = run(true);
        let (sb, fb) = run(false);
        assert!(sa["data_dropped"] > 0.0 || m > 1, "{sa:?}");
        assert_eq!(sa, sb);
        assert_eq!(fa, fb);
        assert!(fa.iter().all(|f| f.is_some()));
    }
}

proptest! {
    /// The wake-up ring pops exactly what a binary heap of (time, seq)
    /// pops: pushes within the horizon of `now`, pops of what is due,
    /// `now` moving forward (by as little as a picosecond or past the
    /// horizon, so buckets are reused lap after lap), and bursts at one
    /// instant that overflow a bucket's flat slots.
    #[test]
    fn wake_ring_pops_in_heap_order(
        horizon in 1u64..400_000,
        steps in prop::collection::vec((0u64..4, 0u64..1_000_000, 0u32..12), 1..400),
    ) {
        let mut w = Wakes::new(SimTime(horizon));
        let mut heap = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for (op, x, n) in steps {
            match op {
                0 | 1 => {
                    for k in 0..n {
                        // op 1: a burst at one instant (more than a
                        // bucket's flat slots: the spill list).
                        let spread = if op == 0 { k as u64 * 7_919 } else { 0 };
                        let t = now + 1 + (x + spread) % horizon;
                        w.push(SimTime(now), SimTime(t), seq, k);
                        heap.push(Reverse((t, seq, k)));
                        seq += 1;
                    }
                }
                _ => {
                    // Move to the earliest pending time, or a little on
                    // if nothing is pending; then pop all that is due.
                    let next = heap.peek().map(|Reverse(e)| e.0);
                    now = next.unwrap_or(now + 1 + x % (3 * horizon));
                    while heap.peek().is_some_and(|Reverse(e)| e.0 <= now) {
                        let Reverse((t, q, k)) = heap.pop().unwrap();
                        prop_assert_eq!(w.peek(), Some((SimTime(t), q)));
                        prop_assert_eq!(w.pop(SimTime(now)), k);
                    }
                }
            }
            prop_assert_eq!(w.len(), heap.len());
            prop_assert_eq!(w.peek(), heap.peek().map(|Reverse(e)| (SimTime(e.0), e.1)));
        }
    }

    /// Stage by stage in batches = one packet after another: same fates
    /// and the same state after (checked by a probe packet set after).
    #[test]
    fn batched_traversal_equals_one_at_a_time(
        k in 1u32..6, m in 1u32..8, seed in 0u64..1000, batch in 1usize..20,
        pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..1_500_000_000, 1u64..=NarrowButterfly::SPAN), 1..200),
        short in prop::collection::vec(any::<bool>(), 200),
    ) {
        let n = 1u32 << k;
        let mut r1 = RngStreams::new(seed).stream("w");
        let mut r2 = RngStreams::new(seed).stream("w");
        let mut r3 = RngStreams::new(seed).stream("w");
        let mut one = NarrowButterfly::new(k, m, Some(&mut r1));
        let mut many = NarrowButterfly::new(k, m, Some(&mut r2));
        let mut wide = Butterfly::new(k, m, Some(&mut r3));
        let hop = SimTime(3);
        let mut t = 0u64;
        let mut probes = Vec::new();
        for (i, &(s, d, gap, dur)) in pkts.iter().enumerate() {
            let (gap, dur) = if short[i] { (gap % 50, dur % 40 + 1) } else { (gap, dur.min(NarrowButterfly::SPAN - hop.0 * (k as u64 - 1))) };
            t += gap;
            probes.push(Probe::new(s % n, d % n, SimTime(t), SimTime(dur)));
        }
        let want: Vec<Option<u32>> = probes
            .iter()
            .map(|p| match one.traverse(p.src, p.dst, p.t0, hop, p.occupy, |_, _, _, _| {}) {
                Fate::Delivered => None,
                Fate::Dropped { stage } => Some(stage),
            })
            .collect();
        let mut wide_probes = probes.clone();
        for c in probes.chunks_mut(batch) {
            many.traverse_batch(c, hop);
        }
        for c in wide_probes.chunks_mut(batch) {
            wide.traverse_batch(c, hop);
        }
        let got: Vec<Option<u32>> = probes.iter().map(|p| p.dropped).collect();
        let got_wide: Vec<Option<u32>> = wide_probes.iter().map(|p| p.dropped).collect();
        prop_assert_eq!(&want, &got);
        prop_assert_eq!(&want, &got_wide);
        // The same outputs are busy until the same times.
        for s in 0..n {
            for d in 0..n {
                let a = one.traverse(s, d, SimTime(t), hop, SimTime(1), |_, _, _, _| {});
                let b = many.traverse(s, d, SimTime(t), hop, SimTime(1), |_, _, _, _| {});
                prop_assert_eq!(a, b);
            }
        }
    }

    /// The first-free search (signed compares, no branch per port)
    /// against the plain rule (the first port, in order, whose free time
    /// is at or before now, compared unsigned), for 1…8 ports in 32 and
    /// 64 bits, free times at 0, at MAX, equal to now, one either side
    /// of it, or anywhere; and at NEVER (a dropped probe's time) no
    /// output is free.
    #[test]
    fn free_mask_finds_the_first_output_free_at_now(
        now in prop_oneof![Just(0u64), Just(i32::MAX as u64), 0u64..=i32::MAX as u64],
        outs in prop::collection::vec((0u8..6, 0u64..=i32::MAX as u64), 1..=8),
    ) {
        fn check<S: Stamp>(now: u64, outs: &[(u8, u64)]) -> Result<(), TestCaseError> {
            let max = S::MAX;
            let free: Vec<S> = outs
                .iter()
                .map(|&(c, any)| match c {
                    0 => 0,
                    1 => max,
                    2 => now.saturating_sub(1),
                    3 => now,
                    4 => (now + 1).min(max),
                    _ => any,
                })
                .map(S::from_u64)
                .collect();
            let mask = free_mask(&free, S::from_u64(now));
            for (i, f) in free.iter().enumerate() {
                prop_assert_eq!((mask >> i) & 1 == 1, f.to_u64() <= now);
            }
            let first = free.iter().position(|f| f.to_u64() <= now);
            prop_assert_eq!((mask != 0).then(|| mask.trailing_zeros() as usize), first);
            prop_assert_eq!(free_mask(&free, S::NEVER), 0);
            Ok(())
        }
        check::<u32>(now, &outs)?;
        check::<u64>(now, &outs)?;
        // 64-bit stamps over their own range.
        let wide: Vec<(u8, u64)> = outs.iter().map(|&(c, v)| (c, v << 32 | v)).collect();
        check::<u64>(now << 32 | now, &wide)?;
    }

    /// 32-bit free times after a moving base decide every output exactly
    /// as 64-bit absolute times: same fates, same outputs, same times,
    /// across many moves of the base (gaps up to 1.5 ms, spans up to the
    /// narrow limit).
    #[test]
    fn narrow_times_give_the_same_traversals_as_wide_ones(
        k in 1u32..6, m in 1u32..4, seed in 0u64..1000,
        pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..1_500_000_000, 1u64..=NarrowButterfly::SPAN), 1..200),
        short in prop::collection::vec(any::<bool>(), 200),
    ) {
        let n = 1u32 << k;
        let mut r1 = RngStreams::new(seed).stream("w");
        let mut r2 = RngStreams::new(seed).stream("w");
        let mut wide = Butterfly::new(k, m, Some(&mut r1));
        let mut narrow = NarrowButterfly::new(k, m, Some(&mut r2));
        let hop = SimTime(3);
        let mut t = 0u64;
        for (i, &(s, d, gap, dur)) in pkts.iter().enumerate() {
            // Mostly short gaps and occupancies (collisions), some long.
            let (gap, dur) = if short[i] { (gap % 50, dur % 40 + 1) } else { (gap, dur.min(NarrowButterfly::SPAN - hop.0 * (k as u64 - 1))) };
            t += gap;
            let (s, d) = (s % n, d % n);
            let (mut pw, mut pn) = (Vec::new(), Vec::new());
            let fw = wide.traverse(s, d, SimTime(t), hop, SimTime(dur), |a, b, c, e| pw.push((a, b, c, e)));
            let fn_ = narrow.traverse(s, d, SimTime(t), hop, SimTime(dur), |a, b, c, e| pn.push((a, b, c, e)));
            prop_assert_eq!(fw, fn_);
            prop_assert_eq!(pw, pn);
        }
    }

    /// No output ever carries two packets at once, and every delivered
    /// packet's outputs form a connected path ending at its destination.
    #[test]
    fn no_output_carries_two_packets_at_once(
        k in 1u32..6, m in 1u32..5, seed in 0u64..1000,
        pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..2_000, 1u64..300), 1..300),
    ) {
        let n = 1u32 << k;
        let mut rng = RngStreams::new(seed).stream("w");
        let mut bf = Butterfly::new(k, m, Some(&mut rng));
        let mut pkts = pkts;
        pkts.sort_by_key(|p| p.2);
        let mut used: Vec<(u32, usize, SimTime, SimTime)> = Vec::new();
        for &(s, d, t, dur) in &pkts {
            let (s, d) = (s % n, d % n);
            let mut path = Vec::new();
            let fate = bf.traverse(s, d, SimTime(t), SimTime(7), SimTime(dur), |st, port, a, b| {
                path.push((st, port, a, b));
            });
            for w in path.windows(2) {
                prop_assert_eq!(bf.next_switch(w[0].0, w[0].1) as usize, w[1].1 / (2 * m as usize));
            }
            if fate == Fate::Delivered {
                prop_assert_eq!(path.len(), k as usize);
                let last = path[k as usize - 1].1;
                prop_assert_eq!((last / m as usize) as u32, d);
            }
            used.extend(path);
        }
        used.sort();
        for w in used.windows(2) {
            if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
                prop_assert!(w[0].3 <= w[1].2, "overlap on stage {} port {}: {:?} {:?}", w[0].0, w[0].1, w[0], w[1]);
            }
        }
    }
}

#[test]
/// The model's one-shot analysis (`model::baldur`) resolves a stage at once;
/// the switches here, one packet at a time, must drop as many.
fn the_models_one_shot_equals_the_switches_on_the_same_wiring() {
    for (k, m) in [(4, 1), (6, 2), (7, 3), (8, 4)] {
        let n = 1u32 << k;
        let mut rng = RngStreams::new(3).stream("t");
        let batches: Vec<Vec<crate::flow::HostId>> = (0..5)
            .map(|_| crate::model::baldur::destinations("random_permutation", n, &mut rng))
            .collect();
        let fast = crate::model::baldur::one_shot(k, m, 77, &batches);
        for (bi, d) in batches.iter().enumerate() {
            let mut w = RngStreams::new(77).stream("baldur.wiring");
            let mut bf = Butterfly::new(k, m, Some(&mut w));
            let slow = (0..n)
                .filter(|&i| {
                    bf.traverse(
                        i,
                        d[i as usize],
                        SimTime(0),
                        SimTime(1),
                        SimTime(5),
                        |_, _, _, _| {},
                    ) != Fate::Delivered
                })
                .count() as u64;
            assert_eq!(fast[bi], slow, "k={k} m={m} batch {bi}");
        }
    }
}

/// The electrical baseline (`net::multibutterfly`) and Baldur wire the same
/// network for a seed.
#[test]
fn same_wiring_as_baldur_for_a_seed() {
    let streams = RngStreams::new(5);
    let mut a = streams.stream("baldur.wiring");
    let mut b = streams.stream("baldur.wiring");
    let mb = crate::net::multibutterfly::MultiButterfly::new(5, 3, Some(&mut a));
    let bf = Butterfly::new(5, 3, Some(&mut b));
    for s in 0..4u32 {
        for port in 0..(32 * 3) as usize {
            assert_eq!(
                mb.next_switch(s, port),
                bf.next_switch(s, port),
                "stage {s} port {port}"
            );
        }
    }
}

/// One ejection link: of two packets reaching the same last-stage
/// direction together, the second is dropped (with m links both pass),
/// also after the stored times were rebased (32-bit times move their base
/// every 2^30 ps), and in the batched traversal.
#[test]
fn one_ejection_link_drops_the_second_of_two_packets_to_a_node() {
    for links in [2u32, 1] {
        // k = 1: the only stage is the last; nodes 0 and 1 share switch 0.
        let mut bf = NarrowButterfly::new(1, 2, None).with_ejection(links);
        for t0 in [SimTime(0), SimTime(3 << 30)] {
            let a = bf.traverse(0, 1, t0, SimTime(1), SimTime(10), |_, _, _, _| {});
            let b = bf.traverse(1, 1, t0, SimTime(1), SimTime(10), |_, _, _, _| {});
            assert_eq!(a, Fate::Delivered);
            let want = if links == 1 {
                Fate::Dropped { stage: 0 }
            } else {
                Fate::Delivered
            };
            assert_eq!(b, want, "links {links} at {t0:?}");
        }
        let mut wide = Butterfly::new(3, 2, None).with_ejection(links);
        let mut batch = vec![
            Probe::new(0, 5, SimTime(0), SimTime(10)),
            Probe::new(1, 5, SimTime(0), SimTime(10)),
        ];
        wide.traverse_batch(&mut batch, SimTime(1));
        let dropped = batch.iter().filter(|p| p.dropped.is_some()).count();
        assert_eq!(dropped, if links == 1 { 1 } else { 0 }, "links {links}");
    }
}

/// Node backoff (the default, §IV-E: BEB throttles the transmitter node):
/// while a node's stage c is above 0, each data transmission sets the
/// earliest start of its next one a draw of [0, 2^c − 1] slots after it
/// ends, and a node with data held that long schedules its own resumption.
#[test]
fn node_backoff_spaces_a_nodes_data_by_its_stage() {
    let p = BaldurParams::default();
    let mut b = net(
        8,
        &BaldurParams {
            backoff_cap: 3,
            ..p
        },
        5,
    );
    let end = SimTime::us(1);
    b.throttle(0, end);
    assert_eq!(b.nodes[0].data_ok_at, SimTime::ZERO, "stage 0: no hold");
    let mut seen = std::collections::BTreeSet::new();
    for c in [2u8, 5] {
        b.nodes[0].stage = c;
        for _ in 0..200 {
            b.throttle(0, end);
            let slots = (b.nodes[0].data_ok_at - end).0 / p.backoff_slot.0;
            assert_eq!((b.nodes[0].data_ok_at - end).0 % p.backoff_slot.0, 0);
            // Stage 5 is capped at backoff_cap = 3.
            assert!(slots < 1 << (c as u32).min(3), "stage {c}: {slots} slots");
            seen.insert(slots);
        }
    }
    assert_eq!(seen.len(), 8, "every draw of [0, 7] slots: {seen:?}");
    // Nothing queued: not held. Data queued before data_ok_at: held, with
    // one Resume timer however often it is asked.
    assert!(!b.held(0, end));
    b.nodes[1].data_ok_at = end + SimTime::us(1);
    b.add_flow(end, &Flow::new(0, 1, 5, 512, end), &mut Recorder::new(None));
    assert!(b.held(1, end) && b.held(1, end));
    assert_eq!(b.timers.peek_time(), Some(end + SimTime::us(1)));
    assert_eq!(b.timers.len(), 1);
}

/// A timeout below the round trip times out every packet: the node's stage
/// rises and its data is spaced, every ACK resets the stage, and every byte
/// is delivered once.
#[test]
fn node_backoff_rises_on_timeouts_and_an_ack_resets_it() {
    let mut p = BaldurParams::default();
    (p.timeout, p.backoff_slot, p.backoff_cap) = (SimTime::ns(150), SimTime::ns(100), 3);
    let mut b = net(8, &p, 2);
    let rec = drain(&mut b, &[Flow::new(0, 0, 5, 20 * 512, SimTime::ZERO)]);
    assert_eq!(rec.delivered(0), 20 * 512);
    assert_eq!(rec.violation_count(), 0);
    let s = b.stats();
    assert!(s["timeouts"] >= 20.0, "{s:?}");
    assert_eq!(b.nodes[0].stage, 0, "the last ACK resets the stage");
    // Back to back the flow takes 20 wire times and 19 gaps plus the head
    // latency; spaced by its backoff from the first timeout on, longer.
    let back_to_back = SimTime(164_200 * 20 + 240 * 19 + 200_420);
    assert!(rec.finish(0).unwrap() > back_to_back, "{:?}", rec.finish(0));
}

use super::*;
use crate::units::ByteSize;

/// Sirius (ideal or not, seeded with `seed`) on `racks` racks of
/// `servers_per_rack` with `uplinks` each, taken as they are
/// (`uplink_multiplier` 1), and the rest of `p`.
fn sirius(
    racks: u32,
    servers_per_rack: u32,
    uplinks: u32,
    p: SiriusParams,
    ideal: bool,
    seed: u64,
) -> Sirius {
    let topo = Topology {
        racks,
        servers_per_rack,
        uplinks,
        ..Topology::default()
    };
    let p = SiriusParams {
        uplink_multiplier: 1.0,
        ..p
    };
    Sirius::new(&topo, &p, ideal, seed, true).unwrap()
}

/// 4 racks × 2 servers, one inter-rack flow of 40 cells at t = 0.
fn small() -> (Sirius, Recorder) {
    let mut f = sirius(4, 2, 1, SiriusParams::default(), false, 1);
    let mut rec = Recorder::new(None);
    let flow = Flow {
        id: 0,
        src: 0,
        dst: 7,
        bytes: 40 * f.layout.cell_bytes,
        start: SimTime::ZERO,
    };
    rec.register(&flow);
    f.add_flow(SimTime::ZERO, &flow, &mut rec);
    (f, rec)
}

/// NegotiaToR's baseline in small: source priorities, no bound, 8 ports,
/// 300 ns propagation.
fn baseline_params() -> SiriusParams {
    SiriusParams {
        ports: 8,
        queue_bound: u32::MAX,
        propagation: SimTime::ns(300),
        source_priorities: vec![ByteSize(1000), ByteSize(10_000)],
        ..SiriusParams::default()
    }
}

/// A xorshift generator seeded with `x`: `rand(m)` in [0, m).
fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
    move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// NegotiaToR's baseline in small (`baseline_params`),
/// overloaded: `n` flows of mixed sizes, driven to `horizon`; returns
/// each flow's finish time, the fabric's stats and the most flows any
/// node had on its LOCAL order.
fn overloaded_baseline(
    ordered: bool,
    n: u32,
    horizon: SimTime,
) -> (Vec<Option<SimTime>>, FabricStats, usize) {
    let mut f = sirius(16, 1, 2, baseline_params(), true, 3);
    assert!(f.local.ordered(), "the ordered pick applies");
    if !ordered {
        f.local.unorder(); // the plain scan
    }
    // Offered 100 Gbps per node (twice what Valiant relay carries).
    let mut rand = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut t = 0u64;
    let flows: Vec<Flow> = (0..n)
        .map(|id| {
            let bytes = match rand(10) {
                0..=4 => 300 + rand(1700),
                5..=7 => 2_000 + rand(18_000),
                _ => 20_000 + rand(180_000),
            };
            t += rand(260);
            let src = rand(16) as u32;
            let dst = (src + 1 + rand(15) as u32) % 16;
            Flow {
                id,
                src,
                dst,
                bytes,
                start: SimTime::ns(t),
            }
        })
        .collect();
    let mut rec = Recorder::new(None);
    let mut next = 0;
    let mut peak = 0;
    loop {
        let fab = f.next_event().filter(|&e| e <= horizon);
        let arr = flows.get(next).map(|fl| fl.start);
        let fabric_first = match (fab, arr) {
            (Some(e), Some(a)) => e <= a,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if let (true, Some(e)) = (fabric_first, fab) {
            f.advance(e, &mut rec);
            f.check_invariants().unwrap();
            peak = peak.max(f.local.most_ordered());
        } else {
            let fl = &flows[next];
            rec.register(fl);
            f.add_flow(fl.start, fl, &mut rec);
            next += 1;
        }
    }
    let finish = (0..n).map(|id| rec.finish(id)).collect();
    (finish, f.stats(), peak)
}

#[test]
fn the_ordered_pick_changes_nothing_over_capacity() {
    let horizon = SimTime::us(300);
    let (fast, fast_stats, peak) = overloaded_baseline(true, 2_000, horizon);
    let (plain, plain_stats, _) = overloaded_baseline(false, 2_000, horizon);
    let done = fast.iter().filter(|d| d.is_some()).count();
    assert!(done > 500, "{done} flows finished");
    assert!(done < 2_000, "overloaded: some flows are still in LOCAL");
    assert!(peak >= 30, "a deep LOCAL backlog ({peak} flows at most)");
    assert_eq!(fast, plain);
    assert_eq!(fast_stats, plain_stats);
}

#[test]
fn the_checker_catches_one_cell_lost_without_a_trace() {
    let (mut f, mut rec) = small();
    let mut leaked = false;
    while let Some(t) = f.next_event() {
        f.advance(t, &mut rec);
        f.check_invariants().unwrap();
        if f.queues.total() > 0 && f.leak_a_queued_cell() {
            leaked = true;
            break;
        }
    }
    assert!(leaked, "some cell waited at an intermediate");
    let e = f.check_invariants().unwrap_err();
    assert!(e.contains("accounted for"), "{e}");
}

#[test]
fn the_partition_sums_to_the_cells_pushed_at_every_slot() {
    let (mut f, mut rec) = small();
    let mut slots = 0;
    let mut armed = false;
    while let Some(t) = f.next_event() {
        f.advance(t, &mut rec);
        // Rack 2 fails at the next slot, an epoch start, while it holds
        // cells of the flow as intermediate or has some on the way.
        let slot = f.clock.slot_of(t);
        let held = (0..4).any(|d| f.queues.fwd_len(2, d) > 0) || f.wire.any_to(2);
        if !armed && held && f.nodes.slot_in_epoch(slot + 1) == 0 {
            f.failures.schedule(t, 2);
            armed = true;
        }
        let p = stats::cell_partition(&f);
        assert_eq!(p.total(), f.edge.cells_pushed, "slot {slots}: {p:?}");
        f.check_invariants().unwrap();
        slots += 1;
    }
    // Rack 2 failed with cells of the flow (rack 0 -> rack 3) at it or on the way;
    // they were sent again and the flow completed.
    assert!(f.nodes.is_failed(2));
    assert!(
        f.local.cells_retransmitted > 0,
        "the failure hit cells of the flow"
    );
    assert_eq!(rec.completed(), 1);
    assert_eq!(stats::cell_partition(&f).delivered, 40);
}

/// The full-virtual-queue bitset that request/grant reads its candidates
/// from follows `granted_via(s, x) >= 2` through pushes, pops and a
/// failure's drain (oracle: the queue lengths, read one by one).
#[test]
fn the_full_bits_follow_the_virtual_queues() {
    let n = 70; // two words per node
    let mut q = Queues::new(n, false);
    let mut pool: Pool<Cell> = Pool::new();
    let agrees = |q: &Queues| {
        (0..n).all(|s| {
            (0..n).all(|x| {
                let bit = q.full_word(s, x / 64) >> (x % 64) & 1 == 1;
                bit == (q.granted_via(s, x) >= 2)
            })
        })
    };
    // A hand-picked sequence: link 3 → 65 (second word) and 3 → 5 up to
    // three cells and back down; then a drain of 3 → 5 that keeps one.
    for (s, x) in [(3, 65), (3, 65), (3, 5), (3, 65), (3, 5), (3, 5)] {
        let c = pool.alloc(Cell {
            flow: x as u32,
            seq: 0,
        });
        q.enqueue_vq(&mut pool, s, x, c);
        assert!(agrees(&q));
    }
    assert_eq!(q.full_word(3, 1), 1 << 1);
    assert_eq!(q.full_word(3, 0), 1 << 5);
    for _ in 0..2 {
        let c = q.pop_first_hop(&mut pool, 3, 65).unwrap();
        pool.release(c);
        assert!(agrees(&q));
    }
    assert_eq!(q.full_word(3, 1), 0);
    let mut out = Vec::new();
    let mut first = true;
    q.drain(
        &mut pool,
        true,
        3,
        5,
        |_| std::mem::take(&mut first),
        &mut out,
    );
    assert_eq!((out.len(), q.granted_via(3, 5)), (1, 2));
    assert!(agrees(&q));
    let mut out2 = Vec::new();
    q.drain(&mut pool, true, 3, 5, |_| true, &mut out2);
    assert_eq!(q.full_word(3, 0), 0);
    assert!(agrees(&q));
}

/// The live-node words: every node below N, minus the failed ones.
#[test]
fn the_live_words_drop_failed_nodes() {
    let n = 70;
    let mut nodes = Nodes::new(n, CyclicSchedule::new(n, 8, 9).unwrap(), false);
    assert_eq!(
        (nodes.live_word(0), nodes.live_word(1)),
        (u64::MAX, (1 << 6) - 1)
    );
    nodes.fail(64);
    nodes.fail(2);
    let live: Vec<usize> = (0..n)
        .filter(|&x| nodes.live_word(x / 64) >> (x % 64) & 1 == 1)
        .collect();
    let oracle: Vec<usize> = (0..n).filter(|&x| !nodes.is_failed(x)).collect();
    assert_eq!(live, oracle);
    assert_eq!(live.len(), n - 2);
}

/// Slots given back by completed flows change nothing: SIRIUS, SIRIUS
/// (IDEAL) and NegotiaToR's baseline (the ordered pick) give every flow the
/// same finish with recycling as with a slot per flow (the oracle), and
/// the table stays far below the flow count.
#[test]
fn recycled_slots_give_the_same_finishes_as_a_slot_per_flow() {
    let prio = baseline_params();
    let plain = SiriusParams {
        ports: 8,
        propagation: SimTime::ns(300),
        ..SiriusParams::default()
    };
    for (label, p, ideal) in [
        ("sirius", plain.clone(), false),
        ("sirius_ideal", plain, true),
        ("baseline", prio, true),
    ] {
        let run = |recycle: bool| {
            let mut f = sirius(16, 2, 2, p.clone(), ideal, 5);
            f.recycle_slots = recycle;
            let mut rand = xorshift(0x2545_f491_4f6c_dd1d);
            let mut t = 0;
            let flows: Vec<Flow> = (0..3000)
                .map(|id| {
                    t += rand(400);
                    let src = rand(32) as u32;
                    Flow {
                        id,
                        src,
                        dst: (src + 1 + rand(31) as u32) % 32,
                        bytes: 200 + rand(30_000),
                        start: SimTime::ns(t),
                    }
                })
                .collect();
            let mut rec = Recorder::new(None);
            let mut next = 0;
            loop {
                let fab = f.next_event();
                let arr = flows.get(next).map(|fl| fl.start);
                match (fab, arr) {
                    (Some(e), a) if a.is_none_or(|a| e <= a) => {
                        f.advance(e, &mut rec);
                        f.check_invariants().unwrap();
                    }
                    (_, Some(_)) => {
                        rec.register(&flows[next]);
                        f.add_flow(flows[next].start, &flows[next], &mut rec);
                        next += 1;
                    }
                    (None, None) => break,
                    _ => unreachable!(),
                }
            }
            let finish: Vec<_> = (0..3000).map(|id| rec.finish(id)).collect();
            (finish, f.flows.len())
        };
        let (a, slots) = run(true);
        let (b, all) = run(false);
        assert!(
            a.iter().all(|x| x.is_some()),
            "{label}: every flow finished"
        );
        assert_eq!(a, b, "{label}: finishes");
        assert_eq!(all, 3000, "{label}");
        assert!(slots < 600, "{label}: {slots} slots for 3,000 flows");
    }
}

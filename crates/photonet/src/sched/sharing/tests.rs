use super::*;
use crate::sched::maxmin::{check_max_min, max_min_rates};
use proptest::prelude::*;

fn assert_matches_full_solve(s: &Sharing) {
    let (p, ids, rates) = s.snapshot();
    let full = max_min_rates(&p);
    for (k, (&x, &y)) in rates.iter().zip(&full).enumerate() {
        assert!(
            (x - y).abs() <= 1e-7 * y.abs().max(1.0),
            "flow {}: incremental {x} vs full solve {y}",
            ids[k]
        );
    }
    check_max_min(&p, &rates, 1e-7).unwrap();
}

#[test]
fn hand_worked_arrival_and_departure() {
    // Link 0 (10) shared by flows 0 and 1; flow 1 also crosses link 1 (4).
    let mut s = Sharing::new(vec![10.0, 4.0, 100.0]);
    let mut ch = Vec::new();
    s.insert(0, &[0]);
    s.update(&mut ch);
    assert_eq!((s.rate(0), ch.as_slice()), (10.0, &[0u32][..]));
    ch.clear();
    s.insert(1, &[0, 1]);
    s.update(&mut ch);
    // Flow 1 is held to 4 by link 1; flow 0 takes the rest of link 0.
    assert_eq!((s.rate(0), s.rate(1)), (6.0, 4.0));
    assert_eq!(ch, [1, 0]);
    ch.clear();
    // A flow on link 2 alone changes nobody else.
    s.insert(2, &[2]);
    s.update(&mut ch);
    assert_eq!((s.rate(2), ch.as_slice()), (100.0, &[2u32][..]));
    ch.clear();
    // Flow 1 leaves: flow 0 grows back to 10.
    s.remove(1);
    s.update(&mut ch);
    assert_eq!((s.rate(0), ch.as_slice()), (10.0, &[0u32][..]));
}

#[test]
fn a_departure_frees_capacity_two_hops_away() {
    // 0: [A], 1: [A, B], 2: [B]; A = 2, B = 3. Full solve: 1, 1, 2.
    // Adding 3 on [A] gives 2/3 each on A and 3 − 2/3 to flow 2; removing
    // it again must restore flow 2 to 2 (it is two resources away).
    let mut s = Sharing::new(vec![2.0, 3.0]);
    let mut ch = Vec::new();
    for (id, res) in [(0u32, &[0u32][..]), (1, &[0, 1]), (2, &[1])] {
        s.insert(id, res);
    }
    s.update(&mut ch);
    assert_eq!((s.rate(0), s.rate(1), s.rate(2)), (1.0, 1.0, 2.0));
    s.insert(3, &[0]);
    s.update(&mut ch);
    assert_matches_full_solve(&s);
    assert!((s.rate(2) - (3.0 - 2.0 / 3.0)).abs() < 1e-12);
    ch.clear();
    s.remove(3);
    s.update(&mut ch);
    assert_eq!((s.rate(0), s.rate(1), s.rate(2)), (1.0, 1.0, 2.0));
    assert!(ch.contains(&2), "flow 2 must be reported changed: {ch:?}");
}

#[test]
fn a_held_flow_is_rechecked_when_its_bottleneck_moves() {
    // 0: [A, B], 1: [A], 2: [B]; A = 2, B = 10. Flow 0 is held at 1 by A.
    let mut s = Sharing::new(vec![2.0, 10.0]);
    let mut ch = Vec::new();
    for (id, res) in [(0u32, &[0u32, 1][..]), (1, &[0]), (2, &[1])] {
        s.insert(id, res);
    }
    s.update(&mut ch);
    assert_eq!((s.rate(0), s.rate(1), s.rate(2)), (1.0, 1.0, 9.0));
    // B's load changes but A's does not: flow 0 keeps its rate, flow 3
    // takes what flow 2 left.
    s.remove(2);
    s.insert(3, &[1]);
    ch.clear();
    s.update(&mut ch);
    assert_eq!(
        (s.rate(0), s.rate(3), ch.as_slice()),
        (1.0, 9.0, &[3u32][..])
    );
    // A's load changes: flow 0, verified at A, is looked at again and grows.
    s.remove(1);
    ch.clear();
    s.update(&mut ch);
    assert_eq!((s.rate(0), s.rate(3)), (2.0, 8.0));
    assert_eq!(ch, [0, 3]);
    assert_matches_full_solve(&s);
}

#[derive(Clone, Debug)]
enum Op {
    Add(Vec<u32>),
    Remove(usize),
    Update,
}

/// Random scripts over up to `max_res - 1` resources with tied
/// capacities: `(add, remove, update)` weight the operations, flows use
/// up to `max_links - 1` resources, scripts run up to `max_ops - 1` ops.
fn arb_script_of(
    max_res: usize,
    max_links: usize,
    (add, remove, update): (u32, u32, u32),
    max_ops: usize,
) -> impl Strategy<Value = (Vec<f64>, Vec<Op>)> {
    (2usize..max_res).prop_flat_map(move |nr| {
        let caps = prop::collection::vec(
            prop_oneof![Just(1.0), Just(2.0), Just(3.0), 0.5f64..10.0],
            nr,
        );
        let op = prop_oneof![
            add => prop::collection::btree_set(0..nr as u32, 1..max_links)
                .prop_map(|s| Op::Add(s.into_iter().collect())),
            remove => (0usize..64).prop_map(Op::Remove),
            update => Just(Op::Update),
        ];
        (caps, prop::collection::vec(op, 1..max_ops))
    })
}

fn arb_script() -> impl Strategy<Value = (Vec<f64>, Vec<Op>)> {
    arb_script_of(9, 4, (4, 2, 3), 60)
}

/// Longer scripts over more resources, with tied capacities (many
/// flows verified, re-verified and pulled in).
fn arb_long_script() -> impl Strategy<Value = (Vec<f64>, Vec<Op>)> {
    arb_script_of(16, 5, (5, 3, 2), 200)
}

/// Runs one script on this sharing and on the former method's,
/// asserting after every update the same rates (bits), the same
/// `changed` lists (order included) and the same work counters.
fn matches_the_former_method(caps: Vec<f64>, ops: Vec<Op>) {
    let a = Sharing::new(caps.clone());
    let b = Sharing::former(caps);
    play(&mut Pair(a, b), ops);
}

/// What a script drives: flows join (numbered in order), leave, and the
/// rates are updated.
trait Scripted {
    fn add(&mut self, id: u32, res: &[u32]);
    fn remove(&mut self, id: u32);
    /// An update with the flows `live` present; ids below `next` were used.
    fn update(&mut self, live: &[u32], next: u32);
}

/// Plays `ops` and a final update on `s`. `Remove(k)` takes the live flow
/// `k % live` (nothing when none is live).
fn play(s: &mut impl Scripted, ops: Vec<Op>) {
    let mut live: Vec<u32> = Vec::new();
    let mut next = 0u32;
    for op in ops.into_iter().chain([Op::Update]) {
        match op {
            Op::Add(res) => {
                s.add(next, &res);
                live.push(next);
                next += 1;
            }
            Op::Remove(k) if !live.is_empty() => {
                let id = live.remove(k % live.len());
                s.remove(id);
            }
            Op::Remove(_) => {}
            Op::Update => s.update(&live, next),
        }
    }
}

/// The current method beside the former one: every update must agree to
/// the bit, in `changed` order and counters.
struct Pair(Sharing, Sharing);

impl Scripted for Pair {
    fn add(&mut self, id: u32, res: &[u32]) {
        self.0.insert(id, res);
        self.1.insert(id, res);
    }
    fn remove(&mut self, id: u32) {
        self.0.remove(id);
        self.1.remove(id);
    }
    fn update(&mut self, live: &[u32], _: u32) {
        let (a, b) = (&mut self.0, &mut self.1);
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        a.update(&mut ca);
        b.update(&mut cb);
        assert_eq!(ca, cb);
        assert_eq!(a.counters(), b.counters());
        for &id in live {
            assert_eq!(a.rate(id).to_bits(), b.rate(id).to_bits(), "flow {id}");
        }
    }
}

/// Incremental updates against a full solve: the rates equal it, and
/// `changed` names exactly the flows whose rate moved since the last update.
struct Incremental {
    s: Sharing,
    before: Vec<f64>,
}

impl Scripted for Incremental {
    fn add(&mut self, id: u32, res: &[u32]) {
        self.s.insert(id, res);
    }
    fn remove(&mut self, id: u32) {
        self.s.remove(id);
    }
    fn update(&mut self, live: &[u32], next: u32) {
        let s = &mut self.s;
        self.before.resize(next as usize, 0.0);
        let mut ch = Vec::new();
        s.update(&mut ch);
        assert_matches_full_solve(s);
        for &id in live {
            let moved = s.rate(id) != self.before[id as usize];
            assert_eq!(moved, ch.contains(&id), "flow {id}");
            self.before[id as usize] = s.rate(id);
        }
        assert!(ch.iter().all(|id| live.contains(id)));
    }
}

#[test]
fn matches_the_former_method_by_hand() {
    // The departure two hops away and the moved bottleneck above.
    matches_the_former_method(
        vec![2.0, 3.0],
        vec![
            Op::Add(vec![0]),
            Op::Add(vec![0, 1]),
            Op::Add(vec![1]),
            Op::Update,
            Op::Add(vec![0]),
            Op::Update,
            Op::Remove(3),
            Op::Update,
            Op::Remove(0),
            Op::Update,
        ],
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// Watch lists and component rounds decide exactly as the former
    /// method: same rates (bits), same `changed` order, same counters.
    #[test]
    fn matches_the_former_method_on_random_scripts((caps, ops) in arb_long_script()) {
        matches_the_former_method(caps, ops);
    }

    /// After every update the rates equal a full solve's, and `changed`
    /// names exactly the flows whose rate moved.
    #[test]
    fn incremental_updates_equal_a_full_solve((caps, ops) in arb_script()) {
        let s = Sharing::new(caps);
        play(&mut Incremental { s, before: Vec::new() }, ops);
    }
}

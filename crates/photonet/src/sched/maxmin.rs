//! Max-min fair rate allocation by progressive filling (water-filling).
//!
//! Flows share resources (links) of given capacities. All unfrozen flows grow at
//! the same rate until some resource saturates; the flows through it are frozen at
//! that rate, and filling continues with the rest. The result is the unique max-min
//! fair allocation: every flow has a saturated bottleneck resource on which no other
//! flow gets more.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A sharing problem in compressed form: flow `f` uses resources
/// `flow_res[flow_start[f]..flow_start[f+1]]`.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    pub capacity: Vec<f64>,
    pub flow_start: Vec<u32>,
    pub flow_res: Vec<u32>,
}

impl Problem {
    pub fn new(capacity: Vec<f64>) -> Self {
        Problem {
            capacity,
            flow_start: vec![0],
            flow_res: Vec::new(),
        }
    }
    pub fn clear(&mut self) {
        self.capacity.clear();
        self.flow_start.clear();
        self.flow_start.push(0);
        self.flow_res.clear();
    }
    pub fn add_flow(&mut self, resources: &[u32]) {
        self.flow_res.extend_from_slice(resources);
        self.flow_start.push(self.flow_res.len() as u32);
    }
    pub fn flows(&self) -> usize {
        self.flow_start.len() - 1
    }
    pub fn resources_of(&self, f: usize) -> &[u32] {
        &self.flow_res[self.flow_start[f] as usize..self.flow_start[f + 1] as usize]
    }
}

#[derive(PartialEq)]
struct Key(f64, u32);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // Min-heap on (fair share, resource index) so ties resolve deterministically.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// Reusable buffers for repeated solves (the ESN fabric solves once per event).
///
/// Progressive filling with a *lazy* heap of resource fair shares: a
/// resource's share `cap_left / unfrozen` never decreases while filling (a
/// flow frozen elsewhere at the current level `x <= share` leaves
/// `(cap_left - x) / (n - 1) >= share`), so the heap holds one entry per
/// resource whose key is a lower bound of its current share. Popping the
/// smallest key either finds it current (that resource saturates next) or
/// re-inserts it at its current share. Freezing a flow updates its other
/// resources in O(1) each, without a heap operation; only the resources that
/// actually reach the top are touched again. Cost: O(F·k + P log R) for F
/// flows of at most k resources, R resources and P ≤ R + F·k heap pushes (in
/// practice a few per resource), against O(F·k log(F·k)) for a heap entry per
/// update. Rounding can make a share dip below its key; such a resource is
/// re-inserted at once, so the order in which resources saturate is exactly
/// that of [`reference::water_filling`] — ascending (share, index) — and the
/// rates are bit-for-bit the same (tested).
#[derive(Default)]
pub struct Solver {
    cap_left: Vec<f64>,
    unfrozen: Vec<u32>,
    key_of: Vec<f64>,
    /// Each resource's flows in index order, for the last problem solved:
    /// its first `indexed_res` resources and `indexed_flows` flows (kept so
    /// that [`solve_extending`](Self::solve_extending) only appends).
    adj: Vec<Vec<u32>>,
    indexed_res: usize,
    indexed_flows: usize,
    frozen: Vec<bool>,
    heap: BinaryHeap<Key>,
    parked: Vec<u32>,
    bottleneck: Vec<u32>,
}

impl Solver {
    /// After [`solve`](Self::solve): the resource at which each flow was
    /// frozen (its bottleneck), or `u32::MAX` for a flow without resources.
    pub fn bottlenecks(&self) -> &[u32] {
        &self.bottleneck
    }

    /// Writes the max-min fair rate of every flow of `p` into `rates`.
    pub fn solve(&mut self, p: &Problem, rates: &mut Vec<f64>) {
        for list in &mut self.adj[..self.indexed_res] {
            list.clear();
        }
        self.indexed_res = 0;
        self.indexed_flows = 0;
        self.fill_levels(p, rates);
    }

    /// The same for a problem that extends the last one solved (by either
    /// method): its first `from` flows are that problem's flows, crossing the
    /// same resources, and that problem had `from` flows and no more
    /// resources than this one. Capacities may differ. Only the flows after
    /// `from` are indexed; the rates are those of [`solve`](Self::solve),
    /// bit for bit (the index lists each resource's flows in index order
    /// either way).
    pub fn solve_extending(&mut self, p: &Problem, from: usize, rates: &mut Vec<f64>) {
        assert!(
            from == self.indexed_flows && self.indexed_res <= p.capacity.len(),
            "solve_extending: the problem does not extend the last one solved"
        );
        self.fill_levels(p, rates);
    }

    /// Indexes the flows of `p` not indexed yet, then fills.
    fn fill_levels(&mut self, p: &Problem, rates: &mut Vec<f64>) {
        let nr = p.capacity.len();
        let nf = p.flows();
        rates.clear();
        rates.resize(nf, 0.0);
        // Resource -> flows index, appended to.
        if self.adj.len() < nr {
            self.adj.resize_with(nr, Vec::new);
        }
        for list in &mut self.adj[self.indexed_res..nr] {
            list.clear();
        }
        self.indexed_res = nr;
        for f in self.indexed_flows..nf {
            for &r in p.resources_of(f) {
                self.adj[r as usize].push(f as u32);
            }
        }
        self.indexed_flows = nf;
        self.unfrozen.clear();
        self.unfrozen
            .extend(self.adj[..nr].iter().map(|l| l.len() as u32));
        self.cap_left.clear();
        self.cap_left.extend_from_slice(&p.capacity);
        self.frozen.clear();
        self.frozen.resize(nf, false);
        self.bottleneck.clear();
        self.bottleneck.resize(nf, u32::MAX);
        // Resources whose share is above the threshold `t` wait in `parked`
        // (key_of = +inf) and enter the heap only when the filling level gets
        // near them: most links (a NIC with one or two flows) drain through
        // their other links' saturation and never enter the heap at all.
        // Invariant: every unparked resource with unfrozen flows is in the
        // heap with a key <= its current share, and every parked one has a
        // current share > t.
        self.key_of.clear();
        self.key_of.resize(nr, f64::INFINITY);
        self.parked.clear();
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.clear();
        let mut lowest = f64::INFINITY;
        for r in 0..nr {
            if self.unfrozen[r] > 0 {
                lowest = lowest.min(self.cap_left[r] / self.unfrozen[r] as f64);
            }
        }
        let mut t = if lowest > 0.0 { 2.0 * lowest } else { 0.0 };
        for r in 0..nr {
            if self.unfrozen[r] > 0 {
                let k = self.cap_left[r] / self.unfrozen[r] as f64;
                if k <= t {
                    self.key_of[r] = k;
                    entries.push(Key(k, r as u32));
                } else {
                    self.parked.push(r as u32);
                }
            }
        }
        self.heap = BinaryHeap::from(entries);
        let mut level = 0.0f64;
        loop {
            let top = self.heap.peek().map(|k| k.0);
            if self.parked.is_empty() {
                if top.is_none() {
                    break;
                }
            } else if top.is_none_or(|k| k > t) {
                // Raise the threshold past the smallest key (at least doubling
                // it) and admit the parked resources now below it.
                t = match top {
                    Some(k) => k.max(2.0 * t),
                    None => 2.0 * t,
                };
                let mut i = 0;
                let mut next_min = f64::INFINITY;
                while i < self.parked.len() {
                    let r = self.parked[i] as usize;
                    let n = self.unfrozen[r];
                    if n == 0 || self.key_of[r] != f64::INFINITY {
                        self.parked.swap_remove(i);
                        continue;
                    }
                    let k = self.cap_left[r] / n as f64;
                    if k <= t {
                        self.key_of[r] = k;
                        self.heap.push(Key(k, r as u32));
                        self.parked.swap_remove(i);
                        continue;
                    }
                    next_min = next_min.min(k);
                    i += 1;
                }
                if self.heap.is_empty() {
                    // Nothing admitted: jump to the smallest parked share.
                    t = next_min;
                }
                continue;
            }
            let Some(Key(key, r)) = self.heap.pop() else {
                break;
            };
            let ru = r as usize;
            let n = self.unfrozen[ru];
            // An entry superseded by a lower one (rounding), or a drained resource.
            if n == 0 || key.to_bits() != self.key_of[ru].to_bits() {
                continue;
            }
            let share = self.cap_left[ru] / n as f64;
            if share != key {
                // Grew since it was keyed: re-insert at its current share.
                self.key_of[ru] = share;
                self.heap.push(Key(share, r));
                continue;
            }
            // Rounding can make a later share dip below the level already reached.
            let share = share.max(level);
            level = share;
            for &f in &self.adj[ru] {
                let f = f as usize;
                if self.frozen[f] {
                    continue;
                }
                self.frozen[f] = true;
                self.bottleneck[f] = r;
                rates[f] = share;
                for &r2 in p.resources_of(f) {
                    let r2u = r2 as usize;
                    if r2u == ru {
                        continue;
                    }
                    self.cap_left[r2u] = (self.cap_left[r2u] - share).max(0.0);
                    self.unfrozen[r2u] -= 1;
                    let m = self.unfrozen[r2u];
                    if m > 0 {
                        let k = self.cap_left[r2u] / m as f64;
                        // Parked (key +inf) resources enter once at or below t.
                        if k < self.key_of[r2u] && (k <= t || self.key_of[r2u] != f64::INFINITY) {
                            self.key_of[r2u] = k;
                            self.heap.push(Key(k, r2));
                        }
                    }
                }
            }
            self.unfrozen[ru] = 0;
            self.cap_left[ru] = 0.0;
        }
    }
}

/// Independent solvers kept as test oracles (and as the benchmarks' yardstick):
/// not used by the simulator.
pub mod reference {
    use super::{Key, Problem};
    use std::collections::BinaryHeap;

    /// The water-filling solver photonet used before the lazy heap: one heap
    /// entry per share update, stale entries skipped. Kept verbatim as the
    /// oracle that [`super::Solver`] must match bit for bit.
    pub fn water_filling(p: &Problem) -> Vec<f64> {
        let nr = p.capacity.len();
        let nf = p.flows();
        let mut rates = vec![0.0; nf];
        let mut unfrozen = vec![0u32; nr];
        for &r in &p.flow_res {
            unfrozen[r as usize] += 1;
        }
        let mut res_start = vec![0u32];
        let mut acc = 0u32;
        for &u in &unfrozen {
            acc += u;
            res_start.push(acc);
        }
        let mut res_flows = vec![0u32; acc as usize];
        let mut fill: Vec<u32> = res_start[..nr].to_vec();
        for f in 0..nf {
            for &r in p.resources_of(f) {
                res_flows[fill[r as usize] as usize] = f as u32;
                fill[r as usize] += 1;
            }
        }
        let mut cap_left = p.capacity.clone();
        let mut frozen = vec![false; nf];
        let mut heap = BinaryHeap::new();
        for r in 0..nr {
            if unfrozen[r] > 0 {
                heap.push(Key(cap_left[r] / unfrozen[r] as f64, r as u32));
            }
        }
        let mut level = 0.0f64;
        while let Some(Key(share, r)) = heap.pop() {
            let ru = r as usize;
            let n = unfrozen[ru];
            if n == 0 || share != cap_left[ru] / n as f64 {
                continue; // stale entry
            }
            let share = share.max(level);
            level = share;
            for i in res_start[ru]..res_start[ru + 1] {
                let f = res_flows[i as usize] as usize;
                if frozen[f] {
                    continue;
                }
                frozen[f] = true;
                rates[f] = share;
                for &r2 in p.resources_of(f) {
                    let r2u = r2 as usize;
                    if r2u == ru {
                        continue;
                    }
                    cap_left[r2u] = (cap_left[r2u] - share).max(0.0);
                    unfrozen[r2u] -= 1;
                    if unfrozen[r2u] > 0 {
                        heap.push(Key(cap_left[r2u] / unfrozen[r2u] as f64, r2));
                    }
                }
            }
            unfrozen[ru] = 0;
            cap_left[ru] = 0.0;
        }
        rates
    }

    /// Progressive filling by its definition, in O(F·R) per level and no
    /// heap: raise every unfrozen flow to the smallest fair share among the
    /// resources that still carry unfrozen flows; freeze the flows of every
    /// resource at that share (within a relative 1e-12); repeat. For small
    /// instances only.
    pub fn brute_force(p: &Problem) -> Vec<f64> {
        let nr = p.capacity.len();
        let nf = p.flows();
        let mut rate: Vec<Option<f64>> = vec![None; nf];
        loop {
            let mut best = f64::INFINITY;
            let mut shares = vec![f64::INFINITY; nr];
            for (r, sh) in shares.iter_mut().enumerate() {
                let (mut used, mut n) = (0.0, 0usize);
                for (f, x) in rate.iter().enumerate() {
                    if p.resources_of(f).contains(&(r as u32)) {
                        match x {
                            Some(x) => used += x,
                            None => n += 1,
                        }
                    }
                }
                if n > 0 {
                    *sh = ((p.capacity[r] - used) / n as f64).max(0.0);
                    best = best.min(*sh);
                }
            }
            if best == f64::INFINITY {
                break;
            }
            let tight: Vec<bool> = shares.iter().map(|&s| s <= best * (1.0 + 1e-12)).collect();
            for (f, x) in rate.iter_mut().enumerate() {
                if x.is_none() && p.resources_of(f).iter().any(|&r| tight[r as usize]) {
                    *x = Some(best);
                }
            }
        }
        rate.into_iter().map(|x| x.unwrap_or(0.0)).collect()
    }
}

/// Convenience wrapper: the max-min fair rates of `p`.
pub fn max_min_rates(p: &Problem) -> Vec<f64> {
    let mut rates = Vec::new();
    Solver::default().solve(p, &mut rates);
    rates
}

/// Checks the defining property of a max-min fair allocation (independent of how
/// it was computed): feasibility, and a saturated bottleneck for every flow on
/// which that flow's rate is the largest. Returns the first violation.
pub fn check_max_min(p: &Problem, rates: &[f64], tol: f64) -> Result<(), String> {
    let nr = p.capacity.len();
    let mut load = vec![0.0; nr];
    let mut maxrate = vec![0.0f64; nr];
    for (f, &x) in rates.iter().enumerate() {
        if x < 0.0 {
            return Err(format!("flow {f} has negative rate {x}"));
        }
        for &r in p.resources_of(f) {
            load[r as usize] += x;
            maxrate[r as usize] = maxrate[r as usize].max(x);
        }
    }
    for (r, (&l, &c)) in load.iter().zip(&p.capacity).enumerate().take(nr) {
        if l > c * (1.0 + tol) + tol {
            return Err(format!("resource {r} overloaded: {l} > {c}"));
        }
    }
    for (f, &x) in rates.iter().enumerate() {
        let has_bottleneck = p.resources_of(f).iter().any(|&r| {
            let r = r as usize;
            let saturated = load[r] >= p.capacity[r] * (1.0 - tol) - tol;
            saturated && x >= maxrate[r] * (1.0 - tol) - tol
        });
        if !has_bottleneck {
            return Err(format!("flow {f} (rate {x}) has no bottleneck"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A problem on resources of capacities `caps`, one flow per list of
    /// resources.
    fn problem<F: IntoIterator<Item = u32>>(
        caps: Vec<f64>,
        flows: impl IntoIterator<Item = F>,
    ) -> Problem {
        let mut p = Problem::new(caps);
        for f in flows {
            let v: Vec<u32> = f.into_iter().collect();
            p.add_flow(&v);
        }
        p
    }

    /// Links A, B of capacity 1. Flow 0 crosses both, flow 1 uses A, flow 2 uses B.
    fn parking_lot() -> Problem {
        problem(vec![1.0, 1.0], [vec![0, 1], vec![0], vec![1]])
    }

    /// Link 0 (cap 10) shared by flows 0,1,2; link 1 (cap 2) carries flow 0 and 3.
    fn two_level() -> Problem {
        problem(vec![10.0, 2.0], [vec![0, 1], vec![0], vec![0], vec![1]])
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() < 1e-9 * (1.0 + y.abs()))
    }

    #[test]
    fn single_flow_gets_the_narrowest_link() {
        let mut p = Problem::new(vec![10.0, 4.0, 7.0]);
        p.add_flow(&[0, 1, 2]);
        assert_eq!(max_min_rates(&p), vec![4.0]);
    }

    #[test]
    fn classic_parking_lot() {
        // Max-min: everyone gets 1/2.
        assert!(close(&max_min_rates(&parking_lot()), &[0.5, 0.5, 0.5]));
    }

    #[test]
    fn hand_worked_two_level_example() {
        // Link 1 saturates first at 1 each (flows 0, 3). Link 0 then has 9 left for
        // flows 1, 2: 4.5 each.
        assert!(close(&max_min_rates(&two_level()), &[1.0, 4.5, 4.5, 1.0]));
    }

    #[test]
    fn incast_and_fanout_on_host_nics() {
        // Hosts 0..3 with up (0..3) and down (4..7) NICs of 100.
        // 0->3, 1->3, 2->3 (incast on down 7) and 0->1 shares up 0.
        let mut p = Problem::new(vec![100.0; 8]);
        p.add_flow(&[0, 7]);
        p.add_flow(&[1, 7]);
        p.add_flow(&[2, 7]);
        p.add_flow(&[0, 5]);
        // down 7: 100/3 each; host 0's up then has 66.7 for 0->1.
        let r = max_min_rates(&p);
        assert!(
            close(&r, &[100.0 / 3.0, 100.0 / 3.0, 100.0 / 3.0, 200.0 / 3.0]),
            "{r:?}"
        );
        check_max_min(&p, &r, 1e-9).unwrap();
    }

    #[test]
    fn the_checker_rejects_a_non_max_min_allocation() {
        let p = parking_lot();
        // Feasible, but flow 1 could grow at flow 0's expense: not max-min.
        assert!(check_max_min(&p, &[0.2, 0.8, 0.8], 1e-9).is_err());
        // Infeasible.
        assert!(check_max_min(&p, &[0.6, 0.6, 0.4], 1e-9).is_err());
    }

    fn arb_problem() -> impl Strategy<Value = Problem> {
        (1usize..8).prop_flat_map(|nr| {
            (
                prop::collection::vec(1.0f64..100.0, nr),
                prop::collection::vec(
                    prop::collection::btree_set(0..nr as u32, 1..=nr.min(4)),
                    1..20,
                ),
            )
                .prop_map(|(caps, flows)| problem(caps, flows))
        })
    }

    /// Many ties: small integer capacities, flows over 1..=4 of them.
    fn arb_tied_problem() -> impl Strategy<Value = Problem> {
        (1usize..10).prop_flat_map(|nr| {
            (
                prop::collection::vec(1u32..4, nr),
                prop::collection::vec(
                    prop::collection::btree_set(0..nr as u32, 1..=nr.min(4)),
                    1..40,
                ),
            )
                .prop_map(|(caps, flows)| problem(caps.into_iter().map(f64::from).collect(), flows))
        })
    }

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn one_solver_reused_across_problems_of_different_shapes() {
        let mut s = Solver::default();
        let mut rates = Vec::new();
        let mut big = Problem::new(vec![1.0; 6]);
        for f in 0..30u32 {
            big.add_flow(&[f % 6, (f * 7 + 1) % 6]);
        }
        let mut small = Problem::new(vec![2.0]);
        small.add_flow(&[0]);
        for p in [&big, &small, &big] {
            s.solve(p, &mut rates);
            assert!(same_bits(&rates, &reference::water_filling(p)));
        }
    }

    #[test]
    fn the_brute_force_oracle_solves_the_hand_worked_example() {
        assert!(close(
            &reference::brute_force(&two_level()),
            &[1.0, 4.5, 4.5, 1.0]
        ));
    }

    /// Solves each connected component of `p` (flows linked by shared
    /// resources) as a problem of its own, resources and flows in their
    /// relative order, and puts the rates back in `p`'s flow order.
    fn solve_by_components(p: &Problem) -> Vec<f64> {
        let nr = p.capacity.len();
        // Component label of each resource, by flooding (brute force).
        let mut label: Vec<usize> = (0..nr).collect();
        loop {
            let mut moved = false;
            for f in 0..p.flows() {
                let rs = p.resources_of(f);
                let low = rs.iter().map(|&r| label[r as usize]).min().unwrap_or(0);
                for &r in rs {
                    if label[r as usize] != low {
                        label[r as usize] = low;
                        moved = true;
                    }
                }
            }
            if !moved {
                break;
            }
        }
        let mut rates = vec![0.0; p.flows()];
        for c in 0..nr {
            let res: Vec<usize> = (0..nr).filter(|&r| label[r] == c).collect();
            let flows: Vec<usize> = (0..p.flows())
                .filter(|&f| {
                    p.resources_of(f)
                        .first()
                        .is_some_and(|&r| label[r as usize] == c)
                })
                .collect();
            if flows.is_empty() {
                continue;
            }
            let mut q = Problem::new(res.iter().map(|&r| p.capacity[r]).collect());
            for &f in &flows {
                let v: Vec<u32> = p
                    .resources_of(f)
                    .iter()
                    .map(|&r| res.iter().position(|&x| x == r as usize).unwrap() as u32)
                    .collect();
                q.add_flow(&v);
            }
            for (&f, x) in flows.iter().zip(max_min_rates(&q)) {
                rates[f] = x;
            }
        }
        rates
    }

    #[test]
    fn components_are_solved_independently_by_hand() {
        // Two components: {0: [A, B], 1: [B]} and {2: [C]}.
        let mut p = Problem::new(vec![1.0, 3.0, 5.0]);
        p.add_flow(&[0, 1]);
        p.add_flow(&[1]);
        p.add_flow(&[2]);
        assert_eq!(solve_by_components(&p), vec![1.0, 2.0, 5.0]);
        assert!(same_bits(&max_min_rates(&p), &solve_by_components(&p)));
    }

    proptest! {
        /// `Sharing` re-solves only the components a round changed: each
        /// component alone gives the same rates as the whole problem, to the
        /// bit (the filling level a component reaches is never raised by
        /// another component's: a share that rounding puts below the level
        /// comes from the component's own freezing just before).
        #[test]
        fn components_solved_alone_equal_the_whole_bit_for_bit(p in arb_problem()) {
            prop_assert!(same_bits(&max_min_rates(&p), &solve_by_components(&p)));
        }

        #[test]
        fn components_solved_alone_equal_the_whole_with_ties(p in arb_tied_problem()) {
            prop_assert!(same_bits(&max_min_rates(&p), &solve_by_components(&p)));
        }

        /// Many small components, tied capacities.
        #[test]
        fn components_solved_alone_equal_the_whole_when_sparse(
            (caps, flows) in (2usize..24).prop_flat_map(|nr| (
                prop::collection::vec(prop_oneof![1u32..4, 1u32..1000], nr),
                prop::collection::vec(prop::collection::btree_set(0..nr as u32, 1..3), 1..40),
            ))
        ) {
            let p = problem(caps.into_iter().map(|c| f64::from(c) / 7.0).collect(), flows);
            prop_assert!(same_bits(&max_min_rates(&p), &solve_by_components(&p)));
        }

        /// A problem grown by appending flows (and resources), with changed
        /// capacities, solved by extending the last index gives the cold
        /// solve's rates and bottlenecks, bit for bit; and a cold solve of
        /// another problem in between resets the index.
        #[test]
        fn solving_an_extended_problem_equals_a_cold_solve(
            (p, cut, more, caps) in arb_tied_problem().prop_flat_map(|p| {
                let nf = p.flows();
                let nr = p.capacity.len();
                (
                    Just(p),
                    0..=nf,
                    prop::collection::vec(prop::collection::btree_set(0..nr as u32 + 2, 1..4), 0..6),
                    prop::collection::vec(prop_oneof![1u32..4, 1u32..1000], nr + 2),
                )
            })
        ) {
            // `first`: p's first `cut` flows; `grown`: all of p's flows, then
            // `more` over two extra resources, every capacity redrawn.
            let mut first = Problem::new(p.capacity.clone());
            for f in 0..cut {
                first.add_flow(p.resources_of(f));
            }
            let mut grown = Problem::new(caps.iter().map(|&c| f64::from(c) / 3.0).collect());
            for f in 0..p.flows() {
                grown.add_flow(p.resources_of(f));
            }
            for f in &more {
                let v: Vec<u32> = f.iter().copied().collect();
                grown.add_flow(&v);
            }
            let mut cold = Solver::default();
            let mut want = Vec::new();
            cold.solve(&grown, &mut want);
            let mut warm = Solver::default();
            let mut got = Vec::new();
            warm.solve(&first, &mut got);
            warm.solve_extending(&grown, cut, &mut got);
            prop_assert!(same_bits(&got, &want));
            prop_assert_eq!(warm.bottlenecks(), cold.bottlenecks());
            // Extending twice, and a cold solve after.
            warm.solve(&first, &mut got);
            warm.solve_extending(&p, cut, &mut got);
            warm.solve_extending(&grown, p.flows(), &mut got);
            prop_assert!(same_bits(&got, &want));
            warm.solve(&first, &mut got);
            let mut again = Vec::new();
            cold.solve(&first, &mut again);
            prop_assert!(same_bits(&got, &again));
        }

        #[test]
        fn lazy_heap_equals_the_old_water_filling_bit_for_bit(p in arb_problem()) {
            let mut rates = Vec::new();
            Solver::default().solve(&p, &mut rates);
            prop_assert!(same_bits(&rates, &reference::water_filling(&p)));
        }

        #[test]
        fn lazy_heap_equals_the_old_water_filling_with_ties(p in arb_tied_problem()) {
            let mut rates = Vec::new();
            Solver::default().solve(&p, &mut rates);
            prop_assert!(same_bits(&rates, &reference::water_filling(&p)));
        }

        #[test]
        fn lazy_heap_agrees_with_brute_force_progressive_filling(p in arb_problem()) {
            let r = max_min_rates(&p);
            let b = reference::brute_force(&p);
            prop_assert!(close(&r, &b), "{:?} vs {:?}", r, b);
        }

        #[test]
        fn brute_force_agrees_with_lazy_heap_under_ties(p in arb_tied_problem()) {
            let r = max_min_rates(&p);
            let b = reference::brute_force(&p);
            prop_assert!(close(&r, &b), "{:?} vs {:?}", r, b);
            prop_assert!(check_max_min(&p, &b, 1e-9).is_ok());
        }

        #[test]
        fn solution_satisfies_the_max_min_characterisation(p in arb_problem()) {
            let r = max_min_rates(&p);
            prop_assert!(check_max_min(&p, &r, 1e-9).is_ok(), "{:?}", check_max_min(&p, &r, 1e-9));
        }

        #[test]
        fn flow_order_does_not_matter(p in arb_problem()) {
            let r = max_min_rates(&p);
            let mut q = Problem::new(p.capacity.clone());
            for f in (0..p.flows()).rev() {
                q.add_flow(p.resources_of(f));
            }
            let mut rq = max_min_rates(&q);
            rq.reverse();
            prop_assert!(close(&r, &rq));
        }
    }
}

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
#[derive(Default)]
pub struct Solver {
    cap_left: Vec<f64>,
    unfrozen: Vec<u32>,
    res_start: Vec<u32>,
    res_flows: Vec<u32>,
    frozen: Vec<bool>,
    heap: BinaryHeap<Key>,
}

impl Solver {
    /// Writes the max-min fair rate of every flow of `p` into `rates`.
    pub fn solve(&mut self, p: &Problem, rates: &mut Vec<f64>) {
        let nr = p.capacity.len();
        let nf = p.flows();
        rates.clear();
        rates.resize(nf, 0.0);
        // Resource -> flows index (counting sort).
        self.unfrozen.clear();
        self.unfrozen.resize(nr, 0);
        for &r in &p.flow_res {
            self.unfrozen[r as usize] += 1;
        }
        self.res_start.clear();
        self.res_start.push(0);
        let mut acc = 0u32;
        for r in 0..nr {
            acc += self.unfrozen[r];
            self.res_start.push(acc);
        }
        self.res_flows.clear();
        self.res_flows.resize(acc as usize, 0);
        let mut fill: Vec<u32> = self.res_start[..nr].to_vec();
        for f in 0..nf {
            for &r in p.resources_of(f) {
                self.res_flows[fill[r as usize] as usize] = f as u32;
                fill[r as usize] += 1;
            }
        }
        self.cap_left.clear();
        self.cap_left.extend_from_slice(&p.capacity);
        self.frozen.clear();
        self.frozen.resize(nf, false);
        self.heap.clear();
        for r in 0..nr {
            if self.unfrozen[r] > 0 {
                self.heap
                    .push(Key(self.cap_left[r] / self.unfrozen[r] as f64, r as u32));
            }
        }
        let mut level = 0.0f64;
        while let Some(Key(share, r)) = self.heap.pop() {
            let ru = r as usize;
            let n = self.unfrozen[ru];
            if n == 0 || share != self.cap_left[ru] / n as f64 {
                continue; // stale entry
            }
            // Rounding can make a later share dip below the level already reached.
            let share = share.max(level);
            level = share;
            for i in self.res_start[ru]..self.res_start[ru + 1] {
                let f = self.res_flows[i as usize] as usize;
                if self.frozen[f] {
                    continue;
                }
                self.frozen[f] = true;
                rates[f] = share;
                for &r2 in p.resources_of(f) {
                    let r2u = r2 as usize;
                    if r2u == ru {
                        continue;
                    }
                    self.cap_left[r2u] = (self.cap_left[r2u] - share).max(0.0);
                    self.unfrozen[r2u] -= 1;
                    if self.unfrozen[r2u] > 0 {
                        let k = self.cap_left[r2u] / self.unfrozen[r2u] as f64;
                        self.heap.push(Key(k, r2));
                    }
                }
            }
            self.unfrozen[ru] = 0;
            self.cap_left[ru] = 0.0;
        }
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
        // Links A, B of capacity 1. Flow 0 crosses both, flow 1 uses A, flow 2 uses B.
        // Max-min: everyone gets 1/2.
        let mut p = Problem::new(vec![1.0, 1.0]);
        p.add_flow(&[0, 1]);
        p.add_flow(&[0]);
        p.add_flow(&[1]);
        assert!(close(&max_min_rates(&p), &[0.5, 0.5, 0.5]));
    }

    #[test]
    fn hand_worked_two_level_example() {
        // Link 0 (cap 10) shared by flows 0,1,2; link 1 (cap 2) carries flow 0 and 3.
        // Link 1 saturates first at 1 each (flows 0, 3). Link 0 then has 9 left for
        // flows 1, 2: 4.5 each.
        let mut p = Problem::new(vec![10.0, 2.0]);
        p.add_flow(&[0, 1]);
        p.add_flow(&[0]);
        p.add_flow(&[0]);
        p.add_flow(&[1]);
        assert!(close(&max_min_rates(&p), &[1.0, 4.5, 4.5, 1.0]));
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
        let mut p = Problem::new(vec![1.0, 1.0]);
        p.add_flow(&[0, 1]);
        p.add_flow(&[0]);
        p.add_flow(&[1]);
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
                .prop_map(|(caps, flows)| {
                    let mut p = Problem::new(caps);
                    for f in flows {
                        let v: Vec<u32> = f.into_iter().collect();
                        p.add_flow(&v);
                    }
                    p
                })
        })
    }

    proptest! {
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

//! Sirius: the uplink sizing and the request/grant congestion control of the
//! paper's Fig. 15, as pure algorithms (no simulation state).
//!
//! # Schedule
//!
//! The cyclic AWGR schedule Sirius runs over is [`crate::sched::awgr::CyclicSchedule`]
//! (shared with NegotiaToR's thin-clos).
//!
//! # Uplinks
//!
//! Sirius nodes have U' = round(m · U_esn) uplinks, where U_esn is the electrical
//! baseline's uplink count and m the uplink multiplier (1×, 1.5×, 2× in the paper's
//! Fig. 12). The default grating size ([`crate::sched::awgr::default_ports`]) is
//! G = ceil(N / U'), the smallest that gives
//! every node a port. Example (the paper's §7 setup): 128 racks with 8 baseline
//! uplinks at 1.5× give U' = 12, G = ceil(128 / 12) = 11, N' = 132: 4 dark nodes,
//! so 4/132 ≈ 3 % of every node's slots are idle.
//!
//! # Request/grant (Fig. 15)
//!
//! [`compute_requests`] and [`compute_grants`] follow the pseudocode line by
//! line. Randomness comes through the [`Picker`] trait so that tests can script
//! the random choices; the simulator passes its seeded generator.

pub use crate::rng::{shuffle, Picker};

/// Sirius uplinks per node: U' = round(multiplier · baseline uplinks).
pub fn scaled_uplinks(baseline_uplinks: u32, multiplier: f64) -> u32 {
    (multiplier * baseline_uplinks as f64).round() as u32
}

/// A tuple of F in Fig. 15: flow `flow` to destination `dst` with `cells` > 0
/// cells in LOCAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowCells {
    pub flow: u32,
    pub dst: u32,
    pub cells: u64,
}

/// A request `(d, c)` of Fig. 15: forward a cell for `dst` via intermediate `via`.
/// `flow` is the flow whose tuple was drawn; only the source uses it (to pick
/// which cell to move when the grant comes back); the protocol carries `(dst, via)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub flow: u32,
    pub dst: u32,
    pub via: u32,
}

/// `compute_requests()` of Fig. 15. `flows` is F, `candidates` is C (= N, the
/// intermediates the node may use); both are consumed as the pseudocode consumes
/// them. While both are non-empty: draw a tuple `(f, d, p)` uniformly from F and
/// remove it, draw a candidate `c` uniformly from C and remove it, emit `(d, c)`,
/// and put `(f, d, p − 1)` back if `p > 1`. Requests are appended to `out`.
///
/// Hence never two requests to the same intermediate, and never more requests
/// for a flow than it has cells.
pub fn compute_requests<P: Picker>(
    flows: &mut Vec<FlowCells>,
    candidates: &mut Vec<u32>,
    picker: &mut P,
    out: &mut Vec<Request>,
) {
    compute_requests_with(flows, candidates, picker, |r| out.push(r));
}

/// [`compute_requests`] handing each request to `emit` as it is drawn
/// (the fabric acts on it at once instead of collecting them first).
#[inline]
pub fn compute_requests_with<P: Picker>(
    flows: &mut Vec<FlowCells>,
    candidates: &mut Vec<u32>,
    picker: &mut P,
    mut emit: impl FnMut(Request),
) {
    flows.retain(|f| f.cells > 0);
    while !flows.is_empty() && !candidates.is_empty() {
        // Line 5: random_select(F) removes the tuple; lines 8-9 reinsert it with
        // p − 1. Decrementing in place is the same set operation.
        let i = picker.pick(flows.len());
        // Line 6: random_select(C) removes the candidate.
        let j = picker.pick(candidates.len());
        let c = candidates.swap_remove(j);
        let f = &mut flows[i];
        emit(Request {
            flow: f.flow,
            dst: f.dst,
            via: c,
        });
        f.cells -= 1;
        if f.cells == 0 {
            flows.swap_remove(i);
        }
    }
}

/// A request as received by an intermediate: from `src`, for destination `dst`
/// (`flow` is carried through to the grant for the source's bookkeeping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub src: u32,
    pub dst: u32,
    pub flow: u32,
}

/// `compute_grants()` of Fig. 15. `requests` are those received in the previous
/// epoch (R); they are visited in a random order (the paper's "randomly select a
/// request per destination"), and a request for `d` is granted iff
/// `m[d] < q`, in which case `m[d]` is incremented. `m[d]` is the number of cells
/// queued for `d` plus the grants for `d` still outstanding; the caller keeps it
/// (the fabric passes its live per-destination counters). Grants go to `out`.
///
/// Hence `m[d]` never exceeds `q` if it started at or below `q`.
pub fn compute_grants<P: Picker>(
    requests: &mut [Received],
    m: &mut [u32],
    q: u32,
    picker: &mut P,
    out: &mut Vec<Received>,
) {
    compute_grants_with(requests, m, q, picker, |r, granted| {
        if granted {
            out.push(*r);
        }
    });
}

/// [`compute_grants`] handing every request to `decide`, in the order they
/// are visited, with whether it was granted: the fabric answers each at once
/// (no list of grants to match against the requests afterwards).
#[inline]
pub fn compute_grants_with<P: Picker>(
    requests: &mut [Received],
    m: &mut [u32],
    q: u32,
    picker: &mut P,
    mut decide: impl FnMut(&Received, bool),
) {
    shuffle(requests, picker);
    for r in requests.iter() {
        let md = &mut m[r.dst as usize];
        let granted = *md < q;
        if granted {
            *md += 1;
        }
        decide(r, granted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;
    use crate::sched::awgr::default_ports;
    use proptest::prelude::*;

    /// Replays scripted choices (each must be < n).
    struct Script(Vec<usize>, usize);
    impl Picker for Script {
        fn pick(&mut self, n: usize) -> usize {
            let v = self.0[self.1];
            self.1 += 1;
            assert!(v < n, "scripted choice {v} out of 0..{n}");
            v
        }
    }

    #[test]
    fn paper_setup_sizes() {
        let u = scaled_uplinks(8, 1.5);
        assert_eq!(u, 12);
        let g = default_ports(128, u as usize);
        assert_eq!(g, 11);
        assert_eq!(scaled_uplinks(8, 1.0), 8);
        assert_eq!(scaled_uplinks(8, 2.0), 16);
    }

    proptest! {
        #[test]
        fn requests_respect_cells_and_intermediates(
            cells in prop::collection::vec(1u64..6, 0..12),
            ncand in 0usize..20,
            seed in 0u64..1000,
        ) {
            let mut rng = RngStreams::new(seed).stream("t");
            let mut flows: Vec<FlowCells> = cells.iter().enumerate()
                .map(|(i, &c)| FlowCells { flow: i as u32, dst: (i % 3) as u32, cells: c })
                .collect();
            let mut cand: Vec<u32> = (0..ncand as u32).collect();
            let mut out = Vec::new();
            compute_requests(&mut flows, &mut cand, &mut rng, &mut out);
            let total: u64 = cells.iter().sum();
            // Terminates when either set is empty.
            prop_assert_eq!(out.len() as u64, total.min(ncand as u64));
            let mut via: Vec<u32> = out.iter().map(|r| r.via).collect();
            via.sort_unstable();
            via.dedup();
            prop_assert_eq!(via.len(), out.len(), "two requests to one intermediate");
            for (i, &c) in cells.iter().enumerate() {
                let n = out.iter().filter(|r| r.flow == i as u32).count() as u64;
                prop_assert!(n <= c, "flow {i}: {n} requests for {c} cells");
                prop_assert!(out.iter().filter(|r| r.flow == i as u32).all(|r| r.dst == (i % 3) as u32));
            }
        }

        #[test]
        fn grants_never_exceed_the_bound(
            dsts in prop::collection::vec(0u32..5, 0..40),
            m0 in prop::collection::vec(0u32..5, 5),
            q in 2u32..6,
            seed in 0u64..1000,
        ) {
            let mut rng = RngStreams::new(seed).stream("t");
            let mut reqs: Vec<Received> = dsts.iter().enumerate()
                .map(|(i, &d)| Received { src: i as u32, dst: d, flow: i as u32 })
                .collect();
            let mut m: Vec<u32> = m0.iter().map(|&x| x.min(q)).collect();
            let before = m.clone();
            let mut out = Vec::new();
            compute_grants(&mut reqs, &mut m, q, &mut rng, &mut out);
            for d in 0..5u32 {
                let asked = dsts.iter().filter(|&&x| x == d).count() as u32;
                let granted = out.iter().filter(|g| g.dst == d).count() as u32;
                prop_assert!(m[d as usize] <= q);
                prop_assert_eq!(m[d as usize], before[d as usize] + granted);
                // Grants as many as fit: all requests, or up to the bound.
                prop_assert_eq!(granted, asked.min(q - before[d as usize]));
            }
        }
    }

    /// The Vec-building `compute_requests` as it was before the callback
    /// form: the oracle for `compute_requests_with`.
    fn requests_oracle(
        flows: &mut Vec<FlowCells>,
        candidates: &mut Vec<u32>,
        picker: &mut SimRngPicker,
        out: &mut Vec<Request>,
    ) {
        flows.retain(|f| f.cells > 0);
        while !flows.is_empty() && !candidates.is_empty() {
            let i = picker.pick(flows.len());
            let j = picker.pick(candidates.len());
            let c = candidates.swap_remove(j);
            let f = &mut flows[i];
            out.push(Request {
                flow: f.flow,
                dst: f.dst,
                via: c,
            });
            f.cells -= 1;
            if f.cells == 0 {
                flows.swap_remove(i);
            }
        }
    }

    type SimRngPicker = crate::rng::SimRng;

    /// `compute_grants` as it was before the callback form (the oracle).
    fn grants_oracle(
        requests: &mut [Received],
        m: &mut [u32],
        q: u32,
        picker: &mut SimRngPicker,
        out: &mut Vec<Received>,
    ) {
        shuffle(requests, picker);
        for r in requests.iter() {
            let md = &mut m[r.dst as usize];
            if *md < q {
                *md += 1;
                out.push(*r);
            }
        }
    }

    proptest! {
        /// The callback forms against the Vec forms they replace in the
        /// fabric: the same requests in the same order, the same grant
        /// flags as matching the grant list against the shuffled requests
        /// (what `RequestGrant::grant` did), the same m and the same
        /// generator state afterwards.
        #[test]
        fn callback_forms_match_the_vec_forms(
            cells in prop::collection::vec(0u64..6, 0..12),
            ncand in 0usize..20,
            dsts in prop::collection::vec((0u32..5, 0u32..3), 0..40),
            m0 in prop::collection::vec(0u32..5, 5),
            q in 2u32..6,
            seed in 0u64..1000,
        ) {
            let flows0: Vec<FlowCells> = cells.iter().enumerate()
                .map(|(i, &c)| FlowCells { flow: i as u32, dst: (i % 3) as u32, cells: c })
                .collect();
            let cand0: Vec<u32> = (0..ncand as u32).rev().collect();
            let mut ra = RngStreams::new(seed).stream("t");
            let mut rb = ra.clone();
            let (mut fa, mut ca, mut oa) = (flows0.clone(), cand0.clone(), Vec::new());
            requests_oracle(&mut fa, &mut ca, &mut ra, &mut oa);
            let (mut fb, mut cb, mut ob) = (flows0, cand0, Vec::new());
            compute_requests_with(&mut fb, &mut cb, &mut rb, |r| ob.push(r));
            prop_assert_eq!(&oa, &ob);
            prop_assert_eq!(&fa, &fb);
            prop_assert_eq!(&ca, &cb);

            // Duplicate requests (same source and destination) included.
            let reqs0: Vec<Received> = dsts.iter()
                .map(|&(d, s)| Received { src: s, dst: d, flow: s })
                .collect();
            let m0: Vec<u32> = m0.iter().map(|&x| x.min(q)).collect();
            let (mut qa, mut ma, mut grants) = (reqs0.clone(), m0.clone(), Vec::new());
            grants_oracle(&mut qa, &mut ma, q, &mut ra, &mut grants);
            let mut g = 0;
            let walked: Vec<(Received, bool)> = qa.iter().map(|r| {
                let granted = g < grants.len() && grants[g] == *r;
                g += granted as usize;
                (*r, granted)
            }).collect();
            prop_assert_eq!(g, grants.len());
            let (mut qb, mut mb, mut decided) = (reqs0, m0, Vec::new());
            compute_grants_with(&mut qb, &mut mb, q, &mut rb, |r, granted| decided.push((*r, granted)));
            prop_assert_eq!(walked, decided);
            prop_assert_eq!(ma, mb);
            use rand::RngCore;
            prop_assert_eq!(ra.next_u64(), rb.next_u64());
        }
    }

    /// F of the hand-worked example: (f7, d=3, p=2), (f9, d=5, p=1).
    fn fig15_flows() -> Vec<FlowCells> {
        let f = |flow, dst, cells| FlowCells { flow, dst, cells };
        vec![f(7, 3, 2), f(9, 5, 1)]
    }

    #[test]
    fn fig15_by_hand() {
        // compute_requests at a node with
        //   F = [(f7, d=3, p=2), (f9, d=5, p=1)],  C = [0, 1, 2, 3].
        // Scripted random_select choices (index into the current vector):
        //   iter 1: F[0] = (f7,3,2); C[2] = 2  -> request (3 via 2); f7 -> p=1;
        //           C = [0, 1, 3] (swap_remove moved 3 into index 2).
        //   iter 2: F[1] = (f9,5,1); C[0] = 0  -> request (5 via 0); f9 is used up
        //           and removed: F = [(f7,3,1)]; C = [3, 1].
        //   iter 3: F[0] = (f7,3,1); C[1] = 1  -> request (3 via 1); F = [] -> stop
        //           with C = [3] left (F emptied first).
        let mut flows = fig15_flows();
        let mut cand = vec![0, 1, 2, 3];
        let mut out = Vec::new();
        let mut script = Script(vec![0, 2, 1, 0, 0, 1], 0);
        compute_requests(&mut flows, &mut cand, &mut script, &mut out);
        let got: Vec<(u32, u32, u32)> = out.iter().map(|r| (r.flow, r.dst, r.via)).collect();
        assert_eq!(got, vec![(7, 3, 2), (9, 5, 0), (7, 3, 1)]);
        assert!(flows.is_empty());
        assert_eq!(cand, vec![3]);

        // The same with fewer intermediates than cells: C = [4], F as above.
        //   iter 1: F[1] = (f9,5,1), C[0] = 4 -> request (5 via 4); C empty -> stop.
        let mut flows = fig15_flows();
        let mut cand = vec![4];
        let mut out = Vec::new();
        compute_requests(&mut flows, &mut cand, &mut Script(vec![1, 0], 0), &mut out);
        assert_eq!(
            out,
            vec![Request {
                flow: 9,
                dst: 5,
                via: 4
            }]
        );

        // compute_grants at an intermediate with Q = 4 and
        //   m[3] = 3 (say 2 queued + 1 outstanding), m[5] = 0.
        // Requests received last epoch: A=(s1,d3), B=(s2,d3), C=(s4,d5).
        // The shuffle (Fisher-Yates from the back) with picks [0, 1]:
        //   i=2: swap(2, 0) -> [C, B, A];  i=1: swap(1, 1) -> [C, B, A].
        // Visit C: m[5] = 0 < 4 -> grant (s4,d5), m[5] = 1.
        // Visit B: m[3] = 3 < 4 -> grant (s2,d3), m[3] = 4.
        // Visit A: m[3] = 4, not < 4 -> no grant.
        let mut reqs = vec![
            Received {
                src: 1,
                dst: 3,
                flow: 0,
            },
            Received {
                src: 2,
                dst: 3,
                flow: 0,
            },
            Received {
                src: 4,
                dst: 5,
                flow: 0,
            },
        ];
        let mut m = vec![0, 0, 0, 3, 0, 0];
        let mut grants = Vec::new();
        compute_grants(
            &mut reqs,
            &mut m,
            4,
            &mut Script(vec![0, 1], 0),
            &mut grants,
        );
        let got: Vec<(u32, u32)> = grants.iter().map(|g| (g.src, g.dst)).collect();
        assert_eq!(got, vec![(4, 5), (2, 3)]);
        assert_eq!((m[3], m[5]), (4, 1));
    }
}

//! Traffic Matrix Scheduling (Mordia, SIGCOMM'13 §3.3, §4.3) and the hotspot
//! scheduling baseline, as pure functions on square matrices.
//!
//! * [`validate_demand`]: a demand matrix must be square with finite,
//!   non-negative entries.
//! * [`sinkhorn`]: alternate row and column normalisation of a (possibly
//!   inadmissible) traffic demand matrix (TDM) into a doubly stochastic
//!   bandwidth allocation matrix (BAM). Scaling multiplies entries, so zeros stay
//!   exactly zero. A row or column without demand cannot be scaled to sum 1 and
//!   is an error (the caller decides what an idle port should get).
//! * [`bvn`]: Birkhoff–von Neumann decomposition of a doubly stochastic matrix
//!   into weighted permutations `BAM = Σ c_i P_i`, weights summing to 1, at most
//!   N² − 2N + 2 terms, returned longest first (the order longest-time-slot-first
//!   scheduling uses). Each step takes a perfect matching on the positive
//!   entries, preferring large entries, and subtracts its smallest entry; the
//!   previous matching is repaired rather than recomputed, so a decomposition
//!   costs O(terms · N²).
//! * [`truncate`]: keep the `n` longest slots for the circuit switch; the rest
//!   of the BAM goes to a packet switch.
//! * [`hotspot`]: greedy maximum-weight matching of one interval (the
//!   stateless baseline: largest entries first, one per row and column).
//!
//! Matrices are `Vec<Vec<f64>>` with sources as rows and destinations as
//! columns; a permutation is `perm[src] = dst`.

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

/// A square matrix, rows = sources, columns = destinations.
pub type Matrix = Vec<Vec<f64>>;

/// One term of a decomposition: `weight` × the permutation `perm[src] = dst`.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub weight: f64,
    pub perm: Vec<usize>,
}

/// Checks that `m` is a square matrix of finite, non-negative entries.
/// The error names the offending entry and says why.
pub fn validate_demand(m: &Matrix) -> Result<(), String> {
    let n = m.len();
    if n == 0 {
        return Err("the demand matrix is empty".into());
    }
    for (i, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(format!(
                "row {i} has {} entries but the matrix has {n} rows: it must be square",
                row.len()
            ));
        }
        for (j, &v) in row.iter().enumerate() {
            if !v.is_finite() {
                return Err(format!(
                    "entry ({i}, {j}) is {v}: demand must be a finite number"
                ));
            }
            if v < 0.0 {
                return Err(format!(
                    "entry ({i}, {j}) is {v}: demand cannot be negative"
                ));
            }
        }
    }
    Ok(())
}

/// Row and column sums of `m`.
pub fn line_sums(m: &Matrix) -> (Vec<f64>, Vec<f64>) {
    let n = m.len();
    let mut r = vec![0.0; n];
    let mut c = vec![0.0; n];
    for (i, row) in m.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            r[i] += v;
            c[j] += v;
        }
    }
    (r, c)
}

/// The largest deviation of any row or column sum of `m` from 1.
pub fn stochastic_error(m: &Matrix) -> f64 {
    let (r, c) = line_sums(m);
    r.iter()
        .chain(c.iter())
        .map(|s| (s - 1.0).abs())
        .fold(0.0, f64::max)
}

/// The result of [`sinkhorn`].
#[derive(Clone, Debug)]
pub struct Scaled {
    pub bam: Matrix,
    /// Row-then-column sweeps performed.
    pub iterations: usize,
    /// Largest |line sum − 1| at the end.
    pub error: f64,
}

/// Sinkhorn–Knopp scaling of a demand matrix to a doubly stochastic BAM, to
/// within `tol` on every row and column sum, in at most `max_iter` sweeps.
///
/// A matrix with total support (every positive entry lies on a positive
/// diagonal, e.g. any matrix with all off-diagonal entries positive) converges;
/// one that only has support converges slowly (entries off every positive
/// diagonal go to 0) and may hit `max_iter`, which is an error. A zero row or
/// column is an error.
pub fn sinkhorn(demand: &Matrix, tol: f64, max_iter: usize) -> Result<Scaled, String> {
    validate_demand(demand)?;
    let n = demand.len();
    let (r, c) = line_sums(demand);
    if let Some(i) = r.iter().position(|&s| s == 0.0) {
        return Err(format!(
            "source {i} has no demand: its row cannot be scaled to sum 1"
        ));
    }
    if let Some(j) = c.iter().position(|&s| s == 0.0) {
        return Err(format!(
            "destination {j} has no demand: its column cannot be scaled to sum 1"
        ));
    }
    let mut m = demand.clone();
    for it in 1..=max_iter {
        for row in m.iter_mut() {
            let s: f64 = row.iter().sum();
            for v in row.iter_mut() {
                *v /= s;
            }
        }
        let mut col = vec![0.0; n];
        for row in &m {
            for (j, &v) in row.iter().enumerate() {
                col[j] += v;
            }
        }
        for row in m.iter_mut() {
            for (j, v) in row.iter_mut().enumerate() {
                *v /= col[j];
            }
        }
        let error = stochastic_error(&m);
        if error <= tol {
            return Ok(Scaled {
                bam: m,
                iterations: it,
                error,
            });
        }
    }
    Err(format!(
        "did not converge to within {tol} in {max_iter} iterations (error {}): the zero pattern has no total support",
        stochastic_error(&m)
    ))
}

const NONE: usize = usize::MAX;

/// Perfect matching in the bipartite graph of `allowed(i, j)`, warm-started
/// from `row_to` (entries that are no longer allowed are dropped first).
/// Augmenting paths try columns in decreasing order of `value(i, j)`.
/// Returns whether every row is matched.
pub(crate) fn perfect_matching(
    n: usize,
    allowed: &dyn Fn(usize, usize) -> bool,
    value: &dyn Fn(usize, usize) -> f64,
    row_to: &mut Vec<usize>,
) -> bool {
    row_to.resize(n, NONE);
    let mut col_to = vec![NONE; n];
    #[allow(clippy::needless_range_loop)]
    for i in 0..n {
        let j = row_to[i];
        if j != NONE && (!allowed(i, j) || col_to[j] != NONE) {
            row_to[i] = NONE;
        } else if j != NONE {
            col_to[j] = i;
        }
    }
    // Column orders by decreasing value, per row, computed lazily.
    let mut order: Vec<Option<Vec<usize>>> = vec![None; n];
    let mut seen = vec![0u32; n];
    let mut stamp = 0u32;
    #[allow(clippy::too_many_arguments)]
    fn augment(
        i: usize,
        n: usize,
        allowed: &dyn Fn(usize, usize) -> bool,
        value: &dyn Fn(usize, usize) -> f64,
        order: &mut Vec<Option<Vec<usize>>>,
        seen: &mut Vec<u32>,
        stamp: u32,
        row_to: &mut Vec<usize>,
        col_to: &mut Vec<usize>,
    ) -> bool {
        if order[i].is_none() {
            let mut cols: Vec<usize> = (0..n).filter(|&j| allowed(i, j)).collect();
            cols.sort_by(|&a, &b| value(i, b).total_cmp(&value(i, a)).then(a.cmp(&b)));
            order[i] = Some(cols);
        }
        let cols = order[i].clone().unwrap();
        // First a free column (cheap), then augmenting paths.
        for &j in &cols {
            if col_to[j] == NONE {
                row_to[i] = j;
                col_to[j] = i;
                return true;
            }
        }
        for &j in &cols {
            if seen[j] == stamp {
                continue;
            }
            seen[j] = stamp;
            let k = col_to[j];
            if augment(k, n, allowed, value, order, seen, stamp, row_to, col_to) {
                row_to[i] = j;
                col_to[j] = i;
                return true;
            }
        }
        false
    }
    for i in 0..n {
        if row_to[i] != NONE {
            continue;
        }
        stamp += 1;
        if !augment(
            i,
            n,
            allowed,
            value,
            &mut order,
            &mut seen,
            stamp,
            row_to,
            &mut col_to,
        ) {
            return false;
        }
    }
    true
}

/// Birkhoff–von Neumann decomposition of a doubly stochastic matrix (every
/// row and column sum within `tol` of 1). Terms are returned longest first;
/// their weights sum to 1 (to within `tol`), and `Σ c_i P_i` reconstructs the
/// matrix to within a few ulps per term. Entries that fall below 1e-13 after a
/// subtraction are treated as zero.
pub fn bvn(bam: &Matrix, tol: f64) -> Result<Vec<Term>, String> {
    bvn_until(bam, tol, 0.0)
}

/// [`bvn`] that stops once less than `stop_below` of the schedule is left
/// undecomposed (every later term would be shorter than that, so a caller
/// that drops such slots anyway need not compute them). The terms returned
/// then sum to at least `1 − stop_below`.
pub fn bvn_until(bam: &Matrix, tol: f64, stop_below: f64) -> Result<Vec<Term>, String> {
    validate_demand(bam)?;
    let err = stochastic_error(bam);
    if err > tol {
        return Err(format!(
            "not doubly stochastic: a line sum is {err} away from 1 (tolerance {tol})"
        ));
    }
    let n = bam.len();
    const EPS: f64 = 1e-13;
    let mut m = bam.clone();
    let mut left = 1.0f64;
    let mut terms = Vec::new();
    let mut row_to = vec![NONE; n];
    let limit = n * n - 2 * n + 2;
    while left > EPS * n as f64 && left >= stop_below {
        let ok = {
            let mm = &m;
            perfect_matching(n, &|i, j| mm[i][j] > EPS, &|i, j| mm[i][j], &mut row_to)
        };
        if !ok {
            // Only rounding residue is left (a doubly stochastic matrix always
            // has a perfect matching on its support).
            let rest: f64 = m.iter().flatten().sum::<f64>() / n as f64;
            if rest <= tol.max(1e-9) {
                break;
            }
            return Err(format!(
                "no perfect matching with {rest} of the schedule left: the matrix is not doubly stochastic"
            ));
        }
        let w = (0..n)
            .map(|i| m[i][row_to[i]])
            .fold(f64::INFINITY, f64::min);
        for i in 0..n {
            let v = &mut m[i][row_to[i]];
            *v -= w;
            if *v <= EPS {
                *v = 0.0;
            }
        }
        left -= w;
        terms.push(Term {
            weight: w,
            perm: row_to.clone(),
        });
        if terms.len() > limit {
            return Err(format!(
                "decomposition exceeded N²−2N+2 = {limit} terms: the matrix is not doubly stochastic within {tol}"
            ));
        }
    }
    terms.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    Ok(terms)
}

/// `Σ c_i P_i` for a list of terms on `n` ports.
pub fn reconstruct(n: usize, terms: &[Term]) -> Matrix {
    let mut m = vec![vec![0.0; n]; n];
    for t in terms {
        for (i, &j) in t.perm.iter().enumerate() {
            if j != NONE {
                m[i][j] += t.weight;
            }
        }
    }
    m
}

/// Longest-time-slot-first truncation (§4.3): the `n` longest terms go to the
/// circuit switch, the rest of the BAM to the packet switch.
#[derive(Clone, Debug)]
pub struct Truncated {
    /// The circuit slots kept, longest first.
    pub slots: Vec<Term>,
    /// What the circuit slots carry, `Σ_{k<n} c_k P_k`.
    pub circuit: Matrix,
    /// The rest of the BAM, for the packet switch (entries ≥ 0).
    pub packet: Matrix,
    /// Fraction of the BAM's traffic on circuits (Σ kept weights).
    pub circuit_share: f64,
}

/// Keeps the `n` longest of `terms` (already longest first, as [`bvn`]
/// returns them) and assigns the remainder of `bam` to the packet switch.
pub fn truncate(bam: &Matrix, terms: &[Term], n: usize) -> Truncated {
    let size = bam.len();
    let mut sorted: Vec<Term> = terms.to_vec();
    sorted.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    sorted.truncate(n);
    let circuit = reconstruct(size, &sorted);
    let packet = bam
        .iter()
        .zip(&circuit)
        .map(|(b, c)| b.iter().zip(c).map(|(x, y)| (x - y).max(0.0)).collect())
        .collect();
    let total: f64 = bam.iter().flatten().sum();
    let circ: f64 = circuit.iter().flatten().sum();
    Truncated {
        slots: sorted,
        circuit,
        packet,
        circuit_share: if total > 0.0 { circ / total } else { 0.0 },
    }
}

/// Duty cycle of a week of `slots` days in a week of length `week` with a
/// night of `night` per day (Table 2's D): a single configuration never
/// reconfigures (D = 1); otherwise every day pays one night.
pub fn week_duty_cycle(slots: usize, night: f64, week: f64) -> f64 {
    if slots <= 1 {
        1.0
    } else {
        (1.0 - slots as f64 * night / week).max(0.0)
    }
}

/// Duty cycle of one day (§4.1, Eq. 2): `t_stable / (t_setup + t_stable)`.
pub fn duty_cycle(t_stable: f64, t_setup: f64) -> f64 {
    t_stable / (t_setup + t_stable)
}

/// Buffer per OCS port for all-to-all traffic (§4.2, Eq. 3): B = R(N−1)T bits.
pub fn buffer_bits(rate_bps: f64, n: usize, slot_s: f64) -> f64 {
    rate_bps * (n as f64 - 1.0) * slot_s
}

/// Hotspot scheduling: one greedy matching of the largest entries (one per
/// row and column, zero entries never matched). `perm[src]` is the
/// destination or `None`.
pub fn hotspot(demand: &Matrix) -> Vec<Option<usize>> {
    let n = demand.len();
    let mut cells: Vec<(f64, usize, usize)> = Vec::with_capacity(n * n);
    for (i, row) in demand.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if v > 0.0 {
                cells.push((v, i, j));
            }
        }
    }
    cells.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut perm = vec![None; n];
    let mut col_used = vec![false; n];
    for (_, i, j) in cells {
        if perm[i].is_none() && !col_used[j] {
            perm[i] = Some(j);
            col_used[j] = true;
        }
    }
    perm
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The circulant matrix of `row`: `m[i][j] = row[(j − i) mod n]`, i.e.
    /// `Σ_k row[k] · (shift by k)` (hand-worked examples are built so).
    pub(crate) fn circulant(row: &[f64]) -> Matrix {
        let n = row.len();
        (0..n)
            .map(|i| (0..n).map(|j| row[(j + n - i) % n]).collect())
            .collect()
    }

    fn is_perm(p: &[usize]) -> bool {
        let mut seen = vec![false; p.len()];
        p.iter()
            .all(|&j| j < p.len() && !std::mem::replace(&mut seen[j], true))
    }

    #[test]
    fn bad_demand_is_rejected_with_the_entry() {
        let e = validate_demand(&vec![vec![0.0, -1.0], vec![1.0, 0.0]]).unwrap_err();
        assert!(e.contains("(0, 1)") && e.contains("negative"), "{e}");
        let e = validate_demand(&vec![vec![0.0, f64::NAN], vec![1.0, 0.0]]).unwrap_err();
        assert!(e.contains("finite"), "{e}");
        assert!(validate_demand(&vec![vec![0.0, 1.0]]).is_err());
        assert!(sinkhorn(&vec![vec![0.0, 0.0], vec![1.0, 0.0]], 1e-9, 100)
            .unwrap_err()
            .contains("source 0"));
    }

    #[test]
    fn sinkhorn_hand_worked_two_by_two() {
        // [[1, 3], [3, 1]] is already balanced: rows and columns sum to 4,
        // so one sweep divides everything by 4.
        let s = sinkhorn(&vec![vec![1.0, 3.0], vec![3.0, 1.0]], 1e-12, 10).unwrap();
        assert_eq!(s.iterations, 1);
        assert!((s.bam[0][0] - 0.25).abs() < 1e-15 && (s.bam[0][1] - 0.75).abs() < 1e-15);
        // An inadmissible uniform all-to-all (each row sums to 3) scales
        // down to 1/3 off the diagonal.
        let d = circulant(&[0.0, 1.0, 1.0, 1.0]);
        let s = sinkhorn(&d, 1e-12, 10).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                let want = if i == j { 0.0 } else { 1.0 / 3.0 };
                assert!((s.bam[i][j] - want).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn bvn_hand_worked_three_by_three() {
        // 0.5·I + 0.3·(shift 1) + 0.2·(shift 2).
        let m = circulant(&[0.5, 0.3, 0.2]);
        let t = bvn(&m, 1e-12).unwrap();
        assert_eq!(t.len(), 3);
        assert!((t[0].weight - 0.5).abs() < 1e-12 && t[0].perm == vec![0, 1, 2]);
        assert!((t[1].weight - 0.3).abs() < 1e-12 && t[1].perm == vec![1, 2, 0]);
        assert!((t[2].weight - 0.2).abs() < 1e-12 && t[2].perm == vec![2, 0, 1]);
        // Truncation to the longest two slots leaves the 0.2 shift for the
        // packet switch: 80 % on circuits.
        let tr = truncate(&m, &t, 2);
        assert!((tr.circuit_share - 0.8).abs() < 1e-12);
        assert!((tr.packet[0][2] - 0.2).abs() < 1e-12 && tr.packet[0][1] < 1e-12);
    }

    #[test]
    fn bvn_of_uniform_all_to_all_is_n_minus_one_equal_days() {
        // The 8-rack example of §3.2 without loopback: 7 days of 1/7.
        let n = 8;
        let m: Matrix = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { 0.0 } else { 1.0 / 7.0 })
                    .collect()
            })
            .collect();
        let t = bvn(&m, 1e-12).unwrap();
        assert_eq!(t.len(), 7);
        for term in &t {
            assert!((term.weight - 1.0 / 7.0).abs() < 1e-12);
            assert!(term.perm.iter().enumerate().all(|(i, &j)| i != j));
        }
    }

    #[test]
    fn bvn_until_stops_once_the_rest_is_short() {
        let m = circulant(&[0.5, 0.3, 0.2]);
        // After 0.5 and 0.3 are taken (in whatever order), 0.2 < 0.25 is left.
        let t = bvn_until(&m, 1e-12, 0.25).unwrap();
        assert_eq!(t.len(), 2);
        assert!((t.iter().map(|x| x.weight).sum::<f64>() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn bvn_rejects_a_matrix_that_is_not_doubly_stochastic() {
        let e = bvn(&vec![vec![0.5, 0.4], vec![0.5, 0.5]], 1e-9).unwrap_err();
        assert!(e.contains("not doubly stochastic"), "{e}");
    }

    #[test]
    fn duty_cycle_and_buffer_examples_of_section_4() {
        // §4.1: 10 Gbps at 90 % is 9 Gbps; §6.1: T = 106 µs, 11.5 µs night → 89.15 %.
        assert!((duty_cycle(94.5, 11.5) - 0.8915).abs() < 1e-4);
        // §4.2: R = 9 Gbps, N = 64, T = 100 ms → 7.1 GB; T = 100 µs → 7.1 MB.
        assert!((buffer_bits(9e9, 64, 0.1) / 8.0 / 1e9 - 7.0875).abs() < 1e-9);
        assert!((buffer_bits(9e9, 64, 100e-6) / 8.0 / 1e6 - 7.0875).abs() < 1e-9);
        // Table 2's D column: 10 µs nights in a 1 ms week.
        assert_eq!(week_duty_cycle(1, 10.0, 1000.0), 1.0);
        assert!((week_duty_cycle(2, 10.0, 1000.0) - 0.98).abs() < 1e-12);
        assert!((week_duty_cycle(10, 10.0, 1000.0) - 0.90).abs() < 1e-12);
    }

    #[test]
    fn hotspot_takes_the_largest_entries_greedily() {
        let d = vec![
            vec![0.0, 9.0, 8.0],
            vec![7.0, 0.0, 6.0],
            vec![1.0, 5.0, 0.0],
        ];
        // 9 (0→1), then 8 is in row 0 (taken), 7 (1→0), then row 2 can only
        // take column 2, whose entry is 0: unmatched.
        assert_eq!(hotspot(&d), vec![Some(1), Some(0), None]);
    }

    /// Random doubly stochastic matrices: a convex combination of random
    /// permutations (an oracle independent of the decomposition).
    fn arb_ds() -> impl Strategy<Value = Matrix> {
        (2usize..9).prop_flat_map(|n| {
            prop::collection::vec(
                (
                    0.01f64..1.0,
                    Just(()).prop_perturb(move |_, mut rng| {
                        let mut p: Vec<usize> = (0..n).collect();
                        for i in (1..n).rev() {
                            p.swap(i, rng.random_range(0..=i));
                        }
                        p
                    }),
                ),
                1..3 * n,
            )
            .prop_map(move |terms| {
                let total: f64 = terms.iter().map(|t| t.0).sum();
                let mut m = vec![vec![0.0; n]; n];
                for (w, p) in terms {
                    for (i, &j) in p.iter().enumerate() {
                        m[i][j] += w / total;
                    }
                }
                m
            })
        })
    }

    fn arb_positive_offdiag() -> impl Strategy<Value = Matrix> {
        (2usize..10).prop_flat_map(|n| {
            prop::collection::vec(prop::collection::vec(0.001f64..5.0, n), n).prop_map(
                move |mut m| {
                    for (i, row) in m.iter_mut().enumerate() {
                        row[i] = 0.0;
                    }
                    m
                },
            )
        })
    }

    proptest! {
        #[test]
        fn bvn_reconstructs_the_matrix_with_permutations(m in arb_ds()) {
            let n = m.len();
            let t = bvn(&m, 1e-9).unwrap();
            prop_assert!(t.len() <= n * n - 2 * n + 2);
            let sum: f64 = t.iter().map(|x| x.weight).sum();
            prop_assert!((sum - 1.0).abs() < 1e-9, "weights sum to {}", sum);
            for x in &t {
                prop_assert!(is_perm(&x.perm));
                prop_assert!(x.weight > 0.0);
            }
            for w in t.windows(2) {
                prop_assert!(w[0].weight >= w[1].weight);
            }
            let r = reconstruct(n, &t);
            for i in 0..n { for j in 0..n {
                prop_assert!((r[i][j] - m[i][j]).abs() < 1e-9, "({},{}) {} vs {}", i, j, r[i][j], m[i][j]);
            }}
        }

        #[test]
        fn sinkhorn_then_bvn_on_random_demand(m in arb_positive_offdiag()) {
            let n = m.len();
            let s = sinkhorn(&m, 1e-12, 10_000).unwrap();
            prop_assert!(stochastic_error(&s.bam) <= 1e-12);
            for i in 0..n { for j in 0..n {
                // Zeros stay zero, positives stay positive.
                prop_assert_eq!(m[i][j] == 0.0, s.bam[i][j] == 0.0);
            }}
            let t = bvn(&s.bam, 1e-9).unwrap();
            prop_assert!(t.len() <= n * n - 2 * n + 2);
            let r = reconstruct(n, &t);
            for i in 0..n { for j in 0..n {
                prop_assert!((r[i][j] - s.bam[i][j]).abs() < 1e-9);
                if i == j { prop_assert_eq!(r[i][j], 0.0); }
            }}
        }

        #[test]
        fn sinkhorn_preserves_zero_patterns_with_total_support(m in arb_ds(), scale in prop::collection::vec(0.1f64..10.0, 9)) {
            // Row-scale a doubly stochastic matrix (total support by
            // construction): Sinkhorn must recover a doubly stochastic one
            // with the same zeros.
            let n = m.len();
            let d: Matrix = m.iter().enumerate().map(|(i, r)| r.iter().map(|v| v * scale[i]).collect()).collect();
            let s = sinkhorn(&d, 1e-10, 100_000).unwrap();
            prop_assert!(s.error <= 1e-10);
            for i in 0..n { for j in 0..n {
                prop_assert_eq!(d[i][j] == 0.0, s.bam[i][j] == 0.0);
            }}
        }

        #[test]
        fn truncation_splits_the_bam_between_circuits_and_packets(m in arb_ds(), k in 0usize..20) {
            let n = m.len();
            let t = bvn(&m, 1e-9).unwrap();
            let tr = truncate(&m, &t, k);
            prop_assert_eq!(tr.slots.len(), k.min(t.len()));
            let kept: f64 = tr.slots.iter().map(|x| x.weight).sum();
            prop_assert!((kept * n as f64 / m.iter().flatten().sum::<f64>() - tr.circuit_share).abs() < 1e-9);
            for i in 0..n { for j in 0..n {
                prop_assert!((tr.circuit[i][j] + tr.packet[i][j] - m[i][j]).abs() < 1e-9);
            }}
            // The kept slots are the longest ones.
            if let Some(last) = tr.slots.last() {
                prop_assert!(t[tr.slots.len()..].iter().all(|x| x.weight <= last.weight));
            }
        }

        #[test]
        fn hotspot_is_a_greedy_matching(m in arb_positive_offdiag()) {
            let n = m.len();
            let p = hotspot(&m);
            let mut used = vec![false; n];
            for (i, j) in p.iter().enumerate() {
                if let Some(j) = *j {
                    prop_assert!(!used[j] && m[i][j] > 0.0);
                    used[j] = true;
                }
            }
            // Greedy: its largest entry is the matrix's largest entry.
            let best = m.iter().flatten().cloned().fold(0.0, f64::max);
            let got = p.iter().enumerate().filter_map(|(i, j)| j.map(|j| m[i][j])).fold(0.0, f64::max);
            prop_assert_eq!(best, got);
        }
    }
}

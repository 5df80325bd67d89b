//! A Solstice-style constrained circuit scheduler (REACToR, NSDI'14 §3.3; the
//! stuff-and-slice decomposition of Solstice, CoNEXT'15), as a pure function.
//!
//! Input: a demand matrix `D` in units of circuit time (bytes / circuit rate)
//! accumulated over one period, the period `W`, the reconfiguration time `δ`
//! and the minimum configuration length `L_min`, which *includes* δ (REACToR
//! §5.4: "each configuration has a duration of at least 40 µs (including
//! reconfiguration delay)"), so every configuration is held for
//! `φ_k ≥ φ_min = L_min − δ`. Output: configurations `(φ_k, P_k)` with
//! `Σ φ_k + δ·m ≤ W`, and the demand the circuits do not carry (for the
//! packet switch).
//!
//! 1. **Stuff**: raise entries until every row and column sums to the largest
//!    line sum `L` (existing positive entries first, then any entry), so the
//!    matrix is `L` × a doubly stochastic one and always has a perfect
//!    matching on its support. Stuffed time is not demand: it is never
//!    counted as served.
//! 2. **Slice**: start with the threshold `r` = the largest power of two not
//!    above the largest entry; take a perfect matching among entries ≥ `r`; if
//!    there is none, halve `r`. A matching becomes a configuration of length
//!    `φ = max(min entry on it, φ_min)`, its entries are reduced by `φ`
//!    (clamped at 0).
//! 3. **Budget** ([`schedule`]): configurations are accepted in the order
//!    slicing produces them (longest first, as the threshold only falls)
//!    while `Σφ + δ·m ≤ W`; the first that does not fit ends the schedule.
//!    Or ([`schedule_compressed`], the REACToR §5.4 behaviour): slice
//!    everything, then if `Σφ + δ·m > W` drop the shortest configurations
//!    until `m·L_min ≤ W` and shrink the part of every `φ_k` above `φ_min` by
//!    one common factor so that `Σφ + δ·m = W`: every pair with demand keeps
//!    its circuit, and a pair whose demand is below `φ_min` still costs a
//!    whole minimum configuration (the pure circuit switch's cliff).
//!
//! The circuit service of pair (i, j) is `Σ φ_k [P_k(i) = j]`; the packet
//! switch gets `max(D_ij − service_ij, 0)`.

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

use crate::sched::tms::{perfect_matching, validate_demand, Matrix};

/// One circuit configuration: `perm[src] = dst` held for `duration`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub duration: f64,
    pub perm: Vec<usize>,
}

/// A schedule for one period.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub configs: Vec<Config>,
    /// Circuit time given to each pair.
    pub circuit: Matrix,
    /// Demand left for the packet switch: `max(D − circuit, 0)`.
    pub packet: Matrix,
    /// `Σφ + δ·m`.
    pub used: f64,
}

/// Checks the scheduler's parameters; the error names the parameter.
pub fn validate(period: f64, delta: f64, min_config: f64) -> Result<(), (&'static str, String)> {
    if !(period.is_finite() && period > 0.0) {
        return Err(("period", "must be positive".into()));
    }
    if !(delta.is_finite() && delta >= 0.0) {
        return Err(("reconfiguration", "must be a non-negative time".into()));
    }
    if !(min_config.is_finite() && min_config > 0.0) {
        return Err(("min_config", "must be positive".into()));
    }
    if delta >= min_config {
        return Err((
            "reconfiguration",
            format!(
                "δ = {delta} must be shorter than the minimum configuration length {min_config} (which includes δ)"
            ),
        ));
    }
    if min_config > period {
        return Err((
            "period",
            format!("{period} cannot hold even one configuration of {min_config}"),
        ));
    }
    Ok(())
}

/// Checks a call of [`schedule`] or [`schedule_compressed`] (the demand
/// first, then the parameters) and returns `φ_min = L_min − δ`.
fn checked_phi_min(
    demand: &Matrix,
    period: f64,
    delta: f64,
    min_config: f64,
) -> Result<f64, String> {
    validate_demand(demand)?;
    validate(period, delta, min_config).map_err(|(k, why)| format!("{k}: {why}"))?;
    Ok(min_config - delta)
}

/// Stuffs `d` so that every row and column sums to the largest line sum.
pub fn stuff(d: &Matrix) -> Matrix {
    let n = d.len();
    let mut m = d.clone();
    let (mut r, mut c) = crate::sched::tms::line_sums(&m);
    let target = r.iter().chain(c.iter()).cloned().fold(0.0, f64::max);
    // Existing positive entries first, then any entry (row-major, so the
    // result is deterministic).
    for pass in 0..2 {
        for i in 0..n {
            for j in 0..n {
                if pass == 0 && d[i][j] == 0.0 {
                    continue;
                }
                let add = (target - r[i]).min(target - c[j]);
                if add > 0.0 {
                    m[i][j] += add;
                    r[i] += add;
                    c[j] += add;
                }
            }
        }
    }
    m
}

/// Schedules `demand` (circuit time per pair) into a period of `period` with
/// reconfiguration `delta` per configuration and configurations of at least
/// `min_config` (δ included).
pub fn schedule(
    demand: &Matrix,
    period: f64,
    delta: f64,
    min_config: f64,
) -> Result<Schedule, String> {
    let phi_min = checked_phi_min(demand, period, delta, min_config)?;
    Ok(slice(demand, period, delta, phi_min))
}

/// Stuff and slice with configurations held at least `phi_min`, accepting
/// configurations while they fit in `period`.
fn slice(demand: &Matrix, period: f64, delta: f64, phi_min: f64) -> Schedule {
    let n = demand.len();
    let mut m = stuff(demand);
    let mut real = demand.clone(); // demand not yet served
    let mut configs = Vec::new();
    let mut circuit = vec![vec![0.0; n]; n];
    let mut used = 0.0;
    let max = m.iter().flatten().cloned().fold(0.0, f64::max);
    let tiny = 1e-12 * max.max(1e-300);
    if max > 0.0 {
        let mut r = 2f64.powi(max.log2().floor() as i32);
        let mut row_to = Vec::new();
        'slice: while m.iter().flatten().any(|&v| v > tiny) {
            let ok = {
                let mm = &m;
                let rr = r;
                perfect_matching(
                    n,
                    &|i, j| mm[i][j] >= rr && mm[i][j] > tiny,
                    &|i, j| mm[i][j],
                    &mut row_to,
                )
            };
            if !ok {
                r /= 2.0;
                if r < tiny {
                    break 'slice;
                }
                continue;
            }
            let t = (0..n)
                .map(|i| m[i][row_to[i]])
                .fold(f64::INFINITY, f64::min);
            let phi = t.max(phi_min);
            if used + phi + delta > period * (1.0 + 1e-12) {
                break 'slice;
            }
            used += phi + delta;
            for i in 0..n {
                let j = row_to[i];
                m[i][j] = (m[i][j] - phi).max(0.0);
                if m[i][j] <= tiny {
                    m[i][j] = 0.0;
                }
                circuit[i][j] += phi;
                real[i][j] = (real[i][j] - phi).max(0.0);
            }
            configs.push(Config {
                duration: phi,
                perm: row_to.clone(),
            });
        }
    }
    Schedule {
        configs,
        circuit,
        packet: real,
        used,
    }
}

/// Like [`schedule`], but every configuration slicing produces is kept if
/// it can be (see step 3 of the module docs): when the whole decomposition
/// does not fit, the shortest configurations are dropped until `m` minimum
/// configurations fit, and the time above `φ_min` of the rest is scaled by
/// one factor so that `Σφ + δ·m = W`.
pub fn schedule_compressed(
    demand: &Matrix,
    period: f64,
    delta: f64,
    min_config: f64,
) -> Result<Schedule, String> {
    let phi_min = checked_phi_min(demand, period, delta, min_config)?;
    let full = slice(demand, f64::MAX, delta, phi_min);
    if full.used <= period {
        return Ok(full);
    }
    let mut configs = full.configs;
    // Longest first: slicing's order is not strictly monotone, so sort
    // (stably) before dropping the shortest.
    configs.sort_by(|a, b| b.duration.total_cmp(&a.duration));
    let fit = (period / min_config).floor() as usize;
    configs.truncate(fit.max(1));
    let m = configs.len() as f64;
    let extra: f64 = configs.iter().map(|c| c.duration - phi_min).sum();
    let room = period - m * min_config;
    let s = if extra > 0.0 {
        (room / extra).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let n = demand.len();
    let mut circuit = vec![vec![0.0; n]; n];
    let mut used = 0.0;
    for c in &mut configs {
        c.duration = phi_min + s * (c.duration - phi_min);
        used += c.duration + delta;
        for (i, &j) in c.perm.iter().enumerate() {
            circuit[i][j] += c.duration;
        }
    }
    let packet = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (demand[i][j] - circuit[i][j]).max(0.0))
                .collect()
        })
        .collect();
    Ok(Schedule {
        configs,
        circuit,
        packet,
        used,
    })
}

/// Which classes the packet switch takes for a period (REACToR §3.2: a
/// class is either on a circuit or on the EPS for the whole period). Whole
/// entries of `demand` (bytes per pair) are given to the EPS smallest first
/// while the source's row and the destination's column stay within
/// `row_budget[i]` / `col_budget[j]`. Equal demands are taken diagonal by
/// diagonal (by `(j − i) mod n`, then by row), so that a demand made of
/// permutations leaves the circuits whole permutations rather than a
/// scatter that costs a configuration per sliver. Returns the EPS share:
/// every entry is 0 or the whole demand.
pub fn eps_split(demand: &Matrix, row_budget: &[f64], col_budget: &[f64]) -> Matrix {
    let n = demand.len();
    let mut order: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .filter(|&(i, j)| demand[i][j] > 0.0)
        .collect();
    let diag = |(i, j): (usize, usize)| ((j + n - i) % n, i);
    order.sort_by(|&a, &b| {
        demand[a.0][a.1]
            .total_cmp(&demand[b.0][b.1])
            .then(diag(a).cmp(&diag(b)))
    });
    let mut row = row_budget.to_vec();
    let mut col = col_budget.to_vec();
    let mut share = vec![vec![0.0; n]; n];
    for (i, j) in order {
        let d = demand[i][j];
        if d <= row[i] && d <= col[j] {
            share[i][j] = d;
            row[i] -= d;
            col[j] -= d;
        }
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tms::tests::circulant;
    use proptest::prelude::*;

    #[test]
    fn stuffing_balances_every_line() {
        let d = vec![
            vec![0.0, 3.0, 1.0],
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
        ];
        let s = stuff(&d);
        let (r, c) = crate::sched::tms::line_sums(&s);
        for v in r.iter().chain(&c) {
            assert!((v - 4.0).abs() < 1e-12, "{r:?} {c:?}");
        }
        for i in 0..3 {
            for j in 0..3 {
                assert!(s[i][j] >= d[i][j]);
            }
        }
    }

    #[test]
    fn hand_worked_one_big_flow_and_a_ring() {
        // 3 ports in a period of 100 with δ = 2, L_min = 4 (φ_min = 2). Demand: a
        // permutation of 60 (i → i+1) and one of 20 (i → i+2). Already
        // balanced (line sums 80). r = 32: the 60s match → φ = 60; then r
        // halves to 16: the 20s match → φ = 20. Used 60 + 20 + 2·2 = 84.
        let d = circulant(&[0.0, 60.0, 20.0]);
        let s = schedule(&d, 100.0, 2.0, 4.0).unwrap();
        assert_eq!(s.configs.len(), 2);
        assert_eq!(
            s.configs[0],
            Config {
                duration: 60.0,
                perm: vec![1, 2, 0]
            }
        );
        assert_eq!(
            s.configs[1],
            Config {
                duration: 20.0,
                perm: vec![2, 0, 1]
            }
        );
        assert!((s.used - 84.0).abs() < 1e-12);
        assert!(s.packet.iter().flatten().all(|&v| v == 0.0));
        // With a period of 70 only the first fits (60 + 2 = 62; +22 > 70):
        // the 20s go to the packet switch.
        let s = schedule(&d, 70.0, 2.0, 4.0).unwrap();
        assert_eq!(s.configs.len(), 1);
        assert_eq!(s.packet[0][2], 20.0);
        assert_eq!(s.packet[0][1], 0.0);
    }

    #[test]
    fn short_configurations_are_stretched_to_the_minimum() {
        let d = vec![vec![0.0, 1.0], vec![1.0, 0.0]];
        let s = schedule(&d, 100.0, 5.0, 40.0).unwrap();
        assert_eq!(s.configs.len(), 1);
        assert_eq!(s.configs[0].duration, 35.0);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(validate(100.0, 40.0, 40.0)
            .unwrap_err()
            .1
            .contains("shorter"));
        assert_eq!(validate(30.0, 5.0, 40.0).unwrap_err().0, "period");
        assert!(validate(40.0, 5.0, 40.0).is_ok());
        assert!(schedule(&vec![vec![0.0, -1.0], vec![0.0, 0.0]], 1.0, 0.1, 0.2).is_err());
    }

    #[test]
    fn compressed_hand_worked_large_flow_and_tiny_flows() {
        // REACToR §5.4 in miniature: W = 3000, δ = 20, L_min = 40 (φ_min =
        // 20). Host i sends 2970 to i+1 and 15 to each of i+2, i+3 (rows sum
        // to W). Slicing: the large permutation (2970), then the two shift
        // permutations of 15, stretched to φ_min = 20: Σφ + 3δ = 3070 > W.
        // Compressed: room above φ_min = 3000 − 3·40 = 2880, all of it the
        // large configuration's (2950 above φ_min) → 20 + 2880 = 2900.
        let d = circulant(&[0.0, 2970.0, 15.0, 15.0]);
        let n = d.len();
        let s = schedule_compressed(&d, 3000.0, 20.0, 40.0).unwrap();
        let durs: Vec<f64> = s.configs.iter().map(|c| c.duration).collect();
        assert_eq!(durs.len(), 3);
        assert!((durs[0] - 2900.0).abs() < 1e-9, "{durs:?}");
        assert!((durs[1] - 20.0).abs() < 1e-9 && (durs[2] - 20.0).abs() < 1e-9);
        assert!((s.used - 3000.0).abs() < 1e-9);
        for i in 0..n {
            assert!((s.circuit[i][(i + 1) % n] - 2900.0).abs() < 1e-9);
            assert!((s.packet[i][(i + 1) % n] - 70.0).abs() < 1e-9);
            assert_eq!(s.packet[i][(i + 2) % n], 0.0);
        }
        // The greedy budget instead serves the large flow alone (2970 + 20
        // leaves 10 < L_min): the tiny flows get nothing this period.
        let g = schedule(&d, 3000.0, 20.0, 40.0).unwrap();
        assert_eq!(g.configs.len(), 1);
        assert_eq!(g.packet[0][2], 15.0);
    }

    #[test]
    fn eps_split_hand_worked() {
        // Budgets of 10 per row and column. Row 0: 1, 4, 6 → 1 and 4 fit
        // (6 would make 11). Row 1: 9 → column 2 already has 4 from (0, 2)?
        // No: (0, 2) = 6 was refused, so column 2 takes the 9.
        let d = vec![
            vec![0.0, 1.0, 6.0, 4.0],
            vec![0.0, 0.0, 9.0, 0.0],
            vec![0.0, 0.0, 0.0, 7.0],
            vec![0.0, 0.0, 0.0, 0.0],
        ];
        let s = eps_split(&d, &[10.0; 4], &[10.0; 4]);
        assert_eq!(s[0], vec![0.0, 1.0, 0.0, 4.0]);
        assert_eq!(s[1][2], 9.0);
        // (2, 3) = 7: column 3 has 4 of 10 left 6 < 7: refused.
        assert_eq!(s[2][3], 0.0);
    }

    fn arb_demand() -> impl Strategy<Value = Matrix> {
        (2usize..8).prop_flat_map(|n| {
            prop::collection::vec(
                prop::collection::vec(prop_oneof![Just(0.0), 0.0f64..500.0], n),
                n,
            )
        })
    }

    /// `(period, δ, L_min)` with `δ < L_min ≤ period`.
    fn arb_timing() -> impl Strategy<Value = (f64, f64, f64)> {
        (50.0f64..3000.0, 0.0f64..30.0, 0.1f64..50.0)
            .prop_map(|(period, delta, extra)| (period, delta, delta + extra))
            .prop_filter("L_min > period", |&(period, _, min_config)| {
                min_config <= period
            })
    }

    /// What every schedule of `d` must be: configurations that are
    /// permutations held at least `φ_min` and fit in `period` (`used` =
    /// `Σφ + δ·m`), `circuit` the service they give, and `packet` exactly
    /// what that leaves of `d`.
    fn check_schedule(
        d: &Matrix,
        s: &Schedule,
        (period, delta, min_config): (f64, f64, f64),
    ) -> Result<(), TestCaseError> {
        let n = d.len();
        let sum: f64 = s.configs.iter().map(|c| c.duration).sum();
        let m = s.configs.len() as f64;
        prop_assert!(sum + delta * m <= period * (1.0 + 1e-9) + 1e-9);
        prop_assert!((s.used - sum - delta * m).abs() < 1e-6);
        let mut service = vec![vec![0.0; n]; n];
        for c in &s.configs {
            prop_assert!(c.duration >= min_config - delta - 1e-9);
            let mut seen = vec![false; n];
            for (i, &j) in c.perm.iter().enumerate() {
                prop_assert!(j < n && !seen[j]);
                seen[j] = true;
                service[i][j] += c.duration;
            }
        }
        for i in 0..n {
            for j in 0..n {
                prop_assert!((service[i][j] - s.circuit[i][j]).abs() < 1e-9);
                prop_assert!((s.packet[i][j] - (d[i][j] - s.circuit[i][j]).max(0.0)).abs() < 1e-9);
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn every_schedule_fits_its_budget_and_covers_demand(d in arb_demand(), timing in arb_timing()) {
            let (period, delta, min_config) = timing;
            let n = d.len();
            let s = schedule(&d, period, delta, min_config).unwrap();
            check_schedule(&d, &s, timing)?;
            for i in 0..n { for j in 0..n {
                // circuits + packet switch cover the demand.
                prop_assert!(s.packet[i][j] >= 0.0 && s.packet[i][j] <= d[i][j]);
                prop_assert!(s.circuit[i][j] + s.packet[i][j] >= d[i][j] - 1e-9);
            }}
        }

        #[test]
        fn compressed_schedules_fit_keep_every_pair_and_cover_demand(d in arb_demand(), timing in arb_timing()) {
            let (period, delta, min_config) = timing;
            let n = d.len();
            let s = schedule_compressed(&d, period, delta, min_config).unwrap();
            let full = schedule(&d, f64::MAX / 4.0, delta, min_config).unwrap();
            check_schedule(&d, &s, timing)?;
            let all_kept = full.configs.len() as f64 * min_config <= period;
            for i in 0..n { for j in 0..n {
                if all_kept && full.circuit[i][j] > 0.0 {
                    // Every pair the full decomposition serves keeps (part
                    // of) its circuit. (Slicing itself may leave a pair out:
                    // clamping at 0 unbalances the stuffed matrix.)
                    prop_assert!(s.circuit[i][j] > 0.0, "({i}, {j}) lost its circuit");
                }
            }}
            if full.used <= period {
                prop_assert_eq!(s.configs.len(), full.configs.len());
            }
        }

        #[test]
        fn eps_split_respects_budgets_and_is_maximal(
            d in arb_demand(), rb in 0.0f64..1500.0, cb in 0.0f64..1500.0,
        ) {
            let n = d.len();
            let share = eps_split(&d, &vec![rb; n], &vec![cb; n]);
            let (r, c) = crate::sched::tms::line_sums(&share);
            for i in 0..n {
                prop_assert!(r[i] <= rb + 1e-9 && c[i] <= cb + 1e-9);
            }
            for i in 0..n { for j in 0..n {
                prop_assert!(share[i][j] == 0.0 || share[i][j] == d[i][j]);
                if d[i][j] > 0.0 && share[i][j] == 0.0 {
                    // Refused only because it did not fit what was left.
                    prop_assert!(d[i][j] > rb - r[i] + 1e-12 || d[i][j] > cb - c[j] + 1e-12);
                }
            }}
        }

        #[test]
        fn circuits_plus_eps_cover_demand(
            d in arb_demand(), budget in 0.0f64..1500.0, timing in arb_timing(),
        ) {
            // The REACToR pipeline: the EPS takes whole classes, the rest is
            // scheduled on circuits; EPS share + circuit service + what is
            // left for later covers the demand, and the circuits serve
            // exactly the demand minus the EPS share where they can.
            let (period, delta, min_config) = timing;
            let n = d.len();
            let share = eps_split(&d, &vec![budget; n], &vec![budget; n]);
            let cd: Matrix = (0..n).map(|i| (0..n).map(|j| d[i][j] - share[i][j]).collect()).collect();
            let s = schedule_compressed(&cd, period, delta, min_config).unwrap();
            check_schedule(&cd, &s, timing)?;
            for i in 0..n { for j in 0..n {
                prop_assert!(share[i][j] + s.circuit[i][j] + s.packet[i][j] >= d[i][j] - 1e-9);
            }}
        }

        #[test]
        fn a_roomy_period_serves_everything_on_circuits(d in arb_demand()) {
            // With no reconfiguration cost to speak of and a period far longer
            // than the stuffed decomposition, nothing goes to the packet switch.
            let n = d.len();
            let s = schedule(&d, 1e9, 1e-9, 1e-6).unwrap();
            for i in 0..n { for j in 0..n {
                prop_assert!(s.packet[i][j] <= 1e-6 * (1.0 + d[i][j]), "{} of {}", s.packet[i][j], d[i][j]);
            }}
        }
    }
}

//! Flow-size distributions: fixed, Pareto(shape, mean), and empirical CDF files.

use crate::rng::{open_unit, SimRng};
use crate::units::limits;
use std::path::Path;

/// A validated size distribution that can be sampled.
#[derive(Clone, Debug)]
pub enum SizeDist {
    Fixed(u64),
    /// Pareto with the given shape and scale (minimum), optionally truncated at `max`.
    Pareto {
        shape: f64,
        scale: f64,
        max: Option<u64>,
    },
    Cdf(Cdf),
}

/// Largest size a sample may take (the configurable limit, ≈ 1.1 PB): Pareto
/// tails with shape near 1 can otherwise overflow a byte counter.
pub const MAX_SAMPLE_BYTES: u64 = limits::BYTES;

impl SizeDist {
    /// Pareto with shape `shape` > 1 and the given mean. Untruncated, the
    /// scale (minimum) is mean·(shape−1)/shape. Truncated at `max` (the
    /// distribution conditioned on X ≤ max), the scale is solved so that the
    /// truncated distribution still has the requested mean — truncating
    /// without re-solving would lower it (mean 100 KB, max 1 MB, shape 1.05
    /// would give about 23.5 KB). Needs mean < max.
    pub fn pareto(shape: f64, mean: f64, max: Option<u64>) -> SizeDist {
        let scale = match max {
            None => mean * (shape - 1.0) / shape,
            Some(m) => pareto_scale_for_truncated_mean(shape, mean, m as f64),
        };
        SizeDist::Pareto { shape, scale, max }
    }

    /// The mean flow size in bytes (F in the load formula). For a truncated
    /// Pareto this is the mean of the truncated distribution.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(b) => *b as f64,
            SizeDist::Pareto { shape, scale, max } => match max {
                None => shape * scale / (shape - 1.0),
                Some(m) => truncated_pareto_mean(*shape, *scale, *m as f64),
            },
            SizeDist::Cdf(c) => c.mean(),
        }
    }

    /// One size (a fixed size draws nothing from `rng`).
    #[inline]
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        match self {
            // Inline at the generator's call: no call for the common case.
            SizeDist::Fixed(b) => *b,
            _ => self.sample_drawn(rng),
        }
    }

    /// [`SizeDist::sample`] for the distributions that draw.
    #[inline(never)]
    fn sample_drawn(&self, rng: &mut SimRng) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Pareto { shape, scale, max } => {
                let u = open_unit(rng);
                let u = match max {
                    // Inverse CDF of the truncated distribution.
                    Some(m) => 1.0 - u * (1.0 - (scale / *m as f64).powf(*shape)),
                    None => u,
                };
                let x = scale / u.powf(1.0 / shape);
                let cap = max.unwrap_or(MAX_SAMPLE_BYTES).min(MAX_SAMPLE_BYTES);
                (x.round() as u64).clamp(1, cap)
            }
            SizeDist::Cdf(c) => c.sample(rng),
        }
    }
}

/// Mean of a Pareto(shape a, scale l) conditioned on X ≤ h (l < h).
fn truncated_pareto_mean(a: f64, l: f64, h: f64) -> f64 {
    // a·l^a/(a−1)·(l^(1−a) − h^(1−a)) / (1 − (l/h)^a), written with r = l/h
    // so that tiny scales neither underflow nor overflow.
    let r = l / h;
    a / (a - 1.0) * l * (1.0 - r.powf(a - 1.0)) / (1.0 - r.powf(a))
}

/// The scale l in (0, h) whose Pareto(a, l) conditioned on X ≤ h has mean
/// `mean` (< h). The truncated mean increases with l from 0 to h, so a
/// bisection in log space converges; 200 halvings reach f64 precision.
fn pareto_scale_for_truncated_mean(a: f64, mean: f64, h: f64) -> f64 {
    assert!(mean > 0.0 && mean < h, "need 0 < mean < max");
    let (mut lo, mut hi) = (h * 1e-300, h);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if truncated_pareto_mean(a, mid, h) < mean {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo - 1.0 < 1e-15 {
            break;
        }
    }
    // `lo` stays strictly below h (at l = h the distribution degenerates).
    lo
}

/// An empirical CDF: `<bytes> <cumulative probability>` per line, linear between
/// points. A first point with probability above 0, or two points with the same
/// size, put a point mass on that size.
#[derive(Clone, Debug)]
pub struct Cdf {
    pub sizes: Vec<f64>,
    pub probs: Vec<f64>,
}

impl Cdf {
    /// Reads and validates a CDF file; errors name the file, line, value and reason.
    pub fn from_file(path: &Path) -> Result<Cdf, String> {
        let text = crate::files::read_text(path, "CDF file", crate::files::MAX_CDF_BYTES)?;
        Cdf::parse(&text).map_err(|e| format!("CDF file {}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Cdf, String> {
        let mut sizes = Vec::new();
        let mut probs = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let ln = i + 1;
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() != 2 {
                return Err(format!(
                    "line {ln}: {line:?}: expected two columns `<bytes> <cumulative probability>`"
                ));
            }
            let s: f64 = cols[0]
                .parse()
                .map_err(|_| format!("line {ln}: size {:?} is not a number", cols[0]))?;
            let p: f64 = cols[1]
                .parse()
                .map_err(|_| format!("line {ln}: probability {:?} is not a number", cols[1]))?;
            if !(s >= 0.0 && s.is_finite()) {
                return Err(format!("line {ln}: size {s} must be a finite number >= 0"));
            }
            if s > limits::BYTES as f64 {
                return Err(format!(
                    "line {ln}: size {s} is above the largest flow photonet accepts ({} B)",
                    limits::BYTES
                ));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("line {ln}: probability {p} is outside [0, 1]"));
            }
            if let (Some(&ps), Some(&pp)) = (sizes.last(), probs.last()) {
                if s < ps {
                    return Err(format!(
                        "line {ln}: size {s} is smaller than the previous size {ps}: the file is not sorted"
                    ));
                }
                if p < pp {
                    return Err(format!(
                        "line {ln}: probability {p} is smaller than the previous {pp}: a CDF cannot decrease"
                    ));
                }
            }
            sizes.push(s);
            probs.push(p);
        }
        let Some(&last) = probs.last() else {
            return Err("no data points".into());
        };
        if (last - 1.0).abs() > 1e-9 {
            return Err(format!(
                "the last probability is {last}, but a CDF must end at 1"
            ));
        }
        if sizes.last() == Some(&0.0) {
            return Err("every size is 0: flows must have at least one byte".into());
        }
        Ok(Cdf { sizes, probs })
    }

    /// Mean of the linear-interpolation model, with point masses.
    pub fn mean(&self) -> f64 {
        let mut m = self.probs[0] * self.sizes[0];
        for i in 1..self.sizes.len() {
            let dp = self.probs[i] - self.probs[i - 1];
            m += dp * (self.sizes[i] + self.sizes[i - 1]) / 2.0;
        }
        m
    }

    /// The model's CDF at `x` (P[size <= x]).
    pub fn cdf_at(&self, x: f64) -> f64 {
        if x < self.sizes[0] {
            return 0.0;
        }
        // Last point with size <= x.
        let i = self.sizes.partition_point(|&s| s <= x);
        if i >= self.sizes.len() {
            return 1.0;
        }
        let (s0, s1, p0, p1) = (
            self.sizes[i - 1],
            self.sizes[i],
            self.probs[i - 1],
            self.probs[i],
        );
        p0 + (p1 - p0) * (x - s0) / (s1 - s0)
    }

    /// Inverse-transform sample, rounded to whole bytes (at least 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let i = self.probs.partition_point(|&p| p < u);
        if i == 0 {
            return self.sizes[0];
        }
        if i >= self.sizes.len() {
            return *self.sizes.last().expect("non-empty");
        }
        let (s0, s1, p0, p1) = (
            self.sizes[i - 1],
            self.sizes[i],
            self.probs[i - 1],
            self.probs[i],
        );
        if s1 == s0 || p1 == p0 {
            return s1;
        }
        s0 + (u - p0) / (p1 - p0) * (s1 - s0)
    }

    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let u = open_unit(rng);
        (self.quantile(u).round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;
    use std::path::PathBuf;

    fn shared(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../python/photonet/workloads")
            .join(name)
    }

    #[test]
    fn meta_hadoop_matches_its_published_statistics() {
        let p = shared("meta_hadoop.cdf");
        if !p.exists() {
            panic!("the standard workloads not found at {}", p.display());
        }
        let cdf = Cdf::from_file(&p).unwrap();
        // shared/workloads/README.md: mean_lin 120,421 B; 60.00 % of flows < 1 KB.
        assert!((cdf.mean() - 120_421.0).abs() < 1.0, "mean {}", cdf.mean());
        let mut rng = RngStreams::new(1).stream("sizes");
        let n = 400_000;
        let samples: Vec<u64> = (0..n).map(|_| cdf.sample(&mut rng)).collect();
        let below_1k = samples.iter().filter(|&&s| s < 1000).count() as f64 / n as f64;
        // Binomial standard error at p = 0.6, n = 4e5 is 0.00077; allow 5 sigma.
        assert!(
            (below_1k - 0.60).abs() < 0.004,
            "fraction < 1KB = {below_1k}"
        );
        let below_10k = samples.iter().filter(|&&s| s < 10_000).count() as f64 / n as f64;
        assert!(
            (below_10k - 0.7026).abs() < 0.004,
            "fraction < 10KB = {below_10k}"
        );
        // Median from the model's own quantile function.
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        let med = sorted[n / 2] as f64;
        let q = cdf.quantile(0.5);
        assert!(
            (cdf.cdf_at(med) - 0.5).abs() < 0.005,
            "median {med}, model {q}"
        );
    }

    #[test]
    fn point_masses_follow_the_readme_rules() {
        // First point above 0: mass 0.25 at 2 B. Repeated size: mass 0.25 at 100 B.
        // Wide segments keep the rounding of nearby samples onto 2 B and 100 B small.
        let cdf = Cdf::parse("2 0.25\n5000 0.25\n10000 0.5\n10000 0.75\n20000 1\n").unwrap();
        let mut rng = RngStreams::new(3).stream("s");
        let n = 200_000;
        let (mut at2, mut at100) = (0, 0);
        for _ in 0..n {
            match cdf.sample(&mut rng) {
                2 => at2 += 1,
                10_000 => at100 += 1,
                _ => {}
            }
        }
        assert!((at2 as f64 / n as f64 - 0.25).abs() < 0.005);
        assert!((at100 as f64 / n as f64 - 0.25).abs() < 0.005);
        // mean = .25*2 + 0 + .25*(5000+10000)/2 + .25*10000 + .25*(10000+20000)/2
        let want = 0.5 + 1875.0 + 2500.0 + 3750.0;
        assert!((cdf.mean() - want).abs() < 1e-9, "{}", cdf.mean());
    }

    #[test]
    fn sample_mean_converges_to_model_mean_for_every_shared_file() {
        let dir = shared("");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cdf"))
            .collect();
        files.sort();
        assert!(files.len() >= 10);
        for f in files {
            let cdf = Cdf::from_file(&f).unwrap();
            // Compare on a bounded functional (sizes capped at 1 MB) so that the
            // check has little variance even for heavy tails.
            let cap = 1e6;
            let exact: f64 = {
                let n = 100_000;
                (0..n)
                    .map(|i| cdf.quantile((i as f64 + 0.5) / n as f64).min(cap))
                    .sum::<f64>()
                    / n as f64
            };
            let mut rng = RngStreams::new(9).stream("s");
            let n = 200_000;
            let emp = (0..n)
                .map(|_| (cdf.sample(&mut rng) as f64).min(cap))
                .sum::<f64>()
                / n as f64;
            assert!(
                (emp - exact).abs() / exact < 0.03,
                "{}: {emp} vs {exact}",
                f.display()
            );
        }
    }

    #[test]
    fn bad_cdfs_are_rejected_with_the_reason() {
        let e = Cdf::parse("10 0.1\n5 0.5\n20 1\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("not sorted"), "{e}");
        let e = Cdf::parse("10 0.1\n20 0.9\n").unwrap_err();
        assert!(e.contains("must end at 1") && e.contains("0.9"), "{e}");
        let e = Cdf::parse("10 0.5\n20 0.4\n30 1\n").unwrap_err();
        assert!(e.contains("decrease"), "{e}");
        assert!(Cdf::parse("abc 0.5\n")
            .unwrap_err()
            .contains("not a number"));
        assert!(Cdf::parse("").unwrap_err().contains("no data"));
        assert!(Cdf::parse("10 1.5\n").unwrap_err().contains("outside"));
    }

    #[test]
    fn pareto_mean_and_tail() {
        // Shape 2.5 has finite variance, so the sample mean converges quickly.
        let d = SizeDist::pareto(2.5, 100_000.0, None);
        let mut rng = RngStreams::new(5).stream("sizes");
        let n = 400_000;
        let xs: Vec<u64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        let mean = xs.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 100_000.0).abs() / 100_000.0 < 0.01, "mean {mean}");
        // P(X > 2*scale) = 2^-shape.
        let scale = 100_000.0 * 1.5 / 2.5;
        let tail = xs.iter().filter(|&&x| x as f64 > 2.0 * scale).count() as f64 / n as f64;
        assert!((tail - 2f64.powf(-2.5)).abs() < 0.003, "tail {tail}");
        // The Sirius shape: the median is scale * 2^(1/1.05).
        let d = SizeDist::pareto(1.05, 100_000.0, None);
        let mut xs: Vec<u64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        xs.sort_unstable();
        let med = xs[n / 2] as f64;
        let want = 100_000.0 * 0.05 / 1.05 * 2f64.powf(1.0 / 1.05);
        assert!((med - want).abs() / want < 0.01, "median {med} vs {want}");
        assert!((d.mean() - 100_000.0).abs() < 1e-6);
    }

    #[test]
    fn truncated_pareto_keeps_the_requested_mean() {
        // The case: mean 100 KB, max 1 MB, shape 1.05 (naive
        // truncation of the untruncated scale gives about 23.5 KB).
        for (shape, max) in [
            (1.05, 1_000_000u64),
            (1.05, 10_000_000),
            (1.5, 400_000),
            (3.0, 150_000),
        ] {
            let d = SizeDist::pareto(shape, 100_000.0, Some(max));
            assert!(
                (d.mean() - 100_000.0).abs() < 1e-3,
                "model mean {}",
                d.mean()
            );
            let mut rng = RngStreams::new(6).stream("sizes");
            let n = 1_000_000;
            let xs: Vec<u64> = (0..n).map(|_| d.sample(&mut rng)).collect();
            assert!(xs.iter().all(|&x| x <= max));
            let mean = xs.iter().sum::<u64>() as f64 / n as f64;
            // Bounded samples: the sample mean's sd is below max/sqrt(n)/2.
            let tol = 3.0 * max as f64 / (n as f64).sqrt() / 2.0;
            assert!(
                (mean - 100_000.0).abs() < tol,
                "shape {shape} max {max}: {mean}"
            );
        }
        // The old behaviour, for the record: the untruncated scale truncated at
        // 1 MB has a mean near 23.5 KB.
        let naive = truncated_pareto_mean(1.05, 100_000.0 * 0.05 / 1.05, 1e6);
        assert!((naive - 23_500.0).abs() < 500.0, "{naive}");
    }

    #[test]
    fn scale_solver_inverts_the_truncated_mean() {
        // Oracle: the closed-form mean at the solved scale.
        for &(a, mean, h) in &[
            (1.01, 5e3, 1e9),
            (1.05, 1e5, 1e6),
            (2.0, 999.0, 1e3),
            (4.0, 10.0, 1e7),
        ] {
            let l = pareto_scale_for_truncated_mean(a, mean, h);
            assert!(l > 0.0 && l < h);
            let got = truncated_pareto_mean(a, l, h);
            assert!((got - mean).abs() / mean < 1e-9, "{a} {mean} {h}: {got}");
        }
    }
}

//! Workloads: Poisson arrivals at a target load, size distributions, traffic
//! patterns (uniform, permutation, incast, all-to-all) and trace replay.
//!
//! Load is `L = F / (R · N · τ)`: F the mean flow size, R the per-host bandwidth,
//! N the number of hosts and τ the mean inter-arrival time of the whole workload.

pub mod collective;
pub mod dag;
pub mod htsim;
pub mod mix;
pub mod sizes;
pub mod trace;

use crate::flow::{Flow, HostId};
use crate::rng::{open_unit, shuffle, RngStreams, SimRng};
use crate::units::{limits, Rate, SimTime};
use rand::Rng;
pub use sizes::{Cdf, SizeDist};

/// Who sends to whom.
#[derive(Clone, Debug)]
pub enum Pattern {
    /// Source uniform, destination uniform over the other hosts.
    Uniform,
    /// A random derangement fixed for the run: host i always sends to perm\[i\].
    Permutation,
    /// Each arrival is an incast: `degree` distinct senders to one random receiver,
    /// each sending `size` bytes.
    Incast { degree: u32, size: u64 },
    /// One shuffle at t = 0: every host sends `size` bytes to every other host.
    AllToAll { size: u64 },
    /// A fixed destination per sending host (Baldur §V-A's transpose,
    /// bisection, group permutation and hotspot: see [`FixedMap`]). Each
    /// arrival's source is uniform over the senders; the load is per sending
    /// transmitter (L = F / (R · S · τ) with S senders: Baldur's "fraction of
    /// time a transmitter is busy"), the same as the formula above when every
    /// host sends.
    Fixed(FixedMap),
}

/// Which fixed destination map (Baldur §V-A).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FixedMap {
    /// N = 2^n: the destination is the source's address rotated left by
    /// ⌊n/2⌋ bits (its two halves swapped for even n). Hosts that map to
    /// themselves (2^⌈n/2⌉ of them for even n) do not send.
    Transpose,
    /// A random half of the hosts is paired one-to-one with the other half
    /// (random matching); partners send to each other.
    Bisection,
    /// Hosts in consecutive groups of `group` (dragonfly groups); the groups
    /// are paired by a random derangement, and each host sends to one random
    /// host of its partner group, fixed for the run: drawn independently
    /// (with replacement: two senders may share a receiver), or, with
    /// `distinct`, as a random one-to-one map onto the partner group.
    GroupPermutation { group: u32, distinct: bool },
    /// Every other host sends to `node`.
    Hotspot { node: u32 },
}

/// The destination of each host under `map` (None: the host does not send).
pub fn fixed_destinations(n: u32, map: &FixedMap, rng: &mut SimRng) -> Vec<Option<HostId>> {
    match *map {
        FixedMap::Transpose => {
            let bits = n.trailing_zeros();
            let r = bits / 2;
            (0..n)
                .map(|a| {
                    let d = if bits == 0 {
                        a
                    } else {
                        ((a << r) | (a >> (bits - r))) & (n - 1)
                    };
                    (d != a).then_some(d)
                })
                .collect()
        }
        FixedMap::Bisection => {
            let mut order: Vec<HostId> = (0..n).collect();
            shuffle(&mut order, rng);
            let half = n as usize / 2;
            let mut d = vec![None; n as usize];
            for i in 0..half {
                let (a, b) = (order[i], order[half + i]);
                d[a as usize] = Some(b);
                d[b as usize] = Some(a);
            }
            d
        }
        FixedMap::GroupPermutation { group, distinct } => {
            let groups = n / group;
            let partner = derangement(groups, rng);
            if !distinct {
                return (0..n)
                    .map(|a| {
                        Some(partner[(a / group) as usize] * group + rng.random_range(0..group))
                    })
                    .collect();
            }
            let mut d = vec![None; n as usize];
            let mut order: Vec<HostId> = (0..group).collect();
            for g in 0..groups {
                shuffle(&mut order, rng);
                for (k, &o) in order.iter().enumerate() {
                    d[(g * group) as usize + k] = Some(partner[g as usize] * group + o);
                }
            }
            d
        }
        FixedMap::Hotspot { node } => (0..n).map(|a| (a != node).then_some(node)).collect(),
    }
}

/// Which mean flow size F sets the arrival rate in L = F / (R · N · τ).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LoadBasis {
    /// F is the size distribution's mean. With a heavy tail (Pareto 1.05) the
    /// flows of a finite run have a far smaller mean, so the offered load is
    /// well below L.
    #[default]
    Nominal,
    /// F is the mean of the sizes this run actually draws: the first `flows`
    /// draws of the size stream for a flow-count stop, else a pre-sample of
    /// 1,000,000 draws of the same stream. The offered load is then L.
    Realised,
}

/// Draws used to estimate the realised mean when the run has no flow count.
pub const REALISED_PRESAMPLE: u64 = 1_000_000;

/// How a generated workload's load was set, for summaries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadInfo {
    /// The configured load L and its basis.
    pub load: f64,
    pub basis: LoadBasis,
    /// The size distribution's mean flow size.
    pub nominal_mean_bytes: f64,
    /// The mean the arrival rate was set from.
    pub basis_mean_bytes: f64,
    /// Mean time between arrival events, in seconds.
    pub mean_gap_s: f64,
}

/// Generates flows in start-time order.
pub struct Generator {
    hosts: u32,
    pattern: Pattern,
    sizes: SizeDist,
    mean_gap_s: f64,
    now_s: f64,
    next_id: u32,
    perm: Vec<HostId>,
    /// Fixed patterns: the hosts that send.
    senders: Vec<HostId>,
    pending: std::collections::VecDeque<(HostId, HostId, u64)>,
    pending_start: SimTime,
    arrival_rng: SimRng,
    size_rng: SimRng,
    pair_rng: SimRng,
    a2a_next: u64,
    info: LoadInfo,
}

impl Generator {
    /// A Poisson workload at `load` over `hosts` hosts of rate `host_rate`.
    pub fn new(
        hosts: u32,
        host_rate: Rate,
        load: f64,
        pattern: Pattern,
        sizes: SizeDist,
        streams: &RngStreams,
    ) -> Generator {
        assert!(hosts >= 2, "a workload needs at least two hosts");
        // Bytes per arrival event: one flow, or `degree` flows for an incast.
        let event_bytes = match &pattern {
            Pattern::Incast { degree, size } => *degree as f64 * *size as f64,
            _ => sizes.mean(),
        };
        let mut pair_rng = streams.stream("pairs");
        let (perm, senders) = match &pattern {
            Pattern::Permutation => (derangement(hosts, &mut pair_rng), Vec::new()),
            Pattern::Fixed(map) => {
                let d = fixed_destinations(hosts, map, &mut pair_rng);
                let senders = (0..hosts).filter(|&h| d[h as usize].is_some()).collect();
                (
                    d.into_iter().map(|x| x.unwrap_or(HostId::MAX)).collect(),
                    senders,
                )
            }
            _ => (Vec::new(), Vec::new()),
        };
        let sending = if matches!(pattern, Pattern::Fixed(_)) {
            senders.len().max(1)
        } else {
            hosts as usize
        };
        let offered_bps = load * host_rate.as_f64() * sending as f64;
        let mean_gap_s = event_bytes * 8.0 / offered_bps;
        let flow_mean = match &pattern {
            Pattern::Incast { size, .. } | Pattern::AllToAll { size } => *size as f64,
            _ => sizes.mean(),
        };
        Generator {
            hosts,
            pattern,
            sizes,
            mean_gap_s,
            now_s: 0.0,
            next_id: 0,
            perm,
            senders,
            pending: Default::default(),
            pending_start: SimTime::ZERO,
            arrival_rng: streams.stream("arrivals"),
            size_rng: streams.stream("sizes"),
            pair_rng,
            a2a_next: 0,
            info: LoadInfo {
                load,
                basis: LoadBasis::Nominal,
                nominal_mean_bytes: flow_mean,
                basis_mean_bytes: flow_mean,
                mean_gap_s,
            },
        }
    }

    /// Mean time between arrival events (flows, or incast groups).
    pub fn mean_gap(&self) -> f64 {
        self.mean_gap_s
    }

    /// Sets the arrival rate on `basis`; `flows` is the run's flow count, if
    /// it stops on one (the realised mean is then exactly that of the flows
    /// it will generate). Patterns with fixed sizes are unaffected.
    pub fn with_basis(mut self, basis: LoadBasis, flows: Option<u64>) -> Generator {
        self.info.basis = basis;
        let draws_sizes = matches!(
            self.pattern,
            Pattern::Uniform | Pattern::Permutation | Pattern::Fixed(_)
        );
        if basis == LoadBasis::Realised && draws_sizes {
            // The same stream, cloned: the draws the run itself will make.
            let mut rng = self.size_rng.clone();
            let n = flows.unwrap_or(REALISED_PRESAMPLE).max(1);
            let total: f64 = (0..n).map(|_| self.sizes.sample(&mut rng) as f64).sum();
            let realised = total / n as f64;
            self.mean_gap_s *= realised / self.info.basis_mean_bytes;
            self.info.basis_mean_bytes = realised;
            self.info.mean_gap_s = self.mean_gap_s;
        }
        self
    }

    /// How the load was set.
    pub fn load_info(&self) -> LoadInfo {
        self.info
    }

    fn other_host(&mut self, not: HostId) -> HostId {
        let d = self.pair_rng.random_range(0..self.hosts - 1);
        if d >= not {
            d + 1
        } else {
            d
        }
    }

    fn emit(&mut self, src: HostId, dst: HostId, bytes: u64, start: SimTime) -> Flow {
        let id = self.next_id;
        self.next_id += 1;
        Flow::new(id, src, dst, bytes, start)
    }
}

/// Ping-pong partners (Baldur §V-A), an involution without fixed points:
/// `group` None pairs the hosts by a uniformly random perfect matching
/// (ping_pong1); `Some(g)` pairs the consecutive groups of g hosts by a random
/// matching of groups and each host with a random host of its partner group,
/// one to one (ping_pong2: "the nodes from one group are paired with nodes
/// from another group"). `n` (and the number of groups) must be even.
pub fn ping_pong_partners(n: u32, group: Option<u32>, rng: &mut SimRng) -> Vec<HostId> {
    let mut partner = vec![0; n as usize];
    let g = group.unwrap_or(1);
    let mut groups: Vec<u32> = (0..n / g).collect();
    shuffle(&mut groups, rng);
    for pair in groups.chunks_exact(2) {
        let (a, mut b) = (pair[0], (0..g).collect::<Vec<u32>>());
        shuffle(&mut b, rng);
        for (i, &j) in b.iter().enumerate() {
            let (x, y) = (a * g + i as u32, pair[1] * g + j);
            partner[x as usize] = y;
            partner[y as usize] = x;
        }
    }
    partner
}

/// The closed-loop ping-pong workload (Baldur §V-A): every host sends a flow
/// to its partner at t = 0, then its next one the instant the partner's
/// latest flow reaches it, until it has sent `per_node`. Sizes come from the
/// size distribution. Flow ids are given in release order.
pub struct PingPong {
    partner: Vec<HostId>,
    sizes: SizeDist,
    size_rng: SimRng,
    /// Released flows not yet taken: (start, source), in start order
    /// (completions are reported in time order).
    ready: std::collections::VecDeque<(SimTime, HostId)>,
    released: Vec<u64>,
    per_node: u64,
    next_id: u32,
}

impl PingPong {
    pub fn new(
        hosts: u32,
        group: Option<u32>,
        sizes: SizeDist,
        per_node: u64,
        streams: &RngStreams,
    ) -> PingPong {
        let partner = ping_pong_partners(hosts, group, &mut streams.stream("pairs"));
        let first = per_node.min(1);
        PingPong {
            partner,
            sizes,
            size_rng: streams.stream("sizes"),
            ready: (0..hosts)
                .filter(|_| first > 0)
                .map(|h| (SimTime::ZERO, h))
                .collect(),
            released: vec![first; hosts as usize],
            per_node,
            next_id: 0,
        }
    }

    pub fn partners(&self) -> &[HostId] {
        &self.partner
    }
}

/// The closed loop's side of the run loop's `Arrivals` (implemented in
/// `run`, above the engine: workloads sit below it).
impl PingPong {
    /// The start time of the next flow released so far.
    pub fn peek(&mut self) -> Option<SimTime> {
        self.ready.front().map(|r| r.0)
    }
    /// Takes the next released flow (ids dense, in the order taken).
    pub fn pop(&mut self) -> Option<Flow> {
        let (start, src) = self.ready.pop_front()?;
        let id = self.next_id;
        self.next_id += 1;
        Some(Flow {
            id,
            src,
            dst: self.partner[src as usize],
            bytes: self.sizes.sample(&mut self.size_rng),
            start,
        })
    }
    /// `flow` completed at `t`: its receiver answers at once.
    pub fn completed(&mut self, flow: &Flow, t: SimTime) {
        let h = flow.dst;
        if self.released[h as usize] < self.per_node {
            self.released[h as usize] += 1;
            debug_assert!(self.ready.back().is_none_or(|r| r.0 <= t));
            self.ready.push_back((t, h));
        }
    }
}

/// A uniformly random permutation with no fixed point (Sattolo's algorithm gives
/// a single cycle, which has none).
pub fn derangement(n: u32, rng: &mut SimRng) -> Vec<HostId> {
    let mut p: Vec<HostId> = (0..n).collect();
    for i in (1..n as usize).rev() {
        let j = rng.random_range(0..i);
        p.swap(i, j);
    }
    p
}

/// `x.round() as u64` for `x` not NaN and at most 2^60 (a start time in ps),
/// without a call to `round`: half away from zero is the truncation plus one
/// when the fraction, `x` − trunc(`x`) (exact in f64), is at least 0.5; below
/// zero (no gap is negative) both give 0.
#[inline]
fn round_ps(x: f64) -> u64 {
    debug_assert!(!x.is_nan() && x <= limits::TIME_PS as f64);
    let whole = x as i64;
    let up = (x - whole as f64 >= 0.5) as i64;
    (whole + up).max(0) as u64
}

impl Iterator for Generator {
    type Item = Flow;
    fn next(&mut self) -> Option<Flow> {
        if let Some((s, d, b)) = self.pending.pop_front() {
            return Some(self.emit(s, d, b, self.pending_start));
        }
        if let Pattern::AllToAll { size } = self.pattern {
            // Pairs in a fixed order, all at t = 0.
            let n = self.hosts as u64;
            while self.a2a_next < n * n {
                let (s, d) = ((self.a2a_next / n) as u32, (self.a2a_next % n) as u32);
                self.a2a_next += 1;
                if s != d {
                    return Some(self.emit(s, d, size, SimTime::ZERO));
                }
            }
            return None;
        }
        // Exponential gap, in seconds, accumulated in f64 and rounded to ps.
        self.now_s += -open_unit(&mut self.arrival_rng).ln() * self.mean_gap_s;
        let ps = self.now_s * SimTime::S as f64;
        // (Rounded, it is NaN or above the limit exactly when it is unrounded:
        // the limit is an integer.)
        if ps.is_nan() || ps > limits::TIME_PS as f64 {
            // Beyond representable simulated time: the workload ends (configs
            // that would get here are refused by `run::prepare`).
            return None;
        }
        let start = SimTime(round_ps(ps));
        match self.pattern {
            Pattern::Uniform => {
                let src = self.pair_rng.random_range(0..self.hosts);
                let dst = self.other_host(src);
                let b = self.sizes.sample(&mut self.size_rng);
                Some(self.emit(src, dst, b, start))
            }
            Pattern::Permutation => {
                let src = self.pair_rng.random_range(0..self.hosts);
                let dst = self.perm[src as usize];
                let b = self.sizes.sample(&mut self.size_rng);
                Some(self.emit(src, dst, b, start))
            }
            Pattern::Fixed(_) => {
                let src = self.senders[self.pair_rng.random_range(0..self.senders.len())];
                let dst = self.perm[src as usize];
                let b = self.sizes.sample(&mut self.size_rng);
                Some(self.emit(src, dst, b, start))
            }
            Pattern::Incast { degree, size } => {
                let dst = self.pair_rng.random_range(0..self.hosts);
                // `degree` distinct senders other than dst (partial Fisher-Yates).
                let mut others: Vec<HostId> = (0..self.hosts).filter(|&h| h != dst).collect();
                for i in 0..degree as usize {
                    let j = self.pair_rng.random_range(i..others.len());
                    others.swap(i, j);
                    self.pending.push_back((others[i], dst, size));
                }
                self.pending_start = start;
                let (s, d, b) = self.pending.pop_front().expect("degree >= 1");
                Some(self.emit(s, d, b, start))
            }
            Pattern::AllToAll { .. } => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    #[test]
    fn round_ps_hand_cases() {
        // The largest double below 0.5 (where floor(x + 0.5) would give 1),
        // halves away from zero, the limit, and a negative.
        for (x, want) in [
            (0.49999999999999994, 0),
            (0.5, 1),
            (2.5, 3),
            (3.4999999999999996, 3),
            (4_503_599_627_370_495.5, 4_503_599_627_370_496),
            ((1u64 << 60) as f64, 1 << 60),
            (-0.7, 0),
        ] {
            assert_eq!(round_ps(x), want, "{x}");
        }
    }

    #[test]
    fn realised_basis_offers_the_requested_load_with_a_heavy_tail() {
        // Pareto(1.05, 100 KB): a finite sample's mean is far below 100 KB, so
        // the nominal basis offers much less than L; the realised basis sets τ
        // from the very sizes the run draws, so the offered load is L up to
        // the Poisson count's sampling error (relative sd 1/sqrt(n) = 0.7 %).
        let (n, rate, load, k) = (64u32, Rate::gbps(10), 0.6, 20_000u64);
        let measure = |basis: LoadBasis| {
            let sizes = SizeDist::pareto(1.05, 100_000.0, None);
            let g = Generator::new(n, rate, load, Pattern::Uniform, sizes, &RngStreams::new(3))
                .with_basis(basis, Some(k));
            let info = g.load_info();
            let flows: Vec<Flow> = g.take(k as usize).collect();
            let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
            // Offered over k mean gaps (the expected span of k arrivals).
            let span = k as f64 * info.mean_gap_s;
            let measured = bytes as f64 * 8.0 / (span * rate.as_f64() * n as f64);
            (measured, info, bytes as f64 / k as f64)
        };
        let (realised, info, mean) = measure(LoadBasis::Realised);
        assert_eq!(
            info.basis_mean_bytes, mean,
            "the realised mean is the run's own"
        );
        assert!((realised - load).abs() < 1e-9, "{realised}");
        let (nominal, info, mean) = measure(LoadBasis::Nominal);
        assert_eq!(info.basis_mean_bytes, 100_000.0);
        assert!(nominal < 0.7 * load, "nominal basis offered {nominal}");
        assert!((nominal - load * mean / 100_000.0).abs() < 1e-9);
        // Against the arrival times themselves (Poisson count error).
        let sizes = SizeDist::pareto(1.05, 100_000.0, None);
        let g = Generator::new(n, rate, load, Pattern::Uniform, sizes, &RngStreams::new(3))
            .with_basis(LoadBasis::Realised, Some(k));
        let flows: Vec<Flow> = g.take(k as usize).collect();
        let t_end = flows.last().unwrap().start.as_secs_f64();
        let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
        let by_time = bytes as f64 * 8.0 / (t_end * rate.as_f64() * n as f64);
        assert!(
            (by_time - load).abs() / load < 3.0 / (k as f64).sqrt(),
            "{by_time}"
        );
    }

    #[test]
    fn realised_basis_leaves_fixed_sizes_alone() {
        let mk = |basis| {
            Generator::new(
                8,
                Rate::gbps(10),
                0.5,
                Pattern::Uniform,
                SizeDist::Fixed(1_000),
                &RngStreams::new(1),
            )
            .with_basis(basis, None)
            .mean_gap()
        };
        assert_eq!(mk(LoadBasis::Nominal), mk(LoadBasis::Realised));
    }

    #[test]
    fn poisson_arrivals_match_the_requested_load() {
        let (n, rate, load) = (64u32, Rate::gbps(10), 0.7);
        let sizes = SizeDist::Fixed(10_000);
        let g = Generator::new(n, rate, load, Pattern::Uniform, sizes, &RngStreams::new(11));
        let k = 200_000;
        let flows: Vec<Flow> = g.take(k).collect();
        let t_end = flows.last().unwrap().start.as_secs_f64();
        let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
        let measured = bytes as f64 * 8.0 / (t_end * rate.as_f64() * n as f64);
        // The count of a Poisson process has relative sd 1/sqrt(k) = 0.22 %.
        assert!(
            (measured - load).abs() / load < 0.01,
            "measured load {measured}"
        );
        // Exponential gaps: coefficient of variation 1.
        let gaps: Vec<f64> = flows
            .windows(2)
            .map(|w| (w[1].start.0 - w[0].start.0) as f64)
            .collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let v = gaps.iter().map(|g| (g - m) * (g - m)).sum::<f64>() / gaps.len() as f64;
        assert!((v.sqrt() / m - 1.0).abs() < 0.02);
        assert!(flows
            .iter()
            .all(|f| f.src != f.dst && f.src < n && f.dst < n));
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
    }

    #[test]
    fn uniform_destinations_are_uniform() {
        let g = Generator::new(
            8,
            Rate::gbps(1),
            0.5,
            Pattern::Uniform,
            SizeDist::Fixed(1),
            &RngStreams::new(2),
        );
        let mut counts = [[0u32; 8]; 8];
        for f in g.take(80_000) {
            counts[f.src as usize][f.dst as usize] += 1;
        }
        // 56 ordered pairs, ~1429 each; sd ~37.
        for (s, row) in counts.iter().enumerate() {
            for (d, &c) in row.iter().enumerate() {
                if s == d {
                    assert_eq!(c, 0);
                } else {
                    assert!((c as f64 - 80_000.0 / 56.0).abs() < 200.0, "{s}->{d}: {c}");
                }
            }
        }
    }

    #[test]
    fn permutation_is_a_fixed_derangement() {
        let g = Generator::new(
            50,
            Rate::gbps(1),
            0.5,
            Pattern::Permutation,
            SizeDist::Fixed(1),
            &RngStreams::new(3),
        );
        let flows: Vec<Flow> = g.take(5_000).collect();
        let mut dst_of = vec![None; 50];
        for f in &flows {
            assert_ne!(f.src, f.dst);
            let d = dst_of[f.src as usize].get_or_insert(f.dst);
            assert_eq!(*d, f.dst, "host {} changed destination", f.src);
        }
        let mut ds: Vec<u32> = dst_of.iter().flatten().copied().collect();
        ds.sort();
        ds.dedup();
        assert_eq!(
            ds.len(),
            dst_of.iter().flatten().count(),
            "two sources share a destination"
        );
    }

    #[test]
    fn incast_groups_share_a_start_and_destination() {
        let p = Pattern::Incast {
            degree: 5,
            size: 1_000,
        };
        let g = Generator::new(
            20,
            Rate::gbps(1),
            0.5,
            p,
            SizeDist::Fixed(1),
            &RngStreams::new(4),
        );
        let flows: Vec<Flow> = g.take(50).collect();
        for grp in flows.chunks(5) {
            assert!(grp
                .iter()
                .all(|f| f.start == grp[0].start && f.dst == grp[0].dst && f.bytes == 1_000));
            let mut srcs: Vec<u32> = grp.iter().map(|f| f.src).collect();
            srcs.sort();
            srcs.dedup();
            assert_eq!(srcs.len(), 5);
            assert!(!srcs.contains(&grp[0].dst));
        }
        assert!(flows[5].start > flows[0].start);
    }

    #[test]
    fn all_to_all_covers_every_pair_once() {
        let g = Generator::new(
            6,
            Rate::gbps(1),
            0.5,
            Pattern::AllToAll { size: 7 },
            SizeDist::Fixed(1),
            &RngStreams::new(5),
        );
        let flows: Vec<Flow> = g.collect();
        assert_eq!(flows.len(), 30);
        let mut pairs: Vec<(u32, u32)> = flows.iter().map(|f| (f.src, f.dst)).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), 30);
        assert!(flows
            .iter()
            .all(|f| f.start == SimTime::ZERO && f.bytes == 7));
    }

    #[test]
    fn baldur_fixed_maps() {
        let mut rng = RngStreams::new(3).stream("pairs");
        // 16 hosts, 4 address bits: halves swapped (0b0001 -> 0b0100).
        let t = fixed_destinations(16, &FixedMap::Transpose, &mut rng);
        assert_eq!(t[1], Some(4));
        assert_eq!(t[0b0110], Some(0b1001));
        assert_eq!(t[0b0101], None, "maps to itself: does not send");
        assert_eq!(t.iter().filter(|d| d.is_none()).count(), 4);
        let b = fixed_destinations(16, &FixedMap::Bisection, &mut rng);
        for (a, d) in b.iter().enumerate() {
            let d = d.unwrap();
            assert_ne!(d as usize, a);
            assert_eq!(b[d as usize], Some(a as u32), "partners send to each other");
        }
        let g = fixed_destinations(
            16,
            &FixedMap::GroupPermutation {
                group: 4,
                distinct: false,
            },
            &mut rng,
        );
        for (a, d) in g.iter().enumerate() {
            assert_ne!(d.unwrap() / 4, a as u32 / 4);
        }
        // Distinct: each group maps one-to-one onto its partner group, and
        // the partners pair groups (every host receives from exactly one).
        let u = fixed_destinations(
            16,
            &FixedMap::GroupPermutation {
                group: 4,
                distinct: true,
            },
            &mut rng,
        );
        let mut got: Vec<u32> = u.iter().map(|d| d.unwrap()).collect();
        for (a, &d) in got.iter().enumerate() {
            assert_ne!(d / 4, a as u32 / 4);
            assert_eq!(got[a - a % 4] / 4, d / 4, "one partner group per group");
        }
        got.sort_unstable();
        assert_eq!(got, (0..16).collect::<Vec<u32>>(), "no receiver shared");
        let h = fixed_destinations(16, &FixedMap::Hotspot { node: 3 }, &mut rng);
        assert_eq!(h.iter().filter(|d| **d == Some(3)).count(), 15);
        assert_eq!(h[3], None);
    }

    #[test]
    fn fixed_maps_set_the_load_per_sending_host() {
        // Hotspot on 16 hosts: 15 senders at load 0.5 of 8 Gbps with 1,000 B
        // flows: one flow per 1 us / (0.5 x 15) on average.
        let streams = RngStreams::new(1);
        let g = Generator::new(
            16,
            Rate::gbps(8),
            0.5,
            Pattern::Fixed(FixedMap::Hotspot { node: 0 }),
            SizeDist::Fixed(1000),
            &streams,
        );
        assert!((g.mean_gap() - 1e-6 / 7.5).abs() < 1e-15);
        let flows: Vec<Flow> = g.take(2000).collect();
        assert!(flows.iter().all(|f| f.dst == 0 && f.src != 0));
    }

    proptest::proptest! {
        /// `round_ps` against `f64::round` and the unsigned cast: random
        /// values of every magnitude up to 2^60, values a hair either side of
        /// a half, halves themselves, and negatives.
        #[test]
        fn round_ps_is_round_then_cast(
            x in proptest::prop_oneof![
                0.0f64..1e3,
                0.0f64..(1u64 << 60) as f64,
                (0u64..1 << 52).prop_map(|k| k as f64 + 0.5),
                (0u64..1 << 52, -3i64..3).prop_map(|(k, d)| {
                    f64::from_bits((k as f64 + 0.5).to_bits().wrapping_add_signed(d))
                }),
                -1e6f64..0.0,
            ],
        ) {
            let x: f64 = x;
            proptest::prop_assert_eq!(round_ps(x), x.round() as u64, "{}", x);
        }

        /// Ping-pong partners against their definition: an involution
        /// without fixed points; with groups, every group maps whole onto
        /// one other group, one to one.
        #[test]
        fn ping_pong_partners_are_mutual_pairs(
            half in 1u32..40, g_pow in 0u32..4, grouped in proptest::bool::ANY, seed in 0u64..1000,
        ) {
            let g = 1u32 << g_pow;
            let n = 2 * half * g;
            let group = grouped.then_some(g);
            let p = ping_pong_partners(n, group, &mut RngStreams::new(seed).stream("pairs"));
            for h in 0..n {
                let q = p[h as usize];
                proptest::prop_assert!(q < n && q != h);
                proptest::prop_assert_eq!(p[q as usize], h);
                if let Some(g) = group {
                    proptest::prop_assert_ne!(q / g, h / g);
                    let first = h / g * g;
                    for o in first..first + g {
                        proptest::prop_assert_eq!(p[o as usize] / g, q / g);
                    }
                }
            }
        }
    }
}

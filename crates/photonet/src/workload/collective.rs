//! Collective communication as dependent workloads: each algorithm is a step
//! schedule of point-to-point transfers between the ranks of a group, where
//! a transfer waits for the ones whose data it forwards. The schedules
//! follow their published definitions:
//!
//! - **Ring all-reduce**, reduce-scatter and all-gather: Patarasuk & Yuan,
//!   "Bandwidth optimal all-reduce algorithms for clusters of workstations",
//!   JPDC 69(2), 2009. The message is cut into n segments; in step k of the
//!   reduce-scatter rank r sends segment (r − k) mod n to rank r + 1, then
//!   the all-gather circulates the reduced segments the same way: 2(n − 1)
//!   steps of S/n bytes.
//! - **Recursive halving-doubling** (Rabenseifner's all-reduce): Thakur,
//!   Rabenseifner & Gropp, "Optimization of collective communication
//!   operations in MPICH", IJHPCA 19(1), 2005, §4.4. Reduce-scatter by
//!   recursive halving (step k: partner r XOR n/2^(k+1), S/2^(k+1) bytes),
//!   then all-gather by recursive doubling (partner r XOR 2^k, S·2^k/n
//!   bytes): 2·log2(n) steps; n must be a power of two.
//! - **Double binary tree** all-reduce: Sanders, Speck & Träff, "Two-tree
//!   algorithms for full bandwidth broadcast, reduction and scan", Parallel
//!   Computing 35(12), 2009 (the construction NCCL 2.4 uses). Two in-order
//!   binary trees, the second the first shifted by one rank (mirrored for an
//!   odd n), so every rank is a leaf in at least one; each tree reduces half
//!   the message to its root and broadcasts it back down, pipelined in
//!   `chunks`.
//! - **All-to-all**, direct (every rank sends S/n to every other at once)
//!   and pairwise exchange (Thakur et al. 2005 §4.6: n − 1 steps; in step k
//!   rank r sends to r + k and receives from r − k).
//! - **Broadcast**: pipelined ring (chain from the root, the NCCL ring
//!   broadcast) and binomial tree (Thakur et al. 2005 §4.1: in round k the
//!   ranks below 2^k relative to the root send to rank + 2^k).
//! - **Pipeline-parallel point-to-point**: GPipe (Huang et al., NeurIPS 2019):
//!   `chunks` micro-batches flow forward stage 0 → n − 1, then backward; each
//!   hop waits for the stage's compute (`compute`).
//!
//! `chunks` splits every transfer into that many pieces sent in order: piece j
//! of a transfer waits for piece j of the transfers it forwards and for piece
//! j − 1 of itself (pipelining). `iterations` repeat the collective; a rank
//! starts its next iteration `compute` after its own part of the previous one
//! finished (data-parallel training: backward compute, then the all-reduce).

use super::dag::{Dag, Node};
use crate::error::ConfigError;
use crate::flow::HostId;
use crate::rng::SimRng;
use crate::units::{ByteSize, Rate, SimTime};
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which collective.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    /// Every rank ends with the reduction of all ranks' `message` bytes.
    AllReduce,
    /// Every rank ends with its 1/n of the reduction of `message` bytes.
    ReduceScatter,
    /// Every rank contributes `message`/n and ends with all `message` bytes.
    AllGather,
    /// Every rank sends `message`/n to every rank.
    AllToAll,
    /// The first participant sends `message` bytes to every other.
    Broadcast,
    /// Pipeline-parallel sends of `message` bytes of activations per
    /// iteration between consecutive stages (the participants, in order),
    /// forward then backward, in `chunks` micro-batches.
    Pipeline,
}

/// How a collective is carried out (see the module doc for each schedule).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// All-reduce, reduce-scatter, all-gather, broadcast (a chain).
    Ring,
    /// All-reduce, reduce-scatter, all-gather: recursive halving / doubling.
    HalvingDoubling,
    /// All-reduce: two complementary binary trees.
    DoubleBinaryTree,
    /// All-to-all: all pairs at once.
    Direct,
    /// All-to-all: n − 1 pairwise-exchange steps.
    Pairwise,
    /// Broadcast: binomial tree.
    BinomialTree,
    /// Pipeline: GPipe micro-batches.
    Gpipe,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::HalvingDoubling => "halving_doubling",
            Algorithm::DoubleBinaryTree => "double_binary_tree",
            Algorithm::Direct => "direct",
            Algorithm::Pairwise => "pairwise",
            Algorithm::BinomialTree => "binomial_tree",
            Algorithm::Gpipe => "gpipe",
        }
    }
}

impl CollectiveKind {
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all_reduce",
            CollectiveKind::ReduceScatter => "reduce_scatter",
            CollectiveKind::AllGather => "all_gather",
            CollectiveKind::AllToAll => "all_to_all",
            CollectiveKind::Broadcast => "broadcast",
            CollectiveKind::Pipeline => "pipeline",
        }
    }
    /// The algorithm used when none is given.
    pub fn default_algorithm(self) -> Algorithm {
        match self {
            CollectiveKind::AllToAll => Algorithm::Direct,
            CollectiveKind::Pipeline => Algorithm::Gpipe,
            _ => Algorithm::Ring,
        }
    }
    fn allows(self) -> &'static [Algorithm] {
        use Algorithm::*;
        match self {
            CollectiveKind::AllReduce => &[Ring, HalvingDoubling, DoubleBinaryTree],
            CollectiveKind::ReduceScatter | CollectiveKind::AllGather => &[Ring, HalvingDoubling],
            CollectiveKind::AllToAll => &[Direct, Pairwise],
            CollectiveKind::Broadcast => &[Ring, BinomialTree],
            CollectiveKind::Pipeline => &[Gpipe],
        }
    }
    /// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md there):
    /// busbw = algbw × factor, so that it compares with the link rate.
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveKind::ReduceScatter
            | CollectiveKind::AllGather
            | CollectiveKind::AllToAll => (n - 1.0) / n,
            CollectiveKind::Broadcast | CollectiveKind::Pipeline => 1.0,
        }
    }
}

fn one() -> u32 {
    1
}

/// One job of a collective workload (`[[workload.pattern.jobs]]`).
/// Participants: `hosts` (a list), or `count` endpoints from `first`
/// (contiguous: with `servers_per_rack` s, first = k·s and count = s is rack
/// k), or `count` random endpoints (`random = true`, disjoint from other
/// random jobs while endpoints last); by default every endpoint.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    /// all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, pipeline.
    pub collective: CollectiveKind,
    /// ring, halving_doubling, double_binary_tree (all-reduce); ring,
    /// halving_doubling (reduce-scatter, all-gather); direct, pairwise
    /// (all-to-all); ring, binomial_tree (broadcast); gpipe (pipeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    /// The collective's size as nccl-tests counts it (the full buffer).
    pub message: ByteSize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default)]
    pub random: bool,
    /// Pieces each transfer is cut into and pipelined (micro-batches for
    /// `pipeline`).
    #[serde(default = "one")]
    pub chunks: u32,
    #[serde(default = "one")]
    pub iterations: u32,
    /// Compute time between a rank's iterations (and per stage and
    /// micro-batch for `pipeline`).
    #[serde(default)]
    pub compute: SimTime,
    /// When the job's first iteration starts.
    #[serde(default)]
    pub start: SimTime,
}

/// A transfer of one instance, between ranks; deps index earlier transfers.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub deps: Vec<usize>,
    /// Whether the job's compute time passes before it (pipeline hops).
    pub compute: bool,
}

/// `total` bytes cut into `k` pieces, the first `total % k` one byte larger.
fn piece(total: u64, k: u64, i: u64) -> u64 {
    total / k + u64::from(i < total % k)
}

fn t(src: u32, dst: u32, bytes: u64, deps: Vec<usize>) -> Transfer {
    Transfer {
        src,
        dst,
        bytes,
        deps,
        compute: false,
    }
}

/// Ring steps `from..to` of the 2(n − 1)-step all-reduce (reduce-scatter is
/// 0..n−1, all-gather n−1..2(n−1)): in step k rank r sends segment
/// (r − k) mod n to r + 1, after receiving step k − 1 from r − 1 and
/// finishing its own step k − 1 send.
fn ring_steps(n: u32, s: u64, from: u32, to: u32) -> Vec<Transfer> {
    let mut out = Vec::new();
    let nn = n as usize;
    for k in from..to {
        for r in 0..n {
            let seg = (r + n - k % n) % n;
            let mut deps = Vec::new();
            if k > from {
                let base = (k - from - 1) as usize * nn;
                deps.push(base + ((r + n - 1) % n) as usize);
                deps.push(base + r as usize);
            }
            out.push(t(r, (r + 1) % n, piece(s, n as u64, seg as u64), deps));
        }
    }
    out
}

/// Recursive halving (reduce-scatter) and/or doubling (all-gather) for a
/// power-of-two n: each step waits for the rank's previous exchange both ways.
fn halving_doubling(n: u32, s: u64, halve: bool, double: bool) -> Vec<Transfer> {
    let log = n.trailing_zeros();
    let mut sizes = Vec::new();
    let mut dist = Vec::new();
    if halve {
        for k in 0..log {
            dist.push(n >> (k + 1));
            sizes.push(s >> (k + 1));
        }
    }
    if double {
        for k in 0..log {
            dist.push(1 << k);
            sizes.push((s << k) / n as u64);
        }
    }
    let mut out = Vec::new();
    let nn = n as usize;
    for (step, (&d, &b)) in dist.iter().zip(&sizes).enumerate() {
        for r in 0..n {
            let mut deps = Vec::new();
            if step > 0 {
                let base = (step - 1) * nn;
                deps.push(base + r as usize);
                deps.push(base + (r ^ dist[step - 1]) as usize);
            }
            out.push(t(r, r ^ d, b, deps));
        }
    }
    out
}

/// Parent of each rank in the in-order binary tree over 0..n (ranks as
/// 1-based positions: position p at height h = trailing zeros of p has
/// children p ± 2^(h−1); positions past n are cut, their left subtree moved
/// up). The root has none.
pub fn inorder_tree_parents(n: u32) -> Vec<Option<u32>> {
    let mut parent = vec![None; n as usize];
    fn build(lo: u32, hi: u32, parent: &mut [Option<u32>], up: Option<u32>) {
        // The subtree of positions lo..=hi (1-based): its root is the
        // position in range with the most trailing zeros.
        if lo > hi {
            return;
        }
        let mut root = lo;
        for p in lo..=hi {
            if p.trailing_zeros() > root.trailing_zeros() {
                root = p;
            }
        }
        parent[(root - 1) as usize] = up.map(|u| u - 1);
        build(lo, root - 1, parent, Some(root));
        build(root + 1, hi, parent, Some(root));
    }
    build(1, n, &mut parent, None);
    parent
}

/// The two trees of the double binary tree: rank → parent, per tree.
pub fn double_binary_trees(n: u32) -> [Vec<Option<u32>>; 2] {
    let t1 = inorder_tree_parents(n);
    // Tree 2 holds rank m(r) where tree 1 holds r: shifted by one (even n)
    // or mirrored (odd n), so that tree 1's interior ranks are leaves in it.
    let m = |r: u32| {
        if n.is_multiple_of(2) {
            (r + 1) % n
        } else {
            n - 1 - r
        }
    };
    let mut t2 = vec![None; n as usize];
    for r in 0..n {
        t2[m(r) as usize] = t1[r as usize].map(m);
    }
    [t1, t2]
}

/// Reduce up and broadcast down both trees, half the message each.
fn double_tree(n: u32, s: u64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for (ti, parents) in double_binary_trees(n).iter().enumerate() {
        let bytes = piece(s, 2, ti as u64);
        let base = out.len();
        // Reduce: up[r] = index of r → parent(r), waits for r's children.
        let mut up = vec![usize::MAX; n as usize];
        let mut order: Vec<u32> = (0..n).collect();
        let depth = |mut r: u32| {
            let mut d = 0;
            while let Some(p) = parents[r as usize] {
                r = p;
                d += 1;
            }
            d
        };
        order.sort_by_key(|&r| Reverse(depth(r)));
        let children = |r: u32| (0..n).filter(move |&c| parents[c as usize] == Some(r));
        for &r in &order {
            if let Some(p) = parents[r as usize] {
                let deps = children(r).map(|c| up[c as usize]).collect();
                up[r as usize] = out.len();
                out.push(t(r, p, bytes, deps));
            }
        }
        let _ = base;
        // Broadcast down: parent → child after the parent has the result
        // (the root: after its children's reductions; others: after their
        // own parent's send reached them).
        let mut down = vec![usize::MAX; n as usize];
        order.reverse();
        for &r in &order {
            if let Some(p) = parents[r as usize] {
                let deps = match parents[p as usize] {
                    Some(_) => vec![down[p as usize]],
                    None => children(p).map(|c| up[c as usize]).collect(),
                };
                down[r as usize] = out.len();
                out.push(t(p, r, bytes, deps));
            }
        }
    }
    out
}

fn all_to_all(n: u32, s: u64, pairwise: bool) -> Vec<Transfer> {
    let mut out = Vec::new();
    let nn = n as usize;
    for k in 1..n {
        for r in 0..n {
            let dst = (r + k) % n;
            let deps = if pairwise && k > 1 {
                // The rank's previous send, and its previous receive.
                let base = (k as usize - 2) * nn;
                vec![base + r as usize, base + ((r + n - (k - 1)) % n) as usize]
            } else {
                Vec::new()
            };
            out.push(t(r, dst, piece(s, n as u64, dst as u64), deps));
        }
    }
    out
}

fn broadcast(n: u32, s: u64, ring: bool) -> Vec<Transfer> {
    let mut out = Vec::new();
    if ring {
        for r in 0..n - 1 {
            let deps = if r == 0 { vec![] } else { vec![r as usize - 1] };
            out.push(t(r, r + 1, s, deps));
        }
    } else {
        // Binomial tree: who delivered to each rank.
        let mut got: Vec<Option<usize>> = vec![None; n as usize];
        let mut k = 1;
        while k < n {
            for r in 0..k.min(n) {
                if r + k < n {
                    let deps = got[r as usize].into_iter().collect();
                    got[(r + k) as usize] = Some(out.len());
                    out.push(t(r, r + k, s, deps));
                }
            }
            k *= 2;
        }
    }
    out
}

fn pipeline(n: u32, s: u64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for st in 0..n - 1 {
        let deps = if st == 0 {
            vec![]
        } else {
            vec![st as usize - 1]
        };
        out.push(Transfer {
            compute: st > 0,
            ..t(st, st + 1, s, deps)
        });
    }
    // Backward from the last stage, after its forward (and compute).
    for st in (0..n - 1).rev() {
        out.push(Transfer {
            compute: true,
            ..t(st + 1, st, s, vec![out.len() - 1])
        });
    }
    out
}

/// The step schedule of one collective over ranks 0..n (one chunk).
pub fn schedule(
    kind: CollectiveKind,
    alg: Algorithm,
    n: u32,
    s: u64,
) -> Result<Vec<Transfer>, String> {
    if !kind.allows().contains(&alg) {
        let ok: Vec<&str> = kind.allows().iter().map(|a| a.name()).collect();
        return Err(format!(
            "{} does not apply to {} (it takes: {})",
            alg.name(),
            kind.name(),
            ok.join(", ")
        ));
    }
    if n < 2 {
        return Err("a collective needs at least two participants".into());
    }
    if alg == Algorithm::HalvingDoubling && !n.is_power_of_two() {
        return Err(format!(
            "halving_doubling needs a power-of-two group (got {n} participants)"
        ));
    }
    use CollectiveKind::*;
    Ok(match (kind, alg) {
        (AllReduce, Algorithm::Ring) => ring_steps(n, s, 0, 2 * (n - 1)),
        (ReduceScatter, Algorithm::Ring) => ring_steps(n, s, 0, n - 1),
        (AllGather, Algorithm::Ring) => ring_steps(n, s, n - 1, 2 * (n - 1)),
        (AllReduce, Algorithm::HalvingDoubling) => halving_doubling(n, s, true, true),
        (ReduceScatter, Algorithm::HalvingDoubling) => halving_doubling(n, s, true, false),
        (AllGather, Algorithm::HalvingDoubling) => halving_doubling(n, s, false, true),
        (AllReduce, Algorithm::DoubleBinaryTree) => double_tree(n, s),
        (AllToAll, a) => all_to_all(n, s, a == Algorithm::Pairwise),
        (Broadcast, a) => broadcast(n, s, a == Algorithm::Ring),
        (Pipeline, _) => pipeline(n, s),
        _ => unreachable!("checked by allows()"),
    })
}

/// One job as built: what the metrics need.
#[derive(Clone, Debug)]
pub struct JobInfo {
    pub kind: CollectiveKind,
    pub algorithm: Algorithm,
    pub hosts: Vec<HostId>,
    pub message: u64,
    pub chunks: u32,
    pub iterations: u32,
    pub start: SimTime,
    /// Its instances: first .. first + iterations.
    pub first_instance: u32,
}

/// A collective workload: the flows and what they belong to.
#[derive(Clone, Debug)]
pub struct Plan {
    pub dag: Dag,
    pub jobs: Vec<JobInfo>,
    /// Per instance: (job, iteration).
    pub instances: Vec<(u32, u32)>,
}

/// Builds the jobs over `hosts` endpoints; errors name the job's key, its
/// value and why.
pub fn build(jobs: &[JobConfig], hosts: u32, rng: &mut SimRng) -> Result<Plan, ConfigError> {
    let mut plan = Plan {
        dag: Dag::new(),
        jobs: Vec::new(),
        instances: Vec::new(),
    };
    if jobs.is_empty() {
        return Err(ConfigError::new(
            "workload.pattern.jobs",
            "[]",
            "give at least one job",
        ));
    }
    let mut free: Vec<HostId> = (0..hosts).collect();
    for (j, job) in jobs.iter().enumerate() {
        let key = |k: &str| format!("workload.pattern.jobs[{j}].{k}");
        let members = participants(job, hosts, &mut free, rng, &key)?;
        let n = members.len() as u32;
        let alg = job.algorithm.unwrap_or(job.kind_default());
        let s = job.message.0;
        let sched = schedule(job.collective, alg, n, s).map_err(|why| {
            let (k, v) = match job.algorithm {
                Some(a) if why.contains("does not apply") => {
                    ("algorithm", format!("{:?}", a.name()))
                }
                _ => ("hosts", format!("{n} participants")),
            };
            ConfigError::new(key(k), v, why)
        })?;
        let c = job.chunks as u64;
        if c == 0 {
            return Err(ConfigError::new(key("chunks"), 0, "must be at least 1"));
        }
        if job.iterations == 0 {
            return Err(ConfigError::new(key("iterations"), 0, "must be at least 1"));
        }
        let smallest = sched.iter().map(|x| x.bytes).min().unwrap_or(0);
        if smallest < c {
            return Err(ConfigError::new(
                key("message"),
                format!("\"{}\"", job.message),
                format!(
                    "too small for {} over {n} participants in {c} chunks: its smallest transfer is {smallest} B, less than one byte per chunk",
                    alg.name()
                ),
            ));
        }
        add_job(&mut plan, j as u32, job, alg, &members, &sched);
    }
    Ok(plan)
}

impl JobConfig {
    fn kind_default(&self) -> Algorithm {
        self.collective.default_algorithm()
    }
}

fn participants(
    job: &JobConfig,
    hosts: u32,
    free: &mut Vec<HostId>,
    rng: &mut SimRng,
    key: &dyn Fn(&str) -> String,
) -> Result<Vec<HostId>, ConfigError> {
    let members: Vec<HostId> = if let Some(list) = &job.hosts {
        if job.count.is_some() || job.first.is_some() || job.random {
            return Err(ConfigError::new(
                key("hosts"),
                format!("{list:?}"),
                "give either a list of hosts or count (with first or random), not both",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for &h in list {
            if h >= hosts {
                return Err(ConfigError::new(
                    key("hosts"),
                    h,
                    format!("no such endpoint: the fabric has 0..{}", hosts - 1),
                ));
            }
            if !seen.insert(h) {
                return Err(ConfigError::new(key("hosts"), h, "listed twice"));
            }
        }
        list.clone()
    } else {
        let count = job.count.unwrap_or(hosts);
        if count > hosts {
            return Err(ConfigError::new(
                key("count"),
                count,
                format!("more than the fabric's {hosts} endpoints"),
            ));
        }
        if job.random {
            if job.first.is_some() {
                return Err(ConfigError::new(
                    key("first"),
                    job.first.unwrap_or(0),
                    "does not apply with random = true",
                ));
            }
            // From the endpoints no earlier random job took, while enough are left.
            let pool: &mut Vec<HostId> = free;
            let mut all: Vec<HostId> = (0..hosts).collect();
            let from = if pool.len() >= count as usize {
                pool
            } else {
                &mut all
            };
            for i in 0..count as usize {
                let k = rng.random_range(i..from.len());
                from.swap(i, k);
            }
            let picked: Vec<HostId> = from.drain(..count as usize).collect();
            picked
        } else {
            let first = job.first.unwrap_or(0);
            if first as u64 + count as u64 > hosts as u64 {
                return Err(ConfigError::new(
                    key("first"),
                    first,
                    format!(
                        "{count} endpoints from {first} run past the fabric's last endpoint {}",
                        hosts - 1
                    ),
                ));
            }
            (first..first + count).collect()
        }
    };
    Ok(members)
}

/// Chunks and iterations of one job's schedule, added to the plan.
fn add_job(
    plan: &mut Plan,
    j: u32,
    job: &JobConfig,
    alg: Algorithm,
    members: &[HostId],
    sched: &[Transfer],
) {
    let c = job.chunks as usize;
    let m = sched.len();
    // Per rank, the schedule's last transfers touching it (none of its
    // dependents touches the rank): where the rank's part of an iteration ends.
    let n = members.len();
    let mut touches_later = vec![false; m];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (i, x) in sched.iter().enumerate() {
        for &d in &x.deps {
            dependents[d].push(i);
        }
    }
    let mut last_of_rank: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, x) in sched.iter().enumerate() {
        for r in [x.src, x.dst] {
            touches_later[i] = dependents[i]
                .iter()
                .any(|&k| sched[k].src == r || sched[k].dst == r);
            if !touches_later[i] && !last_of_rank[r as usize].contains(&i) {
                last_of_rank[r as usize].push(i);
            }
        }
    }
    let first_instance = plan.instances.len() as u32;
    let mut prev: Option<usize> = None; // first node of the previous iteration
    let mut deps = Vec::new();
    for it in 0..job.iterations {
        let instance = plan.instances.len() as u32;
        plan.instances.push((j, it));
        let base = plan.dag.len();
        for (i, x) in sched.iter().enumerate() {
            for ch in 0..c {
                deps.clear();
                deps.extend(x.deps.iter().map(|&d| (base + d * c + ch) as u32));
                if ch > 0 {
                    deps.push((base + i * c + ch - 1) as u32);
                }
                let root = x.deps.is_empty() && ch == 0;
                if let (true, Some(p)) = (root, prev) {
                    // The next iteration: after the rank's previous part.
                    for &l in &last_of_rank[x.src as usize] {
                        deps.push((p + l * c + c - 1) as u32);
                    }
                }
                let delay = if x.compute || (root && prev.is_some()) {
                    job.compute
                } else {
                    SimTime::ZERO
                };
                plan.dag.push(
                    Node {
                        src: members[x.src as usize],
                        dst: members[x.dst as usize],
                        bytes: piece(x.bytes, c as u64, ch as u64),
                        earliest: job.start,
                        delay,
                        instance,
                    },
                    &deps,
                );
            }
        }
        prev = Some(base);
    }
    plan.jobs.push(JobInfo {
        kind: job.collective,
        algorithm: alg,
        hosts: members.to_vec(),
        message: job.message.0,
        chunks: job.chunks,
        iterations: job.iterations,
        start: job.start,
        first_instance,
    });
}

/// Finish times of every node on the ideal flat network (the `ideal`
/// fabric's model, as a fluid): each job alone, each source's NIC shared
/// equally by its active flows at `rate`, a flow complete `latency` after
/// its last byte left. Jobs do not slow each other (each has its own NICs):
/// the reference a job's slowdown is measured against.
pub fn ideal_finish(plan: &Plan, rate: Rate, latency: SimTime) -> Vec<SimTime> {
    let dag = &plan.dag;
    let n = dag.len();
    let (start, dependents) = dag.dependents();
    let mut left: Vec<u32> = (0..n as u32).map(|i| dag.deps_of(i).len() as u32).collect();
    let mut ready_at: Vec<u64> = vec![0; n];
    let mut finish = vec![SimTime::MAX; n];
    // Servers keyed by (job, source host).
    let hosts = dag
        .nodes
        .iter()
        .map(|x| x.src.max(x.dst))
        .max()
        .unwrap_or(0) as usize
        + 1;
    let server = |i: usize| {
        let job = plan.instances[dag.nodes[i].instance as usize].0 as usize;
        job * hosts + dag.nodes[i].src as usize
    };
    struct Srv {
        v: f64,
        t: f64,
        active: Vec<(f64, usize)>,
        version: u64,
    }
    let mut srv: std::collections::HashMap<usize, Srv> = Default::default();
    // Bytes per picosecond.
    let bpp = rate.as_f64() / 8.0 / SimTime::S as f64;
    // Events: (time ps, kind 0 = release node / 1 = server check, id, version).
    let mut ev: BinaryHeap<Reverse<(u64, u8, usize, u64)>> = BinaryHeap::new();
    for (i, nd) in dag.nodes.iter().enumerate() {
        if left[i] == 0 {
            ev.push(Reverse((nd.earliest.0, 0, i, 0)));
        }
    }
    fn next_time(s: &Srv, bpp: f64) -> Option<f64> {
        let vmin = s.active.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
        (vmin.is_finite()).then(|| s.t + (vmin - s.v) * s.active.len() as f64 / bpp)
    }
    while let Some(Reverse((now, kind, id, ver))) = ev.pop() {
        let nowf = now as f64;
        let key = if kind == 0 { server(id) } else { id };
        let s = srv.entry(key).or_insert(Srv {
            v: 0.0,
            t: 0.0,
            active: Vec::new(),
            version: 0,
        });
        if kind == 1 && ver != s.version {
            continue;
        }
        if !s.active.is_empty() {
            s.v += (nowf - s.t) * bpp / s.active.len() as f64;
        }
        s.t = nowf;
        let mut done = Vec::new();
        if kind == 0 {
            s.active.push((s.v + dag.nodes[id].bytes as f64, id));
        } else {
            // Everything due by now (a relative tolerance for rounding).
            let eps = 1e-9 * s.v.max(1.0);
            s.active.retain(|&(vf, i)| {
                let due = vf <= s.v + eps;
                if due {
                    done.push(i);
                }
                !due
            });
        }
        s.version += 1;
        if let Some(t) = next_time(s, bpp) {
            ev.push(Reverse((t.ceil().max(nowf) as u64, 1, key, s.version)));
        }
        for i in done {
            let f = now + latency.0;
            finish[i] = SimTime(f);
            for &c in &dependents[start[i] as usize..start[i + 1] as usize] {
                let c = c as usize;
                left[c] -= 1;
                ready_at[c] = ready_at[c].max(f + dag.nodes[c].delay.0);
                if left[c] == 0 {
                    ev.push(Reverse((ready_at[c].max(dag.nodes[c].earliest.0), 0, c, 0)));
                }
            }
        }
    }
    finish
}

/// What a job measured (`summary.json` → `collectives.jobs`).
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub job: u32,
    pub collective: &'static str,
    pub algorithm: &'static str,
    pub participants: u32,
    pub message_bytes: u64,
    pub chunks: u32,
    pub iterations: u32,
    /// Iterations whose every flow completed.
    pub completed_iterations: u32,
    /// Mean over completed iterations of the collective's time: last flow
    /// finished − first flow started.
    pub completion_us: f64,
    /// nccl-tests' algorithm bandwidth, message / completion, GB/s (1e9 B/s).
    pub algbw_gbps: f64,
    /// nccl-tests' bus bandwidth: algbw × the collective's factor.
    pub busbw_gbps: f64,
    /// (End of the last iteration − start) / iterations.
    pub iteration_us: f64,
    /// The same on the ideal flat network, the job alone.
    pub ideal_iteration_us: f64,
    /// iteration_us / ideal_iteration_us.
    pub slowdown: f64,
}

/// What a collective workload measured.
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveSummary {
    pub jobs: Vec<JobSummary>,
    /// Flows of the workload that did not complete (the run ended first).
    pub unfinished_flows: u64,
    /// First start to last finish over every flow.
    pub makespan_us: f64,
    pub slowdown_max: f64,
}

/// Summarises a collective run: `start_ps`/`finish_ps` per node (finish
/// `u64::MAX` if unfinished, start `u64::MAX` if never released), `ideal`
/// the ideal network's finish per node.
pub fn summarise(
    plan: &Plan,
    start_ps: &[u64],
    finish_ps: &[u64],
    ideal: &[SimTime],
) -> CollectiveSummary {
    let ni = plan.instances.len();
    let mut first = vec![u64::MAX; ni];
    let mut last = vec![0u64; ni];
    let mut ideal_last = vec![0u64; ni];
    let mut open = vec![0u64; ni];
    let mut unfinished = 0;
    let (mut lo, mut hi) = (u64::MAX, 0);
    for (i, nd) in plan.dag.nodes.iter().enumerate() {
        let k = nd.instance as usize;
        lo = lo.min(start_ps[i]);
        first[k] = first[k].min(start_ps[i]);
        ideal_last[k] = ideal_last[k].max(ideal[i].0);
        if finish_ps[i] == u64::MAX {
            open[k] += 1;
            unfinished += 1;
        } else {
            last[k] = last[k].max(finish_ps[i]);
            hi = hi.max(finish_ps[i]);
        }
    }
    let us = |ps: u64| ps as f64 / SimTime::US as f64;
    let mut jobs = Vec::new();
    for (j, job) in plan.jobs.iter().enumerate() {
        let range = job.first_instance as usize..(job.first_instance + job.iterations) as usize;
        let done: Vec<usize> = range.clone().filter(|&k| open[k] == 0).collect();
        let completion =
            done.iter().map(|&k| us(last[k] - first[k])).sum::<f64>() / done.len().max(1) as f64;
        let all_done = done.len() == range.len();
        let end = range.clone().map(|k| last[k]).max().unwrap_or(0);
        let ideal_end = range.clone().map(|k| ideal_last[k]).max().unwrap_or(0);
        let it = |e: u64| us(e.saturating_sub(job.start.0)) / job.iterations as f64;
        let (iteration, ideal_it) = (it(end), it(ideal_end));
        let algbw = if done.is_empty() {
            0.0
        } else {
            job.message as f64 / (completion * 1e-6) / 1e9
        };
        let n = job.hosts.len() as u32;
        jobs.push(JobSummary {
            job: j as u32,
            collective: job.kind.name(),
            algorithm: job.algorithm.name(),
            participants: n,
            message_bytes: job.message,
            chunks: job.chunks,
            iterations: job.iterations,
            completed_iterations: done.len() as u32,
            completion_us: completion,
            algbw_gbps: algbw,
            busbw_gbps: algbw * job.kind.busbw_factor(n),
            iteration_us: if all_done { iteration } else { f64::NAN },
            ideal_iteration_us: ideal_it,
            slowdown: if all_done {
                iteration / ideal_it
            } else {
                f64::INFINITY
            },
        });
    }
    CollectiveSummary {
        slowdown_max: jobs.iter().map(|j| j.slowdown).fold(0.0, f64::max),
        jobs,
        unfinished_flows: unfinished,
        makespan_us: us(hi.saturating_sub(lo.min(hi))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(kind: CollectiveKind, alg: Algorithm, n: u32, s: u64) -> JobConfig {
        JobConfig {
            collective: kind,
            algorithm: Some(alg),
            message: ByteSize(s),
            hosts: None,
            first: None,
            count: Some(n),
            random: false,
            chunks: 1,
            iterations: 1,
            compute: SimTime::ZERO,
            start: SimTime::ZERO,
        }
    }

    #[test]
    fn halving_doubling_steps_halve_then_double() {
        let s = 1 << 20;
        let x = schedule(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 8, s).unwrap();
        // 2·log2(8) = 6 steps of 8 transfers.
        assert_eq!(x.len(), 48);
        let sizes: Vec<u64> = x.chunks(8).map(|st| st[0].bytes).collect();
        assert_eq!(sizes, [s / 2, s / 4, s / 8, s / 8, s / 4, s / 2]);
        let partners: Vec<u32> = x.chunks(8).map(|st| st[0].dst).collect();
        assert_eq!(partners, [4, 2, 1, 1, 2, 4]);
        assert!(x
            .chunks(8)
            .all(|st| st.iter().all(|t| st[0].bytes == t.bytes)));
    }

    #[test]
    fn ring_moves_each_segment_round_the_ring() {
        let n = 5;
        let x = schedule(CollectiveKind::AllReduce, Algorithm::Ring, n, 1000).unwrap();
        assert_eq!(x.len(), (2 * (n - 1) * n) as usize);
        // Every rank sends 2(n−1)/n of the message.
        for r in 0..n {
            let sent: u64 = x.iter().filter(|t| t.src == r).map(|t| t.bytes).sum();
            assert_eq!(sent, 2 * (n as u64 - 1) * 200);
        }
    }

    #[test]
    fn double_binary_trees_are_complementary() {
        for n in 2..40u32 {
            let [a, b] = double_binary_trees(n);
            let interior = |p: &[Option<u32>], r: u32| p.contains(&Some(r));
            for p in [&a, &b] {
                assert_eq!(p.iter().filter(|x| x.is_none()).count(), 1, "one root");
                assert!(p.iter().all(|x| x.is_none_or(|q| q < n)));
                // At most two children.
                for r in 0..n {
                    assert!(p.iter().filter(|&&x| x == Some(r)).count() <= 2);
                }
            }
            if n % 2 == 0 {
                for r in 0..n {
                    assert!(!(interior(&a, r) && interior(&b, r)), "n={n} r={r}");
                }
            }
        }
    }

    #[test]
    fn bad_groups_and_sizes_are_refused_with_the_key() {
        let mut rng = crate::rng::RngStreams::new(1).stream("collective");
        let e = build(
            &[job(
                CollectiveKind::AllReduce,
                Algorithm::HalvingDoubling,
                6,
                1 << 20,
            )],
            8,
            &mut rng,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("jobs[0].hosts") && e.contains("power-of-two"),
            "{e}"
        );
        let e = build(
            &[job(CollectiveKind::AllReduce, Algorithm::Ring, 8, 7)],
            8,
            &mut rng,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("jobs[0].message"), "{e}");
        let mut j = job(CollectiveKind::AllReduce, Algorithm::Ring, 8, 8 * 4);
        j.chunks = 5;
        let e = build(&[j], 8, &mut rng).unwrap_err().to_string();
        assert!(
            e.contains("jobs[0].message") && e.contains("5 chunks"),
            "{e}"
        );
        let mut j = job(CollectiveKind::AllReduce, Algorithm::Ring, 2, 100);
        j.count = None;
        j.hosts = Some(vec![0, 9]);
        let e = build(&[j], 8, &mut rng).unwrap_err().to_string();
        assert!(e.contains("jobs[0].hosts") && e.contains('9'), "{e}");
        let e = build(
            &[job(CollectiveKind::AllToAll, Algorithm::Ring, 8, 800)],
            8,
            &mut rng,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("jobs[0].algorithm"), "{e}");
    }

    #[test]
    fn every_collective_builds_a_valid_dag() {
        use Algorithm::*;
        use CollectiveKind::*;
        let all = [
            (AllReduce, Ring),
            (AllReduce, HalvingDoubling),
            (AllReduce, DoubleBinaryTree),
            (ReduceScatter, Ring),
            (ReduceScatter, HalvingDoubling),
            (AllGather, Ring),
            (AllGather, HalvingDoubling),
            (AllToAll, Direct),
            (AllToAll, Pairwise),
            (Broadcast, Ring),
            (Broadcast, BinomialTree),
            (Pipeline, Gpipe),
        ];
        let mut rng = crate::rng::RngStreams::new(1).stream("collective");
        for (k, a) in all {
            let mut j = job(k, a, 8, 1 << 16);
            j.chunks = 3;
            j.iterations = 2;
            j.compute = SimTime::us(1);
            let p = build(&[j], 16, &mut rng).unwrap();
            p.dag.check(16, &|i| format!("{i}")).unwrap();
            assert_eq!(p.instances.len(), 2);
        }
    }
}

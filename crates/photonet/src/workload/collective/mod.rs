//! Collective communication as dependent workloads: the jobs of a config
//! (which collective, which algorithm, which hosts, how many chunks and
//! iterations) become one dependency graph of point-to-point flows
//! ([`build`]); the step schedules of the algorithms are in [`schedules`],
//! what a run measured per job in [`summary`].
//!
//! `chunks` splits every transfer into that many pieces sent in order: piece j
//! of a transfer waits for piece j of the transfers it forwards and for piece
//! j − 1 of itself (pipelining). `iterations` repeat the collective; a rank
//! starts its next iteration `compute` after its own part of the previous one
//! finished (data-parallel training: backward compute, then the all-reduce).

mod schedules;
mod summary;
#[cfg(test)]
mod tests;

use schedules::piece;
pub use schedules::{double_binary_trees, inorder_tree_parents, schedule, Transfer};
pub use summary::{ideal_finish, summarise, CollectiveSummary, JobSummary};

use super::dag::{Dag, Node};
use crate::error::ConfigError;
use crate::flow::HostId;
use crate::rng::SimRng;
use crate::units::{ByteSize, SimTime};
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Every collective.
    pub const ALL: [CollectiveKind; 6] = [
        CollectiveKind::AllReduce,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather,
        CollectiveKind::AllToAll,
        CollectiveKind::Broadcast,
        CollectiveKind::Pipeline,
    ];
    /// Every (collective, algorithm) pair photonet builds.
    pub fn every_algorithm() -> impl Iterator<Item = (CollectiveKind, Algorithm)> {
        Self::ALL
            .into_iter()
            .flat_map(|k| k.allows().iter().map(move |&a| (k, a)))
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

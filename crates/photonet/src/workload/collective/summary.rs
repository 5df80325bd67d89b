//! What a collective run measured, per job and overall, against the ideal
//! network's finish times.

use super::Plan;
use crate::units::{Rate, SimTime};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

//! Dependent arrivals: the run loop releases a flow of a [`Dag`] when the
//! last of its dependencies has completed, plus its delay (never before its
//! earliest start). Works on every fabric through the [`Arrivals`] interface
//! (completions are reported to it, as for any closed-loop workload).

use crate::engine::Arrivals;
use crate::flow::Flow;
use crate::units::SimTime;
use crate::workload::dag::Dag;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

pub struct Dependent {
    dag: Arc<Dag>,
    dep_start: Vec<u32>,
    dependents: Vec<u32>,
    /// Dependencies not yet completed, per node.
    left: Vec<u32>,
    /// The latest dependency finish plus the node's delay, so far.
    ready_at: Vec<SimTime>,
    /// Released, not yet taken: (start, node); ties by node index.
    ready: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// The node of each flow id taken (ids are dense, in take order).
    taken: Vec<u32>,
}

impl Dependent {
    /// `dag` must have passed [`Dag::check`].
    pub fn new(dag: Arc<Dag>) -> Dependent {
        let (dep_start, dependents) = dag.dependents();
        let n = dag.len() as u32;
        let left: Vec<u32> = (0..n).map(|i| dag.deps_of(i).len() as u32).collect();
        let ready = (0..n)
            .filter(|&i| left[i as usize] == 0)
            .map(|i| Reverse((dag.nodes[i as usize].earliest, i)))
            .collect();
        Dependent {
            ready_at: vec![SimTime::ZERO; n as usize],
            dag,
            dep_start,
            dependents,
            left,
            ready,
            taken: Vec::new(),
        }
    }
}

impl Arrivals for Dependent {
    fn peek(&mut self) -> Option<SimTime> {
        self.ready.peek().map(|Reverse((t, _))| *t)
    }
    fn pop(&mut self) -> Option<Flow> {
        let Reverse((start, i)) = self.ready.pop()?;
        let nd = &self.dag.nodes[i as usize];
        let id = self.taken.len() as u32;
        self.taken.push(i);
        Some(Flow {
            id,
            src: nd.src,
            dst: nd.dst,
            bytes: nd.bytes,
            start,
        })
    }
    fn closed_loop(&self) -> bool {
        true
    }
    fn completed(&mut self, flow: &Flow, t: SimTime) {
        let i = self.taken[flow.id as usize] as usize;
        let (a, b) = (self.dep_start[i] as usize, self.dep_start[i + 1] as usize);
        for k in a..b {
            let c = self.dependents[k] as usize;
            let nd = &self.dag.nodes[c];
            self.ready_at[c] = self.ready_at[c].max(t.saturating_add(nd.delay));
            self.left[c] -= 1;
            if self.left[c] == 0 {
                let start = self.ready_at[c].max(nd.earliest);
                self.ready.push(Reverse((start, c as u32)));
            }
        }
    }
    fn origins(&self) -> Option<&[u32]> {
        Some(&self.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{run_arrivals, StopRule};
    use crate::recorder::Recorder;
    use crate::workload::dag::Node;

    #[test]
    fn a_chain_waits_for_each_link_plus_its_delay() {
        // The toy fabric completes a flow of b bytes b ps after it starts.
        let mut dag = Dag::new();
        let node = |bytes, earliest, delay| Node {
            src: 0,
            dst: 1,
            bytes,
            earliest: SimTime(earliest),
            delay: SimTime(delay),
            instance: 0,
        };
        dag.push(node(100, 5, 0), &[]);
        dag.push(node(10, 0, 7), &[0]);
        dag.push(node(10, 500, 7), &[0]);
        dag.push(node(4, 0, 1), &[1, 2]);
        let mut a = Dependent::new(Arc::new(dag));
        let mut toy = crate::engine::toy::Toy::new(false);
        let stop = StopRule {
            drain: true,
            ..Default::default()
        };
        let out = run_arrivals(&mut toy, &mut a, &stop, Recorder::new(None), &mut |_| true);
        let r = out.recorder.records();
        let by_node: Vec<(u64, u64)> = (0..4)
            .map(|n| {
                let id = a.taken.iter().position(|&x| x == n).unwrap();
                (r.start_ps[id], r.finish_ps[id])
            })
            .collect();
        assert_eq!(by_node, [(5, 105), (112, 122), (500, 510), (511, 515)]);
    }
}

//! Request/grant (Fig. 15, `sched::sirius`): at every epoch start, sources
//! apply the grant decisions that reached them, intermediates grant among
//! the requests that reached them, and sources draw new requests.
//!
//! Requests and grants ride on the cell of the slot that connects the pair
//! (once per epoch) and arrive with it, one slot plus the propagation later.
//! With no propagation every message arrives by the next epoch start, so a
//! request drawn in epoch e is granted at the start of e+1 and its cell is
//! sent in e+2; a longer propagation adds the epochs it spans to each leg.
//! Messages are applied in the order they were created, so that with no
//! propagation the result is that of applying them all at once.

use super::local::Local;
use super::nodes::Nodes;
use super::queues::Queues;
use super::{Cell, FlowState};
use crate::pool::Pool;
use crate::rng::SimRng;
use crate::sched::sirius::{compute_grants, compute_requests, FlowCells, Received, Request};

/// A request/grant message riding on a cell.
#[derive(Clone, Copy, Debug)]
enum Message {
    /// A request for intermediate `to`.
    Request { to: u32, req: Received },
    /// The answer to a request: (source, intermediate, flow, granted).
    Decision(u32, u32, u32, bool),
}

pub(super) struct RequestGrant {
    queue_bound: u32,
    prop_slots: u64,
    /// Requests that have reached each intermediate, granted at its next
    /// epoch start (with their sending order, see `msg_seq`).
    inbox: Vec<Vec<(u64, Received)>>,
    /// Grant decisions that have reached their sources, applied at the next
    /// epoch start: (order, source, intermediate, flow, granted).
    decisions: Vec<(u64, u32, u32, u32, bool)>,
    /// Requests and grant decisions on the wire, by arrival slot (ring
    /// indexed by slot mod len, G + propagation + 2 slots long).
    messages: Vec<Vec<(u64, Message)>>,
    /// Order in which messages were created.
    msg_seq: u64,
    outstanding: u64,
    rng: SimRng,
    scratch_flows: Vec<FlowCells>,
    scratch_candidates: Vec<u32>,
    scratch_requests: Vec<Request>,
    scratch_grants: Vec<Received>,
    pub requests: u64,
    pub grants: u64,
}

impl RequestGrant {
    pub fn new(nodes: usize, ports: usize, prop_slots: u64, queue_bound: u32, rng: SimRng) -> Self {
        RequestGrant {
            queue_bound,
            prop_slots,
            inbox: vec![Vec::new(); nodes],
            decisions: Vec::new(),
            messages: vec![Vec::new(); ports + prop_slots as usize + 2],
            msg_seq: 0,
            outstanding: 0,
            rng,
            scratch_flows: Vec::new(),
            scratch_candidates: Vec::new(),
            scratch_requests: Vec::new(),
            scratch_grants: Vec::new(),
            requests: 0,
            grants: 0,
        }
    }

    /// Requests not yet answered.
    #[inline]
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Messages still to act on.
    #[inline]
    pub fn busy(&self) -> bool {
        self.outstanding > 0 || !self.decisions.is_empty()
    }

    /// Requests and grants that arrive in slot `t` join their inbox (or the
    /// decisions to apply) for the next epoch start.
    pub fn arrive(&mut self, t: u64) {
        let len = self.messages.len() as u64;
        let mut batch = std::mem::take(&mut self.messages[(t % len) as usize]);
        for &(seq, m) in &batch {
            match m {
                Message::Request { to, req } => self.inbox[to as usize].push((seq, req)),
                Message::Decision(src, via, f, granted) => {
                    self.decisions.push((seq, src, via, f, granted))
                }
            }
        }
        batch.clear();
        self.messages[(t % len) as usize] = batch;
    }

    /// Sends `m` from `from` to `to` on the cell of the slot of epoch-start
    /// slot `t`'s epoch that connects them: it arrives one slot plus the
    /// propagation later.
    fn send(&mut self, nodes: &Nodes, t: u64, from: usize, to: usize, m: Message) {
        let k = nodes.slot_to(from, to);
        let arrive = t + k as u64 + 1 + self.prop_slots;
        let len = self.messages.len() as u64;
        let seq = self.msg_seq;
        self.msg_seq += 1;
        self.messages[(arrive % len) as usize].push((seq, m));
    }

    /// A decision for a failed node (nothing reaches it): applied, and its
    /// reservation released, at the next epoch start.
    fn decide_locally(&mut self, src: u32, via: u32, f: u32, granted: bool) {
        self.msg_seq += 1;
        self.decisions.push((self.msg_seq, src, via, f, granted));
    }

    /// Epoch start (slot `t`): apply the grant decisions that have arrived
    /// (a granted cell moves from LOCAL to the source's virtual queue for
    /// the intermediate), grant the requests that have arrived, draw this
    /// epoch's requests.
    pub fn epoch_start(
        &mut self,
        t: u64,
        nodes: &Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        let n = nodes.count();
        let failed = nodes.failed();
        // 1. Decisions that reached their sources during the last epoch.
        let mut decisions = std::mem::take(&mut self.decisions);
        decisions.sort_unstable_by_key(|d| d.0);
        for &(_, src, via, f, granted) in &decisions {
            self.outstanding -= 1;
            let st = &mut flows[f as usize];
            st.requested -= 1;
            let dst = st.dst_node as usize;
            if granted {
                self.grants += 1;
            }
            if granted && (failed[src as usize] || failed[dst]) {
                // The source died after asking, or the destination did: release
                // the intermediate's reservation.
                queues.release(via as usize, dst);
            }
            if failed[dst] && !failed[src as usize] {
                local.discard(flows, pool, f, 1);
                continue;
            }
            if !granted || failed[src as usize] {
                continue;
            }
            if failed[via as usize] {
                // Granted just before the intermediate failed: the cell stays
                // in LOCAL and is requested again.
                continue;
            }
            let cell = local.take(flows, pool, f);
            queues.enqueue_vq(pool, src as usize, via as usize, cell);
        }
        self.decisions = decisions;
        self.decisions.clear();

        // 2. Grants, at each intermediate, over the requests that reached it
        // during the last epoch.
        let q = self.queue_bound;
        let mut reqs = Vec::new();
        for i in 0..n {
            if self.inbox[i].is_empty() {
                continue;
            }
            let mut inbox = std::mem::take(&mut self.inbox[i]);
            inbox.sort_unstable_by_key(|r| r.0);
            reqs.clear();
            reqs.extend(inbox.iter().map(|r| r.1));
            inbox.clear();
            self.inbox[i] = inbox;
            if failed[i] {
                // The sources learn of the failure (§4.4) and ask again.
                for r in &reqs {
                    self.decide_locally(r.src, i as u32, r.flow, false);
                }
            } else {
                self.scratch_grants.clear();
                let m = queues.occ_row(i);
                compute_grants(&mut reqs, m, q, &mut self.rng, &mut self.scratch_grants);
                // compute_grants shuffles `reqs` and grants a prefix-respecting
                // subset; mark which were granted by walking both in order.
                let mut g = 0;
                for r in &reqs {
                    let granted = g < self.scratch_grants.len() && self.scratch_grants[g] == *r;
                    if granted {
                        g += 1;
                    }
                    if failed[r.src as usize] {
                        self.decide_locally(r.src, i as u32, r.flow, granted);
                    } else {
                        let d = Message::Decision(r.src, i as u32, r.flow, granted);
                        self.send(nodes, t, i, r.src as usize, d);
                    }
                }
                debug_assert_eq!(g, self.scratch_grants.len());
            }
        }

        // 3. Requests for this epoch.
        for s in 0..n {
            if failed[s] || !local.has_flows(s) {
                continue;
            }
            local.requestable(s, flows, failed, &mut self.scratch_flows);
            if self.scratch_flows.is_empty() {
                continue;
            }
            self.scratch_candidates.clear();
            for x in 0..n {
                // One request per intermediate per epoch (Fig. 15); we also skip
                // intermediates whose virtual queue here still holds two or more
                // cells, so that a link busy with second-hop traffic cannot make
                // first-hop cells pile up without bound.
                if x != s && !nodes.is_failed(x) && queues.granted_via(s, x) < 2 {
                    self.scratch_candidates.push(x as u32);
                }
            }
            self.scratch_requests.clear();
            compute_requests(
                &mut self.scratch_flows,
                &mut self.scratch_candidates,
                &mut self.rng,
                &mut self.scratch_requests,
            );
            for k in 0..self.scratch_requests.len() {
                let r = self.scratch_requests[k];
                flows[r.flow as usize].requested += 1;
                self.outstanding += 1;
                self.requests += 1;
                let req = Received {
                    src: s as u32,
                    dst: r.dst,
                    flow: r.flow,
                };
                let m = Message::Request { to: r.via, req };
                self.send(nodes, t, s, r.via as usize, m);
            }
        }
    }
}

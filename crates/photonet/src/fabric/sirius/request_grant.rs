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
//! propagation the result is that of applying them all at once. Each message
//! joins its receiver's queue (an intermediate's requests, or the one queue
//! of decisions) when it is created, with its arrival slot: a queue is in
//! creation order by construction, and an epoch start takes the messages
//! that have arrived by then out of it in one pass, with no sort.

use super::local::Local;
use super::nodes::Nodes;
use super::params::Handshake;
use super::queues::Queues;
use super::{Cell, FlowState};
use crate::pool::Pool;
use crate::rng::SimRng;
use crate::sched::sirius::{compute_grants_with, compute_requests_with, FlowCells, Received};

/// The answer to a request: (slot it reaches the source, source,
/// intermediate, flow, granted).
type Decision = (u64, u32, u32, u32, bool);

pub(super) struct RequestGrant {
    queue_bound: u32,
    handshake: Handshake,
    prop_slots: u64,
    /// Requests sent to each intermediate and not yet granted among, in the
    /// order they were created, with the slot each reaches it: an epoch
    /// start grants among those that have arrived.
    inbox: Vec<Vec<(u64, Received)>>,
    /// Grant decisions sent and not yet applied, in the order they were
    /// created: an epoch start applies those that have reached their
    /// sources.
    decisions: Vec<Decision>,
    outstanding: u64,
    rng: SimRng,
    scratch_flows: Vec<FlowCells>,
    scratch_candidates: Vec<u32>,
    /// The requests one intermediate grants among (scratch).
    scratch_reqs: Vec<Received>,
    pub requests: u64,
    pub grants: u64,
}

impl RequestGrant {
    pub fn new(
        nodes: usize,
        prop_slots: u64,
        queue_bound: u32,
        handshake: Handshake,
        rng: SimRng,
    ) -> Self {
        RequestGrant {
            queue_bound,
            handshake,
            prop_slots,
            inbox: vec![Vec::new(); nodes],
            decisions: Vec::new(),
            outstanding: 0,
            rng,
            scratch_flows: Vec::new(),
            scratch_candidates: Vec::new(),
            scratch_reqs: Vec::new(),
            requests: 0,
            grants: 0,
        }
    }

    /// Messages still to act on.
    #[inline]
    pub fn busy(&self) -> bool {
        self.outstanding > 0 || !self.decisions.is_empty()
    }

    /// Whether messages are acted on in the slot they arrive (not only at
    /// epoch starts): [`RequestGrant::slot`] must run every slot.
    #[inline]
    pub fn per_slot(&self) -> bool {
        self.handshake != Handshake::TwoEpochs
    }

    /// A decision for a failed node (nothing reaches it): applied, and its
    /// reservation released, at the next epoch start.
    fn decide_locally(&mut self, t: u64, src: u32, via: u32, f: u32, granted: bool) {
        self.decisions.push((t, src, via, f, granted));
    }

    /// Epoch start (slot `t`): apply the grant decisions that have arrived
    /// (a granted cell moves from LOCAL to the source's virtual queue for
    /// the intermediate), grant the requests that have arrived, draw this
    /// epoch's requests.
    #[inline(never)] // once per slot: kept apart in profiles
    pub fn epoch_start(
        &mut self,
        t: u64,
        nodes: &Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        // 1. Decisions that reached their sources during the last epoch.
        self.apply_decisions(t, nodes, queues, local, flows, pool);
        // 2. Grants, at each intermediate, over the requests that reached it
        // during the last epoch.
        self.grant(t, nodes, queues);
        // 3. Requests for this epoch.
        self.draw_requests(t, nodes, queues, local, flows);
    }

    /// A slot that starts no epoch, with a handshake shorter than two
    /// epochs: the requests that have arrived are granted at once and (with
    /// `on_arrival`) the decisions that have arrived are applied at once.
    #[inline(never)]
    pub fn slot(
        &mut self,
        t: u64,
        nodes: &Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        if self.handshake == Handshake::OnArrival && !self.decisions.is_empty() {
            self.apply_decisions(t, nodes, queues, local, flows, pool);
        }
        if self.outstanding > 0 {
            self.grant(t, nodes, queues);
        }
    }

    /// Applies the grant decisions that have reached their sources by slot
    /// `t`: a granted cell moves from LOCAL to the source's virtual queue
    /// for the intermediate.
    fn apply_decisions(
        &mut self,
        t: u64,
        nodes: &Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
        pool: &mut Pool<Cell>,
    ) {
        let failed = nodes.failed();
        let none_failed = nodes.failed_count() == 0;
        let (outstanding, grants) = (&mut self.outstanding, &mut self.grants);
        drain_arrived(
            &mut self.decisions,
            t,
            |d| d.0,
            |(_, src, via, f, granted)| {
                *outstanding -= 1;
                let st = &mut flows[f as usize];
                st.requested -= 1;
                let dst = st.dst_node as usize;
                if granted {
                    *grants += 1;
                }
                if none_failed {
                    // The branches below without their failed-node lookups.
                    if granted {
                        let cell = local.take(flows, pool, f);
                        queues.enqueue_vq(pool, src as usize, via as usize, cell);
                    }
                    return;
                }
                if granted && (failed[src as usize] || failed[dst]) {
                    // The source died after asking, or the destination did: release
                    // the intermediate's reservation.
                    queues.release(via as usize, dst);
                    queues.release_src(via as usize, src as usize, dst);
                }
                if failed[dst] && !failed[src as usize] {
                    local.discard(flows, pool, f, 1);
                    return;
                }
                if !granted || failed[src as usize] {
                    return;
                }
                if failed[via as usize] {
                    // Granted just before the intermediate failed: the cell stays
                    // in LOCAL and is requested again.
                    return;
                }
                let cell = local.take(flows, pool, f);
                queues.enqueue_vq(pool, src as usize, via as usize, cell);
            },
        );
    }

    /// Grants, at each intermediate, over the requests that have reached it
    /// by slot `t`.
    fn grant(&mut self, t: u64, nodes: &Nodes, queues: &mut Queues) {
        let n = nodes.count();
        let failed = nodes.failed();
        let none_failed = nodes.failed_count() == 0;
        let now = nodes.slot_in_epoch(t);
        let q = self.queue_bound;
        let mut reqs = std::mem::take(&mut self.scratch_reqs);
        for i in 0..n {
            if self.inbox[i].is_empty() {
                continue;
            }
            take_arrived(&mut self.inbox[i], t, |r| r.0, |r| r.1, &mut reqs);
            if reqs.is_empty() {
                continue;
            }
            if failed[i] {
                // The sources learn of the failure (§4.4) and ask again.
                for r in &reqs {
                    self.decide_locally(t, r.src, i as u32, r.flow, false);
                }
            } else {
                // Each request's decision goes out as it is made, in the
                // order they are visited.
                let (decisions, prop) = (&mut self.decisions, self.prop_slots);
                let mut decide = |r: &Received, granted: bool| {
                    let at = if !none_failed && failed[r.src as usize] {
                        t
                    } else {
                        arrival(nodes, prop, t, now, i, r.src as usize)
                    };
                    decisions.push((at, r.src, i as u32, r.flow, granted));
                };
                if queues.per_source() {
                    // Q per (source, destination): each request is judged on
                    // its own pair's count, so their order does not matter.
                    for r in &reqs {
                        let granted = queues.try_grant_src(i, r.src as usize, r.dst as usize, q);
                        decide(r, granted);
                    }
                } else {
                    let m = queues.occ_row(i);
                    compute_grants_with(&mut reqs, m, q, &mut self.rng, decide);
                }
            }
        }
        self.scratch_reqs = reqs;
    }

    /// Draws this epoch's requests (Fig. 15's compute_requests at every
    /// node with LOCAL cells).
    fn draw_requests(
        &mut self,
        t: u64,
        nodes: &Nodes,
        queues: &mut Queues,
        local: &mut Local,
        flows: &mut [FlowState],
    ) {
        let n = nodes.count();
        let failed = nodes.failed();
        let now = nodes.slot_in_epoch(t);
        for s in 0..n {
            if failed[s] || !local.has_flows(s) {
                continue;
            }
            local.requestable(s, flows, failed, &mut self.scratch_flows);
            if self.scratch_flows.is_empty() {
                continue;
            }
            self.scratch_candidates.clear();
            // One request per intermediate per epoch (Fig. 15); we also skip
            // intermediates whose virtual queue here still holds two or more
            // cells, so that a link busy with second-hop traffic cannot make
            // first-hop cells pile up without bound. The candidates are the
            // live nodes other than s without a full virtual queue, in node
            // order, read from the bitsets a word at a time.
            for w in 0..queues.words() {
                let mut bits = nodes.live_word(w) & !queues.full_word(s, w);
                if w == s / 64 {
                    bits &= !(1 << (s % 64));
                }
                while bits != 0 {
                    self.scratch_candidates
                        .push((w * 64) as u32 + bits.trailing_zeros());
                    bits &= bits - 1;
                }
            }
            debug_assert!(self.scratch_candidates.iter().eq((0..n as u32)
                .filter(|&x| {
                    let x = x as usize;
                    x != s && !nodes.is_failed(x) && queues.granted_via(s, x) < 2
                })
                .collect::<Vec<_>>()
                .iter()));
            // Each request joins its intermediate's inbox as it is drawn.
            let (inbox, prop) = (&mut self.inbox, self.prop_slots);
            let (outstanding, requests) = (&mut self.outstanding, &mut self.requests);
            compute_requests_with(
                &mut self.scratch_flows,
                &mut self.scratch_candidates,
                &mut self.rng,
                |r| {
                    flows[r.flow as usize].requested += 1;
                    *outstanding += 1;
                    *requests += 1;
                    let req = Received {
                        src: s as u32,
                        dst: r.dst,
                        flow: r.flow,
                    };
                    let at = arrival(nodes, prop, t, now, s, r.via as usize);
                    inbox[r.via as usize].push((at, req));
                },
            );
        }
    }
}

/// The slot in which a message sent from `from` to `to` at slot `t`
/// arrives: it rides on the next cell of the slot that connects them (in
/// this slot or later in the cycle), and arrives one slot plus the
/// propagation (`prop_slots`) later. At an epoch start the wait is
/// `slot_to` itself. `now` is `nodes.slot_in_epoch(t)`, computed once per
/// batch of messages (a division each otherwise). A free function so that
/// the per-message callbacks can call it while the generator is borrowed.
#[inline]
fn arrival(nodes: &Nodes, prop_slots: u64, t: u64, now: usize, from: usize, to: usize) -> u64 {
    let g = nodes.ports();
    let k = nodes.slot_to(from, to);
    let wait = if k >= now { k - now } else { k + g - now };
    t + wait as u64 + 1 + prop_slots
}

/// Hands the messages of `queue` that have arrived by slot `t` (`at` says
/// when each does) to `act`, in order, and leaves the others in order: one
/// pass, with no collection of the arrived ones in between.
#[inline]
fn drain_arrived<T: Copy>(
    queue: &mut Vec<T>,
    t: u64,
    at: impl Fn(&T) -> u64,
    mut act: impl FnMut(T),
) {
    queue.retain(|m| {
        if at(m) <= t {
            act(*m);
            false
        } else {
            true
        }
    });
}

/// Moves the messages of `queue` that have arrived by slot `t` (`at` says
/// when each does) into `out` (cleared first) as `keep` maps them, and
/// leaves the others; both keep their order. One pass, no sort: a queue
/// in creation order yields its arrived messages in creation order.
fn take_arrived<T: Copy, U>(
    queue: &mut Vec<T>,
    t: u64,
    at: impl Fn(&T) -> u64,
    keep: impl Fn(T) -> U,
    out: &mut Vec<U>,
) {
    out.clear();
    drain_arrived(queue, t, at, |m| out.push(keep(m)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `drain_arrived` and `take_arrived` against a partition of the
        /// queue by arrival: the arrived messages acted on (or taken) in
        /// queue order, the others left in queue order.
        #[test]
        fn arrived_messages_leave_the_queue_in_order(
            ats in prop::collection::vec(0u64..20, 0..60),
            t in 0u64..20,
        ) {
            let queue: Vec<(u64, usize)> = ats.iter().copied().zip(0..).collect();
            let (arrived, waiting): (Vec<_>, Vec<_>) = queue.iter().copied().partition(|m| m.0 <= t);
            let (mut qa, mut acted) = (queue.clone(), Vec::new());
            drain_arrived(&mut qa, t, |m| m.0, |m| acted.push(m));
            prop_assert_eq!(&acted, &arrived);
            prop_assert_eq!(&qa, &waiting);
            let (mut qb, mut taken) = (queue, vec![(99, 99)]);
            take_arrived(&mut qb, t, |m| m.0, |m| m, &mut taken);
            prop_assert_eq!(&taken, &arrived);
            prop_assert_eq!(&qb, &waiting);
        }
    }
}

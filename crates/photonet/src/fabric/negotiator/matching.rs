//! The scheduling processes (§3.3.1): REQUEST → GRANT → ACCEPT rounds of
//! NegotiaToR Matching (`sched::negotiator`) pipelined over epochs, one
//! process started per epoch, and the plan they leave for a data epoch's
//! scheduled phase.
//!
//! The matching reads the other parts through [`Ctx`] (queues, relay
//! queues, known failures, the destinations' host-facing backlog) and owns
//! its rings, the receiver limit's promises and the stateful demand matrix.

use super::failures::Failures;
use super::params::{
    Algorithm, NegotiatorLayout, NegotiatorParams, ProjectorBundle, ProjectorOrder, RequestKind,
    RingInit,
};
use super::relay::Relay;
use super::source::SourceQueues;
use super::stats::Waits;
use super::time::Time;
use crate::host_edge::HostEdge;
use crate::rng::SimRng;
use crate::sched::negotiator::{
    accept, grant, projector_grant, projector_requests, relay_candidates, Grant, Matching, Request,
    Rings, Scratch, FREE,
};
use crate::units::{Rate, SimTime};
use std::collections::VecDeque;

/// What the matching reads of the rest of the fabric.
pub(super) struct Ctx<'a> {
    pub l: &'a NegotiatorLayout,
    pub time: &'a Time,
    pub fail: &'a Failures,
    pub edge: &'a HostEdge,
    pub relay: &'a Relay,
}

/// One scheduling process (REQUEST → GRANT → ACCEPT, `iterations` times).
pub(super) struct Process {
    start_epoch: u64,
    data_epoch: u64,
    step: usize,
    m: Matching,
    requests: Vec<Vec<Request>>,
    grants: Vec<Grant>,
    /// Ports each destination granted (receiver limit's promise).
    granted_ports: Vec<u32>,
    /// ProjecToR per-port requests (src, src_port, dst, weight).
    port_requests: Vec<(u32, u32, u32, u64)>,
    /// Relay requests (source, intermediate, final destination), sorted.
    relay: Vec<(u32, u32, u32)>,
    /// Stateful (A.2.4): demand each GRANT of this round took off the
    /// destination's matrix (destination, source, bytes), in grant order.
    reserved: Vec<(u32, u32, u64)>,
    /// Stateful: what the accepted ports of every round so far keep of
    /// their grants' demand (source, destination, bytes).
    kept: Vec<(u32, u32, u64)>,
    busy: bool,
}

/// The matched ports of a data epoch's scheduled phase.
pub(super) struct Plan {
    /// Transfers (src, src_port, dst, dst_port).
    pub matched: Vec<(u32, u32, u32, u32)>,
    /// The same, per pair: (src, dst, ports), in the order of their lowest
    /// port.
    pub runs: Vec<(u32, u32, u32)>,
    /// Per run: the final destination of relayed data, or FREE.
    pub run_relay: Vec<u32>,
    /// Stateful: per run, the demand its grants reserved, and the bytes
    /// its scheduled phase sent ([`Negotiation::settle`]).
    pub run_kept: Vec<u64>,
    pub run_sent: Vec<u64>,
    /// The data epoch the plan is for.
    pub epoch: u64,
}

impl Plan {
    /// Stateful: `b` bytes of pair (s, d) left in its scheduled phase.
    pub fn sent(&mut self, s: usize, d: usize, b: u64) {
        if self.run_sent.is_empty() {
            return;
        }
        let (s, d) = (s as u32, d as u32);
        if let Some(k) = self.runs.iter().position(|r| (r.0, r.1) == (s, d)) {
            self.run_sent[k] += b;
        }
    }

    /// Last epoch's matched ports are done.
    pub fn clear(&mut self) {
        self.matched.clear();
        self.runs.clear();
        self.run_kept.clear();
        self.run_sent.clear();
    }
}

/// Counters of the matching.
#[derive(Default, Clone, Debug)]
pub(super) struct MatchCounters {
    pub requests: u64,
    pub grants: u64,
    pub accepts: u64,
    pub grants_lost: u64,
    pub requests_lost: u64,
    pub ports_withheld: u64,
    pub relay_requests: u64,
    pub relay_refused: u64,
    pub relay_accepts: u64,
}

/// The steps' own state: rings, scratch, promises, demand.
pub(super) struct Matcher {
    rng: SimRng,
    rings: Rings,
    scratch: Scratch,
    /// Bytes a queue must exceed to be requested.
    threshold: u64,
    requests_kind: RequestKind,
    hol_alpha: f64,
    stateful: bool,
    algorithm: Algorithm,
    /// ProjecToR: bytes of one bundle (one per-port request).
    bundle: u64,
    /// ProjecToR: the order of a source's bundles.
    order: ProjectorOrder,
    /// ProjecToR (`per_bundle_age`): scratch of a pair's segments.
    segs: Vec<(SimTime, u64)>,
    ring_init: RingInit,
    /// Receiver limit: capacity of ports granted and not yet used, per ToR.
    promised: Vec<u64>,
    /// Stateful matrix [d·N + s] of demand reported to d by s.
    demand: Vec<i64>,
    /// Scratch: weights of informative requests per pair.
    pair_weight: Vec<u64>,
    /// Scratch: relay candidates.
    relay_out: Vec<u32>,
    pub c: MatchCounters,
    /// Accepts over grants of each first-round ACCEPT.
    pub ratios: Vec<f32>,
    /// `wait_stats`: where mice and pairs wait.
    pub waits: Option<Waits>,
}

/// The processes in flight and the plan of the coming scheduled phase.
pub(super) struct Negotiation {
    procs: VecDeque<Process>,
    spare: Vec<Process>,
    m: Matcher,
    pub plan: Plan,
}

impl Negotiation {
    pub fn new(l: &NegotiatorLayout, p: &NegotiatorParams, mut rng: SimRng) -> Negotiation {
        let n = l.n;
        let rings = Rings::random(&l.net, &mut rng);
        Negotiation {
            procs: VecDeque::new(),
            spare: Vec::new(),
            m: Matcher {
                rng,
                rings,
                scratch: Scratch::default(),
                threshold: if l.piggyback {
                    p.request_threshold as u64 * l.pre_payload
                } else {
                    0
                },
                requests_kind: p.requests,
                hol_alpha: p.hol_alpha,
                stateful: p.stateful,
                algorithm: p.algorithm,
                bundle: projector_bundle_bytes(l, p.projector_bundle),
                order: p.projector_order,
                segs: Vec::new(),
                ring_init: p.ring_init,
                promised: vec![0; n],
                demand: if p.stateful { vec![0; n * n] } else { vec![] },
                pair_weight: vec![0; n * n],
                relay_out: Vec::new(),
                c: MatchCounters::default(),
                ratios: Vec::new(),
                waits: p
                    .wait_stats
                    .then(|| Waits::new(n, (3 * l.iterations as u64 - 1) * l.k)),
            },
            plan: Plan {
                matched: Vec::new(),
                runs: Vec::new(),
                run_relay: Vec::new(),
                run_kept: Vec::new(),
                run_sent: Vec::new(),
                epoch: u64::MAX,
            },
        }
    }

    pub fn counters(&self) -> &MatchCounters {
        &self.m.c
    }
    pub fn ratios(&self) -> &[f32] {
        &self.m.ratios
    }
    pub fn waits(&self) -> Option<&Waits> {
        self.m.waits.as_ref()
    }
    pub fn waits_mut(&mut self) -> Option<&mut Waits> {
        self.m.waits.as_mut()
    }
    /// Whether a process still has work.
    pub fn busy(&self) -> bool {
        self.procs.iter().any(|p| p.busy)
    }
    /// The scheduled phase used `bytes` of what was promised to `d`.
    #[inline]
    pub fn consume_promise(&mut self, d: usize, bytes: u64) {
        self.m.promised[d] = self.m.promised[d].saturating_sub(bytes);
    }

    /// Stateful: settles the plan's reservations once its scheduled phase
    /// is over, then clears it. A grant reserves demand by port capacity,
    /// but a packet never mixes flows, so a phase may send less than it
    /// reserved: the rest is demand again (else those bytes would never be
    /// granted: issue 27 item 2). Bytes sent beyond the reservation were
    /// demand too (reported or not).
    pub fn settle(&mut self, src: &mut SourceQueues) {
        let plan = &mut self.plan;
        if self.m.stateful {
            let n = src.n();
            for (k, &(s, d, _)) in plan.runs.iter().enumerate() {
                let (kept, sent) = (plan.run_kept[k], plan.run_sent[k]);
                let x = &mut self.m.demand[d as usize * n + s as usize];
                if sent <= kept {
                    *x += (kept - sent) as i64;
                } else {
                    let r = (sent - kept).min((*x).max(0) as u64);
                    *x -= r as i64;
                    src.forget_new_bytes(s as usize, d as usize, sent - kept - r);
                }
            }
        }
        plan.clear();
    }

    /// Stateful: `b` bytes of `s`'s queue for `d` left outside a scheduled
    /// phase (piggybacked): they no longer need a grant.
    pub fn sent_unreserved(&mut self, s: usize, d: usize, b: u64, src: &mut SourceQueues) {
        if !self.m.stateful {
            return;
        }
        let x = &mut self.m.demand[d * src.n() + s];
        let r = b.min((*x).max(0) as u64);
        *x -= r as i64;
        src.forget_new_bytes(s, d, b - r);
    }

    /// The start of epoch `e`: a new process starts, and every process whose
    /// step falls in `e` takes it.
    pub fn epoch(&mut self, e: u64, now: SimTime, cx: &Ctx, src: &mut SourceQueues) {
        if self.m.ring_init == RingInit::EveryEpoch {
            self.m.rings.randomize(&cx.l.net, &mut self.m.rng);
        }
        self.settle(src);
        let rounds = cx.l.iterations;
        let k = cx.l.k;
        // Processes whose data epoch passed while the fabric idled.
        while self.procs.front().is_some_and(|p| p.data_epoch < e) {
            let p = self.procs.pop_front().expect("front");
            // Its ports were never used: their promise goes back.
            let (sp, cap) = (cx.l.s, cx.l.sched_slots as u64 * cx.l.sched_payload);
            for (d, x) in self.m.promised.iter_mut().enumerate() {
                let held = (0..sp).filter(|&q| p.m.dst[d * sp + q] != FREE).count() as u64;
                let ports = held + p.granted_ports[d] as u64;
                *x = x.saturating_sub(ports * cap);
            }
            self.spare.push(p);
        }
        let start = self.new_process(cx.l, e, e + (3 * rounds as u64 - 1) * k);
        self.procs.push_back(start);
        for p in self.procs.iter_mut() {
            if !(e - p.start_epoch).is_multiple_of(k) {
                continue;
            }
            let step = ((e - p.start_epoch) / k) as usize;
            if step >= 3 * rounds {
                continue;
            }
            p.step = step;
            let round = step / 3;
            match step % 3 {
                0 => self.m.step_request(p, (e, now, round), cx, src),
                1 => self.m.step_grant(p, e, now, cx, src),
                _ => {
                    let last = round + 1 == rounds;
                    self.m.step_accept(p, (now, last), cx, src, &mut self.plan)
                }
            }
        }
        while let Some(p) = self.procs.front() {
            if p.data_epoch <= e {
                let p = self.procs.pop_front().expect("front");
                self.spare.push(p);
            } else {
                break;
            }
        }
    }

    fn new_process(&mut self, l: &NegotiatorLayout, start_epoch: u64, data_epoch: u64) -> Process {
        let mut p = self.spare.pop().unwrap_or_else(|| Process {
            start_epoch: 0,
            data_epoch: 0,
            step: 0,
            m: Matching::new(&l.net),
            requests: vec![Vec::new(); l.n],
            grants: Vec::new(),
            granted_ports: vec![0; l.n],
            port_requests: Vec::new(),
            relay: Vec::new(),
            reserved: Vec::new(),
            kept: Vec::new(),
            busy: false,
        });
        p.start_epoch = start_epoch;
        p.data_epoch = data_epoch;
        p.step = 0;
        p.busy = false;
        p.relay.clear();
        p.m.clear();
        // A recycled process whose GRANT step falls in an idle gap (skipped)
        // reaches ACCEPT with these: they must not be the last use's.
        p.granted_ports.fill(0);
        p.grants.clear();
        p.reserved.clear();
        p.kept.clear();
        p
    }
}

/// Bytes of one ProjecToR bundle: one port's scheduled phase, or (`tor`) all
/// S ports' — "the amount of data sent in one epoch" (App. A.2.5) by a port or
/// by a ToR.
pub(super) fn projector_bundle_bytes(l: &NegotiatorLayout, b: ProjectorBundle) -> u64 {
    let port = (l.sched_slots as u64 * l.sched_payload).max(1);
    match b {
        ProjectorBundle::Port => port,
        ProjectorBundle::Tor => port * l.s as u64,
    }
}

/// Source `s`'s ProjecToR bundles into `out`: `(dst, bundles, age)` for each
/// destination whose queue exceeds `threshold`, ⌈queued / `bundle`⌉ bundles
/// (each asks for one port), aged by the queue's oldest head.
pub(super) fn projector_bundles(
    src: &SourceQueues,
    s: usize,
    (threshold, bundle): (u64, u64),
    now: SimTime,
    out: &mut Vec<(u32, u32, u64)>,
) {
    out.clear();
    for &d in src.active(s) {
        let b = src.bytes(s, d as usize);
        if b > threshold {
            let age = (now - src.oldest_head(s, d as usize).min(now)).0;
            out.push((d, b.div_ceil(bundle) as u32, age));
        }
    }
}

/// Source `s`'s ProjecToR bundles with a waiting delay each
/// (`projector_order = "per_bundle_age"`) into `out`: `(dst, 1, age)` per
/// bundle, for each destination whose queue exceeds `threshold`. A pair's
/// queued bytes in arrival order are cut into ⌈queued / `bundle`⌉ bundles;
/// bundle k waited as long as its oldest data, the byte at offset k ·
/// `bundle` (a segment's bytes share its arrival), and only a pair's first
/// `ports` bundles are listed (a source asks for at most `ports`, and a
/// pair's bundles are ever younger). `segs` is scratch. Exact: every queued
/// segment is read and sorted by arrival.
pub(super) fn projector_bundle_ages(
    src: &SourceQueues,
    s: usize,
    (threshold, bundle): (u64, u64),
    (now, ports): (SimTime, usize),
    segs: &mut Vec<(SimTime, u64)>,
    out: &mut Vec<(u32, u32, u64)>,
) {
    out.clear();
    for &d in src.active(s) {
        let b = src.bytes(s, d as usize);
        if b <= threshold {
            continue;
        }
        let count = b.div_ceil(bundle).min(ports as u64);
        src.segments(s, d as usize, segs);
        let segs = oldest_first(segs, (count - 1) * bundle + 1);
        // `end`: bytes up to the end of the current segment.
        let (mut i, mut end) = (0, segs[0].1);
        for k in 0..count {
            let off = k * bundle;
            while end <= off {
                i += 1;
                end += segs[i].1;
            }
            out.push((d, 1, (now - segs[i].0.min(now)).0));
        }
    }
}

/// The oldest segments of `segs` sorted by arrival, as many as hold at least
/// `need` bytes (all of them if they hold fewer). Only a pair's first few
/// bundles are aged, while a loaded pair queues thousands of segments, so
/// selecting a prefix (doubling it until it holds `need` bytes) replaces
/// sorting them all. Equal arrivals may come in any order: a bundle's age is
/// the arrival of its first byte, and the bytes of equal arrivals cover the
/// same offsets whatever their order.
pub(super) fn oldest_first(segs: &mut [(SimTime, u64)], need: u64) -> &[(SimTime, u64)] {
    let mut t = 32.min(segs.len());
    loop {
        if t < segs.len() {
            segs.select_nth_unstable_by_key(t, |x| x.0);
        }
        let all = t == segs.len();
        let head = &mut segs[..t];
        head.sort_unstable_by_key(|x| x.0);
        if all || head.iter().map(|x| x.1).sum::<u64>() >= need {
            return &segs[..t];
        }
        t = (2 * t).min(segs.len());
    }
}

/// The weight of the request `(_, d)` that follows `before` in a source's
/// ProjecToR requests: the waiting delay of the bundle it asks for, `d`'s
/// next one in `bundles` (sorted by `projector_requests`).
fn request_weight(bundles: &[(u32, u32, u64)], before: &[(u32, u32)], d: u32) -> u64 {
    let mut k = before.iter().filter(|r| r.1 == d).count() as u32;
    for &(_, count, w) in bundles.iter().filter(|b| b.0 == d) {
        if k < count {
            return w;
        }
        k -= count;
    }
    0
}

impl Matcher {
    fn weight(&self, src: &SourceQueues, n: usize, s: usize, d: usize, now: SimTime) -> u64 {
        let pair = s * n + d;
        match self.requests_kind {
            RequestKind::Binary => 0,
            RequestKind::DataSize => src.bytes(s, d),
            RequestKind::HolDelay => {
                let hol = |prio: usize| -> f64 {
                    if prio >= src.prios() {
                        return 0.0;
                    }
                    src.front_seg(pair, prio)
                        .map_or(0.0, |seg| (now - seg.since).0 as f64)
                };
                let a = self.hol_alpha;
                let w = if src.prios() >= 3 {
                    (1.0 - a) * (hol(0) + hol(1)) / 2.0 + a * hol(src.prios() - 1)
                } else {
                    hol(0)
                };
                w as u64
            }
        }
    }

    /// REQUEST of round `round` at epoch `e` (messages ride this epoch's
    /// predefined phase).
    fn step_request(
        &mut self,
        p: &mut Process,
        (e, now, round): (u64, SimTime, usize),
        cx: &Ctx,
        src: &mut SourceQueues,
    ) {
        for r in p.requests.iter_mut() {
            r.clear();
        }
        p.port_requests.clear();
        let n = cx.l.n;
        let sp = cx.l.s;
        let mut any = false;
        let mut bundles: Vec<(u32, u32, u64)> = Vec::new();
        let mut port_out: Vec<(u32, u32)> = Vec::new();
        let mut marked: Vec<bool> = if cx.relay.on {
            vec![false; n]
        } else {
            Vec::new()
        };
        for s in 0..n {
            if src.active(s).is_empty() && (!cx.relay.on || cx.relay.active(s).is_empty()) {
                continue;
            }
            if round > 0 && (0..sp).all(|x| !p.m.src_free(s, x)) {
                continue;
            }
            if self.algorithm == Algorithm::Projector {
                let tb = (self.threshold, self.bundle);
                if self.order == ProjectorOrder::PerBundleAge {
                    projector_bundle_ages(src, s, tb, (now, sp), &mut self.segs, &mut bundles);
                } else {
                    projector_bundles(src, s, tb, now, &mut bundles);
                }
                port_out.clear();
                let interleave = self.order == ProjectorOrder::Interleaved;
                projector_requests(&cx.l.net, s, &mut bundles, interleave, &mut port_out);
                for (i, &(port, d)) in port_out.iter().enumerate() {
                    self.c.requests += 1;
                    if cx.fail.message_ok(cx.l, s, d as usize, e) {
                        if let (Some(w), 0) = (self.waits.as_mut(), round) {
                            w.requested(s * n + d as usize, e);
                        }
                        let w = request_weight(&bundles, &port_out[..i], d);
                        p.port_requests.push((s as u32, port, d, w));
                        any = true;
                    } else {
                        self.c.requests_lost += 1;
                    }
                }
                continue;
            }
            // Destinations in index order so every request list stays sorted
            // by source (s ascends in the outer loop).
            for k in 0..src.active(s).len() {
                let d = src.active(s)[k] as usize;
                if src.bytes(s, d) + cx.relay.bytes(s, d) <= self.threshold {
                    continue;
                }
                self.c.requests += 1;
                if !cx.fail.message_ok(cx.l, s, d, e) {
                    self.c.requests_lost += 1;
                    continue;
                }
                let weight = self.weight(src, n, s, d, now);
                if self.stateful {
                    // The request reports what arrived since the last one.
                    self.demand[d * n + s] += src.take_new_bytes(s, d) as i64;
                }
                p.requests[d].push(Request {
                    src: s as u32,
                    weight,
                });
                if let (Some(w), 0) = (self.waits.as_mut(), round) {
                    w.requested(s * n + d, e);
                }
                any = true;
                if cx.relay.on {
                    marked[d] = true;
                }
            }
            if cx.relay.on {
                any |= self.relay_requests(p, (s, e), &mut marked, cx, src);
            }
        }
        if cx.relay.on {
            p.relay.sort_unstable();
        }
        if let (Some(w), 0) = (self.waits.as_mut(), round) {
            w.requests_done(e);
        }
        p.busy = any;
    }

    /// Relay (thin-clos, App. A.2.2) REQUESTs of source `s`: requests for the
    /// data it holds as an intermediate (destinations without own data), then
    /// relay requests for its elephant queues. `marked` has the ToRs `s`
    /// already requests; it is left cleared.
    fn relay_requests(
        &mut self,
        p: &mut Process,
        (s, e): (usize, u64),
        marked: &mut [bool],
        cx: &Ctx,
        src: &SourceQueues,
    ) -> bool {
        let n = cx.l.n;
        let mut any = false;
        for &d in cx.relay.active(s) {
            let d = d as usize;
            // With own data: requested above. Relayed data is never
            // piggybacked, so any of it is requested: below the piggyback
            // threshold it stranded (issue 27, found by the fuzzer).
            if src.bytes(s, d) > 0 || cx.relay.bytes(s, d) == 0 {
                continue;
            }
            self.c.requests += 1;
            p.requests[d].push(Request {
                src: s as u32,
                weight: 0,
            });
            marked[d] = true;
            any = true;
        }
        let sch = cx.l.thin.as_ref().expect("relay is thin-clos only");
        let mut loaded = vec![false; cx.l.s];
        for &d in src.active(s) {
            if src.bytes(s, d as usize) > cx.relay.threshold {
                loaded[sch.link(s, d as usize).0] = true;
            }
        }
        let out = &mut self.relay_out;
        for &d in src.active(s) {
            let d = d as usize;
            if src.low_bytes(s, d) < cx.relay.threshold {
                continue;
            }
            let port_to = |m: usize| sch.link(s, m).0;
            let direct = |m: usize| marked[m];
            relay_candidates(
                n,
                s,
                d,
                &port_to,
                &loaded,
                &direct,
                cx.relay.fanout,
                (e as usize + s) % n,
                out,
            );
            for &m in out.iter() {
                marked[m as usize] = true;
                self.c.relay_requests += 1;
                p.requests[m as usize].push(Request {
                    src: s as u32,
                    weight: 0,
                });
                p.relay.push((s as u32, m, d as u32));
                any = true;
            }
        }
        marked.fill(false);
        any
    }

    fn step_grant(&mut self, p: &mut Process, e: u64, now: SimTime, cx: &Ctx, src: &SourceQueues) {
        let (n, sp) = (cx.l.n, cx.l.s);
        p.grants.clear();
        p.granted_ports.fill(0);
        let port_cap = cx.l.sched_slots as u64 * cx.l.sched_payload;
        // Ports a destination may not grant: known failures (both sides) and
        // the receiver limit. Marked busy in the matching for this step.
        const BLOCK: u32 = u32::MAX - 1;
        let mut blocked: Vec<usize> = Vec::new();
        let mut blocked_src: Vec<usize> = Vec::new();
        if cx.fail.any() {
            for i in 0..n * sp {
                if cx.fail.ingress_known(i) && p.m.dst[i] == FREE {
                    p.m.dst[i] = BLOCK;
                    blocked.push(i);
                }
                if cx.fail.egress_known(i) && p.m.src[i] == FREE {
                    p.m.src[i] = BLOCK;
                    blocked_src.push(i);
                }
            }
        }
        let limited = cx.l.receiver_buffer > 0;
        if limited {
            let arrive = cx.time.start(p.data_epoch) + cx.l.pre_len + cx.l.propagation;
            let tor_rate = Rate(cx.l.host_rate.0 * cx.l.servers_per_rack as u64);
            let drain = tor_rate.bytes_in(arrive.saturating_sub(now));
            for d in 0..n {
                let has_requests = match self.algorithm {
                    Algorithm::Negotiator => !p.requests[d].is_empty(),
                    Algorithm::Projector => true,
                };
                if !has_requests {
                    continue;
                }
                let used = cx.edge.backlog(d) + self.promised[d];
                let credit = (cx.l.receiver_buffer + drain).saturating_sub(used);
                let allowed = (credit / port_cap.max(1)) as usize;
                let free: Vec<usize> = (0..sp).filter(|&q| p.m.dst[d * sp + q] == FREE).collect();
                if allowed < free.len() {
                    let r = (e % sp as u64) as usize;
                    for &q in free
                        .iter()
                        .cycle()
                        .skip(r)
                        .skip(allowed)
                        .take(free.len() - allowed)
                    {
                        p.m.dst[d * sp + q] = BLOCK;
                        blocked.push(d * sp + q);
                    }
                    self.c.ports_withheld += (free.len() - allowed) as u64;
                }
            }
        }
        if cx.relay.on && !p.relay.is_empty() {
            // The intermediates' part of relay: a candidate refuses when its
            // relay queue for the destination lacks room for one port's
            // scheduled phase, or its own egress port towards the destination
            // carries high-volume direct traffic.
            let sch = cx.l.thin.as_ref().expect("relay is thin-clos only");
            let (requests, refused) = (&mut p.requests, &mut self.c.relay_refused);
            p.relay.retain(|&(s, m, d)| {
                let (mu, du) = (m as usize, d as usize);
                let room = cx.relay.has_room(mu, du, port_cap);
                if room && !cx.relay.port_loaded(sch, src, mu, du) {
                    return true;
                }
                *refused += 1;
                let r = &mut requests[mu];
                if let Ok(i) = r.binary_search_by_key(&s, |q| q.src) {
                    r.remove(i);
                }
                false
            });
        }
        let out = &mut p.grants;
        match self.algorithm {
            Algorithm::Negotiator => {
                let weighted = self.requests_kind != RequestKind::Binary;
                let demand = &mut self.demand;
                let stateful = self.stateful;
                let reserved = &mut p.reserved;
                reserved.clear();
                let mut allow = |d: u32, s: u32| -> bool {
                    if !stateful {
                        return true;
                    }
                    // A grant covers up to one port's scheduled phase of the
                    // pending data: the matrix never goes below zero (a
                    // 500 B request must not hide the next 33 KB of demand).
                    let x = &mut demand[d as usize * n + s as usize];
                    if *x > 0 {
                        let take = (*x as u64).min(port_cap);
                        *x -= take as i64;
                        reserved.push((d, s, take));
                        true
                    } else {
                        false
                    }
                };
                grant(
                    &cx.l.net,
                    &p.requests,
                    &p.m,
                    &mut self.rings,
                    weighted,
                    &mut allow,
                    &mut self.scratch,
                    out,
                );
            }
            Algorithm::Projector => {
                let m = &p.m;
                let net = &cx.l.net;
                p.port_requests.retain(|r| {
                    let q = net.dst_port(r.0 as usize, r.2 as usize, r.1 as usize);
                    q.is_some_and(|q| m.dst[r.2 as usize * sp + q] == FREE)
                        && m.src[r.0 as usize * sp + r.1 as usize] == FREE
                });
                projector_grant(&cx.l.net, &mut p.port_requests, &mut self.rings, out);
            }
        }
        for i in blocked {
            p.m.dst[i] = FREE;
        }
        for i in blocked_src {
            p.m.src[i] = FREE;
        }
        for g in out.iter() {
            p.granted_ports[g.dst as usize] += 1;
            self.promised[g.dst as usize] += port_cap;
        }
        self.c.grants += out.len() as u64;
        // Grants travel back on d → s predefined links.
        let before = out.len();
        if cx.fail.any() {
            out.retain(|g| cx.fail.message_ok(cx.l, g.dst as usize, g.src as usize, e));
        }
        self.c.grants_lost += (before - out.len()) as u64;
        p.busy = !out.is_empty() || before > 0;
    }

    fn step_accept(
        &mut self,
        p: &mut Process,
        (now, last_round): (SimTime, bool),
        cx: &Ctx,
        src: &SourceQueues,
        plan: &mut Plan,
    ) {
        let (n, sp) = (cx.l.n, cx.l.s);
        let port_cap = cx.l.sched_slots as u64 * cx.l.sched_payload;
        let mut acc = Vec::new();
        let grants = &p.grants;
        match self.algorithm {
            Algorithm::Negotiator => {
                let kind = self.requests_kind;
                if kind == RequestKind::Binary && cx.relay.on && !p.relay.is_empty() {
                    // Direct traffic first; relay grants only on the ports
                    // left free (App. A.2.2 ③).
                    let relay = &p.relay;
                    let (relay_g, direct_g): (Vec<Grant>, Vec<Grant>) =
                        grants.iter().partition(|g| {
                            relay
                                .binary_search_by(|r| (r.0, r.1).cmp(&(g.src, g.dst)))
                                .is_ok()
                        });
                    accept(
                        &cx.l.net,
                        &direct_g,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                    let m = &p.m;
                    let relay_g: Vec<Grant> = relay_g
                        .into_iter()
                        .filter(|g| {
                            m.src[g.src as usize * sp + g.src_port as usize] == FREE
                                && m.dst[g.dst as usize * sp + g.dst_port as usize] == FREE
                        })
                        .collect();
                    let before = acc.len();
                    accept(
                        &cx.l.net,
                        &relay_g,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                    self.c.relay_accepts += (acc.len() - before) as u64;
                } else if kind == RequestKind::Binary {
                    accept(
                        &cx.l.net,
                        grants,
                        &mut p.m,
                        &mut self.rings,
                        None,
                        &mut self.scratch,
                        &mut acc,
                    );
                } else {
                    for g in grants {
                        let (gs, gd) = (g.src as usize, g.dst as usize);
                        self.pair_weight[gs * n + gd] = self.weight(src, n, gs, gd, now);
                    }
                    let w = &self.pair_weight;
                    let lookup = |s: u32, d: u32| -> u64 { w[s as usize * n + d as usize] };
                    accept(
                        &cx.l.net,
                        grants,
                        &mut p.m,
                        &mut self.rings,
                        Some(&lookup),
                        &mut self.scratch,
                        &mut acc,
                    );
                }
            }
            Algorithm::Projector => {
                for g in grants {
                    let (i, j) = (
                        g.src as usize * sp + g.src_port as usize,
                        g.dst as usize * sp + g.dst_port as usize,
                    );
                    if p.m.src[i] == FREE && p.m.dst[j] == FREE {
                        p.m.src[i] = g.dst;
                        p.m.dst[j] = g.src;
                        acc.push(*g);
                    }
                }
            }
        }
        self.c.accepts += acc.len() as u64;
        if !grants.is_empty() && p.step < 3 {
            self.ratios.push(acc.len() as f32 / grants.len() as f32);
        }
        if self.stateful && !p.reserved.is_empty() {
            // Rejected grants (and grants lost on the way) revert the matrix
            // when the ACCEPT message reaches the destination: per pair, the
            // accepted ports keep up to one port's capacity each of what
            // its grants took, the rest goes back.
            let taken = &mut p.reserved;
            taken.sort_unstable_by_key(|r| (r.0, r.1));
            let mut accepted: Vec<(u32, u32)> = grants
                .iter()
                .filter(|g| p.m.src[g.src as usize * sp + g.src_port as usize] == g.dst)
                .map(|g| (g.dst, g.src))
                .collect();
            accepted.sort_unstable();
            let mut i = 0;
            while i < taken.len() {
                let (d, s) = (taken[i].0, taken[i].1);
                let mut sum = 0u64;
                while i < taken.len() && (taken[i].0, taken[i].1) == (d, s) {
                    sum += taken[i].2;
                    i += 1;
                }
                let lo = accepted.partition_point(|&x| x < (d, s));
                let hi = accepted.partition_point(|&x| x <= (d, s));
                let kept = sum.min((hi - lo) as u64 * port_cap);
                self.demand[d as usize * n + s as usize] += (sum - kept) as i64;
                if kept > 0 {
                    p.kept.push((s, d, kept));
                }
            }
            taken.clear();
        }
        // The destination's promise: granted ports become accepted ports
        // (consumed slot by slot in the data epoch's scheduled phase).
        for d in 0..n {
            self.promised[d] -= p.granted_ports[d] as u64 * port_cap;
        }
        // Taken back once: if the fabric idles through the next GRANT step
        // (nothing to request), this ACCEPT must not take them back again
        // (the promise wrapped below zero and the destination never granted
        // again: a drained run stalled, fuzzer nego_18297).
        p.granted_ports.fill(0);
        for a in &acc {
            self.promised[a.dst as usize] += port_cap;
        }
        if last_round {
            plan.matched.clear();
            for s in 0..n {
                for x in 0..sp {
                    let d = p.m.src[s * sp + x];
                    if d != FREE {
                        let q =
                            cx.l.net
                                .dst_port(s, d as usize, x)
                                .expect("a matched port reaches its destination");
                        plan.matched.push((s as u32, x as u32, d, q as u32));
                    }
                }
            }
            // Runs of one pair, in the order of their lowest port (a relay
            // match carries the data of its final destination, kept in
            // `run_relay`).
            plan.runs.clear();
            plan.run_relay.clear();
            plan.run_kept.clear();
            plan.run_sent.clear();
            let mut i = 0;
            while i < plan.matched.len() {
                let (s, _, _, _) = plan.matched[i];
                let mut j = i;
                while j < plan.matched.len() && plan.matched[j].0 == s {
                    j += 1;
                }
                let first = plan.runs.len();
                for k in i..j {
                    let d = plan.matched[k].2;
                    let target = if cx.relay.on {
                        p.relay
                            .binary_search_by(|r| (r.0, r.1).cmp(&(s, d)))
                            .map_or(FREE, |x| p.relay[x].2)
                    } else {
                        FREE
                    };
                    if let Some(r) = (first..plan.runs.len()).find(|&r| plan.runs[r].1 == d) {
                        plan.runs[r].2 += 1;
                    } else {
                        plan.runs.push((s, d, 1));
                        plan.run_relay.push(target);
                    }
                }
                i = j;
            }
            if self.stateful {
                // Each run's reservation, over the rounds.
                p.kept.sort_unstable();
                for &(s, d, _) in &plan.runs {
                    let lo = p.kept.partition_point(|x| (x.0, x.1) < (s, d));
                    let hi = p.kept.partition_point(|x| (x.0, x.1) <= (s, d));
                    plan.run_kept.push(p.kept[lo..hi].iter().map(|x| x.2).sum());
                    plan.run_sent.push(0);
                }
                // Accepted ports stay matched over the rounds: every
                // reservation has its run.
                p.kept.clear();
            }
            plan.epoch = p.data_epoch;
            if let Some(w) = self.waits.as_mut() {
                for &(s, d, _) in &plan.runs {
                    w.matched(s as usize * n + d as usize, p.start_epoch, p.data_epoch);
                }
            }
        }
        p.grants.clear();
        p.busy = p.busy || !acc.is_empty();
    }
}

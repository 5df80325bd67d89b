//! REACToR: a hybrid ToR that pulls traffic from end hosts onto a fast
//! circuit switch and a slower packet switch (Liu et al., NSDI'14 §3, §5.4).
//!
//! # Model
//! * One REACToR with every endpoint of the topology attached (n =
//!   `racks × servers_per_rack` hosts at R = `topology.host_rate()`, the
//!   paper's 100 Gbps). Each host has a circuit port at R on the OCS side
//!   (reconfiguration `reconfiguration` = δ) and a packet uplink at
//!   `eps_rate` to an electrical packet switch (EPS).
//! * End hosts hold one traffic class per destination (a FIFO of flows).
//!   The REACToR pulls classes with PFC pause/unpause frames (§3.4): a
//!   circuit class starts sending `pfc_on_min..pfc_on_max` after its circuit
//!   is up (the measured 1.2–1.3 µs "on" delay); the pause is sent
//!   `pfc_off_max` before the circuit goes down and the host stops
//!   `pfc_off_min..pfc_off_max` later (the measured 1.0–2.2 µs "off" delay),
//!   so no circuit traffic is in flight during a reconfiguration. Draws are
//!   uniform, from the seeded stream `reactor.pfc`.
//! * Every `period` (W) the circuit scheduler estimates each class's demand
//!   (a demand oracle, as on the prototype, read at the end of the period's
//!   first tick): the bytes that arrived in the class over the last period
//!   (its rate × W), capped by its backlog, or its backlog if nothing
//!   arrived. `reactor` then gives whole classes to the EPS, smallest
//!   estimate first, while each source's and each destination's EPS share
//!   stays within `eps_rate × W` (`sched::solstice::eps_split`; a class
//!   mapped to the EPS takes its whole backlog along); the other classes'
//!   estimates, in circuit time at the circuit rate limit plus the PFC on/off
//!   overhead and rounded up to whole ticks, are scheduled by
//!   `sched::solstice::schedule_compressed` (Σφ + δm ≤ W, configurations of
//!   at least `min_config` including δ, every class with demand keeps a
//!   circuit, the time above the minimum shrunk by one factor when the
//!   demand does not fit). Class constraints of §3.2: a class is on a
//!   circuit or on the EPS for a whole period, never both; classes not on a
//!   circuit this period (including classes that become backlogged after the
//!   schedule was computed) are remapped to the EPS; a circuit class's bytes
//!   the circuits could not carry wait for a later period. There is no
//!   dedicated EPS class: photonet's flows carry no latency-sensitivity tag.
//! * Rate limits (§3.3): circuit traffic to destination j is paced at
//!   `min(circuit_rate, R − EPS share into j / W)` (at least R − eps_rate),
//!   which leaves room for the EPS at j's downlink, where circuit traffic
//!   has priority.
//! * The EPS is a packet network on `net/` (the substrate of the electrical
//!   fabrics, issue 11): a star of host NICs at `eps_rate` → one
//!   output-queued switch with a port per host at `eps_rate` → each host's
//!   REACToR downlink at R (link delay `latency`) → the host. Lossless with
//!   `FlowControl::Pfc` on every ingress link: `eps_buffer` per link, PAUSE
//!   above `pfc_xoff`, RESUME at or below `pfc_xon`, each frame taking
//!   effect `pfc_off_min..pfc_off_max` (pause) or `pfc_on_min..pfc_on_max`
//!   (resume) later, drawn per frame from the seeded stream `net.pfc`
//!   (`Network::set_pfc_jitter`). Packets of 1,500 B of class bytes (no
//!   header: the EPS split and the rate limits count class bytes), the
//!   paced transport (a NIC sends its net flows round-robin, one packet at
//!   a time, at line rate).
//! * Each EPS class (i → j) is one net flow that grows as host i releases
//!   its bytes (`Network::extend_flow`; a new one after a short last packet
//!   has left). Every tick, a host whose NIC is not paused
//!   (`Network::host_paused`) and holds less than a tick's worth plus one
//!   packet (`Network::host_unsent`) releases its EPS classes' bytes one
//!   packet at a time, round-robin; bytes already handed to the NIC finish
//!   on the EPS even if the next period maps their class to a circuit (at
//!   most that backlog per host). The network's deliveries
//!   (`Network::take_deliveries`) are mapped back to photonet flows in the
//!   order their bytes were handed over.
//! * The circuit bytes a tick brings to downlink j occupy that port first
//!   (`Network::occupy_port`, strict priority, non-preemptive): EPS packets
//!   queued there wait for them, and PFC backs the EPS up if they must.
//! * `reactor_circuit`: the pure circuit-switched ToR of §5.4 — no EPS, every
//!   class is scheduled on circuits, rate limit `circuit_rate` (default R).
//!
//! # Time stepping
//! Circuits are fluid in fixed ticks of `tick` (1 µs by default): one
//! internal event per tick for the whole ToR while any byte is at a host or
//! in the EPS, none while idle. In a tick, each circuit carries what its
//! rate limit allows over the overlap of the tick with its sending window;
//! its bytes are delivered at the end of the tick plus `latency`. The EPS
//! network is co-simulated: the fabric's next event is the earlier of the
//! next tick and the network's next event, and the network is run up to a
//! tick (`Network::run_until`) before the tick's circuits, downlink loads
//! and releases are worked out. An arrival at an idle ToR starts a period
//! at once.

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

mod eps;
mod params;
mod stats;
#[cfg(test)]
mod tests;

pub use params::{ReactorModule, ReactorParams};

use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::sched::solstice;
use crate::units::{Rate, SimTime};
use eps::{Eps, EPS_PACKET};
use params::Derived;
use rand::Rng;
use stats::Counters;
use std::collections::VecDeque;

struct FlowSt {
    bytes: u64,
    /// Arrival at the host: no byte leaves before it.
    start: SimTime,
    /// Bytes that left the host (on a circuit or into the EPS).
    left_host: u64,
}

struct Cfg {
    /// Circuit up (after δ) and down.
    up: SimTime,
    end: SimTime,
    /// perm[src] = dst.
    perm: Vec<u32>,
    /// Per source: when its class starts and stops sending.
    on: Vec<SimTime>,
    stop: Vec<SimTime>,
}

/// The REACToR fabric.
pub struct Reactor {
    p: ReactorParams,
    d: Derived,
    rng: SimRng,
    flows: Vec<FlowSt>,
    class: Vec<VecDeque<FlowId>>,
    class_bytes: Vec<u64>,
    /// Bytes that arrived in each class since the last schedule.
    arrived: Vec<u64>,
    /// Per host, its backlogged classes (destinations), and each class's
    /// position there (u32::MAX if absent).
    backlogged: Vec<Vec<u32>>,
    pos: Vec<u32>,
    host_bytes: u64,
    // This period's schedule.
    configs: Vec<Cfg>,
    cur_cfg: usize,
    /// Class carried by circuits this period (never by the EPS).
    circ_class: Vec<bool>,
    circ_list: Vec<usize>,
    /// Circuit rate limit per destination this period.
    lim: Vec<Rate>,
    /// The EPS (`reactor`): a `net::Network`.
    eps: Option<Box<Eps>>,
    // The clock.
    active: bool,
    pending: bool,
    t_last: SimTime,
    period_start: SimTime,
    // Scratch.
    circ_in: Vec<u64>,
    chunks: Vec<(FlowId, u64)>,
    elig: Vec<(u64, u32)>,
    stats: Counters,
    /// Tests: every circuit send (src, dst, from, to) and every
    /// configuration (period start, up, end, perm).
    #[cfg(test)]
    log: Option<TestLog>,
}

#[cfg(test)]
#[derive(Default)]
struct TestLog {
    sends: Vec<(usize, usize, SimTime, SimTime)>,
    configs: Vec<(SimTime, SimTime, SimTime, Vec<u32>)>,
}

impl Reactor {
    fn new(p: ReactorParams, d: Derived, seed: u64) -> Self {
        let n = d.n;
        Reactor {
            rng: RngStreams::new(seed).stream("reactor.pfc"),
            flows: Vec::new(),
            class: (0..n * n).map(|_| VecDeque::new()).collect(),
            class_bytes: vec![0; n * n],
            arrived: vec![0; n * n],
            backlogged: vec![Vec::new(); n],
            pos: vec![u32::MAX; n * n],
            host_bytes: 0,
            configs: Vec::new(),
            cur_cfg: 0,
            circ_class: vec![false; n * n],
            circ_list: Vec::new(),
            lim: vec![d.cap; n],
            eps: d.hybrid.then(|| Box::new(Eps::new(&p, &d, seed))),
            active: false,
            pending: false,
            t_last: SimTime::ZERO,
            period_start: SimTime::ZERO,
            circ_in: vec![0; n],
            chunks: Vec::new(),
            elig: Vec::new(),
            stats: Counters::default(),
            #[cfg(test)]
            log: None,
            p,
            d,
        }
    }

    fn draw(&mut self, lo: SimTime, hi: SimTime) -> SimTime {
        SimTime(self.rng.random_range(lo.0..=hi.0))
    }

    /// Takes up to `max` bytes from class `q` into `self.chunks`.
    fn take(&mut self, q: usize, max: u64) -> u64 {
        self.take_over(q, max, None)
    }

    /// Takes up to `max` bytes from class `q` into `self.chunks`; with
    /// `window = Some((a, b, rate))` the bytes are what a circuit at `rate`
    /// carries over [a, b), so a flow that arrived after `a` sends only from
    /// its arrival on, after the bytes ahead of it (the fluid tick must not
    /// send a flow's bytes before the flow exists).
    fn take_over(&mut self, q: usize, max: u64, window: Option<(SimTime, SimTime, Rate)>) -> u64 {
        self.chunks.clear();
        let mut rem = max;
        while rem > 0 {
            let Some(&f) = self.class[q].front() else {
                break;
            };
            let st = &mut self.flows[f as usize];
            let mut room = rem;
            if let Some((a, b, rate)) = window {
                if st.start > a {
                    let from = st.start.max(a + rate.tx_time(max - rem));
                    room = room.min(rate.bytes_in(b.saturating_sub(from)));
                }
            }
            let b = room.min(st.bytes - st.left_host);
            if b == 0 {
                break;
            }
            st.left_host += b;
            rem -= b;
            self.chunks.push((f, b));
            if st.left_host < st.bytes {
                // The budget or the flow's window is used up.
                break;
            }
            self.class[q].pop_front();
        }
        let took = max - rem;
        self.class_bytes[q] -= took;
        self.host_bytes -= took;
        if self.class_bytes[q] == 0 {
            self.unlist(q);
        }
        took
    }

    fn unlist(&mut self, q: usize) {
        let n = self.d.n;
        let i = q / n;
        let k = self.pos[q];
        if k == u32::MAX {
            return;
        }
        let list = &mut self.backlogged[i];
        list.swap_remove(k as usize);
        if let Some(&moved) = list.get(k as usize) {
            self.pos[i * n + moved as usize] = k;
        }
        self.pos[q] = u32::MAX;
    }

    /// The circuit schedule of the period starting at `start`.
    fn make_schedule(&mut self, start: SimTime) {
        let n = self.d.n;
        let w = self.p.period;
        for &q in &self.circ_list {
            self.circ_class[q] = false;
        }
        self.circ_list.clear();
        self.configs.clear();
        self.cur_cfg = 0;
        self.stats.periods += 1;
        // Demand estimate per class: the bytes that arrived in it over the
        // last period (its rate × W), capped by its backlog; its backlog if
        // nothing arrived. The EPS mapping uses it; a class mapped to the
        // EPS takes its whole backlog along.
        let demand: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let q = i * n + j;
                        let b = self.class_bytes[q];
                        let v = match self.arrived[q] {
                            0 => b,
                            a => a.min(b),
                        };
                        v as f64
                    })
                    .collect()
            })
            .collect();
        let share = if self.d.hybrid {
            let budget = self.p.eps_rate.bytes_in(w) as f64;
            solstice::eps_split(&demand, &vec![budget; n], &vec![budget; n])
        } else {
            vec![vec![0.0; n]; n]
        };
        self.arrived.iter_mut().for_each(|a| *a = 0);
        let r = self.d.r.0;
        for j in 0..n {
            let into: f64 = (0..n).map(|i| share[i][j]).sum();
            let eps_bps = ((into * 8.0 / w.as_secs_f64()).round() as u64).min(self.p.eps_rate.0);
            self.lim[j] = Rate(self.d.cap.0.min(r.saturating_sub(eps_bps)).max(1));
        }
        let ovh = (self.p.pfc_on_max + self.p.pfc_off_max).0 as f64;
        let tick = self.p.tick.0 as f64;
        let mut any = false;
        let time: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let b = demand[i][j] - share[i][j];
                        if b > 0.0 {
                            any = true;
                            // In whole ticks: pairs with nearly equal demand
                            // get equal entries, so slicing does not leave
                            // slivers that cost a minimum configuration each.
                            let t = self.lim[j].tx_time(b as u64).0 as f64 + ovh;
                            (t / tick).ceil() * tick
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        if !any {
            return;
        }
        let delta = self.p.reconfiguration;
        let s = solstice::schedule_compressed(
            &time,
            w.0 as f64,
            delta.0 as f64,
            self.p.min_config.0 as f64,
        )
        .expect("parameters validated at build");
        let mut t = start;
        let end_of_period = start + w;
        for c in &s.configs {
            let up = t + delta;
            let end = (up + SimTime(c.duration.floor() as u64)).min(end_of_period);
            if end <= up {
                break;
            }
            let perm: Vec<u32> = c.perm.iter().map(|&j| j as u32).collect();
            let mut on = Vec::with_capacity(n);
            let mut stop = Vec::with_capacity(n);
            for i in 0..n {
                let j = perm[i] as usize;
                let q = i * n + j;
                if i != j && share[i][j] == 0.0 && !self.circ_class[q] {
                    self.circ_class[q] = true;
                    self.circ_list.push(q);
                }
                let a = up + self.draw(self.p.pfc_on_min, self.p.pfc_on_max);
                let b =
                    end - self.p.pfc_off_max + self.draw(self.p.pfc_off_min, self.p.pfc_off_max);
                on.push(a);
                stop.push(b);
            }
            self.stats.circuit_time_ps += (end - up).0 as u128;
            #[cfg(test)]
            if let Some(l) = &mut self.log {
                l.configs.push((start, up, end, perm.clone()));
            }
            self.configs.push(Cfg {
                up,
                end,
                perm,
                on,
                stop,
            });
            t = end;
        }
        self.stats.configs_total += self.configs.len() as u64;
    }

    /// One tick: [t_last, t2).
    fn tick(&mut self, t2: SimTime, rec: &mut Recorder) {
        let n = self.d.n;
        let t1 = self.t_last;
        if self.pending {
            self.pending = false;
            self.make_schedule(self.period_start);
        }
        self.stats.ticks += 1;
        let at = t2 + self.p.latency;
        self.circ_in.iter_mut().for_each(|v| *v = 0);
        // Circuits.
        while self.cur_cfg < self.configs.len() && self.configs[self.cur_cfg].end <= t1 {
            self.cur_cfg += 1;
        }
        let mut k = self.cur_cfg;
        while k < self.configs.len() && self.configs[k].up < t2 {
            for i in 0..n {
                let c = &self.configs[k];
                let j = c.perm[i] as usize;
                let q = i * n + j;
                if !self.circ_class[q] || self.class_bytes[q] == 0 {
                    continue;
                }
                let a = c.on[i].max(t1);
                let b = c.stop[i].min(t2);
                if b <= a {
                    continue;
                }
                if a < c.up || b > c.end {
                    self.stats.night_bytes += 1;
                }
                let budget = self.lim[j].bytes_in(b - a);
                let took = self.take_over(q, budget, Some((a, b, self.lim[j])));
                #[cfg(test)]
                if let Some(l) = &mut self.log {
                    if took > 0 {
                        l.sends.push((i, j, a, b));
                    }
                }
                self.circ_in[j] += took;
                self.stats.circuit_bytes += took;
                for ci in 0..self.chunks.len() {
                    let (f, b) = self.chunks[ci];
                    rec.deliver_and_complete(f, at, b, at);
                }
            }
            k += 1;
        }
        if !self.d.hybrid {
            return;
        }
        // The circuit bytes of this tick reach their downlinks first; the
        // EPS packets queued there wait for them.
        let mut eps = self.eps.take().expect("hybrid");
        for j in 0..n {
            if self.circ_in[j] > 0 {
                eps.occupy_downlink(t2, j, self.circ_in[j]);
            }
        }
        self.eps_release(t2, &mut eps);
        self.eps = Some(eps);
    }

    /// Hosts hand their EPS classes' bytes to their NICs: while a NIC is
    /// not paused by PFC and holds less than a tick's worth plus a packet,
    /// one packet at a time from its classes not on a circuit this period,
    /// round-robin (the NIC serves the classes' net flows round-robin too).
    fn eps_release(&mut self, now: SimTime, eps: &mut Eps) {
        let n = self.d.n;
        let target = self.p.eps_rate.bytes_in(self.p.tick) + EPS_PACKET;
        for i in 0..n {
            if self.backlogged[i].is_empty() || eps.host_paused(i) {
                continue;
            }
            let mut unsent = eps.host_unsent(i);
            if unsent >= target {
                continue;
            }
            self.elig.clear();
            for &j in &self.backlogged[i] {
                if !self.circ_class[i * n + j as usize] {
                    self.elig.push((0, j));
                }
            }
            let m = self.elig.len();
            if m == 0 {
                continue;
            }
            // By destination: the order does not depend on the list's.
            self.elig.sort_unstable_by_key(|e| e.1);
            let start = eps.rr(i) % m;
            let (mut k, mut dry) = (0, 0);
            while unsent < target && dry < m {
                let j = self.elig[(start + k) % m].1 as usize;
                k += 1;
                let q = i * n + j;
                if self.class_bytes[q] == 0 {
                    dry += 1;
                    continue;
                }
                dry = 0;
                unsent += self.take(q, EPS_PACKET);
                eps.hand(now, i, j, q, &self.chunks);
            }
            eps.set_rr(i, (start + k) % m);
        }
    }

    /// Runs the EPS network up to `now` and delivers what reached hosts,
    /// mapped back to photonet flows in the order they were handed over.
    fn eps_run(&mut self, now: SimTime, rec: &mut Recorder) {
        let Some(e) = &mut self.eps else {
            return;
        };
        rec.count_internal_events(e.run(now));
        for &(f, t, b) in e.deliveries() {
            self.stats.eps_delivered += b;
            rec.deliver_and_complete(f, t, b, t);
        }
    }

    fn in_net(&self) -> u64 {
        self.eps.as_ref().map_or(0, |e| e.in_net())
    }
}

impl Fabric for Reactor {
    fn name(&self) -> String {
        if self.d.hybrid {
            format!("REACToR ({} Gbps EPS)", self.p.eps_rate.as_f64() / 1e9)
        } else {
            "Circuit ToR".into()
        }
    }
    fn hosts(&self) -> usize {
        self.d.n
    }
    fn host_rate(&self) -> Rate {
        self.d.r
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        let n = self.d.n;
        self.flows.push(FlowSt {
            bytes: flow.bytes,
            start: now,
            left_host: 0,
        });
        if flow.bytes == 0 {
            return;
        }
        let q = flow.src as usize * n + flow.dst as usize;
        self.class[q].push_back(flow.id);
        self.class_bytes[q] += flow.bytes;
        self.arrived[q] += flow.bytes;
        self.host_bytes += flow.bytes;
        if self.pos[q] == u32::MAX {
            let i = flow.src as usize;
            self.pos[q] = self.backlogged[i].len() as u32;
            self.backlogged[i].push(flow.dst);
        }
        if !self.active {
            self.active = true;
            self.pending = true;
            self.t_last = now;
            self.period_start = now;
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        let tick = self.active.then(|| self.t_last + self.p.tick);
        match (tick, self.eps.as_ref().and_then(|e| e.next_event())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.eps_run(now, rec);
        if !self.active || now != self.t_last + self.p.tick {
            return;
        }
        rec.count_internal_events(1);
        self.tick(now, rec);
        self.t_last = now;
        if self.host_bytes == 0 && self.in_net() == 0 {
            self.active = false;
            return;
        }
        if now >= self.period_start + self.p.period {
            self.period_start = now;
            self.pending = true;
        }
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        self.stats
            .map(self.d.r, self.d.n, self.eps.as_ref().map(|e| e.net_stats()))
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.stats.night_bytes != 0 {
            return Err(format!(
                "reactor: a circuit carried traffic outside its window {} times",
                self.stats.night_bytes
            ));
        }
        if let Some(e) = &self.eps {
            if e.drops() != 0 {
                return Err(format!(
                    "reactor: the EPS dropped {} packets despite PFC",
                    e.drops()
                ));
            }
            e.check_invariants()
                .map_err(|m| format!("reactor EPS: {m}"))?;
        }
        let n = self.d.n;
        let mut host = 0u64;
        for q in 0..n * n {
            let mut b = 0u64;
            for &f in &self.class[q] {
                let st = &self.flows[f as usize];
                if st.left_host >= st.bytes {
                    return Err(format!("reactor: flow {f} sent but still queued"));
                }
                b += st.bytes - st.left_host;
            }
            if b != self.class_bytes[q] {
                return Err(format!(
                    "reactor: class {q} holds {b} B, counter says {}",
                    self.class_bytes[q]
                ));
            }
            if (b > 0) != (self.pos[q] != u32::MAX) {
                return Err(format!("reactor: class {q} backlog list out of step"));
            }
            host += b;
        }
        if host != self.host_bytes {
            return Err("reactor: host byte counter out of step".into());
        }
        for (k, c) in self.configs.iter().enumerate() {
            let mut used = vec![false; n];
            for &j in &c.perm {
                if std::mem::replace(&mut used[j as usize], true) {
                    return Err(format!("reactor: configuration {k} is not a permutation"));
                }
            }
            if k > 0 && c.up < self.configs[k - 1].end + self.p.reconfiguration {
                return Err(format!("reactor: configuration {k} skips its night"));
            }
        }
        Ok(())
    }
}

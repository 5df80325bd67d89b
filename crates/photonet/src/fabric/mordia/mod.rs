//! Mordia: a microsecond optical circuit switch (OCS) scheduled by Traffic
//! Matrix Scheduling (Porter et al., SIGCOMM'13 §2.2–4, §6).
//!
//! # Model
//! * One OCS port per rack (N = `topology.racks` ports) at the rack's uplink
//!   rate R_link = `uplinks × uplink_rate`. The OCS does not buffer: time is a
//!   sequence of *days* (a circuit configuration held stable) separated by
//!   *nights* of `night` (reconfiguration, 11.5 µs measured, §6.1) during which
//!   no port carries anything.
//! * Each host's NIC hands its flows to its ToR one after another at the host
//!   rate R (`topology.host_rate()`), in arrival order (a FIFO NIC, so a host
//!   never injects faster than R); with `host_nic = "per_flow"` every flow
//!   reaches the ToR at R from its start (traffic generated at the ToR, as by
//!   the prototype's emulated ToRs). A byte is at the ToR once it has crossed
//!   the NIC.
//! * Each ToR keeps a VOQ per destination rack (a FIFO of flows) that drains
//!   only while the circuit to that rack is up, in packets of at most
//!   `packet` bytes at R_link, starting `nic_delay` after the day begins (the
//!   prototype's NIC delay, 23.5 µs, §6.2; 0 for an ideal ToR). A packet that
//!   would not finish before the night is held for a later day
//!   (`straddle = "hold"`), or sent, cut by the night and counted lost
//!   (`straddle = "lose"`, as on the prototype; its bytes stay queued).
//!   A packet reaches its destination `latency` after its last bit left.
//! * Intra-rack flows do not touch the OCS (they complete at the host rate
//!   plus `latency`) unless `loopback = true`, in which case they queue in the
//!   ToR's own VOQ and use the loopback circuit, as in the paper's example
//!   schedule (Fig. 2(d)) where the TDM includes the diagonal.
//!
//! # Schedules (variants)
//! * `mordia_rr`: the all-to-all TMS schedule of §3.2 — a week of N−1 equal
//!   days of `day` (N with `loopback`, the identity day first), rack i
//!   connected to rack (i + d + 1) mod N on day d (i + d with loopback).
//! * `mordia`: TMS proper. At the start of every week of `week`, the demand
//!   matrix (bytes queued per rack pair; `demand = "oracle"` reads it at that
//!   instant, `"measured"` uses the VOQ occupancies sampled `control_delay`
//!   weeks earlier) is Sinkhorn-scaled to a doubly stochastic BAM
//!   (`sched::tms::sinkhorn`; idle pairs get a 1e-6 share so that every row
//!   and column can be scaled), decomposed by Birkhoff–von Neumann
//!   (`sched::tms::bvn`), and the days (longest first) get
//!   `weight × (week − days × night)`. Days shorter than `min_day` are dropped
//!   (longest-time-slot-first truncation), and the kept days are stretched to
//!   fill the week; `max_days` > 0 keeps at most that many (the n longest
//!   slots of Table 2). Traffic of pairs left out waits: its demand grows relative
//!   to the served pairs' until it is scheduled — or, with `packet_rate` >
//!   0, it is carried meanwhile by an electrical packet switch, the hybrid
//!   of §3.3. The packet switch also takes, from each pair a kept day
//!   connects, the share of the pair's demand that the dropped days held in
//!   its BAM entry ((BAM − Σ kept weights·P) / BAM, Table 2's "Packet"), at
//!   most that many bytes per week.
//! * The packet switch is a `net::Network` (the substrate of the packet
//!   fabrics, issue 11, as REACToR's EPS): a star of each rack's uplink at
//!   `packet_rate` into one output-queued switch whose port per rack, at
//!   `packet_rate`, reaches it `latency` after a packet's last bit; 1,500 B
//!   packets of flow bytes (no header), paced transport, one net flow per
//!   rack pair that grows as the ToR hands it bytes (`net::ClassFlows`),
//!   buffers large enough that nothing is dropped. The ToR hands it bytes
//!   at the start of every day and whenever a flow's last byte reaches the
//!   ToR: per rack, `packet_rate` × (time to the end of the day's night)
//!   less what its NIC has not sent yet, shared equally by its eligible
//!   backlogged pairs (within their budget), at most that much per
//!   destination; bytes handed over leave the VOQ (circuits never carry
//!   them). A flow completes with its last byte, by either path.
//!
//! # Time stepping
//! One internal event per day boundary while any VOQ holds traffic (plus one
//! event per intra-rack flow): at the end of a day's night, the day's
//! transmissions are worked out packet by packet in a tight loop over ports
//! (packets need no heap events) and delivered — all of them happened at or
//! before that instant because `latency ≤ night`. The packet switch adds
//! its network's events (a packet per hop) and one event per inter-rack
//! flow (its last byte at the ToR). Idle time is skipped: when
//! traffic arrives at an idle fabric the clock jumps to the day that contains
//! the arrival (the schedule is anchored at t = 0).

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

mod params;
mod stats;
#[cfg(test)]
mod tests;

pub use params::{Demand, HostNic, MordiaModule, MordiaParams, Straddle};

use crate::fabric::registry::BuildContext;
use crate::fabric::star::PacketStar;
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::net::{ClassFlows, PfcConfig, StarRouter};
use crate::queue::EventQueue;
use crate::recorder::Recorder;
use crate::sched::tms;
use crate::units::{Rate, SimTime};
use stats::Counters;
use std::collections::VecDeque;

/// Payload bytes of a packet-switch packet (no header: the switch carries
/// `packet_rate` of flow bytes).
const PS_PACKET: u32 = 1_500;

/// The packet switch: a star of the n racks' uplinks at `packet_rate`
/// into one switch whose port per rack, at `packet_rate`, reaches the rack
/// `latency` after a packet's last bit; buffers large enough that the
/// per-day release never overflows them (lossless; PFC never pauses, but
/// paced sending needs queued ports).
fn packet_switch(p: &MordiaParams, n: usize, seed: u64) -> ClassFlows<StarRouter> {
    PacketStar {
        n: n as u32,
        uplink: p.packet_rate,
        port: p.packet_rate,
        downlink: None,
        latency: p.latency,
        tiers: &["ps_up", "ps_port"],
        payload: PS_PACKET,
        buffer: 1 << 50,
        pfc: PfcConfig {
            xoff: 1 << 49,
            xon: 1 << 48,
            pause_delay: SimTime::ZERO,
            resume_delay: SimTime::ZERO,
        },
        seed,
    }
    .build()
}

struct FlowSt {
    src_rack: u32,
    dst_rack: u32,
    bytes: u64,
    /// Bytes sent on a circuit or handed to the packet switch.
    sent: u64,
    /// When its last delivered byte so far arrived.
    last: SimTime,
    /// When the flow's first byte starts crossing the host NIC.
    nic_start: SimTime,
}

/// Tests: days (start, end of stable part, perm) and circuit packets
/// (src rack, dst rack, first bit, last bit).
#[cfg(test)]
type TestLog = (
    Vec<(SimTime, SimTime, Vec<u32>)>,
    Vec<(usize, usize, SimTime, SimTime)>,
);

struct Day {
    len: SimTime,
    /// perm[src rack] = dst rack, or u32::MAX for no circuit.
    perm: Vec<u32>,
}

/// The Mordia fabric.
pub struct Mordia {
    tms: bool,
    n: usize,
    week_len: SimTime,
    host_rate: Rate,
    link: Rate,
    hosts: usize,
    servers: u32,
    p: MordiaParams,
    flows: Vec<FlowSt>,
    nic_free: Vec<SimTime>,
    voq: Vec<VecDeque<FlowId>>,
    /// Flows waiting in VOQs.
    queued_flows: u64,
    /// Bytes in VOQs not yet sent (including bytes still crossing host NICs).
    queued_bytes: u64,
    intra: EventQueue<FlowId>,
    // The clock.
    active: bool,
    week: Vec<Day>,
    week_start: SimTime,
    day_idx: usize,
    day_start: SimTime,
    /// Global index of the current day since t = 0 (round-robin only; TMS
    /// counts days as they run).
    global_day: u64,
    measured: VecDeque<Vec<f64>>,
    stats: Counters,
    /// Pairs some day of the current week connects (n × n).
    covered: Vec<bool>,
    /// Bytes per pair the packet switch may take this week from pairs some
    /// kept day connects: their demand times the share of their BAM entry
    /// that the dropped days held (n × n; §3.3).
    packet_budget: Vec<u64>,
    /// The packet switch (`packet_rate` > 0): a `net::Network` star.
    ps: Option<Box<ClassFlows<StarRouter>>>,
    ps_out: Vec<(FlowId, SimTime, u64)>,
    /// When an inter-rack flow's last byte reaches its ToR: the packet
    /// switch may take it then, not only at the next day boundary.
    ps_wake: EventQueue<FlowId>,
    chunks: Vec<(FlowId, u64)>,
    /// Tests: every day (start, end of its stable part, perm) and every
    /// circuit packet (src rack, dst rack, first bit, last bit).
    #[cfg(test)]
    log: Option<TestLog>,
}

impl Mordia {
    fn new(p: &MordiaParams, tms: bool, ctx: &BuildContext) -> Mordia {
        let t = ctx.topology;
        let n = t.racks as usize;
        let mut m = Mordia {
            tms,
            n,
            week_len: p.week_len(n as u64),
            host_rate: t.host_rate(),
            link: t.rack_uplink_rate(),
            hosts: t.hosts(),
            servers: t.servers_per_rack,
            p: p.clone(),
            flows: Vec::new(),
            nic_free: vec![SimTime::ZERO; t.hosts()],
            voq: vec![VecDeque::new(); n * n],
            queued_flows: 0,
            queued_bytes: 0,
            intra: EventQueue::new(),
            active: false,
            week: Vec::new(),
            week_start: SimTime::ZERO,
            day_idx: 0,
            day_start: SimTime::ZERO,
            global_day: 0,
            measured: VecDeque::new(),
            stats: Counters::default(),
            covered: vec![true; n * n],
            packet_budget: vec![0; n * n],
            ps: (tms && p.packet_rate.0 > 0).then(|| Box::new(packet_switch(p, n, ctx.seed))),
            ps_out: Vec::new(),
            ps_wake: EventQueue::new(),
            chunks: Vec::new(),
            #[cfg(test)]
            log: None,
        };
        if !tms {
            m.week = m.round_robin_week();
        }
        m
    }

    fn round_robin_week(&self) -> Vec<Day> {
        let n = self.n;
        let off = if self.p.loopback { 0 } else { 1 };
        (0..n - off)
            .map(|d| Day {
                len: self.p.days.get(d).copied().unwrap_or(self.p.day),
                perm: (0..n).map(|i| ((i + d + off) % n) as u32).collect(),
            })
            .collect()
    }

    fn slot(&self) -> SimTime {
        self.p.day + self.p.night
    }

    /// Bytes of flow `f` at its ToR by time `t`.
    fn at_tor(&self, f: &FlowSt, t: SimTime) -> u64 {
        if t <= f.nic_start {
            return 0;
        }
        self.host_rate.bytes_in(t - f.nic_start).min(f.bytes)
    }

    /// Bytes queued per rack pair at `t` (at the ToR, not yet sent).
    fn demand_matrix(&self, t: SimTime) -> Vec<f64> {
        let n = self.n;
        let mut d = vec![0.0; n * n];
        for (q, list) in self.voq.iter().enumerate() {
            for &f in list {
                let st = &self.flows[f as usize];
                d[q] += (self.at_tor(st, t).max(st.sent) - st.sent) as f64;
            }
        }
        d
    }

    /// The TMS week starting at `start`.
    fn tms_week(&mut self, start: SimTime) -> Vec<Day> {
        let n = self.n;
        let now_demand = self.demand_matrix(start);
        let d = match self.p.demand {
            Demand::Oracle => now_demand,
            Demand::Measured => {
                self.measured.push_back(now_demand);
                if self.measured.len() > self.p.control_delay as usize {
                    self.measured.pop_front().unwrap()
                } else {
                    vec![0.0; n * n]
                }
            }
        };
        self.stats.weeks_scheduled += 1;
        let max = d.iter().cloned().fold(0.0, f64::max).max(1.0);
        let m: tms::Matrix = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            0.0
                        } else {
                            d[i * n + j] + 1e-3 * max
                        }
                    })
                    .collect()
            })
            .collect();
        // The 1e-3 fill gives every matrix total support, so Sinkhorn
        // converges quickly; if it does not, the week is the round-robin one
        // (traffic is never left without a schedule).
        // Slots shorter than min_day are dropped anyway: stop decomposing
        // once less than that is left.
        let stop = self.p.min_day.0 as f64 / self.week_len.0 as f64;
        let scaled = tms::sinkhorn(&m, 1e-9, 20_000).ok();
        let terms = match scaled
            .as_ref()
            .ok_or_else(String::new)
            .and_then(|s| tms::bvn_until(&s.bam, 1e-8, stop))
        {
            Ok(t) if !t.is_empty() => t,
            _ => {
                self.stats.fallback_weeks += 1;
                (1..n)
                    .map(|d| tms::Term {
                        weight: 1.0 / (n - 1) as f64,
                        perm: (0..n).map(|i| (i + d) % n).collect(),
                    })
                    .collect()
            }
        };
        // Longest first; drop days below min_day, then stretch the rest.
        let mut kept: Vec<&tms::Term> = Vec::new();
        for k in 1..=terms.len() {
            let avail = self.week_len.0 as f64 - k as f64 * self.p.night.0 as f64;
            let total: f64 = terms[..k].iter().map(|t| t.weight).sum();
            let shortest = terms[k - 1].weight / total * avail;
            let too_many = self.p.max_days > 0 && k > self.p.max_days as usize;
            if too_many || avail <= 0.0 || shortest < self.p.min_day.0 as f64 {
                break;
            }
            kept = terms[..k].iter().collect();
        }
        self.stats.days_dropped += (terms.len() - kept.len()) as u64;
        if kept.is_empty() {
            // Every day would be shorter than min_day: the round-robin week.
            self.stats.fallback_weeks += 1;
            self.covered.iter_mut().for_each(|c| *c = true);
            self.packet_budget.iter_mut().for_each(|b| *b = 0);
            let len = SimTime(self.week_len.0 / (n as u64 - 1) - self.p.night.0);
            return (1..n)
                .map(|d| Day {
                    len,
                    perm: (0..n).map(|i| ((i + d) % n) as u32).collect(),
                })
                .collect();
        }
        let avail = self.week_len.0 - kept.len() as u64 * self.p.night.0;
        let total: f64 = kept.iter().map(|t| t.weight).sum();
        let mut days: Vec<Day> = kept
            .iter()
            .map(|t| Day {
                len: SimTime((t.weight / total * avail as f64).floor() as u64),
                perm: t.perm.iter().map(|&j| j as u32).collect(),
            })
            .collect();
        // Rounding remainder to the first day: the week is exact.
        let used: u64 = days.iter().map(|d| d.len.0).sum();
        days[0].len = SimTime(days[0].len.0 + avail - used);
        self.cover(&days);
        // The packet switch's share of each connected pair: the part of
        // its BAM entry the kept days do not hold, of its demand.
        self.packet_budget.iter_mut().for_each(|b| *b = 0);
        if let (Some(sc), true) = (&scaled, self.p.packet_rate.0 > 0) {
            let mut circ = vec![0.0; n * n];
            for t in &kept {
                for (i, &j) in t.perm.iter().enumerate() {
                    if j < n {
                        circ[i * n + j] += t.weight;
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    let b = sc.bam[i][j];
                    if i != j && b > 0.0 && self.covered[i * n + j] {
                        let frac = ((b - circ[i * n + j]) / b).clamp(0.0, 1.0);
                        self.packet_budget[i * n + j] = (frac * d[i * n + j]).round() as u64;
                    }
                }
            }
        }
        days
    }

    /// Marks the pairs `days` connect.
    fn cover(&mut self, days: &[Day]) {
        let n = self.n;
        self.covered.iter_mut().for_each(|c| *c = false);
        for d in days {
            for (i, &j) in d.perm.iter().enumerate() {
                if j != u32::MAX {
                    self.covered[i * n + j as usize] = true;
                }
            }
        }
    }

    /// Hands the packet switch, at the start of a day or when a flow's last
    /// byte reaches its ToR (`now`), the bytes it is to carry until the
    /// day's night ends: each rack's uplink gets `packet_rate × (that
    /// time)` less what its NIC has not sent yet,
    /// shared equally by its backlogged pairs the week's days leave out or
    /// that have packet budget left (at most that budget), each
    /// destination at most `packet_rate × (that time)` (sources in index
    /// order); only bytes already at the ToR.
    fn release_packet(&mut self, now: SimTime) {
        let Some(mut ps) = self.ps.take() else {
            return;
        };
        let n = self.n;
        let cap = self.p.packet_rate.bytes_in(self.next_boundary() - now);
        let mut down = vec![cap; n];
        for i in 0..n {
            let mut up = cap.saturating_sub(ps.host_unsent(i as u32));
            let pairs: Vec<usize> = (0..n)
                .filter(|&j| {
                    let q = i * n + j;
                    j != i
                        && (!self.covered[q] || self.packet_budget[q] > 0)
                        && !self.voq[q].is_empty()
                })
                .collect();
            let mut left = pairs.len() as u64;
            for j in pairs {
                let q = i * n + j;
                let mut give = (up / left).min(down[j]);
                if self.covered[q] {
                    give = give.min(self.packet_budget[q]);
                }
                left -= 1;
                self.chunks.clear();
                let mut took = 0;
                while give > 0 {
                    let Some(&f) = self.voq[q].front() else { break };
                    let st = &self.flows[f as usize];
                    let b = self.at_tor(st, now).saturating_sub(st.sent).min(give);
                    if b == 0 {
                        break;
                    }
                    let st = &mut self.flows[f as usize];
                    st.sent += b;
                    give -= b;
                    took += b;
                    self.queued_bytes -= b;
                    self.chunks.push((f, b));
                    if st.sent == st.bytes {
                        self.voq[q].pop_front();
                        self.queued_flows -= 1;
                    }
                }
                if took == 0 {
                    continue;
                }
                ps.hand(now, i as u32, j as u32, q, &self.chunks);
                up -= took;
                down[j] -= took;
                if self.covered[q] {
                    self.packet_budget[q] -= took;
                }
            }
        }
        self.ps = Some(ps);
    }

    /// Runs the packet switch up to `now` and delivers what reached racks.
    fn run_packet(&mut self, now: SimTime, rec: &mut Recorder) {
        let Some(ps) = &mut self.ps else {
            return;
        };
        let mut out = std::mem::take(&mut self.ps_out);
        rec.count_internal_events(ps.run(now, &mut out));
        for &(f, t, b) in &out {
            self.stats.packet_bytes += b;
            self.deliver(f, t, b, rec);
        }
        self.ps_out = out;
    }

    /// `b` bytes of flow `f` arrive at `t`; the flow completes with its
    /// last byte (circuit and packet-switch bytes arrive out of order).
    fn deliver(&mut self, f: FlowId, t: SimTime, b: u64, rec: &mut Recorder) {
        let st = &mut self.flows[f as usize];
        st.last = st.last.max(t);
        rec.deliver_and_complete(f, t, b, st.last);
    }

    /// Starts the clock at the day that contains `now` (or the next one).
    fn activate(&mut self, now: SimTime) {
        self.active = true;
        if self.tms {
            // A week starts on the week grid, but never before the night of
            // the last day that ran has ended (`day_start` was left there when
            // the switch went idle; 0 before any day): the new week's days
            // need not line up with the old one's.
            let w = self.week_len;
            let k = now.0 / w.0;
            self.week_start = SimTime(k * w.0).max(self.day_start);
            self.week = self.tms_week(now);
            let mut s = self.week_start;
            self.day_idx = 0;
            while self.day_idx + 1 < self.week.len()
                && s + self.week[self.day_idx].len + self.p.night <= now
            {
                s = s + self.week[self.day_idx].len + self.p.night;
                self.day_idx += 1;
            }
            self.day_start = s;
        } else if !self.p.days.is_empty() {
            // Variable-length days: find `now` in its week.
            let w: u64 = self.week.iter().map(|d| (d.len + self.p.night).0).sum();
            let k = now.0 / w;
            let mut s = SimTime(k * w);
            self.day_idx = 0;
            while s + self.week[self.day_idx].len + self.p.night <= now {
                s = s + self.week[self.day_idx].len + self.p.night;
                self.day_idx += 1;
            }
            self.global_day = k * self.week.len() as u64 + self.day_idx as u64;
            self.day_start = s;
        } else {
            let slot = self.slot();
            let g = now.0 / slot.0;
            self.global_day = g;
            self.day_idx = (g % self.week.len() as u64) as usize;
            self.day_start = SimTime(g * slot.0);
        }
    }

    fn next_boundary(&self) -> SimTime {
        self.day_start + self.week[self.day_idx].len + self.p.night
    }

    /// Works out the transmissions of the current day.
    fn run_day(&mut self, rec: &mut Recorder) {
        let len = self.week[self.day_idx].len;
        let s = self.day_start;
        let e = s + len;
        #[cfg(test)]
        if let Some(l) = &mut self.log {
            l.0.push((s, e, self.week[self.day_idx].perm.clone()));
        }
        self.stats.days_run += 1;
        self.stats.stable_time += len.0 as u128;
        self.stats.night_time += self.p.night.0 as u128;
        let per_pkt_max = self.p.packet.0;
        for i in 0..self.n {
            let j = self.week[self.day_idx].perm[i];
            if j == u32::MAX {
                continue;
            }
            let q = i * self.n + j as usize;
            let mut t = s + self.p.nic_delay;
            while let Some(&f) = self.voq[q].front() {
                let st = &self.flows[f as usize];
                let pkt = per_pkt_max.min(st.bytes - st.sent);
                let ready = st.nic_start + self.host_rate.tx_time(st.sent + pkt);
                let start = t.max(ready);
                if start >= e {
                    break;
                }
                let end = start + self.link.tx_time(pkt);
                if end > e {
                    // Would straddle the night: held for a later day, or
                    // sent and cut by the night (its bytes stay queued).
                    match self.p.straddle {
                        Straddle::Hold => self.stats.held += 1,
                        Straddle::Lose => {
                            self.stats.lost += 1;
                            self.stats.lost_bytes += self.link.bytes_in(e - start);
                        }
                    }
                    break;
                }
                if end > e || start < s {
                    self.stats.sent_in_night += 1;
                }
                let st = &mut self.flows[f as usize];
                st.sent += pkt;
                self.queued_bytes -= pkt;
                self.stats.circuit_bytes += pkt;
                self.stats.packets += 1;
                let done = st.sent == st.bytes;
                self.deliver(f, end + self.p.latency, pkt, rec);
                #[cfg(test)]
                if let Some(l) = &mut self.log {
                    l.1.push((i, j as usize, start, end));
                }
                t = end;
                if done {
                    self.voq[q].pop_front();
                    self.queued_flows -= 1;
                }
            }
        }
    }

    fn probe_sample(&mut self, now: SimTime, global_day: u64) {
        if global_day == self.p.probe_day as u64 && self.stats.probe.is_none() {
            let r = self.p.probe_rack as usize;
            if r < self.n {
                let d = self.demand_matrix(now);
                self.stats.probe = Some(d[r * self.n..(r + 1) * self.n].iter().sum::<f64>() as u64);
            }
        }
    }
}

impl Fabric for Mordia {
    fn name(&self) -> String {
        if self.tms {
            "Mordia (TMS)"
        } else {
            "Mordia (round-robin)"
        }
        .into()
    }
    fn hosts(&self) -> usize {
        self.hosts
    }
    fn host_rate(&self) -> Rate {
        self.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        let sr = flow.src / self.servers;
        let dr = flow.dst / self.servers;
        let h = flow.src as usize;
        let nic_start = match self.p.host_nic {
            HostNic::Fifo => self.nic_free[h].max(now),
            HostNic::PerFlow => now,
        };
        let nic_done = nic_start + self.host_rate.tx_time(flow.bytes);
        if self.p.host_nic == HostNic::Fifo {
            self.nic_free[h] = nic_done;
        }
        self.flows.push(FlowSt {
            src_rack: sr,
            dst_rack: dr,
            bytes: flow.bytes,
            sent: 0,
            last: SimTime::ZERO,
            nic_start,
        });
        if sr == dr && (self.tms || !self.p.loopback) {
            self.intra.push(nic_done + self.p.latency, flow.id);
            return;
        }
        self.voq[sr as usize * self.n + dr as usize].push_back(flow.id);
        if self.ps.is_some() {
            self.ps_wake.push(nic_done, flow.id);
        }
        self.queued_flows += 1;
        self.queued_bytes += flow.bytes;
        self.stats.peak_voq_bytes = self.stats.peak_voq_bytes.max(self.queued_bytes);
        if !self.active {
            self.activate(now);
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        let b = self.active.then(|| self.next_boundary());
        let ps = self.ps.as_ref().and_then(|p| p.next_event());
        let wake = self.ps_wake.peek_time();
        [b, self.intra.peek_time(), ps, wake]
            .into_iter()
            .flatten()
            .min()
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        while let Some((t, f)) = self.intra.pop_due(now) {
            let b = self.flows[f as usize].bytes;
            self.flows[f as usize].sent = b;
            // Its bytes left the NIC at R from nic_start: spread over the
            // same span, `latency` later (a point would put a whole flow in
            // one time-series bin).
            let from = self.flows[f as usize].nic_start + self.p.latency;
            rec.deliver_span(f, from.min(t), t, b);
            rec.complete(f, t);
            rec.count_internal_events(1);
        }
        self.run_packet(now, rec);
        let mut wake = false;
        while self.ps_wake.pop_due(now).is_some() {
            wake = true;
        }
        if !self.active || self.next_boundary() != now {
            if wake && self.active {
                rec.count_internal_events(1);
                self.release_packet(now);
            }
            return;
        }
        rec.count_internal_events(1);
        self.run_day(rec);
        // Next day.
        self.day_idx += 1;
        self.global_day += 1;
        self.day_start = now;
        if self.day_idx == self.week.len() {
            self.day_idx = 0;
            if self.tms {
                self.week_start = now;
                self.week = self.tms_week(now);
            }
        }
        if !self.tms {
            self.probe_sample(now, self.global_day);
        }
        self.release_packet(now);
        if self.queued_flows == 0 {
            self.active = false;
        }
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        let slot_units = self.host_rate.bytes_in(self.slot()).max(1) as f64;
        self.stats.map(self.tms, slot_units)
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.stats.sent_in_night != 0 {
            return Err(format!(
                "mordia: {} packets crossed a night",
                self.stats.sent_in_night
            ));
        }
        let mut flows = 0u64;
        let mut bytes = 0u64;
        for (qi, q) in self.voq.iter().enumerate() {
            flows += q.len() as u64;
            for &f in q {
                let st = &self.flows[f as usize];
                if st.src_rack as usize * self.n + st.dst_rack as usize != qi {
                    return Err(format!("mordia: flow {f} in the wrong VOQ"));
                }
                if st.sent >= st.bytes {
                    return Err(format!("mordia: finished flow {f} still queued"));
                }
                bytes += st.bytes - st.sent;
            }
        }
        if flows != self.queued_flows || bytes != self.queued_bytes {
            return Err(format!(
                "mordia: VOQs hold {flows} flows / {bytes} B but the counters say {} / {}",
                self.queued_flows, self.queued_bytes
            ));
        }
        if let Some(ps) = &self.ps {
            if ps.drops() != 0 {
                return Err(format!(
                    "mordia: the packet switch dropped {} packets",
                    ps.drops()
                ));
            }
            ps.check_invariants()
                .map_err(|m| format!("mordia packet switch: {m}"))?;
        }
        if self.active {
            let d = &self.week[self.day_idx];
            let mut used = vec![false; self.n];
            for &j in &d.perm {
                if j != u32::MAX && std::mem::replace(&mut used[j as usize], true) {
                    return Err("mordia: two inputs on one OCS output".into());
                }
            }
        }
        Ok(())
    }
}

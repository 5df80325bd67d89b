//! Hooks for a fabric that drives a [`Network`] from outside and shares
//! its links with traffic the network does not carry (a hybrid ToR whose
//! packet switch is a `net/` network: REACToR's EPS, `fabric::reactor`).
//! All additive: a network that never calls them behaves as before.
//!
//! - [`Network::extend_flow`]: the paced transport's flows can grow — an
//!   outside scheduler hands a host more bytes of a flow as it releases
//!   them (one net flow per traffic class instead of one per chunk).
//! - [`Network::host_paused`], [`Network::host_unsent`]: whether PFC holds
//!   a host's NIC, and how many bytes its transport has not yet handed the
//!   NIC, so that the outside releases bytes only while the NIC can send
//!   them and keeps the NIC's backlog small.
//! - [`Network::set_pfc_jitter`]: PFC reaction delays drawn per frame from
//!   a range (`pause_delay + U[0, pause_extra]`, `resume_delay + U[0,
//!   resume_extra]`, from the seeded stream `net.pfc`) instead of fixed.
//! - [`Network::occupy_port`]: strict-priority external load on a queued
//!   port: bytes the port carries for the outside before any queued packet
//!   that has not started yet (a packet on the wire finishes first).
//! - [`Network::log_deliveries`], [`Network::take_deliveries`]: every
//!   in-order delivery (net flow, time, bytes) as it happens, so the outside
//!   can map a net flow's bytes back to its own flows.
//! - [`Network::run_until`]: processes every event up to a time and returns
//!   (co-simulation with an outside clock).
//! - [`ClassFlows`] (with [`StarRouter`] for a star around one switch): the
//!   glue both hybrid ToRs use — an outside fabric's traffic classes
//!   (source → destination pairs) as growing net flows, the photonet flows'
//!   bytes each carries kept in order, and the deliveries mapped back to
//!   them (REACToR's EPS, Mordia's packet switch).
//!
//! The hooks are `Network` methods; this module holds the glue built on
//! them ([`ClassFlows`], [`StarRouter`]) and uses the network's public API
//! only.

use crate::flow::{Flow, FlowId};
use crate::net::route::{Candidates, Router};
use crate::net::sim::Network;
use crate::recorder::Recorder;

use crate::units::SimTime;

use std::collections::VecDeque;

/// Routing in a star of `n` hosts around one switch (node n): the switch
/// sends a packet for host j out of its port n + j. That port may lead to
/// j directly or to a downlink node n + 1 + j whose one port 2n + j leads
/// to host j (REACToR: the downlink its circuits share).
pub struct StarRouter(pub u32);

impl Router for StarRouter {
    fn candidates(&self, node: u32, dst: u32) -> Candidates {
        let n = self.0;
        let first = if node == n { n + dst } else { 2 * n + dst };
        Candidates { first, count: 1 }
    }
}

/// An outside fabric's traffic classes carried by a paced [`Network`]: one
/// net flow per class (source → destination), grown as the outside hands
/// it bytes of its own flows; deliveries map back to those flows in the
/// order they were handed over.
pub struct ClassFlows<R: Router> {
    /// The network, reached only through the narrow methods below.
    net: Network<R>,
    /// The network's own recorder: its flows are per class.
    inner: Recorder,
    /// Per class, the net flow it extends (u32::MAX: none yet).
    class_flow: Vec<u32>,
    /// Per net flow: the outside flows' bytes it carries, in order.
    chunks: Vec<VecDeque<(FlowId, u64)>>,
    /// Bytes handed to the network and not yet delivered.
    in_net: u64,
    log: Vec<(u32, SimTime, u64)>,
}

impl<R: Router> ClassFlows<R> {
    /// `classes` traffic classes over `net` (paced transport).
    pub fn new(mut net: Network<R>, classes: usize) -> Self {
        net.log_deliveries(true);
        ClassFlows {
            net,
            inner: Recorder::new(None),
            class_flow: vec![u32::MAX; classes],
            chunks: Vec::new(),
            in_net: 0,
            log: Vec::new(),
        }
    }

    /// Hands class `q` (host `src` → host `dst`) the bytes `chunks` of
    /// outside flows at `now`: its net flow grows (a new one after a short
    /// last packet has left).
    pub fn hand(&mut self, now: SimTime, src: u32, dst: u32, q: usize, chunks: &[(FlowId, u64)]) {
        let took: u64 = chunks.iter().map(|c| c.1).sum();
        let f = self.class_flow[q];
        let f = if f != u32::MAX && self.net.extend_flow(now, f, took) {
            self.inner.grow(f, took);
            f
        } else {
            let id = self.chunks.len() as u32;
            let fl = Flow {
                id,
                src,
                dst,
                bytes: took,
                start: now,
            };
            // Net flows grow: `Recorder::grow` follows them.
            self.inner.register(&fl);
            self.chunks.push(VecDeque::new());
            self.net.add_flow(now, &fl, &mut self.inner);
            self.class_flow[q] = id;
            id
        };
        let c = &mut self.chunks[f as usize];
        for &(pf, b) in chunks {
            match c.back_mut() {
                Some(last) if last.0 == pf => last.1 += b,
                _ => c.push_back((pf, b)),
            }
        }
        self.in_net += took;
    }

    /// Runs the network up to `now`; `out` gets (cleared first) what
    /// reached hosts as (outside flow, time, bytes), in order. Returns the
    /// network's events processed.
    pub fn run(&mut self, now: SimTime, out: &mut Vec<(FlowId, SimTime, u64)>) -> u64 {
        out.clear();
        let before = self.inner.internal_events();
        self.net.run_until(now, &mut self.inner);
        let mut log = std::mem::take(&mut self.log);
        self.net.take_deliveries(&mut log);
        for &(nf, t, mut b) in &log {
            self.in_net -= b;
            let q = &mut self.chunks[nf as usize];
            while b > 0 {
                let front = q
                    .front_mut()
                    .expect("net: delivered more than it was handed");
                let x = b.min(front.1);
                front.1 -= x;
                b -= x;
                let f = front.0;
                if front.1 == 0 {
                    q.pop_front();
                }
                out.push((f, t, x));
            }
        }
        self.log = log;
        self.inner.internal_events() - before
    }

    /// Bytes handed to the network and not yet delivered.
    pub fn in_net(&self) -> u64 {
        self.in_net
    }

    /// Whether PFC holds every class of `host`'s NIC (the outside releases
    /// bytes only while the NIC can send them).
    pub fn host_paused(&self, host: u32) -> bool {
        self.net.host_paused(host)
    }

    /// Bytes of `host`'s classes not yet handed to its NIC.
    pub fn host_unsent(&self, host: u32) -> u64 {
        self.net.host_unsent(host)
    }

    /// Outside traffic occupying port `p` (see [`Network::occupy_port`]).
    pub fn occupy_port(&mut self, now: SimTime, p: u32, bytes: u64) -> SimTime {
        self.net.occupy_port(now, p, bytes)
    }

    /// PFC's per-frame jitter (see [`Network::set_pfc_jitter`]).
    pub fn set_pfc_jitter(&mut self, pause_extra: SimTime, resume_extra: SimTime) {
        self.net.set_pfc_jitter(pause_extra, resume_extra)
    }

    /// The network's next event.
    pub fn next_event(&self) -> Option<SimTime> {
        self.net.next_event()
    }

    /// The network's statistics.
    pub fn stats(&self) -> Vec<(String, f64)> {
        self.net.stats()
    }

    /// Packets the network dropped (none, when it is lossless as it should be).
    pub fn drops(&self) -> u64 {
        self.net.drops()
    }

    /// The network's invariants, and that the bytes it holds for outside
    /// flows add up to what was handed and not delivered.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.net.check_invariants()?;
        // The network's own recorder is not the run's: what it flags must
        // surface here, or nobody reads it.
        if let Some(first) = self.inner.violations().first() {
            return Err(format!(
                "net: {} violation(s) in the carried classes, first: {first}",
                self.inner.violation_count()
            ));
        }
        let held: u64 = self.chunks.iter().flatten().map(|c| c.1).sum();
        if held != self.in_net {
            return Err(format!(
                "net: {held} B of outside flows held, {} B in the network",
                self.in_net
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Flow;
    use crate::net::route::{Candidates, Routing};
    use crate::net::sim::{FlowControl, Graph, NetConfig, PfcConfig, PortSpec, Transport};
    use crate::units::Rate;

    /// A star: hosts 0..h, one switch (node h); NIC port i → switch, switch
    /// port h + j → host j.
    struct Star(u32);
    impl Router for Star {
        fn candidates(&self, _node: u32, dst: u32) -> Candidates {
            Candidates {
                first: self.0 + dst,
                count: 1,
            }
        }
    }

    fn star(h: u32, rate: Rate, xoff: u64, xon: u64) -> Network<Star> {
        let cfg = NetConfig {
            payload: 1_000,
            header: 0,
            propagation: SimTime::ZERO,
            buffer: 20_000,
            flow_control: FlowControl::Pfc(PfcConfig {
                xoff,
                xon,
                pause_delay: SimTime::us(1),
                resume_delay: SimTime::us(1),
            }),
            transport: Transport::Paced,
            routing: Routing::Ecmp,
            ..NetConfig::default()
        };
        let mut n = Network::new(cfg, star_graph(h, rate), Star(h));
        n.log_deliveries(true);
        n
    }

    #[test]
    #[should_panic(expected = "paced transport needs PFC")]
    fn a_paced_transport_on_lossy_ports_is_refused_with_a_reason() {
        let cfg = NetConfig {
            flow_control: FlowControl::None,
            transport: Transport::Paced,
            ..NetConfig::default()
        };
        Network::new(cfg, star_graph(2, Rate::gbps(10)), Star(2));
    }

    fn star_graph(h: u32, rate: Rate) -> Graph {
        let mut ports = Vec::new();
        for _ in 0..h {
            ports.push(PortSpec {
                to: h,
                rate,
                tier: 0,
            });
        }
        for j in 0..h {
            ports.push(PortSpec {
                to: j,
                rate,
                tier: 1,
            });
        }
        let reverse = (0..2 * h).map(|p| (p + h) % (2 * h)).collect();
        Graph {
            hosts: h,
            ports,
            reverse,
            tiers: vec!["nic", "down"],
            delays: vec![],
        }
    }

    fn flow(id: u32, src: u32, dst: u32, bytes: u64) -> Flow {
        Flow {
            id,
            src,
            dst,
            bytes,
            start: SimTime::ZERO,
        }
    }

    #[test]
    fn a_violation_in_the_carried_classes_fails_the_invariant_check() {
        let mut cf = ClassFlows::new(star(2, Rate::gbps(10), 6_000, 3_000), 1);
        cf.hand(SimTime::ZERO, 0, 1, 0, &[(7, 3_000)]);
        let mut out = Vec::new();
        cf.run(SimTime::ns(10_000), &mut out);
        assert_eq!(out.iter().map(|d| d.2).sum::<u64>(), 3_000);
        assert_eq!(cf.check_invariants(), Ok(()));
        cf.inner.violation("flow 0 delivered twice".into());
        let err = cf.check_invariants().unwrap_err();
        assert!(
            err.contains("1 violation(s)") && err.contains("delivered twice"),
            "{err}"
        );
    }

    /// Retiring finished paced flows changes nothing but memory: an incast
    /// of many flows of mixed sizes (queues, PAUSEs, flows finishing out of
    /// id order) gives the same completion times and statistics with and
    /// without it; the table holds only the flows from the oldest unfinished
    /// one, and none at the end; the retired flows come out in id order.
    #[test]
    fn retiring_finished_flows_changes_nothing_but_the_table() {
        let run = |retire: bool| {
            let mut n = star(4, Rate::gbps(10), 6_000, 3_000);
            if retire {
                n.retire_finished_flows(true);
            }
            let sizes: Vec<u64> = (0..3_000u64).map(|i| 1 + (i * 7_919) % 5_000).collect();
            let mut r = rec(&sizes);
            let mut most = 0;
            let mut retired = vec![];
            for (i, &b) in sizes.iter().enumerate() {
                let now = SimTime::ns(3_000 * i as u64);
                while let Some(t) = n.next_event().filter(|&t| t <= now) {
                    n.advance(t, &mut r);
                    n.take_retired(|s, d, b, fct| retired.push((s, d, b, fct)));
                }
                let f = flow(i as u32, (i % 3) as u32, 3, b);
                n.add_flow(now, &f, &mut r);
                most = most.max(n.held_flows());
                n.check_invariants().unwrap();
            }
            while let Some(t) = n.next_event() {
                n.advance(t, &mut r);
                n.take_retired(|s, d, b, fct| retired.push((s, d, b, fct)));
            }
            n.check_invariants().unwrap();
            let fin: Vec<Option<SimTime>> = (0..sizes.len() as u32).map(|i| r.finish(i)).collect();
            let held: Vec<_> = n.completed_flows().collect();
            (fin, n.stats(), most, n.held_flows(), retired, held)
        };
        let (fin0, stats0, most0, held0, retired0, done0) = run(false);
        let (fin1, stats1, most1, held1, retired1, done1) = run(true);
        assert!(fin0.iter().all(|f| f.is_some()));
        assert_eq!(fin0, fin1);
        assert_eq!(stats0, stats1);
        assert_eq!((most0, held0), (3_000, 3_000));
        assert!(most1 < 300, "held up to {most1} flows");
        assert_eq!(held1, 0);
        assert!(retired0.is_empty() && done1.is_empty());
        // The retired log is the completed flows, in id order.
        assert_eq!(retired1, done0);
    }

    #[test]
    #[should_panic(expected = "extend_flow with finished flows retired")]
    fn a_growing_flow_is_refused_when_flows_retire() {
        let mut n = star(2, Rate::gbps(10), 6_000, 3_000);
        n.retire_finished_flows(false);
        let mut r = rec(&[1_000]);
        n.add_flow(SimTime::ZERO, &flow(0, 0, 1, 1_000), &mut r);
        n.extend_flow(SimTime::ZERO, 0, 1_000);
    }

    fn rec(flows: &[u64]) -> Recorder {
        let mut r = Recorder::new(None);
        for (i, &b) in flows.iter().enumerate() {
            r.register(&flow(i as u32, 0, 1, b));
        }
        r
    }

    #[test]
    fn a_paced_flow_extended_mid_flight_and_after_completion_delivers_every_byte_once() {
        // 10 Gbps, 1,000 B packets (0.8 µs each), no propagation: 10,000 B
        // leave the NIC back to back; extended by 5,000 B at 3 µs (while
        // sending), the 15 packets are back to back and the last reaches
        // host 1 one store-and-forward later: 15 × 0.8 + 0.8 = 12.8 µs.
        let mut n = star(2, Rate::gbps(10), 15_000, 10_000);
        let mut r = rec(&[u64::MAX]);
        n.add_flow(SimTime::ZERO, &flow(0, 0, 1, 10_000), &mut r);
        n.run_until(SimTime::us(3), &mut r);
        assert!(n.extend_flow(SimTime::us(3), 0, 5_000));
        n.run_until(SimTime::MAX, &mut r);
        let mut log = Vec::new();
        n.take_deliveries(&mut log);
        assert_eq!(log.iter().map(|d| d.2).sum::<u64>(), 15_000);
        assert_eq!(log.last().unwrap().1, SimTime::ns(12_800));
        assert_eq!(r.delivered(0), 15_000);
        // Complete, then 2,500 B more at 20 µs: reopened; 3 packets of
        // 1,000, 1,000 and 500 B. The switch sends them at 20.8–21.6,
        // 21.6–22.4 and (the short one waits for the second) 22.4–22.8 µs.
        assert_eq!(n.active_flows(), 0);
        assert!(n.extend_flow(SimTime::us(20), 0, 2_500));
        assert_eq!(n.active_flows(), 1);
        n.run_until(SimTime::MAX, &mut r);
        n.take_deliveries(&mut log);
        assert_eq!(log.iter().map(|d| d.2).sum::<u64>(), 2_500);
        assert_eq!(log.last().unwrap().1, SimTime::ns(22_800));
        assert_eq!(r.delivered(0), 17_500);
        assert_eq!(n.active_flows(), 0);
        // Its short last packet has left: it cannot grow any more.
        assert!(!n.extend_flow(SimTime::us(30), 0, 1));
        n.check_invariants().unwrap();
        let s: std::collections::HashMap<_, _> = n.stats().into_iter().collect();
        assert_eq!(s["duplicate_packets"], 0.0);
        assert_eq!(s["data_packets_delivered"], 18.0);
    }

    #[test]
    fn a_short_last_packet_not_yet_sent_grows_in_place() {
        // 1,500 B then 500 B before the short packet leaves: 2 full packets.
        let mut n = star(2, Rate::gbps(10), 15_000, 10_000);
        let mut r = rec(&[u64::MAX]);
        n.add_flow(SimTime::ZERO, &flow(0, 0, 1, 1_500), &mut r);
        assert!(n.extend_flow(SimTime::ZERO, 0, 500));
        n.run_until(SimTime::MAX, &mut r);
        let mut log = Vec::new();
        n.take_deliveries(&mut log);
        assert_eq!(
            log,
            vec![
                (0, SimTime::ns(1_600), 1_000),
                (0, SimTime::ns(2_400), 1_000)
            ]
        );
    }

    #[test]
    fn a_paused_host_hands_its_nic_nothing_until_resumed() {
        // Hosts 0 and 1 send 200 kB each to host 2 at 10 Gbps: port 2 drains
        // half of what arrives, both ingress links cross xoff and are paused.
        // Stepping event by event: while host 0's NIC is paused its transport
        // hands it no packet, and after a RESUME it sends again.
        let mut n = star(3, Rate::gbps(10), 8_000, 4_000);
        n.set_pfc_jitter(SimTime::ns(1_200), SimTime::ns(100));
        let mut r = rec(&[200_000, 200_000]);
        n.add_flow(SimTime::ZERO, &flow(0, 0, 2, 200_000), &mut r);
        n.add_flow(SimTime::ZERO, &flow(1, 1, 2, 200_000), &mut r);
        let (mut pauses, mut resumes) = (0, 0);
        while let Some(t) = n.next_event() {
            let (was, before) = (n.host_paused(0), n.host_unsent(0));
            n.advance(t, &mut r);
            let (is, after) = (n.host_paused(0), n.host_unsent(0));
            if was && is {
                assert_eq!(before, after, "host 0 sent while paused at {t}");
            }
            pauses += (!was && is) as u32;
            resumes += (was && !is) as u32;
            n.check_invariants().unwrap();
        }
        assert!(pauses >= 5 && resumes == pauses, "{pauses} {resumes}");
        assert_eq!(n.drops(), 0);
        assert!(r.finish(0).is_some() && r.finish(1).is_some());
        // 400 kB through one 10 Gbps port: 320 µs, plus one packet's
        // store-and-forward; PFC keeps the port busy throughout.
        let last = r.finish(0).unwrap().max(r.finish(1).unwrap());
        assert!(
            last >= SimTime::ns(320_800) && last <= SimTime::ns(322_000),
            "{last}"
        );
    }

    #[test]
    fn external_priority_load_of_x_leaves_r_minus_x() {
        // A 10 Gbps downlink carries 4 Gbps of outside traffic (500 B every
        // µs, first in line): a long flow into it gets 6 Gbps. Over
        // [50, 550) µs: 6 Gbps × 500 µs = 375,000 B, within a packet or so.
        let mut n = star(2, Rate::gbps(10), 8_000, 4_000);
        let mut r = rec(&[1_000_000]);
        n.add_flow(SimTime::ZERO, &flow(0, 0, 1, 1_000_000), &mut r);
        for us in 0..600 {
            let t = SimTime::us(us);
            n.run_until(t, &mut r);
            n.occupy_port(t, 3, 500);
        }
        let mut log = Vec::new();
        n.take_deliveries(&mut log);
        let got: u64 = log
            .iter()
            .filter(|d| d.1 >= SimTime::us(50) && d.1 < SimTime::us(550))
            .map(|d| d.2)
            .sum();
        assert!((373_000..=377_000).contains(&got), "{got}");
        assert_eq!(n.drops(), 0);
    }
}

//! The ideal flat network: every endpoint is one fixed latency from every
//! other and limited only by its own NIC at R — the "ideal" baseline of
//! Baldur's Table VI (200 ns), and the worked example of
//! `docs/adding-a-fabric.md`.
//!
//! Each host's NIC serialises its flows' bytes at R in packets of at most
//! `packet` bytes, round-robin across the host's active flows; a packet reaches
//! its destination `latency` after its last bit left the NIC. Nothing else
//! limits a flow: receivers take any number of packets at once (an incast is
//! not slowed down at the receiver), and there are no queues inside the
//! network. Event-driven: two events per packet (the NIC becomes free; the
//! packet arrives), from one deterministic event queue.
//!
//! `infinite_bandwidth = true` is Baldur's ideal network as the paper defines
//! it (§V-A, Table VI: "infinite bandwidth; packet latency = 200 ns"): no NIC
//! serialisation and no queueing anywhere, every flow arrives whole exactly
//! `latency` after it starts (one event per flow). Off by default: the
//! default ideal network is limited by its NIC at R.

use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId, HostId};
use crate::queue::EventQueue;
use crate::recorder::Recorder;
use crate::units::{ByteSize, Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Parameters of the ideal flat network (`fabric = "ideal"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IdealParams {
    /// One-way latency between any two endpoints, from a packet's last bit
    /// leaving the source NIC to its arrival (Baldur, Table VI: 200 ns).
    pub latency: SimTime,
    /// Largest packet: a NIC sends its flows' bytes in packets of at most this
    /// size, one flow after another (round-robin).
    pub packet: ByteSize,
    /// Infinite bandwidth (Baldur's Table VI ideal): no NIC serialisation or
    /// queueing; every flow arrives whole `latency` after it starts. Its FCT
    /// is then below bytes/R: it is a reference, not a realisable network.
    pub infinite_bandwidth: bool,
}

impl Default for IdealParams {
    fn default() -> Self {
        IdealParams {
            latency: SimTime::ns(200),
            packet: ByteSize(512),
            infinite_bandwidth: false,
        }
    }
}

impl ParamTable for IdealParams {
    const TABLE: &'static str = "ideal";
}

/// Registration of the ideal flat network.
pub struct IdealFlat;

impl FabricModule for IdealFlat {
    type Params = IdealParams;
    const VARIANTS: &'static [Variant] = &[Variant {
        name: "ideal",
        label: "Ideal flat network",
        description: "Ideal flat network: every endpoint one fixed latency (200 ns) from every other, limited only by its own NIC at R (Baldur's ideal baseline, Table VI)",
    }];

    type Layout = ();

    fn plan(p: &IdealParams, _: &Variant, _: &BuildContext) -> Result<(), ConfigError> {
        if p.packet.0 == 0 {
            return Err(ConfigError::new(
                "ideal.packet",
                "\"0B\"",
                "a packet must carry at least one byte",
            ));
        }
        Ok(())
    }

    fn memory(_: &IdealParams, _: &(), _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        vec![MemoryPart::per_host(ctx, 512, "per-host queues")]
    }
    fn build(
        p: IdealParams,
        _: (),
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let t = ctx.topology;
        Ok(Box::new(IdealNetwork::new(t.hosts(), t.host_rate(), &p)))
    }

    /// Exactly the sum of the packets' serialisation times (each rounded up
    /// to a picosecond) plus the latency: at least 8·bytes/R + latency, and
    /// at most one picosecond more per packet.
    fn lone_flow_fct(p: &IdealParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (ctx, bytes) = (f.ctx, f.bytes);
        if p.infinite_bandwidth {
            return Ok(FctBounds {
                min: p.latency,
                max: p.latency,
            });
        }
        let r = ctx.topology.host_rate();
        let at_r = r.tx_time(bytes);
        let packets = bytes.div_ceil(p.packet.0);
        Ok(FctBounds {
            min: at_r.saturating_sub(SimTime(1)) + p.latency,
            max: at_r + SimTime(packets) + p.latency,
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// The host's NIC finished serialising a packet.
    NicFree(HostId),
    /// A packet of `bytes` bytes of a flow reached its destination.
    Arrive(FlowId, u32),
    /// Infinite bandwidth: the whole flow reached its destination.
    ArriveAll(FlowId),
}

struct FlowState {
    bytes: u64,
    sent: u64,
    arrived: u64,
}

/// The ideal flat network.
pub struct IdealNetwork {
    rate: Rate,
    infinite: bool,
    latency: SimTime,
    packet: u64,
    /// Per host: its flows with bytes left to send, served round-robin.
    backlog: Vec<VecDeque<FlowId>>,
    nic_busy: Vec<bool>,
    flows: Vec<FlowState>,
    events: EventQueue<Event>,
    // Checked against `nic_busy` by `check_invariants`.
    pending_nic_events: u64,
    packets: u64,
    active: u64,
    peak_active: u64,
}

impl IdealNetwork {
    pub fn new(hosts: usize, rate: Rate, p: &IdealParams) -> IdealNetwork {
        IdealNetwork {
            rate,
            infinite: p.infinite_bandwidth,
            latency: p.latency,
            packet: p.packet.0,
            backlog: vec![VecDeque::new(); hosts],
            nic_busy: vec![false; hosts],
            flows: Vec::new(),
            events: EventQueue::new(),
            pending_nic_events: 0,
            packets: 0,
            active: 0,
            peak_active: 0,
        }
    }

    /// Puts the next packet of `host`'s round-robin on the wire at `now`.
    fn send_next(&mut self, host: HostId, now: SimTime) {
        let Some(f) = self.backlog[host as usize].pop_front() else {
            self.nic_busy[host as usize] = false;
            return;
        };
        let st = &mut self.flows[f as usize];
        let size = self.packet.min(st.bytes - st.sent);
        st.sent += size;
        if st.sent < st.bytes {
            self.backlog[host as usize].push_back(f);
        }
        let done = now + self.rate.tx_time(size);
        self.nic_busy[host as usize] = true;
        self.events.push(done, Event::NicFree(host));
        self.pending_nic_events += 1;
        self.events
            .push(done + self.latency, Event::Arrive(f, size as u32));
        self.packets += 1;
    }
}

impl Fabric for IdealNetwork {
    fn name(&self) -> String {
        if self.infinite {
            "Ideal flat network (infinite bandwidth)".into()
        } else {
            "Ideal flat network".into()
        }
    }
    fn hosts(&self) -> usize {
        self.backlog.len()
    }
    fn host_rate(&self) -> Rate {
        self.rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        self.flows.push(FlowState {
            bytes: flow.bytes,
            sent: 0,
            arrived: 0,
        });
        self.active += 1;
        self.peak_active = self.peak_active.max(self.active);
        if self.infinite {
            self.flows[flow.id as usize].sent = flow.bytes;
            self.events
                .push(now + self.latency, Event::ArriveAll(flow.id));
            self.packets += 1;
            return;
        }
        self.backlog[flow.src as usize].push_back(flow.id);
        if !self.nic_busy[flow.src as usize] {
            self.send_next(flow.src, now);
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        self.events.peek_time()
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        while let Some((_, ev)) = self.events.pop_due(now) {
            rec.count_internal_events(1);
            match ev {
                Event::NicFree(h) => {
                    self.pending_nic_events -= 1;
                    self.send_next(h, now);
                }
                Event::Arrive(f, size) => {
                    let st = &mut self.flows[f as usize];
                    st.arrived += size as u64;
                    rec.deliver(f, now, size as u64);
                    if st.arrived == st.bytes {
                        rec.complete(f, now);
                        self.active -= 1;
                    }
                }
                Event::ArriveAll(f) => {
                    let st = &mut self.flows[f as usize];
                    let bytes = st.bytes - st.arrived;
                    st.arrived = st.bytes;
                    if bytes > 0 {
                        rec.deliver(f, now, bytes);
                    }
                    rec.complete(f, now);
                    self.active -= 1;
                }
            }
        }
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        [
            ("packets_sent", self.packets as f64),
            ("peak_active_flows", self.peak_active as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn check_invariants(&self) -> Result<(), String> {
        let busy = self.nic_busy.iter().filter(|&&b| b).count() as u64;
        if busy != self.pending_nic_events {
            return Err(format!(
                "ideal: {busy} NICs busy but {} NIC events pending",
                self.pending_nic_events
            ));
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.arrived > f.sent || f.sent > f.bytes {
                return Err(format!(
                    "ideal: flow {i} sent {} and received {} of {} B",
                    f.sent, f.arrived, f.bytes
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u32, src: u32, dst: u32, bytes: u64, start_ns: u64) -> Flow {
        Flow::new(id, src, dst, bytes, SimTime::ns(start_ns))
    }

    fn drain(net: &mut IdealNetwork, flows: &[Flow]) -> Recorder {
        let mut rec = Recorder::new(None);
        crate::fabric::drive(net, flows, &mut rec, SimTime::MAX, |_| true);
        rec
    }

    #[test]
    fn two_flows_from_one_host_share_its_nic_packet_by_packet() {
        // 8 Gbps: a 1,000 B packet takes 1 us. Two 2,000 B flows from host 0
        // start together. Flow a arrives first and its first packet goes out
        // at once (0-1 us); a rejoins the round-robin ahead of b, which arrived
        // while a's packet was on the wire: a (1-2 us), then b, b. Each
        // packet arrives 200 ns after it left.
        let p = IdealParams {
            latency: SimTime::ns(200),
            packet: ByteSize(1000),
            ..Default::default()
        };
        let mut net = IdealNetwork::new(3, Rate::gbps(8), &p);
        let rec = drain(&mut net, &[flow(0, 0, 1, 2000, 0), flow(1, 0, 2, 2000, 0)]);
        assert_eq!(rec.finish(0), Some(SimTime::ns(2_200)));
        assert_eq!(rec.finish(1), Some(SimTime::ns(4_200)));
        assert_eq!(rec.violation_count(), 0);
    }

    #[test]
    fn receivers_are_not_a_bottleneck() {
        // Two senders to one receiver each get their full NIC rate.
        let p = IdealParams::default();
        let mut net = IdealNetwork::new(3, Rate::gbps(8), &p);
        let rec = drain(&mut net, &[flow(0, 0, 2, 1000, 0), flow(1, 1, 2, 1000, 0)]);
        // 512 B + 488 B at 8 Gbps = 1 us, + 200 ns.
        assert_eq!(rec.finish(0), Some(SimTime::ns(1_200)));
        assert_eq!(rec.finish(1), Some(SimTime::ns(1_200)));
    }

    #[test]
    fn a_later_flow_joins_the_round_robin_at_its_tail() {
        // Flow 0 (10 packets of 1,000 B at 1 us each) starts at 0; flow 1
        // (one packet) arrives at 2.5 us, while flow 0's third packet is on
        // the wire and flow 0 is already queued for its fourth: flow 1 goes
        // out after it, 4-5 us, and delays flow 0 by one packet.
        let p = IdealParams {
            latency: SimTime::ZERO,
            packet: ByteSize(1000),
            ..Default::default()
        };
        let mut net = IdealNetwork::new(2, Rate::gbps(8), &p);
        let rec = drain(
            &mut net,
            &[flow(0, 0, 1, 10_000, 0), flow(1, 0, 1, 1000, 2_500)],
        );
        assert_eq!(rec.finish(1), Some(SimTime::ns(5_000)));
        assert_eq!(rec.finish(0), Some(SimTime::ns(11_000)));
    }

    #[test]
    fn infinite_bandwidth_delivers_every_flow_exactly_latency_after_it_starts() {
        // Paper's ideal (Table VI): whatever the size and however many flows
        // share a source or a destination, FCT = latency.
        let p = IdealParams {
            latency: SimTime::ns(200),
            infinite_bandwidth: true,
            ..Default::default()
        };
        let mut net = IdealNetwork::new(3, Rate::gbps(25), &p);
        let flows = [
            flow(0, 0, 2, 512, 0),
            flow(1, 0, 2, 10_000_000, 0),
            flow(2, 1, 2, 512, 50),
            flow(3, 2, 0, 1, 300),
        ];
        let rec = drain(&mut net, &flows);
        for f in &flows {
            assert_eq!(rec.finish(f.id), Some(f.start + SimTime::ns(200)), "{f:?}");
        }
        assert_eq!(rec.violation_count(), 0);
        // The default (NIC-limited) network takes 10 MB / 25 Gbps = 3.2 ms.
        let mut slow = IdealNetwork::new(3, Rate::gbps(25), &IdealParams::default());
        let rec = drain(&mut slow, &[flow(0, 0, 2, 10_000_000, 0)]);
        assert!(rec.finish(0).unwrap() > SimTime::ms(3));
    }
}

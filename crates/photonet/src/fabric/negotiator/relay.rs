//! Traffic-aware selective relay on thin-clos (App. A.2.2): the data that
//! intermediates hold for a second hop, and the data on its first hop.
//!
//! The matching decides who relays what (`matching.rs` asks, refuses and
//! accepts with [`Relay::has_room`] and [`Relay::port_loaded`]); the scheduled
//! phase sends the first hop ([`Relay::launch`]); after one propagation delay
//! the data waits at the intermediate ([`Relay::arrivals_until`]) and goes on
//! as its own traffic ([`Relay::take`]). Relayed bytes count in the
//! intermediate's backlog (`SourceQueues::count_in`).

use super::source::{Flows, Pkt, Seg, SourceQueues};
use crate::sched::awgr::CyclicSchedule;
use crate::units::SimTime;
use std::collections::VecDeque;

pub(super) struct Relay {
    /// Relay is on (thin-clos only).
    pub on: bool,
    pub threshold: u64,
    pub fanout: usize,
    buffer: u64,
    n: usize,
    /// Per (intermediate, destination): relayed data waiting for the second
    /// hop, and its bytes.
    rq: Vec<VecDeque<Seg>>,
    bytes: Vec<u64>,
    /// Per intermediate: destinations with relayed data.
    active: Vec<Vec<u32>>,
    /// Relayed packets on their first hop: (intermediate, destination, flow,
    /// bytes). All take one propagation delay from slot ends that never go
    /// back in time, so they arrive in the order they were sent: a FIFO,
    /// not a heap.
    flight: VecDeque<(SimTime, (u32, u32, u32, u64))>,
    flight_bytes: u64,
    pub relayed_bytes: u64,
    /// Per intermediate: bytes it was sent to relay (Fig. 16's choice).
    pub relayed_via: Vec<u64>,
}

impl Relay {
    pub fn new(on: bool, threshold: u64, fanout: usize, buffer: u64, n: usize) -> Relay {
        Relay {
            on,
            threshold,
            fanout,
            buffer,
            n,
            rq: if on {
                vec![VecDeque::new(); n * n]
            } else {
                vec![]
            },
            bytes: if on { vec![0; n * n] } else { vec![] },
            active: vec![Vec::new(); n],
            flight: VecDeque::new(),
            flight_bytes: 0,
            relayed_bytes: 0,
            relayed_via: if on { vec![0; n] } else { vec![] },
        }
    }

    /// Bytes intermediate `m` holds for `d` (0 without relay).
    #[inline]
    pub fn bytes(&self, m: usize, d: usize) -> u64 {
        if self.on {
            self.bytes[m * self.n + d]
        } else {
            0
        }
    }
    /// Destinations `m` holds relayed data for.
    #[inline]
    pub fn active(&self, m: usize) -> &[u32] {
        &self.active[m]
    }
    /// Bytes waiting at intermediates (all of them).
    pub fn queued(&self) -> u64 {
        self.bytes.iter().sum()
    }
    /// Bytes on their first hop.
    pub fn flight_bytes(&self) -> u64 {
        self.flight_bytes
    }
    pub fn in_flight(&self) -> bool {
        !self.flight.is_empty()
    }

    /// Whether `m`'s relay queue for `d` has room for `phase` more bytes.
    pub fn has_room(&self, m: usize, d: usize, phase: u64) -> bool {
        self.bytes[m * self.n + d] + phase <= self.buffer
    }

    /// Whether `t`'s egress port towards `d` carries high-volume direct
    /// traffic (a queue above `threshold` for a ToR that port reaches).
    pub fn port_loaded(
        &self,
        sch: &CyclicSchedule,
        src: &SourceQueues,
        t: usize,
        d: usize,
    ) -> bool {
        let x = sch.link(t, d).0;
        src.active(t).iter().any(|&d2| {
            sch.link(t, d2 as usize).0 == x && src.bytes(t, d2 as usize) > self.threshold
        })
    }

    /// A first-hop packet of `flow` leaves for intermediate `m` (final
    /// destination `d`), arriving at `at`.
    pub fn launch(&mut self, at: SimTime, m: usize, d: u32, flow: u32, bytes: u64) {
        self.relayed_bytes += bytes;
        self.relayed_via[m] += bytes;
        self.flight_bytes += bytes;
        debug_assert!(self.flight.back().is_none_or(|b| b.0 <= at));
        self.flight.push_back((at, (m as u32, d, flow, bytes)));
    }

    /// First-hop packets that have reached their intermediate by `now` queue
    /// there for their destination.
    pub fn arrivals_until(&mut self, now: SimTime, src: &mut SourceQueues, flows: &Flows) {
        while let Some(&(t, (m, d, flow, b))) = self.flight.front() {
            if t > now {
                break;
            }
            self.flight.pop_front();
            let (m, d) = (m as usize, d as usize);
            let pair = m * self.n + d;
            if self.bytes[pair] == 0 {
                self.active[m].push(d as u32);
            }
            self.rq[pair].push_back(Seg {
                flow,
                ep: flows.dst_ep(flow),
                left: b,
                since: now,
            });
            self.bytes[pair] += b;
            self.flight_bytes -= b;
            src.count_in(m, b);
        }
    }

    /// Like `SourceQueues::take`, from the data `m` relays to `d`.
    pub fn take(
        &mut self,
        m: usize,
        d: usize,
        payload: u64,
        max: u64,
        src: &mut SourceQueues,
        flows: &mut Flows,
    ) -> Option<Pkt> {
        let pair = m * self.n + d;
        let seg = self.rq[pair].front_mut()?;
        let (k, b) = seg.cut(payload, max);
        let (flow, ep, seg_done) = (seg.flow, seg.ep, seg.left == 0);
        let mut last = false;
        if seg_done {
            self.rq[pair].pop_front();
            last = flows.segment_sent(flow);
        }
        self.bytes[pair] -= b;
        src.count_out(m, b);
        if self.bytes[pair] == 0 {
            let list = &mut self.active[m];
            let pos = list.iter().position(|&x| x as usize == d).expect("listed");
            list.swap_remove(pos);
        }
        Some(Pkt {
            flow,
            ep,
            bytes: b,
            prio: (src.prios() - 1) as u8,
            packets: k,
            last,
        })
    }
}

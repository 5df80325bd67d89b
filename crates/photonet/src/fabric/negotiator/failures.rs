//! Link failures (§3.6.1): which ToR port links are down, which the fabric
//! knows to be down, and the retransmission of what was lost on them.
//!
//! A failure takes effect at the next epoch boundary. An ingress failure (or
//! repair) is known `detect_epochs` after it happens, an egress one k epochs
//! later still (the receivers' feedback must come back). Known failed ports
//! are not granted nor accepted and carry no piggybacked data; a packet sent
//! on a failed link is lost and its source retransmits it one RTT later at
//! the head of the queue it came from.

use super::params::{LinkSide, NegotiatorLayout, NegotiatorParams};
use super::source::Pkt;
use crate::host_edge::HostEntry;
use crate::queue::EventQueue;
use crate::units::SimTime;

pub(super) struct Failures {
    /// Any failure configured: without, every check below is skipped.
    any: bool,
    /// (at, ToR, port, side, down), latest first: applied from the back.
    events: Vec<(SimTime, u32, u32, LinkSide, bool)>,
    egress_down: Vec<bool>,
    ingress_down: Vec<bool>,
    egress_known: Vec<bool>,
    ingress_known: Vec<bool>,
    /// (epoch the knowledge changes, index, egress?, value)
    detections: Vec<(u64, usize, bool, bool)>,
    detect: u64,
    /// Lost packets waiting for their retransmission:
    /// (source, destination, priority, bytes | flow << 32).
    retransmit: EventQueue<(u32, u32, u8, u64)>,
    retransmit_bytes: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Failure window [first failure, last repair) and delivered bytes in it
    /// and in the window of the same length just before it.
    window: Option<(SimTime, SimTime)>,
    bytes_before: u64,
    bytes_during: u64,
}

impl Failures {
    pub fn new(p: &NegotiatorParams, n: usize, s: usize) -> Failures {
        let mut events = Vec::new();
        for f in &p.link_failures {
            events.push((f.at, f.tor, f.port, f.side, true));
            if let Some(u) = f.until {
                events.push((u, f.tor, f.port, f.side, false));
            }
        }
        let window = match (
            p.link_failures.iter().map(|f| f.at).min(),
            p.link_failures.iter().map(|f| f.until).max(),
        ) {
            (Some(a), Some(Some(u))) if p.link_failures.iter().all(|f| f.until.is_some()) => {
                Some((a, u))
            }
            _ => None,
        };
        // Applied from the back: latest last in the vector's front.
        events.sort_by_key(|ev| std::cmp::Reverse(ev.0));
        Failures {
            any: !events.is_empty(),
            events,
            egress_down: vec![false; n * s],
            ingress_down: vec![false; n * s],
            egress_known: vec![false; n * s],
            ingress_known: vec![false; n * s],
            detections: Vec::new(),
            detect: p.detect_epochs as u64,
            retransmit: EventQueue::new(),
            retransmit_bytes: 0,
            packets_lost: 0,
            bytes_lost: 0,
            window,
            bytes_before: 0,
            bytes_during: 0,
        }
    }

    /// Whether any link ever fails.
    #[inline]
    pub fn any(&self) -> bool {
        self.any
    }
    /// Whether the fabric knows port `i` (ToR · S + port) failed, egress or
    /// ingress.
    #[inline]
    pub fn egress_known(&self, i: usize) -> bool {
        self.egress_known[i]
    }
    #[inline]
    pub fn ingress_known(&self, i: usize) -> bool {
        self.ingress_known[i]
    }
    /// Whether a packet from egress `i` to ingress `j` is lost.
    #[inline]
    pub fn down(&self, i: usize, j: usize) -> bool {
        self.egress_down[i] || self.ingress_down[j]
    }
    /// Bytes lost and not yet back in their source queue.
    pub fn retransmit_bytes(&self) -> u64 {
        self.retransmit_bytes
    }
    pub fn retransmit_pending(&self) -> bool {
        !self.retransmit.is_empty()
    }

    /// Whether a message `s` → `d` in epoch `e`'s predefined phase gets through.
    #[inline]
    pub fn message_ok(&self, l: &NegotiatorLayout, s: usize, d: usize, e: u64) -> bool {
        if !self.any {
            return true;
        }
        let (p, q) = l.pre_link(s, d, e);
        let sp = l.s;
        !self.egress_down[s * sp + p] && !self.ingress_down[d * sp + q]
    }

    /// At the start of epoch `e` (time `now`, pipeline step `k` epochs): the
    /// failures and repairs due take effect, and what has been detected
    /// becomes known.
    pub fn apply(&mut self, now: SimTime, e: u64, sp: usize, k: u64) {
        while let Some(&(at, tor, port, side, down)) = self.events.last() {
            if at > now {
                break;
            }
            self.events.pop();
            let i = tor as usize * sp + port as usize;
            let egress = side == LinkSide::Egress;
            if egress {
                self.egress_down[i] = down;
            } else {
                self.ingress_down[i] = down;
            }
            let delay = self.detect + if egress { k } else { 0 };
            self.detections.push((e + delay, i, egress, down));
        }
        let mut x = 0;
        while x < self.detections.len() {
            let (when, i, egress, down) = self.detections[x];
            if when <= e {
                if egress {
                    self.egress_known[i] = down;
                } else {
                    self.ingress_known[i] = down;
                }
                self.detections.swap_remove(x);
            } else {
                x += 1;
            }
        }
    }

    /// A packet `s` → `d` lost on a failed link: retransmitted by its source
    /// at `again` (one RTT after its slot).
    pub fn lose(&mut self, s: usize, d: usize, pkt: &Pkt, again: SimTime) {
        let (flow, b) = (pkt.flow, pkt.bytes);
        self.packets_lost += pkt.packets;
        self.bytes_lost += b;
        self.retransmit.push(
            again,
            (s as u32, d as u32, pkt.prio, b | (flow as u64) << 32),
        );
        self.retransmit_bytes += b;
    }

    /// The next retransmission due by `now`: (source, destination,
    /// priority, flow, bytes).
    #[inline]
    pub fn due_retransmit(&mut self, now: SimTime) -> Option<(usize, usize, usize, u32, u64)> {
        let (_, (s, d, prio, packed)) = self.retransmit.pop_due(now)?;
        let (b, flow) = (packed & 0xffff_ffff, (packed >> 32) as u32);
        self.retransmit_bytes -= b;
        Some((s as usize, d as usize, prio as usize, flow, b))
    }

    /// Counts delivered entries in the failure window or the one before.
    #[inline]
    pub fn count_delivered(&mut self, due: &[HostEntry]) {
        if let Some((a, u)) = self.window {
            for e in due {
                let (done, b) = (e.done(), e.bytes());
                if done >= a && done < u {
                    self.bytes_during += b;
                } else if done < a && done + (u - a) >= a {
                    self.bytes_before += b;
                }
            }
        }
    }

    /// Goodput in the failure window over the window before it.
    pub fn goodput_ratio(&self) -> f64 {
        if self.bytes_before > 0 {
            self.bytes_during as f64 / self.bytes_before as f64
        } else {
            f64::NAN
        }
    }
}

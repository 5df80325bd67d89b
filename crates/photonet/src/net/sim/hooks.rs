//! The hooks for a fabric that drives the network from outside and shares
//! its links (REACToR's EPS, Mordia's packet switch: `net::external`), and
//! their state: PFC jitter and the delivery log.

use super::ports::AFTER_ALL;
use super::{FlowControl, Network, Transport};
use crate::net::route::Router;
use crate::rng::{RngStreams, SimRng};
use crate::units::SimTime;
use rand::Rng;

/// The hooks' state inside a [`Network`].
#[derive(Default)]
pub(super) struct Ext {
    /// PFC jitter: largest extra pause and resume delays, ps, and the
    /// stream they are drawn from (set by `set_pfc_jitter`).
    pub(super) pause_extra: u64,
    pub(super) resume_extra: u64,
    pub(super) rng: Option<SimRng>,
    /// Delivery log (net flow, time, bytes), when on.
    pub(super) log: Option<Vec<(u32, SimTime, u64)>>,
}

impl Ext {
    /// The extra delay of one PFC frame (0 without jitter).
    #[inline]
    pub(super) fn pfc_extra(&mut self, pause: bool) -> u64 {
        let Some(rng) = &mut self.rng else {
            return 0;
        };
        let max = if pause {
            self.pause_extra
        } else {
            self.resume_extra
        };
        rng.random_range(0..=max)
    }
}

impl<R: Router> Network<R> {
    /// Paced transport: `bytes` more of flow `f` at `now`. The flow's
    /// packets keep their numbering (full packets, the last one possibly
    /// short); a flow whose short last packet has already left cannot grow
    /// (`false`; add a new flow instead). A flow whose bytes were all
    /// delivered is reopened: its next completion is reported again.
    pub fn extend_flow(&mut self, now: SimTime, f: u32, bytes: u64) -> bool {
        assert!(
            matches!(self.cfg.transport, Transport::Paced),
            "net: extend_flow needs the paced transport"
        );
        assert!(
            !self.h.retire,
            "net: extend_flow with finished flows retired"
        );
        if bytes == 0 {
            return true;
        }
        let payload = self.cfg.payload as u64;
        let fl = &mut self.h.flows[f as usize];
        if !fl.bytes.is_multiple_of(payload) && fl.snd_nxt >= fl.npkts {
            return false;
        }
        let total = fl
            .bytes
            .checked_add(bytes)
            .expect("net: flow size overflow");
        let npkts = u32::try_from(total.div_ceil(payload)).expect("net: more than 2^32 packets");
        fl.bytes = total;
        fl.npkts = npkts;
        let src = fl.src;
        if fl.receiver_done {
            fl.receiver_done = false;
            self.h.active += 1;
        }
        self.last_advance = now.0;
        self.bound = (now.0, AFTER_ALL);
        if fl.sender_done {
            fl.sender_done = false;
            self.h.paced[src as usize].push_back(f);
            if self.q.lazy_pf {
                self.q.settle_port(src, &mut self.events, &self.bound);
            }
            if !self.q.qports[src as usize].busy
                && !self.q.all_paused(src)
                && !self.q.has_queue(src)
            {
                self.pace(src, now.0);
            }
        }
        true
    }

    /// Whether PFC has paused every class of `host`'s NIC (false without
    /// queued ports).
    pub fn host_paused(&self, host: u32) -> bool {
        self.q.on() && self.q.all_paused(host)
    }

    /// Paced transport: bytes of `host`'s flows not yet handed to its NIC.
    pub fn host_unsent(&self, host: u32) -> u64 {
        self.h.unsent(host, self.cfg.payload as u64)
    }

    /// PFC: every PAUSE takes `pause_delay + U[0, pause_extra]` and every
    /// RESUME `resume_delay + U[0, resume_extra]` (besides propagation),
    /// drawn per frame from the stream `net.pfc` of the network's seed.
    pub fn set_pfc_jitter(&mut self, pause_extra: SimTime, resume_extra: SimTime) {
        assert!(
            matches!(self.cfg.flow_control, FlowControl::Pfc(_)),
            "net: PFC jitter without PFC"
        );
        self.ext.pause_extra = pause_extra.0;
        self.ext.resume_extra = resume_extra.0;
        self.ext.rng = Some(RngStreams::new(self.cfg.seed).stream("net.pfc"));
    }

    /// Queued ports: `bytes` of outside traffic on port `p` from `now` (or
    /// from when the port is next free), with priority over every packet
    /// not yet started; returns when the port is free again.
    pub fn occupy_port(&mut self, now: SimTime, p: u32, bytes: u64) -> SimTime {
        assert!(self.q.on(), "net: occupy_port needs queued ports");
        let rate = || self.graph.ports[p as usize].rate;
        let port = &mut self.ports[p as usize];
        let end = port.busy_until.max(now.0) + port.ser(bytes, rate);
        port.busy_until = end;
        SimTime(end)
    }

    /// Keeps a log of deliveries for [`Network::take_deliveries`].
    pub fn log_deliveries(&mut self, on: bool) {
        self.ext.log = on.then(Vec::new);
    }

    /// Moves the deliveries (net flow, time, bytes) logged since the last
    /// call into `out` (cleared first), in the order they happened.
    pub fn take_deliveries(&mut self, out: &mut Vec<(u32, SimTime, u64)>) {
        out.clear();
        if let Some(log) = &mut self.ext.log {
            std::mem::swap(log, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;

    fn jitter(seed: u64) -> Ext {
        // As `Network::set_pfc_jitter(1,174 ns, 100 ns)` sets it.
        Ext {
            pause_extra: 1_174_000,
            resume_extra: 100_000,
            rng: Some(RngStreams::new(seed).stream("net.pfc")),
            log: None,
        }
    }

    #[test]
    fn pfc_jitter_draws_stay_in_range_and_vary() {
        let mut n = jitter(1);
        let d: Vec<u64> = (0..200).map(|_| n.pfc_extra(true)).collect();
        // Picoseconds.
        assert!(d.iter().all(|&x| x <= 1_174_000));
        assert!(d.iter().any(|&x| x < 300_000) && d.iter().any(|&x| x > 900_000));
        let e: Vec<u64> = (0..200).map(|_| n.pfc_extra(false)).collect();
        assert!(e.iter().all(|&x| x <= 100_000));
        // Same seed, same draws.
        let mut m = jitter(1);
        let d2: Vec<u64> = (0..200).map(|_| m.pfc_extra(true)).collect();
        assert_eq!(d, d2);
        // Without jitter, no extra delay.
        assert_eq!(Ext::default().pfc_extra(true), 0);
    }
}

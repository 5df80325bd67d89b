//! The hosts: their flows and NICs, and the transports' send and receive
//! paths on top of the network's ports.
//!
//! - [`Transport::Dctcp`]: a reliable window transport with DCTCP congestion
//!   control (`net::dctcp`), one ACK per data packet echoing its CE mark and
//!   timestamp, fast retransmit on `dupack_threshold` duplicate ACKs
//!   (NewReno partial ACKs), retransmission timeout (go-back-N, exponential
//!   backoff) with an RTT estimate (RFC 6298) floored at `rto_min`; before
//!   a flow's first RTT sample its RTO is `rto_init` (RFC 6298 §2.1). An
//!   RTO is armed once and pushed back lazily (a deadline field, re-armed
//!   when it fires early), so an ACK costs no timer operation.
//! - [`Transport::Paced`]: window-free, for lossless networks: each NIC sends
//!   its flows' packets round-robin, one at a time, at line rate; no ACKs.
//! - [`Transport::Pfabric`]: pFabric's priority queues at every port and its
//!   fixed-timeout window hosts, as the simulator YAPS has them (`pfabric.rs`).
//!
//! Receivers deliver through a [`ReorderBuffer`] per flow: every byte reaches
//! the [`Recorder`] once and in order, whatever was reordered, dropped or
//! retransmitted.
//!
//! [`Hosts`] owns the per-flow and per-host state. The send and receive
//! paths are `Network` methods because each packet they send goes straight
//! into the event kernel (`Network::enqueue`) and may change what the NIC
//! can take next (the round-robin NIC reads its port after every packet).

use super::flow_table::FlowTable;
use super::ports::{Packet, FLAG_ACK, FLAG_CE, FLAG_ECE};
use super::transport::{is_sacked, next_hole, FlowState, WinState};
use super::{NetConfig, Network, NicQueues, Timer, Transport};
use crate::delivery::{Receipt, ReorderBuffer};
use crate::flow::Flow;
use crate::net::route::Router;
use crate::recorder::Recorder;
use crate::units::SimTime;
use std::collections::VecDeque;

/// The hosts' flows and NICs.
pub(super) struct Hosts {
    /// Per flow by id; with `retire`, only from the oldest unfinished one.
    pub(super) flows: FlowTable<FlowState>,
    /// The window transport's state per flow by id (empty when paced).
    pub(super) win: Vec<WinState>,
    /// Paced transport: finished flows leave `flows`
    /// ([`Network::retire_finished_flows`](super::Network::retire_finished_flows)).
    pub(super) retire: bool,
    /// Retired flows (source, destination, bytes, FCT), in id order, until
    /// taken ([`Hosts::take_retired`]); `None`: not kept.
    retired_log: Option<Vec<(u32, u32, u64, SimTime)>>,
    /// Per host, its flows with a packet to send, served round-robin: the
    /// paced transport's flows with packets left, or (round-robin NIC) the
    /// window transport's flows whose window allows a packet.
    pub(super) paced: Vec<VecDeque<u32>>,
    /// Round-robin NIC: a `Timer::Nic` is pending for the host.
    pub(super) nic_armed: Vec<bool>,
    /// The window transport with a round-robin NIC.
    pub(super) rr_nic: bool,
    /// Flows not yet complete.
    pub(super) active: u64,
}

impl Hosts {
    pub(super) fn new(hosts: usize, cfg: &NetConfig) -> Self {
        Hosts {
            flows: FlowTable::new(),
            win: Vec::new(),
            retire: false,
            retired_log: None,
            paced: vec![VecDeque::new(); hosts],
            nic_armed: vec![false; hosts],
            rr_nic: matches!(cfg.transport, Transport::Dctcp(_))
                && cfg.nic == NicQueues::RoundRobin,
            active: 0,
        }
    }

    /// Flow `flow` arrives at `now`: its state (and its window's, with
    /// DCTCP).
    #[inline(always)]
    pub(super) fn add(&mut self, flow: &Flow, now: u64, cfg: &NetConfig) {
        let npkts = flow.bytes.div_ceil(cfg.payload as u64).max(1) as u32;
        if let Transport::Dctcp(d) = &cfg.transport {
            self.win.push(WinState::new(d));
        }
        self.flows.push(FlowState {
            src: flow.src,
            dst: flow.dst,
            bytes: flow.bytes.max(1),
            npkts,
            snd_nxt: 0,
            losses: 0,
            sender_done: false,
            receiver_done: false,
            start: now,
            finish: 0,
            rb: ReorderBuffer::new(),
        });
        self.active += 1;
    }

    /// Finished flows leave the table from now on (paced flows only:
    /// before any flow); with `log`, kept for [`Hosts::take_retired`].
    #[inline]
    pub(super) fn set_retire(&mut self, log: bool) {
        assert!(
            self.flows.len() == 0,
            "net: retirement set after flows arrived"
        );
        self.retire = true;
        self.retired_log = log.then(Vec::new);
    }

    /// Retires the finished flows at the front of the table.
    #[inline]
    pub(super) fn retire_flows(&mut self) {
        let log = &mut self.retired_log;
        self.flows.retire_front(
            |f| f.receiver_done && f.sender_done,
            |_, f| {
                if let Some(l) = log {
                    l.push((f.src, f.dst, f.bytes, SimTime(f.finish - f.start)));
                }
            },
        );
    }

    /// Whether retired flows wait to be taken.
    #[inline]
    pub(super) fn has_retired(&self) -> bool {
        self.retired_log.as_ref().is_some_and(|l| !l.is_empty())
    }

    /// Hands out the flows retired since the last call (source,
    /// destination, bytes, FCT), in id order.
    #[inline]
    pub(super) fn take_retired(&mut self, mut f: impl FnMut(u32, u32, u64, SimTime)) {
        if let Some(log) = &mut self.retired_log {
            for (s, d, b, fct) in log.drain(..) {
                f(s, d, b, fct);
            }
        }
    }

    /// Completed flows still held, by id: (source, destination, bytes, FCT).
    pub(super) fn completed(&self) -> impl Iterator<Item = (u32, u32, u64, SimTime)> + '_ {
        self.flows
            .iter()
            .map(|(_, f)| f)
            .filter(|f| f.receiver_done)
            .map(|f| (f.src, f.dst, f.bytes, SimTime(f.finish - f.start)))
    }

    /// Paced transport: bytes of `host`'s flows not yet handed to its NIC
    /// (packets of `payload` bytes).
    #[inline]
    pub(super) fn unsent(&self, host: u32, payload: u64) -> u64 {
        self.paced[host as usize]
            .iter()
            .map(|&f| {
                let fl = &self.flows[f as usize];
                fl.bytes - (fl.snd_nxt as u64 * payload).min(fl.bytes)
            })
            .sum()
    }

    /// Every held flow's sequence numbers are in order.
    pub(super) fn check(&self) -> Result<(), String> {
        for (i, f) in self.flows.iter() {
            let una = self.win.get(i).map_or(0, |w| w.snd_una);
            if una > f.snd_nxt || f.snd_nxt > f.npkts || f.rb.next_expected() > f.npkts {
                return Err(format!(
                    "net: flow {i}: una {} nxt {} received {} of {} packets",
                    una,
                    f.snd_nxt,
                    f.rb.next_expected(),
                    f.npkts
                ));
            }
        }
        Ok(())
    }
}

/// Wire bytes of data packet `seq` of flow `f`.
#[inline]
pub(super) fn wire_of(cfg: &NetConfig, f: &FlowState, seq: u32) -> u16 {
    let p = cfg.payload as u64;
    ((p.min(f.bytes - seq as u64 * p)) as u32 + cfg.header) as u16
}

impl<R: Router> Network<R> {
    /// Sends data packet `seq` of flow `f` from its source at `now`.
    #[inline]
    pub(super) fn send_data(&mut self, f: u32, seq: u32, now: u64) {
        let fl = &self.h.flows[f as usize];
        let class = self
            .cfg
            .priority
            .class(seq as u64 * self.cfg.payload as u64, fl.bytes);
        let pkt = Packet {
            ts: now,
            tail: 0,
            flow: f,
            seq,
            port: fl.src,
            node: 0,
            dst: fl.dst,
            sack: 0,
            tag: 0,
            wire: wire_of(&self.cfg, fl, seq),
            flags: 0,
            vc: class,
        };
        let src = fl.src;
        self.n.data_sent += 1;
        self.enqueue(src, pkt, now);
    }

    /// Paced transport: the NIC of `host` is idle; send its next packet.
    pub(super) fn pace(&mut self, host: u32, now: u64) {
        let Some(f) = self.h.paced[host as usize].pop_front() else {
            return;
        };
        let fl = &mut self.h.flows[f as usize];
        let seq = fl.snd_nxt;
        fl.snd_nxt += 1;
        if fl.snd_nxt < fl.npkts {
            self.h.paced[host as usize].push_back(f);
        } else {
            fl.sender_done = true;
        }
        self.send_data(f, seq, now);
    }

    /// DCTCP: whether the window allows flow `f` a new packet.
    #[inline]
    pub(super) fn may_send(fl: &FlowState, w: &WinState) -> bool {
        !fl.sender_done && fl.snd_nxt < fl.npkts && fl.snd_nxt - w.snd_una < w.cc.window()
    }

    /// DCTCP: the next packet the window allows flow `f` (skipping SACKed
    /// ones), taken. Inlined always (the round-robin NIC calls it per data
    /// packet).
    #[inline(always)]
    pub(super) fn next_seq(&mut self, f: u32) -> Option<u32> {
        let fl = &mut self.h.flows[f as usize];
        let w = &mut self.h.win[f as usize];
        while Self::may_send(fl, w) {
            let seq = fl.snd_nxt;
            fl.snd_nxt += 1;
            if !is_sacked(&w.sacked, seq) {
                return Some(seq);
            }
        }
        None
    }

    /// DCTCP: sends what the window allows (FIFO NIC), or offers the flow
    /// to its host's round-robin NIC.
    pub(super) fn try_send(&mut self, f: u32, now: u64) {
        if self.h.rr_nic {
            let fl = &mut self.h.flows[f as usize];
            let w = &mut self.h.win[f as usize];
            if !w.ready && Self::may_send(fl, w) {
                w.ready = true;
                let src = fl.src;
                self.h.paced[src as usize].push_back(f);
                self.nic_kick(src, now);
            }
        } else {
            while let Some(seq) = self.next_seq(f) {
                self.send_data(f, seq, now);
            }
        }
        self.arm_rto(f, now);
    }

    /// Round-robin NIC (lossy ports): how far ahead of the wire the NIC
    /// takes packets — one full frame's serialisation: the NIC holds the
    /// packet on the wire and the next one (its next descriptor, fetched
    /// while the current one is sent, as a NIC ring does). With none (a
    /// packet handed over only when the wire is free) two long DCTCP flows
    /// of different hosts sharing a bottleneck split it 86:100 instead of
    /// evenly (test `two_long_dctcp_flows_share_a_bottleneck_within_5_percent`,
    /// ECMP); the cause was not pinned down.
    #[inline]
    pub(super) fn nic_ahead(&self, host: u32) -> u64 {
        self.ports[host as usize].ser((self.cfg.payload + self.cfg.header) as u64, || {
            self.graph.ports[host as usize].rate
        })
    }

    /// Round-robin NIC: whether `host`'s NIC can take a packet at `now`.
    #[inline]
    pub(super) fn nic_free(&self, host: u32, now: u64) -> bool {
        if self.q.on() {
            !self.q.qports[host as usize].busy && !self.q.has_queue(host)
        } else {
            self.ports[host as usize].busy_until <= now + self.nic_ahead(host)
        }
    }

    /// Round-robin NIC: while `host`'s NIC is free, sends one packet of the
    /// next ready flow; if flows still wait, wakes up when the NIC frees
    /// (lossy ports: a timer; queued ports: the port's own "free" event).
    pub(super) fn nic_kick(&mut self, host: u32, now: u64) {
        while self.nic_free(host, now) {
            let Some(f) = self.h.paced[host as usize].pop_front() else {
                return;
            };
            self.h.win[f as usize].ready = false;
            let Some(seq) = self.next_seq(f) else {
                continue;
            };
            self.send_data(f, seq, now);
            self.arm_rto(f, now);
            let fl = &mut self.h.flows[f as usize];
            let w = &mut self.h.win[f as usize];
            if Self::may_send(fl, w) {
                w.ready = true;
                self.h.paced[host as usize].push_back(f);
            }
        }
        if !self.q.on()
            && !self.h.paced[host as usize].is_empty()
            && !self.h.nic_armed[host as usize]
        {
            self.h.nic_armed[host as usize] = true;
            let at = self.ports[host as usize].busy_until - self.nic_ahead(host);
            self.timers.schedule(SimTime(at), Timer::Nic(host));
        }
    }

    /// Inlined: called after every data packet sent (from `nic_kick` and
    /// `try_send`), and out of line its call cost about as much as its test.
    #[inline(always)]
    pub(super) fn arm_rto(&mut self, f: u32, now: u64) {
        let fl = &mut self.h.flows[f as usize];
        let w = &mut self.h.win[f as usize];
        if fl.sender_done || w.snd_una >= fl.snd_nxt {
            return;
        }
        if !w.rto_armed {
            w.rto_armed = true;
            w.rto_deadline = now + w.rto;
            self.timers.schedule(SimTime(w.rto_deadline), Timer::Rto(f));
        }
    }

    pub(super) fn rto_fired(&mut self, f: u32, now: u64) {
        if self.pf.is_some() {
            return self.pf_rto(f, now);
        }
        let fl = &mut self.h.flows[f as usize];
        let w = &mut self.h.win[f as usize];
        w.rto_armed = false;
        if fl.sender_done || w.snd_una >= fl.snd_nxt {
            return;
        }
        if w.rto_deadline > now {
            // Pushed back by progress since it was armed.
            w.rto_armed = true;
            self.timers.schedule(SimTime(w.rto_deadline), Timer::Rto(f));
            return;
        }
        // Timeout: go back to the first unacknowledged packet.
        self.n.timeouts += 1;
        self.n.spurious_timeouts += (fl.losses == w.losses_at_rto) as u64;
        w.losses_at_rto = fl.losses;
        w.cc.on_timeout(fl.snd_nxt);
        w.rto = (w.rto * 2).min(SimTime::S);
        w.in_recovery = false;
        w.dupacks = 0;
        fl.snd_nxt = w.snd_una;
        let before = self.n.data_sent;
        self.try_send(f, now);
        self.n.retransmissions += self.n.data_sent - before;
    }

    pub(super) fn on_data(&mut self, pkt: Packet, now: u64, rec: &mut Recorder) {
        if self.pf.is_some() {
            return self.pf_on_data(pkt, now, rec);
        }
        self.n.data_delivered += 1;
        let payload = self.cfg.payload as u64;
        let fl = &mut self.h.flows[pkt.flow as usize];
        let before = fl.rb.next_expected();
        let receipt = fl.rb.receive(pkt.seq);
        match receipt {
            Receipt::InOrder { released } => {
                let end = fl.rb.next_expected() as u64;
                let begin = end - released as u64;
                let bytes = (end * payload).min(fl.bytes) - begin * payload;
                rec.deliver_point(pkt.flow, SimTime(now), bytes);
                if let Some(log) = &mut self.ext.log {
                    log.push((pkt.flow, SimTime(now), bytes));
                }
                if !fl.receiver_done && fl.rb.is_complete(fl.npkts) {
                    fl.receiver_done = true;
                    rec.complete(pkt.flow, SimTime(now));
                    fl.finish = now;
                    self.h.active -= 1;
                    if self.h.retire {
                        self.h.retire_flows();
                    }
                }
            }
            Receipt::Early => self.n.early += 1,
            Receipt::Duplicate => self.n.duplicates += 1,
        }
        let Transport::Dctcp(d) = &self.cfg.transport else {
            return;
        };
        let (every, timeout, sack) = (d.delayed_ack, d.delayed_ack_timeout.0, d.sack);
        let ce = pkt.flags & FLAG_CE != 0;
        let in_order = matches!(receipt, Receipt::InOrder { .. });
        if every > 1 {
            let w = &mut self.h.win[pkt.flow as usize];
            if w.da_pending > 0 && (ce != w.da_ce || !in_order) {
                // Flush the pending ACK with its own CE state first.
                let (ts, old_ce) = (w.da_ts, w.da_ce);
                w.da_pending = 0;
                self.send_ack(pkt.flow, before, ts, old_ce, 0, now);
            }
            let fl = &mut self.h.flows[pkt.flow as usize];
            let w = &mut self.h.win[pkt.flow as usize];
            if in_order && !fl.receiver_done {
                w.da_pending += 1;
                w.da_ts = pkt.ts;
                w.da_ce = ce;
                if w.da_pending < every {
                    if w.da_pending == 1 {
                        w.da_deadline = now + timeout;
                        if !w.da_armed {
                            w.da_armed = true;
                            self.timers
                                .schedule(SimTime(now + timeout), Timer::DelAck(pkt.flow));
                        }
                    }
                    return;
                }
                w.da_pending = 0;
            }
        }
        // The data packet's slot becomes its ACK.
        let fl = &mut self.h.flows[pkt.flow as usize];
        let w = &mut self.h.win[pkt.flow as usize];
        w.da_pending = 0;
        let ack = fl.rb.next_expected();
        let (dst, src) = (fl.dst, fl.src);
        let mut a = pkt;
        a.flags = FLAG_ACK | if ce { FLAG_ECE } else { 0 };
        a.seq = ack;
        a.sack = if sack && matches!(receipt, Receipt::Early) {
            pkt.seq + 1
        } else {
            0
        };
        a.dst = src;
        a.port = dst;
        a.tail = 0;
        a.tag = 0;
        a.vc = 0;
        a.wire = self.cfg.ack_bytes as u16;
        self.n.acks += 1;
        self.enqueue(dst, a, now);
    }

    /// Sends an ACK of flow `f` from its receiver: cumulative `ack`, echo
    /// time `ts`, ECN-Echo `ece`, SACK field `sack`.
    pub(super) fn send_ack(&mut self, f: u32, ack: u32, ts: u64, ece: bool, sack: u32, now: u64) {
        let fl = &self.h.flows[f as usize];
        let a = Packet {
            ts,
            tail: 0,
            flow: f,
            seq: ack,
            port: fl.dst,
            node: 0,
            dst: fl.src,
            sack,
            tag: 0,
            wire: self.cfg.ack_bytes as u16,
            flags: FLAG_ACK | if ece { FLAG_ECE } else { 0 },
            vc: 0,
        };
        let dst = fl.dst;
        self.n.acks += 1;
        self.enqueue(dst, a, now);
    }

    pub(super) fn delack_fired(&mut self, f: u32, now: u64) {
        let fl = &mut self.h.flows[f as usize];
        let w = &mut self.h.win[f as usize];
        w.da_armed = false;
        if w.da_pending == 0 {
            return;
        }
        if w.da_deadline > now {
            w.da_armed = true;
            self.timers
                .schedule(SimTime(w.da_deadline), Timer::DelAck(f));
            return;
        }
        w.da_pending = 0;
        let (ack, ts, ce) = (fl.rb.next_expected(), w.da_ts, w.da_ce);
        self.send_ack(f, ack, ts, ce, 0, now);
    }

    pub(super) fn on_ack(&mut self, pkt: Packet, now: u64) {
        let Transport::Dctcp(d) = &self.cfg.transport else {
            unreachable!("ACKs only with a window transport")
        };
        let (dupthresh, rto_min, sack) = (d.dupack_threshold, d.rto_min.0, d.sack);
        let f = pkt.flow;
        let fl = &mut self.h.flows[f as usize];
        let w = &mut self.h.win[f as usize];
        if fl.sender_done {
            return;
        }
        if sack && pkt.sack > 0 {
            let s = pkt.sack - 1;
            if s >= w.snd_una && s < fl.npkts {
                if w.sacked.is_empty() {
                    w.sacked = vec![0; fl.npkts.div_ceil(64) as usize];
                }
                w.sacked[(s / 64) as usize] |= 1 << (s % 64);
                w.high_sack = w.high_sack.max(s + 1);
            }
        }
        // RTT estimate (RFC 6298) from the echoed timestamp.
        let r = now - pkt.ts;
        if w.srtt == 0 {
            w.srtt = r;
            w.rttvar = r / 2;
        } else {
            w.rttvar = (3 * w.rttvar + w.srtt.abs_diff(r)) / 4;
            w.srtt = (7 * w.srtt + r) / 8;
        }
        w.rto = (w.srtt + 4 * w.rttvar).max(rto_min);
        let ece = pkt.flags & FLAG_ECE != 0;
        let ack = pkt.seq;
        let mut resend = None;
        if ack > w.snd_una {
            let newly = ack - w.snd_una;
            w.snd_una = ack;
            fl.snd_nxt = fl.snd_nxt.max(ack);
            // Packets this ACK reports for the first time: those it covers
            // minus the ones duplicate ACKs already reported (all but the
            // packet that filled the hole, at most).
            let covered = w.reported.min(newly - 1);
            let delivered = newly - covered;
            w.reported -= covered;
            w.dupacks = 0;
            if w.in_recovery {
                if ack >= w.recover {
                    w.in_recovery = false;
                } else if sack {
                    resend = next_hole(fl, w);
                } else {
                    resend = Some(ack);
                }
            }
            w.cc.on_ack(newly, delivered, ece, ack, fl.snd_nxt);
            if w.snd_una >= fl.npkts {
                fl.sender_done = true;
                return;
            }
            w.rto_deadline = now + w.rto;
        } else if ack == w.snd_una && w.snd_una < fl.snd_nxt {
            w.dupacks += 1;
            w.reported = (w.reported + 1).min(fl.snd_nxt - w.snd_una);
            w.cc.on_ack(0, 1, ece, ack, fl.snd_nxt);
            if w.dupacks == dupthresh && !w.in_recovery {
                w.in_recovery = true;
                w.recover = fl.snd_nxt;
                w.rtx_next = ack + 1;
                w.cc.on_fast_retransmit(fl.snd_nxt);
                self.n.fast_retransmits += 1;
                resend = Some(ack);
            } else if w.in_recovery && sack {
                resend = next_hole(fl, w);
            }
        }
        if let Some(seq) = resend {
            self.n.retransmissions += 1;
            self.send_data(f, seq, now);
        }
        self.try_send(f, now);
    }
}

//! `Transport::Pfabric`: pFabric's switch queues and hosts on the network's
//! queued ports, with the semantics of the reference simulator YAPS
//! (NetSys/simulator) so that its results can be replayed:
//! - every port (host NICs included) is a [`PfQueue`] of `buffer` bytes
//!   (the bytes waiting, not the one on the wire; YAPS drops one packet per
//!   arrival, this queue as many as it takes to fit: the same in YAPS's
//!   case, whose data packets are all 1,500 B, see `net::pfabric`); a
//!   packet's priority is
//!   its flow's remaining bytes when sent (in the packet's `sack` field,
//!   saturating at 2^32 − 1 B), an ACK's is 0;
//! - a port picks its next packet after every packet arriving at the same
//!   instant has been queued (a timer at that instant; timers run after the
//!   events of their time), as YAPS orders queue processing after queuing;
//! - cut-through as YAPS has it: the next switch gets a packet one header
//!   serialisation plus propagation after it starts, and a port is busy for
//!   its own serialisation only, whatever the previous hop's rate (a fast
//!   port fed by a slow one is not held until the tail arrives); a host
//!   receives a packet one serialisation plus propagation after it starts;
//! - per-packet spraying decided at the source NIC when a packet (data or
//!   ACK) for another ToR starts: candidate `counter++ mod candidates` at
//!   the first switch, the counter per host from `spray_init`;
//! - a flow puts its whole window into its host's NIC queue at once; the
//!   window is `cwnd` plus the packets the last ACK reported held beyond
//!   the cumulative point (SACK); a new cumulative ACK grows the window
//!   ([`PfWindow`]) and pushes the timeout to `now + rto`; the only loss
//!   recovery is that fixed timeout (go back to the first unacknowledged
//!   packet, skipping what the receiver holds: YAPS reads the receiver's
//!   state, i.e. perfect SACK knowledge); duplicate ACKs update the SACK
//!   count and send nothing;
//! - the receiver ACKs every data packet at once (cumulative + the count of
//!   packets held beyond it); once the sender has its last ACK, the flow is
//!   complete (its FCT runs to the sender's receipt of that ACK) and later
//!   packets of it are discarded.

use super::hosts::wire_of;
use super::ports::{Packet, FLAG_ACK};
use super::{Network, Timer, Transport};
use crate::delivery::Receipt;
use crate::net::pfabric::{PfQueue, PfWindow};
use crate::net::route::Router;
use crate::recorder::Recorder;
use crate::units::SimTime;

/// The pFabric state of a network.
pub(super) struct Pf {
    /// Per port.
    queues: Vec<PfQueue<Packet>>,
    /// Per port: a `Timer::PfServe` is pending.
    serve_armed: Vec<bool>,
    /// Per host: its NIC's spray counter.
    spray: Vec<u64>,
    /// Per flow by id.
    flows: Vec<PfFlow>,
    rto: u64,
    init_cwnd: u32,
    max_cwnd: u32,
}

/// A pFabric flow's sender state (the receiver's is the flow's reorder
/// buffer).
struct PfFlow {
    /// Next packet to consider sending, first unacknowledged packet, one
    /// past the highest packet ever sent.
    next: u32,
    una: u32,
    high: u32,
    win: PfWindow,
    /// Packets the last ACK reported held beyond its cumulative point.
    sacked: u32,
    rto_deadline: u64,
    rto_armed: bool,
}

impl Pf {
    pub(super) fn new(ports: usize, hosts: usize, t: &Transport) -> Option<Box<Pf>> {
        let Transport::Pfabric(c) = t else {
            return None;
        };
        let mut spray = c.spray_init.clone();
        spray.resize(hosts, 0);
        Some(Box::new(Pf {
            queues: (0..ports).map(|_| PfQueue::default()).collect(),
            serve_armed: vec![false; ports],
            spray,
            flows: Vec::new(),
            rto: c.rto.0,
            init_cwnd: c.init_cwnd,
            max_cwnd: c.max_cwnd,
        }))
    }

    /// Port `p`'s waiting (bytes, packets).
    pub(super) fn held(&self, p: usize) -> (u64, u64) {
        (self.queues[p].bytes(), self.queues[p].len() as u64)
    }
}

impl<R: Router> Network<R> {
    fn pf(&mut self) -> &mut Pf {
        self.pf.as_deref_mut().expect("pFabric state")
    }

    /// A pFabric flow arrives: its initial window goes to its NIC.
    pub(super) fn pf_add_flow(&mut self, f: u32, now: u64) {
        let pf = self.pf();
        debug_assert_eq!(pf.flows.len(), f as usize);
        let win = PfWindow::new(pf.init_cwnd, pf.max_cwnd);
        pf.flows.push(PfFlow {
            next: 0,
            una: 0,
            high: 0,
            win,
            sacked: 0,
            rto_deadline: 0,
            rto_armed: false,
        });
        self.pf_send_pending(f, now);
    }

    /// Sends what the window allows, skipping packets the receiver holds;
    /// arms the timeout if it is not.
    fn pf_send_pending(&mut self, f: u32, now: u64) {
        let fl = &self.h.flows[f as usize];
        if fl.rb.received() >= fl.npkts {
            return;
        }
        loop {
            let fl = &self.h.flows[f as usize];
            let pf = self.pf.as_deref_mut().expect("pFabric state");
            let rto = pf.rto;
            let s = &mut pf.flows[f as usize];
            if s.next >= fl.npkts || s.next >= s.una + s.win.cwnd + s.sacked {
                break;
            }
            let seq = s.next;
            s.next += 1;
            let arm = !s.rto_armed;
            if arm {
                s.rto_armed = true;
                s.rto_deadline = now + rto;
            }
            let held = fl.rb.holds(seq);
            if arm {
                self.timers.schedule(SimTime(now + rto), Timer::Rto(f));
            }
            if !held {
                self.pf_send(f, seq, now);
            }
        }
    }

    fn pf_send(&mut self, f: u32, seq: u32, now: u64) {
        let payload = self.cfg.payload as u64;
        let fl = &self.h.flows[f as usize];
        let (src, dst, bytes) = (fl.src, fl.dst, fl.bytes);
        let wire = wire_of(&self.cfg, fl, seq);
        let s = &mut self.pf.as_deref_mut().expect("pFabric state").flows[f as usize];
        let done = (s.una as u64 + s.sacked as u64) * payload;
        let prio = bytes.saturating_sub(done).min(u32::MAX as u64) as u32;
        if seq < s.high {
            self.n.retransmissions += 1;
        }
        s.high = s.high.max(seq + 1);
        self.n.data_sent += 1;
        let pkt = Packet {
            ts: now,
            flow: f,
            seq,
            port: src,
            dst,
            sack: prio,
            wire,
            ..Packet::default()
        };
        self.pf_enqueue(src, pkt, now);
    }

    /// Queues `pkt` at port `p` (a NIC or a switch port): a full queue
    /// drops its least urgent packet; an idle port picks its next packet
    /// once everything arriving now is queued.
    pub(super) fn pf_enqueue(&mut self, p: u32, pkt: Packet, now: u64) {
        let prio = if pkt.flags & FLAG_ACK != 0 {
            0
        } else {
            pkt.sack as u64
        };
        let buffer = self.cfg.buffer;
        let pf = self.pf.as_deref_mut().expect("pFabric state");
        let q = &mut pf.queues[p as usize];
        let (qload, counts, n, flows) = (
            &mut self.q.qload[p as usize],
            &mut self.counts[p as usize],
            &mut self.n,
            &mut self.h.flows,
        );
        *qload += pkt.wire as u64;
        q.push(prio, pkt.flow, pkt.wire as u32, pkt, buffer, |d| {
            *qload -= d.wire as u64;
            counts.drops += 1;
            n.drops += 1;
            flows[d.flow as usize].losses += 1;
        });
        let (held, len) = (q.bytes(), q.len() as u32);
        self.q.qports[p as usize].queued = len;
        let port = &mut self.ports[p as usize];
        port.peak = port.peak.max(held);
        if len > 0 && !self.q.qports[p as usize].busy {
            self.pf_arm_serve(p, now);
        }
    }

    /// Port `p` is free with packets waiting: it picks one once everything
    /// arriving now is queued.
    pub(super) fn pf_arm_serve(&mut self, p: u32, now: u64) {
        let pf = self.pf();
        if !pf.serve_armed[p as usize] {
            pf.serve_armed[p as usize] = true;
            self.timers.schedule(SimTime(now), Timer::PfServe(p));
        }
    }

    /// Port `p` starts its most urgent packet (if it is free).
    pub(super) fn pf_serve(&mut self, p: u32, now: u64) {
        let hosts = self.graph.hosts;
        let pf = self.pf.as_deref_mut().expect("pFabric state");
        pf.serve_armed[p as usize] = false;
        if self.q.qports[p as usize].busy {
            return;
        }
        let Some(mut pkt) = pf.queues[p as usize].pop() else {
            return;
        };
        self.q.qports[p as usize].queued = pf.queues[p as usize].len() as u32;
        // A port is busy for its own serialisation only.
        pkt.tail = 0;
        if p < hosts {
            let c = self.router.candidates(self.ports[p as usize].to, pkt.dst);
            if c.count > 1 {
                let k = &mut pf.spray[p as usize];
                pkt.tag = (*k % c.count as u64) as u32;
                *k = k.wrapping_add(1);
            }
        }
        self.transmit(p, pkt, 0, now);
    }

    /// A data packet reaches its destination host.
    pub(super) fn pf_on_data(&mut self, pkt: Packet, now: u64, rec: &mut Recorder) {
        self.n.data_delivered += 1;
        let payload = self.cfg.payload as u64;
        let fl = &mut self.h.flows[pkt.flow as usize];
        if fl.sender_done {
            // YAPS discards what arrives after the flow finished.
            return;
        }
        match fl.rb.receive(pkt.seq) {
            Receipt::InOrder { released } => {
                let end = fl.rb.next_expected() as u64;
                let begin = end - released as u64;
                let bytes = (end * payload).min(fl.bytes) - begin * payload;
                rec.deliver(pkt.flow, SimTime(now), bytes);
            }
            Receipt::Early => self.n.early += 1,
            Receipt::Duplicate => self.n.duplicates += 1,
        }
        let held = fl.rb.held();
        self.pf_ack(pkt.flow, pkt.ts, held, now);
    }

    /// Flow `f`'s receiver acknowledges what it has in order, echoing `ts`,
    /// with `sack` (the packets it holds beyond) for the sender.
    #[inline]
    fn pf_ack(&mut self, f: u32, ts: u64, sack: u32, now: u64) {
        let fl = &self.h.flows[f as usize];
        let ack = Packet {
            ts,
            flow: f,
            seq: fl.rb.next_expected(),
            port: fl.dst,
            dst: fl.src,
            sack,
            wire: self.cfg.ack_bytes as u16,
            flags: FLAG_ACK,
            ..Packet::default()
        };
        let dst = fl.dst;
        self.n.acks += 1;
        self.pf_enqueue(dst, ack, now);
    }

    /// An ACK reaches the sender.
    pub(super) fn pf_on_ack(&mut self, pkt: Packet, now: u64, rec: &mut Recorder) {
        let f = pkt.flow;
        if self.h.flows[f as usize].sender_done {
            return;
        }
        let npkts = self.h.flows[f as usize].npkts;
        let rto = self.pf().rto;
        let s = &mut self.pf().flows[f as usize];
        s.sacked = pkt.sack;
        s.next = s.next.max(pkt.seq);
        if pkt.seq > s.una {
            s.una = pkt.seq;
            s.win.on_new_ack();
            self.pf_send_pending(f, now);
            let s = &mut self.pf().flows[f as usize];
            if s.una < npkts {
                s.rto_deadline = now + rto;
            } else {
                s.rto_armed = false;
            }
        }
        if pkt.seq >= npkts {
            let fl = &mut self.h.flows[f as usize];
            fl.sender_done = true;
            fl.receiver_done = true;
            fl.finish = now;
            self.h.active -= 1;
            rec.complete(f, SimTime(now));
        }
    }

    /// Flow `f`'s timeout fires (or was pushed back).
    pub(super) fn pf_rto(&mut self, f: u32, now: u64) {
        if self.h.flows[f as usize].sender_done {
            return;
        }
        let rto = self.pf().rto;
        let s = &mut self.pf().flows[f as usize];
        if s.rto_deadline > now {
            let at = s.rto_deadline;
            self.timers.schedule(SimTime(at), Timer::Rto(f));
            return;
        }
        s.win.on_timeout();
        s.next = s.una;
        s.rto_deadline = now + rto;
        self.n.timeouts += 1;
        self.pf_send_pending(f, now);
        self.timers.schedule(SimTime(now + rto), Timer::Rto(f));
        let fl = &self.h.flows[f as usize];
        if fl.rb.received() >= fl.npkts {
            // Every packet arrived but the last ACK was lost (YAPS would
            // wait forever: ACKs, of priority 0, are never dropped there in
            // practice): the receiver acknowledges again.
            self.pf_ack(f, 0, 0, now);
        }
    }

    /// pFabric's own invariants: no queue above its buffer; every flow's
    /// sender state within its packets.
    pub(super) fn pf_check(&self) -> Result<(), String> {
        let Some(pf) = self.pf.as_deref() else {
            return Ok(());
        };
        for (i, q) in pf.queues.iter().enumerate() {
            if q.bytes() > self.cfg.buffer {
                return Err(format!(
                    "net: pFabric port {i} holds {} B, above the {} B buffer",
                    q.bytes(),
                    self.cfg.buffer
                ));
            }
        }
        for (i, f) in self.h.flows.iter() {
            let s = &pf.flows[i];
            if s.una > s.next.max(s.una) || s.high > f.npkts || s.una > f.npkts {
                return Err(format!(
                    "net: pFabric flow {i}: una {} next {} high {} of {} packets",
                    s.una, s.next, s.high, f.npkts
                ));
            }
        }
        Ok(())
    }
}

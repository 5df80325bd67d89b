//! Queued ports and lossless flow control: the state of the ports that hold
//! real FIFOs (PFC, credits, priority classes) and the machinery that
//! returns credits and frees ports lazily.
//!
//! Lossless ports cannot commit departures on arrival: a PAUSE may stop
//! the port before a queued packet starts. With `FlowControl::Pfc` every
//! port holds a real FIFO ([`pool::List`](crate::pool::List) through the
//! packet pool) and a second event per packet-hop, "port free", starts the
//! next packet unless the port is paused. Switches account buffered bytes
//! per ingress link; above `xoff` a PAUSE reaches the upstream port
//! `propagation + pause_delay` later, and below `xon` a RESUME
//! `propagation + resume_delay` later (timers on the network's timer
//! wheel). Each ingress link owns `buffer` bytes; `layout` checks that
//! `xoff` plus the bytes one link round trip can still deliver after it
//! fits, so nothing is ever dropped.
//!
//! Credit-based flow control (`FlowControl::Credit`, HPC style) uses the
//! same lossless machinery with per-(port, VC) FIFOs. Credits are counted
//! in **bytes**: the receiving node has `vc_buffer` bytes of input buffer
//! per (incoming link, VC), and the link's sender starts with that many
//! bytes of credit per VC. A port sends a packet only when it holds credits
//! for all the packet's wire bytes on the packet's VC, and takes them at
//! the start of transmission; ports serve their VCs round-robin, skipping
//! VCs whose head packet lacks credits (no head-of-line blocking across
//! VCs). A switch holds a packet in the buffer of the (link, VC) it arrived
//! by until its last byte has left on the output port; then the credit
//! travels back, arriving `propagation + credit_delay` later. Hosts consume
//! what they receive at once (credit returned on arrival). Nothing is ever
//! dropped.
//!
//! A credit is an event only when its port waits for credits; otherwise
//! its lane holds it until the port next looks, at exactly the place in
//! the event order its event would have had ([`Queues::return_credit`];
//! the calendar's entry count and the `events` a run reports are therefore
//! smaller, nothing else changes). Likewise the port-free event (lazy
//! port-free, with lazy credits): a switch port that finishes a packet
//! with nothing queued, or a paced NIC with nothing left to pace, frees
//! without an event; its load, the ingress buffer its packet leaves and
//! that buffer's credit are applied where they are next read, at exactly
//! the place in the event order the event would have had (see
//! [`Queues::hold_release`]; only `events` and `peak_packets_in_flight`
//! change).
//!
//! The methods that order a lazy effect against the event order take the
//! network's calendar and its `bound`: every event before `bound` (time,
//! then payload) has happened, none after.

use super::ports::*;
use super::stats::Counters;
use super::{FlowControl, NetConfig, MAX_CLASSES};
use crate::net::calendar::CalendarQueue;
use crate::pool::Pool;

/// What an arriving packet's ingress buffer did with it
/// ([`Queues::admit`]).
pub(super) enum Admit {
    Held,
    Dropped,
    /// Held, and a PAUSE (frame sequence number, pause delay in ps) is due
    /// upstream.
    Pause(u32, u64),
}

/// The queued ports of a network (empty vectors when its ports are lossy
/// and classless).
pub(super) struct Queues {
    pub(super) qports: Vec<QPort>,
    /// Queued ports: bytes queued or on the wire, + 1 while busy (the
    /// `load` adaptive routing compares: a dense array, so that reading a
    /// switch's candidate ports touches one line, not two per port).
    pub(super) qload: Vec<u64>,
    /// Lanes per queued port: VCs with credits, else priority classes (1
    /// without either); per (port, lane) state.
    pub(super) vcs: u32,
    pub(super) lanes: Vec<Lane>,
    /// The queued packets, threaded through the lanes' lists.
    pub(super) pool: Pool<Packet>,
    pub(super) credit: bool,
    /// Credits are returned lazily (every link's credit takes > 0 ps).
    pub(super) lazy: bool,
    /// Lazy port-free (with lazy credits): a switch port that finishes a
    /// packet with nothing queued frees without an event; see
    /// [`Queues::hold_release`].
    pub(super) lazy_pf: bool,
    /// PFC: every lane of a port can be paused.
    pfc: bool,
    /// Credits: per port, its credit return time (propagation +
    /// `credit_delay`) where it does not fit `QPort::credit_after`.
    credit_after_long: Vec<u64>,
    /// The latest arrival of a credit held lazily.
    pub(super) lazy_last_at: u64,
    /// Credit events in the calendar.
    pub(super) credit_events: u64,
    /// PFC, per port: pause time (ps) and pauses.
    pub(super) pfc_time: Vec<[u64; 2]>,
    /// PFC pause time per class, ps.
    pub(super) class_pause: Vec<u64>,
}

impl Queues {
    /// The queued ports of `ports` (none unless `queued`), with `vcs` lanes
    /// each and `vc_buffer` bytes of credit per lane.
    pub(super) fn new(
        cfg: &NetConfig,
        ports: &[Port],
        queued: bool,
        vcs: u32,
        vc_buffer: u64,
    ) -> Self {
        let n = if queued { ports.len() } else { 0 };
        let credit_delay = match cfg.flow_control {
            FlowControl::Credit(c) => c.credit_delay.0,
            _ => 0,
        };
        let classes = cfg.priority.classes();
        debug_assert!(classes <= MAX_CLASSES);
        let pfc = matches!(cfg.flow_control, FlowControl::Pfc(_));
        let mut q = Queues {
            qports: ports[..n]
                .iter()
                .map(|p| QPort {
                    credit_after: u32::try_from(p.prop + credit_delay).unwrap_or(u32::MAX),
                    ..QPort::default()
                })
                .collect(),
            qload: vec![0; n],
            vcs,
            lanes: vec![
                Lane {
                    credits: vc_buffer,
                    ..Lane::default()
                };
                n * vcs as usize
            ],
            pool: Pool::new(),
            credit: vc_buffer > 0,
            lazy: false,
            lazy_pf: false,
            pfc,
            credit_after_long: ports[..n].iter().map(|p| p.prop + credit_delay).collect(),
            lazy_last_at: 0,
            credit_events: 0,
            pfc_time: if pfc {
                vec![[0; 2]; ports.len()]
            } else {
                Vec::new()
            },
            class_pause: vec![0; classes as usize],
        };
        q.set_lazy(true);
        q
    }

    /// Whether the ports hold real FIFOs (lossless, or priority classes).
    #[inline]
    pub(super) fn on(&self) -> bool {
        !self.qports.is_empty()
    }

    /// Lazy credits on where possible (every link's credit takes time to
    /// come back), and lazy port-free with them; or both off.
    #[inline]
    pub(super) fn set_lazy(&mut self, on: bool) {
        self.lazy = on && self.credit && self.qports.iter().all(|q| q.credit_after > 0);
        self.lazy_pf = self.lazy;
    }

    /// Bytes queued at port `p` or on its wire.
    #[inline]
    pub(super) fn occ(&self, p: u32) -> u64 {
        self.qload[p as usize] - self.qports[p as usize].busy as u64
    }

    /// Whether port `p` has packets waiting.
    #[inline]
    pub(super) fn has_queue(&self, p: u32) -> bool {
        self.qports[p as usize].queued != 0
    }

    /// PFC: whether every lane of port `p` is paused (only PFC pauses).
    #[inline]
    pub(super) fn all_paused(&self, p: u32) -> bool {
        if !self.pfc {
            return false;
        }
        let b = (p * self.vcs) as usize;
        self.lanes[b..b + self.vcs as usize]
            .iter()
            .all(|l| l.paused)
    }

    /// PFC: frame `seq` (a PAUSE, or a RESUME) for lane `lane` of port
    /// `port` takes effect at `now` unless a later frame already did; true
    /// if it resumed the lane (the port may start again).
    #[inline]
    pub(super) fn pfc_frame(
        &mut self,
        port: u32,
        lane: u8,
        pause: bool,
        seq: u32,
        now: u64,
    ) -> bool {
        let l = &mut self.lanes[(port * self.vcs + lane as u32) as usize];
        if seq <= l.applied_seq {
            return false;
        }
        l.applied_seq = seq;
        if pause && !l.paused {
            l.paused = true;
            l.paused_since = now;
            self.pfc_time[port as usize][1] += 1;
        } else if !pause && l.paused {
            l.paused = false;
            let d = now - l.paused_since;
            self.pfc_time[port as usize][0] += d;
            self.class_pause[lane as usize] += d;
            return true;
        }
        false
    }

    /// A packet of `wire` bytes for port `p` arrives at a switch by link
    /// `inp` on lane `lane`: it is held in that link's buffer of the lane
    /// (credits: its sender held credits for it, so it fits; PFC: dropped
    /// if the link's buffer is full, and a PAUSE is due above `xoff`), or
    /// (priority classes, lossy) dropped if port `p` holds a full buffer.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn admit(
        &mut self,
        cfg: &NetConfig,
        p: u32,
        inp: u32,
        lane: u8,
        wire: u64,
        n: &mut Counters,
        bound: &(u64, Packet),
    ) -> Admit {
        let b = inp * self.vcs + lane as u32;
        match cfg.flow_control {
            FlowControl::Credit(c) => {
                if self.lazy_pf {
                    self.settle_rels(inp, bound);
                }
                let l = &mut self.lanes[b as usize];
                l.far += wire;
                n.peak_vc_bytes = n.peak_vc_bytes.max(l.far);
                assert!(l.far <= c.vc_buffer, "net: VC buffer {b} overrun");
                let qi = &mut self.qports[inp as usize];
                qi.ingress += wire;
                qi.peak_ingress = qi.peak_ingress.max(qi.ingress);
                Admit::Held
            }
            FlowControl::Pfc(pfc) => {
                let qi = &mut self.qports[inp as usize];
                if qi.ingress + wire > cfg.buffer {
                    return Admit::Dropped;
                }
                qi.ingress += wire;
                qi.peak_ingress = qi.peak_ingress.max(qi.ingress);
                let l = &mut self.lanes[b as usize];
                l.far += wire;
                if l.far > pfc.xoff && !l.pause_sent {
                    l.pause_sent = true;
                    l.frame_seq += 1;
                    return Admit::Pause(l.frame_seq, pfc.pause_delay.0);
                }
                Admit::Held
            }
            FlowControl::None => {
                // Priority classes on a lossy network: drop-tail on the
                // bytes the output port holds (queued or on the wire).
                if self.occ(p) + wire > cfg.buffer {
                    Admit::Dropped
                } else {
                    Admit::Held
                }
            }
        }
    }

    /// A switch's packet of `wire` bytes has left: its bytes leave the
    /// ingress buffer `inp` (link · lanes + lane) at `now`. Credits: their
    /// credit starts back; PFC: `Some((seq, resume_delay))` if a RESUME
    /// is due (the buffer fell to `xon`).
    #[inline(always)]
    pub(super) fn release(
        &mut self,
        cfg: &NetConfig,
        inp: u32,
        wire: u64,
        now: u64,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) -> Option<(u32, u64)> {
        let link = inp / self.vcs;
        match cfg.flow_control {
            FlowControl::Credit(_) => {
                let l = &mut self.lanes[inp as usize];
                l.far = l.far.checked_sub(wire).expect("net: VC buffer underflow");
                let qi = &mut self.qports[link as usize];
                qi.ingress = qi
                    .ingress
                    .checked_sub(wire)
                    .expect("net: ingress underflow");
                self.return_credit(inp, wire, now, events, bound);
                None
            }
            FlowControl::Pfc(pfc) => {
                let qi = &mut self.qports[link as usize];
                qi.ingress = qi
                    .ingress
                    .checked_sub(wire)
                    .expect("net: ingress underflow");
                let l = &mut self.lanes[inp as usize];
                l.far = l.far.checked_sub(wire).expect("net: ingress underflow");
                if l.pause_sent && l.far <= pfc.xon {
                    l.pause_sent = false;
                    l.frame_seq += 1;
                    return Some((l.frame_seq, pfc.resume_delay.0));
                }
                None
            }
            FlowControl::None => None,
        }
    }

    /// Credits: port `p`'s credit return time (propagation +
    /// `credit_delay`), ps. Inlined always: out of line (as `#[inline]`
    /// left it) it was ~1 % of the multi-butterfly's instructions.
    #[inline(always)]
    fn credit_after(&self, p: u32) -> u64 {
        let c = self.qports[p as usize].credit_after;
        if c != u32::MAX {
            c as u64
        } else {
            self.credit_after_long[p as usize]
        }
    }

    /// Credits: `bytes` of VC buffer `b` (= link · vcs + vc) at the far end of
    /// `link` free at `now`; the credit reaches the link's sender one
    /// propagation plus `credit_delay` later.
    ///
    /// Lazily, when it can: a credit only matters when its port next looks
    /// at its credits ([`Queues::pop_next`]) or when the port waits for
    /// credits (then its arrival starts the port). So the lane keeps one
    /// credit in flight (`pend`, reaching the port at `pend_at`), taken
    /// into `credits` by the first look at or after its arrival in the
    /// calendar's order (time, then payload: `bound`); if the port is
    /// waiting for credits now, or the lane already holds a credit still on
    /// its way, the credit is an event in the calendar as before, and a
    /// port that comes to wait for credits turns its lanes' held credits
    /// into events ([`Queues::wake_credits`]). Every credit thus reaches
    /// its port at the same point of the event order as an event would, and
    /// the round-robin choices and `credit_stalls` are unchanged.
    #[inline]
    pub(super) fn return_credit(
        &mut self,
        b: u32,
        bytes: u64,
        now: u64,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) {
        let link = b / self.vcs;
        let at = now + self.credit_after(link);
        let q = &self.qports[link as usize];
        let vc = (b % self.vcs) as u8;
        if self.lazy && (q.busy || q.queued == 0) {
            self.absorb_credit(b, bound);
            let l = &mut self.lanes[b as usize];
            if l.pend == 0 {
                l.pend = bytes as u16;
                l.pend_at = at;
                self.lazy_last_at = self.lazy_last_at.max(at);
                return;
            }
        }
        events.push(at, credit_event(link, vc, bytes as u16));
        self.credit_events += 1;
    }

    /// Credits: packet `pkt` left the buffer it arrived in at once (a host
    /// consumed it, or it was lost on its link): its credit starts back.
    #[inline]
    pub(super) fn consumed(
        &mut self,
        pkt: &Packet,
        now: u64,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) {
        let b = pkt.port * self.vcs + pkt.vc as u32;
        self.return_credit(b, pkt.wire as u64, now, events, bound);
    }

    /// Credits: a credit for `bytes` of VC `vc` reaches port `p` at `at`
    /// (an event: sent as one, or a lane's held credit woken). True if the
    /// port is idle (it may start).
    #[inline]
    pub(super) fn credit_arrives(&mut self, p: u32, vc: u8, bytes: u64, at: u64) -> bool {
        self.credit_events -= 1;
        let l = &mut self.lanes[(p * self.vcs + vc as u32) as usize];
        if l.pend_woken && l.pend_at == at && l.pend as u64 == bytes {
            // The held credit's own event.
            l.pend_woken = false;
            l.pend = 0;
        }
        l.credits = l.credits.checked_add(bytes).expect("net: credit overflow");
        !self.qports[p as usize].busy
    }

    /// Lazy credits: takes lane `b`'s held credit into its credits if it has
    /// reached the port (before `bound`).
    #[inline]
    pub(super) fn absorb_credit(&mut self, b: u32, bound: &(u64, Packet)) {
        let port = b / self.vcs;
        let vc = (b % self.vcs) as u8;
        let l = &mut self.lanes[b as usize];
        if l.pend != 0 && !l.pend_woken && (l.pend_at, credit_event(port, vc, l.pend)) < *bound {
            l.credits = l
                .credits
                .checked_add(l.pend as u64)
                .expect("net: credit overflow");
            l.pend = 0;
        }
    }

    /// Lazy credits: port `p` waits for credits; the credits its lanes hold
    /// that have reached it are taken, the others become events (their
    /// arrival starts the port, as an event's would).
    #[inline]
    fn wake_credits(&mut self, p: u32, events: &mut CalendarQueue<Packet>, bound: &(u64, Packet)) {
        for v in 0..self.vcs {
            let b = p * self.vcs + v;
            self.absorb_credit(b, bound);
            let l = &mut self.lanes[b as usize];
            if l.pend != 0 && !l.pend_woken {
                l.pend_woken = true;
                let (at, bytes) = (l.pend_at, l.pend);
                events.push(at, credit_event(p, v as u8, bytes));
                self.credit_events += 1;
            }
        }
        if self.lazy_pf {
            // The credits of the releases held with this link: taken if
            // they have arrived, events otherwise.
            self.absorb_rels(p, None, bound);
            let ca = self.credit_after(p);
            for i in 0..RELS {
                let r = &mut self.qports[p as usize].rel[i];
                if r.st != 0 && r.st & REL_CREDIT == 0 {
                    r.st |= REL_CREDIT;
                    let (at, ev) = (r.end + ca, credit_event(p, r.vc, r.wire));
                    if r.st == REL_DONE {
                        r.st = 0;
                    }
                    events.push(at, ev);
                    self.credit_events += 1;
                }
            }
        }
    }

    /// Pops the packet port `p` sends next, if any may go, with its lane.
    /// Credits: round-robin over its VCs whose head packet fits the credits
    /// held for that VC (and takes them); `stalls` counts a look that
    /// found only VCs waiting for credits. Otherwise strict priority: the
    /// first lane (class) that has a packet and is not paused.
    #[inline(always)]
    pub(super) fn pop_next(
        &mut self,
        p: u32,
        stalls: &mut u64,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) -> Option<(u32, u8)> {
        let lanes = self.vcs;
        let base = p * lanes;
        if !self.credit {
            for v in 0..lanes {
                let l = &mut self.lanes[(base + v) as usize];
                if l.paused || l.queue.is_empty() {
                    continue;
                }
                let mut list = l.queue;
                let pi = self.pool.pop_front(&mut list);
                self.lanes[(base + v) as usize].queue = list;
                self.qports[p as usize].queued -= 1;
                return pi.map(|pi| (pi, v as u8));
            }
            return None;
        }
        let rr = self.qports[p as usize].rr as u32;
        let mut waiting = false;
        for k in 0..lanes {
            let v = (rr + k) % lanes;
            let b = (base + v) as usize;
            let Some(head) = self.lanes[b].queue.front() else {
                continue;
            };
            let wire = self.pool[head].wire as u64;
            if self.lazy && self.lanes[b].credits < wire {
                self.absorb_credit(b as u32, bound);
                if self.lazy_pf && self.lanes[b].credits < wire {
                    self.absorb_rels(p, Some(v as u8), bound);
                }
            }
            let l = &mut self.lanes[b];
            if l.credits < wire {
                waiting = true;
                continue;
            }
            l.credits -= wire;
            let mut list = l.queue;
            let pi = self.pool.pop_front(&mut list);
            self.lanes[b].queue = list;
            let q = &mut self.qports[p as usize];
            q.rr = ((v + 1) % lanes) as u8;
            q.queued -= 1;
            return pi.map(|pi| (pi, v as u8));
        }
        *stalls += waiting as u64;
        if waiting && self.lazy {
            self.wake_credits(p, events, bound);
        }
        None
    }

    // ---- lazy port-free --------------------------------------------------
    //
    // Eagerly, a queued port's transmission ends in a port-free event: the
    // port's load drops, the packet's bytes leave the ingress buffer of the
    // (link, VC) it came by, and their credit starts back to the link's
    // sender. When a switch port finishes with nothing queued behind it,
    // that event does nothing else, and the three effects are applied
    // lazily instead, each at the first place that looks at what it
    // changes, and only if its own event would have come before that
    // place in the calendar's order (`before(bound, ..)`, time then
    // payload, as the event would have been ordered):
    // - the port's load and busy flag: adaptive routing reads the load as
    //   it would be ([`eff_load`]); an enqueue settles the port, and if the
    //   port is still sending, its free becomes an event after all
    //   ([`Queues::settle_port`]), so what waits starts on time;
    // - the ingress buffer: settled when the next packet arrives by the
    //   same link (the only place its bytes and peaks are read), from the
    //   release held in the link's `QPort::rel` ([`Queues::settle_rels`]);
    // - the credit: as a lazily returned credit, taken by the sender's next
    //   look at that VC's credits ([`Queues::absorb_rels`]), or an event if
    //   the sender waits for credits ([`Queues::wake_credits`]).
    // A link holds `RELS` releases; a transmission whose release finds no
    // free slot ends in a port-free event as before. Every choice, time and
    // statistic is therefore unchanged; only the calendar's entries (the
    // run's `events` and `peak_packets_in_flight`) are fewer.

    /// Lazy port-free: applies what is due of the releases held with link
    /// `u`: the buffer part, and the credit if it has arrived too (then
    /// the slot is free again).
    #[inline(always)]
    pub(super) fn settle_rels(&mut self, u: u32, bound: &(u64, Packet)) {
        if self.qports[u as usize].rel.iter().all(|r| r.st == 0) {
            return;
        }
        let ca = self.credit_after(u);
        for i in 0..RELS {
            let r = self.qports[u as usize].rel[i];
            if r.st == 0 {
                continue;
            }
            if r.st & REL_FAR == 0 {
                if !before(bound, r.end, pf_event(r.port)) {
                    // Nor has its credit (later still) arrived.
                    continue;
                }
                self.release_far(u, i);
            }
            if r.st & REL_CREDIT == 0 && before(bound, r.end + ca, credit_event(u, r.vc, r.wire)) {
                self.credit_rel(u, i, r);
            }
        }
    }

    /// Lazy port-free: the credit of release `i` (= `r`) of link `u` has
    /// arrived: into its lane's credits, and the slot is free again.
    #[inline]
    fn credit_rel(&mut self, u: u32, i: usize, r: Rel) {
        let l = &mut self.lanes[(u * self.vcs + r.vc as u32) as usize];
        l.credits = l
            .credits
            .checked_add(r.wire as u64)
            .expect("net: credit overflow");
        self.qports[u as usize].rel[i].st = 0;
    }

    /// Lazy port-free: release `i` of link `u` leaves its buffer.
    #[inline]
    fn release_far(&mut self, u: u32, i: usize) {
        let q = &mut self.qports[u as usize];
        let r = &mut q.rel[i];
        let wire = r.wire as u64;
        let b = (u * self.vcs + r.vc as u32) as usize;
        r.st |= REL_FAR;
        if r.st == REL_DONE {
            r.st = 0;
        }
        q.ingress = q.ingress.checked_sub(wire).expect("net: ingress underflow");
        let l = &mut self.lanes[b];
        l.far = l.far.checked_sub(wire).expect("net: VC buffer underflow");
    }

    /// Lazy port-free: takes into their lanes' credits the credits of link
    /// `u`'s held releases (of VC `vc`, or all) that have arrived.
    #[inline]
    pub(super) fn absorb_rels(&mut self, u: u32, vc: Option<u8>, bound: &(u64, Packet)) {
        let ca = self.credit_after(u);
        for i in 0..RELS {
            let r = self.qports[u as usize].rel[i];
            if r.st == 0 || r.st & REL_CREDIT != 0 || vc.is_some_and(|v| v != r.vc) {
                continue;
            }
            if !before(bound, r.end + ca, credit_event(u, r.vc, r.wire)) {
                continue;
            }
            if r.st & REL_FAR == 0 {
                self.release_far(u, i);
            }
            self.credit_rel(u, i, r);
        }
    }

    /// Lazy port-free: holds the release of a packet of `wire` bytes that
    /// came by link `u` on VC `vc` and leaves on port `p` at `end`; false
    /// if the link has no free slot (the port's free is then an event).
    /// Inlined always (into `transmit`): out of line, a call per switch
    /// transmission.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn hold_release(
        &mut self,
        u: u32,
        vc: u8,
        p: u32,
        end: u64,
        wire: u16,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) -> bool {
        let i = match self.qports[u as usize].rel.iter().position(|r| r.st == 0) {
            Some(i) => i,
            None => {
                // Full: apply what is due, then look again.
                self.settle_rels(u, bound);
                match self.qports[u as usize].rel.iter().position(|r| r.st == 0) {
                    Some(i) => i,
                    None => return false,
                }
            }
        };
        let q = &mut self.qports[u as usize];
        q.rel[i] = Rel {
            end,
            port: p,
            wire,
            vc,
            st: REL_LIVE,
        };
        // The sender waits for credits: its credit is an event (as
        // `return_credit` would make it; a sender that starts waiting later
        // wakes it).
        let waiting = !q.busy && q.queued != 0;
        let at = end + self.credit_after(u);
        self.lazy_last_at = self.lazy_last_at.max(at);
        if waiting {
            self.qports[u as usize].rel[i].st |= REL_CREDIT;
            events.push(at, credit_event(u, vc, wire));
            self.credit_events += 1;
        }
        true
    }

    /// Lazy port-free: before port `p` is given a packet, its lazy free is
    /// applied if due; if the port is still sending, its free becomes an
    /// event (the packet will wait for it).
    #[inline(always)]
    pub(super) fn settle_port(
        &mut self,
        p: u32,
        events: &mut CalendarQueue<Packet>,
        bound: &(u64, Packet),
    ) {
        let w = self.qload[p as usize];
        if w & LZ_FLAG == 0 {
            return;
        }
        let (end, wire) = lz_parts(w);
        if before(bound, end, pf_event(p)) {
            self.qload[p as usize] = 0;
            self.qports[p as usize].busy = false;
        } else {
            self.qload[p as usize] = wire + 1;
            events.push(end, pf_event(p));
        }
    }
}

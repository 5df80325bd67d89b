//! What a port is made of: the packet (in flight inside its arrival
//! event, queued in the pool), a port's hot half line and its counters, a
//! queued port's line, its lanes (VCs or priority classes) and the lazily
//! held releases of lazy port-free, with the event keys that order them.

use crate::pool::List;
use crate::units::{Rate, SimTime};

pub(super) const FLAG_ACK: u8 = 1;
pub(super) const FLAG_CE: u8 = 2;
pub(super) const FLAG_ECE: u8 = 4;

/// A packet in flight or queued. Data: `seq` is its packet number; ACK:
/// `seq` is the cumulative ACK (the next expected packet). In flight, a
/// packet lives in its arrival event (by value); PFC queues hold it in the
/// pool. The derived order only breaks ties between events at one time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Packet {
    /// Data: send time; ACK: the echoed send time of the data packet.
    pub(super) ts: u64,
    /// Cut-through: when the packet's last bit reaches the node it is
    /// sent to (0 without cut-through). Queued ports: while it waits, the
    /// ingress buffer it occupies is `port · lanes + vc` (the link and lane
    /// it came by); it takes its new lane's VC when it starts.
    pub(super) tail: u64,
    pub(super) flow: u32,
    pub(super) seq: u32,
    /// The port it was last sent on, and that port's far end (where it
    /// arrives: kept here so that an arrival does not touch the port).
    pub(super) port: u32,
    pub(super) node: u32,
    pub(super) dst: u32,
    /// ACK with SACK: 1 + the data packet it selectively acknowledges (0:
    /// none).
    pub(super) sack: u32,
    /// Router scratch ([`Hop::tag`]), 0 at injection.
    pub(super) tag: u32,
    pub(super) wire: u16,
    pub(super) flags: u8,
    /// Credits: the virtual channel of the link it was last sent on.
    pub(super) vc: u8,
}

/// An event that is not a packet arrival: port `port` finished sending
/// (lossless modes).
pub(super) const FLAG_PORT_FREE: u8 = 8;
/// An event that is not a packet arrival: `wire` bytes of credit for VC `vc`
/// reach port `port`.
pub(super) const FLAG_CREDIT: u8 = 16;

/// The event key above every event of its time: at the bound
/// `(t, AFTER_ALL)` everything due by `t` has happened.
pub(super) const AFTER_ALL: Packet = Packet {
    ts: u64::MAX,
    tail: 0,
    flow: 0,
    seq: 0,
    port: 0,
    node: 0,
    dst: 0,
    sack: 0,
    tag: 0,
    wire: 0,
    flags: 0,
    vc: 0,
};

/// The calendar event of `bytes` of credit for VC `vc` reaching port `port`
/// (its payload decides its place among events of the same time).
#[inline]
pub(super) fn credit_event(port: u32, vc: u8, bytes: u16) -> Packet {
    Packet {
        port,
        vc,
        wire: bytes,
        flags: FLAG_CREDIT,
        ..Packet::default()
    }
}

/// The state of a port that every packet touches: half a cache line, two
/// ports to a line (the lossy fast path reads and writes a port per hop;
/// its rare counters are in [`PortCounts`], its rate in the graph's
/// [`PortSpec`], read only when the rate is not a whole number of ps per
/// byte, and a queued port's occupancy in `Queues::qload`).
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
pub(super) struct Port {
    pub(super) busy_until: u64,
    /// Propagation delay of its link, ps.
    pub(super) prop: u64,
    /// Peak occupancy: bytes, or (lossy, whole ps per byte) picoseconds of
    /// backlog; see [`Port::peak_bytes`].
    pub(super) peak: u64,
    /// Serialisation picoseconds per byte when that is a whole number (and
    /// fits 32 bits, i.e. rates above ~1.9 kbps), else 0. u32 so that `to`
    /// shares its word and the port stays 32 bytes. (The lossy buffer and
    /// ECN threshold as serialisation times are `ps_per_byte` times the
    /// configured bytes: [`Network::limits_ps`].)
    pub(super) ps_per_byte: u32,
    pub(super) to: u32,
}

// The hot path touches half a line per port-hop; keep it so.
const _: () = assert!(std::mem::size_of::<Port>() == 32);

/// A port's drop and ECN-mark counts (apart from [`Port`]: touched only
/// when a packet is dropped or marked).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PortCounts {
    pub(super) drops: u64,
    pub(super) marks: u64,
}

impl Port {
    pub(super) fn peak_bytes(&self, lossless: bool) -> u64 {
        if !lossless && self.ps_per_byte != 0 {
            self.peak / self.ps_per_byte as u64
        } else {
            self.peak
        }
    }

    /// Lossy ports: bytes not yet serialised at `now` (rounded up).
    /// `rate` (the port's) is asked only when it is not a whole number of
    /// ps per byte.
    #[inline]
    pub(super) fn backlog(&self, now: u64, rate: impl FnOnce() -> Rate) -> u64 {
        let left = self.busy_until.saturating_sub(now);
        if left == 0 {
            0
        } else if self.ps_per_byte != 0 {
            left.div_ceil(self.ps_per_byte as u64)
        } else {
            (left as u128 * rate().0 as u128).div_ceil(8 * SimTime::S as u128) as u64
        }
    }

    /// Serialisation time of `bytes`; `rate` as for [`Port::backlog`].
    #[inline]
    pub(super) fn ser(&self, bytes: u64, rate: impl FnOnce() -> Rate) -> u64 {
        if self.ps_per_byte != 0 {
            bytes * self.ps_per_byte as u64
        } else {
            rate().tx_time(bytes).0
        }
    }
}

/// The state of a queued port (lossless, or with priority classes): one
/// cache line. A port is also the ingress link of its far node: its
/// `ingress` bytes and the held releases `rel` of packets that came by it.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct QPort {
    pub(super) busy: bool,
    /// Credits: the VC to serve first (round-robin).
    pub(super) rr: u8,
    /// The packet on the wire: its bytes, and the ingress buffer it leaves
    /// (`TX_LAZY`: its release is held in `rel` of the link it came by).
    pub(super) tx_wire: u16,
    /// Packets waiting in its lanes (so that "is anything queued" does not
    /// read every lane).
    pub(super) queued: u32,
    pub(super) tx_inp: u32,
    /// Credits: from the far end freeing a buffer to the credit reaching
    /// this port (its link's propagation + `credit_delay`), ps, or
    /// `u32::MAX`: read `Queues::credit_after`'s slow path.
    pub(super) credit_after: u32,
    /// This port as an ingress link of its far node: bytes buffered there.
    pub(super) ingress: u64,
    pub(super) peak_ingress: u64,
    /// Lazy port-free: releases of packets that came by this link, held
    /// until they are due (see [`Queues::hold_release`](super::flow_control::Queues::hold_release)).
    pub(super) rel: [Rel; RELS],
}

const _: () = assert!(std::mem::size_of::<QPort>() == 64);

/// `QPort::tx_inp` of a packet whose release is held lazily.
pub(super) const TX_LAZY: u32 = u32::MAX;

/// Held releases per link.
pub(super) const RELS: usize = 2;

/// A packet that came by a link and left its far node on port `port`,
/// finishing at `end` (lazy port-free): at `(end, port-free event of
/// port)` its `wire` bytes leave the far node's buffer of VC `vc` (the
/// link's `Lane::far` and `QPort::ingress`), and one credit delay later
/// its credit reaches the link's sender. `st`: `REL_LIVE` plus
/// `REL_FAR` (the buffer part is applied) and `REL_CREDIT` (the credit is
/// in `credits` or an event); both: free again.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rel {
    pub(super) end: u64,
    pub(super) port: u32,
    pub(super) wire: u16,
    pub(super) vc: u8,
    pub(super) st: u8,
}

pub(super) const REL_LIVE: u8 = 1;
pub(super) const REL_FAR: u8 = 2;
pub(super) const REL_CREDIT: u8 = 4;
pub(super) const REL_DONE: u8 = REL_LIVE | REL_FAR | REL_CREDIT;

/// A queued port's load for adaptive routing (`Queues::qload`, dense: a
/// switch's candidate ports share a line): the bytes queued or on the
/// wire, + 1 while busy; or, with `LZ_FLAG`, the port sends its last
/// queued packet and frees lazily: `LZ_FLAG | end << 16 | wire` (nothing
/// is queued, so its load is `wire + 1` before `(end, port-free event)`
/// and 0 from then on; see [`eff_load`]).
pub(super) const LZ_FLAG: u64 = 1 << 63;
/// A lazy free's end must fit below the flag: 2^47 ps (~140 s).
pub(super) const LZ_END_LIMIT: u64 = 1 << 47;

/// A lazily freeing port's (end, wire), from its `qload` word.
#[inline]
pub(super) fn lz_parts(w: u64) -> (u64, u64) {
    ((w & !LZ_FLAG) >> 16, w & 0xffff)
}

/// The port-free event of port `p` (its payload orders it among the
/// events of its time).
#[inline]
pub(super) fn pf_event(p: u32) -> Packet {
    Packet {
        port: p,
        flags: FLAG_PORT_FREE,
        ..Packet::default()
    }
}

/// Whether the event `(t, ev)` comes before `bound` in the calendar's
/// order (time, then payload).
#[inline]
pub(super) fn before(bound: &(u64, Packet), t: u64, ev: Packet) -> bool {
    t < bound.0 || (t == bound.0 && ev < bound.1)
}

/// Port `p`'s load at `bound` from its `qload` word `w` (its lazy free
/// applied if due).
#[inline]
pub(super) fn eff_load(w: u64, p: u32, bound: &(u64, Packet)) -> u64 {
    if w & LZ_FLAG == 0 {
        return w;
    }
    let (end, wire) = lz_parts(w);
    if before(bound, end, pf_event(p)) {
        0
    } else {
        wire + 1
    }
}

/// One lane (a VC with credits, else a priority class) of a queued port:
/// one cache line (a port-free event updates the lane its packet came by,
/// `far` and the credit it returns, in one place).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct Lane {
    /// Packets waiting to be sent in this lane.
    pub(super) queue: List,
    /// Credits: bytes the port may still send on this VC.
    pub(super) credits: u64,
    /// Bytes of this lane buffered at the far end (credits, PFC).
    pub(super) far: u64,
    /// PFC: this lane of the port is paused (since `paused_since`).
    pub(super) paused: bool,
    pub(super) paused_since: u64,
    /// PFC, as an ingress lane of the far node: a PAUSE is outstanding;
    /// frame sequence numbers (sent, applied).
    pub(super) pause_sent: bool,
    pub(super) frame_seq: u32,
    pub(super) applied_seq: u32,
    /// Credits (lazy returns, see [`Queues::return_credit`](super::flow_control::Queues::return_credit)): a credit of
    /// `pend` bytes (0: none) that reaches the port at `pend_at` and is not
    /// yet in `credits`; `pend_woken`: its arrival is an event in the
    /// calendar (the port waited for credits).
    pub(super) pend: u16,
    pub(super) pend_woken: bool,
    pub(super) pend_at: u64,
}

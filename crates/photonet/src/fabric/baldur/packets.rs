//! What Baldur keeps per packet and per node: the outstanding (un-ACKed)
//! data packets with their flags and rarely needed side state, the flows
//! not yet sent, and a node's transmitter. Plain records, sized for the
//! cache: the run loop in `mod.rs` reads and writes their fields.

use crate::flow::FlowId;
use crate::pool::List;
use crate::timer::TimerId;
use crate::units::SimTime;

/// A data packet sent and not yet ACKed (in its source's retransmission
/// buffer): 32 bytes, what every data arrival, ACK and timeout reads, so
/// each touches one line. Rarely needed state is in side tables by slot
/// (`Baldur::cold`), read only when a flag says it is there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outstanding {
    /// Its serial while live; 0 once released (a released slot keeps its
    /// value until reused, so a late event finds it not live).
    pub(super) serial: u32,
    pub(super) flow: FlowId,
    pub(super) seq: u32,
    pub(super) src: u32,
    pub(super) dst: u32,
    /// Its bytes (the low 25 bits: a packet is at most 2^24 B) and flags
    /// (`QUEUED`, `ACKED`, `RECEIVED`, `TIMER`, `TIMED_OUT`, `MULTI`).
    pub(super) bits: u32,
    /// When the pending timeout fires (`SimTime::MAX`: none pending).
    pub(super) deadline: SimTime,
}

pub(super) const BYTES_MASK: u32 = (1 << 25) - 1;
/// Waiting in the node's retransmission queue.
pub(super) const QUEUED: u32 = 1 << 25;
pub(super) const ACKED: u32 = 1 << 26;
/// A copy reached the destination: later copies are duplicates. (The
/// receiver's per-packet state, kept here while the packet is live: no
/// per-flow table, which paper-scale runs would hold 10 M of.)
pub(super) const RECEIVED: u32 = 1 << 27;
/// A backoff timer is pending: its id is `Cold::timer`.
pub(super) const TIMER: u32 = 1 << 28;
/// It timed out before: `Cold::timeouts` counts how often (else 0).
pub(super) const TIMED_OUT: u32 = 1 << 29;
/// Of a flow of more than one packet: `Cold::flow_bytes` is the flow's size
/// (else the flow is this packet's bytes).
pub(super) const MULTI: u32 = 1 << 30;

impl Outstanding {
    #[inline]
    pub(super) fn bytes(&self) -> u32 {
        self.bits & BYTES_MASK
    }
    #[inline]
    pub(super) fn has(&self, flag: u32) -> bool {
        self.bits & flag != 0
    }
    #[inline]
    pub(super) fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.bits |= flag;
        } else {
            self.bits &= !flag;
        }
    }
}

/// An outstanding packet's rarely needed state, by slot, valid only while
/// the entry's flag says so.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Cold {
    /// With `MULTI`: the size of its flow (the receiver releases whole
    /// packets in order).
    pub(super) flow_bytes: u64,
    /// With `TIMER`: the pending backoff timer.
    pub(super) timer: Option<TimerId>,
    /// With `TIMED_OUT`: how often it timed out.
    pub(super) timeouts: u32,
}

/// A flow with packets never sent, queued at its source. Baldur keeps no
/// per-flow table: a flow's state is here until its last packet is first
/// sent, then in its packets' outstanding entries (and, for a multi-packet
/// flow, in a reorder buffer at the receiver from its first arrival until
/// complete).
#[derive(Clone, Copy, Debug)]
pub(super) struct Fresh {
    pub(super) flow: FlowId,
    pub(super) dst: u32,
    pub(super) bytes: u64,
}

/// A node's transmitter state: one cache line. Its queues are lists
/// threaded through pools shared by all nodes (`Baldur::acks_q`,
/// `Baldur::fresh_q`, `Baldur::out`), whose few live entries stay in cache,
/// rather than a buffer per node.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct Node {
    /// ACKs owed (`acks_q`: to node, slot, serial).
    pub(super) acks: List,
    /// Retransmissions whose backoff is over (outstanding slots).
    pub(super) retx: List,
    /// Flows with packets never sent, in arrival order (`fresh_q`).
    pub(super) fresh: List,
    /// The next packet of the front flow of `fresh`.
    pub(super) next_new: u32,
    /// When the transmitter finishes its current packet (and its gap).
    pub(super) free_at: SimTime,
    /// Bytes of its un-ACKed packets (its peak is `Baldur::buffer_peak`).
    pub(super) buffer_bytes: u64,
    /// A `TxFree` event is pending for this node.
    pub(super) wake: bool,
    /// Node backoff: timeouts since the last ACK received (the BEB stage),
    /// and whether a `Resume` timer is pending.
    pub(super) stage: u8,
    pub(super) resume: bool,
    /// Node backoff: no data transmission starts before this.
    pub(super) data_ok_at: SimTime,
}

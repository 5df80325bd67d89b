//! The host transports' per-flow state: what every flow needs, and the
//! window transport's (DCTCP) state with its SACK scoreboard.

use super::DctcpConfig;
use crate::delivery::ReorderBuffer;
use crate::net::dctcp::Dctcp;

/// What every flow needs (the paced transport needs nothing else).
pub(super) struct FlowState {
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) bytes: u64,
    pub(super) npkts: u32,
    pub(super) snd_nxt: u32,
    /// Packets of this flow (data or ACK) lost in the network.
    pub(super) losses: u32,
    pub(super) sender_done: bool,
    pub(super) receiver_done: bool,
    pub(super) start: u64,
    pub(super) finish: u64,
    pub(super) rb: ReorderBuffer,
}

/// The window transport's per-flow state (DCTCP only: a paced flow has
/// none, and a run of 10 M paced one-packet flows does not pay for it).
pub(super) struct WinState {
    pub(super) snd_una: u32,
    pub(super) dupacks: u32,
    pub(super) recover: u32,
    pub(super) in_recovery: bool,
    pub(super) cc: Dctcp,
    pub(super) srtt: u64,
    pub(super) rttvar: u64,
    pub(super) rto: u64,
    pub(super) rto_deadline: u64,
    pub(super) rto_armed: bool,
    /// SACK scoreboard (bit per packet, allocated at the first SACK), one
    /// past the highest SACKed packet, and the next hole to consider.
    pub(super) sacked: Vec<u64>,
    pub(super) high_sack: u32,
    pub(super) rtx_next: u32,
    /// Delayed ACKs: in-order packets not yet acknowledged, the echo time
    /// and CE state they carry, and the timer.
    pub(super) da_pending: u32,
    pub(super) da_ts: u64,
    pub(super) da_ce: bool,
    pub(super) da_deadline: u64,
    pub(super) da_armed: bool,
    /// [`FlowState::losses`] at the last retransmission timeout: a timeout
    /// with no loss since the previous one is spurious.
    pub(super) losses_at_rto: u32,
    /// Round-robin NIC: in its host's list of flows with a packet to send.
    pub(super) ready: bool,
    /// Out-of-order packets reported by duplicate ACKs and not yet covered
    /// by the cumulative ACK (for DCTCP's marked fraction).
    pub(super) reported: u32,
}

impl WinState {
    /// A new flow's window: `init_cwnd`, no RTT sample yet (RTO `rto_init`).
    pub(super) fn new(d: &DctcpConfig) -> Self {
        WinState {
            snd_una: 0,
            dupacks: 0,
            recover: 0,
            in_recovery: false,
            cc: Dctcp::new(d.init_cwnd as f64, d.g, d.max_cwnd as f64),
            srtt: 0,
            rttvar: 0,
            rto: d.rto_init.0,
            rto_deadline: 0,
            rto_armed: false,
            sacked: Vec::new(),
            high_sack: 0,
            rtx_next: 0,
            da_pending: 0,
            da_ts: 0,
            da_ce: false,
            da_deadline: 0,
            da_armed: false,
            losses_at_rto: 0,
            ready: false,
            reported: 0,
        }
    }
}

/// Whether packet `seq` is marked in a SACK scoreboard.
#[inline]
pub(super) fn is_sacked(sacked: &[u64], seq: u32) -> bool {
    sacked
        .get((seq / 64) as usize)
        .is_some_and(|w| w >> (seq % 64) & 1 != 0)
}

/// SACK recovery: the next packet below the highest SACKed one that is
/// neither SACKed nor already retransmitted in this recovery.
#[inline]
pub(super) fn next_hole(fl: &FlowState, w: &mut WinState) -> Option<u32> {
    let mut h = w.rtx_next.max(w.snd_una);
    while h < w.high_sack && is_sacked(&w.sacked, h) {
        h += 1;
    }
    if h < w.high_sack && h < fl.snd_nxt {
        w.rtx_next = h + 1;
        Some(h)
    } else {
        None
    }
}

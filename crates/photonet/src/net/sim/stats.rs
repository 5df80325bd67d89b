//! The network's counters (reported by `Network::stats`).

/// Counters of the whole network.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    pub(super) data_sent: u64,
    pub(super) data_delivered: u64,
    pub(super) acks: u64,
    pub(super) hops: u64,
    pub(super) drops: u64,
    pub(super) retransmissions: u64,
    pub(super) fast_retransmits: u64,
    pub(super) timeouts: u64,
    /// Timeouts of a flow none of whose packets or ACKs was lost since its
    /// previous timeout (the packet resent was not lost).
    pub(super) spurious_timeouts: u64,
    /// Data packets' wait at the sending NIC before their first bit leaves:
    /// total and largest, ps.
    pub(super) nic_wait: u64,
    pub(super) nic_wait_max: u64,
    pub(super) duplicates: u64,
    pub(super) early: u64,
    pub(super) lost: u64,
    pub(super) lost_data: u64,
    pub(super) credit_stalls: u64,
    /// Credits: the most bytes any (link, VC) input buffer held.
    pub(super) peak_vc_bytes: u64,
}

//! What a workload hands to a fabric: flows between endpoints.

use crate::units::SimTime;

/// Index of a flow; flows are numbered 0, 1, 2 … in arrival order.
pub type FlowId = u32;
/// Index of an endpoint (a server, a ToR or a node, as the fabric defines it).
pub type HostId = u32;

/// One flow of the workload: `bytes` from `src` to `dst`, starting at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub id: FlowId,
    pub src: HostId,
    pub dst: HostId,
    pub bytes: u64,
    pub start: SimTime,
}

impl Flow {
    pub fn new(id: FlowId, src: HostId, dst: HostId, bytes: u64, start: SimTime) -> Flow {
        Flow {
            id,
            src,
            dst,
            bytes,
            start,
        }
    }
}

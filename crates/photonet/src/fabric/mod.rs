//! The `Fabric` trait every architecture and baseline implements, and the `Sink`
//! through which a fabric reports delivered bytes and completed flows.

pub mod esn;
pub mod sirius;

use crate::metrics::TimeSeries;
use crate::units::{Rate, SimTime};
use std::collections::BTreeMap;

/// Index of a flow; flows are numbered 0, 1, 2 … in arrival order.
pub type FlowId = u32;
/// Index of an endpoint (a server, or a node in a server-based deployment).
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

/// Per-architecture statistics, by name (e.g. `peak_queue_bytes`).
pub type FabricStats = BTreeMap<String, f64>;

/// A simulated network. The run loop calls `add_flow` at each arrival and
/// `advance(t)` whenever `next_event()` returns `t`; the fabric reports progress
/// through the [`Sink`]. Slotted fabrics return their next slot boundary from
/// `next_event` only while they have work, which is how idle time is skipped.
pub trait Fabric {
    /// Short name used in tables and plots, e.g. `"ESN (Ideal)"`.
    fn name(&self) -> String;
    /// Number of traffic endpoints (N in the load formula).
    fn hosts(&self) -> usize;
    /// Per-endpoint bandwidth (R in the load formula and goodput normalisation).
    fn host_rate(&self) -> Rate;
    /// A flow arrives at `now` (= `flow.start`).
    fn add_flow(&mut self, now: SimTime, flow: &Flow, sink: &mut Sink);
    /// The time of the fabric's next internal event, if it has one.
    fn next_event(&self) -> Option<SimTime>;
    /// Process every internal event due at `now`.
    fn advance(&mut self, now: SimTime, sink: &mut Sink);
    /// The run ends at `end`: account for progress made up to then.
    fn finish(&mut self, end: SimTime, sink: &mut Sink);
    /// Architecture-specific statistics.
    fn stats(&self) -> FabricStats {
        FabricStats::new()
    }
    /// Checks the fabric's internal invariants (queue bounds, conservation …).
    fn check_invariants(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Collects what fabrics report: bytes delivered per flow, completion times, and
/// an optional goodput time series. It also checks that no flow gets more bytes
/// than it has and that a flow completes only once, with all its bytes.
#[derive(Debug, Default)]
pub struct Sink {
    pub bytes: Vec<u64>,
    pub delivered: Vec<u64>,
    pub finish: Vec<Option<SimTime>>,
    pub completed: u64,
    pub last_completion: SimTime,
    /// Events a fabric processed internally (slots, completions) for the manifest.
    pub internal_events: u64,
    pub series: Option<TimeSeries>,
    pub violations: Vec<String>,
}

impl Sink {
    pub fn new(series: Option<TimeSeries>) -> Self {
        Sink {
            series,
            ..Default::default()
        }
    }

    pub fn register(&mut self, f: &Flow) {
        assert_eq!(
            f.id as usize,
            self.bytes.len(),
            "flow ids must be dense and in order"
        );
        self.bytes.push(f.bytes);
        self.delivered.push(0);
        self.finish.push(None);
    }

    fn violation(&mut self, msg: String) {
        if self.violations.len() < 100 {
            self.violations.push(msg);
        }
    }

    /// `bytes` of flow `id` reached the destination at `t`.
    pub fn deliver(&mut self, id: FlowId, t: SimTime, bytes: u64) {
        self.deliver_span(id, t, t, bytes);
    }

    /// `bytes` of flow `id` arrived evenly over [t0, t1] (fluid models).
    pub fn deliver_span(&mut self, id: FlowId, t0: SimTime, t1: SimTime, bytes: u64) {
        let i = id as usize;
        self.delivered[i] += bytes;
        if self.delivered[i] > self.bytes[i] {
            let msg = format!(
                "flow {id}: delivered {} B of a {} B flow",
                self.delivered[i], self.bytes[i]
            );
            self.violation(msg);
        }
        if let Some(s) = &mut self.series {
            s.add_span(t0, t1, bytes);
        }
    }

    /// Flow `id` completed at `t` (all its bytes delivered to the application).
    pub fn complete(&mut self, id: FlowId, t: SimTime) {
        let i = id as usize;
        if self.finish[i].is_some() {
            self.violation(format!("flow {id} completed twice"));
            return;
        }
        if self.delivered[i] != self.bytes[i] {
            let msg = format!(
                "flow {id} completed with {} of {} B delivered",
                self.delivered[i], self.bytes[i]
            );
            self.violation(msg);
        }
        self.finish[i] = Some(t);
        self.completed += 1;
        self.last_completion = self.last_completion.max(t);
    }
}

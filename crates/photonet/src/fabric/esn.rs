//! ESN (Ideal) and ESN-OSUB (Ideal): the electrical folded-Clos baselines.
//!
//! Per-flow queues, back-pressure and packet spraying over a folded Clos converge to
//! max-min fair sharing of the bottleneck links, so the fabric is a fluid model:
//! each flow has a rate, rates are recomputed only when a flow arrives or departs,
//! and a flow completes when its bytes have drained at those rates.
//!
//! Links that can bind: each server's NIC up and down; each rack's uplink and
//! downlink to the aggregation tier; and (ESN-OSUB at the aggregation tier)
//! each pod's links to the core. Intra-rack traffic never leaves the ToR and
//! intra-pod traffic never reaches the core. A link whose capacity covers all
//! the NICs (or lower links) below it can never be the sole bottleneck, so it is
//! left out (exactly): in ESN only the NICs remain.
//!
//! Rates are kept max-min fair by [`Sharing`]: an event re-solves only the
//! flows whose rates it can change, growing that set until every flow has a
//! bottleneck again (the same allocation as a full solve, to rounding); every
//! arrival and departure at one instant is applied first and the allocation
//! is updated once (it does not depend on the order of the instant's events,
//! and nothing moves between them).

use crate::error::ConfigError;
use crate::fabric::registry::{
    BuildContext, FabricModule, FctBounds, LoneFlow, MemoryPart, ParamTable, Variant,
};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::queue::IndexedQueue;
use crate::recorder::Recorder;
use crate::sched::maxmin::check_max_min;
use crate::sched::sharing::{Sharing, MAX_PATH};
use crate::topology::Topology;
use crate::units::{Rate, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of ESN (Ideal), the non-blocking folded Clos.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EsnParams {
    /// One-way latency added to every flow's completion time (propagation and
    /// switch traversal; a transfer of B bytes alone takes 8B/R + base_latency).
    pub base_latency: SimTime,
    /// Re-solve rates at most once per this interval instead of at every arrival
    /// and departure ("0ps" = exact, the default). A new flow waits for the next
    /// update and a departed flow's share stays idle until then: a back-pressure
    /// loop that takes this long to converge. Speeds up large runs.
    pub rate_update_interval: SimTime,
}

impl Default for EsnParams {
    fn default() -> Self {
        EsnParams {
            base_latency: SimTime::ns(1_000),
            rate_update_interval: SimTime::ZERO,
        }
    }
}

/// Where ESN-OSUB's oversubscription sits.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OsubTier {
    /// At each rack's uplinks: every inter-rack flow crosses a rack link of
    /// uplinks × uplink_rate / oversubscription.
    Rack,
    /// At the aggregation tier beyond the racks (the Sirius paper's ESN-OSUB):
    /// racks are grouped in pods of `pod_racks`; racks reach their pod's
    /// aggregation switches at full rate, and each pod reaches the core at
    /// pod_racks × uplinks × uplink_rate / oversubscription.
    #[default]
    Aggregation,
}

/// Parameters of ESN-OSUB (Ideal): the same Clos, oversubscribed above the racks.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EsnOsubParams {
    /// One-way latency added to every flow's completion time (as in ESN).
    pub base_latency: SimTime,
    /// Ratio of the bandwidth below the oversubscribed tier to the bandwidth
    /// above it (3.0 means 3:1). Must be >= 1.
    pub oversubscription: f64,
    /// Where the oversubscription sits: "aggregation" (default) or "rack".
    /// The default follows the Sirius paper (§7), which evaluates a
    /// "three-tier folded Clos" with "a 3:1 oversubscription at the
    /// aggregation tier beyond the racks": traffic between racks of one pod
    /// runs at full rate, only traffic between pods shares the thinned core
    /// links. "rack" thins every rack's uplinks instead (a stricter
    /// baseline, since intra-pod traffic is limited too).
    pub tier: OsubTier,
    /// Racks per pod at the aggregation tier (the last pod may be smaller); 0
    /// = ceil(racks / 8), i.e. 8 pods, which is 16 racks per pod at the
    /// paper's 128 racks and keeps the share of uniform traffic that crosses
    /// the core (7/8) the same at every scale. The paper gives no pod size.
    /// Must be less than the number of racks (one pod has no core to
    /// oversubscribe). Ignored at the rack tier.
    pub pod_racks: u32,
    /// Re-solve rates at most once per this interval ("0ps" = exact, as in
    /// ESN). Under oversubscription the thinned
    /// links join most flows into one sharing component, so exact re-solving
    /// costs O(active flows) per event; an interval bounds the number of solves.
    pub rate_update_interval: SimTime,
}

impl Default for EsnOsubParams {
    fn default() -> Self {
        EsnOsubParams {
            base_latency: SimTime::ns(1_000),
            oversubscription: 3.0,
            tier: OsubTier::Aggregation,
            pod_racks: 0,
            rate_update_interval: SimTime::ZERO,
        }
    }
}

impl EsnOsubParams {
    /// Racks per oversubscribed group: 1 at the rack tier, the pod size at
    /// the aggregation tier.
    pub fn group_racks(&self, racks: u32) -> u32 {
        match self.tier {
            OsubTier::Rack => 1,
            OsubTier::Aggregation if self.pod_racks == 0 => racks.div_ceil(8).max(1),
            OsubTier::Aggregation => self.pod_racks,
        }
    }
}

impl ParamTable for EsnParams {
    const TABLE: &'static str = "esn";
}
impl ParamTable for EsnOsubParams {
    const TABLE: &'static str = "esn_osub";
}

/// Rates frozen for longer than this would stall a run (nothing would finish
/// between updates); the interval is meant to be about a slot or an RTT.
const MAX_RATE_UPDATE_INTERVAL: SimTime = SimTime::ms(1);

fn check_interval(table: &str, t: SimTime) -> Result<(), ConfigError> {
    if t > MAX_RATE_UPDATE_INTERVAL {
        return Err(ConfigError::new(
            format!("{table}.rate_update_interval"),
            format!("\"{t}\""),
            format!(
                "above {MAX_RATE_UPDATE_INTERVAL}: rates frozen that long stall the fluid model (it is meant to be about a slot or an RTT)"
            ),
        ));
    }
    Ok(())
}

/// A lone flow in an idle ESN takes exactly 8·bytes/R + base_latency; the
/// fluid model's completion time is rounded to whole picoseconds (at most one
/// rounding per rate change), so the bound allows 1 ns.
fn lone_flow(topo: &Topology, base_latency: SimTime, bytes: u64) -> FctBounds {
    let min = topo.host_rate().tx_time(bytes).saturating_sub(SimTime(1)) + base_latency;
    FctBounds {
        min,
        max: min + SimTime::ns(1),
    }
}

/// The memory of either ESN variant: links and rate state per host.
fn memory(ctx: &BuildContext) -> Vec<MemoryPart> {
    vec![MemoryPart::per_host(
        ctx,
        1024,
        "per-host links and rate state",
    )]
}

/// Registration of ESN (Ideal).
pub struct EsnIdeal;

impl FabricModule for EsnIdeal {
    type Params = EsnParams;
    const VARIANTS: &'static [Variant] = &[Variant {
        name: "esn",
        label: "ESN (Ideal)",
        description: "ESN (Ideal): non-blocking folded Clos with per-flow queues, back-pressure and packet spraying, as a max-min fair fluid model",
    }];
    type Layout = ();
    fn plan(p: &EsnParams, _: &Variant, _: &BuildContext) -> Result<(), ConfigError> {
        check_interval("esn", p.rate_update_interval)
    }
    fn memory(_: &EsnParams, _: &(), _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        memory(ctx)
    }
    fn build(
        p: EsnParams,
        _: (),
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(Esn::ideal(ctx.topology, &p)))
    }
    fn lone_flow_fct(p: &EsnParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        Ok(lone_flow(f.ctx.topology, p.base_latency, f.bytes))
    }
}

/// Registration of ESN-OSUB (Ideal).
pub struct EsnOsub;

impl FabricModule for EsnOsub {
    type Params = EsnOsubParams;
    const VARIANTS: &'static [Variant] = &[Variant {
        name: "esn_osub",
        label: "ESN-OSUB (Ideal)",
        description:
            "ESN-OSUB (Ideal): the same fluid Clos, oversubscribed (3:1 by default) at the aggregation tier beyond the racks (or at the rack uplinks)",
    }];
    type Layout = ();
    fn plan(p: &EsnOsubParams, _: &Variant, ctx: &BuildContext) -> Result<(), ConfigError> {
        check_interval("esn_osub", p.rate_update_interval)?;
        if !(p.oversubscription >= 1.0 && p.oversubscription.is_finite()) {
            return Err(ConfigError::new(
                "esn_osub.oversubscription",
                p.oversubscription,
                "must be >= 1 (1 means non-blocking)",
            ));
        }
        // The thinnest oversubscribed link is one rack's share of its tier. At
        // rates near 0 b/s the fluid model's times overflow and come out
        // below the base latency, so a share under 1 kb/s is refused.
        let share = ctx.topology.rack_uplink_rate().as_f64() / p.oversubscription;
        if share < MIN_OSUB_SHARE_BPS {
            return Err(ConfigError::new(
                "esn_osub.oversubscription",
                p.oversubscription,
                format!(
                    "leaves each rack {share:.3e} b/s of the oversubscribed tier, under the {MIN_OSUB_SHARE_BPS} b/s \
                     photonet simulates (a flow would take longer than its time limit)"
                ),
            ));
        }
        let racks = ctx.topology.racks;
        if p.tier == OsubTier::Aggregation && p.pod_racks != 0 && p.pod_racks >= racks {
            return Err(ConfigError::new(
                "esn_osub.pod_racks",
                p.pod_racks,
                format!("must be less than topology.racks = {racks}: a single pod has no core links to oversubscribe (use 0 for 8 pods, or tier = \"rack\")"),
            ));
        }
        Ok(())
    }
    fn memory(_: &EsnOsubParams, _: &(), _: &Variant, ctx: &BuildContext) -> Vec<MemoryPart> {
        memory(ctx)
    }
    fn build(
        p: EsnOsubParams,
        _: (),
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        Ok(Box::new(Esn::oversubscribed(ctx.topology, &p)))
    }
    /// A lone flow runs at the smallest capacity on its path: R, and between
    /// racks at the rack tier the rack link's uplinks × uplink_rate /
    /// oversubscription (with few uplinks per rack it can be slower than one
    /// NIC); at the aggregation tier, between pods, the smaller of the two
    /// pods' core links (racks in the pod × uplinks × uplink_rate /
    /// oversubscription); within a rack, or a pod, at R.
    fn lone_flow_fct(p: &EsnOsubParams, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        let (ctx, src, dst, bytes) = (f.ctx, f.src, f.dst, f.bytes);
        let t = ctx.topology;
        let rate = Esn::oversubscribed(t, p).path_capacity(src, dst);
        if rate >= t.host_rate().as_f64() {
            return Ok(lone_flow(t, p.base_latency, bytes));
        }
        let secs = bytes as f64 * 8.0 / rate;
        let min = SimTime((secs * SimTime::S as f64).floor() as u64).saturating_sub(SimTime(1));
        Ok(FctBounds {
            min: min + p.base_latency,
            max: min + p.base_latency + SimTime::ns(1),
        })
    }
}

/// The least bandwidth a rack's share of ESN-OSUB's oversubscribed tier may
/// have (uplinks × uplink_rate / oversubscription), in b/s.
const MIN_OSUB_SHARE_BPS: f64 = 1e3;

/// Most links a flow crosses: NIC up, rack up, pod up, pod down, rack down, NIC down.
const MAX_RES: usize = MAX_PATH;

#[derive(Clone, Debug)]
struct Active {
    flow: FlowId,
    bits: f64,
    done_bits: f64,
    reported_bytes: u64,
    bytes: u64,
    rate: f64,
    last: SimTime,
    live: bool,
}

/// The fluid max-min model of an ideal electrical network.
pub struct Esn {
    label: String,
    hosts: usize,
    servers_per_rack: usize,
    racks: usize,
    host_rate: Rate,
    base_latency: SimTime,
    interval: SimTime,
    next_update: Option<SimTime>,
    /// Rack links are modelled (they can bind); their indices start here.
    rack_base: Option<u32>,
    /// Pod-to-core links are modelled; their indices start here.
    pod_base: Option<u32>,
    pod_racks: usize,
    pods: usize,
    sharing: Sharing,
    slots: Vec<Active>,
    free: Vec<u32>,
    /// Each active flow's completion time at its current rate, by slot.
    completions: IndexedQueue,
    changed: Vec<u32>,
    // Statistics.
    peak_active: usize,
    rate_changes: u64,
}

impl Esn {
    /// The non-blocking baseline.
    pub fn ideal(topo: &Topology, p: &EsnParams) -> Esn {
        Esn::build(
            "ESN (Ideal)",
            topo,
            p.base_latency,
            1.0,
            None,
            p.rate_update_interval,
        )
    }

    /// The oversubscribed baseline, at the rack uplinks or the aggregation tier.
    pub fn oversubscribed(topo: &Topology, p: &EsnOsubParams) -> Esn {
        let (label, rack_oversub, pods) = match p.tier {
            OsubTier::Rack => (
                format!("ESN-OSUB {}:1 (Ideal)", p.oversubscription),
                p.oversubscription,
                None,
            ),
            OsubTier::Aggregation => (
                format!("ESN-OSUB {}:1 agg. (Ideal)", p.oversubscription),
                1.0,
                Some((p.group_racks(topo.racks), p.oversubscription)),
            ),
        };
        Esn::build(
            &label,
            topo,
            p.base_latency,
            rack_oversub,
            pods,
            p.rate_update_interval,
        )
    }

    fn build(
        label: &str,
        topo: &Topology,
        base_latency: SimTime,
        rack_oversub: f64,
        pods: Option<(u32, f64)>,
        interval: SimTime,
    ) -> Esn {
        let hosts = topo.hosts();
        let racks = topo.racks as usize;
        let spr = topo.servers_per_rack as usize;
        let host_rate = topo.host_rate();
        let uplink = topo.rack_uplink_rate().as_f64();
        let rack_cap = uplink / rack_oversub;
        let nic_sum = host_rate.as_f64() * spr as f64;
        // A link that carries at least the sum of the links below it can never bind alone.
        let rack_links = racks > 1 && rack_cap < nic_sum * (1.0 - 1e-12);
        let mut capacity = vec![host_rate.as_f64(); 2 * hosts];
        let mut rack_base = None;
        if rack_links {
            rack_base = Some(capacity.len() as u32);
            capacity.extend(std::iter::repeat_n(rack_cap, 2 * racks));
        }
        let (mut pod_base, mut pod_racks, mut npods) = (None, racks.max(1), 1);
        if let Some((pr, oversub)) = pods {
            pod_racks = (pr as usize).max(1);
            npods = racks.div_ceil(pod_racks);
            // Per rack of the pod: its share of the core links vs what can reach them.
            let below = nic_sum.min(rack_cap);
            if npods > 1 && uplink / oversub < below * (1.0 - 1e-12) {
                pod_base = Some(capacity.len() as u32);
                for _dir in 0..2 {
                    for p in 0..npods {
                        let n = pod_racks.min(racks - p * pod_racks);
                        capacity.push(n as f64 * uplink / oversub);
                    }
                }
            }
        }
        Esn {
            label: label.to_string(),
            hosts,
            servers_per_rack: spr,
            racks,
            host_rate,
            base_latency,
            interval,
            next_update: None,
            rack_base,
            pod_base,
            pod_racks,
            pods: npods,
            sharing: Sharing::new(capacity),
            slots: Vec::new(),
            free: Vec::new(),
            completions: IndexedQueue::new(),
            changed: Vec::new(),
            peak_active: 0,
            rate_changes: 0,
        }
    }

    /// The links a flow from `src` to `dst` crosses, in a fixed order (NIC up,
    /// NIC down, rack up, rack down, pod up, pod down).
    fn resources_for(&self, src: u32, dst: u32) -> ([u32; MAX_RES], u8) {
        let n = self.hosts as u32;
        let mut res = [src, n + dst, 0, 0, 0, 0];
        let mut k = 2;
        let (rs, rd) = (
            src as usize / self.servers_per_rack,
            dst as usize / self.servers_per_rack,
        );
        if let Some(b) = self.rack_base {
            if rs != rd {
                res[k] = b + rs as u32;
                res[k + 1] = b + (self.racks + rd) as u32;
                k += 2;
            }
        }
        if let Some(b) = self.pod_base {
            let (ps, pd) = (rs / self.pod_racks, rd / self.pod_racks);
            if ps != pd {
                res[k] = b + ps as u32;
                res[k + 1] = b + (self.pods + pd) as u32;
                k += 2;
            }
        }
        (res, k as u8)
    }

    /// The rate of a lone flow from `src` to `dst` (b/s): the smallest
    /// capacity on its path.
    pub fn path_capacity(&self, src: u32, dst: u32) -> f64 {
        let (res, n) = self.resources_for(src, dst);
        res[..n as usize]
            .iter()
            .map(|&r| self.sharing.capacity(r))
            .fold(f64::INFINITY, f64::min)
    }

    /// Brings a flow's delivered bytes up to `now` at its current rate.
    fn settle(&mut self, slot: u32, now: SimTime, sink: &mut Recorder) {
        let a = &mut self.slots[slot as usize];
        if now > a.last {
            let dt = (now - a.last).as_secs_f64();
            a.done_bits = (a.done_bits + a.rate * dt).min(a.bits);
            // Keep the last byte for completion, so rounding can never finish a flow early.
            let bytes = ((a.done_bits / 8.0) as u64).min(a.bytes - 1);
            if bytes > a.reported_bytes {
                sink.deliver_span(a.flow, a.last, now, bytes - a.reported_bytes);
                a.reported_bytes = bytes;
            }
            a.last = now;
        }
    }

    fn detach(&mut self, slot: u32) {
        self.sharing.remove(slot);
        self.slots[slot as usize].live = false;
        self.free.push(slot);
    }

    /// Brings rates up to date with the arrivals and departures so far and
    /// reschedules completions of flows whose rate changed.
    fn resolve(&mut self, now: SimTime, sink: &mut Recorder) {
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        self.sharing.update(&mut changed);
        self.rate_changes += changed.len() as u64;
        for &s in &changed {
            let new_rate = self.sharing.rate(s);
            self.settle(s, now, sink);
            let a = &mut self.slots[s as usize];
            a.rate = new_rate;
            if new_rate > 0.0 {
                let left = (a.bits - a.done_bits).max(0.0);
                let dt = (left / new_rate * SimTime::S as f64).ceil() as u64;
                self.completions.set(s, SimTime(now.0 + dt));
            } else {
                self.completions.remove(s);
            }
        }
        self.changed = changed;
    }

    /// Re-solves now (exact mode), or at the next multiple of the update interval.
    fn update_rates(&mut self, now: SimTime, sink: &mut Recorder) {
        let due = self.interval.0 == 0
            || self.next_update.is_some_and(|t| t <= now)
            || (self.sharing.pending() && now.0.is_multiple_of(self.interval.0));
        if due {
            self.next_update = None;
            self.resolve(now, sink);
        } else if self.sharing.pending() && self.next_update.is_none() {
            self.next_update = Some(SimTime(now.0.div_ceil(self.interval.0) * self.interval.0));
        }
    }

    /// Puts a new flow on its links (rates are updated by the caller).
    fn attach(&mut self, now: SimTime, flow: &Flow) {
        let (res, nres) = self.resources_for(flow.src, flow.dst);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Active {
                flow: 0,
                bits: 0.0,
                done_bits: 0.0,
                reported_bytes: 0,
                bytes: 0,
                rate: 0.0,
                last: SimTime::ZERO,
                live: false,
            });
            (self.slots.len() - 1) as u32
        });
        self.sharing.insert(slot, &res[..nres as usize]);
        self.slots[slot as usize] = Active {
            flow: flow.id,
            bits: flow.bytes as f64 * 8.0,
            done_bits: 0.0,
            reported_bytes: 0,
            bytes: flow.bytes,
            rate: 0.0,
            last: now,
            live: true,
        };
        self.peak_active = self.peak_active.max(self.active_flows());
    }

    /// Number of flows currently sharing the network.
    pub fn active_flows(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl Fabric for Esn {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn hosts(&self) -> usize {
        self.hosts
    }
    fn host_rate(&self) -> Rate {
        self.host_rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, sink: &mut Recorder) {
        self.attach(now, flow);
        self.update_rates(now, sink);
    }

    fn batches_arrivals(&self) -> bool {
        true
    }

    fn add_flows(&mut self, now: SimTime, flows: &[Flow], sink: &mut Recorder) {
        for f in flows {
            self.attach(now, f);
        }
        self.update_rates(now, sink);
    }

    fn next_event(&self) -> Option<SimTime> {
        match (self.completions.peek_time(), self.next_update) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, sink: &mut Recorder) {
        while let Some((_, slot)) = self.completions.pop_due(now) {
            sink.count_internal_events(1);
            self.settle(slot, now, sink);
            let a = &mut self.slots[slot as usize];
            let rest = a.bytes - a.reported_bytes;
            a.reported_bytes = a.bytes;
            let flow = a.flow;
            sink.deliver(flow, now, rest);
            sink.complete(flow, now + self.base_latency);
            self.detach(slot);
        }
        self.update_rates(now, sink);
    }

    fn finish(&mut self, end: SimTime, sink: &mut Recorder) {
        for s in 0..self.slots.len() as u32 {
            if self.slots[s as usize].live {
                self.settle(s, end, sink);
            }
        }
    }

    fn stats(&self) -> FabricStats {
        let (updates, solved, rounds) = self.sharing.counters();
        let per_update = |x: u64| x as f64 / updates.max(1) as f64;
        let mut m = FabricStats::new();
        m.insert("peak_active_flows".into(), self.peak_active as f64);
        m.insert("rate_solves".into(), updates as f64);
        m.insert("mean_flows_resolved".into(), per_update(solved));
        m.insert("mean_solve_rounds".into(), per_update(rounds));
        m.insert("mean_rate_changes".into(), per_update(self.rate_changes));
        m
    }

    fn check_invariants(&self) -> Result<(), String> {
        // The rates in force are what the sharing holds, and (once every
        // event so far has been applied) they are max-min fair: no link above
        // its capacity, every flow with a bottleneck.
        if self.sharing.pending() {
            return Ok(());
        }
        let (problem, ids, rates) = self.sharing.snapshot();
        for (&s, &x) in ids.iter().zip(&rates) {
            if self.slots[s as usize].rate != x {
                return Err(format!(
                    "flow slot {s} runs at {} b/s but its max-min share is {x}",
                    self.slots[s as usize].rate
                ));
            }
        }
        check_max_min(&problem, &rates, 1e-6)
            .map_err(|e| format!("esn: rates not max-min fair: {e}"))
    }
}

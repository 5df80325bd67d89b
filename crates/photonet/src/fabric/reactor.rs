//! REACToR: a hybrid ToR that pulls traffic from end hosts onto a fast
//! circuit switch and a slower packet switch (Liu et al., NSDI'14 §3, §5.4).
//!
//! # Model
//! * One REACToR with every endpoint of the topology attached (n =
//!   `racks × servers_per_rack` hosts at R = `topology.host_rate()`, the
//!   paper's 100 Gbps). Each host has a circuit port at R on the OCS side
//!   (reconfiguration `reconfiguration` = δ) and a packet uplink at
//!   `eps_rate` to an electrical packet switch (EPS).
//! * End hosts hold one traffic class per destination (a FIFO of flows).
//!   The REACToR pulls classes with PFC pause/unpause frames (§3.4): a
//!   circuit class starts sending `pfc_on_min..pfc_on_max` after its circuit
//!   is up (the measured 1.2–1.3 µs "on" delay); the pause is sent
//!   `pfc_off_max` before the circuit goes down and the host stops
//!   `pfc_off_min..pfc_off_max` later (the measured 1.0–2.2 µs "off" delay),
//!   so no circuit traffic is in flight during a reconfiguration. Draws are
//!   uniform, from the seeded stream `reactor.pfc`.
//! * Every `period` (W) the circuit scheduler estimates each class's demand
//!   (a demand oracle, as on the prototype, read at the end of the period's
//!   first tick): the bytes that arrived in the class over the last period
//!   (its rate × W), capped by its backlog, or its backlog if nothing
//!   arrived. `reactor` then gives whole classes to the EPS, smallest
//!   estimate first, while each source's and each destination's EPS share
//!   stays within `eps_rate × W` (`sched::solstice::eps_split`; a class
//!   mapped to the EPS takes its whole backlog along); the other classes'
//!   estimates, in circuit time at the circuit rate limit plus the PFC on/off
//!   overhead and rounded up to whole ticks, are scheduled by
//!   `sched::solstice::schedule_compressed` (Σφ + δm ≤ W, configurations of
//!   at least `min_config` including δ, every class with demand keeps a
//!   circuit, the time above the minimum shrunk by one factor when the
//!   demand does not fit). Class constraints of §3.2: a class is on a
//!   circuit or on the EPS for a whole period, never both; classes not on a
//!   circuit this period (including classes that become backlogged after the
//!   schedule was computed) are remapped to the EPS; a circuit class's bytes
//!   the circuits could not carry wait for a later period. There is no
//!   dedicated EPS class: photonet's flows carry no latency-sensitivity tag.
//! * Rate limits (§3.3): circuit traffic to destination j is paced at
//!   `min(circuit_rate, R − EPS share into j / W)` (at least R − eps_rate),
//!   which leaves room for the EPS at j's downlink, where circuit traffic
//!   has priority.
//! * The EPS is a packet network on `net/` (the substrate of the electrical
//!   fabrics, issue 11): a star of host NICs at `eps_rate` → one
//!   output-queued switch with a port per host at `eps_rate` → each host's
//!   REACToR downlink at R (link delay `latency`) → the host. Lossless with
//!   `FlowControl::Pfc` on every ingress link: `eps_buffer` per link, PAUSE
//!   above `pfc_xoff`, RESUME at or below `pfc_xon`, each frame taking
//!   effect `pfc_off_min..pfc_off_max` (pause) or `pfc_on_min..pfc_on_max`
//!   (resume) later, drawn per frame from the seeded stream `net.pfc`
//!   (`Network::set_pfc_jitter`). Packets of 1,500 B of class bytes (no
//!   header: the EPS split and the rate limits count class bytes), the
//!   paced transport (a NIC sends its net flows round-robin, one packet at
//!   a time, at line rate).
//! * Each EPS class (i → j) is one net flow that grows as host i releases
//!   its bytes (`Network::extend_flow`; a new one after a short last packet
//!   has left). Every tick, a host whose NIC is not paused
//!   (`Network::host_paused`) and holds less than a tick's worth plus one
//!   packet (`Network::host_unsent`) releases its EPS classes' bytes one
//!   packet at a time, round-robin; bytes already handed to the NIC finish
//!   on the EPS even if the next period maps their class to a circuit (at
//!   most that backlog per host). The network's deliveries
//!   (`Network::take_deliveries`) are mapped back to photonet flows in the
//!   order their bytes were handed over.
//! * The circuit bytes a tick brings to downlink j occupy that port first
//!   (`Network::occupy_port`, strict priority, non-preemptive): EPS packets
//!   queued there wait for them, and PFC backs the EPS up if they must.
//! * `reactor_circuit`: the pure circuit-switched ToR of §5.4 — no EPS, every
//!   class is scheduled on circuits, rate limit `circuit_rate` (default R).
//!
//! # Time stepping
//! Circuits are fluid in fixed ticks of `tick` (1 µs by default): one
//! internal event per tick for the whole ToR while any byte is at a host or
//! in the EPS, none while idle. In a tick, each circuit carries what its
//! rate limit allows over the overlap of the tick with its sending window;
//! its bytes are delivered at the end of the tick plus `latency`. The EPS
//! network is co-simulated: the fabric's next event is the earlier of the
//! next tick and the network's next event, and the network is run up to a
//! tick (`Network::run_until`) before the tick's circuits, downlink loads
//! and releases are worked out. An arrival at an idle ToR starts a period
//! at once.

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

use crate::error::{bad, ConfigError};
use crate::fabric::registry::{BuildContext, FabricModule, FctBounds, ParamTable, Variant};
use crate::fabric::star::PacketStar;
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::net::{ClassFlows, PfcConfig, StarRouter};
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::sched::solstice;
use crate::units::{ByteSize, Rate, SimTime};
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Parameters of REACToR (`fabric = "reactor"` or `"reactor_circuit"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReactorParams {
    /// Circuit reconfiguration time δ, during which no circuit carries
    /// traffic (§5.4: 20 µs).
    pub reconfiguration: SimTime,
    /// Accumulation period W: one circuit schedule per period (§5.4: 3 ms).
    pub period: SimTime,
    /// Shortest configuration, δ included (§5.4: 40 µs); must exceed δ.
    pub min_config: SimTime,
    /// Per-host packet uplink to the EPS (`reactor`; §5.4: 10 or 20 Gbps).
    pub eps_rate: Rate,
    /// Cap on circuit-bound traffic at the source NIC; "0bps" = line rate.
    /// The per-period limit is lower where the EPS needs room (§3.3).
    pub circuit_rate: Rate,
    /// EPS buffer per ingress port (lossless, with PFC).
    pub eps_buffer: ByteSize,
    /// Bytes buffered from one ingress link of the EPS (a host's NIC, or the
    /// EPS port into a downlink) above which it is paused; `eps_buffer −
    /// pfc_xoff` must absorb eps_rate × (pfc_off_max + 2 ticks) and at least
    /// eps_rate × pfc_off_max plus two 1,500 B packets.
    pub pfc_xoff: ByteSize,
    /// Bytes from one ingress link at or below which it is resumed.
    pub pfc_xon: ByteSize,
    /// Shortest time from a PFC pause frame to the host's last byte
    /// (§3.4: 1,014 ns measured).
    pub pfc_off_min: SimTime,
    /// Longest (§3.4: 2,188 ns); circuit pauses are sent this long before a
    /// circuit goes down.
    pub pfc_off_max: SimTime,
    /// Shortest time from an unpause frame to the host's first byte
    /// (§3.4: 1.2 µs).
    pub pfc_on_min: SimTime,
    /// Longest (§3.4: 1.3 µs).
    pub pfc_on_max: SimTime,
    /// Fluid time step; the period must be a whole number of ticks.
    pub tick: SimTime,
    /// From a byte leaving the ToR to the destination host.
    pub latency: SimTime,
}

impl Default for ReactorParams {
    fn default() -> Self {
        ReactorParams {
            reconfiguration: SimTime::us(20),
            period: SimTime::ms(3),
            min_config: SimTime::us(40),
            eps_rate: Rate::gbps(10),
            circuit_rate: Rate(0),
            eps_buffer: ByteSize(64 * 1024),
            pfc_xoff: ByteSize(48 * 1024),
            pfc_xon: ByteSize(32 * 1024),
            pfc_off_min: SimTime::ns(1_014),
            pfc_off_max: SimTime::ns(2_188),
            pfc_on_min: SimTime::ns(1_200),
            pfc_on_max: SimTime::ns(1_300),
            tick: SimTime::us(1),
            latency: SimTime::ns(500),
        }
    }
}

impl ParamTable for ReactorParams {
    const TABLE: &'static str = "reactor";
}

/// Registration of REACToR.
pub struct ReactorModule;

const VARIANTS: &[Variant] = &[
    Variant {
        name: "reactor",
        label: "REACToR",
        description: "REACToR hybrid ToR: 100G circuits scheduled per period (Solstice-style) plus a slow EPS for unscheduled classes, PFC-paused host classes (NSDI'14)",
    },
    Variant {
        name: "reactor_circuit",
        label: "Circuit ToR",
        description: "Pure circuit-switched ToR of REACToR §5.4: every class scheduled on circuits, no packet switch",
    },
];

/// Numbers derived once from the parameters and the topology.
#[derive(Clone, Copy, Debug)]
struct Derived {
    n: usize,
    r: Rate,
    cap: Rate,
    hybrid: bool,
}

impl ReactorParams {
    fn derive(&self, hybrid: bool, ctx: &BuildContext) -> Result<Derived, ConfigError> {
        let t = ctx.topology;
        let n = t.hosts();
        let r = t.host_rate();
        if n < 2 {
            return Err(ConfigError::new(
                "topology",
                n,
                "REACToR needs at least two hosts",
            ));
        }
        if n > 4096 {
            return Err(ConfigError::new(
                "topology",
                n,
                "at most 4,096 hosts on one REACToR (a class per host pair)",
            ));
        }
        if self.tick == SimTime::ZERO {
            return Err(bad(
                ReactorParams::TABLE,
                "tick",
                self.tick,
                "must be positive",
            ));
        }
        if self.reconfiguration >= self.min_config {
            return Err(bad(
                ReactorParams::TABLE,
                "reconfiguration",
                self.reconfiguration,
                format!(
                    "δ must be shorter than the minimum configuration length {} (which includes δ)",
                    self.min_config
                ),
            ));
        }
        if self.min_config > self.period {
            return Err(bad(
                ReactorParams::TABLE,
                "min_config",
                self.min_config,
                format!("longer than the period {}", self.period),
            ));
        }
        if !self.period.0.is_multiple_of(self.tick.0) {
            return Err(bad(
                ReactorParams::TABLE,
                "period",
                self.period,
                format!("must be a whole number of ticks ({})", self.tick),
            ));
        }
        if self.tick > self.min_config - self.reconfiguration {
            return Err(bad(
                ReactorParams::TABLE,
                "tick",
                self.tick,
                "must not exceed the shortest configuration's circuit time (min_config − δ)",
            ));
        }
        if self.pfc_off_min > self.pfc_off_max {
            return Err(bad(
                ReactorParams::TABLE,
                "pfc_off_min",
                self.pfc_off_min,
                "must not exceed pfc_off_max",
            ));
        }
        if self.pfc_on_min > self.pfc_on_max {
            return Err(bad(
                ReactorParams::TABLE,
                "pfc_on_min",
                self.pfc_on_min,
                "must not exceed pfc_on_max",
            ));
        }
        if self.pfc_on_max + self.pfc_off_max >= self.min_config - self.reconfiguration {
            return Err(bad(
                ReactorParams::TABLE,
                "min_config",
                self.min_config,
                "a configuration must outlast δ plus the PFC on and off delays",
            ));
        }
        if self.circuit_rate > r {
            return Err(bad(
                ReactorParams::TABLE,
                "circuit_rate",
                self.circuit_rate,
                format!("a rate limit above the line rate R = {} b/s", r.0),
            ));
        }
        let cap = if self.circuit_rate.0 == 0 {
            r
        } else {
            self.circuit_rate
        };
        if hybrid {
            if self.eps_rate.0 == 0 || self.eps_rate >= r {
                return Err(bad(
                    ReactorParams::TABLE,
                    "eps_rate",
                    self.eps_rate,
                    format!(
                        "the EPS uplink must be positive and slower than the host rate ({} b/s)",
                        r.0
                    ),
                ));
            }
            if self.pfc_xon > self.pfc_xoff {
                return Err(bad(
                    ReactorParams::TABLE,
                    "pfc_xon",
                    self.pfc_xon,
                    "must not exceed pfc_xoff",
                ));
            }
            // After a link crosses xoff: what arrives until the PAUSE takes
            // effect, the packet then on the wire and the one that crossed.
            let need = self
                .eps_rate
                .bytes_in(self.pfc_off_max + self.tick + self.tick)
                .max(self.eps_rate.bytes_in(self.pfc_off_max) + 2 * EPS_PACKET);
            if self.pfc_xoff.0 >= self.eps_buffer.0 || self.eps_buffer.0 - self.pfc_xoff.0 < need {
                return Err(bad(ReactorParams::TABLE,
                    "pfc_xoff",
                    self.pfc_xoff,
                    format!(
                        "cannot absorb the pause reaction: eps_buffer − pfc_xoff must hold {need} B (eps_rate × (pfc_off_max + 2 ticks), at least eps_rate × pfc_off_max + two 1,500 B packets), eps_buffer is {} B",
                        self.eps_buffer.0
                    ),
                ));
            }
        }
        Ok(Derived { n, r, cap, hybrid })
    }

    /// Circuit time per period a class surely gets once scheduled: the
    /// shortest configuration less δ and the PFC reaction.
    fn min_window(&self) -> SimTime {
        self.min_config - self.reconfiguration - self.pfc_on_max - self.pfc_off_max
    }
}

impl FabricModule for ReactorModule {
    type Params = ReactorParams;
    const VARIANTS: &'static [Variant] = VARIANTS;

    fn layout(p: &ReactorParams, ctx: &BuildContext) -> Result<(), ConfigError> {
        p.derive(false, ctx).map(|_| ())
    }

    fn build(
        p: ReactorParams,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let d = p.derive(v.name == "reactor", ctx)?;
        Ok(Box::new(Reactor::new(p, d, ctx.seed)))
    }

    /// A lone flow at an idle ToR starts a period. If it is no larger than
    /// `eps_rate × W` (`reactor`), the EPS carries it at eps_rate within the
    /// period; otherwise its class gets at least one configuration per
    /// period carrying at least `(R − eps_rate) × (min_config − δ − PFC
    /// on/off)` bytes. Bound: `(k + 1) × W + 2 ticks + latency`, k = that
    /// many periods; at least bytes/R + latency.
    fn lone_flow_fct(
        p: &ReactorParams,
        v: &Variant,
        ctx: &BuildContext,
        _src: u32,
        _dst: u32,
        bytes: u64,
    ) -> Result<FctBounds, ConfigError> {
        let d = p.derive(v.name == "reactor", ctx)?;
        let at_r = d.r.tx_time(bytes);
        let min = at_r.saturating_sub(SimTime(1)) + p.latency;
        let lim = if d.hybrid {
            Rate(d.cap.0.min(d.r.0 - p.eps_rate.0))
        } else {
            d.cap
        };
        let per_period = lim.bytes_in(p.min_window()).max(1);
        let k = bytes.div_ceil(per_period) + 1;
        let max = p.period * (k + 1) + p.tick * 2 + p.latency;
        Ok(FctBounds { min, max })
    }
}

struct FlowSt {
    bytes: u64,
    /// Bytes that left the host (on a circuit or into the EPS).
    left_host: u64,
}

struct Cfg {
    /// Circuit up (after δ) and down.
    up: SimTime,
    end: SimTime,
    /// perm[src] = dst.
    perm: Vec<u32>,
    /// Per source: when its class starts and stops sending.
    on: Vec<SimTime>,
    stop: Vec<SimTime>,
}

/// Payload bytes of an EPS packet. No header: the EPS carries `eps_rate`
/// of class bytes, as the rate limits and the EPS split assume.
const EPS_PACKET: u64 = 1_500;

/// The EPS on `net/`: host NICs at `eps_rate` → one output-queued switch
/// (a port per host at `eps_rate`) → the REACToR downlink of each host at R
/// (where circuit bytes go first) → the host; PFC on every ingress link.
struct Eps {
    /// The star and the classes' net flows (`net::ClassFlows`).
    cf: ClassFlows<StarRouter>,
    /// Per host: where its round-robin over EPS classes resumes.
    rr: Vec<u32>,
    deliveries: Vec<(FlowId, SimTime, u64)>,
}

impl Eps {
    fn new(p: &ReactorParams, d: &Derived, seed: u64) -> Self {
        let mut cf = PacketStar {
            n: d.n as u32,
            uplink: p.eps_rate,
            port: p.eps_rate,
            downlink: Some(d.r),
            latency: p.latency,
            tiers: &["eps_up", "eps_port", "downlink"],
            payload: EPS_PACKET as u32,
            buffer: p.eps_buffer.0,
            pfc: PfcConfig {
                xoff: p.pfc_xoff.0,
                xon: p.pfc_xon.0,
                pause_delay: p.pfc_off_min,
                resume_delay: p.pfc_on_min,
            },
            seed,
        }
        .build();
        cf.net
            .set_pfc_jitter(p.pfc_off_max - p.pfc_off_min, p.pfc_on_max - p.pfc_on_min);
        Eps {
            cf,
            rr: vec![0; d.n],
            deliveries: Vec::new(),
        }
    }
}

/// The REACToR fabric.
pub struct Reactor {
    p: ReactorParams,
    d: Derived,
    rng: SimRng,
    flows: Vec<FlowSt>,
    class: Vec<VecDeque<FlowId>>,
    class_bytes: Vec<u64>,
    /// Bytes that arrived in each class since the last schedule.
    arrived: Vec<u64>,
    /// Per host, its backlogged classes (destinations), and each class's
    /// position there (u32::MAX if absent).
    backlogged: Vec<Vec<u32>>,
    pos: Vec<u32>,
    host_bytes: u64,
    // This period's schedule.
    configs: Vec<Cfg>,
    cur_cfg: usize,
    /// Class carried by circuits this period (never by the EPS).
    circ_class: Vec<bool>,
    circ_list: Vec<usize>,
    /// Circuit rate limit per destination this period.
    lim: Vec<Rate>,
    /// The EPS (`reactor`): a `net::Network`.
    eps: Option<Box<Eps>>,
    // The clock.
    active: bool,
    pending: bool,
    t_last: SimTime,
    period_start: SimTime,
    // Scratch.
    circ_in: Vec<u64>,
    chunks: Vec<(FlowId, u64)>,
    elig: Vec<(u64, u32)>,
    // Statistics.
    periods: u64,
    configs_total: u64,
    circuit_bytes: u64,
    eps_delivered: u64,
    circuit_time_ps: u128,
    night_bytes: u64,
    ticks: u64,
    /// Tests: every circuit send (src, dst, from, to) and every
    /// configuration (period start, up, end, perm).
    #[cfg(test)]
    log: Option<TestLog>,
}

#[cfg(test)]
#[derive(Default)]
struct TestLog {
    sends: Vec<(usize, usize, SimTime, SimTime)>,
    configs: Vec<(SimTime, SimTime, SimTime, Vec<u32>)>,
}

impl Reactor {
    fn new(p: ReactorParams, d: Derived, seed: u64) -> Self {
        let n = d.n;
        Reactor {
            rng: RngStreams::new(seed).stream("reactor.pfc"),
            flows: Vec::new(),
            class: (0..n * n).map(|_| VecDeque::new()).collect(),
            class_bytes: vec![0; n * n],
            arrived: vec![0; n * n],
            backlogged: vec![Vec::new(); n],
            pos: vec![u32::MAX; n * n],
            host_bytes: 0,
            configs: Vec::new(),
            cur_cfg: 0,
            circ_class: vec![false; n * n],
            circ_list: Vec::new(),
            lim: vec![d.cap; n],
            eps: d.hybrid.then(|| Box::new(Eps::new(&p, &d, seed))),
            active: false,
            pending: false,
            t_last: SimTime::ZERO,
            period_start: SimTime::ZERO,
            circ_in: vec![0; n],
            chunks: Vec::new(),
            elig: Vec::new(),
            periods: 0,
            configs_total: 0,
            circuit_bytes: 0,
            eps_delivered: 0,
            circuit_time_ps: 0,
            night_bytes: 0,
            ticks: 0,
            #[cfg(test)]
            log: None,
            p,
            d,
        }
    }

    fn draw(&mut self, lo: SimTime, hi: SimTime) -> SimTime {
        SimTime(self.rng.random_range(lo.0..=hi.0))
    }

    /// Takes up to `max` bytes from class `q` into `self.chunks`.
    fn take(&mut self, q: usize, max: u64) -> u64 {
        self.chunks.clear();
        let mut rem = max;
        while rem > 0 {
            let Some(&f) = self.class[q].front() else {
                break;
            };
            let st = &mut self.flows[f as usize];
            let b = rem.min(st.bytes - st.left_host);
            st.left_host += b;
            rem -= b;
            self.chunks.push((f, b));
            if st.left_host == st.bytes {
                self.class[q].pop_front();
            }
        }
        let took = max - rem;
        self.class_bytes[q] -= took;
        self.host_bytes -= took;
        if self.class_bytes[q] == 0 {
            self.unlist(q);
        }
        took
    }

    fn unlist(&mut self, q: usize) {
        let n = self.d.n;
        let i = q / n;
        let k = self.pos[q];
        if k == u32::MAX {
            return;
        }
        let list = &mut self.backlogged[i];
        list.swap_remove(k as usize);
        if let Some(&moved) = list.get(k as usize) {
            self.pos[i * n + moved as usize] = k;
        }
        self.pos[q] = u32::MAX;
    }

    /// The circuit schedule of the period starting at `start`.
    fn make_schedule(&mut self, start: SimTime) {
        let n = self.d.n;
        let w = self.p.period;
        for &q in &self.circ_list {
            self.circ_class[q] = false;
        }
        self.circ_list.clear();
        self.configs.clear();
        self.cur_cfg = 0;
        self.periods += 1;
        // Demand estimate per class: the bytes that arrived in it over the
        // last period (its rate × W), capped by its backlog; its backlog if
        // nothing arrived. The EPS mapping uses it; a class mapped to the
        // EPS takes its whole backlog along.
        let demand: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let q = i * n + j;
                        let b = self.class_bytes[q];
                        let v = match self.arrived[q] {
                            0 => b,
                            a => a.min(b),
                        };
                        v as f64
                    })
                    .collect()
            })
            .collect();
        let share = if self.d.hybrid {
            let budget = self.p.eps_rate.bytes_in(w) as f64;
            solstice::eps_split(&demand, &vec![budget; n], &vec![budget; n])
        } else {
            vec![vec![0.0; n]; n]
        };
        self.arrived.iter_mut().for_each(|a| *a = 0);
        let r = self.d.r.0;
        for j in 0..n {
            let into: f64 = (0..n).map(|i| share[i][j]).sum();
            let eps_bps = ((into * 8.0 / w.as_secs_f64()).round() as u64).min(self.p.eps_rate.0);
            self.lim[j] = Rate(self.d.cap.0.min(r.saturating_sub(eps_bps)).max(1));
        }
        let ovh = (self.p.pfc_on_max + self.p.pfc_off_max).0 as f64;
        let tick = self.p.tick.0 as f64;
        let mut any = false;
        let time: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let b = demand[i][j] - share[i][j];
                        if b > 0.0 {
                            any = true;
                            // In whole ticks: pairs with nearly equal demand
                            // get equal entries, so slicing does not leave
                            // slivers that cost a minimum configuration each.
                            let t = self.lim[j].tx_time(b as u64).0 as f64 + ovh;
                            (t / tick).ceil() * tick
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        if !any {
            return;
        }
        let delta = self.p.reconfiguration;
        let s = solstice::schedule_compressed(
            &time,
            w.0 as f64,
            delta.0 as f64,
            self.p.min_config.0 as f64,
        )
        .expect("parameters validated at build");
        let mut t = start;
        let end_of_period = start + w;
        for c in &s.configs {
            let up = t + delta;
            let end = (up + SimTime(c.duration.floor() as u64)).min(end_of_period);
            if end <= up {
                break;
            }
            let perm: Vec<u32> = c.perm.iter().map(|&j| j as u32).collect();
            let mut on = Vec::with_capacity(n);
            let mut stop = Vec::with_capacity(n);
            for i in 0..n {
                let j = perm[i] as usize;
                let q = i * n + j;
                if i != j && share[i][j] == 0.0 && !self.circ_class[q] {
                    self.circ_class[q] = true;
                    self.circ_list.push(q);
                }
                let a = up + self.draw(self.p.pfc_on_min, self.p.pfc_on_max);
                let b =
                    end - self.p.pfc_off_max + self.draw(self.p.pfc_off_min, self.p.pfc_off_max);
                on.push(a);
                stop.push(b);
            }
            self.circuit_time_ps += (end - up).0 as u128;
            #[cfg(test)]
            if let Some(l) = &mut self.log {
                l.configs.push((start, up, end, perm.clone()));
            }
            self.configs.push(Cfg {
                up,
                end,
                perm,
                on,
                stop,
            });
            t = end;
        }
        self.configs_total += self.configs.len() as u64;
    }

    /// One tick: [t_last, t2).
    fn tick(&mut self, t2: SimTime, rec: &mut Recorder) {
        let n = self.d.n;
        let t1 = self.t_last;
        if self.pending {
            self.pending = false;
            self.make_schedule(self.period_start);
        }
        self.ticks += 1;
        let at = t2 + self.p.latency;
        self.circ_in.iter_mut().for_each(|v| *v = 0);
        // Circuits.
        while self.cur_cfg < self.configs.len() && self.configs[self.cur_cfg].end <= t1 {
            self.cur_cfg += 1;
        }
        let mut k = self.cur_cfg;
        while k < self.configs.len() && self.configs[k].up < t2 {
            for i in 0..n {
                let c = &self.configs[k];
                let j = c.perm[i] as usize;
                let q = i * n + j;
                if !self.circ_class[q] || self.class_bytes[q] == 0 {
                    continue;
                }
                let a = c.on[i].max(t1);
                let b = c.stop[i].min(t2);
                if b <= a {
                    continue;
                }
                if a < c.up || b > c.end {
                    self.night_bytes += 1;
                }
                let budget = self.lim[j].bytes_in(b - a);
                let took = self.take(q, budget);
                #[cfg(test)]
                if let Some(l) = &mut self.log {
                    if took > 0 {
                        l.sends.push((i, j, a, b));
                    }
                }
                self.circ_in[j] += took;
                self.circuit_bytes += took;
                for ci in 0..self.chunks.len() {
                    let (f, b) = self.chunks[ci];
                    rec.deliver_and_complete(f, at, b, at);
                }
            }
            k += 1;
        }
        if !self.d.hybrid {
            return;
        }
        // The circuit bytes of this tick reach their downlinks first; the
        // EPS packets queued there wait for them.
        let mut eps = self.eps.take().expect("hybrid");
        for j in 0..n {
            if self.circ_in[j] > 0 {
                eps.cf
                    .net
                    .occupy_port(t2, (2 * n + j) as u32, self.circ_in[j]);
            }
        }
        self.eps_release(t2, &mut eps);
        self.eps = Some(eps);
    }

    /// Hosts hand their EPS classes' bytes to their NICs: while a NIC is
    /// not paused by PFC and holds less than a tick's worth plus a packet,
    /// one packet at a time from its classes not on a circuit this period,
    /// round-robin (the NIC serves the classes' net flows round-robin too).
    fn eps_release(&mut self, now: SimTime, eps: &mut Eps) {
        let n = self.d.n;
        let target = self.p.eps_rate.bytes_in(self.p.tick) + EPS_PACKET;
        for i in 0..n {
            if self.backlogged[i].is_empty() || eps.cf.net.host_paused(i as u32) {
                continue;
            }
            let mut unsent = eps.cf.net.host_unsent(i as u32);
            if unsent >= target {
                continue;
            }
            self.elig.clear();
            for &j in &self.backlogged[i] {
                if !self.circ_class[i * n + j as usize] {
                    self.elig.push((0, j));
                }
            }
            let m = self.elig.len();
            if m == 0 {
                continue;
            }
            // By destination: the order does not depend on the list's.
            self.elig.sort_unstable_by_key(|e| e.1);
            let start = eps.rr[i] as usize % m;
            let (mut k, mut dry) = (0, 0);
            while unsent < target && dry < m {
                let j = self.elig[(start + k) % m].1 as usize;
                k += 1;
                let q = i * n + j;
                if self.class_bytes[q] == 0 {
                    dry += 1;
                    continue;
                }
                dry = 0;
                unsent += self.take(q, EPS_PACKET);
                eps.cf.hand(now, i as u32, j as u32, q, &self.chunks);
            }
            eps.rr[i] = ((start + k) % m) as u32;
        }
    }

    /// Runs the EPS network up to `now` and delivers what reached hosts,
    /// mapped back to photonet flows in the order they were handed over.
    fn eps_run(&mut self, now: SimTime, rec: &mut Recorder) {
        let Some(mut eps) = self.eps.take() else {
            return;
        };
        let e = &mut *eps;
        let events = e.cf.run(now, &mut e.deliveries);
        rec.count_internal_events(events);
        for &(f, t, b) in &e.deliveries {
            self.eps_delivered += b;
            rec.deliver_and_complete(f, t, b, t);
        }
        self.eps = Some(eps);
    }

    fn in_net(&self) -> u64 {
        self.eps.as_ref().map_or(0, |e| e.cf.in_net())
    }
}

impl Fabric for Reactor {
    fn name(&self) -> String {
        if self.d.hybrid {
            format!("REACToR ({} Gbps EPS)", self.p.eps_rate.as_f64() / 1e9)
        } else {
            "Circuit ToR".into()
        }
    }
    fn hosts(&self) -> usize {
        self.d.n
    }
    fn host_rate(&self) -> Rate {
        self.d.r
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        debug_assert_eq!(flow.id as usize, self.flows.len());
        let n = self.d.n;
        self.flows.push(FlowSt {
            bytes: flow.bytes,
            left_host: 0,
        });
        if flow.bytes == 0 {
            return;
        }
        let q = flow.src as usize * n + flow.dst as usize;
        self.class[q].push_back(flow.id);
        self.class_bytes[q] += flow.bytes;
        self.arrived[q] += flow.bytes;
        self.host_bytes += flow.bytes;
        if self.pos[q] == u32::MAX {
            let i = flow.src as usize;
            self.pos[q] = self.backlogged[i].len() as u32;
            self.backlogged[i].push(flow.dst);
        }
        if !self.active {
            self.active = true;
            self.pending = true;
            self.t_last = now;
            self.period_start = now;
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        let tick = self.active.then(|| self.t_last + self.p.tick);
        match (tick, self.eps.as_ref().and_then(|e| e.cf.net.next_event())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.eps_run(now, rec);
        if !self.active || now != self.t_last + self.p.tick {
            return;
        }
        rec.count_internal_events(1);
        self.tick(now, rec);
        self.t_last = now;
        if self.host_bytes == 0 && self.in_net() == 0 {
            self.active = false;
            return;
        }
        if now >= self.period_start + self.p.period {
            self.period_start = now;
            self.pending = true;
        }
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}

    fn stats(&self) -> FabricStats {
        let mut s: FabricStats = [
            ("periods", self.periods as f64),
            ("configurations", self.configs_total as f64),
            (
                "configurations_per_period",
                self.configs_total as f64 / self.periods.max(1) as f64,
            ),
            ("circuit_bytes", self.circuit_bytes as f64),
            (
                "circuit_utilisation",
                if self.circuit_time_ps > 0 {
                    self.circuit_bytes as f64 * 8.0
                        / (self.circuit_time_ps as f64
                            * 1e-12
                            * self.d.r.as_f64()
                            * self.d.n as f64)
                } else {
                    0.0
                },
            ),
            ("circuit_in_night", self.night_bytes as f64),
            ("ticks", self.ticks as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(e) = &self.eps {
            s.insert("eps_bytes".into(), self.eps_delivered as f64);
            for (k, v) in e.cf.net.stats() {
                let key = match k.as_str() {
                    "pfc_pauses" => "pfc_pauses".to_string(),
                    "drops" => "eps_overflows".to_string(),
                    "peak_queue_bytes.eps_up" => "peak_eps_ingress_bytes".to_string(),
                    "data_packets_delivered"
                    | "pfc_pause_time_us"
                    | "peak_queue_bytes.eps_port"
                    | "peak_queue_bytes.downlink" => format!("eps_{k}"),
                    _ => continue,
                };
                s.insert(key, v);
            }
        }
        s
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.night_bytes != 0 {
            return Err(format!(
                "reactor: a circuit carried traffic outside its window {} times",
                self.night_bytes
            ));
        }
        if let Some(e) = &self.eps {
            if e.cf.net.drops() != 0 {
                return Err(format!(
                    "reactor: the EPS dropped {} packets despite PFC",
                    e.cf.net.drops()
                ));
            }
            e.cf.check_invariants()
                .map_err(|m| format!("reactor EPS: {m}"))?;
        }
        let n = self.d.n;
        let mut host = 0u64;
        for q in 0..n * n {
            let mut b = 0u64;
            for &f in &self.class[q] {
                let st = &self.flows[f as usize];
                if st.left_host >= st.bytes {
                    return Err(format!("reactor: flow {f} sent but still queued"));
                }
                b += st.bytes - st.left_host;
            }
            if b != self.class_bytes[q] {
                return Err(format!(
                    "reactor: class {q} holds {b} B, counter says {}",
                    self.class_bytes[q]
                ));
            }
            if (b > 0) != (self.pos[q] != u32::MAX) {
                return Err(format!("reactor: class {q} backlog list out of step"));
            }
            host += b;
        }
        if host != self.host_bytes {
            return Err("reactor: host byte counter out of step".into());
        }
        for (k, c) in self.configs.iter().enumerate() {
            let mut used = vec![false; n];
            for &j in &c.perm {
                if std::mem::replace(&mut used[j as usize], true) {
                    return Err(format!("reactor: configuration {k} is not a permutation"));
                }
            }
            if k > 0 && c.up < self.configs[k - 1].end + self.p.reconfiguration {
                return Err(format!("reactor: configuration {k} skips its night"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;
    use proptest::prelude::*;

    fn topo(hosts: u32) -> Topology {
        Topology {
            racks: hosts,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(100),
            server_rate: None,
        }
    }

    fn build(p: ReactorParams, hybrid: bool, t: &Topology) -> Reactor {
        let ctx = BuildContext {
            topology: t,
            seed: 1,
            check_invariants: true,
        };
        let d = p.derive(hybrid, &ctx).unwrap();
        Reactor::new(p, d, 1)
    }

    fn flow(id: u32, src: u32, dst: u32, bytes: u64, start: SimTime) -> Flow {
        Flow {
            id,
            src,
            dst,
            bytes,
            start,
        }
    }

    /// Runs `flows` (sorted by start) to completion, checking invariants.
    fn run(m: &mut Reactor, flows: &[Flow]) -> Recorder {
        let mut rec = Recorder::new(None);
        crate::fabric::drive(m, flows, &mut rec, SimTime::MAX, |_| true);
        assert_eq!(rec.violation_count(), 0);
        rec
    }

    #[test]
    fn a_lone_flow_on_a_circuit_hand_worked() {
        // 2 hosts at 100 Gbps, pure circuit ToR. 1.25 MB = 100 µs at R. The
        // schedule (computed at the first tick) holds one configuration of
        // 100 µs + the PFC overhead (1.3 + 2.188 µs), up at δ = 20 µs; the
        // class sends from 20 µs + on (1.2–1.3 µs), so its last byte leaves
        // during the tick [121, 122) µs and arrives at 122 µs + 0.5 µs.
        let t = topo(2);
        let mut m = build(ReactorParams::default(), false, &t);
        let rec = run(&mut m, &[flow(0, 0, 1, 1_250_000, SimTime::ZERO)]);
        assert_eq!(rec.finish(0), Some(SimTime::ns(122_500)));
        assert_eq!(m.configs_total, 1);
        assert_eq!(m.circuit_bytes, 1_250_000);
    }

    #[test]
    fn a_small_flow_goes_to_the_eps_at_its_rate() {
        // 100 kB fits the EPS budget (10 Gbps × 3 ms): no circuit. The
        // first tick (4 µs) hands host 2's NIC its first packets and every
        // tick tops it up, so the NIC sends back to back at 10 Gbps: 66
        // packets of 1,500 B and one of 1,000 B leave it by 4 + 80 = 84 µs;
        // the last (short) one waits at the EPS port for the full one ahead
        // of it (83.2–84.4 µs), crosses it in 0.8 µs and the downlink in
        // 80 ns (100 Gbps), then 0.5 µs of latency: 85.78 µs.
        let t = topo(4);
        let mut m = build(ReactorParams::default(), true, &t);
        let rec = run(&mut m, &[flow(0, 2, 1, 100_000, SimTime::us(3))]);
        assert_eq!(rec.finish(0), Some(SimTime::ns(85_780)));
        assert_eq!(m.circuit_bytes, 0);
        assert_eq!(m.eps_delivered, 100_000);
        assert_eq!(m.configs_total, 0);
    }

    #[test]
    fn pfc_pauses_an_incast_into_the_eps_without_loss() {
        // Hosts 1..7 each send 100 kB to host 0 through the EPS: 70 Gbps
        // arrive at port 0, which drains 10; each ingress passes xoff
        // (48 KiB) and is paused, never overflowing its 64 KiB. The NICs
        // start at the first tick (1 µs), the first packet reaches the
        // switch at 2.2 µs; if port 0 never idles while bytes wait (PFC
        // resumes in time), it sends 700 kB / 10 Gbps = 560 µs from then,
        // and the last packet (1,000 B) crosses the downlink (80 ns) and
        // the 0.5 µs latency: 562.78 µs exactly.
        let t = topo(8);
        let mut m = build(ReactorParams::default(), true, &t);
        let flows: Vec<Flow> = (1..8)
            .map(|i| flow(i - 1, i, 0, 100_000, SimTime::ZERO))
            .collect();
        let rec = run(&mut m, &flows);
        let last = (0..7).map(|f| rec.finish(f).unwrap()).max().unwrap();
        assert_eq!(last, SimTime::ns(562_780));
        let s = m.stats();
        assert!(s["pfc_pauses"] >= 7.0, "{}", s["pfc_pauses"]);
        assert_eq!(s["eps_overflows"], 0.0);
        let peak = s["peak_eps_ingress_bytes"] as u64;
        assert!(peak > m.p.pfc_xoff.0 && peak <= m.p.eps_buffer.0, "{peak}");
    }

    #[test]
    fn circuit_traffic_is_rate_limited_to_leave_room_for_the_eps() {
        // Host 0 sends 30 MB to 1 (circuit) while hosts 2 and 3 send 1.5 MB
        // each to 1 (EPS: 3 MB into host 1 over W = 8 Gbps of EPS share).
        // The circuit to 1 is limited to 100 − 8 = 92 Gbps, so the EPS
        // traffic is never starved at host 1's downlink.
        let t = topo(4);
        let mut m = build(ReactorParams::default(), true, &t);
        let flows = [
            flow(0, 0, 1, 30_000_000, SimTime::ZERO),
            flow(1, 2, 1, 1_500_000, SimTime::ZERO),
            flow(2, 3, 1, 1_500_000, SimTime::ZERO),
        ];
        let rec = run(&mut m, &flows);
        assert_eq!(m.lim[1], Rate::gbps(92));
        // The circuit flow runs at 92 Gbps from δ + on (≈ 21.3 µs): 30 MB in
        // 2,608.7 µs. Meanwhile port 1 gives the EPS the 8 Gbps the circuit
        // leaves (10 Gbps before and after): 3 MB by < 3 MB / 8 Gbps = 3 ms.
        let c = rec.finish(0).unwrap();
        assert!(c >= SimTime::us(2_629) && c <= SimTime::us(2_632), "{c}");
        let eps_done = rec.finish(1).unwrap().max(rec.finish(2).unwrap());
        assert!(eps_done <= SimTime::us(3_000), "{eps_done}");
        assert_eq!(m.eps_delivered, 3_000_000);
        assert_eq!(m.circuit_bytes, 30_000_000);
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let t = topo(4);
        let ctx = BuildContext {
            topology: &t,
            seed: 1,
            check_invariants: false,
        };
        let cases = [
            (
                ReactorParams {
                    reconfiguration: SimTime::us(40),
                    ..ReactorParams::default()
                },
                "reactor.reconfiguration",
            ),
            (
                ReactorParams {
                    circuit_rate: Rate::gbps(120),
                    ..ReactorParams::default()
                },
                "reactor.circuit_rate",
            ),
            (
                ReactorParams {
                    pfc_xoff: ByteSize(63 * 1024),
                    ..ReactorParams::default()
                },
                "reactor.pfc_xoff",
            ),
            (
                ReactorParams {
                    eps_rate: Rate::gbps(100),
                    ..ReactorParams::default()
                },
                "reactor.eps_rate",
            ),
            (
                ReactorParams {
                    period: SimTime::ns(3_000_500),
                    ..ReactorParams::default()
                },
                "reactor.period",
            ),
        ];
        for (p, key) in cases {
            let e = ReactorModule::build(p, &VARIANTS[0], &ctx).err().unwrap();
            assert_eq!(e.key, key, "{e}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// No circuit carries traffic outside an established configuration:
        /// every send lies inside [up, end) of a configuration of its period
        /// that connects its pair, configurations of a period are separated
        /// by at least δ, and the first is up δ after the period starts.
        #[test]
        fn no_circuit_carries_traffic_during_a_night(
            hosts in 3u32..7,
            hybrid in any::<bool>(),
            delta_us in 2u64..30,
            extra_us in 8u64..40,
            flows in prop::collection::vec((0u32..6, 1u32..6, 1u64..3_000_000, 0u64..4_000), 1..25),
        ) {
            let t = topo(hosts);
            let p = ReactorParams {
                reconfiguration: SimTime::us(delta_us),
                min_config: SimTime::us(delta_us + extra_us),
                period: SimTime::us(500),
                ..ReactorParams::default()
            };
            let mut m = build(p, hybrid, &t);
            m.log = Some(TestLog::default());
            let mut fl: Vec<Flow> = flows.iter().map(|&(s, o, b, st)| {
                let s = s % hosts;
                flow(0, s, (s + 1 + o % (hosts - 1)) % hosts, b, SimTime::us(st))
            }).collect();
            fl.sort_by_key(|f| f.start);
            for (k, f) in fl.iter_mut().enumerate() { f.id = k as u32; }
            let rec = run(&mut m, &fl);
            for f in &fl { prop_assert!(rec.finish(f.id).is_some()); }
            let log = m.log.take().unwrap();
            let delta = SimTime::us(delta_us);
            for (k, c) in log.configs.iter().enumerate() {
                let prev_end = if k > 0 && log.configs[k - 1].0 == c.0 { log.configs[k - 1].2 } else { c.0 };
                prop_assert!(c.1 >= prev_end + delta, "configuration {k} up before its night ends");
                prop_assert!(c.2 <= c.0 + SimTime::us(500));
            }
            for &(i, j, a, b) in &log.sends {
                prop_assert!(a < b);
                let ok = log.configs.iter().any(|c| c.3[i] as usize == j && c.1 <= a && b <= c.2);
                prop_assert!(ok, "send {i}->{j} in [{a}, {b}) outside every configuration");
            }
        }
    }
}

//! Baldur (`fabric = "baldur"`): the bufferless, clock-less all-optical
//! multi-butterfly of transistor-laser 2×2 switches (seed
//! `baldur-all-optical.txt` §IV–V).
//!
//! # Topology
//! N = 2^k nodes, k stages of N/2 switches. Each switch has two input and two
//! output *directions*, each with `multiplicity` (m) ports. Stage s routes on
//! bit k−1−s of the destination (one routing bit per stage, most significant
//! first). Viewed as a sorting network, stage s is split into 2^s sorting
//! groups of N/2^(s+1) switches (the switches that can still reach the
//! destinations with one s-bit prefix); the m·N/2^(s+1) outputs of a group in
//! direction b are wired one-to-one onto the 2m·N/2^(s+2) inputs of group 2g+b
//! of stage s+1 by a random permutation drawn from the seeded stream
//! `baldur.wiring` (`random_wiring = false`: in order, the plain butterfly for
//! m = 1). Node i transmits into input port 0 of direction i mod 2 of switch
//! i/2 of stage 0; the m outputs of direction b of last-stage switch j are m
//! receivers of node 2j+b (a node can receive m packets at once).
//!
//! # Switching
//! Bufferless and clock-less: a packet whose head reaches a switch takes the
//! first free output of its direction (ports checked in order, as the
//! arbitration units of §IV-E do); if all m are busy it is dropped. An output
//! stays busy for the packet's length on the wire plus `end_gap_bits` bit
//! periods (the line activity detector declares the end of a packet after 6T
//! without light, §IV-C). A packet's length on the wire is its bytes at the
//! link rate plus the length-encoded routing bits: 3 bit periods per stage
//! (§IV-B). Per-switch latency by m is Table V's (0.14, 0.49, 0.94, 1.5,
//! 2.25 ns); links are `injection_link`, `stage_link` (between stages) and
//! `ejection_link`.
//!
//! # Exact traversal without per-stage events
//! Every switch of a stage has the same latency and every link of a kind the
//! same delay, so a packet whose head leaves its node at t reaches stage s at
//! t + injection_link + s·(switch_latency + stage_link): arrival order at every
//! switch is transmission order. Packets are therefore pushed through all k
//! stages at the instant they start transmission, in the (deterministic) order
//! transmissions start; each output keeps only the time it becomes free. This
//! is exact, not an approximation: no packet transmitted later can reach any
//! switch earlier. Packets that tie (same instant at the same switch) are
//! served in transmission order. A packet's only event is its arrival at the
//! destination (or nothing, if dropped), and no heap orders most of them:
//! full-size data packets and ACKs each arrive a constant time after they
//! start, so their arrivals go to two FIFOs already in time order; only
//! shorter data packets (a flow's last) go to a small heap. Transmitter
//! wake-ups go to a ring of time buckets (every wake-up is within one
//! transmission of now) and timeouts to a FIFO (each is a constant time
//! after its transmission). Packets are pushed through the switches lazily,
//! in batches and in transmission order, once their arrival could be the
//! next event; and the run loop lets Baldur take all its steps up to the
//! next flow arrival in one call (`Fabric::advance_until`).
//!
//! # Memory
//! At paper scale the run is bound by cache misses on three random-access
//! structures, so each is kept small: the switch outputs (32-bit free
//! times after a moving base, each interleaved with the output's wiring, a
//! direction's m outputs adjacent: one line per stage for m = 4; 320 KB at
//! 1,024 nodes), the outstanding packets (32 B each, serial inside, rare
//! state in a side table) and the nodes (one 64 B line each; their ACK and
//! new-flow queues are lists through pools shared by all nodes, whose few
//! live entries stay cached). The batched traversal is specialised for
//! m = 1…5 (the first-free search unrolled) and reads every probe's output
//! group of a stage in a tight pass first, so the misses overlap. Tried
//! and not kept: the wake-up ring's buckets as lists through one entry
//! table instead of a buffer each (fewer L2 misses, but more instructions:
//! 1 % slower, paired); a mask-indexed ring in place of `VecDeque` for the
//! FIFOs (no fewer instructions: 4.104 G vs 4.102 G Ir, callgrind, 1/10
//! scale), where keeping each FIFO's front time in a field did pay (−6.6 %
//! Ir); a mask instead of `%` in the wake-up ring's word scan (+0.1 % Ir,
//! A/B cpu 0.996: noise). Switch traversal since (issue 12): a direction's
//! m free times side by side, then its m wiring words (same line); 32-bit
//! times kept below 2^31 and compared signed, so a dropped batched probe's
//! time can be NEVER (no drop test per stage); group indices masked, not
//! bounds-checked: 3.701 G -> 3.507 G Ir (callgrind, 1/10 scale, without a
//! prefetch pass). The prefetch pass per probe (+164 M Ir) still paid (A/B
//! cpu 0.984); reading the stage's lines in address order instead when
//! the batch reads most of them pays more (3.540 G Ir, A/B cpu 0.970
//! against the per-probe pass). Not kept: touching each probe's next-stage
//! group in the main pass instead of a pass of its own (3.660 G Ir, A/B
//! cpu 1.09). LLVM does not vectorise the 4-port first-free search from
//! plain code on the SSE2 baseline (scalar cmp/setle per port); a form it
//! does vectorise (byte masks) needs a horizontal OR and is no shorter.
//!
//! # Nodes
//! A node's transmitter (rate R, the topology's host rate) sends, in priority
//! order: ACKs it owes, retransmissions whose backoff has expired, and new
//! packets of its flows (flows in arrival order, each cut into `packet`-byte
//! packets). Consecutive transmissions are separated by `end_gap_bits`. Every
//! data packet is held in the node's retransmission buffer from its first
//! transmission until its ACK arrives; the peak occupancy per node is
//! reported. The receiver ACKs every copy it receives (`ack`-byte ACKs cross
//! the network like data and can be dropped). A packet not ACKed `timeout`
//! after its transmission started is retransmitted after a binary exponential
//! backoff: after its c-th timeout, a uniform number of `backoff_slot`s in
//! [0, 2^min(c, backoff_cap) − 1]. Receivers deliver each flow's packets to
//! the application in order and exactly once (`delivery::ReorderBuffer`;
//! single-packet flows need only a flag).

use crate::delivery::{unit_bytes, unit_count, Receipt, ReorderBuffer};
use crate::error::ConfigError;
use crate::fabric::registry::{BuildContext, FabricModule, FctBounds, ParamTable, Variant};
use crate::fabric::{Fabric, FabricStats};
use crate::flow::{Flow, FlowId};
use crate::pool::{List, Pool};
use crate::recorder::Recorder;
use crate::rng::{RngStreams, SimRng};
use crate::timer::{TimerId, TimerQueue};
use crate::units::{ByteSize, Rate, SimTime};
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// Switch latency by multiplicity m = 1…5 (Table V), in picoseconds.
pub const TABLE_V_SWITCH_LATENCY_PS: [u64; 5] = [140, 490, 940, 1_500, 2_250];
/// TL gates per 2×2 switch by multiplicity m = 1…5 (Table V).
pub const TABLE_V_GATES: [u64; 5] = [64, 300, 642, 1_112, 1_710];
/// Largest multiplicity accepted (ports per direction).
pub const MAX_MULTIPLICITY: u32 = 64;

/// Parameters of Baldur (`fabric = "baldur"`). Defaults are the paper's
/// (Table VI: m = 4, 1.5 ns switches, 100 ns input and output links; §V-A:
/// 512 B packets).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BaldurParams {
    /// Path multiplicity m: ports per direction of every 2×2 switch (1…64).
    pub multiplicity: u32,
    /// Latency of one switch. Default: Table V's value for the multiplicity
    /// (0.14, 0.49, 0.94, 1.5, 2.25 ns for m = 1…5); required for m > 5.
    pub switch_latency: Option<SimTime>,
    /// Delay of the link from a node to the first stage (Table VI: 100 ns).
    pub injection_link: SimTime,
    /// Delay of each link between two stages (waveguides and fibre array
    /// units between interposers; the paper gives no value: 0 by default).
    pub stage_link: SimTime,
    /// Delay of the link from the last stage to a node (Table VI: 100 ns).
    pub ejection_link: SimTime,
    /// Largest data packet (payload): flows are cut into packets of at most
    /// this size (§V-A: 512 B).
    pub packet: ByteSize,
    /// Size of an ACK (the paper gives none).
    pub ack: ByteSize,
    /// Bit periods without light that end a packet (§IV-C: 6T): each switch
    /// output stays busy this long after a packet's tail, and a transmitter
    /// leaves this gap between packets.
    pub end_gap_bits: u32,
    /// Time from a data packet's transmission to its retransmission if no ACK
    /// arrived (the paper gives none; a lone packet's round trip at the
    /// defaults is about 0.6 us).
    pub timeout: SimTime,
    /// Binary exponential backoff slot: after its c-th timeout a packet waits
    /// a uniform number of slots in [0, 2^min(c, backoff_cap) − 1].
    pub backoff_slot: SimTime,
    /// Largest backoff exponent.
    pub backoff_cap: u32,
    /// Wire each sorting group's outputs to the next stage by a seeded random
    /// permutation (the paper's "randomness", §IV-E); false: in order.
    pub random_wiring: bool,
    /// When racks × servers_per_rack is not a power of two: build the next
    /// larger butterfly and leave its extra ports unused (true), or refuse the
    /// topology (false). `photonet compare`'s 192-server scenario sets it.
    pub round_up_nodes: bool,
}

impl Default for BaldurParams {
    fn default() -> Self {
        BaldurParams {
            multiplicity: 4,
            switch_latency: None,
            injection_link: SimTime::ns(100),
            stage_link: SimTime::ZERO,
            ejection_link: SimTime::ns(100),
            packet: ByteSize(512),
            ack: ByteSize(16),
            end_gap_bits: 6,
            timeout: SimTime::us(2),
            backoff_slot: SimTime::ns(200),
            backoff_cap: 10,
            random_wiring: true,
            round_up_nodes: false,
        }
    }
}

impl ParamTable for BaldurParams {
    const TABLE: &'static str = "baldur";
}

/// Checked numbers derived from the parameters and the topology.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub nodes: u32,
    pub stages: u32,
    pub m: u32,
    pub rate: Rate,
    pub switch_latency: SimTime,
    /// Head leaves the node → head reaches the destination node.
    pub head_latency: SimTime,
    /// One bit period, in picoseconds (rounded to the nearest).
    pub gap: SimTime,
}

impl Layout {
    pub fn new(p: &BaldurParams, ctx: &BuildContext) -> Result<Layout, ConfigError> {
        let n = ctx.topology.hosts();
        if n < 2 || (!n.is_power_of_two() && !p.round_up_nodes) {
            return Err(ConfigError::new(
                "topology.racks",
                format!("{} racks x {} servers", ctx.topology.racks, ctx.topology.servers_per_rack),
                format!("Baldur's nodes (racks x servers_per_rack = {n}) must be a power of two, at least 2 (a k-stage butterfly of 2x2 switches has 2^k nodes; baldur.round_up_nodes = true leaves the extra ports of the next larger one unused)"),
            ));
        }
        let m = p.multiplicity;
        if m == 0 || m > MAX_MULTIPLICITY {
            return Err(ConfigError::new(
                "baldur.multiplicity",
                m,
                format!("the multiplicity (ports per direction of a 2x2 switch) must be 1..{MAX_MULTIPLICITY}"),
            ));
        }
        let switch_latency = match p.switch_latency {
            Some(t) => t,
            None if m <= 5 => SimTime(TABLE_V_SWITCH_LATENCY_PS[m as usize - 1]),
            None => {
                return Err(ConfigError::new(
                    "baldur.switch_latency",
                    "(unset)",
                    format!("Table V gives switch latencies for multiplicity 1..5 only; set switch_latency for multiplicity {m}"),
                ))
            }
        };
        for (key, b) in [("baldur.packet", p.packet), ("baldur.ack", p.ack)] {
            if b.0 == 0 || b.0 > 1 << 24 {
                return Err(ConfigError::new(
                    key,
                    format!("\"{}B\"", b.0),
                    "must be 1 B..16 MiB",
                ));
            }
        }
        if p.backoff_cap > 30 {
            return Err(ConfigError::new(
                "baldur.backoff_cap",
                p.backoff_cap,
                "at most 30",
            ));
        }
        if p.timeout == SimTime::ZERO {
            return Err(ConfigError::new(
                "baldur.timeout",
                "\"0ns\"",
                "a retransmission timeout must be positive",
            ));
        }
        let rate = ctx.topology.host_rate();
        if rate.0 == 0 {
            return Err(ConfigError::new(
                "topology.server_rate",
                "0",
                "Baldur's link rate must be positive",
            ));
        }
        let stages = n.next_power_of_two().trailing_zeros();
        let head_latency = p.injection_link
            + switch_latency * stages as u64
            + p.stage_link * (stages as u64 - 1)
            + p.ejection_link;
        Ok(Layout {
            nodes: n as u32,
            stages,
            m,
            rate,
            switch_latency,
            head_latency,
            gap: bits_time(rate, p.end_gap_bits as u64),
        })
    }

    /// A packet of `bytes` on the wire: its bits plus 3 bit periods per
    /// length-encoded routing bit.
    pub fn wire_time(&self, bytes: u64) -> SimTime {
        bits_time(self.rate, bytes * 8 + 3 * self.stages as u64)
    }
}

/// `bits` at `rate`, rounded up to a picosecond.
fn bits_time(rate: Rate, bits: u64) -> SimTime {
    SimTime((bits as u128 * SimTime::S as u128).div_ceil(rate.0 as u128) as u64)
}

/// Registration of Baldur.
pub struct BaldurModule;

impl FabricModule for BaldurModule {
    type Params = BaldurParams;
    const VARIANTS: &'static [Variant] = &[Variant {
        name: "baldur",
        label: "Baldur",
        description: "Baldur: bufferless clock-less all-optical multi-butterfly of 2x2 TL switches with path multiplicity m, drops, ACKs, timeout retransmission and binary exponential backoff",
    }];

    fn layout(p: &BaldurParams, ctx: &BuildContext) -> Result<(), ConfigError> {
        Layout::new(p, ctx).map(|_| ())
    }

    fn build(
        p: BaldurParams,
        _: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let l = Layout::new(&p, ctx)?;
        Ok(Box::new(
            Baldur::new(&p, l, &RngStreams::new(ctx.seed)).with_checks(ctx.check_invariants),
        ))
    }

    /// Exact when nothing is dropped: the source sends the flow's packets
    /// back to back (each its wire time plus the end gap), and the last one
    /// arrives the head latency (links and k switches) plus its wire time
    /// after it started. With m ≥ 2 a lone flow is never dropped: a switch
    /// direction sees at most one of its data packets and one ACK at once.
    /// With m = 1 an ACK can collide with data; the bound then allows one
    /// timeout plus the largest first backoff per packet.
    fn lone_flow_fct(
        p: &BaldurParams,
        _: &Variant,
        ctx: &BuildContext,
        _: u32,
        _: u32,
        bytes: u64,
    ) -> Result<FctBounds, ConfigError> {
        let l = Layout::new(p, ctx)?;
        let n = unit_count(bytes, p.packet.0);
        let mut t = SimTime::ZERO;
        for s in 0..n {
            let w = l.wire_time(unit_bytes(s, bytes, p.packet.0));
            t += if s + 1 == n { w } else { w + l.gap };
        }
        let exact = t + l.head_latency;
        let slack = if l.m >= 2 {
            SimTime::ZERO
        } else {
            (p.timeout + p.backoff_slot + l.wire_time(p.packet.0) + l.gap) * n as u64
        };
        Ok(FctBounds {
            min: exact,
            max: exact + slack,
        })
    }
}

/// The switching network alone: wiring and the time each output becomes free.
///
/// Generic over the width `S` of a stored time: [`Butterfly`] keeps each
/// output's free time in 64 bits, [`NarrowButterfly`] in 32 bits relative to
/// a moving base (half the memory, so a paper-scale network's 10 stages fit
/// the per-core cache). Both give the same results: see [`Stamp`].
pub struct Stages<S: Stamp> {
    k: u32,
    m: u32,
    /// Direction groups per stage (N/2 switches × 2 directions = 2^k).
    groups: usize,
    /// Group g of stage s (the m outputs of one switch direction) is the 2m
    /// words at `off + (s·groups + g)·2m`: first its outputs' free times
    /// (relative to `base`), then the switch of stage s+1 each output feeds
    /// (s < k−1; 0 at the last stage). Choosing an output and following it
    /// touch one cache line per stage (`off` aligns groups to 64 bytes when
    /// a group's size divides 64, as for m = 4 in 32 bits): a packet's
    /// stages are random accesses, and this lookup is the fabric's hot spot.
    words: Vec<S>,
    off: usize,
    /// Stored free times are picoseconds after `base`; a stored 0 means
    /// "free at or before `base`" (exact: every later lookup is at or after
    /// `base`).
    base: SimTime,
    /// Scratch for [`Stages::traverse_batch`]: each probe's state.
    scratch: Vec<Lane<S>>,
}

/// Free times in 64 bits (any simulated time).
pub type Butterfly = Stages<u64>;
/// Free times in 32 bits after a moving base: usable while a packet's k−1
/// hops plus its occupancy stay below [`NarrowButterfly::SPAN`].
pub type NarrowButterfly = Stages<u32>;

/// A stored free time: picoseconds after the network's base, at most `MAX`.
///
/// When a lookup would not fit, the base moves up to the packet's stage-0
/// time t0 and every stored time is lowered by the same amount, saturating
/// at 0. That is exact: a time that saturates was at or before t0, and all
/// later lookups are at or after t0 (calls come in order of t0), so "free at
/// or before the base" decides every comparison as the true time would.
///
/// `MAX` is half the type's range, so stamps compare the same as signed
/// integers as unsigned ones ([`Stamp::free_at`]); that leaves the negative
/// values free for [`Stamp::NEVER`], a "now" before every stamp. (The cost:
/// the base of a 32-bit network moves twice as often, once per 2^30 ps.)
pub trait Stamp: Copy + Default + Ord + std::fmt::Debug {
    const MAX: u64;
    /// A time at which no output is free (negative as a signed integer):
    /// a batched probe's time once it is dropped, so that it takes nothing
    /// at the later stages without a test per stage.
    const NEVER: Self;
    fn from_u64(v: u64) -> Self;
    fn to_u64(self) -> u64;
    /// Whether an output free from `self` is free at `now`: `self <= now`
    /// as signed integers (exact for stamps, false for `now` = NEVER).
    fn free_at(self, now: Self) -> bool;
    /// `self + d` (wrapping: only a probe's time after its last stage,
    /// which nothing reads, can wrap).
    fn plus(self, d: Self) -> Self;
}

impl Stamp for u32 {
    const MAX: u64 = i32::MAX as u64;
    const NEVER: u32 = 1 << 31;
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    #[inline]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline]
    fn free_at(self, now: Self) -> bool {
        (self as i32) <= (now as i32)
    }
    #[inline]
    fn plus(self, d: Self) -> Self {
        self.wrapping_add(d)
    }
}

impl Stamp for u64 {
    const MAX: u64 = i64::MAX as u64;
    const NEVER: u64 = 1 << 63;
    #[inline]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline]
    fn free_at(self, now: Self) -> bool {
        (self as i64) <= (now as i64)
    }
    #[inline]
    fn plus(self, d: Self) -> Self {
        self.wrapping_add(d)
    }
}

/// A probe's state in a batched traversal: its direction group at the
/// current stage, its time there (relative to the base; NEVER once
/// dropped) and the stage where it was dropped (`NOT_DROPPED`: none yet).
#[derive(Clone, Copy, Debug)]
struct Lane<S> {
    group: u32,
    dst: u32,
    now: S,
    occupy: S,
    dropped: u32,
}

const NOT_DROPPED: u32 = u32::MAX;

pub use crate::net::multibutterfly::wire_stage;

/// Where a packet went: delivered, or dropped at a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Delivered,
    Dropped { stage: u32 },
}

impl NarrowButterfly {
    /// The largest span ((k−1) hops plus an occupancy) a narrow network
    /// takes: half its range, so the base moves at most once per 2^30 ps
    /// (1.07 ms) of stage-0 time.
    pub const SPAN: u64 = 1 << 30;
}

/// Bit i set iff output i of a group (`free`: its free times, ports in
/// order, at most 64) is free at `now`; the first free output is the
/// lowest set bit. No branch per port (which one is free is
/// unpredictable); unrolled where the length is a constant.
#[inline(always)]
fn free_mask<S: Stamp>(free: &[S], now: S) -> u64 {
    let mut mask = 0u64;
    for (i, f) in free.iter().enumerate() {
        mask |= (f.free_at(now) as u64) << i;
    }
    mask
}

impl<S: Stamp> Stages<S> {
    /// A 2^k-node multi-butterfly of multiplicity m; `rng` draws the wiring
    /// (None: in order).
    pub fn new(k: u32, m: u32, mut rng: Option<&mut SimRng>) -> Stages<S> {
        assert!((1..=64).contains(&m), "multiplicity {m} outside 1..=64");
        let groups = 1usize << k;
        let mu = m as usize;
        let ports = groups * mu;
        let mut next = vec![0u32; ports];
        let mut perm = Vec::new();
        const LINE: usize = 64;
        let per_line = LINE / std::mem::size_of::<S>();
        let mut words = vec![S::default(); 2 * ports * k as usize + per_line];
        let addr = words.as_ptr() as usize;
        let off = (LINE - addr % LINE) % LINE / std::mem::size_of::<S>();
        for s in 0..k.saturating_sub(1) {
            wire_stage(k, m, s, rng.as_deref_mut(), &mut perm, &mut next);
            let stage = off + s as usize * 2 * ports;
            let group_words = words[stage..stage + 2 * ports].chunks_exact_mut(2 * mu);
            for (g, feeds) in group_words.zip(next.chunks_exact(mu)) {
                for (w, &n) in g[mu..].iter_mut().zip(feeds) {
                    *w = S::from_u64(n as u64);
                }
            }
        }
        Stages {
            k,
            m,
            groups,
            words,
            off,
            base: SimTime::ZERO,
            scratch: Vec::new(),
        }
    }

    pub fn stages(&self) -> u32 {
        self.k
    }

    /// Outputs per stage.
    pub fn ports(&self) -> usize {
        self.groups * self.m as usize
    }

    /// The first word of group `g` of stage `s`.
    fn group_at(&self, s: usize, g: usize) -> usize {
        self.off + (s * self.groups + g) * 2 * self.m as usize
    }

    /// Moves the base up to `t0`, lowering every stored time (saturating).
    #[cold]
    fn rebase(&mut self, t0: SimTime) {
        let d = (t0 - self.base).0;
        let m = self.m as usize;
        for g in self.words[self.off..].chunks_exact_mut(2 * m) {
            for f in &mut g[..m] {
                *f = S::from_u64(f.to_u64().saturating_sub(d));
            }
        }
        self.base = t0;
    }

    /// Pushes a packet from `src` to `dst` through every stage: its head
    /// reaches stage 0 at `t0` and each later stage `hop` later; each output
    /// it takes stays busy for `occupy`. `visit(stage, port, from, to)` sees
    /// every output taken. Calls must come in order of `t0`; (k−1)·hop +
    /// occupy must be at most `S::MAX / 2 + 1`.
    #[inline]
    pub fn traverse(
        &mut self,
        src: u32,
        dst: u32,
        t0: SimTime,
        hop: SimTime,
        occupy: SimTime,
        mut visit: impl FnMut(u32, usize, SimTime, SimTime),
    ) -> Fate {
        let span = hop.0 * (self.k as u64 - 1) + occupy.0;
        assert!(
            span <= S::MAX / 2 + 1,
            "a packet's span {span} ps exceeds the stored times' range"
        );
        if (t0 - self.base).0 > S::MAX - span {
            self.rebase(t0);
        }
        let m = self.m as usize;
        let mut sw = (src >> 1) as usize;
        let mut rel = (t0 - self.base).0;
        let (hop, occupy) = (hop.0, occupy.0);
        for s in 0..self.k {
            let b = ((dst >> (self.k - 1 - s)) & 1) as usize;
            let group = sw * 2 + b;
            let at = self.group_at(s as usize, group);
            let (free, next) = self.words[at..at + 2 * m].split_at_mut(m);
            let mask = free_mask(free, S::from_u64(rel));
            if mask == 0 {
                return Fate::Dropped { stage: s };
            }
            let j = mask.trailing_zeros() as usize;
            free[j] = S::from_u64(rel + occupy);
            let t = self.base + SimTime(rel);
            visit(s, group * m + j, t, t + SimTime(occupy));
            sw = next[j].to_u64() as usize;
            rel += hop;
        }
        Fate::Delivered
    }

    /// [`Stages::traverse`] for each probe of `batch` in order, with the
    /// same results (each probe's `dropped`), but stage by stage: every
    /// probe's stage s before any probe's stage s+1. That is the same
    /// computation, since a packet at stage s reads and writes only stage
    /// s's outputs, and those are taken in batch order; and the probes'
    /// lookups of one stage are independent, so the memory system overlaps
    /// their cache misses. A batch that would move the base mid-way is
    /// traversed one probe after another.
    pub fn traverse_batch(&mut self, batch: &mut [Probe], hop: SimTime) {
        let Some(last) = batch.last() else { return };
        let hops = hop.0 * (self.k as u64 - 1);
        let longest = batch.iter().map(|p| p.occupy.0).max().unwrap_or(0);
        if (last.t0 - self.base).0 > S::MAX - (hops + longest) {
            for p in batch.iter_mut() {
                p.dropped = match self.traverse(p.src, p.dst, p.t0, hop, p.occupy, |_, _, _, _| {})
                {
                    Fate::Delivered => None,
                    Fate::Dropped { stage } => Some(stage),
                };
            }
            return;
        }
        assert!(
            hops + longest <= S::MAX / 2 + 1,
            "a packet's span exceeds the stored times' range"
        );
        let base = self.base;
        let k = self.k;
        let mut lanes = std::mem::take(&mut self.scratch);
        lanes.clear();
        lanes.extend(batch.iter().map(|p| Lane {
            group: (p.src >> 1) * 2 + ((p.dst >> (k - 1)) & 1),
            dst: p.dst,
            now: S::from_u64((p.t0 - base).0),
            occupy: S::from_u64(p.occupy.0),
            dropped: NOT_DROPPED,
        }));
        // Truncated for 32-bit times only when k = 1 (no hop is taken).
        let hop = S::from_u64(hop.0);
        match self.m {
            1 => self.batch_stages::<2>(&mut lanes, hop),
            2 => self.batch_stages::<4>(&mut lanes, hop),
            3 => self.batch_stages::<6>(&mut lanes, hop),
            4 => self.batch_stages::<8>(&mut lanes, hop),
            5 => self.batch_stages::<10>(&mut lanes, hop),
            _ => self.batch_stages_any(&mut lanes, hop),
        }
        for (p, l) in batch.iter_mut().zip(&lanes) {
            p.dropped = (l.dropped != NOT_DROPPED).then_some(l.dropped);
        }
        self.scratch = lanes;
    }

    /// The stage passes of [`Stages::traverse_batch`] for a multiplicity
    /// m = W/2 known at compile time (W: a group's words; the first-free
    /// search is unrolled). A dropped probe's time becomes NEVER, so it
    /// finds no output free at the later stages and needs no test of its
    /// own; the group index is masked by the stage's group count (a power
    /// of two, exact for every index stored), which the compiler can see
    /// is in bounds.
    fn batch_stages<const W: usize>(&mut self, lanes: &mut [Lane<S>], hop: S) {
        let m = W / 2;
        let k = self.k as usize;
        let mask = self.groups - 1;
        let stride = self.groups * W;
        let words = &mut self.words[self.off..self.off + stride * k];
        let line = 64 / std::mem::size_of::<S>();
        for (s, stage) in words.chunks_exact_mut(stride).enumerate() {
            // Only to start the cache misses early, a pass of reads whose
            // values nobody needs: independent, so many are in flight at
            // once. A batch that reads most of the stage's lines reads them
            // all in address order (fewer reads, a stream the hardware
            // prefetches), a smaller one each probe's group.
            let mut touch = S::default();
            if lanes.len() >= stride / line {
                for c in stage.chunks_exact(line) {
                    touch = touch.plus(c[0]);
                }
            } else {
                let (groups, _) = stage.as_chunks::<W>();
                for l in lanes.iter() {
                    touch = touch.plus(groups[l.group as usize & mask][0]);
                }
            }
            std::hint::black_box(touch);
            let (groups, _) = stage.as_chunks_mut::<W>();
            let groups = &mut groups[..=mask];
            // At the last stage this computes a group nobody reads (the
            // last stage's outputs feed no switch: their `next` is 0),
            // cheaper than a branch per probe.
            let shift = k.saturating_sub(s + 2);
            for l in lanes.iter_mut() {
                let g = &mut groups[l.group as usize & mask];
                let now = l.now;
                let free = free_mask(&g[..m], now);
                if free == 0 {
                    if l.dropped == NOT_DROPPED {
                        l.dropped = s as u32;
                        l.now = S::NEVER;
                    }
                    continue;
                }
                let j = free.trailing_zeros() as usize;
                g[j] = now.plus(l.occupy);
                l.now = now.plus(hop);
                l.group = g[m + j].to_u64() as u32 * 2 + ((l.dst >> shift) & 1);
            }
        }
    }

    /// [`Stages::batch_stages`] for any multiplicity (m > 5).
    fn batch_stages_any(&mut self, lanes: &mut [Lane<S>], hop: S) {
        let m = self.m as usize;
        let k = self.k as usize;
        let stride = self.groups * 2 * m;
        let words = &mut self.words[self.off..self.off + stride * k];
        for (s, stage) in words.chunks_exact_mut(stride).enumerate() {
            let shift = k.saturating_sub(s + 2);
            for l in lanes.iter_mut() {
                let at = l.group as usize * 2 * m;
                let (free, next) = stage[at..at + 2 * m].split_at_mut(m);
                let mask = free_mask(free, l.now);
                if mask == 0 {
                    if l.dropped == NOT_DROPPED {
                        l.dropped = s as u32;
                        l.now = S::NEVER;
                    }
                    continue;
                }
                let j = mask.trailing_zeros() as usize;
                free[j] = l.now.plus(l.occupy);
                l.now = l.now.plus(hop);
                l.group = next[j].to_u64() as u32 * 2 + ((l.dst >> shift) & 1);
            }
        }
    }

    /// The switch of stage s+1 that output `port` of stage s feeds.
    pub fn next_switch(&self, s: u32, port: usize) -> u32 {
        let m = self.m as usize;
        self.words[self.group_at(s as usize, port / m) + m + port % m].to_u64() as u32
    }
}

/// A packet for [`Stages::traverse_batch`]: its head reaches stage 0 at
/// `t0`, and each output it takes stays busy for `occupy`.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub src: u32,
    pub dst: u32,
    pub t0: SimTime,
    pub occupy: SimTime,
    /// Out: the stage where it was dropped (None: delivered).
    pub dropped: Option<u32>,
}

impl Probe {
    pub fn new(src: u32, dst: u32, t0: SimTime, occupy: SimTime) -> Probe {
        Probe {
            src,
            dst,
            t0,
            occupy,
            dropped: None,
        }
    }
}

/// Baldur's switches, in 32-bit times when every packet fits their span.
enum Net {
    Narrow(NarrowButterfly),
    Wide(Butterfly),
}

/// Transmitter wake-ups in (time, seq) order: a ring of time buckets.
///
/// A wake-up is scheduled at the end of a transmission that has started, so
/// every one lies in [now, now + horizon], horizon = the longest wire time
/// plus the end gap. The ring spans more than that, so each bucket holds
/// wake-ups of one ring lap only, and the first non-empty bucket from now's
/// holds the earliest; within it, the least (time, seq) is found by a scan
/// (a few entries: the wake-ups of about one bucket width). This replaces a
/// binary heap (a sift of ~log2(nodes) levels per push and pop) with the same
/// order: (time, seq) is a total order, so any exact priority queue pops
/// the same sequence.
///
/// A bucket's first `Wakes::SLOTS` entries live in one flat array, bucket
/// after bucket, so pushes (near now + horizon) and pops (near now) each
/// walk through memory in order; a bucket with more (a burst of wake-ups
/// at one instant) keeps the rest in a spill list of its own. (A `Vec` per
/// bucket put every bucket's entries somewhere else on the heap: a cache
/// miss per push and per pop at paper scale.)
struct Wakes {
    /// Bucket width: 2^shift ps.
    shift: u32,
    /// Bucket i's first entries: `slots[i * SLOTS..][..count[i]]`.
    slots: Vec<(SimTime, u64, u32)>,
    count: Vec<u8>,
    /// Bucket i's entries beyond `SLOTS` (only when `count[i] == SLOTS`).
    spill: Vec<Vec<(SimTime, u64, u32)>>,
    /// Bit i set: bucket i is not empty (so the first non-empty bucket is
    /// found a word at a time, not by a scan over empty buckets).
    occupied: Vec<u64>,
    /// The absolute bucket index (time >> shift) of the latest `now` seen:
    /// no wake-up lies before it.
    floor: u64,
    len: usize,
    /// The earliest wake-up: (time, seq, bucket, position), kept current
    /// (a push compares, a pop rescans), so peeking is free. A position at
    /// or past `SLOTS` is in the bucket's spill list.
    head: Option<(SimTime, u64, usize, usize)>,
}

impl Wakes {
    /// Entries per bucket in the flat array.
    const SLOTS: usize = 4;

    fn new(horizon: SimTime) -> Wakes {
        // About 1,024 buckets over the horizon (a few wake-ups each to scan
        // for the least), at least 256 ps wide.
        let shift = (horizon.0 / 1024)
            .max(1 << 8)
            .next_power_of_two()
            .trailing_zeros();
        let n = ((horizon.0 >> shift) + 2).next_power_of_two() as usize;
        Wakes {
            shift,
            slots: vec![(SimTime::ZERO, 0, 0); n * Self::SLOTS],
            count: vec![0; n],
            spill: vec![Vec::new(); n],
            occupied: vec![0; n.div_ceil(64)],
            floor: 0,
            len: 0,
            head: None,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn slot(&self, abs: u64) -> usize {
        (abs as usize) & (self.count.len() - 1)
    }

    /// Entry j of bucket i.
    #[inline]
    fn entry(&self, i: usize, j: usize) -> (SimTime, u64, u32) {
        if j < Self::SLOTS {
            self.slots[i * Self::SLOTS + j]
        } else {
            self.spill[i][j - Self::SLOTS]
        }
    }

    fn push(&mut self, now: SimTime, t: SimTime, seq: u64, h: u32) {
        self.floor = self.floor.max(now.0 >> self.shift);
        let abs = t.0 >> self.shift;
        assert!(
            t >= now && abs - self.floor < self.count.len() as u64,
            "a wake-up beyond the ring's horizon"
        );
        let i = self.slot(abs);
        let c = self.count[i] as usize;
        let j = if c < Self::SLOTS {
            self.slots[i * Self::SLOTS + c] = (t, seq, h);
            self.count[i] += 1;
            c
        } else {
            self.spill[i].push((t, seq, h));
            Self::SLOTS + self.spill[i].len() - 1
        };
        self.occupied[i / 64] |= 1 << (i % 64);
        self.len += 1;
        if self.head.is_none_or(|(ht, hq, _, _)| (t, seq) < (ht, hq)) {
            self.head = Some((t, seq, i, j));
        }
    }

    /// The first non-empty bucket and the position of its least entry.
    fn first(&self) -> Option<(usize, usize)> {
        if self.len == 0 {
            return None;
        }
        // The first occupied bucket at or after floor's, cyclically: every
        // wake-up lies within one lap of the floor, so that is the earliest.
        let start = self.slot(self.floor);
        let words = self.occupied.len();
        let (w0, b0) = (start / 64, start % 64);
        let mut i = None;
        for k in 0..=words {
            let w = (w0 + k) % words;
            let mut m = self.occupied[w];
            if k == 0 {
                m &= !0u64 << b0;
            } else if k == words {
                m &= (1u64 << b0) - 1;
            }
            if m != 0 {
                i = Some(w * 64 + m.trailing_zeros() as usize);
                break;
            }
        }
        let i = i.unwrap_or_else(|| unreachable!("{} wake-ups but every bucket empty", self.len));
        let c = self.count[i] as usize;
        let b = &self.slots[i * Self::SLOTS..][..c];
        let mut j = 0;
        let mut least = (b[0].0, b[0].1);
        for (x, e) in b.iter().enumerate().skip(1) {
            if (e.0, e.1) < least {
                (j, least) = (x, (e.0, e.1));
            }
        }
        if c == Self::SLOTS {
            for (x, e) in self.spill[i].iter().enumerate() {
                if (e.0, e.1) < least {
                    (j, least) = (Self::SLOTS + x, (e.0, e.1));
                }
            }
        }
        Some((i, j))
    }

    /// The earliest wake-up's (time, seq).
    fn peek(&self) -> Option<(SimTime, u64)> {
        self.head.map(|(t, q, _, _)| (t, q))
    }

    /// Removes the earliest wake-up (due at or before `now`): its node.
    fn pop(&mut self, now: SimTime) -> u32 {
        let (_, _, i, j) = self.head.expect("a wake-up");
        debug_assert_eq!(Some((i, j)), self.first());
        let e = if j >= Self::SLOTS {
            self.spill[i].swap_remove(j - Self::SLOTS)
        } else {
            // Move the bucket's last entry (its last spilled one, if any)
            // into the freed place: a bucket's order does not matter.
            let base = i * Self::SLOTS;
            let e = self.slots[base + j];
            let spilled = if self.count[i] as usize == Self::SLOTS {
                self.spill[i].pop()
            } else {
                None
            };
            match spilled {
                Some(s) => self.slots[base + j] = s,
                None => {
                    self.count[i] -= 1;
                    let c = self.count[i] as usize;
                    self.slots[base + j] = self.slots[base + c];
                }
            }
            e
        };
        if self.count[i] == 0 {
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        debug_assert!(e.0 <= now);
        self.len -= 1;
        self.floor = self.floor.max(now.0 >> self.shift);
        self.head = self.first().map(|(i, j)| {
            let e = self.entry(i, j);
            (e.0, e.1, i, j)
        });
        e.2
    }
}

/// Entries in time order (each pushed no earlier than the last), with the
/// front's time kept in a field: the run loop asks for it several times per
/// step (is it due? the earliest of everything?), so each ask is one load,
/// not a look into the queue.
struct TimedFifo<T> {
    q: VecDeque<(SimTime, T)>,
    /// The front's time; `SimTime::MAX` when empty (no event is ever due
    /// at `SimTime::MAX`: `earliest` reports that as none).
    due: SimTime,
}

impl<T: Copy> TimedFifo<T> {
    fn new() -> TimedFifo<T> {
        TimedFifo {
            q: VecDeque::new(),
            due: SimTime::MAX,
        }
    }

    #[inline]
    fn due(&self) -> SimTime {
        self.due
    }

    fn front(&self) -> Option<&(SimTime, T)> {
        self.q.front()
    }

    #[inline]
    fn push(&mut self, t: SimTime, e: T) {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= t), "out of order");
        if self.q.is_empty() {
            self.due = t;
        }
        self.q.push_back((t, e));
    }

    #[inline]
    fn pop(&mut self) -> (SimTime, T) {
        let e = self.q.pop_front().expect("a due entry");
        self.due = self.q.front().map_or(SimTime::MAX, |f| f.0);
        e
    }
}

/// Arrivals in time order whose fates are learned later, in order: each is
/// pushed when its packet starts transmission, before it has been pushed
/// through the switches; once it has (`settle_all`), a dropped one is marked
/// and skipped. So a delivered packet's arrival is written once, where it is
/// taken from, not first to a pending list and then copied here.
struct ArrivalFifo<T> {
    q: VecDeque<(SimTime, T)>,
    /// Entries popped so far: the entry pushed n-th is at `n - popped`.
    popped: u64,
    /// The first `ready` entries' fates are known (the rest are pending).
    ready: usize,
    /// The first ready live entry's time; `SimTime::MAX` if none.
    due: SimTime,
}

impl<T: Copy> ArrivalFifo<T> {
    /// A dropped entry's time: it is never due.
    const DROPPED: SimTime = SimTime::MAX;

    fn new() -> ArrivalFifo<T> {
        ArrivalFifo {
            q: VecDeque::new(),
            popped: 0,
            ready: 0,
            due: SimTime::MAX,
        }
    }

    #[inline]
    fn due(&self) -> SimTime {
        self.due
    }

    /// Entries held, dropped ones not yet skipped included.
    fn len(&self) -> usize {
        self.q.len()
    }

    /// Adds an arrival (fate pending) at `t`, no earlier than any live one
    /// before it; returns its number, for `mark_dropped`.
    #[inline]
    fn push(&mut self, t: SimTime, e: T) -> u64 {
        debug_assert!(
            self.q
                .iter()
                .rev()
                .find(|b| b.0 != Self::DROPPED)
                .is_none_or(|b| b.0 <= t),
            "out of order"
        );
        self.q.push_back((t, e));
        self.popped + self.q.len() as u64 - 1
    }

    /// Entry `n` (pending) was dropped in the switches.
    #[inline]
    fn mark_dropped(&mut self, n: u64) {
        let i = (n - self.popped) as usize;
        debug_assert!(i >= self.ready, "a settled arrival marked dropped");
        self.q[i].0 = Self::DROPPED;
    }

    /// Every entry's fate is known now.
    #[inline]
    fn settle_all(&mut self) {
        self.ready = self.q.len();
        self.skip_dropped();
    }

    #[inline]
    fn skip_dropped(&mut self) {
        while self.ready > 0 && self.q.front().is_some_and(|f| f.0 == Self::DROPPED) {
            self.q.pop_front();
            self.popped += 1;
            self.ready -= 1;
        }
        self.due = if self.ready > 0 {
            self.q.front().map_or(SimTime::MAX, |f| f.0)
        } else {
            SimTime::MAX
        };
    }

    /// Removes the first live entry (due).
    #[inline]
    fn pop(&mut self) -> (SimTime, T) {
        debug_assert!(self.ready > 0 && self.due != SimTime::MAX);
        let e = self.q.pop_front().expect("a due entry");
        self.popped += 1;
        self.ready -= 1;
        self.skip_dropped();
        e
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A node's transmitter is free.
    TxFree(u32),
    /// A copy of the data packet of outstanding entry (slot, serial), sent
    /// from `src`, reaches its destination `dst`. Which packet it is (flow,
    /// seq) is in the entry while it is live; a copy whose entry is gone was
    /// ACKed, hence received before: a duplicate, which only needs its ACK.
    Data {
        slot: u32,
        serial: u32,
        src: u32,
        dst: u32,
    },
    /// An ACK for outstanding entry (slot, serial) reaches its source node.
    Ack { slot: u32, serial: u32 },
}

#[derive(Clone, Copy, Debug)]
enum Timer {
    /// The backoff is over: queue the retransmission.
    Retry { slot: u32, serial: u32 },
}

/// A data packet sent and not yet ACKed (in its source's retransmission
/// buffer): 32 bytes, what every data arrival, ACK and timeout reads, so
/// each touches one line. Rarely needed state is in side tables by slot
/// (`Baldur::cold`), read only when a flag says it is there.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    /// Its serial while live; 0 once released (a released slot keeps its
    /// value until reused, so a late event finds it not live).
    serial: u32,
    flow: FlowId,
    seq: u32,
    src: u32,
    dst: u32,
    /// Its bytes (the low 25 bits: a packet is at most 2^24 B) and flags
    /// (`QUEUED`, `ACKED`, `RECEIVED`, `TIMER`, `TIMED_OUT`, `MULTI`).
    bits: u32,
    /// When the pending timeout fires (`SimTime::MAX`: none pending).
    deadline: SimTime,
}

const BYTES_MASK: u32 = (1 << 25) - 1;
/// Waiting in the node's retransmission queue.
const QUEUED: u32 = 1 << 25;
const ACKED: u32 = 1 << 26;
/// A copy reached the destination: later copies are duplicates. (The
/// receiver's per-packet state, kept here while the packet is live: no
/// per-flow table, which paper-scale runs would hold 10 M of.)
const RECEIVED: u32 = 1 << 27;
/// A backoff timer is pending: its id is `Cold::timer`.
const TIMER: u32 = 1 << 28;
/// It timed out before: `Cold::timeouts` counts how often (else 0).
const TIMED_OUT: u32 = 1 << 29;
/// Of a flow of more than one packet: `Cold::flow_bytes` is the flow's size
/// (else the flow is this packet's bytes).
const MULTI: u32 = 1 << 30;

impl Outstanding {
    fn bytes(&self) -> u32 {
        self.bits & BYTES_MASK
    }
    fn has(&self, flag: u32) -> bool {
        self.bits & flag != 0
    }
    fn set(&mut self, flag: u32, on: bool) {
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
struct Cold {
    /// With `MULTI`: the size of its flow (the receiver releases whole
    /// packets in order).
    flow_bytes: u64,
    /// With `TIMER`: the pending backoff timer.
    timer: Option<TimerId>,
    /// With `TIMED_OUT`: how often it timed out.
    timeouts: u32,
}

/// A flow with packets never sent, queued at its source. Baldur keeps no
/// per-flow table: a flow's state is here until its last packet is first
/// sent, then in its packets' outstanding entries (and, for a multi-packet
/// flow, in a reorder buffer at the receiver from its first arrival until
/// complete).
#[derive(Clone, Copy, Debug)]
struct Fresh {
    flow: FlowId,
    dst: u32,
    bytes: u64,
}

/// A node's transmitter state: one cache line. Its queues are lists
/// threaded through pools shared by all nodes (`Baldur::acks_q`,
/// `Baldur::fresh_q`, `Baldur::out`), whose few live entries stay in cache,
/// rather than a buffer per node.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Node {
    /// ACKs owed (`acks_q`: to node, slot, serial).
    acks: List,
    /// Retransmissions whose backoff is over (outstanding slots).
    retx: List,
    /// Flows with packets never sent, in arrival order (`fresh_q`).
    fresh: List,
    /// The next packet of the front flow of `fresh`.
    next_new: u32,
    /// When the transmitter finishes its current packet (and its gap).
    free_at: SimTime,
    /// Bytes of its un-ACKed packets (its peak is `Baldur::buffer_peak`).
    buffer_bytes: u64,
    /// A `TxFree` event is pending for this node.
    wake: bool,
}

/// The Baldur network with its nodes.
pub struct Baldur {
    l: Layout,
    packet: u64,
    timeout: SimTime,
    backoff_slot: SimTime,
    backoff_cap: u32,
    hop: SimTime,
    /// Injection link delay: head leaves the node → head at stage 0.
    inj: SimTime,
    ack_wire: SimTime,
    /// A full-size data packet's wire time (the common case: no division).
    packet_wire: SimTime,
    net: Net,
    nodes: Vec<Node>,
    /// Each node's peak `buffer_bytes`.
    buffer_peak: Vec<u64>,
    acks_q: Pool<(u32, u32, u32)>,
    fresh_q: Pool<Fresh>,
    /// Reorder buffers of multi-packet flows, from their first arrival
    /// until complete, and the slot of each such flow's (looked up only,
    /// never iterated: the run does not depend on the map's order).
    reorder: Pool<ReorderBuffer>,
    reorder_of: HashMap<FlowId, u32>,
    /// `next_event()`, kept current by every call that changes it (the run
    /// loop asks once per step).
    next_at: Option<SimTime>,
    out: Pool<Outstanding>,
    cold: Vec<Cold>,
    next_serial: u32,
    /// Transmitter wake-ups (`TxFree`) and arrivals of short data packets
    /// (the last of a flow), each stamped with `seq` when scheduled: the two
    /// are taken together in (time, seq) order, the order of the one event
    /// heap they replace.
    wakes: Wakes,
    short_data: BinaryHeap<Reverse<(SimTime, u64, [u32; 4])>>,
    seq: u64,
    /// Arrivals of full-size data packets ([slot, serial, src, dst]) and of
    /// ACKs ([slot, serial]): each is now + a constant, so each FIFO is in
    /// time order.
    data_fifo: ArrivalFifo<[u32; 4]>,
    ack_fifo: ArrivalFifo<[u32; 2]>,
    /// Timeouts in deadline order: every data transmission adds one at
    /// now + timeout, so deadlines are non-decreasing and a FIFO replaces a
    /// heap; stale entries (ACKed, or superseded) are skipped when popped.
    timeouts_fifo: TimedFifo<(u32, u32)>,
    /// Full-size data packets and ACKs transmitted but not yet pushed
    /// through the switches (without `check`): their fates are needed only
    /// when their arrival is due (`pending_due`, the earliest), and pushed
    /// through in batches, in transmission order, their switch lookups
    /// overlap. `pending_entry[i]`: the FIFO entry of `pending[i]`'s
    /// arrival (see `Baldur::entry`).
    pending: Vec<Probe>,
    pending_entry: Vec<u64>,
    pending_due: SimTime,
    /// Backoff timers (random delays).
    timers: TimerQueue<Timer>,
    backoff_rng: SimRng,
    check: bool,
    /// With `check`: the end of the last occupancy of every output, and the
    /// count of occupancies that began before it.
    link_end: Vec<SimTime>,
    link_overlaps: u64,
    // Counters.
    pending_tx: u64,
    in_flight: u64,
    data_sent: u64,
    data_first: u64,
    retransmissions: u64,
    timeouts: u64,
    data_dropped: u64,
    acks_sent: u64,
    acks_dropped: u64,
    data_arrived: u64,
    acks_arrived: u64,
    duplicates: u64,
    drops_by_stage: Vec<u64>,
}

impl Baldur {
    pub fn new(p: &BaldurParams, l: Layout, streams: &RngStreams) -> Baldur {
        let mut wiring = streams.stream("baldur.wiring");
        let hop = l.switch_latency + p.stage_link;
        let ack_wire = l.wire_time(p.ack.0);
        // The longest a packet's stage-0 time and its last output's free
        // time lie apart: 32-bit times if it fits their span (the same
        // results in half the memory).
        let span = hop * (l.stages as u64 - 1) + l.wire_time(p.packet.0).max(ack_wire) + l.gap;
        let rng = p.random_wiring.then_some(&mut wiring);
        let net = if span.0 <= NarrowButterfly::SPAN {
            Net::Narrow(NarrowButterfly::new(l.stages, l.m, rng))
        } else {
            Net::Wide(Butterfly::new(l.stages, l.m, rng))
        };
        let ports = (1usize << l.stages) * l.m as usize * l.stages as usize;
        Baldur {
            l,
            packet: p.packet.0,
            timeout: p.timeout,
            backoff_slot: p.backoff_slot,
            backoff_cap: p.backoff_cap,
            hop,
            inj: p.injection_link,
            ack_wire,
            packet_wire: l.wire_time(p.packet.0),
            net,
            nodes: vec![Node::default(); l.nodes as usize],
            buffer_peak: vec![0; l.nodes as usize],
            acks_q: Pool::new(),
            fresh_q: Pool::new(),
            reorder: Pool::new(),
            reorder_of: HashMap::new(),
            next_at: None,
            out: Pool::new(),
            cold: Vec::new(),
            next_serial: 1,
            wakes: Wakes::new(l.wire_time(p.packet.0).max(ack_wire) + l.gap),
            short_data: BinaryHeap::new(),
            seq: 0,
            data_fifo: ArrivalFifo::new(),
            ack_fifo: ArrivalFifo::new(),
            timeouts_fifo: TimedFifo::new(),
            pending: Vec::new(),
            pending_entry: Vec::new(),
            pending_due: SimTime::MAX,
            timers: TimerQueue::new(),
            backoff_rng: streams.stream("baldur.backoff"),
            check: false,
            link_end: vec![SimTime::ZERO; ports],
            link_overlaps: 0,
            pending_tx: 0,
            in_flight: 0,
            data_sent: 0,
            data_first: 0,
            retransmissions: 0,
            timeouts: 0,
            data_dropped: 0,
            acks_sent: 0,
            acks_dropped: 0,
            data_arrived: 0,
            acks_arrived: 0,
            duplicates: 0,
            drops_by_stage: vec![0; l.stages as usize],
        }
    }

    /// Keep the per-link occupancy log that `check_invariants` verifies.
    pub fn with_checks(mut self, on: bool) -> Baldur {
        self.check = on;
        self
    }

    /// Pushes a packet through the network now; true if it gets through.
    fn inject(&mut self, now: SimTime, src: u32, dst: u32, wire: SimTime) -> bool {
        self.flush();
        let t0 = now + self.inj;
        let occupy = wire + self.l.gap;
        let ports = (1usize << self.l.stages) * self.l.m as usize;
        let (check, link_end, overlaps) = (self.check, &mut self.link_end, &mut self.link_overlaps);
        let visit = |s: u32, port: usize, from: SimTime, to: SimTime| {
            if check {
                let e = &mut link_end[s as usize * ports + port];
                if from < *e {
                    *overlaps += 1;
                }
                *e = to;
            }
        };
        let fate = match &mut self.net {
            Net::Narrow(n) => n.traverse(src, dst, t0, self.hop, occupy, visit),
            Net::Wide(n) => n.traverse(src, dst, t0, self.hop, occupy, visit),
        };
        match fate {
            Fate::Delivered => true,
            Fate::Dropped { stage } => {
                self.drops_by_stage[stage as usize] += 1;
                false
            }
        }
    }
}

impl Baldur {
    /// How many pending packets go through the switches together.
    const BATCH: usize = 1024;

    /// A packet (`src` to `dst`, `wire` long) whose arrival at `at` is FIFO
    /// entry `entry` (see `Baldur::entry`): pushed through the switches now
    /// with `check`, else later, in a batch (see `pending`).
    #[inline(always)]
    fn inject_later(
        &mut self,
        now: SimTime,
        (src, dst): (u32, u32),
        wire: SimTime,
        (at, entry): (SimTime, u64),
    ) {
        self.in_flight += 1;
        if self.check {
            if !self.inject(now, src, dst, wire) {
                self.drop_entry(entry);
            }
            self.data_fifo.settle_all();
            self.ack_fifo.settle_all();
            return;
        }
        self.pending
            .push(Probe::new(src, dst, now + self.inj, wire + self.l.gap));
        self.pending_entry.push(entry);
        self.pending_due = self.pending_due.min(at);
    }

    /// An arrival's FIFO entry: its number in the FIFO, and which FIFO.
    #[inline(always)]
    fn entry(n: u64, ack: bool) -> u64 {
        n << 1 | ack as u64
    }

    /// The packet of FIFO entry `entry` was dropped in the switches.
    fn drop_entry(&mut self, entry: u64) {
        self.in_flight -= 1;
        if entry & 1 == 1 {
            self.ack_fifo.mark_dropped(entry >> 1);
            self.acks_dropped += 1;
        } else {
            self.data_fifo.mark_dropped(entry >> 1);
            self.data_dropped += 1;
        }
    }

    /// Pushes every pending packet through the switches, in order.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        for chunk in pending.chunks_mut(Self::BATCH) {
            match &mut self.net {
                Net::Narrow(n) => n.traverse_batch(chunk, self.hop),
                Net::Wide(n) => n.traverse_batch(chunk, self.hop),
            }
        }
        let mut entries = std::mem::take(&mut self.pending_entry);
        for (p, &entry) in pending.iter().zip(&entries) {
            if let Some(stage) = p.dropped {
                self.drops_by_stage[stage as usize] += 1;
                self.drop_entry(entry);
            }
        }
        self.data_fifo.settle_all();
        self.ack_fifo.settle_all();
        pending.clear();
        self.pending = pending;
        entries.clear();
        self.pending_entry = entries;
        self.pending_due = SimTime::MAX;
    }

    /// Keeps `next_event` exact without the pending packets: pushes them
    /// through once the earliest could arrive no later than everything
    /// else known (so the run loop never wakes for a dropped packet).
    fn settle(&mut self) {
        let mut next = self.earliest();
        if self.pending_due != SimTime::MAX && next.is_none_or(|t| self.pending_due <= t) {
            self.flush();
            next = self.earliest();
        }
        self.next_at = next;
    }

    /// The earliest event, timeout or timer (pending packets aside).
    fn earliest(&self) -> Option<SimTime> {
        let a = self
            .wakes
            .peek()
            .map_or(SimTime::MAX, |w| w.0)
            .min(self.short_data.peek().map_or(SimTime::MAX, |e| e.0 .0))
            .min(self.data_fifo.due())
            .min(self.ack_fifo.due());
        let b = self.timers.peek_time().unwrap_or(SimTime::MAX);
        let c = self.timeouts_fifo.due();
        let t = a.min(b).min(c);
        (t != SimTime::MAX).then_some(t)
    }

    /// `Layout::wire_time`, without its 128-bit division for a full-size packet.
    #[inline]
    fn wire_time(&self, bytes: u64) -> SimTime {
        if bytes == self.packet {
            self.packet_wire
        } else {
            self.l.wire_time(bytes)
        }
    }

    fn new_serial(&mut self) -> u32 {
        let s = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1).max(1);
        s
    }

    /// Starts node `h`'s next transmission at `now`: an ACK it owes, else a
    /// retransmission, else a new packet; or marks it idle.
    fn start_tx(&mut self, h: u32, now: SimTime) {
        let hi = h as usize;
        let wire;
        if let Some(i) = self.acks_q.pop_front(&mut self.nodes[hi].acks) {
            let (to, slot, serial) = *self.acks_q.get(i);
            self.acks_q.release(i);
            wire = self.ack_wire;
            self.acks_sent += 1;
            let at = now + self.l.head_latency + wire;
            let n = self.ack_fifo.push(at, [slot, serial]);
            self.inject_later(now, (h, to), wire, (at, Self::entry(n, true)));
        } else if let Some(slot) = self.pop_retx(h) {
            wire = self.wire_time(self.out.get(slot).bytes() as u64);
            self.retransmissions += 1;
            self.send_data(now, h, slot, wire);
        } else if let Some(fi) = self.nodes[hi].fresh.front() {
            let Fresh {
                flow: f,
                dst,
                bytes: total,
            } = *self.fresh_q.get(fi);
            let node = &mut self.nodes[hi];
            let seq = node.next_new;
            // The flow's last packet: packet `seq` of unit_count(max(total,
            // 1)) (no division: seq < that count).
            let multi = seq > 0 || total > self.packet;
            if (seq as u64 + 1) * self.packet >= total.max(1) {
                self.fresh_q.pop_front(&mut node.fresh);
                self.fresh_q.release(fi);
                node.next_new = 0;
            } else {
                node.next_new += 1;
            }
            let bytes = unit_bytes(seq, total, self.packet);
            let serial = self.new_serial();
            let slot = self.out.alloc(Outstanding {
                serial,
                flow: f,
                seq,
                src: h,
                dst,
                bits: bytes as u32 | if multi { MULTI } else { 0 },
                deadline: SimTime::MAX,
            });
            if multi {
                if slot as usize >= self.cold.len() {
                    self.cold.resize(slot as usize + 1, Cold::default());
                }
                self.cold[slot as usize].flow_bytes = total;
            }
            let node = &mut self.nodes[hi];
            node.buffer_bytes += bytes;
            let peak = &mut self.buffer_peak[hi];
            *peak = (*peak).max(node.buffer_bytes);
            self.data_first += 1;
            wire = self.wire_time(bytes);
            self.send_data(now, h, slot, wire);
        } else {
            return;
        }
        let free_at = now + wire + self.l.gap;
        let node = &mut self.nodes[hi];
        node.free_at = free_at;
        if !node.acks.is_empty() || !node.retx.is_empty() || !node.fresh.is_empty() {
            node.wake = true;
            self.pending_tx += 1;
            self.push_wake(now, free_at, h);
        }
    }

    /// Node `h`'s transmitter wakes at `t` (after `now`, within the wake
    /// horizon: the end of a transmission that has started).
    #[inline(always)]
    fn push_wake(&mut self, now: SimTime, t: SimTime, h: u32) {
        self.wakes.push(now, t, self.seq, h);
        self.seq += 1;
    }

    /// The earliest of the wake-ups and short data arrivals, if due by `now`.
    fn pop_due_event(&mut self, now: SimTime) -> Option<Event> {
        let w = self.wakes.peek();
        let d = self.short_data.peek().map(|Reverse((t, q, _))| (*t, *q));
        match (w, d) {
            (Some(w), d) if w.0 <= now && d.is_none_or(|d| w < d) => {
                Some(Event::TxFree(self.wakes.pop(now)))
            }
            (_, Some(d)) if d.0 <= now => {
                let Reverse((_, _, [slot, serial, src, dst])) =
                    self.short_data.pop().expect("peeked");
                Some(Event::Data {
                    slot,
                    serial,
                    src,
                    dst,
                })
            }
            _ => None,
        }
    }

    /// Something was queued at node `h`: transmit now if the transmitter is
    /// free, else make sure it wakes when it is.
    fn kick(&mut self, h: u32, now: SimTime) {
        let node = &mut self.nodes[h as usize];
        if node.wake {
            return;
        }
        if now >= node.free_at {
            self.start_tx(h, now);
        } else {
            node.wake = true;
            self.pending_tx += 1;
            let t = node.free_at;
            self.push_wake(now, t, h);
        }
    }

    /// The next retransmission of node `h` (releasing entries ACKed while queued).
    fn pop_retx(&mut self, h: u32) -> Option<u32> {
        loop {
            let slot = self.out.pop_front(&mut self.nodes[h as usize].retx)?;
            let o = self.out.get_mut(slot);
            o.set(QUEUED, false);
            if o.has(ACKED) {
                self.release(slot);
                continue;
            }
            return Some(slot);
        }
    }

    #[inline(always)]
    fn send_data(&mut self, now: SimTime, h: u32, slot: u32, wire: SimTime) {
        let o = *self.out.get(slot);
        let dst = o.dst;
        let serial = o.serial;
        self.data_sent += 1;
        let at = now + self.l.head_latency + wire;
        if o.bytes() as u64 == self.packet {
            let n = self.data_fifo.push(at, [slot, serial, h, dst]);
            self.inject_later(now, (h, dst), wire, (at, Self::entry(n, false)));
        } else if self.inject(now, h, dst, wire) {
            self.in_flight += 1;
            self.short_data
                .push(Reverse((at, self.seq, [slot, serial, h, dst])));
            self.seq += 1;
        } else {
            self.data_dropped += 1;
        }
        let deadline = now + self.timeout;
        self.out.get_mut(slot).deadline = deadline;
        self.timeouts_fifo.push(deadline, (slot, serial));
    }

    fn release(&mut self, slot: u32) {
        self.out.get_mut(slot).serial = 0;
        self.out.release(slot);
    }

    /// Is (slot, serial) still outstanding? (Serials are never 0.)
    fn live(&self, slot: u32, serial: u32) -> bool {
        self.out.get_any(slot).is_some_and(|o| o.serial == serial)
    }

    /// The side-table entry of `slot`.
    fn cold_mut(&mut self, slot: u32) -> &mut Cold {
        if slot as usize >= self.cold.len() {
            self.cold.resize(slot as usize + 1, Cold::default());
        }
        &mut self.cold[slot as usize]
    }

    /// Queues a retransmission at its node.
    fn queue_retx(&mut self, slot: u32, now: SimTime) {
        let o = self.out.get_mut(slot);
        o.set(TIMER, false);
        o.set(QUEUED, true);
        let h = o.src;
        self.out.push_back(&mut self.nodes[h as usize].retx, slot);
        self.kick(h, now);
    }

    /// The timeout at the head of the FIFO (due at `deadline`).
    fn on_timeout(&mut self, now: SimTime, deadline: SimTime, slot: u32, serial: u32) {
        if !self.live(slot, serial) || self.out.get(slot).deadline != deadline {
            return;
        }
        self.timeouts += 1;
        let o = self.out.get_mut(slot);
        o.deadline = SimTime::MAX;
        let before = o.has(TIMED_OUT);
        o.set(TIMED_OUT, true);
        let cold = self.cold_mut(slot);
        cold.timeouts = if before { cold.timeouts + 1 } else { 1 };
        let timeouts = cold.timeouts;
        {
            {
                let c = timeouts.min(self.backoff_cap);
                let slots = self.backoff_rng.random_range(0..(1u64 << c));
                if slots == 0 {
                    self.queue_retx(slot, now);
                } else {
                    let id = self.timers.schedule(
                        now + self.backoff_slot * slots,
                        Timer::Retry { slot, serial },
                    );
                    self.out.get_mut(slot).set(TIMER, true);
                    self.cold_mut(slot).timer = Some(id);
                }
            }
        }
    }

    fn on_timer(&mut self, now: SimTime, t: Timer) {
        match t {
            Timer::Retry { slot, serial } => {
                if self.live(slot, serial) {
                    self.queue_retx(slot, now);
                }
            }
        }
    }

    /// Handles everything due at `now` (the earliest time anything is
    /// due) and returns how many: data arrivals, then ACK arrivals, then
    /// wake-ups and short data arrivals in (time, seq) order, then timeouts,
    /// then backoff timers. Each kind is drained in turn: that is the order
    /// of one loop re-checking every kind after each step, since nothing
    /// handled at `now` schedules anything at `now` (arrivals, wake-ups and
    /// timeouts are a positive time later) except a backoff timer of zero
    /// slots' length, which comes last either way.
    fn step(&mut self, now: SimTime, rec: &mut Recorder) -> u64 {
        let mut n = 0;
        while self.data_fifo.due() <= now {
            let (_, [slot, serial, src, dst]) = self.data_fifo.pop();
            let ev = Event::Data {
                slot,
                serial,
                src,
                dst,
            };
            self.on_event(now, ev, rec);
            n += 1;
        }
        while self.ack_fifo.due() <= now {
            let (_, [slot, serial]) = self.ack_fifo.pop();
            self.on_event(now, Event::Ack { slot, serial }, rec);
            n += 1;
        }
        while let Some(ev) = self.pop_due_event(now) {
            self.on_event(now, ev, rec);
            n += 1;
        }
        while self.timeouts_fifo.due() <= now {
            let (d, (slot, serial)) = self.timeouts_fifo.pop();
            self.on_timeout(now, d, slot, serial);
            n += 1;
        }
        // (The head's time, inlined, before the call: most steps have no
        // backoff timer due.)
        while self.timers.peek_time().is_some_and(|t| t <= now) {
            let (_, t) = self.timers.pop().expect("peeked");
            self.on_timer(now, t);
            n += 1;
        }
        // Timeouts whose packet was ACKed (or resent: a later deadline) are
        // stale for good; dropping them from the head now spares the run
        // loop an iteration each (nearly every packet is ACKed in time).
        // Only stale entries go, so nothing the run does changes.
        while let Some(&(d, (slot, serial))) = self.timeouts_fifo.front() {
            if self.live(slot, serial) && self.out.get(slot).deadline == d {
                break;
            }
            self.timeouts_fifo.pop();
        }
        n
    }

    #[inline(always)]
    fn on_event(&mut self, now: SimTime, ev: Event, rec: &mut Recorder) {
        match ev {
            Event::TxFree(h) => {
                self.pending_tx -= 1;
                self.nodes[h as usize].wake = false;
                self.start_tx(h, now);
            }
            Event::Data {
                slot,
                serial,
                src,
                dst,
            } => {
                self.in_flight -= 1;
                self.data_arrived += 1;
                let packet = self.packet;
                // Not live: ACKed, so a copy arrived before.
                let first = self.live(slot, serial) && !self.out.get(slot).has(RECEIVED);
                if !first {
                    self.duplicates += 1;
                } else {
                    let o = self.out.get_mut(slot);
                    o.set(RECEIVED, true);
                    let (flow, seq, multi, bytes) = (o.flow, o.seq, o.has(MULTI), o.bytes());
                    if !multi {
                        rec.deliver_last(flow, now, bytes as u64);
                    } else {
                        let total = self.cold[slot as usize].flow_bytes;
                        let units = unit_count(total.max(1), packet);
                        let reorder = &mut self.reorder;
                        let at = *self
                            .reorder_of
                            .entry(flow)
                            .or_insert_with(|| reorder.alloc(ReorderBuffer::default()));
                        let rb = self.reorder.get_mut(at);
                        match rb.receive(seq) {
                            Receipt::InOrder { released } => {
                                let next = rb.next_expected();
                                let b: u64 = (next - released..next)
                                    .map(|u| unit_bytes(u, total, packet))
                                    .sum();
                                rec.deliver_point(flow, now, b);
                                if rb.is_complete(units) {
                                    rec.complete(flow, now);
                                    self.reorder.release(at);
                                    self.reorder_of.remove(&flow);
                                }
                            }
                            Receipt::Early => {}
                            Receipt::Duplicate => self.duplicates += 1,
                        }
                    }
                }
                let i = self.acks_q.alloc((src, slot, serial));
                self.acks_q.push_back(&mut self.nodes[dst as usize].acks, i);
                self.kick(dst, now);
            }
            Event::Ack { slot, serial } => {
                self.in_flight -= 1;
                self.acks_arrived += 1;
                if !self.live(slot, serial) || self.out.get(slot).has(ACKED) {
                    return;
                }
                let o = self.out.get_mut(slot);
                o.set(ACKED, true);
                o.deadline = SimTime::MAX;
                let (timer, queued, bytes, h) = (o.has(TIMER), o.has(QUEUED), o.bytes(), o.src);
                if timer {
                    o.set(TIMER, false);
                    if let Some(id) = self.cold[slot as usize].timer.take() {
                        self.timers.cancel(id);
                    }
                }
                self.nodes[h as usize].buffer_bytes -= bytes as u64;
                if !queued {
                    self.release(slot);
                }
            }
        }
    }
}

impl Fabric for Baldur {
    fn name(&self) -> String {
        "Baldur".into()
    }
    fn hosts(&self) -> usize {
        self.nodes.len()
    }
    fn host_rate(&self) -> Rate {
        self.l.rate
    }

    fn add_flow(&mut self, now: SimTime, flow: &Flow, _: &mut Recorder) {
        let i = self.fresh_q.alloc(Fresh {
            flow: flow.id,
            dst: flow.dst,
            bytes: flow.bytes,
        });
        let node = &mut self.nodes[flow.src as usize];
        self.fresh_q.push_back(&mut node.fresh, i);
        // A transmitter already waiting to wake takes the flow then: nothing
        // is scheduled now, so `next_event` stays as it was.
        if !node.wake {
            self.kick(flow.src, now);
            self.settle();
        }
    }

    fn next_event(&self) -> Option<SimTime> {
        self.next_at
    }

    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        let n = self.step(now, rec);
        rec.count_internal_events(n);
        self.settle();
    }

    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        // Up to this many steps per call, so the run loop still reports
        // progress (and can be cancelled) every few thousand events.
        const MAX_STEPS: u64 = 1 << 12;
        let mut t = now;
        let mut steps = 0;
        let mut n = 0;
        loop {
            n += self.step(t, rec);
            self.settle();
            steps += 1;
            match self.next_at {
                Some(next) if next <= bound && steps < MAX_STEPS => t = next,
                _ => break,
            }
        }
        rec.count_internal_events(n);
        steps
    }

    fn finish(&mut self, _: SimTime, _: &mut Recorder) {
        self.flush();
        self.next_at = self.earliest();
    }

    fn stats(&self) -> FabricStats {
        let injected = self.data_sent + self.acks_sent;
        let dropped = self.data_dropped + self.acks_dropped;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let peaks = &self.buffer_peak;
        let mut v: Vec<(String, f64)> = vec![
            ("multiplicity".into(), self.l.m as f64),
            ("stages".into(), self.l.stages as f64),
            ("packets_sent".into(), self.data_first as f64),
            ("data_transmissions".into(), self.data_sent as f64),
            ("retransmissions".into(), self.retransmissions as f64),
            ("timeouts".into(), self.timeouts as f64),
            ("data_dropped".into(), self.data_dropped as f64),
            ("acks_sent".into(), self.acks_sent as f64),
            ("acks_dropped".into(), self.acks_dropped as f64),
            ("duplicates_received".into(), self.duplicates as f64),
            ("drop_rate".into(), ratio(dropped, injected)),
            (
                "data_drop_rate".into(),
                ratio(self.data_dropped, self.data_sent),
            ),
            (
                "ack_drop_rate".into(),
                ratio(self.acks_dropped, self.acks_sent),
            ),
            (
                "retx_buffer_peak_bytes".into(),
                peaks.iter().copied().max().unwrap_or(0) as f64,
            ),
            (
                "retx_buffer_peak_mean_bytes".into(),
                peaks.iter().sum::<u64>() as f64 / peaks.len().max(1) as f64,
            ),
            (
                "outstanding_slots_high_water".into(),
                self.out.high_water() as f64,
            ),
        ];
        for (s, &d) in self.drops_by_stage.iter().enumerate() {
            v.push((format!("drops_stage_{s}"), d as f64));
        }
        v.into_iter().collect()
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.link_overlaps > 0 {
            return Err(format!(
                "baldur: {} times a switch output carried two packets at once",
                self.link_overlaps
            ));
        }
        let busy = self.nodes.iter().filter(|n| n.wake).count() as u64;
        if busy != self.pending_tx {
            return Err(format!(
                "baldur: {busy} transmitters waiting to wake but {} TxFree events pending",
                self.pending_tx
            ));
        }
        if self.data_sent != self.data_first + self.retransmissions {
            return Err("baldur: data transmissions != first + retransmissions".into());
        }
        let flying = (self.data_sent - self.data_dropped - self.data_arrived)
            + (self.acks_sent - self.acks_dropped - self.acks_arrived);
        let pending = self.short_data.len() + self.data_fifo.len() + self.ack_fifo.len();
        if self.wakes.len() as u64 != self.pending_tx {
            return Err(format!(
                "baldur: {} wake-ups scheduled but {} TxFree pending",
                self.wakes.len(),
                self.pending_tx
            ));
        }
        if flying != self.in_flight || self.in_flight as usize > pending {
            return Err(format!(
                "baldur: packet conservation: sent - dropped - arrived = {flying}, {} arrival events pending",
                self.in_flight
            ));
        }
        let mut held = vec![0u64; self.nodes.len()];
        let mut live = 0usize;
        for slot in 0..self.out.high_water() as u32 {
            let Some(o) = self.out.get_any(slot).filter(|o| o.serial != 0) else {
                continue;
            };
            live += 1;
            if !o.has(ACKED) {
                held[o.src as usize] += o.bytes() as u64;
                if !o.has(TIMER) && o.deadline == SimTime::MAX && !o.has(QUEUED) {
                    return Err(format!("baldur: packet {slot} neither timed nor queued"));
                }
            }
        }
        if live != self.out.live() {
            return Err(format!(
                "baldur: {live} live serials but {} outstanding packets",
                self.out.live()
            ));
        }
        for (h, n) in self.nodes.iter().enumerate() {
            if held[h] != n.buffer_bytes || n.buffer_bytes > self.buffer_peak[h] {
                return Err(format!(
                    "baldur: node {h} buffer {} B but its un-ACKed packets hold {} B",
                    n.buffer_bytes, held[h]
                ));
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
    use rand::Rng;

    fn topo(n: u32, gbps: u64) -> Topology {
        Topology {
            racks: n,
            servers_per_rack: 1,
            uplinks: 1,
            uplink_rate: Rate::gbps(gbps),
            server_rate: None,
        }
    }

    fn net(n: u32, p: &BaldurParams, seed: u64) -> Baldur {
        let t = topo(n, 25);
        let ctx = BuildContext {
            topology: &t,
            seed,
            check_invariants: true,
        };
        let l = Layout::new(p, &ctx).unwrap();
        Baldur::new(p, l, &RngStreams::new(seed)).with_checks(true)
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

    fn drain(net: &mut Baldur, flows: &[Flow]) -> Recorder {
        let mut rec = Recorder::new(None);
        // Every call while little is in flight; then every 64th (the check
        // walks every outstanding packet).
        let check = |step: u64| step < 2_000 || step.is_multiple_of(64);
        crate::fabric::drive(net, flows, &mut rec, SimTime::MAX, check);
        net.check_invariants().unwrap();
        rec
    }

    #[test]
    fn a_lone_packet_takes_exactly_links_plus_switches_plus_serialisation() {
        // 8 nodes = 3 stages, m = 1 (0.14 ns switches), 25 Gbps (40 ps/bit).
        // Wire: 512 B = 4,096 bits + 3 routing bits x 3 bit periods = 4,105
        // bits = 164,200 ps. Head: 100 ns + 3 x 140 ps + 100 ns = 200,420 ps.
        let p = BaldurParams {
            multiplicity: 1,
            ..Default::default()
        };
        let mut b = net(8, &p, 1);
        let rec = drain(&mut b, &[flow(0, 6, 1, 512, SimTime::ns(10))]);
        assert_eq!(
            rec.finish(0),
            Some(SimTime::ns(10) + SimTime(164_200 + 200_420))
        );
        assert_eq!(rec.delivered(0), 512);
        let s = b.stats();
        assert_eq!(s["drop_rate"], 0.0);
        assert_eq!(s["retransmissions"], 0.0);
        // The ACK came back and emptied the retransmission buffer.
        assert_eq!(s["retx_buffer_peak_bytes"], 512.0);
        assert_eq!(b.nodes[6].buffer_bytes, 0);
        assert_eq!(b.out.live(), 0);
    }

    #[test]
    fn with_m1_the_route_is_the_unique_butterfly_path_to_the_destination() {
        let mut rng = RngStreams::new(5).stream("w");
        for k in 1..=6u32 {
            let n = 1u32 << k;
            let mut bf = Butterfly::new(k, 1, Some(&mut rng));
            for src in 0..n {
                for dst in 0..n {
                    let mut path = Vec::new();
                    // Far apart in time: the network is idle for each.
                    let t0 = SimTime::us(1 + (src * n + dst) as u64);
                    let fate =
                        bf.traverse(src, dst, t0, SimTime(1), SimTime(10), |s, port, _, _| {
                            path.push((s, port))
                        });
                    assert_eq!(fate, Fate::Delivered);
                    assert_eq!(path.len(), k as usize);
                    assert_eq!(path[0].1 / 2, (src / 2) as usize, "enters at its switch");
                    for w in path.windows(2) {
                        let (s, port) = w[0];
                        assert_eq!(bf.next_switch(s, port) as usize, w[1].1 / 2);
                    }
                    // The last output (switch j, direction b) is node 2j + b.
                    assert_eq!(path[k as usize - 1].1 as u32, dst);
                }
            }
        }
    }

    /// One packet per node at the same instant, destinations a random
    /// permutation: the fraction dropped (§IV-E's one-shot analysis).
    fn one_shot_drops(k: u32, m: u32, trials: u32) -> f64 {
        let n = 1u32 << k;
        let streams = RngStreams::new(9);
        let mut rng = streams.stream("perm");
        let mut wiring = streams.stream("wiring");
        let mut dropped = 0u64;
        for _ in 0..trials {
            let mut bf = Butterfly::new(k, m, Some(&mut wiring));
            let mut perm: Vec<u32> = (0..n).collect();
            for i in (1..n as usize).rev() {
                perm.swap(i, rng.random_range(0..=i));
            }
            for src in 0..n {
                let fate = bf.traverse(
                    src,
                    perm[src as usize],
                    SimTime(0),
                    SimTime(1),
                    SimTime(10),
                    |_, _, _, _| {},
                );
                dropped += matches!(fate, Fate::Dropped { .. }) as u64;
            }
        }
        dropped as f64 / (trials as u64 * n as u64) as f64
    }

    #[test]
    fn one_shot_drops_fall_monotonically_with_multiplicity() {
        let rates: Vec<f64> = (1..=5).map(|m| one_shot_drops(6, m, 200)).collect();
        assert!(rates[0] > 0.2, "{rates:?}");
        for w in rates.windows(2) {
            assert!(w[1] <= w[0], "{rates:?}");
        }
        assert!(rates[4] < 0.01, "{rates:?}");
    }

    /// Two nodes to one destination at the same instant, m = 1: the second
    /// packet loses the last switch's only output towards the destination.
    #[test]
    fn a_dropped_packet_is_retransmitted_and_delivered_exactly_once() {
        let p = BaldurParams {
            multiplicity: 1,
            random_wiring: false,
            ..Default::default()
        };
        let mut b = net(8, &p, 1);
        let t = SimTime::ns(10);
        let rec = drain(&mut b, &[flow(0, 0, 5, 512, t), flow(1, 1, 5, 512, t)]);
        let s = b.stats();
        assert_eq!(s["data_dropped"], 1.0, "{s:?}");
        assert_eq!(s["retransmissions"], 1.0, "{s:?}");
        let lone = SimTime(164_200 + 200_420);
        assert_eq!(rec.finish(0), Some(t + lone));
        // Node 1 resends after the 2 us timeout plus its backoff draw
        // (0 or 1 slot of 200 ns), and the copy goes through.
        let f1 = rec.finish(1).unwrap();
        assert!(
            f1 == t + p.timeout + lone || f1 == t + p.timeout + p.backoff_slot + lone,
            "{f1}"
        );
        assert_eq!((rec.delivered(0), rec.delivered(1)), (512, 512));
        assert_eq!(rec.violation_count(), 0);
        assert_eq!(b.out.live(), 0);
    }

    #[test]
    fn spurious_retransmissions_are_delivered_once_and_counted_as_duplicates() {
        // A timeout shorter than the round trip: every packet is resent
        // (backoff 0 or 1 slots) before its ACK arrives, several times.
        let p = BaldurParams {
            timeout: SimTime::ns(150),
            backoff_slot: SimTime::ns(10),
            backoff_cap: 2,
            ..Default::default()
        };
        let mut b = net(16, &p, 3);
        let flows: Vec<Flow> = (0..16)
            .map(|i| flow(i, i, (i * 5 + 3) % 16, 3_000, SimTime::ns(i as u64 * 37)))
            .collect();
        let rec = drain(&mut b, &flows);
        assert_eq!(rec.violation_count(), 0, "{:?}", rec.violations());
        for f in &flows {
            assert_eq!(rec.delivered(f.id), 3_000);
            assert!(rec.finish(f.id).is_some());
        }
        let s = b.stats();
        assert!(s["retransmissions"] > 16.0, "{s:?}");
        assert!(s["duplicates_received"] > 0.0, "{s:?}");
        assert_eq!(b.out.live(), 0);
    }

    fn loaded(m: u32, seed: u64) -> (FabricStats, Recorder) {
        // 64 nodes, a random permutation at load 0.7 of 512 B packets
        // (exponential gaps), 200 packets per node.
        let p = BaldurParams {
            multiplicity: m,
            ..Default::default()
        };
        let mut b = net(64, &p, seed);
        let streams = RngStreams::new(seed);
        let mut r = streams.stream("load");
        let perm = crate::workload::derangement(64, &mut r);
        let gap = 512.0 * 8.0 / (0.7 * 25e9) / 64.0;
        let mut t = 0.0;
        let flows: Vec<Flow> = (0..64 * 200)
            .map(|i| {
                t += -crate::rng::open_unit(&mut r).ln() * gap;
                let src = r.random_range(0..64);
                flow(i, src, perm[src as usize], 512, SimTime((t * 1e12) as u64))
            })
            .collect();
        let rec = drain(&mut b, &flows);
        assert_eq!(rec.violation_count(), 0);
        for f in &flows {
            assert_eq!(rec.delivered(f.id), 512);
        }
        (b.stats(), rec)
    }

    #[test]
    fn under_load_more_paths_drop_less_and_everything_arrives_once() {
        let (s1, _) = loaded(1, 4);
        let (s4, _) = loaded(4, 4);
        assert!(s1["drop_rate"] > 0.05, "{s1:?}");
        assert!(
            s4["drop_rate"] < s1["drop_rate"] / 10.0,
            "m=1 {s1:?} m=4 {s4:?}"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_run_and_another_seed_another_wiring() {
        let (a, ra) = loaded(2, 7);
        let (b, rb) = loaded(2, 7);
        assert_eq!(a, b);
        let fa: Vec<_> = (0..ra.flows() as u32).map(|i| ra.finish(i)).collect();
        let fb: Vec<_> = (0..rb.flows() as u32).map(|i| rb.finish(i)).collect();
        assert_eq!(fa, fb);
        let mut w1 = RngStreams::new(1).stream("baldur.wiring");
        let mut w2 = RngStreams::new(2).stream("baldur.wiring");
        let wiring = |b: Butterfly| -> Vec<u32> {
            (0..4)
                .flat_map(|s| (0..64).map(move |p| (s, p)))
                .map(|(s, p)| b.next_switch(s, p))
                .collect()
        };
        assert_ne!(
            wiring(Butterfly::new(5, 2, Some(&mut w1))),
            wiring(Butterfly::new(5, 2, Some(&mut w2)))
        );
    }

    #[test]
    fn bad_input_names_key_value_and_reason() {
        let ctx = |t: &Topology| -> Result<Layout, ConfigError> {
            let c = BuildContext {
                topology: t,
                seed: 1,
                check_invariants: false,
            };
            Layout::new(&BaldurParams::default(), &c)
        };
        let e = ctx(&topo(12, 25)).unwrap_err();
        assert_eq!(e.key, "topology.racks");
        assert!(e.reason.contains("power of two"), "{e}");
        let t = topo(16, 25);
        let c = BuildContext {
            topology: &t,
            seed: 1,
            check_invariants: false,
        };
        for (m, key) in [
            (0, "baldur.multiplicity"),
            (65, "baldur.multiplicity"),
            (6, "baldur.switch_latency"),
        ] {
            let p = BaldurParams {
                multiplicity: m,
                ..Default::default()
            };
            assert_eq!(Layout::new(&p, &c).unwrap_err().key, key);
        }
        let p = BaldurParams {
            round_up_nodes: true,
            ..Default::default()
        };
        let t12 = topo(12, 25);
        let c12 = BuildContext {
            topology: &t12,
            seed: 1,
            check_invariants: false,
        };
        assert_eq!(Layout::new(&p, &c12).unwrap().stages, 4);
    }

    #[test]
    fn deferred_batched_switching_gives_the_same_run_as_immediate() {
        // `check` pushes every packet through at once; without it packets
        // wait and go through in batches. Same seed: same run.
        for m in [1, 2, 4] {
            let p = BaldurParams {
                multiplicity: m,
                ..Default::default()
            };
            let t = topo(64, 25);
            let run = |check: bool| {
                let ctx = BuildContext {
                    topology: &t,
                    seed: 11,
                    check_invariants: check,
                };
                let l = Layout::new(&p, &ctx).unwrap();
                let mut b = Baldur::new(&p, l, &RngStreams::new(11)).with_checks(check);
                let mut r = RngStreams::new(11).stream("load");
                let perm = crate::workload::derangement(64, &mut r);
                let mut t = 0u64;
                let flows: Vec<Flow> = (0..64 * 100)
                    .map(|i| {
                        t += r.random_range(0..20_000);
                        let src = r.random_range(0..64);
                        // Mostly one packet, some several (short last ones).
                        let bytes = if i % 7 == 0 { 1_300 } else { 512 };
                        flow(i, src, perm[src as usize], bytes, SimTime(t))
                    })
                    .collect();
                let mut rec = Recorder::new(None);
                crate::fabric::drive(&mut b, &flows, &mut rec, SimTime::MAX, |_| false);
                let fin: Vec<_> = (0..flows.len() as u32).map(|i| rec.finish(i)).collect();
                (b.stats(), fin)
            };
            let (sa, fa) = run(true);
            let (sb, fb) = run(false);
            assert!(sa["data_dropped"] > 0.0 || m > 1, "{sa:?}");
            assert_eq!(sa, sb);
            assert_eq!(fa, fb);
            assert!(fa.iter().all(|f| f.is_some()));
        }
    }

    #[test]
    fn steps_up_to_the_next_arrival_in_one_call_change_nothing() {
        // The run loop with Baldur's `advance_until` (many steps per call)
        // and with one step per call: the same completions, statistics,
        // event count and end, drained or cut short by a duration or a flow
        // count.
        use crate::engine::toy::{outcome, stop_rules, OneStep};
        let p = BaldurParams {
            multiplicity: 2,
            ..Default::default()
        };
        let mut r = RngStreams::new(5).stream("load");
        let perm = crate::workload::derangement(64, &mut r);
        let mut t = 0u64;
        let flows: Vec<Flow> = (0..64 * 60)
            .map(|i| {
                t += r.random_range(0..30_000);
                let src = r.random_range(0..64);
                let bytes = if i % 5 == 0 { 2_000 } else { 512 };
                flow(i, src, perm[src as usize], bytes, SimTime(t))
            })
            .collect();
        for stop in &stop_rules(SimTime(t / 2), 1_000, SimTime::us(3)) {
            let mut many = net(64, &p, 5).with_checks(false);
            let mut one = OneStep(Box::new(net(64, &p, 5).with_checks(false)));
            let a = outcome(&mut many, &flows, stop);
            let b = outcome(&mut one, &flows, stop);
            assert!(a.0.iter().any(|f| f.0.is_some()));
            assert!(a.1 > 3 * 64 * 60 / 2, "{}", a.1);
            assert_eq!(a, b);
        }
    }

    proptest! {
        /// The wake-up ring pops exactly what a binary heap of (time, seq)
        /// pops: pushes within the horizon of `now`, pops of what is due,
        /// `now` moving forward (by as little as a picosecond or past the
        /// horizon, so buckets are reused lap after lap), and bursts at one
        /// instant that overflow a bucket's flat slots.
        #[test]
        fn wake_ring_pops_in_heap_order(
            horizon in 1u64..400_000,
            steps in prop::collection::vec((0u64..4, 0u64..1_000_000, 0u32..12), 1..400),
        ) {
            let mut w = Wakes::new(SimTime(horizon));
            let mut heap = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (op, x, n) in steps {
                match op {
                    0 | 1 => {
                        for k in 0..n {
                            // op 1: a burst at one instant (more than a
                            // bucket's flat slots: the spill list).
                            let spread = if op == 0 { k as u64 * 7_919 } else { 0 };
                            let t = now + 1 + (x + spread) % horizon;
                            w.push(SimTime(now), SimTime(t), seq, k);
                            heap.push(Reverse((t, seq, k)));
                            seq += 1;
                        }
                    }
                    _ => {
                        // Move to the earliest pending time, or a little on
                        // if nothing is pending; then pop all that is due.
                        let next = heap.peek().map(|Reverse(e)| e.0);
                        now = next.unwrap_or(now + 1 + x % (3 * horizon));
                        while heap.peek().is_some_and(|Reverse(e)| e.0 <= now) {
                            let Reverse((t, q, k)) = heap.pop().unwrap();
                            prop_assert_eq!(w.peek(), Some((SimTime(t), q)));
                            prop_assert_eq!(w.pop(SimTime(now)), k);
                        }
                    }
                }
                prop_assert_eq!(w.len(), heap.len());
                prop_assert_eq!(w.peek(), heap.peek().map(|Reverse(e)| (SimTime(e.0), e.1)));
            }
        }

        /// Stage by stage in batches = one packet after another: same fates
        /// and the same state after (checked by a probe packet set after).
        #[test]
        fn batched_traversal_equals_one_at_a_time(
            k in 1u32..6, m in 1u32..8, seed in 0u64..1000, batch in 1usize..20,
            pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..1_500_000_000, 1u64..=NarrowButterfly::SPAN), 1..200),
            short in prop::collection::vec(any::<bool>(), 200),
        ) {
            let n = 1u32 << k;
            let mut r1 = RngStreams::new(seed).stream("w");
            let mut r2 = RngStreams::new(seed).stream("w");
            let mut r3 = RngStreams::new(seed).stream("w");
            let mut one = NarrowButterfly::new(k, m, Some(&mut r1));
            let mut many = NarrowButterfly::new(k, m, Some(&mut r2));
            let mut wide = Butterfly::new(k, m, Some(&mut r3));
            let hop = SimTime(3);
            let mut t = 0u64;
            let mut probes = Vec::new();
            for (i, &(s, d, gap, dur)) in pkts.iter().enumerate() {
                let (gap, dur) = if short[i] { (gap % 50, dur % 40 + 1) } else { (gap, dur.min(NarrowButterfly::SPAN - hop.0 * (k as u64 - 1))) };
                t += gap;
                probes.push(Probe::new(s % n, d % n, SimTime(t), SimTime(dur)));
            }
            let want: Vec<Option<u32>> = probes
                .iter()
                .map(|p| match one.traverse(p.src, p.dst, p.t0, hop, p.occupy, |_, _, _, _| {}) {
                    Fate::Delivered => None,
                    Fate::Dropped { stage } => Some(stage),
                })
                .collect();
            let mut wide_probes = probes.clone();
            for c in probes.chunks_mut(batch) {
                many.traverse_batch(c, hop);
            }
            for c in wide_probes.chunks_mut(batch) {
                wide.traverse_batch(c, hop);
            }
            let got: Vec<Option<u32>> = probes.iter().map(|p| p.dropped).collect();
            let got_wide: Vec<Option<u32>> = wide_probes.iter().map(|p| p.dropped).collect();
            prop_assert_eq!(&want, &got);
            prop_assert_eq!(&want, &got_wide);
            // The same outputs are busy until the same times.
            for s in 0..n {
                for d in 0..n {
                    let a = one.traverse(s, d, SimTime(t), hop, SimTime(1), |_, _, _, _| {});
                    let b = many.traverse(s, d, SimTime(t), hop, SimTime(1), |_, _, _, _| {});
                    prop_assert_eq!(a, b);
                }
            }
        }

        /// The first-free search (signed compares, no branch per port)
        /// against the plain rule (the first port, in order, whose free time
        /// is at or before now, compared unsigned), for 1…8 ports in 32 and
        /// 64 bits, free times at 0, at MAX, equal to now, one either side
        /// of it, or anywhere; and at NEVER (a dropped probe's time) no
        /// output is free.
        #[test]
        fn free_mask_finds_the_first_output_free_at_now(
            now in prop_oneof![Just(0u64), Just(i32::MAX as u64), 0u64..=i32::MAX as u64],
            outs in prop::collection::vec((0u8..6, 0u64..=i32::MAX as u64), 1..=8),
        ) {
            fn check<S: Stamp>(now: u64, outs: &[(u8, u64)]) -> Result<(), TestCaseError> {
                let max = S::MAX;
                let free: Vec<S> = outs
                    .iter()
                    .map(|&(c, any)| match c {
                        0 => 0,
                        1 => max,
                        2 => now.saturating_sub(1),
                        3 => now,
                        4 => (now + 1).min(max),
                        _ => any,
                    })
                    .map(S::from_u64)
                    .collect();
                let mask = free_mask(&free, S::from_u64(now));
                for (i, f) in free.iter().enumerate() {
                    prop_assert_eq!((mask >> i) & 1 == 1, f.to_u64() <= now);
                }
                let first = free.iter().position(|f| f.to_u64() <= now);
                prop_assert_eq!((mask != 0).then(|| mask.trailing_zeros() as usize), first);
                prop_assert_eq!(free_mask(&free, S::NEVER), 0);
                Ok(())
            }
            check::<u32>(now, &outs)?;
            check::<u64>(now, &outs)?;
            // 64-bit stamps over their own range.
            let wide: Vec<(u8, u64)> = outs.iter().map(|&(c, v)| (c, v << 32 | v)).collect();
            check::<u64>(now << 32 | now, &wide)?;
        }

        /// 32-bit free times after a moving base decide every output exactly
        /// as 64-bit absolute times: same fates, same outputs, same times,
        /// across many moves of the base (gaps up to 1.5 ms, spans up to the
        /// narrow limit).
        #[test]
        fn narrow_times_give_the_same_traversals_as_wide_ones(
            k in 1u32..6, m in 1u32..4, seed in 0u64..1000,
            pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..1_500_000_000, 1u64..=NarrowButterfly::SPAN), 1..200),
            short in prop::collection::vec(any::<bool>(), 200),
        ) {
            let n = 1u32 << k;
            let mut r1 = RngStreams::new(seed).stream("w");
            let mut r2 = RngStreams::new(seed).stream("w");
            let mut wide = Butterfly::new(k, m, Some(&mut r1));
            let mut narrow = NarrowButterfly::new(k, m, Some(&mut r2));
            let hop = SimTime(3);
            let mut t = 0u64;
            for (i, &(s, d, gap, dur)) in pkts.iter().enumerate() {
                // Mostly short gaps and occupancies (collisions), some long.
                let (gap, dur) = if short[i] { (gap % 50, dur % 40 + 1) } else { (gap, dur.min(NarrowButterfly::SPAN - hop.0 * (k as u64 - 1))) };
                t += gap;
                let (s, d) = (s % n, d % n);
                let (mut pw, mut pn) = (Vec::new(), Vec::new());
                let fw = wide.traverse(s, d, SimTime(t), hop, SimTime(dur), |a, b, c, e| pw.push((a, b, c, e)));
                let fn_ = narrow.traverse(s, d, SimTime(t), hop, SimTime(dur), |a, b, c, e| pn.push((a, b, c, e)));
                prop_assert_eq!(fw, fn_);
                prop_assert_eq!(pw, pn);
            }
        }

        /// No output ever carries two packets at once, and every delivered
        /// packet's outputs form a connected path ending at its destination.
        #[test]
        fn no_output_carries_two_packets_at_once(
            k in 1u32..6, m in 1u32..5, seed in 0u64..1000,
            pkts in prop::collection::vec((0u32..64, 0u32..64, 0u64..2_000, 1u64..300), 1..300),
        ) {
            let n = 1u32 << k;
            let mut rng = RngStreams::new(seed).stream("w");
            let mut bf = Butterfly::new(k, m, Some(&mut rng));
            let mut pkts = pkts;
            pkts.sort_by_key(|p| p.2);
            let mut used: Vec<(u32, usize, SimTime, SimTime)> = Vec::new();
            for &(s, d, t, dur) in &pkts {
                let (s, d) = (s % n, d % n);
                let mut path = Vec::new();
                let fate = bf.traverse(s, d, SimTime(t), SimTime(7), SimTime(dur), |st, port, a, b| {
                    path.push((st, port, a, b));
                });
                for w in path.windows(2) {
                    prop_assert_eq!(bf.next_switch(w[0].0, w[0].1) as usize, w[1].1 / (2 * m as usize));
                }
                if fate == Fate::Delivered {
                    prop_assert_eq!(path.len(), k as usize);
                    let last = path[k as usize - 1].1;
                    prop_assert_eq!((last / m as usize) as u32, d);
                }
                used.extend(path);
            }
            used.sort();
            for w in used.windows(2) {
                if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
                    prop_assert!(w[0].3 <= w[1].2, "overlap on stage {} port {}: {:?} {:?}", w[0].0, w[0].1, w[0], w[1]);
                }
            }
        }
    }
}

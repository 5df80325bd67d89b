//! The switching network alone: the wiring of a multi-butterfly and the
//! time each switch output becomes free, with one packet's traversal
//! ([`Stages::traverse`]) and a batch's, stage by stage
//! ([`Stages::traverse_batch`], specialised for m = 1…5). The tuned kernel of
//! the fabric: tested against the one-packet traversal and the 64-bit
//! network (`tests.rs`) and against the model's one-shot analysis.

use crate::rng::SimRng;
use crate::topology::wire_stage;
use crate::units::SimTime;

/// The switching network alone: wiring and the time each output becomes free.
///
/// Generic over the width `S` of a stored time: [`Butterfly`] keeps each
/// output's free time in 64 bits, [`NarrowButterfly`] in 32 bits relative to
/// a moving base (half the memory, so a paper-scale network's 10 stages fit
/// the per-core cache). Both give the same results: see [`Stamp`].
pub struct Stages<S: Stamp> {
    k: u32,
    m: u32,
    /// Outputs per last-stage direction that reach the node (m: all).
    eject: u32,
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

/// [`Stamp`] for the unsigned integer `$t`, compared as its signed twin `$s`.
macro_rules! stamp {
    ($t:ty, $s:ty) => {
        impl Stamp for $t {
            const MAX: u64 = <$s>::MAX as u64;
            const NEVER: $t = 1 << (<$t>::BITS - 1);
            #[inline]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline]
            fn to_u64(self) -> u64 {
                self as u64
            }
            #[inline]
            fn free_at(self, now: Self) -> bool {
                (self as $s) <= (now as $s)
            }
            #[inline]
            fn plus(self, d: Self) -> Self {
                self.wrapping_add(d)
            }
        }
    };
}

stamp!(u32, i32);
stamp!(u64, i64);

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

impl<S: Stamp> Lane<S> {
    /// The probe's pass through stage `s`, at its group's outputs `free`
    /// and the switches they feed `next`: it takes the first free output
    /// and goes on to the group of the next stage (`shift`: the bit of
    /// `dst` that picks it), or is dropped. Inlined into both batch loops
    /// (per probe and stage: the hot path).
    #[inline(always)]
    fn pass(&mut self, s: usize, free: &mut [S], next: &[S], hop: S, shift: usize) {
        let mask = free_mask(free, self.now);
        if mask == 0 {
            if self.dropped == NOT_DROPPED {
                self.dropped = s as u32;
                self.now = S::NEVER;
            }
            return;
        }
        let j = mask.trailing_zeros() as usize;
        free[j] = self.now.plus(self.occupy);
        self.now = self.now.plus(hop);
        self.group = next[j].to_u64() as u32 * 2 + ((self.dst >> shift) & 1);
    }
}

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
pub(super) fn free_mask<S: Stamp>(free: &[S], now: S) -> u64 {
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
            eject: m,
            groups,
            words,
            off,
            base: SimTime::ZERO,
            scratch: Vec::new(),
        }
    }

    /// Keeps only the first `links` (1..=m) of each last-stage direction's
    /// m outputs: a node receives on that many links (the others are never
    /// free, so a packet finding them all busy is dropped).
    pub fn with_ejection(mut self, links: u32) -> Self {
        self.eject = links.clamp(1, self.m);
        self.block_ejection();
        self
    }

    /// Marks the last stage's outputs beyond `eject` busy for ever (MAX is
    /// after every time a lookup can ask about).
    fn block_ejection(&mut self) {
        let m = self.m as usize;
        for g in 0..self.groups {
            let at = self.group_at(self.k as usize - 1, g);
            for f in &mut self.words[at + self.eject as usize..at + m] {
                *f = S::from_u64(S::MAX);
            }
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
        if self.eject < self.m {
            self.block_ejection();
        }
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
                let (free, next) = groups[l.group as usize & mask].split_at_mut(m);
                l.pass(s, free, next, hop, shift);
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
                l.pass(s, free, next, hop, shift);
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

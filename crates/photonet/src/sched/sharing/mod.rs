//! Max-min fair rates of a changing set of flows, kept up to date locally.
//!
//! Re-solving a whole connected component at every arrival and departure
//! costs O(flows in it), and under oversubscription nearly every active flow
//! shares one component — yet an event changes the rates of only a handful of
//! them (about 4 of ~1,000 in ESN-OSUB at paper scale). [`Sharing`] re-solves
//! only a working set W of flows, with every other flow's rate held fixed, and
//! grows W until the whole allocation satisfies the characterisation of
//! max-min fairness:
//!
//! > every flow crosses a *bottleneck*: a saturated resource on which no
//! > flow has a higher rate.
//!
//! The max-min fair allocation is the only feasible one with that property,
//! so when it holds everywhere the result is the same allocation a full
//! solve gives (to floating-point rounding: held rates enter as residual
//! capacities, so the last bits can differ). It need only be checked where
//! something changed: a flow none of whose resources carries a flow of W, or
//! lost or gained a flow, sees the same totals and rates as before.
//!
//! One update:
//! 1. W starts as the flows added since the last update.
//! 2. Solve W by progressive filling on residual capacities (capacity minus
//!    the rates of the held flows on each resource). W's problem is posed
//!    once per member: a round appends the members that joined since the
//!    last one (held flows keep their rates, so what they leave on a
//!    resource is known when it is first posed).
//! 3. A flow of W whose bottleneck carries a held flow with a higher rate
//!    pulls that flow into W (it must give way).
//! 4. A held flow without a bottleneck pulls itself into W (it may now grow,
//!    or its old bottleneck lost saturation). Only flows on a resource whose
//!    load changed since they were last checked can have lost theirs: a
//!    resource a departed flow used, or one of a flow of W whose rate moved.
//!    A held flow found to have a bottleneck keeps it until that resource's
//!    load changes, so it is looked at again only then.
//! 5. Repeat from 2 while W grew. W only grows, so this ends; at worst W is
//!    the whole component, which is the full solve.
//!
//! Three shortcuts leave every decision, and so every rate, bit for bit as
//! above (a proptest replays random scripts against [`Sharing::former`],
//! which does none of them):
//! - A whole round after a whole round extends the solver's resource → flows
//!   index by the new members ([`Solver::solve_extending`]) instead of
//!   rebuilding it: W's problem only grows by appending.
//! - A round after the first re-solves only the connected components of W's
//!   problem that the new members joined; progressive filling gives each
//!   component the rates it would get alone, and the other components are
//!   the same problems as in the last round.
//! - Step 4 does not scan every flow of each resource whose load changed,
//!   most of which would be skipped (in W, or verified at a resource whose
//!   load did not change): each resource keeps a watch list of the held
//!   flows verified at it, plus the flows verified nowhere, and step 4 looks
//!   at the held flows on the watch lists of the changed resources, in the
//!   order the scan would have met them. At the end of an update a flow of W
//!   counts as verified at the resource it was frozen at, when that is a
//!   bottleneck of it.
//!
//! Tolerances: "saturated" and "highest" are decided to a relative
//! [`TOLERANCE`] (1e-9), far above rounding (~1e-16 per operation) and far
//! below anything a flow completion time can show.

use super::maxmin::{Problem, Solver};

/// Most resources one flow may cross.
pub const MAX_PATH: usize = 6;

/// Relative tolerance of the saturation and highest-rate tests.
pub const TOLERANCE: f64 = 1e-9;

/// The root of `x` in a union-find forest, halving the path on the way.
fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        let up = parent[parent[x as usize] as usize];
        parent[x as usize] = up;
        x = up;
    }
    x
}

/// Resource totals are sums of rates kept as integers (fixed point), so they
/// never drift however often rates change: the largest capacity maps to
/// about 2^50 (a resolution of 2^-50 of it), and a feasible total, at most
/// its capacity, stays far below 2^64.
fn fixed_scale(capacity: &[f64]) -> f64 {
    let top = capacity.iter().copied().fold(0.0, f64::max);
    let exp = if top > 0.0 {
        top.log2().ceil() as i32
    } else {
        0
    };
    2f64.powi(50 - exp)
}

#[derive(Clone, Debug)]
struct Member {
    res: [u32; MAX_PATH],
    /// Position of this flow in each resource's list (O(1) removal).
    pos: [u32; MAX_PATH],
    /// Position of this flow in each resource's watch list (u32::MAX: not
    /// in it).
    wpos: [u32; MAX_PATH],
    n: u8,
    live: bool,
}

impl Default for Member {
    fn default() -> Member {
        Member {
            res: [0; MAX_PATH],
            pos: [0; MAX_PATH],
            wpos: [u32::MAX; MAX_PATH],
            n: 0,
            live: false,
        }
    }
}

impl Member {
    fn resources(&self) -> &[u32] {
        &self.res[..self.n as usize]
    }
}

/// One flow's rate and what an update keeps about it.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct FlowState {
    rate: f64,
    /// The update (stamp) in which the flow was last in the working set.
    in_set: u64,
    /// The dirty epoch in which the flow, held, was last found to have a
    /// bottleneck (0: not since it last joined W), and that bottleneck
    /// (`verified`). It stays one until that resource's load changes (a
    /// later `dirty_at`): the flow's own rate has not moved, and neither has
    /// anything on it.
    checked_at: u64,
    verified: u32,
    /// The resource the flow was last frozen at (u32::MAX: none yet).
    last_bottleneck: u32,
}

impl Default for FlowState {
    fn default() -> FlowState {
        FlowState {
            rate: 0.0,
            in_set: 0,
            checked_at: 0,
            verified: 0,
            last_bottleneck: u32::MAX,
        }
    }
}

/// Flows (identified by caller-chosen small integers) sharing resources of
/// fixed capacity, with their max-min fair rates.
#[derive(Default)]
pub struct Sharing {
    capacity: Vec<f64>,
    res_flows: Vec<Vec<u32>>,
    members: Vec<Member>,
    /// Each flow's rate and bookkeeping, apart from the members and in one
    /// 32-byte record, so that a scan of a resource's flows (ids in no
    /// particular order) touches one cache line per flow.
    flow: Vec<FlowState>,
    // What changed since the last update.
    added: Vec<u32>,
    vacated: Vec<u32>,
    // The working set and its flows' rates before the update (stamped per
    // update).
    stamp: u64,
    set: Vec<u32>,
    old_rate: Vec<f64>,
    /// Each member's current rate, by place in W (read in order, where the
    /// flows' own records are scattered).
    set_rate_now: Vec<f64>,
    // The working set's problem, grown as W grows (stamped per update): the
    // local index of each resource in it, and what the held flows put on
    // each local resource (fixed point).
    local_at: Vec<u64>,
    local_of: Vec<u32>,
    local_res: Vec<u32>,
    /// Each resource's total rate in fixed point (see [`fixed_scale`]),
    /// kept exactly as rates change, and its highest rate (recomputed when
    /// the flow that held it slows down or leaves).
    total: Vec<u64>,
    scale: f64,
    /// The total at which a resource counts as saturated, in fixed point.
    saturated_at: Vec<u64>,
    top: Vec<f64>,
    top_stale: Vec<bool>,
    held_part: Vec<u64>,
    /// Members of W already in `problem`.
    posed: usize,
    /// The connected components of W's problem (union-find over its local
    /// resources; W only grows in an update, so they only merge), the
    /// components a round must re-solve (`comp_mark` at `comp_epoch`), and
    /// that round's sub-problem: its flows (indices in W), its resources,
    /// and each local resource's index in it.
    comp_parent: Vec<u32>,
    /// Number of components of W's problem, and of members without
    /// resources (in no component).
    comp_count: usize,
    bare: usize,
    comp_mark: Vec<u64>,
    comp_epoch: u64,
    comp_sub: Vec<u32>,
    sub_flows: Vec<u32>,
    sub_res: Vec<u32>,
    sub_problem: Problem,
    /// Solve the whole of W every round (the former method): for tests.
    whole_rounds: bool,
    problem: Problem,
    solver: Solver,
    /// Flows in the problem the solver last solved whole in this update
    /// (usize::MAX: none, or it solved a sub-problem since): a whole round
    /// whose problem extends it only indexes the new members.
    whole_solved: usize,
    rates: Vec<f64>,
    bottleneck: Vec<u32>,
    /// Resources whose load changed in the last round, and the set members
    /// whose rate or bottleneck changed (or that joined) in it.
    dirty_epoch: u64,
    pulled_at: Vec<u64>,
    held_scratch: Vec<f64>,
    dirty_at: Vec<u64>,
    dirty: Vec<u32>,
    /// Each dirty resource's place in `dirty` (valid while `dirty_at` is
    /// the current epoch).
    dirty_idx: Vec<u32>,
    recheck: Vec<u32>,
    /// Per resource, the held flows step 4 must look at when its load
    /// changes: those verified at it, and those verified nowhere (in the
    /// lists of all their resources). See [`Sharing::recheck_watched`].
    watch: Vec<Vec<u32>>,
    /// Step 4's candidates of one pass: (order key, flow).
    cand: Vec<(u64, u32)>,
    /// Step 4 by scanning every flow of each dirty resource (the former
    /// method, kept as the oracle the watch lists must match exactly).
    full_scan: bool,
    /// The highest rate of a held flow on each resource, valid while
    /// `held_top_at` is this update's stamp (held flows keep their rates
    /// during an update; a join invalidates the join's resources).
    held_top_at: Vec<u64>,
    held_top: Vec<f64>,
    // Statistics.
    updates: u64,
    solved: u64,
    rounds: u64,
}

impl Sharing {
    /// Resources `0..capacity.len()` with these capacities (b/s, or any unit).
    pub fn new(capacity: Vec<f64>) -> Sharing {
        let n = capacity.len();
        let scale = fixed_scale(&capacity);
        Sharing {
            res_flows: vec![Vec::new(); n],
            local_at: vec![0; n],
            local_of: vec![0; n],
            total: vec![0; n],
            saturated_at: capacity
                .iter()
                .map(|&c| (c * (1.0 - TOLERANCE) * scale).floor() as u64)
                .collect(),
            scale,
            top: vec![0.0; n],
            top_stale: vec![false; n],
            dirty_at: vec![0; n],
            dirty_idx: vec![0; n],
            watch: vec![Vec::new(); n],
            pulled_at: vec![0; n],
            held_top_at: vec![0; n],
            held_top: vec![0.0; n],
            capacity,
            ..Sharing::default()
        }
    }

    /// The same by the former method, slower, with the same results bit for
    /// bit (for tests): step 4 scans every flow of each resource whose load
    /// changed (not the watch lists), and every round solves the whole
    /// working set from scratch (not only the components that new members
    /// joined, and not by extending the last round's index).
    pub fn former(capacity: Vec<f64>) -> Sharing {
        Sharing {
            full_scan: true,
            whole_rounds: true,
            ..Sharing::new(capacity)
        }
    }

    pub fn capacity(&self, r: u32) -> f64 {
        self.capacity[r as usize]
    }

    /// Adds flow `id` (not live) crossing `resources` (at most [`MAX_PATH`],
    /// no repeats). Its rate is 0 until the next [`update`](Self::update).
    pub fn insert(&mut self, id: u32, resources: &[u32]) {
        assert!(
            resources.len() <= MAX_PATH,
            "a flow crosses at most {MAX_PATH} resources"
        );
        let i = id as usize;
        if i >= self.members.len() {
            self.members.resize(i + 1, Member::default());
            self.flow.resize(i + 1, FlowState::default());
        }
        assert!(!self.members[i].live, "flow {id} is already sharing");
        let mut m = Member {
            n: resources.len() as u8,
            live: true,
            ..Member::default()
        };
        for (k, &r) in resources.iter().enumerate() {
            let list = &mut self.res_flows[r as usize];
            m.res[k] = r;
            m.pos[k] = list.len() as u32;
            list.push(id);
        }
        self.members[i] = m;
        self.flow[i].rate = 0.0;
        self.flow[i].last_bottleneck = u32::MAX;
        self.flow[i].checked_at = 0;
        self.added.push(id);
    }

    /// Removes live flow `id`; the flows it shared with are re-balanced at
    /// the next [`update`](Self::update).
    pub fn remove(&mut self, id: u32) {
        assert!(self.is_live(id), "flow {id} is not sharing");
        self.set_rate(id, 0.0);
        self.unwatch(id);
        let m = std::mem::take(&mut self.members[id as usize]);
        for k in 0..m.n as usize {
            let r = m.res[k];
            let list = &mut self.res_flows[r as usize];
            let p = m.pos[k] as usize;
            list.swap_remove(p);
            if let Some(&moved) = list.get(p) {
                let mm = &mut self.members[moved as usize];
                for j in 0..mm.n as usize {
                    if mm.res[j] == r {
                        mm.pos[j] = p as u32;
                    }
                }
            }
            self.vacated.push(r);
        }
    }

    pub fn rate(&self, id: u32) -> f64 {
        self.flow[id as usize].rate
    }

    pub fn is_live(&self, id: u32) -> bool {
        self.members.get(id as usize).is_some_and(|m| m.live)
    }

    /// Whether flows were added or removed since the last update.
    pub fn pending(&self) -> bool {
        !self.added.is_empty() || !self.vacated.is_empty()
    }

    /// Number of live flows.
    pub fn live(&self) -> usize {
        self.members.iter().filter(|m| m.live).count()
    }

    /// (updates, flows re-solved, solve rounds) so far.
    pub fn counters(&self) -> (u64, u64, u64) {
        (self.updates, self.solved, self.rounds)
    }

    /// Re-balances after the inserts and removals since the last update and
    /// appends to `changed` every live flow whose rate changed (in a
    /// deterministic order).
    pub fn update(&mut self, changed: &mut Vec<u32>) {
        if !self.pending() {
            return;
        }
        self.updates += 1;
        self.stamp += 1;
        self.set.clear();
        self.old_rate.clear();
        self.set_rate_now.clear();
        self.comp_count = 0;
        self.bare = 0;
        self.problem.clear();
        self.local_res.clear();
        self.held_part.clear();
        self.comp_parent.clear();
        self.comp_mark.clear();
        self.posed = 0;
        self.whole_solved = usize::MAX;
        self.dirty_epoch += 1;
        self.dirty.clear();
        let added = std::mem::take(&mut self.added);
        for &id in &added {
            if self.members[id as usize].live && self.flow[id as usize].in_set != self.stamp {
                self.join(id);
            }
        }
        self.added = added;
        self.added.clear();
        let vacated = std::mem::take(&mut self.vacated);
        for &r in &vacated {
            self.mark_dirty(r);
        }
        self.vacated = vacated;
        self.vacated.clear();
        let mut solved = 0;
        loop {
            let before = self.set.len();
            self.recheck.clear();
            if before > 0 {
                self.solve_set(solved);
                solved = before;
            }
            // 3: a flow of W yields to no held flow on its bottleneck.
            for k in 0..self.recheck.len() {
                let i = self.recheck[k] as usize;
                let b = self.bottleneck[i];
                if b == u32::MAX || self.pulled_at[b as usize] == self.dirty_epoch {
                    continue;
                }
                let mine = self.flow[self.set[i] as usize].rate;
                if self.held_top_of(b) > mine * (1.0 + TOLERANCE) {
                    self.pulled_at[b as usize] = self.dirty_epoch;
                    self.pull_above_level(b);
                }
            }
            // 4: held flows on a resource whose load changed keep a bottleneck.
            if !self.full_scan {
                self.recheck_watched();
            }
            let dirty = std::mem::take(&mut self.dirty);
            let scan: &[u32] = if self.full_scan { &dirty } else { &[] };
            for &r in scan {
                for j in 0..self.res_flows[r as usize].len() {
                    let g = self.res_flows[r as usize][j];
                    let gu = g as usize;
                    if self.flow[gu].in_set == self.stamp {
                        continue;
                    }
                    let c = self.flow[gu].checked_at;
                    if c != 0 && self.dirty_at[self.flow[gu].verified as usize] <= c {
                        continue;
                    }
                    match self.bottleneck_of(g) {
                        Some(v) => {
                            self.flow[gu].checked_at = self.dirty_epoch;
                            self.flow[gu].verified = v;
                        }
                        None => self.join(g),
                    }
                }
            }
            self.dirty = dirty;
            self.dirty.clear();
            self.dirty_epoch += 1;
            if self.set.len() == before {
                break;
            }
        }
        for (i, &id) in self.set.iter().enumerate() {
            // Each member's bottleneck in the last round that solved it.
            self.flow[id as usize].last_bottleneck = self.bottleneck[i];
            if self.set_rate_now[i] != self.old_rate[i] {
                changed.push(id);
            }
        }
        if !self.full_scan {
            self.verify_set();
        }
    }

    /// Step 4 from the watch lists, with the decisions and the order of the
    /// joins of a scan of every flow of each dirty resource (in `dirty`
    /// order). That scan looks at a held flow when it was verified nowhere
    /// (`checked_at` 0) or its verified bottleneck is dirty now (a resource
    /// dirtied earlier was scanned in its own epoch, which re-verified or
    /// pulled in every flow verified at it), and it does so at the first
    /// dirty resource of the flow in `dirty` order, at the flow's place in
    /// that resource's list; later encounters in the same pass skip it
    /// (verified now, or in W). Those flows are exactly the held flows in
    /// the watch lists of the dirty resources, and checks in one pass do
    /// not depend on each other (no rate moves in step 4), so checking them
    /// once each, sorted by (place of that resource in `dirty`, place in
    /// its list), decides and joins the same flows in the same order.
    fn recheck_watched(&mut self) {
        let epoch = self.dirty_epoch;
        let mut cand = std::mem::take(&mut self.cand);
        cand.clear();
        for &r in &self.dirty {
            for &g in &self.watch[r as usize] {
                let f = &self.flow[g as usize];
                if f.in_set == self.stamp
                    || (f.checked_at != 0 && self.dirty_at[f.verified as usize] <= f.checked_at)
                {
                    continue;
                }
                let m = &self.members[g as usize];
                let mut key = u64::MAX;
                for k in 0..m.n as usize {
                    let ru = m.res[k] as usize;
                    if self.dirty_at[ru] == epoch {
                        key = key.min((u64::from(self.dirty_idx[ru]) << 32) | u64::from(m.pos[k]));
                    }
                }
                cand.push((key, g));
            }
        }
        cand.sort_unstable();
        cand.dedup_by_key(|c| c.0);
        for &(_, g) in &cand {
            match self.bottleneck_of(g) {
                Some(v) => {
                    self.flow[g as usize].checked_at = epoch;
                    self.flow[g as usize].verified = v;
                    self.watch_one(g, v);
                }
                None => self.join(g),
            }
        }
        self.cand = cand;
    }

    /// After an update: each flow of W whose last bottleneck is one (it
    /// usually is) counts as verified there now, and is watched there only;
    /// the others are watched at all their resources. A flow verified at
    /// `b` would be found to have `b` as its bottleneck (tried first) by
    /// every step-4 check until `b`'s load changes, since neither its rate
    /// nor anything on `b` moves meanwhile, so skipping those checks changes
    /// no decision.
    fn verify_set(&mut self) {
        let epoch = self.dirty_epoch;
        for i in 0..self.set.len() {
            let id = self.set[i];
            let iu = id as usize;
            if !self.members[iu].live {
                continue;
            }
            let b = self.flow[iu].last_bottleneck;
            if b != u32::MAX && self.is_bottleneck_of(b, self.flow[iu].rate) {
                self.flow[iu].checked_at = epoch;
                self.flow[iu].verified = b;
                self.watch_one(id, b);
            } else {
                self.flow[iu].checked_at = 0;
                self.watch_all(id);
            }
        }
    }

    /// Takes flow `id` out of the watch list of its `k`-th resource.
    fn unwatch_at(&mut self, id: u32, k: usize) {
        let m = &mut self.members[id as usize];
        let p = m.wpos[k];
        if p == u32::MAX {
            return;
        }
        m.wpos[k] = u32::MAX;
        let r = m.res[k];
        let list = &mut self.watch[r as usize];
        list.swap_remove(p as usize);
        if let Some(&moved) = list.get(p as usize) {
            let mm = &mut self.members[moved as usize];
            for j in 0..mm.n as usize {
                if mm.res[j] == r {
                    mm.wpos[j] = p;
                }
            }
        }
    }

    fn watch_at(&mut self, id: u32, k: usize) {
        let m = &mut self.members[id as usize];
        if m.wpos[k] == u32::MAX {
            let list = &mut self.watch[m.res[k] as usize];
            m.wpos[k] = list.len() as u32;
            list.push(id);
        }
    }

    fn unwatch(&mut self, id: u32) {
        for k in 0..self.members[id as usize].n as usize {
            self.unwatch_at(id, k);
        }
    }

    fn watch_all(&mut self, id: u32) {
        for k in 0..self.members[id as usize].n as usize {
            self.watch_at(id, k);
        }
    }

    /// Watches flow `id` at resource `v` (one of its own) only.
    fn watch_one(&mut self, id: u32, v: u32) {
        for k in 0..self.members[id as usize].n as usize {
            if self.members[id as usize].res[k] == v {
                self.watch_at(id, k);
            } else {
                self.unwatch_at(id, k);
            }
        }
    }

    /// Pulls into W the held flows on `b` above the level they would share
    /// `b` at if it were their only constraint (W's flows there taking that
    /// level too): those must give way, and the rest need not on `b`'s
    /// account. At least one flow is pulled when a held flow on `b` runs
    /// faster than a flow of W bottlenecked there (that flow runs at least
    /// at the mean of W's flows on `b`, which is at least the level).
    fn pull_above_level(&mut self, b: u32) {
        let bu = b as usize;
        let mut held = std::mem::take(&mut self.held_scratch);
        held.clear();
        let mut in_w = 0usize;
        for &g in &self.res_flows[bu] {
            if self.flow[g as usize].in_set == self.stamp {
                in_w += 1;
            } else {
                held.push(self.flow[g as usize].rate);
            }
        }
        held.sort_unstable_by(f64::total_cmp);
        // Water-fill b alone: held flows below the level keep their rates.
        let (mut left, mut sharing) = (self.capacity[bu], in_w + held.len());
        for &x in &held {
            if x * sharing as f64 <= left {
                left -= x;
                sharing -= 1;
            } else {
                break;
            }
        }
        let level = left / sharing.max(1) as f64;
        self.held_scratch = held;
        for j in 0..self.res_flows[bu].len() {
            let g = self.res_flows[bu][j];
            if self.flow[g as usize].in_set != self.stamp
                && self.flow[g as usize].rate > level * (1.0 + TOLERANCE)
            {
                self.join(g);
            }
        }
    }

    fn mark_dirty(&mut self, r: u32) {
        if self.dirty_at[r as usize] != self.dirty_epoch {
            self.dirty_at[r as usize] = self.dirty_epoch;
            self.dirty_idx[r as usize] = self.dirty.len() as u32;
            self.dirty.push(r);
        }
    }

    fn join(&mut self, id: u32) {
        self.flow[id as usize].in_set = self.stamp;
        self.flow[id as usize].checked_at = 0;
        self.set.push(id);
        self.old_rate.push(self.flow[id as usize].rate);
        self.set_rate_now.push(self.flow[id as usize].rate);
        let m = &self.members[id as usize];
        for &r in &m.res[..m.n as usize] {
            self.held_top_at[r as usize] = 0;
        }
    }

    /// The highest rate of a held flow on `r` (0 if none).
    fn held_top_of(&mut self, r: u32) -> f64 {
        let ru = r as usize;
        if self.held_top_at[ru] != self.stamp {
            self.held_top_at[ru] = self.stamp;
            self.held_top[ru] = self.res_flows[ru]
                .iter()
                .filter(|&&g| self.flow[g as usize].in_set != self.stamp)
                .map(|&g| self.flow[g as usize].rate)
                .fold(0.0, f64::max);
        }
        self.held_top[ru]
    }

    fn fixed(&self, x: f64) -> u64 {
        // Rates are never negative: adding a half and truncating rounds.
        (x * self.scale + 0.5) as u64
    }

    /// Sets a flow's rate, keeping its resources' totals and highest rates.
    fn set_rate(&mut self, id: u32, x: f64) {
        let old = self.flow[id as usize].rate;
        self.flow[id as usize].rate = x;
        let (fo, fx) = (self.fixed(old), self.fixed(x));
        let m = &self.members[id as usize];
        for &r in &m.res[..m.n as usize] {
            let ru = r as usize;
            self.total[ru] = self.total[ru] - fo + fx;
            if x >= self.top[ru] {
                self.top[ru] = x;
            } else if old >= self.top[ru] {
                self.top_stale[ru] = true;
            }
        }
    }

    /// The highest rate on `r`.
    fn top_of(&mut self, r: u32) -> f64 {
        let ru = r as usize;
        if self.top_stale[ru] {
            self.top_stale[ru] = false;
            self.top[ru] = self.res_flows[ru]
                .iter()
                .map(|&g| self.flow[g as usize].rate)
                .fold(0.0, f64::max);
        }
        self.top[ru]
    }

    fn is_bottleneck_of(&mut self, r: u32, x: f64) -> bool {
        self.total[r as usize] >= self.saturated_at[r as usize]
            && x * (1.0 + TOLERANCE) >= self.top_of(r)
    }

    /// A bottleneck of flow `id`, if it has one: the one it was last frozen
    /// at first (usually still it), then the others.
    fn bottleneck_of(&mut self, id: u32) -> Option<u32> {
        let x = self.flow[id as usize].rate;
        let last = self.flow[id as usize].last_bottleneck;
        if last != u32::MAX && self.is_bottleneck_of(last, x) {
            return Some(last);
        }
        let m = &self.members[id as usize];
        let (res, n) = (m.res, m.n as usize);
        res[..n]
            .iter()
            .copied()
            .find(|&r| r != last && self.is_bottleneck_of(r, x))
    }

    /// Progressive filling of the working set on residual capacities. Marks
    /// the resources whose load changed, and lists in `recheck` the members
    /// whose rate or bottleneck changed or that joined after member `solved`.
    fn solve_set(&mut self, solved: usize) {
        self.rounds += 1;
        self.solved += self.set.len() as u64;
        // Pose the members that joined since the last round. A member's rate
        // has not moved before it is first solved, and held flows keep
        // theirs, so what the held flows put on a resource is its total when
        // first posed less the posed members' rates then.
        let mut local = [0u32; MAX_PATH];
        let first_new = self.posed;
        for i in self.posed..self.set.len() {
            let id = self.set[i] as usize;
            let (res, n) = (self.members[id].res, self.members[id].n as usize);
            let mine = self.fixed(self.flow[id].rate);
            for (l, &r) in local.iter_mut().zip(&res[..n]) {
                let ru = r as usize;
                if self.local_at[ru] != self.stamp {
                    self.local_at[ru] = self.stamp;
                    self.local_of[ru] = self.local_res.len() as u32;
                    self.local_res.push(r);
                    self.held_part.push(self.total[ru]);
                    self.comp_parent.push(self.local_of[ru]);
                    self.comp_mark.push(0);
                    self.comp_count += 1;
                }
                *l = self.local_of[ru];
                self.held_part[*l as usize] -= mine;
            }
            for &l in &local[1..n.max(1)] {
                let (a, b) = (
                    find(&mut self.comp_parent, local[0]),
                    find(&mut self.comp_parent, l),
                );
                // The lower index as root: deterministic, and no rank needed
                // for the path halving in `find` to keep trees shallow here.
                if a != b {
                    self.comp_parent[a.max(b) as usize] = a.min(b);
                    self.comp_count -= 1;
                }
            }
            if n == 0 {
                self.bare += 1;
            }
            self.problem.add_flow(&local[..n]);
        }
        self.posed = self.set.len();
        // Residual capacity: what the held flows leave. It moves only on
        // the resources of the members posed now.
        let known = self.problem.capacity.len();
        for l in known..self.local_res.len() {
            let c = self.residual(l);
            self.problem.capacity.push(c);
        }
        let (from, to) = (
            self.problem.flow_start[first_new] as usize,
            self.problem.flow_start[self.set.len()] as usize,
        );
        for j in from..to {
            let l = self.problem.flow_res[j] as usize;
            if l < known {
                self.problem.capacity[l] = self.residual(l);
            }
        }
        // Only the components of W's problem that the new members joined
        // can change: any other is the same problem as in the last round
        // (same flows, and no held flow left its resources), and progressive
        // filling solves each component as it would alone, bit for bit (see
        // `maxmin`'s tests), so its rates and bottlenecks stand.
        // With W's problem in one component (and every member crossing a
        // resource), the new members joined it: the whole problem.
        self.comp_epoch += 1;
        let mut whole =
            solved == 0 || self.whole_rounds || (self.comp_count == 1 && self.bare == 0);
        if !whole {
            for i in solved..self.set.len() {
                if let Some(&l) = self.problem.resources_of(i).first() {
                    let root = find(&mut self.comp_parent, l);
                    self.comp_mark[root as usize] = self.comp_epoch;
                }
            }
            self.sub_flows.clear();
            for i in 0..self.set.len() {
                let affected = match self.problem.resources_of(i).first() {
                    Some(&l) => {
                        let root = find(&mut self.comp_parent, l);
                        self.comp_mark[root as usize] == self.comp_epoch
                    }
                    None => i >= solved,
                };
                if affected {
                    self.sub_flows.push(i as u32);
                }
            }
            whole = self.sub_flows.len() == self.set.len();
        }
        if whole {
            if solved > 0 && self.whole_solved == solved && !self.whole_rounds {
                self.solver
                    .solve_extending(&self.problem, solved, &mut self.rates);
            } else {
                self.solver.solve(&self.problem, &mut self.rates);
            }
            self.whole_solved = self.set.len();
            self.sub_flows.clear();
            self.sub_flows.extend(0..self.set.len() as u32);
            self.sub_res.clear();
            self.sub_res.extend_from_slice(&self.local_res);
        } else {
            // The sub-problem keeps the relative order of resources (ties
            // are broken by index) and of flows.
            let mut sub = std::mem::take(&mut self.sub_problem);
            sub.clear();
            self.sub_res.clear();
            self.comp_sub.resize(self.local_res.len(), 0);
            for l in 0..self.local_res.len() {
                let root = find(&mut self.comp_parent, l as u32);
                if self.comp_mark[root as usize] == self.comp_epoch {
                    self.comp_sub[l] = self.sub_res.len() as u32;
                    self.sub_res.push(self.local_res[l]);
                    sub.capacity.push(self.problem.capacity[l]);
                }
            }
            for &i in &self.sub_flows {
                for (l, &r) in local.iter_mut().zip(self.problem.resources_of(i as usize)) {
                    *l = self.comp_sub[r as usize];
                }
                let n = self.problem.resources_of(i as usize).len();
                sub.add_flow(&local[..n]);
            }
            self.solver.solve(&sub, &mut self.rates);
            self.whole_solved = usize::MAX;
            self.sub_problem = sub;
        }
        self.bottleneck.resize(self.set.len(), u32::MAX);
        for k in 0..self.sub_flows.len() {
            let i = self.sub_flows[k] as usize;
            let id = self.set[i] as usize;
            let b = match self.solver.bottlenecks()[k] {
                u32::MAX => u32::MAX,
                b => self.sub_res[b as usize],
            };
            let x = self.rates[k];
            if x != self.set_rate_now[i] {
                self.set_rate_now[i] = x;
                self.set_rate(id as u32, x);
                let (res, n) = (self.members[id].res, self.members[id].n as usize);
                for &r in &res[..n] {
                    self.mark_dirty(r);
                }
                self.recheck.push(i as u32);
            } else if i >= solved || b != self.bottleneck[i] {
                self.recheck.push(i as u32);
            }
            self.bottleneck[i] = b;
        }
    }

    /// Capacity of local resource `l` less what the held flows put on it.
    fn residual(&self, l: usize) -> f64 {
        let held = self.held_part[l] as f64 / self.scale;
        (self.capacity[self.local_res[l] as usize] - held).max(0.0)
    }

    /// The whole allocation as one problem (live flows in id order) and the
    /// current rates: for checks and tests.
    pub fn snapshot(&self) -> (Problem, Vec<u32>, Vec<f64>) {
        let mut p = Problem::new(self.capacity.clone());
        let (mut ids, mut rates) = (Vec::new(), Vec::new());
        for (i, m) in self.members.iter().enumerate() {
            if m.live {
                p.add_flow(m.resources());
                ids.push(i as u32);
                rates.push(self.flow[i].rate);
            }
        }
        (p, ids, rates)
    }
}

#[cfg(test)]
mod tests;

//! The cells held at nodes and on the wire.
//!
//! [`Queues`]: per (node, neighbour) pair, the second-hop queue (cells at
//! node i whose destination is d) and the first-hop virtual queue (cells of
//! node s granted to go via x), the occupancy m of Fig. 15 that bounds the
//! second-hop queues, and running totals so that "anything queued?" is O(1).
//! [`Wire`]: the cells sent and not yet arrived, by arrival slot.
//!
//! Cells are pooled ([`crate::pool`]) and linked into these queues by index;
//! the pool is the fabric's and is passed in.

use super::stats::HopPeaks;
use super::Cell;
use crate::pool::{List, Pool};

/// Link i → x's two queues and its turn, together: a slot's send on the
/// link reads them all with one index.
#[derive(Clone, Copy)]
struct Link {
    /// Cells at node i whose destination is x (second hop).
    fwd: List,
    /// Cells of node i granted to go via x (first hop).
    vq: List,
    /// When both a second-hop and a first-hop cell wait, send the
    /// first-hop one next.
    prefer_first_hop: bool,
}

pub(super) struct Queues {
    n: usize,
    /// `links[i·N + x]`: link i → x's queues.
    links: Vec<Link>,
    /// `occ[i·N + d]`: m of Fig. 15 — cells at i for d plus cells granted (or,
    /// ideal, sent) towards i for d that have not arrived yet.
    occ: Vec<u32>,
    /// With Q per (source, destination) (`queue_bound_scope`):
    /// `occ_src[(i·N + s)·N + d]`, the part of m at i for d that source s's
    /// cells make up; empty otherwise.
    occ_src: Vec<u32>,
    /// `busy[i·W + x/64]` bit `x % 64`: node i holds a cell (`fwd` or `vq`)
    /// whose next node is x, so a slot visits only the links with cells.
    busy: Vec<u64>,
    /// `full[s·W + x/64]` bit `x % 64`: node s's virtual queue for x holds
    /// two or more cells, so request/grant asks x for nothing this epoch
    /// (`RequestGrant::draw_requests` reads the complement word by word).
    full: Vec<u64>,
    words: usize,
    /// Cells queued at each node (`fwd` and `vq`), and their sum.
    node_queued: Vec<u32>,
    queued_total: u64,
    pub peak_node_queue_cells: u32,
    pub peak_dest_queue_cells: u32,
    pub cells_forwarded: u64,
    /// Fig. 10c's per-hop peaks (stats.rs).
    pub hops: HopPeaks,
}

impl Queues {
    /// `per_source`: Q bounds each (source, destination) pair's cells at an
    /// intermediate instead of all its cells for the destination.
    pub fn new(n: usize, per_source: bool) -> Queues {
        Queues {
            n,
            links: vec![
                Link {
                    fwd: List::EMPTY,
                    vq: List::EMPTY,
                    prefer_first_hop: false,
                };
                n * n
            ],
            occ: vec![0; n * n],
            occ_src: if per_source {
                vec![0; n * n * n]
            } else {
                Vec::new()
            },
            busy: vec![0; n * n.div_ceil(64)],
            full: vec![0; n * n.div_ceil(64)],
            words: n.div_ceil(64),
            node_queued: vec![0; n],
            queued_total: 0,
            peak_node_queue_cells: 0,
            peak_dest_queue_cells: 0,
            cells_forwarded: 0,
            hops: HopPeaks::new(n),
        }
    }

    /// Cells queued at every node.
    #[inline]
    pub fn total(&self) -> u64 {
        self.queued_total
    }

    /// Cells queued at node `i`.
    #[inline]
    pub fn at_node(&self, i: usize) -> u32 {
        self.node_queued[i]
    }

    /// m at node `i` for destination `d`.
    #[inline]
    pub fn occ(&self, i: usize, d: usize) -> u32 {
        self.occ[i * self.n + d]
    }

    /// m at node `i` for every destination (what `compute_grants` updates).
    pub fn occ_row(&mut self, i: usize) -> &mut [u32] {
        &mut self.occ[i * self.n..(i + 1) * self.n]
    }

    /// Does Q bound (source, destination) pairs?
    #[inline]
    pub fn per_source(&self) -> bool {
        !self.occ_src.is_empty()
    }

    /// Q per (source, destination): grants `s` a cell for `d` via `i` if the
    /// pair has fewer than `q` there (m at i for d counts it too).
    pub fn try_grant_src(&mut self, i: usize, s: usize, d: usize, q: u32) -> bool {
        let k = (i * self.n + s) * self.n + d;
        if self.occ_src[k] >= q {
            return false;
        }
        self.occ_src[k] += 1;
        self.occ[i * self.n + d] += 1;
        true
    }

    /// Q per (source, destination): a cell of `s` for `d` left `i`'s count
    /// (no-op otherwise; m at i for d is released by the caller's path).
    #[inline]
    pub fn release_src(&mut self, i: usize, s: usize, d: usize) {
        if !self.occ_src.is_empty() {
            self.occ_src[(i * self.n + s) * self.n + d] -= 1;
        }
    }

    /// A cell is on its way to `i` for `d` (SIRIUS (IDEAL)'s first hop).
    #[inline]
    pub fn reserve(&mut self, i: usize, d: usize) {
        self.occ[i * self.n + d] += 1;
    }

    /// A reservation at `i` for `d` ends without a cell (a cell granted
    /// direct arrived, or its flow's end failed).
    #[inline]
    pub fn release(&mut self, i: usize, d: usize) {
        self.occ[i * self.n + d] -= 1;
    }

    /// Cells of node `s` granted via `x` and not yet sent.
    #[inline]
    pub fn granted_via(&self, s: usize, x: usize) -> usize {
        self.links[s * self.n + x].vq.len()
    }

    /// Cells at `i` (second hop) and granted at `i` (first hop) whose next
    /// node is `x`.
    pub fn held_for(&self, i: usize, x: usize) -> usize {
        let l = &self.links[i * self.n + x];
        l.fwd.len() + l.vq.len()
    }

    /// Words per node of the busy-link bitset.
    #[inline]
    pub fn words(&self) -> usize {
        self.words
    }

    /// Word `w` of node `i`'s busy links: bit b set iff `i` holds a cell
    /// whose next node is `64·w + b`.
    #[inline]
    pub fn busy_word(&self, i: usize, w: usize) -> u64 {
        self.busy[i * self.words + w]
    }

    /// Word `w` of node `s`'s full virtual queues: bit b set iff `s` holds
    /// two or more cells granted via `64·w + b` (`granted_via(s, x) >= 2`).
    #[inline]
    pub fn full_word(&self, s: usize, w: usize) -> u64 {
        self.full[s * self.words + w]
    }

    /// Sets link s → x's full bit to `full` (its virtual queue holds two
    /// or more cells).
    #[inline]
    fn set_full(&mut self, s: usize, x: usize, full: bool) {
        let bit = 1 << (x % 64);
        let w = &mut self.full[s * self.words + x / 64];
        if full {
            *w |= bit;
        } else {
            *w &= !bit;
        }
    }

    #[inline]
    fn mark_busy(&mut self, i: usize, x: usize) {
        self.busy[i * self.words + x / 64] |= 1 << (x % 64);
    }

    /// Clears link i → x's busy bit once both its queues are empty.
    #[inline]
    fn unmark_if_idle(&mut self, i: usize, x: usize) {
        let link = i * self.n + x;
        let l = &self.links[link];
        if l.fwd.is_empty() && l.vq.is_empty() {
            self.busy[i * self.words + x / 64] &= !(1 << (x % 64));
        }
    }

    /// A cell reached intermediate `node` for `dst` (m is unchanged: it
    /// moves from "on its way" to "queued").
    pub fn enqueue_fwd(&mut self, pool: &mut Pool<Cell>, node: usize, dst: usize, cell: u32) {
        let q = &mut self.links[node * self.n + dst].fwd;
        pool.push_back(q, cell);
        self.peak_dest_queue_cells = self.peak_dest_queue_cells.max(q.len() as u32);
        self.bump_node(node);
        self.hops.second_hop_in(node);
        self.mark_busy(node, dst);
    }

    /// A cell of `node` was granted via `via`.
    pub fn enqueue_vq(&mut self, pool: &mut Pool<Cell>, node: usize, via: usize, cell: u32) {
        let q = &mut self.links[node * self.n + via].vq;
        pool.push_back(q, cell);
        // The bit changes only when the queue reaches two cells.
        let reached_two = q.len() == 2;
        self.bump_node(node);
        self.hops.first_hop_in(node, self.node_queued[node]);
        self.mark_busy(node, via);
        if reached_two {
            self.set_full(node, via, true);
        }
    }

    fn bump_node(&mut self, node: usize) {
        self.node_queued[node] += 1;
        self.queued_total += 1;
        self.peak_node_queue_cells = self.peak_node_queue_cells.max(self.node_queued[node]);
    }

    /// `cells` cells left node `node`'s queues.
    fn unqueue(&mut self, node: usize, cells: u32) {
        self.node_queued[node] -= cells;
        self.queued_total -= cells as u64;
    }

    /// Whether link s → x has a second-hop cell waiting.
    #[inline]
    pub fn has_second_hop(&self, s: usize, x: usize) -> bool {
        !self.links[s * self.n + x].fwd.is_empty()
    }

    /// Whether link s → x has a granted first-hop cell waiting.
    #[inline]
    pub fn has_first_hop(&self, s: usize, x: usize) -> bool {
        !self.links[s * self.n + x].vq.is_empty()
    }

    /// Both hops wait on link s → x: whether the first hop goes this time
    /// (the link alternates between them).
    #[inline]
    pub fn first_hop_turn(&mut self, s: usize, x: usize) -> bool {
        let p = &mut self.links[s * self.n + x].prefer_first_hop;
        *p = !*p;
        !*p
    }

    /// Request/grant's cell for link s → x this slot, if one waits: a
    /// second-hop cell or a granted first-hop one, alternating when both
    /// wait (as `has_second_hop`, `has_first_hop`, `first_hop_turn` and the
    /// pops would decide, with one look at the link). Returns the cell and
    /// whether it is on its first hop.
    #[inline(always)]
    pub fn take_for_link(
        &mut self,
        pool: &mut Pool<Cell>,
        s: usize,
        x: usize,
    ) -> Option<(u32, bool)> {
        let link = s * self.n + x;
        let l = &mut self.links[link];
        let use_first = match (!l.fwd.is_empty(), !l.vq.is_empty()) {
            (false, false) => return None,
            (true, false) => false,
            (false, true) => true,
            (true, true) => {
                l.prefer_first_hop = !l.prefer_first_hop;
                !l.prefer_first_hop
            }
        };
        let q = if use_first { &mut l.vq } else { &mut l.fwd };
        let c = pool.pop_front(q).expect("non-empty");
        let left_one = use_first && l.vq.len() == 1;
        let idle = l.fwd.is_empty() && l.vq.is_empty();
        self.unqueue(s, 1);
        if !use_first {
            self.hops.second_hop_out(s, 1);
            self.occ[link] -= 1;
            self.cells_forwarded += 1;
        }
        if idle {
            self.busy[s * self.words + x / 64] &= !(1 << (x % 64));
        }
        if left_one {
            self.set_full(s, x, false);
        }
        Some((c, use_first))
    }

    /// Takes the front of link s → x's virtual queue, if any.
    #[inline(always)]
    pub fn pop_first_hop(&mut self, pool: &mut Pool<Cell>, s: usize, x: usize) -> Option<u32> {
        let q = &mut self.links[s * self.n + x].vq;
        let c = pool.pop_front(q)?;
        // The bit changes only when the queue falls below two cells.
        let left_one = q.len() == 1;
        self.unqueue(s, 1);
        self.unmark_if_idle(s, x);
        if left_one {
            self.set_full(s, x, false);
        }
        Some(c)
    }

    /// Takes the front of link s → x's second-hop queue (non-empty).
    #[inline]
    pub fn pop_second_hop(&mut self, pool: &mut Pool<Cell>, s: usize, x: usize) -> u32 {
        let link = s * self.n + x;
        let c = pool
            .pop_front(&mut self.links[link].fwd)
            .expect("non-empty");
        self.unqueue(s, 1);
        self.hops.second_hop_out(s, 1);
        self.occ[link] -= 1;
        self.cells_forwarded += 1;
        self.unmark_if_idle(s, x);
        c
    }

    /// A node failed: takes node `i`'s cells for link i → `j` of one hop
    /// (first hop: granted to go via j; second hop: destined to j) that
    /// `take` picks into `out`; the rest stay, frozen.
    pub fn drain(
        &mut self,
        pool: &mut Pool<Cell>,
        first_hop: bool,
        i: usize,
        j: usize,
        mut take: impl FnMut(&Cell) -> bool,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        let l = &mut self.links[i * self.n + j];
        let q = if first_hop { &mut l.vq } else { &mut l.fwd };
        let mut keep = List::EMPTY;
        while let Some(c) = pool.pop_front(q) {
            if take(&pool[c]) {
                out.push(c);
            } else {
                pool.push_back(&mut keep, c);
            }
        }
        *q = keep;
        self.unqueue(i, out.len() as u32);
        if !first_hop {
            self.hops.second_hop_out(i, out.len() as u32);
        }
        self.unmark_if_idle(i, j);
        if first_hop {
            let full = self.links[i * self.n + j].vq.len() >= 2;
            self.set_full(i, j, full);
        }
    }

    /// Second-hop cells at `i` for `d`.
    pub fn fwd_len(&self, i: usize, d: usize) -> usize {
        self.links[i * self.n + d].fwd.len()
    }

    /// The running totals against the queues, and every second-hop queue
    /// against m and Q.
    pub fn check(&self, q: u32) -> Result<(), String> {
        let n = self.n;
        let queued: u64 = self.node_queued.iter().map(|&x| x as u64).sum();
        if queued != self.queued_total {
            return Err(format!(
                "sirius: nodes hold {queued} queued cells but the running total says {}",
                self.queued_total
            ));
        }
        for i in 0..n {
            let in_queues: usize = (0..n).map(|x| self.held_for(i, x)).sum();
            for x in 0..n {
                let bit = self.busy_word(i, x / 64) >> (x % 64) & 1 == 1;
                if bit != (self.held_for(i, x) > 0) {
                    return Err(format!(
                        "sirius: link {i} -> {x} holds {} cells but its busy bit is {bit}",
                        self.held_for(i, x)
                    ));
                }
                let full = self.full_word(i, x / 64) >> (x % 64) & 1 == 1;
                if full != (self.granted_via(i, x) >= 2) {
                    return Err(format!(
                        "sirius: node {i} has {} cells granted via {x} but its full bit is {full}",
                        self.granted_via(i, x)
                    ));
                }
            }
            if in_queues != self.node_queued[i] as usize {
                return Err(format!(
                    "sirius: node {i} has {in_queues} cells in its queues but counts {}",
                    self.node_queued[i]
                ));
            }
            for d in 0..n {
                let (len, m) = (self.links[i * n + d].fwd.len() as u32, self.occ[i * n + d]);
                if self.per_source() {
                    // Each pair is bounded by Q, and the pairs make up m.
                    let pairs = (0..n).map(|s| self.occ_src[(i * n + s) * n + d]);
                    if let Some(s) = (0..n).find(|&s| self.occ_src[(i * n + s) * n + d] > q) {
                        return Err(format!(
                            "sirius: node {i} holds {} cells of {s} for {d}, above Q = {q}",
                            self.occ_src[(i * n + s) * n + d]
                        ));
                    }
                    let sum: u32 = pairs.sum();
                    if sum != m || len > m {
                        return Err(format!(
                            "sirius: node {i} holds {len} cells for {d}, m = {m}, pairs sum to {sum}"
                        ));
                    }
                    continue;
                }
                if len > q || m > q {
                    return Err(format!(
                        "sirius: node {i} holds {len} cells (m = {m}) for {d}, above Q = {q}"
                    ));
                }
                if len > m {
                    return Err(format!(
                        "sirius: node {i} holds {len} cells for {d} but m = {m}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Test-only: loses one second-hop cell without counting it anywhere
    /// (the running totals stay consistent, so only conservation can notice).
    #[cfg(test)]
    pub fn leak_one(&mut self, pool: &mut Pool<Cell>) -> bool {
        for i in 0..self.links.len() {
            if let Some(c) = pool.pop_front(&mut self.links[i].fwd) {
                pool.release(c);
                self.occ[i] -= 1;
                self.unqueue(i / self.n, 1);
                self.hops.second_hop_out(i / self.n, 1);
                self.unmark_if_idle(i / self.n, i % self.n);
                return true;
            }
        }
        false
    }
}

/// Cells on the wire, by arrival slot (a ring indexed by slot mod its
/// length, `1 + propagation` slots plus one).
pub(super) struct Wire {
    /// (next node, cell, sent by its source, i.e. on its first hop).
    ring: Vec<Vec<(u32, u32, bool)>>,
    cells: u64,
    pub cells_sent: u64,
}

impl Wire {
    pub fn new(prop_slots: u64) -> Wire {
        Wire {
            ring: vec![Vec::new(); prop_slots as usize + 2],
            cells: 0,
            cells_sent: 0,
        }
    }

    /// Cells on the wire (running total).
    #[inline]
    pub fn cells(&self) -> u64 {
        self.cells
    }

    /// The ring index of cells sent in slot `t` with `prop_slots` of
    /// propagation.
    #[inline]
    pub fn arrival_index(&self, t: u64, prop_slots: u64) -> usize {
        ((t + 1 + prop_slots) % self.ring.len() as u64) as usize
    }

    #[inline]
    pub fn send(&mut self, at: usize, to: u32, cell: u32, first_hop: bool) {
        self.cells_sent += 1;
        self.ring[at].push((to, cell, first_hop));
        self.cells += 1;
    }

    /// Takes the cells arriving in slot `t`; give the batch back with
    /// [`Wire::done`].
    #[inline]
    pub fn arrivals(&mut self, t: u64) -> Vec<(u32, u32, bool)> {
        let len = self.ring.len() as u64;
        let batch = std::mem::take(&mut self.ring[(t % len) as usize]);
        self.cells -= batch.len() as u64;
        batch
    }

    #[inline]
    pub fn done(&mut self, t: u64, mut batch: Vec<(u32, u32, bool)>) {
        let len = self.ring.len() as u64;
        batch.clear();
        self.ring[(t % len) as usize] = batch;
    }

    /// Cells on the wire, counted from the ring.
    pub fn counted(&self) -> u64 {
        self.ring.iter().map(|b| b.len() as u64).sum()
    }

    /// Whether a cell is on its way to node `x`.
    #[cfg(test)]
    pub fn any_to(&self, x: u32) -> bool {
        self.ring.iter().flatten().any(|c| c.0 == x)
    }
}

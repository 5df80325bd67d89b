//! The nodes and the cyclic schedule that connects them: which node each
//! uplink reaches in a slot, which nodes have failed, and (with
//! `reschedule_on_failure`) the schedule rebuilt over the survivors.
//!
//! A node's schedule position is its index until a reschedule packs the
//! live nodes together; positions past the last node are dark.

use super::NIL;
use crate::sched::awgr::{default_ports, CyclicSchedule};

pub(super) struct Nodes {
    schedule: CyclicSchedule,
    /// Absolute slot index where the current schedule's epoch 0 began.
    epoch_origin: u64,
    /// Schedule position of each node and node at each position (NIL = dark).
    pos_of: Vec<u32>,
    node_at: Vec<u32>,
    /// Each node's position mod G: the slot offsets of the schedule
    /// without a division.
    phase: Vec<u32>,
    /// `reach[o·W + x/64]` bit `x % 64`: some uplink reaches node x in slot
    /// offset o of every group (the nodes at positions u·G + o).
    reach: Vec<u64>,
    failed: Vec<bool>,
    /// `live[x/64]` bit `x % 64`: node x exists and has not failed.
    live: Vec<u64>,
    failed_count: usize,
    /// With `check`: the last slot each receive port heard a sender, and how
    /// often one heard two in a slot.
    check: bool,
    rx_seen: Vec<u64>,
    pub contention_violations: u64,
}

impl Nodes {
    pub fn new(n: usize, schedule: CyclicSchedule, check: bool) -> Nodes {
        let padded = schedule.padded();
        let mut node_at = vec![NIL; padded];
        for (i, slot) in node_at.iter_mut().enumerate().take(n) {
            *slot = i as u32;
        }
        let mut nodes = Nodes {
            rx_seen: vec![u64::MAX; padded * schedule.uplinks()],
            schedule,
            epoch_origin: 0,
            pos_of: (0..n as u32).collect(),
            node_at,
            phase: Vec::new(),
            reach: Vec::new(),
            failed: vec![false; n],
            live: (0..n.div_ceil(64))
                .map(|w| {
                    let left = n - 64 * w;
                    if left >= 64 {
                        u64::MAX
                    } else {
                        (1 << left) - 1
                    }
                })
                .collect(),
            failed_count: 0,
            check,
            contention_violations: 0,
        };
        nodes.index_schedule();
        nodes
    }

    /// Derives `phase` and `reach` from the schedule and the positions.
    fn index_schedule(&mut self) {
        let (n, g) = (self.failed.len(), self.schedule.ports());
        let words = n.div_ceil(64);
        self.phase = self.pos_of.iter().map(|&p| p % g as u32).collect();
        self.reach = vec![0; g * words];
        for (xpos, &x) in self.node_at.iter().enumerate() {
            if x != NIL {
                let o = xpos % g;
                self.reach[o * words + x as usize / 64] |= 1 << (x % 64);
            }
        }
        // The transmit loop visits a node's links in node order: that is
        // the uplinks' order because positions follow node order.
        debug_assert!(self.node_at.iter().filter(|&&x| x != NIL).is_sorted());
    }

    /// Word `w` of the nodes reached in slot offset `o` of every group.
    #[inline]
    pub fn reach_word(&self, o: usize, w: usize) -> u64 {
        self.reach[o * self.failed.len().div_ceil(64) + w]
    }

    /// Nodes N (live or failed).
    #[inline]
    pub fn count(&self) -> usize {
        self.failed.len()
    }

    /// Slots per epoch (G).
    #[inline]
    pub fn ports(&self) -> usize {
        self.schedule.ports()
    }

    /// Slot `t`'s place in its epoch.
    #[inline]
    pub fn slot_in_epoch(&self, t: u64) -> usize {
        ((t - self.epoch_origin) % self.schedule.ports() as u64) as usize
    }

    /// Word `w` of the live nodes: bit b set iff node `64·w + b` exists and
    /// has not failed.
    #[inline]
    pub fn live_word(&self, w: usize) -> u64 {
        self.live[w]
    }

    #[inline]
    pub fn is_failed(&self, x: usize) -> bool {
        self.failed[x]
    }

    /// Every node's failed flag.
    #[inline]
    pub fn failed(&self) -> &[bool] {
        &self.failed
    }

    pub fn failed_count(&self) -> usize {
        self.failed_count
    }

    /// Every node's failed flag once one has failed; empty before (the
    /// slot loop's per-link lookups skip it).
    #[inline]
    pub fn failed_if_any(&self) -> &[bool] {
        if self.failed_count == 0 {
            &[]
        } else {
            &self.failed
        }
    }

    /// The offset within every group of the positions node `s`'s uplinks
    /// reach in slot `k` of the epoch: uplink u reaches position
    /// u·G + offset (the same offset in every group, `sched::awgr`).
    #[inline]
    pub fn reach(&self, s: usize, k: usize) -> usize {
        let g = self.schedule.ports();
        let o = self.phase[s] as usize + k;
        let o = if o >= g { o - g } else { o };
        debug_assert_eq!(o, self.schedule.dest(self.pos_of[s] as usize, 0, k));
        o
    }

    /// The node at schedule position `xpos` (NIL: dark).
    #[inline]
    pub fn node_at(&self, xpos: usize) -> u32 {
        debug_assert!(xpos < self.node_at.len());
        self.node_at[xpos]
    }

    /// The slot of the epoch in which `from` reaches `to`.
    #[inline]
    pub fn slot_to(&self, from: usize, to: usize) -> usize {
        let g = self.schedule.ports() as u32;
        let (k, j) = (self.phase[from], self.phase[to]);
        let slot = if j >= k { j - k } else { j + g - k } as usize;
        debug_assert_eq!(
            slot,
            self.schedule
                .link(self.pos_of[from] as usize, self.pos_of[to] as usize)
                .1
        );
        slot
    }

    /// With `check`: counts a receive port that hears a second sender in
    /// slot `t` (node `s` sending to node `x`).
    #[inline]
    pub fn heard(&mut self, t: u64, s: usize, x: usize) {
        if !self.check {
            return;
        }
        let (pos, xpos) = (self.pos_of[s] as usize, self.pos_of[x] as usize);
        let u = xpos / self.schedule.ports();
        debug_assert_eq!(xpos, self.schedule.dest(pos, u, self.slot_in_epoch(t)));
        let port = self.schedule.rx_port(pos, u);
        let key = xpos * self.schedule.uplinks() + port;
        if self.rx_seen[key] == t {
            self.contention_violations += 1;
        }
        self.rx_seen[key] = t;
    }

    /// Marks `x` failed; false if it already was.
    pub fn fail(&mut self, x: usize) -> bool {
        let newly = !std::mem::replace(&mut self.failed[x], true);
        self.failed_count += newly as usize;
        self.live[x / 64] &= !(1 << (x % 64));
        newly
    }

    /// Rebuilds the schedule over the live nodes (at most `max_ports` slots
    /// per epoch), its epoch 0 starting at slot `t`.
    pub fn reschedule(&mut self, t: u64, max_ports: usize) {
        let live: Vec<u32> = (0..self.failed.len() as u32)
            .filter(|&i| !self.failed[i as usize])
            .collect();
        let u = self.schedule.uplinks();
        let g = default_ports(live.len().max(1), u).min(max_ports);
        self.schedule =
            CyclicSchedule::new(live.len().max(1), u, g).expect("fewer nodes always fit");
        self.node_at = vec![NIL; self.schedule.padded()];
        self.rx_seen = vec![u64::MAX; self.schedule.padded() * u];
        for (p, &node) in live.iter().enumerate() {
            self.node_at[p] = node;
            self.pos_of[node as usize] = p as u32;
        }
        self.epoch_origin = t;
        self.index_schedule();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The live words `transmit` and request/grant read against the
        /// per-node failed flags they replace, after random failures (and
        /// reschedules, which must leave the words alone): bit x set iff x
        /// exists and has not failed.
        #[test]
        fn live_words_match_the_failed_flags(
            n in 1usize..200,
            fails in prop::collection::vec((0usize..200, any::<bool>()), 0..30),
        ) {
            let uplinks = 3;
            let schedule = CyclicSchedule::new(n, uplinks, default_ports(n, uplinks)).unwrap();
            let mut nodes = Nodes::new(n, schedule, false);
            for (k, &(x, resched)) in fails.iter().enumerate() {
                let x = x % n;
                nodes.fail(x);
                if resched {
                    nodes.reschedule(k as u64, default_ports(n, uplinks));
                }
                for w in 0..n.div_ceil(64) + 1 {
                    for b in 0..64 {
                        let y = w * 64 + b;
                        let live = w < n.div_ceil(64) && nodes.live_word(w) >> b & 1 == 1;
                        prop_assert_eq!(live, y < n && !nodes.is_failed(y), "node {}", y);
                    }
                }
            }
        }
    }
}

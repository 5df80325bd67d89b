//! The network's per-flow state, indexed by flow id, that forgets finished
//! flows: flows arrive with consecutive ids (0, 1, 2, …) and the table holds
//! those from the oldest one not yet retired to the newest. The owner marks
//! a flow retirable (nothing of it can reach the network any more) and calls
//! [`FlowTable::retire_front`]: the longest prefix of retirable flows leaves
//! the table. A run of 10 M one-packet flows at 1,024 hosts thus holds a few
//! thousand flows at a time instead of all of them. A flow that never
//! finishes keeps every later flow in the table (as without retirement).
//!
//! Indexing a retired flow panics: retirement must be proven safe by its
//! caller, and a mistake is caught, not read as stale state.

use std::ops::{Index, IndexMut};

/// Compact only when at least this many retired flows lead the vector.
const COMPACT_MIN: usize = 1024;

pub(super) struct FlowTable<T> {
    /// Id of `v[0]`.
    base: usize,
    /// `v[..head]` are retired (kept until compaction), `v[head..]` live.
    head: usize,
    v: Vec<T>,
}

impl<T> FlowTable<T> {
    pub(super) fn new() -> Self {
        FlowTable {
            base: 0,
            head: 0,
            v: Vec::new(),
        }
    }

    /// One past the newest flow's id (the number of flows ever added).
    pub(super) fn len(&self) -> usize {
        self.base + self.v.len()
    }

    /// Adds the flow with the next id.
    pub(super) fn push(&mut self, t: T) {
        self.v.push(t);
    }

    /// Id of the oldest flow still held.
    pub(super) fn first_live(&self) -> usize {
        self.base + self.head
    }

    /// Retires the longest prefix of held flows for which `done` holds,
    /// oldest first, handing each to `gone` (in id order) before it leaves.
    pub(super) fn retire_front(
        &mut self,
        mut done: impl FnMut(&T) -> bool,
        mut gone: impl FnMut(usize, &T),
    ) {
        while let Some(t) = self.v.get(self.head) {
            if !done(t) {
                break;
            }
            gone(self.base + self.head, t);
            self.head += 1;
        }
        // Amortised O(1): the live part moved is at most the retired part
        // dropped.
        if self.head >= COMPACT_MIN && 2 * self.head >= self.v.len() {
            self.v.drain(..self.head);
            self.base += self.head;
            self.head = 0;
        }
    }

    /// The live flows with their ids, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, &T)> + '_ {
        let first = self.first_live();
        self.v[self.head..]
            .iter()
            .enumerate()
            .map(move |(i, t)| (first + i, t))
    }

    #[inline]
    fn slot(&self, id: usize) -> usize {
        assert!(
            id >= self.base + self.head,
            "net: flow {id} used after it was retired"
        );
        id - self.base
    }
}

impl<T> Index<usize> for FlowTable<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: usize) -> &T {
        &self.v[self.slot(id)]
    }
}

impl<T> IndexMut<usize> for FlowTable<T> {
    #[inline]
    fn index_mut(&mut self, id: usize) -> &mut T {
        let i = self.slot(id);
        &mut self.v[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn retires_only_a_finished_prefix() {
        let mut t = FlowTable::new();
        for i in 0..5u32 {
            t.push((i, false));
        }
        t[1].1 = true;
        let mut gone = vec![];
        t.retire_front(|f| f.1, |id, _| gone.push(id));
        assert!(gone.is_empty(), "flow 0 is not finished");
        t[0].1 = true;
        t.retire_front(|f| f.1, |id, _| gone.push(id));
        assert_eq!(gone, vec![0, 1]);
        assert_eq!(t.first_live(), 2);
        assert_eq!(t[2].0, 2);
        assert_eq!(t.len(), 5);
        let ids: Vec<usize> = t.iter().map(|(i, _)| i).collect();
        assert_eq!(ids, vec![2, 3, 4]);
    }

    #[test]
    #[should_panic(expected = "used after it was retired")]
    fn a_retired_flow_cannot_be_read() {
        let mut t = FlowTable::new();
        t.push(true);
        t.push(false);
        t.retire_front(|&f| f, |_, _| {});
        let _ = t[0];
    }

    proptest! {
        /// Against a plain vector of all flows with a "retired" mark: the
        /// same flows retire in the same order, live flows read back what
        /// was written, and the held count never exceeds twice the live
        /// ones plus the compaction slack.
        #[test]
        fn matches_a_vector_of_all_flows(ops in prop::collection::vec((0u8..3, 0usize..64), 1..600)) {
            let mut t: FlowTable<(usize, bool)> = FlowTable::new();
            let mut all: Vec<(usize, bool)> = vec![];
            let mut retired = 0usize;
            for (op, k) in ops {
                match op {
                    0 => {
                        t.push((all.len(), false));
                        all.push((all.len(), false));
                    }
                    1 if all.len() > retired => {
                        let id = retired + k % (all.len() - retired);
                        t[id].1 = true;
                        all[id].1 = true;
                    }
                    _ => {
                        let mut gone = vec![];
                        t.retire_front(|f| f.1, |id, f| gone.push((id, f.0)));
                        let mut want = vec![];
                        while retired < all.len() && all[retired].1 {
                            want.push((retired, retired));
                            retired += 1;
                        }
                        prop_assert_eq!(gone, want);
                    }
                }
                prop_assert_eq!(t.len(), all.len());
                prop_assert_eq!(t.first_live(), retired);
                for (id, f) in t.iter() {
                    prop_assert_eq!(*f, all[id]);
                    prop_assert_eq!(t[id], all[id]);
                }
                prop_assert!(t.v.len() <= 2 * (all.len() - retired) + COMPACT_MIN);
            }
        }
    }
}

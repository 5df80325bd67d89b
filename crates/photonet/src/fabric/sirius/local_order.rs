//! The round-robin order of the flows in one node's LOCAL, for SIRIUS (IDEAL)
//! with source priority queues and no per-destination bound (NegotiaToR's
//! traffic-oblivious baseline).
//!
//! The plain version (`Local::ideal_pick` with a `Vec<u32>`) scans the
//! list from the front for the first flow of the best priority class,
//! removing flows whose LOCAL is empty on the way (`swap_remove`: the last
//! flow takes the empty one's place), and rotates the chosen flow to the
//! back. Over capacity, thousands of elephants wait in LOCAL ahead of the
//! new mice at the back, so every pick would read every flow's state: the
//! cost would grow with the backlog.
//!
//! [`LocalOrder`] gives exactly the same picks and the same order in
//! O(log n) per step: the list is an array of positions where a removed flow
//! leaves a hole (appending at the back instead of shifting), and a min-tree
//! over the positions holds each flow's *key* — [`EMPTY`] for a flow with no
//! cell in LOCAL, `1 + class` for one with cells, [`HOLE`] for a hole — so
//! "the first empty flow or flow of a better class from position p on" is
//! one descent. Holes are squeezed out when the array fills up.

/// Key of a listed flow with no cell in LOCAL (removed when a pick passes it).
pub const EMPTY: u8 = 0;
/// Key of a position no flow holds.
pub const HOLE: u8 = u8::MAX;
/// Most priority classes a key can hold (`1 + class < HOLE`).
pub const MAX_CLASSES: usize = (HOLE - 1) as usize;

const NIL: u32 = u32::MAX;

/// Where a flow went, for the caller's per-flow position and "on the list" flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The flow is now at this position.
    At(u32, u32),
    /// The flow left the list (it was empty when a pick passed it).
    Out(u32),
}

/// One node's LOCAL flows in round-robin order (see the module doc).
#[derive(Clone, Debug)]
pub struct LocalOrder {
    /// Flow at each position (NIL = hole).
    flows: Vec<u32>,
    /// Min-tree: `tree[1]` the root, leaves at `cap + position`.
    tree: Vec<u8>,
    cap: usize,
    /// One past the last position a flow holds (0 when none).
    top: usize,
    live: usize,
}

impl Default for LocalOrder {
    fn default() -> Self {
        LocalOrder::new()
    }
}

impl LocalOrder {
    const START: usize = 16;

    pub fn new() -> Self {
        LocalOrder {
            flows: vec![NIL; Self::START],
            tree: vec![HOLE; 2 * Self::START],
            cap: Self::START,
            top: 0,
            live: 0,
        }
    }

    /// Flows on the list.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live
    }

    /// The flows in list order with their keys.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32, u8)> + '_ {
        (0..self.top)
            .filter(|&p| self.flows[p] != NIL)
            .map(|p| (p as u32, self.flows[p], self.tree[self.cap + p]))
    }

    fn set_leaf(&mut self, pos: usize, key: u8) {
        let mut i = self.cap + pos;
        self.tree[i] = key;
        while i > 1 {
            i >>= 1;
            let m = self.tree[2 * i].min(self.tree[2 * i + 1]);
            if self.tree[i] == m {
                break;
            }
            self.tree[i] = m;
        }
    }

    /// Sets the key of the flow at `pos` (its LOCAL became empty, got cells,
    /// or its next cell changed class).
    pub fn set_key(&mut self, pos: u32, key: u8) {
        debug_assert!(key != HOLE && self.flows[pos as usize] != NIL);
        self.set_leaf(pos as usize, key);
    }

    /// Appends flow `f` with `key` at the back.
    pub fn push(&mut self, f: u32, key: u8, moved: &mut impl FnMut(Moved)) {
        debug_assert!(key != HOLE);
        if self.top == self.cap {
            self.squeeze(moved);
        }
        let p = self.top;
        self.flows[p] = f;
        self.set_leaf(p, key);
        self.top += 1;
        self.live += 1;
        moved(Moved::At(f, p as u32));
    }

    /// Empties position `p` (one flow fewer) and drops trailing holes.
    fn hole(&mut self, p: usize) {
        self.flows[p] = NIL;
        self.set_leaf(p, HOLE);
        self.live -= 1;
        while self.top > 0 && self.flows[self.top - 1] == NIL {
            self.top -= 1;
        }
    }

    /// Packs the flows to the front (keeping their order), doubling the
    /// array when more than half of it is in use; reports every new position.
    fn squeeze(&mut self, moved: &mut impl FnMut(Moved)) {
        let cap = if self.live * 2 > self.cap {
            self.cap * 2
        } else {
            self.cap
        };
        let mut flows = vec![NIL; cap];
        let mut tree = vec![HOLE; 2 * cap];
        let mut q = 0;
        for p in 0..self.top {
            let f = self.flows[p];
            if f != NIL {
                flows[q] = f;
                tree[cap + q] = self.tree[self.cap + p];
                moved(Moved::At(f, q as u32));
                q += 1;
            }
        }
        for i in (1..cap).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        self.flows = flows;
        self.tree = tree;
        self.cap = cap;
        self.top = q;
        debug_assert_eq!(q, self.live);
    }

    /// The first position at or after `from` whose key is below `below`.
    fn first_below(&self, from: usize, below: u8) -> Option<usize> {
        if from >= self.top {
            return None;
        }
        let mut i = self.cap + from;
        loop {
            if self.tree[i] < below {
                break;
            }
            // Climb while `i` is a right child, then step to the next subtree.
            while i & 1 == 1 {
                i >>= 1;
            }
            if i == 0 {
                return None;
            }
            i += 1;
        }
        while i < self.cap {
            i *= 2;
            if self.tree[i] >= below {
                i += 1;
            }
        }
        Some(i - self.cap)
    }

    /// The flow to send next: the first flow of the best class (lowest key
    /// above [`EMPTY`]), which moves to the back. Empty flows that come
    /// before it in the scan are removed (the last flow takes each one's
    /// place and is looked at next), as the plain scan does; with no class-0
    /// flow the scan covers the whole list. `None` when no flow has a cell.
    pub fn pick(&mut self, moved: &mut impl FnMut(Moved)) -> Option<u32> {
        let mut best: Option<(u8, usize)> = None;
        let mut cur = 0;
        while let Some(p) = self.first_below(cur, best.map_or(HOLE, |b| b.0)) {
            let key = self.tree[self.cap + p];
            if key == EMPTY {
                // `swap_remove`: the last flow takes the empty one's place.
                moved(Moved::Out(self.flows[p]));
                let last = self.top - 1;
                if p != last {
                    let (g, k) = (self.flows[last], self.tree[self.cap + last]);
                    self.flows[p] = g;
                    self.set_leaf(p, k);
                    moved(Moved::At(g, p as u32));
                }
                self.hole(last);
                cur = p;
                continue;
            }
            best = Some((key, p));
            if key == EMPTY + 1 {
                break;
            }
            cur = p + 1;
        }
        let (key, p) = best?;
        let f = self.flows[p];
        self.hole(p);
        self.push(f, key, moved);
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The plain scan of `Local::ideal_pick` with every flow eligible:
    /// the oracle.
    fn plain_pick(list: &mut Vec<u32>, keys: &HashMap<u32, u8>, out: &mut Vec<u32>) -> Option<u32> {
        let mut best: Option<(u8, usize)> = None;
        let mut k = 0;
        while k < list.len() {
            let f = list[k];
            let key = keys[&f];
            if key == EMPTY {
                out.push(f);
                list.swap_remove(k);
                continue;
            }
            if best.is_none_or(|(c, _)| key < c) {
                best = Some((key, k));
                if key == 1 {
                    break;
                }
            }
            k += 1;
        }
        let (_, k) = best?;
        let f = list[k];
        list[k..].rotate_left(1);
        Some(f)
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// A new flow with this key joins.
        Push(u8),
        /// Pick, then give the picked flow this key.
        Pick(u8),
        /// Give the i-th listed flow (mod len) this key.
        Set(usize, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = prop_oneof![Just(EMPTY), 1u8..5];
        prop_oneof![
            1 => key.clone().prop_map(Op::Push),
            3 => key.clone().prop_map(Op::Pick),
            1 => (any::<usize>(), key).prop_map(|(i, k)| Op::Set(i, k)),
        ]
    }

    fn check(ops: &[Op]) {
        let mut order = LocalOrder::new();
        let mut pos: HashMap<u32, u32> = HashMap::new();
        let mut plain: Vec<u32> = Vec::new();
        let mut keys: HashMap<u32, u8> = HashMap::new();
        let mut next = 0u32;
        for (i, op) in ops.iter().enumerate() {
            let mut outs = Vec::new();
            let mut plain_outs = Vec::new();
            let mut moved = |m: Moved| match m {
                Moved::At(f, p) => {
                    pos.insert(f, p);
                }
                Moved::Out(f) => {
                    pos.remove(&f);
                    outs.push(f);
                }
            };
            match *op {
                Op::Push(k) => {
                    keys.insert(next, k);
                    plain.push(next);
                    order.push(next, k, &mut moved);
                    next += 1;
                }
                Op::Pick(k) => {
                    let a = order.pick(&mut moved);
                    let b = plain_pick(&mut plain, &keys, &mut plain_outs);
                    assert_eq!(a, b, "op {i}: pick");
                    if let Some(f) = a {
                        keys.insert(f, k);
                        order.set_key(pos[&f], k);
                    }
                }
                Op::Set(j, k) => {
                    if !plain.is_empty() {
                        let f = plain[j % plain.len()];
                        keys.insert(f, k);
                        order.set_key(pos[&f], k);
                    }
                }
            }
            assert_eq!(outs, plain_outs, "op {i}: removed");
            let listed: Vec<u32> = order.iter().map(|(_, f, _)| f).collect();
            assert_eq!(listed, plain, "op {i}: order");
            for (p, f, k) in order.iter() {
                assert_eq!(pos[&f], p, "op {i}: position of {f}");
                assert_eq!(keys[&f], k, "op {i}: key of {f}");
            }
            assert_eq!(order.len(), plain.len());
        }
    }

    #[test]
    fn a_hand_worked_sequence() {
        // Flows 0..4 with keys [3, 0, 3, 2, 1]: the pick removes empty 1
        // (4 takes its place: [0, 4, 2, 3]), stops at 4 (class 0) and
        // rotates it: [0, 2, 3, 4].
        let mut o = LocalOrder::new();
        let mut out = Vec::new();
        {
            let mut m = |x: Moved| {
                if let Moved::Out(f) = x {
                    out.push(f)
                }
            };
            for (f, k) in [3, 0, 3, 2, 1].into_iter().enumerate() {
                o.push(f as u32, k, &mut m);
            }
            assert_eq!(o.pick(&mut m), Some(4));
        }
        assert_eq!(out, vec![1]);
        let listed: Vec<u32> = o.iter().map(|x| x.1).collect();
        assert_eq!(listed, vec![0, 2, 3, 4]);
        // No class 0 left: the whole list is scanned, the first class-1
        // flow (3, key 2) wins.
        let mut m = |_: Moved| {};
        assert_eq!(o.pick(&mut m), Some(4));
        let (p4, _, _) = o.iter().find(|x| x.1 == 4).unwrap();
        o.set_key(p4, 3);
        assert_eq!(o.pick(&mut m), Some(3));
        let listed: Vec<u32> = o.iter().map(|x| x.1).collect();
        assert_eq!(listed, vec![0, 2, 4, 3]);
    }

    #[test]
    fn many_pushes_and_picks_squeeze_and_grow() {
        let ops: Vec<Op> = (0..2000)
            .map(|i| match i % 7 {
                0 | 3 => Op::Push((i % 4) as u8 + 1),
                1 => Op::Pick(EMPTY),
                5 => Op::Set(i, EMPTY),
                _ => Op::Pick((i % 3) as u8 + 1),
            })
            .collect();
        check(&ops);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn picks_and_order_equal_the_plain_scan(ops in prop::collection::vec(op(), 1..400)) {
            check(&ops);
        }
    }
}

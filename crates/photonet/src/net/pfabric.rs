//! pFabric (Alizadeh et al., SIGCOMM'13) as pure pieces, testable without a
//! simulation: the switch port's priority queue and the host's window
//! arithmetic. The network (`net::sim`, `Transport::Pfabric`) threads them.
//!
//! A packet's priority is its flow's remaining bytes when it was sent
//! (smaller = more urgent); ACKs have priority 0. The queue:
//! - **enqueue** always appends; while the queue then holds more bytes than
//!   its buffer, the packet of the *largest* priority value leaves (ties:
//!   the one nearest the tail), possibly the one that just came. (YAPS drops
//!   one packet only, so its queue can stay above its buffer when the packet
//!   dropped is shorter than the one that came; with equal-sized data
//!   packets, as in its pFabric case, one drop always suffices and the two
//!   agree.)
//! - **dequeue** finds the packet of the smallest priority value (ties:
//!   nearest the head) and sends the *earliest queued packet of that
//!   packet's flow* (pFabric's starvation rule: a flow's packets leave in
//!   order).
//!
//! The queue's bytes are those waiting, not the packet on the wire (the
//! reference simulator, YAPS, counts them so). Queues are short (a 36 KB
//! buffer holds 24 full packets), so both operations scan.
//!
//! The window ([`PfWindow`]) follows the reference pFabric host: slow start
//! (+1 packet per new cumulative ACK) below `ssthresh`, +1 per window of
//! ACKs above it, capped at the largest window; after a timeout
//! `ssthresh = max(cwnd / 2, 2)` and `cwnd = 1`. Losses are repaired only by
//! a fixed timeout (no RTT estimate, no back-off, no fast retransmit).

/// A pFabric port queue of items `T` (the network's packets).
#[derive(Clone, Debug)]
pub struct PfQueue<T> {
    items: Vec<Entry<T>>,
    bytes: u64,
}

#[derive(Clone, Debug)]
struct Entry<T> {
    prio: u64,
    flow: u32,
    bytes: u32,
    item: T,
}

impl<T> Default for PfQueue<T> {
    fn default() -> Self {
        PfQueue {
            items: Vec::new(),
            bytes: 0,
        }
    }
}

impl<T> PfQueue<T> {
    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Appends `item` (of flow `flow`, priority `prio`, `bytes` on the
    /// wire); while the queue then holds more than `limit` bytes, removes
    /// the packet of the largest priority value (nearest the tail among
    /// equals), which may be `item` itself, and hands it to `dropped`.
    pub fn push(
        &mut self,
        prio: u64,
        flow: u32,
        bytes: u32,
        item: T,
        limit: u64,
        mut dropped: impl FnMut(T),
    ) {
        self.items.push(Entry {
            prio,
            flow,
            bytes,
            item,
        });
        self.bytes += bytes as u64;
        while self.bytes > limit {
            let mut worst = 0;
            for (i, e) in self.items.iter().enumerate() {
                if e.prio >= self.items[worst].prio {
                    worst = i;
                }
            }
            let e = self.items.remove(worst);
            self.bytes -= e.bytes as u64;
            dropped(e.item);
        }
    }

    /// Removes and returns the packet to send: the earliest queued packet
    /// of the flow of the smallest-priority packet (nearest the head among
    /// equals).
    pub fn pop(&mut self) -> Option<T> {
        let best = self
            .items
            .iter()
            .enumerate()
            .min_by_key(|(i, e)| (e.prio, *i))?
            .1
            .flow;
        let i = self
            .items
            .iter()
            .position(|e| e.flow == best)
            .expect("the best packet's flow is queued");
        let e = self.items.remove(i);
        self.bytes -= e.bytes as u64;
        Some(e.item)
    }

    /// The waiting items, head first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.items.iter().map(|e| &e.item)
    }
}

/// A pFabric host's congestion window, packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfWindow {
    pub cwnd: u32,
    pub ssthresh: u32,
    max: u32,
    /// ACKs counted towards the next additive increase.
    count: u32,
}

impl PfWindow {
    /// The reference host's initial slow-start threshold (in effect none:
    /// the window is capped far below it).
    pub const INIT_SSTHRESH: u32 = 100_000;

    pub fn new(init: u32, max: u32) -> Self {
        PfWindow {
            cwnd: init.min(max),
            ssthresh: Self::INIT_SSTHRESH,
            max,
            count: 0,
        }
    }

    /// A new cumulative ACK.
    pub fn on_new_ack(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1;
        } else {
            self.count += 1;
            if self.count >= self.cwnd {
                self.count = 0;
                self.cwnd += 1;
            }
        }
        self.cwnd = self.cwnd.min(self.max);
    }

    /// A retransmission timeout.
    pub fn on_timeout(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(2);
        self.cwnd = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pushes and returns what was dropped.
    fn push<T>(
        q: &mut PfQueue<T>,
        prio: u64,
        flow: u32,
        bytes: u32,
        item: T,
        limit: u64,
    ) -> Vec<T> {
        let mut out = Vec::new();
        q.push(prio, flow, bytes, item, limit, |d| out.push(d));
        out
    }

    #[test]
    fn serves_smallest_remaining_and_keeps_a_flows_order() {
        let mut q = PfQueue::default();
        // (prio, flow, label): flow 1's older packet has a larger priority
        // value than its newer one (sent before an ACK shrank the rest).
        assert!(push(&mut q, 900, 1, 1500, "f1a", 100_000).is_empty());
        assert!(push(&mut q, 500, 2, 1500, "f2", 100_000).is_empty());
        assert!(push(&mut q, 400, 1, 1500, "f1b", 100_000).is_empty());
        // Smallest is f1b (400), but flow 1's earliest packet goes first.
        assert_eq!(q.pop(), Some("f1a"));
        assert_eq!(q.pop(), Some("f1b"));
        assert_eq!(q.pop(), Some("f2"));
        assert_eq!(q.pop(), None);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn overflow_drops_the_largest_nearest_the_tail_even_the_newcomer() {
        let mut q = PfQueue::default();
        assert!(push(&mut q, 10, 1, 1000, 'a', 2_500).is_empty());
        assert!(push(&mut q, 30, 2, 1000, 'b', 2_500).is_empty());
        // 3000 B > 2500: the largest value (30) goes; two share it, the
        // later one (the newcomer) is dropped.
        assert_eq!(push(&mut q, 30, 3, 1000, 'c', 2_500), vec!['c']);
        // A more urgent newcomer pushes out 'b'.
        assert_eq!(push(&mut q, 5, 4, 1000, 'd', 2_500), vec!['b']);
        assert_eq!(q.bytes(), 2_000);
        assert_eq!(q.iter().copied().collect::<String>(), "ad");
        // A long urgent packet may take two short ones' room (YAPS would
        // drop one only and hold 3,000 B in a 1,540 B buffer).
        let mut q = PfQueue::default();
        assert!(push(&mut q, 9, 1, 40, 'x', 1_540).is_empty());
        assert!(push(&mut q, 8, 2, 1500, 'y', 1_540).is_empty());
        assert_eq!(push(&mut q, 1, 3, 1500, 'z', 1_540), vec!['x', 'y']);
        assert_eq!(q.bytes(), 1_500);
    }

    #[test]
    fn window_slow_start_then_additive_and_timeout() {
        let mut w = PfWindow::new(12, 15);
        for _ in 0..10 {
            w.on_new_ack();
        }
        assert_eq!(w.cwnd, 15, "capped at the largest window");
        w.on_timeout();
        assert_eq!((w.cwnd, w.ssthresh), (1, 7));
        for _ in 0..6 {
            w.on_new_ack();
        }
        assert_eq!(w.cwnd, 7, "slow start up to ssthresh");
        // Additive: +1 after cwnd (7) ACKs.
        for _ in 0..6 {
            w.on_new_ack();
        }
        assert_eq!(w.cwnd, 7);
        w.on_new_ack();
        assert_eq!(w.cwnd, 8);
        let mut w = PfWindow::new(3, 15);
        w.on_timeout();
        assert_eq!(w.ssthresh, 2, "floor of 2");
    }

    /// The brute-force oracle: a list of (prio, flow, bytes, id) in arrival
    /// order; drops and serves by their definitions.
    fn oracle_push(
        v: &mut Vec<(u64, u32, u32, u32)>,
        e: (u64, u32, u32, u32),
        limit: u64,
    ) -> Vec<u32> {
        v.push(e);
        let mut out = Vec::new();
        while v.iter().map(|x| x.2 as u64).sum::<u64>() > limit {
            let max = v.iter().map(|x| x.0).max().unwrap();
            let i = v.iter().rposition(|x| x.0 == max).unwrap();
            out.push(v.remove(i).3);
        }
        out
    }

    fn oracle_pop(v: &mut Vec<(u64, u32, u32, u32)>) -> Option<u32> {
        let min = v.iter().map(|x| x.0).min()?;
        let flow = v.iter().find(|x| x.0 == min).unwrap().1;
        let i = v.iter().position(|x| x.1 == flow).unwrap();
        Some(v.remove(i).3)
    }

    proptest! {
        /// Against the oracle: the same drops and the same service order;
        /// the queue never holds more than its limit after a push; what is
        /// served is always of the flow of a most urgent packet present.
        #[test]
        fn matches_brute_force_oracle(
            ops in prop::collection::vec((any::<bool>(), 0u64..6, 0u32..4, prop::sample::select(vec![40u32, 500, 1500])), 1..300),
            limit in 1_500u64..6_000,
        ) {
            let mut q = PfQueue::default();
            let mut o = Vec::new();
            for (id, (is_push, prio, flow, bytes)) in ops.into_iter().enumerate() {
                let id = id as u32;
                if is_push {
                    let got = push(&mut q, prio, flow, bytes, id, limit);
                    let want = oracle_push(&mut o, (prio, flow, bytes, id), limit);
                    prop_assert_eq!(got, want);
                    prop_assert!(q.bytes() <= limit);
                } else {
                    // The flows holding a most urgent packet, before the pop.
                    let min = o.iter().map(|x| x.0).min();
                    let urgent: Vec<u32> = o.iter().filter(|x| Some(x.0) == min).map(|x| x.1).collect();
                    let flow_of: Vec<(u32, u32)> = o.iter().map(|x| (x.3, x.1)).collect();
                    let got = q.pop();
                    let want = oracle_pop(&mut o);
                    prop_assert_eq!(got, want);
                    if let Some(id) = got {
                        let f = flow_of.iter().find(|x| x.0 == id).unwrap().1;
                        prop_assert!(urgent.contains(&f));
                    }
                }
                prop_assert_eq!(q.bytes(), o.iter().map(|x| x.2 as u64).sum::<u64>());
                prop_assert_eq!(q.len(), o.len());
            }
        }
    }
}

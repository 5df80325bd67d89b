//! Per-flow FIFOs served round-robin in flow-id order: a host NIC's
//! priority class and a receiver's pull pacer (htsim's fair queues visit
//! their flows the same way, so that one flow's backlog does not delay
//! another's packets).
//!
//! The flows with something queued are kept in a vector sorted by flow id
//! (a NIC or pacer has few at a time); emptied FIFOs are kept for reuse,
//! so that a packet's visit allocates nothing.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub(super) struct RoundRobin<T> {
    queues: Vec<(u32, VecDeque<T>)>,
    spare: Vec<VecDeque<T>>,
    /// The flow to consider first next time.
    next: u32,
    len: usize,
}

impl<T> Default for RoundRobin<T> {
    fn default() -> Self {
        RoundRobin {
            queues: Vec::new(),
            spare: Vec::new(),
            next: 0,
            len: 0,
        }
    }
}

impl<T> RoundRobin<T> {
    pub(super) fn push(&mut self, flow: u32, x: T) {
        match self.queues.binary_search_by_key(&flow, |e| e.0) {
            Ok(i) => self.queues[i].1.push_back(x),
            Err(i) => {
                let mut q = self.spare.pop().unwrap_or_default();
                q.push_back(x);
                self.queues.insert(i, (flow, q));
            }
        }
        self.len += 1;
    }

    /// The head of the next flow in turn.
    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let mut i = self.queues.partition_point(|e| e.0 < self.next);
        if i == self.queues.len() {
            i = 0;
        }
        let (f, q) = &mut self.queues[i];
        let f = *f;
        let x = q.pop_front();
        if q.is_empty() {
            let (_, q) = self.queues.remove(i);
            self.spare.push(q);
        }
        self.next = f.wrapping_add(1);
        self.len -= 1;
        x
    }

    /// Drops every entry of `flow`.
    pub(super) fn flush(&mut self, flow: u32) {
        if let Ok(i) = self.queues.binary_search_by_key(&flow, |e| e.0) {
            let (_, mut q) = self.queues.remove(i);
            self.len -= q.len();
            q.clear();
            self.spare.push(q);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_flows_in_turn_fifo_within_a_flow() {
        let mut q = RoundRobin::default();
        q.push(5, 'a');
        q.push(5, 'b');
        q.push(2, 'x');
        q.push(9, 'z');
        // From flow 0 on: 2, 5, 9, then 5 again.
        let got: Vec<char> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, vec!['x', 'a', 'z', 'b']);
        q.push(1, 'p');
        q.push(1, 'q');
        q.flush(1);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
        // The turn goes on from the last flow served (5), wrapping past the
        // largest flow id.
        q.push(3, 'c');
        q.push(7, 'd');
        q.push(7, 'e');
        assert_eq!(q.pop(), Some('d'));
        assert_eq!(q.pop(), Some('c'));
        q.push(3, 'f');
        assert_eq!(q.pop(), Some('e'));
        assert_eq!(q.pop(), Some('f'));
    }
}

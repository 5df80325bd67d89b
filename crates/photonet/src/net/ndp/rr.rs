//! Per-flow FIFOs served round-robin in flow-id order: a host NIC's
//! priority class and a receiver's pull pacer (htsim's fair queues visit
//! their flows the same way, so that one flow's backlog does not delay
//! another's packets).

use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug)]
pub(super) struct RoundRobin<T> {
    queues: BTreeMap<u32, VecDeque<T>>,
    /// The flow to consider first next time.
    next: u32,
    len: usize,
}

impl<T> Default for RoundRobin<T> {
    fn default() -> Self {
        RoundRobin {
            queues: BTreeMap::new(),
            next: 0,
            len: 0,
        }
    }
}

impl<T> RoundRobin<T> {
    pub(super) fn push(&mut self, flow: u32, x: T) {
        self.queues.entry(flow).or_default().push_back(x);
        self.len += 1;
    }

    /// The head of the next flow in turn.
    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let (&f, q) = match self.queues.range_mut(self.next..).next() {
            Some(e) => e,
            None => self.queues.iter_mut().next()?,
        };
        let x = q.pop_front();
        if q.is_empty() {
            self.queues.remove(&f);
        }
        self.next = f.wrapping_add(1);
        self.len -= 1;
        x
    }

    /// Drops every entry of `flow`.
    pub(super) fn flush(&mut self, flow: u32) {
        if let Some(q) = self.queues.remove(&flow) {
            self.len -= q.len();
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
    }
}

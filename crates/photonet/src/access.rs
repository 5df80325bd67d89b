//! The access link between a host and its ToR, served once per slot.
//!
//! A slotted fabric moves a host's data to (or from) its ToR in whole units
//! (cells) at the host's rate R. An [`AccessLink`] keeps a byte credit that
//! grows by R × slot at the start of every slot the link is served, and sends
//! the units of its flows round-robin — one unit per flow per turn, as with
//! per-flow queues — while the credit covers the next unit. Which flows have
//! work and what each unit weighs is the fabric's business; the link only
//! orders the flows and does the arithmetic.
//!
//! # Exact arithmetic
//! Credit is counted in bits × 10¹² (rate in bit/s × time in ps, see
//! [`SlotCredit`]): R × slot and 8 × bytes × 10¹² are both whole numbers, so no
//! rounding accumulates however long a link stays busy. While a link is
//! backlogged from the slot it became active, and nothing but credit holds it
//! back, the units it has sent after k slots are exactly the longest prefix of
//! its round-robin order whose bytes fit in R × k × slot: it never sends more
//! than R allows, and never lags R by a whole unit.
//!
//! # Waiting and idling
//! A link whose next unit cannot go remembers what that unit needs
//! ([`need`](AccessLink::need)), so a later slot can skip it with one compare
//! ([`accrue`](AccessLink::accrue)) without touching its flows. A link held
//! back by something other than credit (for example a full buffer at the ToR)
//! must not bank unlimited credit and then burst: while waiting it keeps at
//! most one full unit's worth, or what its next unit needs if that is more
//! ([`wait`](AccessLink::wait), [`hold`](AccessLink::hold)). A link without
//! flows is idle: it earns nothing, and restarts from zero credit.
//!
//! The owner keeps a list of active links and serves only those, so a slot
//! costs O(active links), not O(hosts): [`add_flow`](AccessLink::add_flow)
//! says when a link becomes active and [`end_slot`](AccessLink::end_slot) when
//! it goes idle.
//!
//! # Serving one slot
//! ```
//! use photonet::access::{AccessLink, SlotCredit};
//! use photonet::units::{Rate, SimTime};
//! // 50 Gbps, 100 ns slots (625 B each), 562 B cells.
//! let rate = SlotCredit::new(Rate::gbps(50), SimTime::ns(100), 562);
//! let mut link = AccessLink::default();
//! let mut left = [2u32, 1]; // cells of flows 0 and 1
//! assert!(link.add_flow(0));
//! assert!(!link.add_flow(1)); // already active
//! let mut sent = Vec::new();
//! for _slot in 0..3 {
//!     if link.accrue(&rate) {
//!         while let Some(f) = link.front() {
//!             let cost = SlotCredit::cost(562);
//!             if !link.can_send(cost) {
//!                 link.hold(cost, &rate);
//!                 break;
//!             }
//!             left[f as usize] -= 1;
//!             link.sent(cost, left[f as usize] > 0);
//!             sent.push(f);
//!         }
//!     }
//!     if link.end_slot() {
//!         break; // idle: drop it from the active list
//!     }
//! }
//! assert_eq!(sent, [0, 1, 0]); // one cell a slot (625 B ≥ 562 B), round-robin
//! ```

use crate::units::{Rate, SimTime};

/// A link's rate in credit units: what it earns per slot, and the most a
/// waiting link may bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotCredit {
    per_slot: u64,
    bank: u64,
}

impl SlotCredit {
    /// A link of `rate` served every `slot`, sending units of at most
    /// `max_unit_bytes` bytes. Panics if the numbers overflow the credit
    /// counter (u64 in bits × 10¹²).
    pub fn new(rate: Rate, slot: SimTime, max_unit_bytes: u64) -> SlotCredit {
        let per_slot = rate.0.checked_mul(slot.0).expect("rate × slot overflows");
        let bank = max_unit_bytes
            .checked_mul(8 * SimTime::S)
            .expect("unit cost overflows");
        SlotCredit { per_slot, bank }
    }
    /// Credit needed to send `bytes` (a unit of up to 2.3 MB fits the u64).
    pub fn cost(bytes: u64) -> u64 {
        bytes * 8 * SimTime::S
    }
    /// Credit earned per slot: R × slot.
    pub fn per_slot(&self) -> u64 {
        self.per_slot
    }
    /// Cost of the largest unit: what a waiting link may keep.
    pub fn bank(&self) -> u64 {
        self.bank
    }
}

/// One host's slotted access link: credit and round-robin over flows with work.
#[derive(Clone, Debug, Default)]
pub struct AccessLink {
    credit: u64,
    need: u64,
    flows: Round,
    active: bool,
}

impl AccessLink {
    /// Queues `flow` for its turn (at the back). Returns true if the link just
    /// became active: the owner must put it on its list of links to serve.
    pub fn add_flow(&mut self, flow: u32) -> bool {
        self.flows.push_back(flow);
        self.activate()
    }
    /// Marks the link active; true if it was not.
    pub fn activate(&mut self) -> bool {
        !std::mem::replace(&mut self.active, true)
    }
    /// Is the link on its owner's active list?
    pub fn is_active(&self) -> bool {
        self.active
    }
    /// Stops serving the link (its end failed) but keeps its flows and credit;
    /// the owner drops it from its active list.
    pub fn deactivate(&mut self) {
        self.active = false;
    }

    /// Start of a slot: earns R × slot. Returns false if the next unit still
    /// waits for credit (the slot can skip the link).
    pub fn accrue(&mut self, rate: &SlotCredit) -> bool {
        self.credit += rate.per_slot;
        self.credit >= self.need
    }
    /// The flow whose turn it is.
    pub fn front(&self) -> Option<u32> {
        self.flows.front()
    }
    /// Does the credit cover a unit of this cost?
    pub fn can_send(&self, cost: u64) -> bool {
        self.credit >= cost
    }
    /// The front flow sent a unit of `cost` (which the credit must cover); it
    /// goes to the back of the round if it has `more`, else leaves it.
    pub fn sent(&mut self, cost: u64, more: bool) {
        debug_assert!(self.credit >= cost, "sent a unit without the credit");
        self.credit -= cost;
        assert!(!self.flows.is_empty(), "sent with no flow");
        if more {
            self.flows.rotate();
        } else {
            self.flows.pop_front();
        }
    }
    /// The front flow leaves the round without sending (it gave up).
    pub fn drop_front(&mut self) {
        self.flows.pop_front();
    }
    /// Every flow leaves the round; the link goes idle at [`end_slot`](Self::end_slot).
    pub fn clear_flows(&mut self) {
        self.flows.clear();
    }
    /// The front flow's next unit, of `cost`, cannot go this slot (for want of
    /// credit or for a reason of the owner's): remember its need and wait.
    pub fn hold(&mut self, cost: u64, rate: &SlotCredit) {
        self.need = cost;
        self.wait(rate);
    }
    /// Skips this slot: a waiting link banks at most one full unit, or its
    /// need if larger.
    pub fn wait(&mut self, rate: &SlotCredit) {
        self.credit = self.credit.min(rate.bank.max(self.need));
    }
    /// End of the slot's service: a link with no flows left goes idle (zero
    /// credit, nothing needed, inactive) and true is returned — the owner drops
    /// it from its active list.
    pub fn end_slot(&mut self) -> bool {
        if !self.flows.is_empty() {
            return false;
        }
        self.credit = 0;
        self.need = 0;
        self.active = false;
        true
    }

    /// Credit now, in bits × 10¹².
    pub fn credit(&self) -> u64 {
        self.credit
    }
    /// Credit the front unit was last found to need (0 if none).
    pub fn need(&self) -> u64 {
        self.need
    }
    /// Flows in the round.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
}

/// The flows' round-robin order: a ring with a power-of-two capacity, so
/// that a flow's turn (front to back) is one write and two masked adds,
/// where a `VecDeque` pops and pushes with a wrap and a capacity check each.
#[derive(Clone, Debug, Default)]
struct Round {
    /// Empty, or a power of two long; `head < buf.len()` when non-empty.
    buf: Vec<u32>,
    head: usize,
    len: usize,
}

impl Round {
    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    fn len(&self) -> usize {
        self.len
    }
    #[inline]
    fn front(&self) -> Option<u32> {
        (self.len > 0).then(|| self.buf[self.head])
    }
    #[inline]
    fn push_back(&mut self, f: u32) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = f;
        self.len += 1;
    }
    #[inline]
    fn pop_front(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) & (self.buf.len() - 1);
            self.len -= 1;
        }
    }
    /// The front moves to the back (non-empty). Full, the back slot is the
    /// front's own, so the write is a no-op and the head's step rotates.
    #[inline]
    fn rotate(&mut self) {
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = self.buf[self.head];
        self.head = (self.head + 1) & mask;
    }
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
    /// Doubles the ring (at least 4), unwrapping it to start at 0.
    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.buf.len()).max(4);
        let mut buf = Vec::with_capacity(cap);
        buf.extend((0..self.len).map(|i| self.buf[(self.head + i) & (self.buf.len() - 1)]));
        buf.resize(cap, 0);
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit_bytes(seq: u32, total: u64, unit: u64) -> u64 {
        unit.min(total - seq as u64 * unit)
    }

    /// A host with flows of `sizes` bytes cut into `unit`-byte units. Flow `i`
    /// is added at the start of slot `start[i]`; `held(slot)` says whether
    /// something other than credit keeps the front unit back. Returns, per slot,
    /// the (flow, bytes) sent, and whether the link was active at its end.
    #[allow(clippy::type_complexity)]
    fn drive(
        rate: &SlotCredit,
        unit: u64,
        sizes: &[u64],
        start: &[u64],
        slots: u64,
        held: impl Fn(u64) -> bool,
    ) -> Vec<(Vec<(u32, u64)>, bool)> {
        let mut link = AccessLink::default();
        let mut sent = vec![0u32; sizes.len()];
        let mut out = Vec::new();
        for t in 0..slots {
            for (i, _) in start.iter().enumerate().filter(|(_, &s)| s == t) {
                link.add_flow(i as u32);
            }
            let mut this = Vec::new();
            if link.is_active() {
                let ready = link.accrue(rate);
                if !ready || held(t) {
                    link.wait(rate);
                } else {
                    while let Some(f) = link.front() {
                        let fi = f as usize;
                        let bytes = unit_bytes(sent[fi], sizes[fi], unit);
                        let cost = SlotCredit::cost(bytes);
                        if !link.can_send(cost) {
                            link.hold(cost, rate);
                            break;
                        }
                        sent[fi] += 1;
                        let more = (sent[fi] as u64) * unit < sizes[fi];
                        link.sent(cost, more);
                        this.push((f, bytes));
                    }
                }
                link.end_slot();
            }
            out.push((this, link.is_active()));
        }
        out
    }

    /// The units of flows all added at once, in round-robin order.
    fn round_robin(sizes: &[u64], unit: u64) -> Vec<(u32, u64)> {
        let mut left: Vec<u64> = sizes.to_vec();
        let mut order = Vec::new();
        loop {
            let mut any = false;
            for (i, l) in left.iter_mut().enumerate() {
                if *l > 0 {
                    let b = unit.min(*l);
                    *l -= b;
                    order.push((i as u32, b));
                    any = true;
                }
            }
            if !any {
                return order;
            }
        }
    }

    #[test]
    fn one_long_flow_sends_floor_of_earned_over_cost() {
        // 50 Gbps × 100 ns = 625 B a slot; 562 B cells.
        let rate = SlotCredit::new(Rate::gbps(50), SimTime::ns(100), 562);
        let out = drive(&rate, 562, &[562 * 2000], &[0], 1500, |_| false);
        let mut total = 0u64;
        for (k, (sent, active)) in out.iter().enumerate() {
            total += sent.len() as u64;
            assert_eq!(total, (k as u64 + 1) * 625 / 562, "slot {k}");
            assert!(active);
        }
    }

    #[test]
    fn an_idle_link_banks_nothing() {
        let rate = SlotCredit::new(Rate::gbps(50), SimTime::ns(100), 562);
        // One cell at slot 0, then nothing until slot 10: the second flow's first
        // slot earns 625 B like the first's, not 10 slots' worth.
        let out = drive(&rate, 562, &[562, 562 * 3], &[0, 10], 13, |_| false);
        let counts: Vec<usize> = out.iter().map(|(s, _)| s.len()).collect();
        assert_eq!(counts, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);
        assert!(!out[1].1 && out[10].1 && !out[12].1);
    }

    #[test]
    fn a_held_link_banks_at_most_one_unit() {
        let rate = SlotCredit::new(Rate::gbps(50), SimTime::ns(100), 562);
        let out = drive(&rate, 562, &[562 * 10], &[0], 20, |t| t < 10);
        // Held for 10 slots: at most one cell banked, so slot 10 sends
        // floor((562 + 625) / 562) = 2 cells, not 11.
        assert!(out[..10].iter().all(|(s, _)| s.is_empty()));
        assert_eq!(out[10].0.len(), 2);
    }

    #[test]
    fn a_unit_larger_than_the_bank_still_goes() {
        // Bank of 100 B but a 1000 B unit: waiting keeps the need, so it goes
        // after ceil(1000 / 625) = 2 slots.
        let rate = SlotCredit::new(Rate::gbps(50), SimTime::ns(100), 100);
        let out = drive(&rate, 1000, &[1000], &[0], 3, |_| false);
        let counts: Vec<usize> = out.iter().map(|(s, _)| s.len()).collect();
        assert_eq!(counts, [0, 1, 0]);
    }

    fn rates() -> impl Strategy<Value = (u64, u64, u64)> {
        // (Gbps, slot ps, unit bytes), including slots that carry less than a unit.
        (1u64..=400, 1_000u64..=2_000_000, 1u64..=9_000)
    }

    proptest! {
        /// The ring against a `VecDeque` as the oracle: push, pop, rotate
        /// (0, 1, 2) and clear (3), across growth and wrap-around.
        #[test]
        fn round_is_a_deque(ops in prop::collection::vec((0u8..4, any::<u32>()), 0..300)) {
            let mut r = Round::default();
            let mut d = std::collections::VecDeque::new();
            for (op, v) in ops {
                match op {
                    0 => {
                        r.push_back(v);
                        d.push_back(v);
                    }
                    1 => {
                        r.pop_front();
                        d.pop_front();
                    }
                    2 if !d.is_empty() => {
                        r.rotate();
                        d.rotate_left(1);
                    }
                    3 if v % 8 == 0 => {
                        r.clear();
                        d.clear();
                    }
                    _ => {}
                }
                prop_assert_eq!(r.len(), d.len());
                prop_assert_eq!(r.is_empty(), d.is_empty());
                prop_assert_eq!(r.front(), d.front().copied());
                let all: Vec<u32> = (0..r.len).map(|i| r.buf[(r.head + i) & (r.buf.len() - 1)]).collect();
                prop_assert_eq!(all, d.iter().copied().collect::<Vec<_>>());
            }
        }
    }

    proptest! {
        /// Flows added together and never held: after every slot the link has
        /// sent exactly the longest prefix of the round-robin order that fits
        /// in R × k × slot — never more than R, never a whole unit behind.
        #[test]
        fn backlogged_link_sends_the_longest_prefix_that_fits(
            (gbps, slot, unit) in rates(),
            sizes in prop::collection::vec(1u64..50_000, 1..6),
        ) {
            let rate = SlotCredit::new(Rate::gbps(gbps), SimTime(slot), unit);
            let order = round_robin(&sizes, unit);
            let total: u64 = sizes.iter().sum();
            // Enough slots to finish, plus a few idle ones.
            let slots = (total * 8 * SimTime::S).div_ceil(rate.per_slot()) + 3;
            let starts = vec![0; sizes.len()];
            let out = drive(&rate, unit, &sizes, &starts, slots.min(5_000), |_| false);
            let (mut got, mut sent_cost) = (0usize, 0u128);
            // `want` units of `order`, costing `c`, fit in what was earned so far.
            let (mut want, mut c) = (0usize, 0u128);
            for (k, (this, active)) in out.iter().enumerate() {
                prop_assert_eq!(&this[..], &order[got..got + this.len()], "slot {}", k);
                got += this.len();
                sent_cost += this.iter().map(|&(_, b)| SlotCredit::cost(b) as u128).sum::<u128>();
                let earned = rate.per_slot() as u128 * (k as u128 + 1);
                while want < order.len() && c + SlotCredit::cost(order[want].1) as u128 <= earned {
                    c += SlotCredit::cost(order[want].1) as u128;
                    want += 1;
                }
                prop_assert_eq!(got, want, "slot {}", k);
                prop_assert!(sent_cost <= earned);
                if want < order.len() {
                    prop_assert!(earned - sent_cost < SlotCredit::cost(order[want].1) as u128);
                    prop_assert!(active);
                } else {
                    prop_assert!(!active);
                }
            }
        }

        /// Flows arriving at any time, the link held back at random: over every
        /// stretch of slots the link is busy it sends no more than R allows;
        /// each flow's units go in order and complete; turns are round-robin
        /// (a flow never gets two units ahead of another continuously present).
        #[test]
        fn never_exceeds_the_rate_and_serves_round_robin(
            (gbps, slot, unit) in rates(),
            flows in prop::collection::vec((1u64..30_000, 0u64..40), 1..8),
            held in prop::collection::vec(any::<bool>(), 64),
        ) {
            let rate = SlotCredit::new(Rate::gbps(gbps), SimTime(slot), unit);
            let sizes: Vec<u64> = flows.iter().map(|f| f.0).collect();
            let starts: Vec<u64> = flows.iter().map(|f| f.1).collect();
            let total: u64 = sizes.iter().sum();
            // Enough slots to finish: twice the slots the bytes need, spread
            // over the free slots of each 64-slot round of `held` (a held
            // slot sends nothing), after the last start. All held: never.
            let free = held.iter().filter(|h| !**h).count() as u64;
            let need = (total * 8 * SimTime::S).div_ceil(rate.per_slot()) * 2;
            let slots = if free == 0 { u64::MAX } else { 40 + need.div_ceil(free) * 64 + 64 };
            let out = drive(&rate, unit, &sizes, &starts, slots.min(20_000), |t| held[(t % 64) as usize]);
            let mut got = vec![0u64; sizes.len()];
            let (mut busy_slots, mut busy_cost) = (0u128, 0u128);
            for (this, active) in &out {
                busy_slots += 1;
                for &(f, b) in this {
                    // Units in order: each has the size of the flow's next unit.
                    let fi = f as usize;
                    prop_assert_eq!(b, unit.min(sizes[fi] - got[fi]));
                    got[fi] += b;
                    busy_cost += SlotCredit::cost(b) as u128;
                }
                prop_assert!(busy_cost <= busy_slots * rate.per_slot() as u128);
                if !active {
                    (busy_slots, busy_cost) = (0, 0);
                }
            }
            if slots <= 20_000 {
                prop_assert_eq!(&got, &sizes);
            }
            // Round-robin: between two units of one flow, every other flow
            // sends at most one unit. `since[f]`: the flows seen since f's
            // last unit, and whether one of them was seen twice.
            let mut since = vec![None::<(u32, bool)>; sizes.len()];
            for (this, _) in &out {
                for &(g, _) in this {
                    if let Some((_, twice)) = since[g as usize] {
                        prop_assert!(!twice, "a flow went twice between two turns of {}", g);
                    }
                    for (f, seen) in since.iter_mut().enumerate() {
                        if let Some((m, twice)) = seen {
                            if f as u32 != g {
                                *twice |= *m & (1 << g) != 0;
                                *m |= 1 << g;
                            }
                        }
                    }
                    since[g as usize] = Some((0, false));
                }
            }
        }
    }
}

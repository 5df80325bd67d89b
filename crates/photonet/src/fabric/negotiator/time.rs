//! Time: epochs of predefined then scheduled slots, numbered globally
//! (slot g is slot g mod P of epoch g div P, P slots per epoch), and where
//! the slot loop stands.

use super::params::NegotiatorLayout;
use crate::queue::SlotClock;
use crate::units::SimTime;

pub(super) struct Time {
    clock: SlotClock,
    /// Start of each slot within the epoch.
    offsets: Vec<SimTime>,
    /// Global index of the last slot processed.
    pub last: Option<u64>,
    /// The latest time the fabric was told about (a flow or a slot).
    pub latest: SimTime,
    /// The end of the run (`finish`): later ToR arrivals are censored.
    pub end: SimTime,
}

impl Time {
    pub fn new(l: &NegotiatorLayout) -> Time {
        Time {
            clock: SlotClock::new(l.epoch),
            offsets: l.offsets.clone(),
            last: None,
            latest: SimTime::ZERO,
            end: SimTime::MAX,
        }
    }

    #[inline]
    pub fn slots_per_epoch(&self) -> u64 {
        self.offsets.len() as u64
    }
    /// When epoch `e` starts.
    #[inline]
    pub fn start(&self, e: u64) -> SimTime {
        self.clock.start(e)
    }
    /// When global slot `g` starts.
    pub fn slot_time(&self, g: u64) -> SimTime {
        let per = self.slots_per_epoch();
        self.clock.start(g / per) + self.offsets[(g % per) as usize]
    }
    /// The first global slot index starting at or after `t`.
    pub fn slot_at_or_after(&self, t: SimTime) -> u64 {
        let per = self.slots_per_epoch();
        let e = self.clock.slot_of(t);
        let off = t - self.clock.start(e);
        let j = self.offsets.partition_point(|&o| o < off) as u64;
        e * per + j
    }
    /// The next slot to process, not before the latest time seen.
    pub fn next_slot(&self) -> u64 {
        let after = self.last.map_or(0, |g| g + 1);
        after.max(self.slot_at_or_after(self.latest))
    }
}

//! Timeouts and the binary exponential backoff (`baldur.backoff`): per node
//! (the paper's reading: it throttles the transmitter) or per packet.

use super::packets::{TIMED_OUT, TIMER};
use super::params::Backoff;
use super::{Baldur, Timer};
use crate::units::SimTime;
use rand::Rng;

impl Baldur {
    /// A uniform number of backoff slots in [0, 2^min(c, cap) − 1].
    fn backoff_draw(&mut self, c: u32) -> u64 {
        self.backoff_rng
            .random_range(0..(1u64 << c.min(self.backoff_cap)))
    }

    /// Node backoff: true if node `h` may not start a data transmission at
    /// `now` (it then resumes by a `Resume` timer).
    pub(super) fn held(&mut self, h: u32, now: SimTime) -> bool {
        let node = &mut self.nodes[h as usize];
        if now >= node.data_ok_at || (node.retx.is_empty() && node.fresh.is_empty()) {
            return false;
        }
        if !node.resume {
            node.resume = true;
            let at = node.data_ok_at;
            self.timers.schedule(at, Timer::Resume(h));
        }
        true
    }

    /// Node backoff: node `h` sent a data packet; while its stage is above 0
    /// its next one waits a draw of slots after this one ends (`free_at`).
    pub(super) fn throttle(&mut self, h: u32, free_at: SimTime) {
        let c = self.nodes[h as usize].stage as u32;
        if self.backoff == Backoff::Node && c > 0 {
            let slots = self.backoff_draw(c);
            self.nodes[h as usize].data_ok_at = free_at + self.backoff_slot * slots;
        }
    }

    /// The timeout at the head of the FIFO (due at `deadline`).
    pub(super) fn on_timeout(&mut self, now: SimTime, deadline: SimTime, slot: u32, serial: u32) {
        if !self.live(slot, serial) || self.out.get(slot).deadline != deadline {
            return;
        }
        self.count.timeouts += 1;
        let o = self.out.get_mut(slot);
        o.deadline = SimTime::MAX;
        let before = o.has(TIMED_OUT);
        o.set(TIMED_OUT, true);
        let h = o.src as usize;
        if self.backoff == Backoff::Node {
            let node = &mut self.nodes[h];
            node.stage = (node.stage + 1).min(self.backoff_cap as u8);
            self.queue_retx(slot, now);
            return;
        }
        let cold = self.cold_mut(slot);
        cold.timeouts = if before { cold.timeouts + 1 } else { 1 };
        let c = cold.timeouts;
        let slots = self.backoff_draw(c);
        if slots == 0 {
            self.queue_retx(slot, now);
        } else {
            let id = self.timers.schedule(
                now + self.backoff_slot * slots,
                Timer::Retry { slot, serial },
            );
            self.out.get_mut(slot).set(TIMER, true);
            self.cold_mut(slot).timer = Some(id);
        }
    }

    pub(super) fn on_timer(&mut self, now: SimTime, t: Timer) {
        match t {
            Timer::Retry { slot, serial } => {
                if self.live(slot, serial) {
                    self.queue_retx(slot, now);
                }
            }
            Timer::Resume(h) => {
                self.nodes[h as usize].resume = false;
                self.kick(h, now);
            }
        }
    }
}

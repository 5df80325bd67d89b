//! The state behind the hooks for outside drivers (see the `Network`
//! methods `set_pfc_jitter` and `log_deliveries`): PFC jitter and the
//! delivery log.

use crate::rng::SimRng;
use crate::units::SimTime;
use rand::Rng;

/// The hooks' state inside a [`Network`].
#[derive(Default)]
pub(super) struct Ext {
    /// PFC jitter: largest extra pause and resume delays, ps, and the
    /// stream they are drawn from (set by `set_pfc_jitter`).
    pub(super) pause_extra: u64,
    pub(super) resume_extra: u64,
    pub(super) rng: Option<SimRng>,
    /// Delivery log (net flow, time, bytes), when on.
    pub(super) log: Option<Vec<(u32, SimTime, u64)>>,
}

impl Ext {
    /// The extra delay of one PFC frame (0 without jitter).
    #[inline]
    pub(super) fn pfc_extra(&mut self, pause: bool) -> u64 {
        let Some(rng) = &mut self.rng else {
            return 0;
        };
        let max = if pause {
            self.pause_extra
        } else {
            self.resume_extra
        };
        rng.random_range(0..=max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;

    fn jitter(seed: u64) -> Ext {
        // As `Network::set_pfc_jitter(1,174 ns, 100 ns)` sets it.
        Ext {
            pause_extra: 1_174_000,
            resume_extra: 100_000,
            rng: Some(RngStreams::new(seed).stream("net.pfc")),
            log: None,
        }
    }

    #[test]
    fn pfc_jitter_draws_stay_in_range_and_vary() {
        let mut n = jitter(1);
        let d: Vec<u64> = (0..200).map(|_| n.pfc_extra(true)).collect();
        // Picoseconds.
        assert!(d.iter().all(|&x| x <= 1_174_000));
        assert!(d.iter().any(|&x| x < 300_000) && d.iter().any(|&x| x > 900_000));
        let e: Vec<u64> = (0..200).map(|_| n.pfc_extra(false)).collect();
        assert!(e.iter().all(|&x| x <= 100_000));
        // Same seed, same draws.
        let mut m = jitter(1);
        let d2: Vec<u64> = (0..200).map(|_| m.pfc_extra(true)).collect();
        assert_eq!(d, d2);
        // Without jitter, no extra delay.
        assert_eq!(Ext::default().pfc_extra(true), 0);
    }
}

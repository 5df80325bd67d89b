//! DCTCP congestion control as pure window arithmetic (Alizadeh et al.,
//! SIGCOMM 2010; RFC 8257), in packets: slow start, additive increase,
//! the ECN-proportional decrease `cwnd ← cwnd · (1 − α/2)` at most once per
//! window of data, `α ← (1 − g)·α + g·F` once per window (F: the fraction of
//! acknowledged packets that carried ECN-Echo), halving on three duplicate
//! ACKs and a window of one packet after a retransmission timeout.
//!
//! The sender's sequence bookkeeping (what is outstanding, what to resend)
//! lives in the transport (`net::sim`); this module only answers "how many
//! packets may be in flight".

/// The congestion state of one DCTCP sender. Sequence numbers are packet
/// numbers of the flow.
#[derive(Clone, Debug, PartialEq)]
pub struct Dctcp {
    /// Congestion window, in packets (≥ 1).
    pub cwnd: f64,
    pub ssthresh: f64,
    /// The running estimate of the fraction of marked packets.
    pub alpha: f64,
    /// Gain of the α estimate (RFC 8257: 1/16).
    pub g: f64,
    /// Upper limit of `cwnd`.
    pub max_cwnd: f64,
    acked: u32,
    marked: u32,
    /// α is updated when the cumulative ACK passes this sequence.
    window_end: u32,
    /// No further ECN decrease until the cumulative ACK passes this.
    cwr_end: u32,
}

impl Dctcp {
    pub fn new(init_cwnd: f64, g: f64, max_cwnd: f64) -> Dctcp {
        Dctcp {
            cwnd: init_cwnd.min(max_cwnd),
            ssthresh: f64::INFINITY,
            alpha: 1.0,
            g,
            max_cwnd,
            acked: 0,
            marked: 0,
            window_end: 0,
            cwr_end: 0,
        }
    }

    /// Packets the window allows in flight.
    #[inline]
    pub fn window(&self) -> u32 {
        self.cwnd as u32
    }

    /// An ACK: the cumulative ACK, up to `ack` (exclusive), acknowledged
    /// `newly` more packets (0 for a duplicate ACK); `delivered` is the
    /// number of packets whose arrival this ACK reports for the first time
    /// (1 for a duplicate ACK that reports an out-of-order packet; for a
    /// cumulative ACK after reordering, `newly` minus the packets that
    /// duplicate ACKs already reported); `ece` if it echoed a congestion
    /// mark; `snd_nxt` is the next sequence the sender will send.
    ///
    /// α counts *delivered* packets (RFC 8257 §3.3 counts bytes acknowledged
    /// cumulatively or selectively, each once): counting `newly` for
    /// every marked ACK would count a reordered window's packets twice —
    /// once by their duplicate ACKs and again by the cumulative ACK that
    /// covers them — and inflate the marked fraction of the flow whose
    /// packets happen to be reordered more.
    pub fn on_ack(&mut self, newly: u32, delivered: u32, ece: bool, ack: u32, snd_nxt: u32) {
        self.acked += delivered;
        if ece {
            self.marked += delivered;
        }
        if ack > self.window_end {
            // One window of data acknowledged: update α.
            if self.acked > 0 {
                let f = (self.marked as f64 / self.acked as f64).min(1.0);
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.acked = 0;
            self.marked = 0;
            self.window_end = snd_nxt;
        }
        if ece {
            if ack > self.cwr_end {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
                self.ssthresh = self.cwnd;
                self.cwr_end = snd_nxt;
            }
        } else if newly > 0 {
            if self.cwnd < self.ssthresh {
                self.cwnd += newly as f64;
            } else {
                self.cwnd += newly as f64 / self.cwnd;
            }
            self.cwnd = self.cwnd.min(self.max_cwnd);
        }
    }

    /// Three duplicate ACKs: halve the window (fast retransmit).
    pub fn on_fast_retransmit(&mut self, snd_nxt: u32) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = self.ssthresh;
        self.cwr_end = snd_nxt;
    }

    /// A retransmission timeout: one packet in flight, slow start again.
    pub fn on_timeout(&mut self, snd_nxt: u32) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.cwr_end = snd_nxt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_doubles_per_window_then_grows_by_one() {
        let mut c = Dctcp::new(2.0, 1.0 / 16.0, 1000.0);
        c.on_ack(1, 1, false, 1, 2);
        c.on_ack(1, 1, false, 2, 3);
        assert_eq!(c.cwnd, 4.0);
        c.ssthresh = 4.0;
        for i in 0..4 {
            c.on_ack(1, 1, false, 3 + i, 8);
        }
        // 4 + 1/4 + 1/4.25 + 1/4.485 + 1/4.708 = 4.921: about one packet per window.
        assert!((c.cwnd - 4.921).abs() < 0.001, "{}", c.cwnd);
    }

    #[test]
    fn alpha_tracks_the_marked_fraction_and_the_cut_is_proportional() {
        // Every other packet marked for many windows: alpha -> 0.5.
        let mut c = Dctcp::new(10.0, 1.0 / 16.0, 10.0);
        let mut seq = 0;
        for _ in 0..200 {
            for k in 0..10 {
                seq += 1;
                c.on_ack(1, 1, k % 2 == 0, seq, seq + 10);
            }
        }
        assert!((c.alpha - 0.5).abs() < 0.01, "{}", c.alpha);
        // The cut is cwnd * (1 - alpha/2), at most once per window.
        let mut d = Dctcp::new(40.0, 1.0 / 16.0, 100.0);
        d.alpha = 0.5;
        d.window_end = 1000;
        d.on_ack(1, 1, true, 1, 40);
        assert_eq!(d.cwnd, 30.0);
        d.on_ack(1, 1, true, 2, 40);
        assert_eq!(
            d.cwnd, 30.0,
            "a second mark in the same window does not cut"
        );
        d.on_ack(1, 1, true, 41, 80);
        assert_eq!(d.cwnd, 22.5);
    }

    #[test]
    fn losses_halve_or_reset_the_window() {
        let mut c = Dctcp::new(20.0, 1.0 / 16.0, 100.0);
        c.on_fast_retransmit(20);
        assert_eq!((c.cwnd, c.ssthresh), (10.0, 10.0));
        c.on_timeout(20);
        assert_eq!((c.cwnd, c.ssthresh), (1.0, 5.0));
        let mut d = Dctcp::new(3.0, 1.0 / 16.0, 100.0);
        d.on_fast_retransmit(3);
        assert_eq!(d.cwnd, 2.0, "never below two after a fast retransmit");
    }

    /// Feeds one window of `n` packets (0..n) whose CE marks are `ce`,
    /// arriving in `order`, one ACK per packet as the receiver sends them
    /// (cumulative ACK = next expected; a packet above it is a duplicate
    /// ACK), to a sender whose α update is due at the end of the window.
    /// Returns the marked fraction α takes with g = 1.
    fn alpha_after(ce: &[bool], order: &[usize]) -> f64 {
        let n = ce.len() as u32;
        let mut c = Dctcp::new(1000.0, 1.0, 1000.0);
        c.window_end = n - 1;
        let mut got = vec![false; ce.len()];
        let (mut next, mut una, mut dups) = (0u32, 0u32, 0u32);
        for &i in order {
            got[i] = true;
            while (next as usize) < got.len() && got[next as usize] {
                next += 1;
            }
            if next > una {
                // All it covers but the packet that filled the hole were
                // reported by duplicate ACKs.
                let newly = next - una;
                let covered = dups.min(newly - 1);
                c.on_ack(newly, newly - covered, ce[i], next, n);
                una = next;
                dups -= covered;
            } else {
                dups += 1;
                c.on_ack(0, 1, ce[i], una, n);
            }
        }
        c.alpha
    }

    #[test]
    fn reordering_does_not_inflate_the_marked_fraction() {
        // Ten packets, every other one marked; packet 0 arrives last: nine
        // duplicate ACKs, then one cumulative ACK of all ten.
        let ce: Vec<bool> = (0..10).map(|k| k % 2 == 0).collect();
        let late: Vec<usize> = (1..10).chain([0]).collect();
        let in_order: Vec<usize> = (0..10).collect();
        assert_eq!(alpha_after(&ce, &in_order), 0.5);
        assert_eq!(alpha_after(&ce, &late), 0.5);
    }

    proptest::proptest! {
        /// Oracle: the marked fraction of a window is (marked packets) /
        /// (packets), whatever order they arrive in.
        #[test]
        fn the_marked_fraction_ignores_arrival_order(
            ce in proptest::collection::vec(proptest::bool::ANY, 2..40),
            seed in 0u64..1_000_000,
        ) {
            let n = ce.len();
            let mut order: Vec<usize> = (0..n).collect();
            // A seeded Fisher-Yates shuffle.
            let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for i in (1..n).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                order.swap(i, (x >> 33) as usize % (i + 1));
            }
            let want = ce.iter().filter(|&&m| m).count() as f64 / n as f64;
            let got = alpha_after(&ce, &order);
            proptest::prop_assert!((got - want).abs() < 1e-12, "{} vs {}", got, want);
        }
    }
}

//! The NDP switch output queue: a bounded data queue that trims instead of
//! dropping, and a header queue (control packets and trimmed data) served
//! with (nearly) strict priority. Pure: no time, no events; the network
//! asks it what to send next.
//!
//! When a full-size packet finds the data queue full, a fair coin decides
//! what loses its payload: the arrival, or the most recently queued data
//! packet (which makes room for the arrival). The second choice keeps the
//! queue from favouring whoever happened to arrive first (Handley et al.,
//! SIGCOMM'17, §3.1; htsim's `CompositeQueue` does the same). A header that
//! finds the header queue full (twice the data capacity) is dropped.

use std::collections::VecDeque;

use super::Pkt;

/// Headers are served `HIGH_RATIO` times for each data packet while both
/// queues hold packets: strict priority in practice, without starving
/// data for ever.
pub(super) const HIGH_RATIO: u32 = 100_000;

/// What happened to an arriving data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admit {
    /// Queued whole.
    Queued,
    /// Queued whole; the newest queued packets were trimmed to make room:
    /// `trimmed` of them (one when every data packet has the same size;
    /// more when the newest is a short last packet), `dropped` of whose
    /// headers found the header queue full. Each trimmed packet is NACKed
    /// and resent, so each must be counted.
    QueuedTrimmedNewest { trimmed: u32, dropped: u32 },
    /// Trimmed to its header (`dropped`: the header queue was full).
    Trimmed { dropped: bool },
}

/// One switch output port's queues: the counts and the packet on the wire
/// in the first cache line, the FIFOs in the second (a port's visit reads
/// the first always, the second only to queue or dequeue).
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct TrimQueue {
    /// Bytes of data packets queued or on the wire.
    pub(super) data_bytes: u64,
    /// Bytes of headers queued or on the wire.
    pub(super) hdr_bytes: u64,
    /// The packet on the wire and whether it came from the header queue.
    pub(super) tx: Option<(Pkt, bool)>,
    pub(super) peak_data_bytes: u64,
    crt: u32,
    data: VecDeque<Pkt>,
    hdr: VecDeque<Pkt>,
}

impl TrimQueue {
    /// Data packet `p` (`size` bytes on the wire; `hdr` bytes once trimmed)
    /// arrives; `coin` is a uniform draw in [0, 1), asked only when the
    /// data queue is full.
    pub(super) fn admit_data(
        &mut self,
        p: Pkt,
        cap: u64,
        hdr_size: u16,
        coin: impl FnOnce() -> f64,
    ) -> Admit {
        let size = p.size as u64;
        if self.data_bytes + size <= cap {
            self.push_data(p);
            return Admit::Queued;
        }
        // Trimming queued packets helps only if the arrival fits beside the
        // packet on the wire (which cannot be trimmed).
        let on_wire = match self.tx {
            Some((t, false)) => t.size as u64,
            _ => 0,
        };
        if !self.data.is_empty() && coin() >= 0.5 && on_wire + size <= cap {
            // Trim the newest queued packets until the arrival fits.
            let (mut trimmed, mut dropped) = (0, 0);
            while self.data_bytes + size > cap {
                let mut v = self.data.pop_back().expect("the arrival fits");
                self.data_bytes -= v.size as u64;
                v.trim(hdr_size);
                trimmed += 1;
                dropped += u32::from(!self.admit_header(v, cap));
            }
            self.push_data(p);
            return Admit::QueuedTrimmedNewest { trimmed, dropped };
        }
        let mut h = p;
        h.trim(hdr_size);
        let dropped = !self.admit_header(h, cap);
        Admit::Trimmed { dropped }
    }

    fn push_data(&mut self, p: Pkt) {
        self.data_bytes += p.size as u64;
        self.peak_data_bytes = self.peak_data_bytes.max(self.data_bytes);
        self.data.push_back(p);
    }

    /// A header or control packet arrives; false if it was dropped (the
    /// header queue holds at most twice the data capacity).
    pub(super) fn admit_header(&mut self, p: Pkt, cap: u64) -> bool {
        if self.hdr_bytes + p.size as u64 > 2 * cap {
            return false;
        }
        self.hdr_bytes += p.size as u64;
        self.hdr.push_back(p);
        true
    }

    /// Idle with nothing queued: `p` goes straight onto the wire (`high`:
    /// a header or control packet), counted until it is done. A data
    /// packet always fits an empty queue (the bound is at least a frame).
    #[inline]
    pub(super) fn send_now(&mut self, p: Pkt, high: bool) {
        debug_assert!(self.tx.is_none() && self.waiting() == 0);
        if high {
            self.hdr_bytes += p.size as u64;
        } else {
            self.data_bytes += p.size as u64;
            self.peak_data_bytes = self.peak_data_bytes.max(self.data_bytes);
        }
        self.tx = Some((p, high));
    }

    /// Idle with something queued: the packet to put on the wire now.
    pub(super) fn start(&mut self) -> Option<Pkt> {
        debug_assert!(self.tx.is_none());
        let high = match (self.hdr.is_empty(), self.data.is_empty()) {
            (true, true) => return None,
            (false, false) => {
                self.crt += 1;
                if self.crt > HIGH_RATIO {
                    self.crt = 0;
                }
                self.crt < HIGH_RATIO
            }
            (hdr_empty, _) => !hdr_empty,
        };
        let p = if high {
            self.hdr.pop_front()
        } else {
            self.data.pop_front()
        }?;
        self.tx = Some((p, high));
        Some(p)
    }

    /// The packet on the wire has left: its bytes leave the queue.
    pub(super) fn finish(&mut self) -> Pkt {
        let (p, high) = self.tx.take().expect("a packet on the wire");
        if high {
            self.hdr_bytes -= p.size as u64;
        } else {
            self.data_bytes -= p.size as u64;
        }
        p
    }

    pub(super) fn is_idle(&self) -> bool {
        self.tx.is_none()
    }

    /// Packets waiting (not on the wire).
    pub(super) fn waiting(&self) -> usize {
        self.data.len() + self.hdr.len()
    }

    /// Bytes accounted equal the packets held.
    pub(super) fn check(&self, cap: u64) -> Result<(), String> {
        let tx = |hi: bool| match self.tx {
            Some((p, h)) if h == hi => p.size as u64,
            _ => 0,
        };
        let d: u64 = self.data.iter().map(|p| p.size as u64).sum::<u64>() + tx(false);
        let h: u64 = self.hdr.iter().map(|p| p.size as u64).sum::<u64>() + tx(true);
        if d != self.data_bytes || h != self.hdr_bytes {
            return Err(format!(
                "queue accounts {}+{} B, holds {d}+{h} B",
                self.data_bytes, self.hdr_bytes
            ));
        }
        if self.peak_data_bytes > cap {
            return Err(format!(
                "data queue reached {} B, above its bound {cap} B",
                self.peak_data_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ndp::Kind;

    fn data(seq: u32) -> Pkt {
        sized(seq, 4160)
    }

    fn sized(seq: u32, size: u16) -> Pkt {
        Pkt {
            seq,
            size,
            kind: Kind::Data as u8,
            ..Pkt::default()
        }
    }

    const CAP: u64 = 35 * 4096; // htsim's -q 35: 34 whole packets

    #[test]
    fn holds_34_packets_then_trims_the_arrival_or_the_newest() {
        let mut q = TrimQueue::default();
        for s in 0..34 {
            assert_eq!(q.admit_data(data(s), CAP, 64, || 0.0), Admit::Queued);
        }
        assert_eq!(q.data_bytes, 34 * 4160);
        // Coin < 0.5: the arrival is trimmed.
        assert_eq!(
            q.admit_data(data(34), CAP, 64, || 0.2),
            Admit::Trimmed { dropped: false }
        );
        // Coin >= 0.5: packet 33 (the newest) is trimmed, 35 queued.
        assert_eq!(
            q.admit_data(data(35), CAP, 64, || 0.7),
            Admit::QueuedTrimmedNewest {
                trimmed: 1,
                dropped: 0
            }
        );
        assert_eq!(q.data_bytes, 34 * 4160);
        assert_eq!(q.hdr_bytes, 128);
        // Headers first.
        let first = q.start().unwrap();
        assert_eq!((first.seq, first.size), (34, 64));
        q.finish();
        let second = q.start().unwrap();
        assert_eq!((second.seq, second.size), (33, 64));
        q.finish();
        assert_eq!(q.start().unwrap().seq, 0);
        q.check(CAP).unwrap();
    }

    #[test]
    fn trimming_a_short_newest_packet_counts_every_packet_trimmed() {
        // 34 full packets and a flow's short last packet: an arrival must
        // trim both the short one and the full one before it, and each
        // trimmed packet will be NACKed and resent.
        let mut q = TrimQueue::default();
        for s in 0..35 {
            let p = if s < 34 { data(s) } else { sized(s, 1000) };
            q.admit_data(p, CAP, 64, || 0.0);
        }
        let got = q.admit_data(data(35), CAP, 64, || 0.7);
        let want = Admit::QueuedTrimmedNewest {
            trimmed: 2,
            dropped: 0,
        };
        assert_eq!((got, q.data_bytes, q.hdr_bytes), (want, 34 * 4160, 128));
        let hdrs: Vec<u32> = (0..2)
            .map(|_| {
                let h = q.start().unwrap();
                q.finish();
                h.seq
            })
            .collect();
        assert_eq!(hdrs, vec![34, 33]);
        q.check(CAP).unwrap();
    }

    #[test]
    fn the_packet_on_the_wire_is_never_trimmed() {
        // A bound below two frames: the packet being sent is not "queued",
        // and trimming the short one behind it would not make room, so
        // only the arrival is trimmed.
        let cap = 6000;
        let mut q = TrimQueue::default();
        q.admit_data(data(0), cap, 64, || 0.0);
        q.start();
        assert_eq!(q.admit_data(sized(1, 1000), cap, 64, || 0.0), Admit::Queued);
        assert_eq!(
            q.admit_data(data(2), cap, 64, || 0.9),
            Admit::Trimmed { dropped: false }
        );
        assert_eq!((q.data_bytes, q.hdr_bytes), (5160, 64));
        q.check(cap).unwrap();
        assert_eq!(q.finish().seq, 0);
    }

    #[test]
    fn a_queue_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<TrimQueue>(), 128);
    }

    #[test]
    fn full_header_queue_drops() {
        let mut q = TrimQueue::default();
        let cap = 4160; // header queue: 8320 B = 130 headers
        let mut h = data(0);
        h.trim(64);
        for _ in 0..130 {
            assert!(q.admit_header(h, cap));
        }
        assert!(!q.admit_header(h, cap));
    }
}

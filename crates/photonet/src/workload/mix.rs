//! Several Poisson streams merged into one arrival stream (`workload.overlay`:
//! e.g. incasts on top of Hadoop flows, NegotiaToR §4.4's Fig. 13(a)).

use super::Generator;
use crate::flow::Flow;
use crate::units::SimTime;
use std::iter::Peekable;

/// Streams merged by start time (ties: the lower stream first), so the
/// engine sees one time-ordered stream; flow ids are renumbered densely in
/// that order, and each flow's stream is remembered for the summary.
pub struct Mixed {
    streams: Vec<Peekable<Generator>>,
    /// The stream of each flow id taken so far.
    tags: Vec<u8>,
}

impl Mixed {
    /// At most 256 streams (tags are one byte).
    pub fn new(streams: Vec<Generator>) -> Mixed {
        assert!(streams.len() <= 256, "at most 256 streams");
        Mixed {
            streams: streams.into_iter().map(Iterator::peekable).collect(),
            tags: Vec::new(),
        }
    }

    /// The stream whose next flow starts first, and that start.
    fn first(&mut self) -> Option<(SimTime, usize)> {
        let mut best: Option<(SimTime, usize)> = None;
        for (i, s) in self.streams.iter_mut().enumerate() {
            if let Some(f) = s.peek() {
                if best.is_none_or(|(t, _)| f.start < t) {
                    best = Some((f.start, i));
                }
            }
        }
        best
    }

    /// The start time of the next flow.
    pub fn peek(&mut self) -> Option<SimTime> {
        self.first().map(|b| b.0)
    }

    /// Takes the next flow (ids dense, in the order taken).
    pub fn pop(&mut self) -> Option<Flow> {
        let (_, i) = self.first()?;
        let mut f = self.streams[i].next()?;
        f.id = self.tags.len() as u32;
        self.tags.push(i as u8);
        Some(f)
    }

    /// The stream of each flow taken so far, by flow id.
    pub fn tags(&self) -> &[u8] {
        &self.tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStreams;
    use crate::units::Rate;
    use crate::workload::{Pattern, SizeDist};

    fn gen(load: f64, pattern: Pattern, seed: u64) -> Generator {
        let sizes = SizeDist::Fixed(10_000);
        Generator::new(
            16,
            Rate::gbps(10),
            load,
            pattern,
            sizes,
            &RngStreams::new(seed),
        )
    }

    #[test]
    fn merge_is_time_ordered_keeps_each_stream_and_renumbers() {
        let incast = Pattern::Incast {
            degree: 4,
            size: 1000,
        };
        let (a, b): (Vec<Flow>, Vec<Flow>) = (
            gen(0.5, Pattern::Uniform, 1).take(300).collect(),
            gen(0.1, incast.clone(), 2).take(300).collect(),
        );
        let mut m = Mixed::new(vec![gen(0.5, Pattern::Uniform, 1), gen(0.1, incast, 2)]);
        let mut got = Vec::new();
        while got.len() < 400 {
            let t = m.peek().unwrap();
            let f = m.pop().unwrap();
            assert_eq!(f.start, t);
            got.push(f);
        }
        assert!(got.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(got.iter().enumerate().all(|(i, f)| f.id == i as u32));
        // Each stream's flows are its generator's, in its order (ids aside).
        let tags = m.tags();
        for (k, own) in [a, b].iter().enumerate() {
            let mine: Vec<_> = (0..got.len()).filter(|&i| tags[i] == k as u8).collect();
            assert!(!mine.is_empty());
            for (j, &i) in mine.iter().enumerate() {
                let (x, y) = (got[i], own[j]);
                assert_eq!(
                    (x.src, x.dst, x.bytes, x.start),
                    (y.src, y.dst, y.bytes, y.start)
                );
            }
        }
    }
}

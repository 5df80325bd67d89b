//! `Recorder::deliver_point` / `CoarseSeries::add_point` (the division-free
//! point path of packet-level fabrics) against their oracle, the span path
//! with t0 = t1: the same bins, bin width, tallies and violations.

use photonet::flow::Flow;
use photonet::recorder::{CoarseSeries, Recorder, TimeSeries};
use photonet::units::SimTime;
use proptest::prelude::*;

fn bins(c: &CoarseSeries) -> Vec<f64> {
    let w = c.bin().0;
    (0..CoarseSeries::MAX_BINS as u64)
        .map(|i| c.bytes_between(SimTime(i * w), SimTime((i + 1) * w)))
        .collect()
}

fn flow(id: u32, bytes: u64) -> Flow {
    Flow::new(id, 0, 1, bytes, SimTime::ZERO)
}

/// Times spread over many orders of magnitude, so the bins widen often.
fn time() -> impl Strategy<Value = u64> {
    (0u32..45, any::<u64>()).prop_map(|(e, x)| x % (1u64 << e).max(1))
}

proptest! {
    #[test]
    fn add_point_is_add_span_at_one_time(points in prop::collection::vec((time(), 0u64..1_000_000), 0..300)) {
        let (mut a, mut b) = (CoarseSeries::new(), CoarseSeries::new());
        for &(t, bytes) in &points {
            a.add_span(SimTime(t), SimTime(t), bytes);
            b.add_point(SimTime(t), bytes);
        }
        prop_assert_eq!(a.bin(), b.bin());
        prop_assert_eq!(bins(&a), bins(&b));
    }

    #[test]
    fn deliver_point_is_deliver(
        sizes in prop::collection::vec(1u64..5_000, 1..8),
        points in prop::collection::vec((0usize..8, time(), 1u64..2_000), 0..200),
        series in any::<bool>(),
    ) {
        let ts = || series.then(|| TimeSeries::new(SimTime::ms(1)));
        let (mut a, mut b) = (Recorder::new(ts()), Recorder::new(ts()));
        for (i, &s) in sizes.iter().enumerate() {
            a.register(&flow(i as u32, s));
            b.register(&flow(i as u32, s));
        }
        for &(f, t, bytes) in &points {
            // Some flows get more than their size: the violation is kept too.
            let id = (f % sizes.len()) as u32;
            a.deliver(id, SimTime(t), bytes);
            b.deliver_point(id, SimTime(t), bytes);
        }
        for id in 0..sizes.len() as u32 {
            prop_assert_eq!(a.delivered(id), b.delivered(id));
        }
        prop_assert_eq!(a.violation_count(), b.violation_count());
        prop_assert_eq!(a.violations(), b.violations());
        prop_assert_eq!(bins(a.coarse()), bins(b.coarse()));
        prop_assert_eq!(
            a.series().map(|s| (s.bytes.clone(), s.bin)),
            b.series().map(|s| (s.bytes.clone(), s.bin))
        );
    }
}

#[test]
fn add_point_hand_worked() {
    let mut c = CoarseSeries::new();
    // 1 ns bins: 2,500 ps is in bin 2.
    c.add_point(SimTime(2_500), 7);
    assert_eq!(c.bin(), SimTime::ns(1));
    assert_eq!(c.bytes_between(SimTime(2_000), SimTime(3_000)), 7.0);
    // 1,024 ns is past the 1,024 bins of 1 ns: the bins double to 2 ns, and
    // the earlier point now shares bin 1 ([2, 4) ns).
    c.add_point(SimTime::ns(1_024), 5);
    assert_eq!(c.bin(), SimTime::ns(2));
    assert_eq!(c.bytes_between(SimTime(2_000), SimTime(4_000)), 7.0);
    assert_eq!(c.bytes_between(SimTime::ns(1_024), SimTime::ns(1_026)), 5.0);
    c.add_point(SimTime(0), 0);
    assert_eq!(c.bytes_between(SimTime::ZERO, SimTime::ms(1)), 12.0);
}

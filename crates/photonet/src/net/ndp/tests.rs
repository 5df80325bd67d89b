//! Unit tests of the pieces (end-to-end tests: `tests/ndp.rs`).

use super::*;

#[test]
fn path_cycle_visits_every_path_once_per_cycle() {
    let mut rng = RngStreams::new(1).stream("t");
    let mut c = PathCycle::new(9, &mut rng);
    for _ in 0..4 {
        let mut seen: Vec<u32> = (0..9).map(|_| c.next(&mut rng)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..9).collect::<Vec<_>>());
    }
    let mut one = PathCycle::new(1, &mut rng);
    assert_eq!(one.next(&mut rng), 0);
}

#[test]
fn an_event_is_one_cache_line_with_its_time() {
    assert!(std::mem::size_of::<Ev>() <= 56);
}

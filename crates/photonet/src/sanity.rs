//! Physical sanity, checked after every run (not only under `--check`): no
//! flow finishes faster than a lone flow could in an idle fabric, none after
//! the run's end, the hosts deliver no more than they can send, and a drained
//! run that stopped before its limit left no flow pending. A run that breaks
//! one is an error naming the violation, never a result.
//!
//! One pass over the flow table; the floor is computed once per run from the
//! fabric's own lone-flow bound (the conformance suite's
//! [`FabricSpec::lone_flow_fct`]).

use crate::config::Config;
use crate::fabric::registry::{FabricSpec, LoneFlow};
use crate::recorder::FlowRecords;
use crate::units::{Rate, SimTime};

/// Why a run's output cannot be trusted (a stall, or a physical-sanity
/// violation). The message names the violation, the flow and the numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError(pub String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// The least FCT a flow may have: the larger of `bytes / rate` and
/// `latency`, the least lone-flow minimum the fabric declares for 1 B over
/// any pair (a lone flow's minimum grows with its size). Their sum would be
/// tighter but is not a floor of cell-based fabrics: a flow of one cell takes
/// the 1-byte flow's slot, not a byte's time more. `rate` is None for a
/// fabric whose declared minimum is below bytes/R (the documented exception:
/// `ideal` with infinite bandwidth, a reference and not a network); its
/// goodput is not bounded by N·R either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floor {
    pub rate: Option<Rate>,
    pub latency: SimTime,
}

/// A size large enough that any finite-rate fabric's lone-flow minimum
/// includes its transmission at R.
const PROBE_BYTES: u64 = 1_000_000;

impl Floor {
    /// The floor of `config`'s fabric, over a sample of pairs from both ends
    /// of the host range (nearest and farthest neighbours). A pair the bound
    /// refuses is left out.
    pub fn of(
        config: &Config,
        spec: &FabricSpec,
        variant: &crate::fabric::registry::Variant,
        hosts: u32,
    ) -> Floor {
        let r = config.topology.host_rate();
        let Ok(table) = config.fabric_table(spec) else {
            return Floor {
                rate: Some(r),
                latency: SimTime::ZERO,
            };
        };
        let ctx = config.build_context();
        let mut rate = Some(r);
        let near = 0..hosts.min(17);
        let far = hosts.saturating_sub(16)..hosts;
        let mut latency: Option<SimTime> = None;
        for src in [0, hosts.saturating_sub(1)] {
            for dst in near.clone().chain(far.clone()) {
                if src == dst {
                    continue;
                }
                let flow = |bytes| LoneFlow::new(variant, &ctx, src, dst, bytes);
                if let Ok(b) = spec.lone_flow_fct(&table, &flow(1)) {
                    latency = Some(latency.map_or(b.min, |m| m.min(b.min)));
                }
                if rate.is_some() && src == 0 && dst == 1 {
                    let big = spec.lone_flow_fct(&table, &flow(PROBE_BYTES));
                    if big.is_ok_and(|b| b.min < r.tx_time(PROBE_BYTES)) {
                        rate = None;
                    }
                }
            }
        }
        Floor {
            rate,
            latency: latency.unwrap_or(SimTime::ZERO),
        }
    }

    /// The least FCT of a `bytes`-byte flow.
    #[inline]
    pub fn fct(&self, bytes: u64) -> SimTime {
        self.transmission(bytes).max(self.latency)
    }

    fn transmission(&self, bytes: u64) -> SimTime {
        self.rate.map_or(SimTime::ZERO, |r| r.tx_time(bytes))
    }
}

/// What the checks need besides the flow table.
pub struct Run<'a> {
    pub records: &'a FlowRecords,
    pub end: SimTime,
    pub floor: Floor,
    /// Goodput over the run, normalised by N·R.
    pub goodput: f64,
    pub drain: bool,
    pub drain_limit: Option<SimTime>,
    pub cancelled: bool,
}

/// At most this many violations are named in the error (the count is exact).
const NAMED: usize = 5;

/// Checks a finished run: Err naming the violations.
pub fn check(run: &Run) -> Result<(), RunError> {
    let r = run.records;
    let mut found: Vec<String> = Vec::new();
    let mut count = 0u64;
    let mut pending = 0u64;
    let mut note = |msg: String, found: &mut Vec<String>| {
        count += 1;
        if found.len() < NAMED {
            found.push(msg);
        }
    };
    for i in 0..r.len() {
        let f = r.finish_ps[i];
        if f == FlowRecords::UNFINISHED {
            pending += 1;
            continue;
        }
        let (start, bytes) = (r.start_ps[i], r.bytes[i]);
        let floor = run.floor.fct(bytes);
        if f < start.saturating_add(floor.0) {
            note(
                format!(
                    "flow {i} ({bytes} B, {} -> {}) finished in {}, below the fabric's lone-flow floor {} (the larger of {} at R and the {} of a 1-byte flow)",
                    r.src[i],
                    r.dst[i],
                    SimTime(f.saturating_sub(start)),
                    floor,
                    run.floor.transmission(bytes),
                    run.floor.latency
                ),
                &mut found,
            );
        }
        if f > run.end.0 {
            note(
                format!(
                    "flow {i} completed at {}, after the run's end {}",
                    SimTime(f),
                    run.end
                ),
                &mut found,
            );
        }
    }
    if run.floor.rate.is_some() && run.goodput > 1.0 + 1e-9 {
        note(
            format!(
                "goodput {} exceeds N·R: the hosts cannot send that much",
                run.goodput
            ),
            &mut found,
        );
    }
    if run.drain && pending > 0 && !run.cancelled {
        let last_arrival = r.start_ps.last().copied().unwrap_or(0);
        let limit_hit = run
            .drain_limit
            .is_some_and(|d| run.end.0 >= last_arrival.saturating_add(d.0));
        if !limit_hit {
            note(
                format!(
                    "{pending} flows left pending when the drain ended at {} before its limit (the fabric had nothing left to do)",
                    run.end
                ),
                &mut found,
            );
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let more = count - found.len() as u64;
    let tail = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    Err(RunError(format!(
        "physically impossible result: {}{tail}",
        found.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three flows of 1,000 B at 8 Gb/s (1 µs each) with a 2 µs floor.
    fn records(finish: [u64; 3]) -> FlowRecords {
        FlowRecords {
            src: vec![0, 1, 2],
            dst: vec![1, 2, 0],
            bytes: vec![1_000; 3],
            start_ps: vec![0, 1_000_000, 2_000_000],
            finish_ps: finish.to_vec(),
            delivered: vec![1_000; 3],
        }
    }

    fn run(r: &FlowRecords, end: u64, goodput: f64, drain: bool) -> Result<(), RunError> {
        check(&Run {
            records: r,
            end: SimTime(end),
            floor: Floor {
                rate: Some(Rate(8_000_000_000)),
                latency: SimTime::us(2),
            },
            goodput,
            drain,
            drain_limit: None,
            cancelled: false,
        })
    }

    #[test]
    fn each_violation_is_named() {
        let ok = records([2_000_000, 3_000_000, 4_000_000]);
        assert_eq!(run(&ok, 4_000_000, 0.5, true), Ok(()));
        let fast = records([2_000_000, 2_999_999, 4_000_000]);
        let e = run(&fast, 4_000_000, 0.5, true).unwrap_err().0;
        assert!(
            e.contains("flow 1 (1000 B, 1 -> 2)") && e.contains("below"),
            "{e}"
        );
        let late = run(&ok, 3_500_000, 0.5, false).unwrap_err().0;
        assert!(
            late.contains("flow 2 completed at 4us, after the run's end"),
            "{late}"
        );
        let much = run(&ok, 4_000_000, 1.01, false).unwrap_err().0;
        assert!(much.contains("goodput 1.01 exceeds N·R"), "{much}");
        let u = FlowRecords::UNFINISHED;
        let left = records([2_000_000, u, u]);
        let e = run(&left, 2_000_000, 0.5, true).unwrap_err().0;
        assert!(e.contains("2 flows left pending"), "{e}");
        // Without drain unfinished flows are censored, not wrong.
        assert_eq!(run(&left, 2_000_000, 0.5, false), Ok(()));
    }

    /// The floor is below every fabric's declared lone-flow minimum, for
    /// pairs and sizes beyond those it was computed from.
    #[test]
    fn the_floor_is_below_every_declared_minimum() {
        for (spec, v) in crate::fabric::registry::variants() {
            let mut c = Config {
                fabric: v.name.into(),
                ..Config::default()
            };
            c.topology.racks = 4;
            c.topology.servers_per_rack = 2;
            c.topology.uplinks = 2;
            let floor = Floor::of(&c, spec, v, 8);
            let table = c.fabric_table(spec).unwrap();
            for (src, dst) in [(0u32, 1u32), (0, 7), (5, 2), (3, 4)] {
                for bytes in [1u64, 100, 562, 1_125, 1_500, 40_000, 1_000_000] {
                    let ctx = c.build_context();
                    let f = LoneFlow::new(v, &ctx, src, dst, bytes);
                    let b = spec.lone_flow_fct(&table, &f).unwrap();
                    assert!(
                        floor.fct(bytes) <= b.min,
                        "{}: {bytes} B {src}->{dst}: floor {} above {}",
                        v.name,
                        floor.fct(bytes),
                        b.min
                    );
                }
            }
        }
    }
}

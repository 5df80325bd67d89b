//! htsim's connection-matrix files (`.cm`) as a dependent workload, so a
//! workload moves between htsim and photonet unchanged.
//!
//! The format, as htsim's loader reads it (csg-htsim,
//! `sim/datacenter/connection_matrix.cpp`; this is our own reader):
//! - header lines `Nodes N`, `Connections C`, optionally `Triggers T` and
//!   `Failures F`; `#` starts a comment line;
//! - a flow per line: `S->D id I start T size B`, where `T` is in
//!   picoseconds, or `trigger X` instead of `start` (the flow starts when
//!   trigger X fires); `send_done_trigger X` / `recv_done_trigger X` make a
//!   flow fire trigger X when it completes; `prio P` is accepted and has no
//!   effect here;
//! - a trigger per line: `trigger id X oneshot | multishot | barrier count K`.
//!
//! Triggers map onto photonet's dependencies (a flow starts when all its
//! dependencies have completed), which express an AND: a `barrier` whose
//! count equals the flows that signal it, or a `oneshot` that one flow
//! signals. A trigger that would fire on the first of several flows (a
//! `oneshot` with several signallers, a `barrier` counting fewer than signal
//! it) is an OR photonet cannot express, a `barrier` counting more never
//! fires, and a `multishot` restarts flows; all are refused with the line.
//! photonet has one completion per flow, so `send_done_trigger` and
//! `recv_done_trigger` both fire when the flow completes. Link failures
//! (`failure` lines) are refused. Sizes are taken as given (htsim rounds a
//! flow up to whole packets on the wire).

use super::dag::{Dag, Node};
use crate::units::SimTime;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    OneShot,
    MultiShot,
    Barrier(u32),
}

struct Flow {
    line: usize,
    id: u32,
    src: u32,
    dst: u32,
    bytes: u64,
    start: Option<SimTime>,
    waits_for: Option<u32>,
    signals: Vec<u32>,
}

fn number<T: std::str::FromStr>(line: usize, what: &str, v: Option<&str>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("line {line}: `{what}` needs a value"))?;
    v.parse()
        .map_err(|_| format!("line {line}: {what} {v:?} is not a non-negative integer"))
}

/// Parses a `.cm` file for a fabric of `hosts` endpoints into a dependency
/// graph and a label per flow (`line L (id I)`); errors name the line.
pub fn parse_cm(text: &str, hosts: u32) -> Result<(Dag, Vec<String>), String> {
    let mut nodes: Option<u32> = None;
    let mut declared: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    let mut flows: Vec<Flow> = Vec::new();
    let mut triggers: BTreeMap<u32, (usize, Kind)> = BTreeMap::new();
    let mut trigger_lines = 0u64;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let mut tok = raw.split_whitespace();
        let Some(first) = tok.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        match first {
            "Nodes" | "Connections" | "Triggers" | "Failures" => {
                let v: u64 = number(ln, first, tok.next())?;
                if first == "Nodes" {
                    if v > hosts as u64 {
                        return Err(format!(
                            "line {ln}: Nodes {v}: the fabric has {hosts} endpoints"
                        ));
                    }
                    nodes = Some(v as u32);
                }
                declared.insert(first, (ln, v));
            }
            "failure" => {
                return Err(format!(
                    "line {ln}: link failures in a connection matrix are not supported; \
                     set the fabric's own failure keys instead"
                ))
            }
            "trigger" => {
                trigger_lines += 1;
                let (mut id, mut kind, mut count) = (None, None, None);
                while let Some(t) = tok.next() {
                    match t {
                        "id" => id = Some(number::<u32>(ln, "id", tok.next())?),
                        "count" => count = Some(number::<u32>(ln, "count", tok.next())?),
                        "oneshot" | "multishot" | "barrier" if kind.is_some() => {
                            return Err(format!("line {ln}: a trigger has one type"))
                        }
                        "oneshot" => kind = Some(Kind::OneShot),
                        "multishot" => kind = Some(Kind::MultiShot),
                        "barrier" => kind = Some(Kind::Barrier(0)),
                        other => return Err(format!("line {ln}: unknown trigger word {other:?}")),
                    }
                }
                let id = id
                    .filter(|&x| x != 0)
                    .ok_or_else(|| format!("line {ln}: a trigger needs a non-zero `id`"))?;
                let kind = match kind {
                    None => {
                        return Err(format!(
                            "line {ln}: trigger {id} has no type (oneshot, multishot or barrier)"
                        ))
                    }
                    Some(Kind::Barrier(_)) => Kind::Barrier(count.ok_or_else(|| {
                        format!("line {ln}: barrier trigger {id} needs a `count`")
                    })?),
                    Some(k) => k,
                };
                if let Some((prev, _)) = triggers.insert(id, (ln, kind)) {
                    return Err(format!(
                        "line {ln}: trigger {id} is defined again (first on line {prev})"
                    ));
                }
            }
            conn if conn.contains("->") => {
                let (s, d) = conn.split_once("->").expect("contains ->");
                let src: u32 = number(ln, "source", Some(s))?;
                let dst: u32 = number(ln, "destination", Some(d))?;
                let mut f = Flow {
                    line: ln,
                    id: 0,
                    src,
                    dst,
                    bytes: 0,
                    start: None,
                    waits_for: None,
                    signals: Vec::new(),
                };
                let mut size = None;
                while let Some(t) = tok.next() {
                    match t {
                        "id" => f.id = number(ln, "id", tok.next())?,
                        "size" => size = Some(number::<u64>(ln, "size", tok.next())?),
                        "start" => {
                            let v = tok
                                .next()
                                .ok_or_else(|| format!("line {ln}: `start` needs a value"))?;
                            let ps: f64 = v
                                .parse()
                                .ok()
                                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                                .ok_or_else(|| {
                                    format!("line {ln}: start {v:?} is not a time in picoseconds")
                                })?;
                            if ps >= crate::units::limits::TIME_PS as f64 {
                                return Err(format!("line {ln}: start {v} ps is beyond the longest run photonet simulates"));
                            }
                            f.start = Some(SimTime(ps.round() as u64));
                        }
                        "trigger" => f.waits_for = Some(number(ln, "trigger", tok.next())?),
                        "send_done_trigger" | "recv_done_trigger" => {
                            f.signals.push(number(ln, t, tok.next())?)
                        }
                        "prio" => {
                            number::<i64>(ln, "prio", tok.next())?;
                        }
                        other => {
                            return Err(format!("line {ln}: unknown word {other:?} in a flow"))
                        }
                    }
                }
                if f.id == 0 {
                    return Err(format!("line {ln}: a flow needs a non-zero `id`"));
                }
                f.bytes = size.ok_or_else(|| format!("line {ln}: flow {} has no `size`", f.id))?;
                match (f.start, f.waits_for) {
                    (None, None) => {
                        return Err(format!(
                            "line {ln}: flow {} has neither `start` nor `trigger`",
                            f.id
                        ))
                    }
                    (Some(_), Some(_)) => {
                        return Err(format!(
                            "line {ln}: flow {} has both `start` and `trigger`",
                            f.id
                        ))
                    }
                    _ => {}
                }
                flows.push(f);
            }
            other => return Err(format!("line {ln}: unknown line starting {other:?}")),
        }
    }
    let n = nodes.ok_or("no `Nodes N` line")?;
    for (what, actual) in [
        ("Connections", flows.len() as u64),
        ("Triggers", trigger_lines),
    ] {
        if let Some(&(ln, v)) = declared.get(what) {
            if v != actual {
                return Err(format!("line {ln}: {what} {v}, but the file has {actual}"));
            }
        }
    }
    let mut index = BTreeMap::new();
    for (k, f) in flows.iter().enumerate() {
        for (what, h) in [("source", f.src), ("destination", f.dst)] {
            if h >= n {
                return Err(format!(
                    "line {}: {what} {h} is outside the matrix's {n} nodes (0..{})",
                    f.line,
                    n - 1
                ));
            }
        }
        if let Some(prev) = index.insert(f.id, k) {
            return Err(format!(
                "line {}: flow id {} is used again (first on line {})",
                f.line, f.id, flows[prev].line
            ));
        }
    }
    // Who fires each trigger.
    let mut signallers: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (k, f) in flows.iter().enumerate() {
        for &t in &f.signals {
            if !triggers.contains_key(&t) {
                return Err(format!(
                    "line {}: flow {} fires trigger {t}, which no `trigger` line defines",
                    f.line, f.id
                ));
            }
            signallers.entry(t).or_default().push(k as u32);
        }
    }
    let mut dag = Dag::new();
    let mut labels = Vec::with_capacity(flows.len());
    for f in &flows {
        let deps: Vec<u32> = match f.waits_for {
            None => Vec::new(),
            Some(t) => {
                let Some(&(tl, kind)) = triggers.get(&t) else {
                    return Err(format!(
                        "line {}: flow {} waits for trigger {t}, which no `trigger` line defines",
                        f.line, f.id
                    ));
                };
                let by = signallers.get(&t).cloned().unwrap_or_default();
                let k = by.len();
                let ok = match kind {
                    Kind::OneShot => k == 1,
                    Kind::Barrier(c) => c as usize == k,
                    Kind::MultiShot => false,
                };
                if k == 0 {
                    return Err(format!("line {}: flow {} waits for trigger {t} (line {tl}), which no flow fires: it would never start", f.line, f.id));
                }
                if !ok {
                    let why = match kind {
                        Kind::MultiShot => "a multishot trigger restarts flows each time it fires".to_string(),
                        Kind::OneShot => format!("a oneshot trigger fired by {k} flows starts on the first of them (an OR)"),
                        Kind::Barrier(c) if (c as usize) < k => format!("a barrier counting {c} of the {k} flows that fire it starts on the first {c} (an OR)"),
                        Kind::Barrier(c) => format!("a barrier counting {c} with only {k} flows firing it never fires"),
                    };
                    return Err(format!(
                        "line {tl}: trigger {t}: {why}; photonet starts a flow when all its dependencies have completed"
                    ));
                }
                by
            }
        };
        dag.push(
            Node {
                src: f.src,
                dst: f.dst,
                bytes: f.bytes,
                earliest: f.start.unwrap_or(SimTime::ZERO),
                delay: SimTime::ZERO,
                instance: labels.len() as u32,
            },
            &deps,
        );
        labels.push(format!("line {} (flow id {})", f.line, f.id));
    }
    if dag.is_empty() {
        return Err("the matrix has no flows".into());
    }
    Ok((dag, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "Nodes 8\nConnections 3\nTriggers 1\n";

    #[test]
    fn flows_and_a_barrier_become_a_dependency_graph() {
        let text = format!(
            "{HEAD}0->1 id 1 start 1000 size 4096 send_done_trigger 7\n\
             # a comment\n\
             2->1 id 2 start 2500.0 size 8192 recv_done_trigger 7\n\
             1->3 id 3 trigger 7 size 100 prio 3\n\
             trigger id 7 barrier count 2\n"
        );
        let (dag, labels) = parse_cm(&text, 8).unwrap();
        assert_eq!(dag.len(), 3);
        assert_eq!(dag.nodes[0].earliest, SimTime(1000));
        assert_eq!(dag.nodes[1].earliest, SimTime(2500));
        assert_eq!(
            (dag.nodes[1].src, dag.nodes[1].dst, dag.nodes[1].bytes),
            (2, 1, 8192)
        );
        assert_eq!(dag.deps_of(2), &[0, 1]);
        assert!(dag.deps_of(0).is_empty());
        assert_eq!(labels[2], "line 7 (flow id 3)");
        dag.check(8, &|i| labels[i as usize].clone()).unwrap();
    }

    #[test]
    fn the_reference_matrices_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/validation/htsim");
        for (case, n, flows) in [
            ("perm_128", 128, 128),
            ("incast_128", 128, 16),
            ("mixed_128", 128, 2000),
        ] {
            let p = dir.join(case).join(format!("{case}.cm"));
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            }; // not beside every clone
            let (dag, _) = parse_cm(&text, n).unwrap();
            assert_eq!(dag.len(), flows, "{case}");
        }
    }

    /// Each malformed file is refused with its line and why.
    #[test]
    fn malformed_matrices_are_refused_with_the_line() {
        let cases: &[(&str, &str)] = &[
            ("Nodes 8\n0->1 id 1 start 0 size\n", "line 2: `size` needs a value"),
            ("Nodes 8\n0->9 id 1 start 0 size 10\n", "line 2: destination 9 is outside"),
            ("Nodes 80\n", "line 1: Nodes 80: the fabric has 8"),
            ("Nodes 8\n0->1 id 1 size 10\n", "line 2: flow 1 has neither"),
            ("Nodes 8\n0->1 id 1 start 5 trigger 2 size 10\n", "both `start` and `trigger`"),
            ("Nodes 8\n0->1 id 1 trigger 4 size 10\n", "line 2: flow 1 waits for trigger 4, which no `trigger` line defines"),
            ("Nodes 8\n0->1 id 1 trigger 4 size 10\ntrigger id 4 oneshot\n", "which no flow fires"),
            ("Nodes 8\n0->1 id 1 start 0 size 10 send_done_trigger 4\n2->3 id 2 start 0 size 10 send_done_trigger 4\n4->5 id 3 trigger 4 size 10\ntrigger id 4 oneshot\n", "line 5: trigger 4: a oneshot trigger fired by 2 flows"),
            ("Nodes 8\n0->1 id 1 start 0 size 10 send_done_trigger 4\n4->5 id 3 trigger 4 size 10\ntrigger id 4 barrier count 3\n", "never fires"),
            ("Nodes 8\n0->1 id 1 start 0 size 10 send_done_trigger 4\n4->5 id 3 trigger 4 size 10\ntrigger id 4 multishot\n", "multishot"),
            ("Nodes 8\nConnections 2\n0->1 id 1 start 0 size 10\n", "line 2: Connections 2, but the file has 1"),
            ("Nodes 8\n0->1 id 1 start 0 size 10\n1->2 id 1 start 0 size 10\n", "line 3: flow id 1 is used again (first on line 2)"),
            ("Nodes 8\n0->1 id 1 start 0 size 10 colour red\n", "unknown word \"colour\""),
            ("Nodes 8\nfailure switch_type TOR switch_id 0 link_id 1\n", "line 2: link failures"),
            ("Nodes 8\n0->1 id 1 start -5 size 10\n", "not a time in picoseconds"),
            ("0->1 id 1 start 0 size 10\n", "no `Nodes N` line"),
        ];
        for (text, want) in cases {
            let e = parse_cm(text, 8)
                .err()
                .unwrap_or_else(|| panic!("accepted: {text}"));
            assert!(e.contains(want), "{text}\n-> {e}\nwanted {want}");
        }
    }

    /// Triggers in a cycle parse, and the graph check names the cycle.
    #[test]
    fn a_cycle_of_triggers_is_found_by_the_graph_check() {
        let text = "Nodes 4\n\
                    0->1 id 1 trigger 1 size 10 send_done_trigger 2\n\
                    1->2 id 2 trigger 2 size 10 send_done_trigger 1\n\
                    trigger id 1 oneshot\ntrigger id 2 oneshot\n";
        let (dag, labels) = parse_cm(text, 4).unwrap();
        let e = dag.check(4, &|i| labels[i as usize].clone()).unwrap_err();
        assert!(e.contains("cycle") && e.contains("line "), "{e}");
    }
}

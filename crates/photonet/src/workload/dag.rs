//! Dependent workloads as data: flows that start when a set of other flows
//! have completed, plus a delay (compute time). The run loop releases them
//! (the run-layer module `dependent`); this module only describes and checks them.
//!
//! A node starts at `max(earliest, last dependency's finish + delay)`; a node
//! without dependencies starts at `earliest`. Dependencies are stored flat
//! (compressed rows): node i's are `deps[dep_start[i]..dep_start[i + 1]]`.

use crate::flow::HostId;
use crate::units::{ByteSize, SimTime};

/// One flow of a dependent workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub src: HostId,
    pub dst: HostId,
    pub bytes: u64,
    /// Not before this time.
    pub earliest: SimTime,
    /// After the last dependency completed.
    pub delay: SimTime,
    /// Which collective instance (job × iteration) the node belongs to.
    pub instance: u32,
}

/// A dependency graph of flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dag {
    pub nodes: Vec<Node>,
    pub dep_start: Vec<u32>,
    pub deps: Vec<u32>,
}

impl Dag {
    pub fn new() -> Dag {
        Dag {
            nodes: Vec::new(),
            dep_start: vec![0],
            deps: Vec::new(),
        }
    }

    /// Adds a node depending on `deps` (indices of nodes, added before or
    /// after: `check` finds missing ones and cycles); returns its index.
    pub fn push(&mut self, node: Node, deps: &[u32]) -> u32 {
        self.nodes.push(node);
        self.deps.extend_from_slice(deps);
        self.dep_start.push(self.deps.len() as u32);
        (self.nodes.len() - 1) as u32
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn deps_of(&self, i: u32) -> &[u32] {
        &self.deps[self.dep_start[i as usize] as usize..self.dep_start[i as usize + 1] as usize]
    }

    /// Dependents of each node, compressed like `deps` (starts, indices).
    pub fn dependents(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.nodes.len();
        let mut count = vec![0u32; n + 1];
        for &d in &self.deps {
            count[d as usize + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut out = vec![0u32; self.deps.len()];
        for i in 0..n as u32 {
            for &d in self.deps_of(i) {
                out[fill[d as usize] as usize] = i;
                fill[d as usize] += 1;
            }
        }
        (count, out)
    }

    /// Refuses a dependency on a node that does not exist, on itself, a
    /// cycle, an endpoint outside `0..hosts`, a flow to itself or of no
    /// bytes: the message names the node (its `label`) and why.
    pub fn check(&self, hosts: u32, label: &dyn Fn(u32) -> String) -> Result<(), String> {
        let n = self.nodes.len() as u32;
        for (i, nd) in self.nodes.iter().enumerate() {
            let i = i as u32;
            for (what, h) in [("src", nd.src), ("dst", nd.dst)] {
                if h >= hosts {
                    return Err(format!(
                        "{}: {what} {h} is outside the fabric (endpoints 0..{})",
                        label(i),
                        hosts - 1
                    ));
                }
            }
            if nd.src == nd.dst {
                return Err(format!("{}: src = dst = {}", label(i), nd.src));
            }
            if nd.bytes == 0 {
                return Err(format!("{}: a flow must carry at least one byte", label(i)));
            }
            for &d in self.deps_of(i) {
                if d >= n {
                    return Err(format!(
                        "{}: depends on flow {} which does not exist",
                        label(i),
                        label(d)
                    ));
                }
                if d == i {
                    return Err(format!("{}: depends on itself", label(i)));
                }
            }
        }
        // Kahn's algorithm: whatever is never released lies on or behind a cycle.
        let (start, dependents) = self.dependents();
        let mut left: Vec<u32> = (0..n).map(|i| self.deps_of(i).len() as u32).collect();
        let mut ready: Vec<u32> = (0..n).filter(|&i| left[i as usize] == 0).collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &c in &dependents[start[i as usize] as usize..start[i as usize + 1] as usize] {
                left[c as usize] -= 1;
                if left[c as usize] == 0 {
                    ready.push(c);
                }
            }
        }
        if seen < n {
            let on = (0..n).find(|&i| left[i as usize] > 0).expect("unreleased");
            return Err(format!(
                "{}: a dependency cycle ({} flows can never start)",
                label(on),
                n - seen
            ));
        }
        Ok(())
    }
}

/// Reads a dependent workload from CSV text with the header
/// `id,src,dst,bytes,start,delay,deps`: `id` any distinct name, `bytes` an
/// integer or a size with a unit, `start` the earliest start and `delay` the
/// gap after the last dependency (durations with units, `0` allowed), and
/// `deps` the ids it waits for separated by spaces (empty: none). Every row
/// is one collective instance of its own for the metrics.
pub fn parse_dag(text: &str) -> Result<(Dag, Vec<String>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    const HEADER: [&str; 7] = ["id", "src", "dst", "bytes", "start", "delay", "deps"];
    let Some((_, header)) = lines.next() else {
        return Err(format!(
            "empty file: expected a header `{}`",
            HEADER.join(",")
        ));
    };
    let cols: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    if cols != HEADER {
        return Err(format!(
            "header {header:?}: expected `{}`",
            HEADER.join(",")
        ));
    }
    let mut rows = Vec::new();
    let mut index = std::collections::BTreeMap::new();
    for (i, line) in lines {
        let ln = i + 1;
        let f: Vec<&str> = line.split(',').map(|c| c.trim()).collect();
        if f.len() != 7 {
            return Err(format!("line {ln}: {line:?}: expected 7 columns"));
        }
        let id = f[0].to_string();
        if index.insert(id.clone(), rows.len() as u32).is_some() {
            return Err(format!("line {ln}: id {id:?} is given twice"));
        }
        let host = |name: &str, v: &str| -> Result<u32, String> {
            v.parse()
                .map_err(|_| format!("line {ln}: {name} {v:?} is not an endpoint index"))
        };
        let bytes = match f[3].parse::<u64>() {
            Ok(b) => b,
            Err(_) => {
                ByteSize::parse(f[3])
                    .map_err(|e| format!("line {ln}: bytes {:?}: {e}", f[3]))?
                    .0
            }
        };
        let time = |name: &str, v: &str| -> Result<SimTime, String> {
            if v == "0" || v.is_empty() {
                return Ok(SimTime::ZERO);
            }
            SimTime::parse(v).map_err(|e| format!("line {ln}: {name} {v:?}: {e}"))
        };
        let node = Node {
            src: host("src", f[1])?,
            dst: host("dst", f[2])?,
            bytes,
            earliest: time("start", f[4])?,
            delay: time("delay", f[5])?,
            instance: rows.len() as u32,
        };
        let deps: Vec<String> = f[6].split_whitespace().map(String::from).collect();
        rows.push((node, deps, ln));
    }
    let mut dag = Dag::new();
    let mut ids = Vec::with_capacity(rows.len());
    for (node, deps, ln) in rows {
        let mut d = Vec::with_capacity(deps.len());
        for name in deps {
            match index.get(&name) {
                Some(&j) => d.push(j),
                None => {
                    return Err(format!(
                        "line {ln}: deps: flow {name:?} does not exist (no row has that id)"
                    ))
                }
            }
        }
        dag.push(node, &d);
        ids.push(format!("line {ln}"));
    }
    Ok((dag, ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(src: u32, dst: u32) -> Node {
        Node {
            src,
            dst,
            bytes: 10,
            earliest: SimTime::ZERO,
            delay: SimTime::ZERO,
            instance: 0,
        }
    }

    #[test]
    fn missing_self_and_cyclic_dependencies_are_refused() {
        let label = |i: u32| format!("flow {i}");
        let mut d = Dag::new();
        d.push(node(0, 1), &[]);
        d.push(node(1, 2), &[0]);
        assert_eq!(d.check(3, &label), Ok(()));
        let mut m = d.clone();
        m.push(node(2, 0), &[7]);
        assert!(m
            .check(3, &label)
            .unwrap_err()
            .contains("flow 7 which does not exist"));
        let mut c = d.clone();
        c.push(node(2, 0), &[3]);
        c.push(node(0, 2), &[2]);
        let e = c.check(3, &label).unwrap_err();
        assert!(e.contains("cycle") && e.contains("2 flows"), "{e}");
        assert!(d.check(2, &label).unwrap_err().contains("dst 2 is outside"));
    }

    #[test]
    fn csv_rows_become_nodes() {
        let (d, _) = parse_dag(
            "id,src,dst,bytes,start,delay,deps\na,0,1,1KB,1us,0,\nb,1,0,5,0,2us,a\nc,1,2,5,0,0,a b\n",
        )
        .unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d.nodes[0].bytes, 1000);
        assert_eq!(d.nodes[0].earliest, SimTime::us(1));
        assert_eq!(d.nodes[1].delay, SimTime::us(2));
        assert_eq!(d.deps_of(2), &[0, 1]);
        let e = parse_dag("id,src,dst,bytes,start,delay,deps\na,0,1,5,0,0,zz\n").unwrap_err();
        assert!(e.contains("\"zz\" does not exist"), "{e}");
    }
}

//! Trace replay: a CSV with a header `src,dst,bytes,start`, one flow per line.
//! `bytes` is an integer or a size with a unit (`"64KB"`); `start` is a duration
//! with a unit (`"12.5us"`). Flows are replayed in start order (stable).

use crate::flow::Flow;
use crate::units::{limits, ByteSize, SimTime};
use std::path::Path;

/// Reads a trace for `hosts` endpoints; errors name the file, line, value and reason.
pub fn read_trace(path: &Path, hosts: u32) -> Result<Vec<Flow>, String> {
    let text = crate::files::read_text(path, "trace", crate::files::MAX_TRACE_BYTES)?;
    parse_trace(&text, hosts).map_err(|e| format!("trace {}: {e}", path.display()))
}

pub fn parse_trace(text: &str, hosts: u32) -> Result<Vec<Flow>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else {
        return Err("empty file: expected a header `src,dst,bytes,start`".into());
    };
    let cols: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    if cols != ["src", "dst", "bytes", "start"] {
        return Err(format!("header {header:?}: expected `src,dst,bytes,start`"));
    }
    let mut flows = Vec::new();
    for (i, line) in lines {
        let ln = i + 1;
        let f: Vec<&str> = line.split(',').map(|c| c.trim()).collect();
        if f.len() != 4 {
            return Err(format!("line {ln}: {line:?}: expected 4 columns"));
        }
        let host = |name: &str, v: &str| -> Result<u32, String> {
            let h: u32 = v
                .parse()
                .map_err(|_| format!("line {ln}: {name} = {v:?} is not a host index"))?;
            if h >= hosts {
                return Err(format!(
                    "line {ln}: {name} = {h}: the topology has hosts 0..{}",
                    hosts - 1
                ));
            }
            Ok(h)
        };
        let src = host("src", f[0])?;
        let dst = host("dst", f[1])?;
        if src == dst {
            return Err(format!(
                "line {ln}: src = dst = {src}: a flow must go to another host"
            ));
        }
        let bytes = match f[2].parse::<u64>() {
            Ok(b) if b > limits::BYTES => {
                return Err(format!(
                    "line {ln}: bytes = {b}: above the largest flow photonet accepts ({} B)",
                    limits::BYTES
                ))
            }
            Ok(b) => b,
            Err(_) => {
                ByteSize::parse(f[2])
                    .map_err(|e| format!("line {ln}: bytes: {e}"))?
                    .0
            }
        };
        if bytes == 0 {
            return Err(format!(
                "line {ln}: bytes = 0: a flow must carry at least one byte"
            ));
        }
        let start = SimTime::parse(f[3]).map_err(|e| format!("line {ln}: start: {e}"))?;
        flows.push(Flow {
            id: 0,
            src,
            dst,
            bytes,
            start,
        });
    }
    if flows.is_empty() {
        return Err("no flows after the header".into());
    }
    if flows.len() as u64 > u32::MAX as u64 {
        return Err(format!(
            "{} flows: at most {} (flows are numbered with 32 bits)",
            flows.len(),
            u32::MAX
        ));
    }
    flows.sort_by_key(|f| f.start);
    for (i, f) in flows.iter_mut().enumerate() {
        f.id = i as u32;
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_sorts() {
        let t = "src,dst,bytes,start\n1,2,100,2us\n0,3,64KB,1us\n";
        let f = parse_trace(t, 4).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].src, f[0].dst, f[0].bytes, f[0].start),
            (0, 3, 64_000, SimTime::us(1))
        );
        assert_eq!((f[1].id, f[1].bytes), (1, 100));
    }

    #[test]
    fn rejects_bad_lines_with_reasons() {
        let e = parse_trace("src,dst,bytes,start\n2,2,10,0ns\n", 4).unwrap_err();
        assert!(e.contains("line 2") && e.contains("src = dst = 2"), "{e}");
        let e = parse_trace("src,dst,bytes,start\n0,9,10,0ns\n", 4).unwrap_err();
        assert!(e.contains("dst = 9"), "{e}");
        let e = parse_trace("src,dst,bytes,start\n0,1,10,5\n", 4).unwrap_err();
        assert!(e.contains("start") && e.contains("missing unit"), "{e}");
        let e = parse_trace("a,b,c\n", 4).unwrap_err();
        assert!(e.contains("header"), "{e}");
        let e = parse_trace("src,dst,bytes,start\n0,1,0,1ns\n", 4).unwrap_err();
        assert!(e.contains("bytes = 0"), "{e}");
    }
}

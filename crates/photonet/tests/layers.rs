//! The layers of `lib.rs` hold: no module names (`crate::…`, in a `use` or a
//! path) a module of a layer above its own. The layers are read from
//! `lib.rs` itself: its `pub mod` lines grouped under `// N. …` comments.
//! Unit tests (a file's `#[cfg(test)] mod tests`, or a `tests.rs`) are not
//! scanned: they may drive a module with the run loop above it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Upward imports known and being removed, as (file under `src/`, module it
/// names). Each entry is a debt with an owner, not a permission.
const ALLOWED: &[(&str, &str)] = &[];

/// Top-level module → layer number, from `lib.rs`.
fn layers(lib: &str) -> BTreeMap<String, u32> {
    let mut layer = 0;
    let mut out = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// ") {
            if let Some((n, _)) = rest.split_once('.') {
                if let Ok(n) = n.parse() {
                    layer = n;
                }
            }
        } else if let Some(m) = line.strip_prefix("pub mod ") {
            assert!(
                layer > 0,
                "lib.rs: `{line}` before any `// N.` layer comment"
            );
            out.insert(m.trim_end_matches(';').to_string(), layer);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a file names through `crate::`, with a line each,
/// outside comments (doc links are not imports). A grouped `use crate::{a,
/// b::c}` names each of `a` and `b`.
fn named(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut group: Option<usize> = None; // inside `use crate::{ … }`, its depth
    let lines: Vec<&str> = text.lines().collect();
    for (k, raw) in lines.iter().enumerate() {
        if raw.trim() == "#[cfg(test)]"
            && lines
                .get(k + 1)
                .is_some_and(|l| l.trim_start().starts_with("mod tests"))
        {
            break; // the unit tests, to the end of the file
        }
        let line = raw.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            if let Some(inner) = after.strip_prefix('{') {
                group = Some(0);
                rest = inner;
                break;
            }
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push((name, k + 1));
            rest = after;
        }
        if let Some(depth) = group.as_mut() {
            // Top-level names of the group: identifiers at depth 0 that start
            // an item (after `{`, `,` or the start of a line).
            let mut d = *depth;
            let mut at_start = true;
            let mut word = String::new();
            for c in rest.chars() {
                if c.is_alphanumeric() || c == '_' {
                    word.push(c);
                    continue;
                }
                if !word.is_empty() {
                    if d == 0 && at_start && word != "self" {
                        out.push((word.clone(), k + 1));
                    }
                    word.clear();
                    at_start = false;
                }
                match c {
                    '{' => d += 1,
                    '}' if d == 0 => {
                        group = None;
                        break;
                    }
                    '}' => d -= 1,
                    ',' if d == 0 => at_start = true,
                    _ => {}
                }
            }
            if group.is_some() {
                if !word.is_empty() && d == 0 && at_start {
                    out.push((word, k + 1));
                }
                group = Some(d);
            }
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer = layers(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut broken = Vec::new();
    let mut allowed_used = vec![false; ALLOWED.len()];
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "lib.rs" || rel.ends_with("/tests.rs") {
            continue;
        }
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(&own) = layer.get(top) else {
            panic!("src/{rel}: module `{top}` is not declared under a layer in lib.rs");
        };
        for (name, line) in named(&fs::read_to_string(f).unwrap()) {
            let Some(&theirs) = layer.get(&name) else {
                continue; // a re-export of lib.rs (`crate::Config`) or a macro
            };
            if theirs <= own {
                continue;
            }
            if let Some(k) = ALLOWED.iter().position(|&(p, m)| p == rel && m == name) {
                allowed_used[k] = true;
                continue;
            }
            broken.push(format!(
                "src/{rel}:{line}: `{top}` (layer {own}) names `crate::{name}` (layer {theirs})"
            ));
        }
    }
    assert!(
        broken.is_empty(),
        "imports from a layer above (see the layers in lib.rs):\n{}",
        broken.join("\n")
    );
    for (k, used) in allowed_used.iter().enumerate() {
        assert!(
            used,
            "the allow-list entry {:?} is no longer needed: remove it",
            ALLOWED[k]
        );
    }
}

#[test]
fn the_scanner_sees_grouped_and_path_imports() {
    let text = "use crate::{engine::Arrivals, units::{Rate, SimTime}};\n\
                use crate::{\n    fabric::Fabric,\n    run,\n};\n\
                let x = crate::metrics::f(); // crate::config in a comment\n\
                /// [`crate::scenarios`] in a doc link\n\
                #[cfg(test)]\nmod tests {\n    use crate::run;\n}\n";
    let names: Vec<String> = named(text).into_iter().map(|n| n.0).collect();
    assert_eq!(names, ["engine", "units", "fabric", "run", "metrics"]);
    let lib = "// 1. core\npub mod units;\n// 2. x\npub mod net;\n";
    let l = layers(lib);
    assert_eq!((l["units"], l["net"]), (1, 2));
}

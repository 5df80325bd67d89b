//! The documented default config: every key with its doc comment (from the
//! source) and its default, as TOML.

use super::Config;
use crate::fabric::registry;

/// The default config as documented TOML: the common keys and every
/// registered fabric's table, each key preceded by its doc comment (from the
/// source) and set to its default. Keys without a default are shown commented
/// out. What `photonet default-config` prints.
pub fn documented_default_config() -> String {
    let mut out = String::from(
        "# photonet configuration: every key with its doc and default.\n\
         # Units are strings: \"100ns\", \"50Gbps\", \"562B\". Only the table of the\n\
         # selected `fabric` is used; the others may stay (a sweep over `fabric` needs them).\n\n",
    );
    let schema = serde_json::Value::from(schemars::schema_for!(Config));
    let table = toml::Table::try_from(Config::default()).expect("config serialises");
    render_table(&mut out, "", &table, &schema, &schema);
    for spec in registry::REGISTRY {
        let users: Vec<String> = spec
            .variants
            .iter()
            .map(|v| format!("`fabric = \"{}\"` ({})", v.name, v.label))
            .collect();
        out.push_str(&format!("\n# ---- used by {}\n", users.join(", ")));
        let schema = serde_json::Value::from(spec.schema());
        out.push_str(&format!("[{}]\n", spec.table));
        render_table(&mut out, spec.table, &spec.defaults(), &schema, &schema);
    }
    out
}

/// The schema node `node` refers to (following one `$ref` into `root`'s `$defs`).
fn resolve<'a>(node: &'a serde_json::Value, root: &'a serde_json::Value) -> &'a serde_json::Value {
    match node.get("$ref").and_then(|r| r.as_str()) {
        Some(r) => r
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))
            .unwrap_or(node),
        None => node,
    }
}

fn render_table(
    out: &mut String,
    path: &str,
    table: &toml::Table,
    schema: &serde_json::Value,
    root: &serde_json::Value,
) {
    let schema = resolve(schema, root);
    let empty = serde_json::Map::new();
    let props = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .unwrap_or(&empty);
    let doc_of = |key: &str| -> String {
        let Some(p) = props.get(key) else {
            return String::new();
        };
        let own = p.get("description").and_then(|d| d.as_str());
        let via_ref = resolve(p, root).get("description").and_then(|d| d.as_str());
        own.or(via_ref).unwrap_or_default().to_string()
    };
    let comment = |out: &mut String, doc: &str| {
        for line in doc.lines() {
            out.push_str(&format!("# {line}\n").replace("#  \n", "#\n"));
        }
    };
    let mut subtables = Vec::new();
    for (k, v) in table {
        if let toml::Value::Table(t) = v {
            subtables.push((k, t));
            continue;
        }
        comment(out, &doc_of(k));
        out.push_str(&format!("{k} = {v}\n"));
    }
    for k in props.keys() {
        if !table.contains_key(k) {
            comment(out, &doc_of(k));
            out.push_str(&format!("# {k} = (not set)\n"));
        }
    }
    for (k, t) in subtables {
        let full = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        out.push('\n');
        comment(out, &doc_of(k));
        out.push_str(&format!("[{full}]\n"));
        let sub = props.get(k.as_str()).cloned().unwrap_or_default();
        render_table(out, &full, t, &sub, root);
    }
}

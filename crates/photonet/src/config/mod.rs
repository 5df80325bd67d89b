//! Run configuration: the common keys (topology, workload, stop, metrics) as
//! serde structs with defaults (the schema is the documentation), plus the
//! selected fabric's parameter table, read through the fabric registry.
//! Parsing and validation give errors that name the key, the value and the
//! reason before any simulation time is spent.
//!
//! The complete config — what `validate` prints and what keys a sweep point —
//! holds the common keys and the selected fabric's table only, so registering
//! a new fabric changes no existing point's key.
//!
//! Parts: [`sections`] (the workload, stop and metrics tables),
//! `documented` (the documented default config `photonet default-config`
//! prints); here the config itself, its parsing and its checks.

mod documented;
mod sections;
#[cfg(test)]
mod tests;

pub use documented::documented_default_config;
use sections::keys_for;
pub use sections::{
    MetricsConfig, OverlayConfig, PatternConfig, PatternKind, SizeDistKind, SizesConfig,
    StopConfig, WorkloadConfig,
};

pub use crate::error::ConfigError;
use crate::error::{from_toml_table, from_toml_text};
use crate::fabric::registry::{self, BuildContext, FabricPlan, FabricSpec, ParamTable, Variant};
pub use crate::topology::Topology;
use crate::units::{ByteSize, SimTime};
pub use crate::workload::LoadBasis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
/// Loads above this are refused: every flow would arrive at (almost) once.
pub const MAX_LOAD: f64 = 100.0;
/// Flows are numbered with 32 bits.
pub const MAX_FLOWS: u64 = u32::MAX as u64;

/// The common keys of a run (every fabric's table is separate).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Free-form label for outputs.
    pub name: String,
    /// Seed of every random stream of the run.
    pub seed: u64,
    /// Which architecture runs: a name from the fabric registry
    /// (`photonet.fabrics()`); its parameters are in the table it names.
    pub fabric: String,
    pub topology: Topology,
    pub workload: WorkloadConfig,
    pub stop: StopConfig,
    pub metrics: MetricsConfig,
    /// Fabric parameter tables by table name, complete (every default filled
    /// in: `parse` and `set_params` store them so, and `to_toml` writes them
    /// as they are). Only the selected fabric's table is part of the complete
    /// config.
    #[serde(skip)]
    #[schemars(skip)]
    pub tables: BTreeMap<String, toml::Table>,
    /// Settings that parse but cannot affect this run (a table of another
    /// fabric that changes its defaults), for `run` and `validate` to show.
    #[serde(skip)]
    #[schemars(skip)]
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            name: "default".into(),
            seed: 1,
            fabric: "esn".into(),
            topology: Topology::default(),
            workload: WorkloadConfig::default(),
            stop: StopConfig::default(),
            metrics: MetricsConfig::default(),
            tables: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

/// Two configs are equal when they describe the same run: their complete
/// TOML (common keys + the selected fabric's complete table) is the same.
impl PartialEq for Config {
    fn eq(&self, other: &Self) -> bool {
        self.to_toml() == other.to_toml()
    }
}

impl Config {
    /// Parses TOML text and validates it ([`Config::parse`], then
    /// [`Config::validate`]).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let cfg = Config::parse(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses TOML text; unknown keys and malformed values are errors naming
    /// the key. Tables of fabrics other than the selected one are checked too
    /// (a typo is an error) but are not kept. Values that parse but cannot be
    /// simulated are left to [`Config::plan`] (which `run::prepare` calls, so
    /// a run plans its fabric once).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut all: toml::Table = from_toml_text(text, "")?;
        let mut tables = BTreeMap::new();
        for spec in registry::REGISTRY {
            if let Some(v) = all.remove(spec.table) {
                let toml::Value::Table(t) = v else {
                    return Err(ConfigError::new(
                        spec.table,
                        v,
                        "must be a table of the fabric's parameters",
                    ));
                };
                // Kept complete: a run's TOML is written from it as is.
                tables.insert(spec.table.to_string(), spec.complete(&t)?);
            }
        }
        let mut cfg: Config = from_toml_table(&all, "").map_err(|e| {
            if e.reason.starts_with("unknown field") && !e.key.contains('.') {
                let known: Vec<_> = registry::REGISTRY.iter().map(|s| s.table).collect();
                let reason = format!("{} (fabric tables: {})", e.reason, known.join(", "));
                ConfigError { reason, ..e }
            } else {
                e
            }
        })?;
        let own = cfg.spec()?.table;
        for (name, t) in &tables {
            let Some(spec) = registry::by_table(name).filter(|_| name != own) else {
                continue;
            };
            let defaults = spec.defaults();
            let changed: Vec<&str> = t
                .iter()
                .filter(|(k, v)| defaults.get(k.as_str()) != Some(*v))
                .map(|(k, _)| k.as_str())
                .collect();
            if !changed.is_empty() {
                cfg.warnings.push(format!(
                    "[{name}] sets {} but fabric = {:?} does not use it (it uses [{own}])",
                    changed.join(", "),
                    cfg.fabric
                ));
            }
        }
        tables.retain(|k, _| k == own);
        let (spec, variant) = cfg.selected()?;
        if let Some(t) = tables.get_mut(own) {
            let (set, because) = spec.drop_unread(variant, t);
            if !set.is_empty() {
                let because = because.unwrap_or_else(|| format!("fabric = {:?}", cfg.fabric));
                cfg.warnings.push(format!(
                    "[{own}] sets {} but {because} does not read it",
                    set.join(", "),
                ));
            }
        }
        cfg.tables = tables;
        Ok(cfg)
    }

    /// The complete config as TOML: the common keys with every default, and
    /// the selected fabric's table with every default (no other fabric's).
    pub fn to_toml(&self) -> String {
        let mut t = toml::Table::try_from(self).expect("config serialises");
        if let Ok((spec, variant)) = self.selected() {
            // Tables are kept complete (`parse`, `set_params`); a config
            // built in code may lack its fabric's: the defaults.
            let mut own = match self.tables.get(spec.table) {
                Some(t) => t.clone(),
                None => spec.defaults(),
            };
            spec.drop_unread(variant, &mut own);
            t.insert(spec.table.to_string(), toml::Value::Table(own));
        }
        toml::to_string(&t).expect("config serialises")
    }

    /// The registry entry and variant of `fabric`.
    pub fn selected(&self) -> Result<(&'static FabricSpec, &'static Variant), ConfigError> {
        registry::find(&self.fabric).ok_or_else(|| {
            ConfigError::new(
                "fabric",
                format!("{:?}", self.fabric),
                format!(
                    "unknown fabric; expected one of {}",
                    registry::names().join(", ")
                ),
            )
        })
    }

    fn spec(&self) -> Result<&'static FabricSpec, ConfigError> {
        Ok(self.selected()?.0)
    }

    /// A fabric's complete table (defaults filled in where not given).
    pub fn fabric_table(&self, spec: &FabricSpec) -> Result<toml::Table, ConfigError> {
        let empty = toml::Table::new();
        spec.complete(self.tables.get(spec.table).unwrap_or(&empty))
    }

    /// A fabric's typed parameters (defaults where not given).
    pub fn params<P: ParamTable>(&self) -> Result<P, ConfigError> {
        let empty = toml::Table::new();
        from_toml_table(self.tables.get(P::TABLE).unwrap_or(&empty), P::TABLE)
    }

    /// Sets a fabric's parameters.
    pub fn set_params<P: ParamTable>(&mut self, p: &P) {
        let t = toml::Table::try_from(p).expect("a parameter table serialises");
        self.tables.insert(P::TABLE.to_string(), t);
    }

    /// Changes some of a fabric's parameters in place.
    pub fn edit<P: ParamTable>(&mut self, change: impl FnOnce(&mut P)) {
        let mut p: P = self.params().expect("the table was checked when set");
        change(&mut p);
        self.set_params(&p);
    }

    /// What the selected fabric is built from besides its table.
    pub fn build_context(&self) -> BuildContext<'_> {
        BuildContext {
            topology: &self.topology,
            seed: self.seed,
            check_invariants: self.metrics.check_invariants,
        }
    }

    /// Checks values that parse but cannot be simulated.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.plan().map(|_| ())
    }

    /// Checks the common keys, then parses the selected fabric's table and
    /// plans it for its variant: every check before any simulated time.
    pub fn plan(&self) -> Result<FabricPlan, ConfigError> {
        let (spec, variant) = self.selected()?;
        self.topology.validate()?;
        let w = &self.workload;
        w.check(self.topology.hosts() as u64)?;
        for (i, o) in w.overlay.iter().enumerate() {
            o.as_workload(w)
                .check(self.topology.hosts() as u64)
                .map_err(|e| e.rekey("workload.", &format!("workload.overlay[{i}].")))?;
            if !(w.pattern.kind.is_poisson() && o.pattern.kind.is_poisson()) {
                return Err(ConfigError::new(
                    format!("workload.overlay[{i}].pattern.kind"),
                    "",
                    "an overlaid stream and the workload it joins must both be Poisson patterns (uniform, permutation, incast, transpose, bisection, group_permutation, hotspot)",
                ));
            }
        }
        let s = &self.stop;
        if s.flows.is_none()
            && s.duration.is_none()
            && !matches!(
                w.pattern.kind,
                PatternKind::AllToAll
                    | PatternKind::Trace
                    | PatternKind::Collective
                    | PatternKind::Dependent
                    | PatternKind::Htsim
            )
        {
            return Err(ConfigError::new(
                "stop",
                "",
                "give `flows` or `duration`, or the workload never ends",
            ));
        }
        if s.flows == Some(0) {
            return Err(ConfigError::new("stop.flows", 0, "must be > 0"));
        }
        if let Some(n) = s.flows.filter(|&n| n > MAX_FLOWS) {
            return Err(ConfigError::new(
                "stop.flows",
                n,
                format!("above {MAX_FLOWS} (flows are numbered with 32 bits)"),
            ));
        }
        if s.duration == Some(SimTime::ZERO) {
            return Err(ConfigError::new("stop.duration", "\"0ps\"", "must be > 0"));
        }
        if s.stall_limit == Some(SimTime::ZERO) {
            return Err(ConfigError::new(
                "stop.stall_limit",
                "\"0ps\"",
                "must be > 0",
            ));
        }
        if let Some(d) = s.drain_limit {
            if !s.drain {
                return Err(ConfigError::new(
                    "stop.drain_limit",
                    format!("\"{d}\""),
                    "has no effect without `drain = true`",
                ));
            }
            if d == SimTime::ZERO {
                return Err(ConfigError::new(
                    "stop.drain_limit",
                    "\"0ps\"",
                    "must be > 0",
                ));
            }
        }
        for (i, c) in self.metrics.size_classes.iter().enumerate() {
            if c.0 == 0 {
                return Err(ConfigError::new(
                    format!("metrics.size_classes[{i}]"),
                    "\"0B\"",
                    "a cut-off must be > 0",
                ));
            }
        }
        let [f0, f1] = self.metrics.steady_state;
        if !((0.0..1.0).contains(&f0) && f0 < f1 && f1 <= 1.0) {
            return Err(ConfigError::new(
                "metrics.steady_state",
                format!("[{f0}, {f1}]"),
                "need 0 <= start < end <= 1 (fractions of the arrival period)",
            ));
        }
        if self.metrics.time_series == Some(SimTime::ZERO) {
            return Err(ConfigError::new(
                "metrics.time_series",
                "\"0ps\"",
                "a bin width must be > 0",
            ));
        }
        let empty = toml::Table::new();
        let table = self.tables.get(spec.table).unwrap_or(&empty);
        spec.plan(table, variant, &self.build_context())
    }
}

impl WorkloadConfig {
    /// Checks the load, sizes and pattern on `n` hosts (errors name
    /// `workload.…` keys).
    fn check(&self, n: u64) -> Result<(), ConfigError> {
        let w = self;
        if !(w.load > 0.0 && w.load.is_finite()) {
            return Err(ConfigError::new(
                "workload.load",
                w.load,
                "load must be a finite number > 0",
            ));
        }
        if w.load > MAX_LOAD {
            return Err(ConfigError::new(
                "workload.load",
                w.load,
                format!("above {MAX_LOAD} (that many times the hosts' capacity): every flow would arrive at once"),
            ));
        }
        let z = &w.sizes;
        let given = [
            ("shape", z.shape.is_some()),
            ("mean", z.mean.is_some()),
            ("max", z.max.is_some()),
            ("size", z.size.is_some()),
            ("file", z.file.is_some()),
        ];
        match z.dist {
            SizeDistKind::Pareto => {
                keys_for(
                    "workload.sizes",
                    "pareto",
                    &given,
                    &["shape", "mean"],
                    &["max"],
                )?;
                let (shape, mean) = (z.shape.unwrap_or_default(), z.mean.unwrap_or_default());
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(ConfigError::new(
                        "workload.sizes.shape",
                        shape,
                        "a Pareto shape must be > 1 for the mean to exist",
                    ));
                }
                if mean.0 == 0 {
                    return Err(ConfigError::new(
                        "workload.sizes.mean",
                        "\"0B\"",
                        "a mean size must be > 0",
                    ));
                }
                if let Some(m) = z.max {
                    if m.0 <= mean.0 {
                        return Err(ConfigError::new(
                            "workload.sizes.max",
                            format!("\"{m}\""),
                            format!("must be larger than the mean ({mean})"),
                        ));
                    }
                }
            }
            SizeDistKind::Fixed => {
                keys_for("workload.sizes", "fixed", &given, &["size"], &[])?;
                if z.size.unwrap_or_default().0 == 0 {
                    return Err(ConfigError::new(
                        "workload.sizes.size",
                        "\"0B\"",
                        "a flow must carry at least one byte",
                    ));
                }
            }
            SizeDistKind::Cdf => {
                keys_for("workload.sizes", "cdf", &given, &["file"], &[])?;
                if z.file.as_deref().unwrap_or_default().is_empty() {
                    return Err(ConfigError::new(
                        "workload.sizes.file",
                        "\"\"",
                        "give the path of a CDF file",
                    ));
                }
            }
        }
        let pt = &w.pattern;
        let given = [
            ("degree", pt.degree.is_some()),
            ("size", pt.size.is_some()),
            ("file", pt.file.is_some()),
            ("group", pt.group.is_some()),
            ("node", pt.node.is_some()),
            ("jobs", pt.jobs.is_some()),
            ("distinct", pt.distinct.is_some()),
        ];
        match pt.kind {
            PatternKind::Uniform => keys_for("workload.pattern", "uniform", &given, &[], &[])?,
            PatternKind::Permutation => {
                keys_for("workload.pattern", "permutation", &given, &[], &[])?
            }
            PatternKind::Trace => keys_for("workload.pattern", "trace", &given, &["file"], &[])?,
            PatternKind::Incast => {
                keys_for(
                    "workload.pattern",
                    "incast",
                    &given,
                    &["degree", "size"],
                    &[],
                )?;
                let degree = pt.degree.unwrap_or_default();
                if degree == 0 || degree as u64 >= n {
                    return Err(ConfigError::new(
                        "workload.pattern.degree",
                        degree,
                        format!("must be between 1 and hosts - 1 = {}", n - 1),
                    ));
                }
            }
            PatternKind::AllToAll => {
                keys_for("workload.pattern", "all_to_all", &given, &["size"], &[])?
            }
            PatternKind::Transpose => {
                keys_for("workload.pattern", "transpose", &given, &[], &[])?;
                if n < 4 || !n.is_power_of_two() {
                    return Err(ConfigError::new(
                        "workload.pattern.kind",
                        "\"transpose\"",
                        format!("transpose swaps address bits: hosts must be a power of two, at least 4 (got {n})"),
                    ));
                }
            }
            PatternKind::Bisection => {
                keys_for("workload.pattern", "bisection", &given, &[], &[])?;
                if n % 2 == 1 {
                    return Err(ConfigError::new(
                        "workload.pattern.kind",
                        "\"bisection\"",
                        format!("bisection pairs half the hosts with the other half: hosts must be even (got {n})"),
                    ));
                }
            }
            PatternKind::GroupPermutation => {
                keys_for(
                    "workload.pattern",
                    "group_permutation",
                    &given,
                    &["group"],
                    &["distinct"],
                )?;
                let g = pt.group.unwrap_or_default() as u64;
                if g == 0 || !n.is_multiple_of(g) || n / g < 2 {
                    return Err(ConfigError::new(
                        "workload.pattern.group",
                        g,
                        format!("must divide the {n} hosts into at least 2 groups"),
                    ));
                }
            }
            PatternKind::PingPong => {
                keys_for("workload.pattern", "ping_pong", &given, &[], &["group"])?;
                if n % 2 == 1 {
                    return Err(ConfigError::new(
                        "workload.pattern.kind",
                        "\"ping_pong\"",
                        format!("ping-pong pairs the hosts: hosts must be even (got {n})"),
                    ));
                }
                if let Some(g) = pt.group {
                    let g = g as u64;
                    if g == 0 || !n.is_multiple_of(g) || (n / g) % 2 == 1 {
                        return Err(ConfigError::new(
                            "workload.pattern.group",
                            g,
                            format!("ping-pong pairs whole groups: the group size must divide the {n} hosts into an even number of groups"),
                        ));
                    }
                }
            }
            PatternKind::Collective => {
                keys_for("workload.pattern", "collective", &given, &["jobs"], &[])?
            }
            PatternKind::Dependent => {
                keys_for("workload.pattern", "dependent", &given, &["file"], &[])?
            }
            PatternKind::Htsim => keys_for("workload.pattern", "htsim", &given, &["file"], &[])?,
            PatternKind::Hotspot => {
                keys_for("workload.pattern", "hotspot", &given, &[], &["node"])?;
                let v = pt.node.unwrap_or(0) as u64;
                if v >= n {
                    return Err(ConfigError::new(
                        "workload.pattern.node",
                        v,
                        format!("no such host: hosts are 0..{}", n - 1),
                    ));
                }
            }
        }
        if pt.size == Some(ByteSize(0)) {
            return Err(ConfigError::new(
                "workload.pattern.size",
                "\"0B\"",
                "a flow must carry at least one byte",
            ));
        }
        Ok(())
    }
}

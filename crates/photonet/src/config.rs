//! Run configuration: the common keys (topology, workload, stop, metrics) as
//! serde structs with defaults (the schema is the documentation), plus the
//! selected fabric's parameter table, read through the fabric registry.
//! Parsing and validation give errors that name the key, the value and the
//! reason before any simulation time is spent.
//!
//! The complete config — what `validate` prints and what keys a sweep point —
//! holds the common keys and the selected fabric's table only, so registering
//! a new fabric changes no existing point's key.

pub use crate::error::ConfigError;
use crate::error::{from_toml_table, from_toml_text};
use crate::fabric::registry::{self, BuildContext, FabricPlan, FabricSpec, ParamTable, Variant};
pub use crate::topology::Topology;
use crate::units::{ByteSize, SimTime};
pub use crate::workload::LoadBasis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Size distribution families.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeDistKind {
    /// Pareto with `shape` > 1 and mean `mean`, optionally truncated at `max`.
    Pareto,
    /// Every flow has `size` bytes.
    Fixed,
    /// An empirical CDF `file` (`<bytes> <cumulative probability>` per line). A
    /// relative path is looked up next to the config, then in the workload
    /// search path (`$PHOTONET_WORKLOADS`, then the standard CDFs shipped with
    /// the package).
    Cdf,
}

/// Flow sizes: `dist` picks the family; the other keys are its parameters.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizesConfig {
    /// The family: "pareto" (shape, mean, optional max), "fixed" (size) or
    /// "cdf" (file).
    pub dist: SizeDistKind,
    /// Pareto shape α > 1 (the Sirius paper uses 1.05).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    /// Pareto mean size (kept when `max` truncates the distribution).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<ByteSize>,
    /// Pareto truncation: the distribution is conditioned on sizes ≤ max,
    /// with its scale solved so that its mean is still `mean`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<ByteSize>,
    /// Fixed: every flow's size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
    /// CDF: the file (`<bytes> <cumulative probability>` per line), looked up
    /// next to the config, then in the workload search path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl Default for SizesConfig {
    fn default() -> Self {
        SizesConfig::pareto(1.05, ByteSize(100_000))
    }
}

impl SizesConfig {
    pub fn pareto(shape: f64, mean: ByteSize) -> Self {
        SizesConfig {
            dist: SizeDistKind::Pareto,
            shape: Some(shape),
            mean: Some(mean),
            max: None,
            size: None,
            file: None,
        }
    }
    pub fn fixed(size: ByteSize) -> Self {
        SizesConfig {
            dist: SizeDistKind::Fixed,
            shape: None,
            mean: None,
            max: None,
            size: Some(size),
            file: None,
        }
    }
    pub fn cdf(file: &str) -> Self {
        SizesConfig {
            dist: SizeDistKind::Cdf,
            shape: None,
            mean: None,
            max: None,
            size: None,
            file: Some(file.into()),
        }
    }
}

/// Traffic pattern families.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// Uniformly random source and destination (src ≠ dst).
    #[default]
    Uniform,
    /// A random derangement fixed for the run.
    Permutation,
    /// Groups of `degree` senders to one receiver, `size` bytes each.
    Incast,
    /// Every host sends `size` bytes to every other host at t = 0.
    AllToAll,
    /// Replay the CSV `file` with header `src,dst,bytes,start`.
    Trace,
    /// Baldur §V-A: address halves swapped (hosts a power of two, at least 4);
    /// hosts that map to themselves do not send.
    Transpose,
    /// Baldur §V-A: a random half paired one-to-one with the other half.
    Bisection,
    /// Baldur §V-A: groups of `group` hosts paired by a random derangement;
    /// each host sends to one random host of the partner group.
    GroupPermutation,
    /// Baldur §V-A: every other host sends to host `node`.
    Hotspot,
    /// Baldur §V-A ping-pong (closed loop): hosts in fixed pairs; each sends
    /// one flow to its partner at t = 0 and its next the instant its
    /// partner's flow reaches it. Pairs are a random matching
    /// (`ping_pong1`), or with `group`, hosts of consecutive groups of that
    /// size paired with hosts of a partner group (`ping_pong2`). Each host
    /// sends ⌈stop.flows / hosts⌉ flows; `workload.load` does not apply.
    PingPong,
    /// Collectives (`jobs`: all-reduce, all-to-all, …): flows released when
    /// the steps they depend on complete (see `docs/collectives.md`). The
    /// run drains; `stop.flows` and `workload.load` do not apply.
    Collective,
    /// A dependency graph of flows from the CSV `file` (header
    /// `id,src,dst,bytes,start,delay,deps`). The run drains.
    Dependent,
    /// htsim's connection-matrix `file` (`.cm`: `Nodes`, `Connections`,
    /// `src->dst id I start T size B`, triggers); triggered flows start when
    /// the flows that fire their trigger complete. The run drains.
    Htsim,
}

/// Who sends to whom: `kind` picks the pattern; the other keys are its parameters.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    /// The pattern: "uniform", "permutation", "incast" (degree, size),
    /// "all_to_all" (size), "trace" (file), or Baldur's fixed maps
    /// "transpose", "bisection", "group_permutation" (group) and "hotspot"
    /// (node). Fixed maps set the load per sending host.
    #[serde(default)]
    pub kind: PatternKind,
    /// Incast: senders per receiver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degree: Option<u32>,
    /// Incast and all-to-all: bytes per flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
    /// Trace: a CSV with header `src,dst,bytes,start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Group permutation and ping-pong: hosts per group (e.g. a dragonfly group).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    /// Hotspot: the destination host (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// Group permutation: map each group one-to-one onto its partner group
    /// (true) instead of drawing each sender's destination independently
    /// (false, the default: two senders may share a receiver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct: Option<bool>,
    /// Collective: the jobs, each a collective on its participants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<crate::workload::collective::JobConfig>>,
}

/// Requires exactly the keys a family needs: missing ones and ones that belong
/// to another family are both errors.
fn keys_for(
    table: &str,
    family: &str,
    given: &[(&str, bool)],
    needed: &[&str],
    optional: &[&str],
) -> Result<(), ConfigError> {
    for (k, present) in given {
        let key = format!("{table}.{k}");
        if needed.contains(k) && !present {
            return Err(ConfigError::new(
                &key,
                "",
                format!("required when the family is `{family}`"),
            ));
        }
        if *present && !needed.contains(k) && !optional.contains(k) {
            return Err(ConfigError::new(
                &key,
                "",
                format!(
                    "does not apply to `{family}` (it takes: {})",
                    needed
                        .iter()
                        .chain(optional)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// Offered load L = F / (R · N · τ), in (0, ∞); 1.0 means the hosts' full rate.
    pub load: f64,
    /// Which mean flow size F sets the arrival rate: "nominal" (the size
    /// distribution's mean) or "realised" (the mean of the sizes this run
    /// draws; with a heavy tail the nominal basis offers far less than L).
    pub load_basis: LoadBasis,
    /// Flow sizes.
    pub sizes: SizesConfig,
    /// Who sends to whom.
    pub pattern: PatternConfig,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            load: 0.5,
            load_basis: LoadBasis::Nominal,
            sizes: SizesConfig::default(),
            pattern: PatternConfig::default(),
        }
    }
}

/// When to stop. Arrivals stop after `flows` flows or at `duration`, whichever
/// comes first, and the run ends then: at the last arrival when the flow count
/// stops them, at `duration` when the duration does — unless `drain`, which
/// runs on until every flow completes (at most `drain_limit` after the last
/// arrival).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StopConfig {
    /// Stop generating flows after this many.
    pub flows: Option<u64>,
    /// Stop generating flows at this time; the run ends here unless draining.
    pub duration: Option<SimTime>,
    /// Keep running after the last arrival until every flow completes.
    pub drain: bool,
    /// With `drain`: the most simulated time spent draining after the last
    /// arrival; flows still unfinished then are reported as unfinished.
    pub drain_limit: Option<SimTime>,
    /// The progress watchdog: a run whose pending flows see no delivery for
    /// this much simulated time stops with a "stalled" error instead of
    /// running on (default 1 s when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_limit: Option<SimTime>,
}

impl StopConfig {
    /// The watchdog's limit when `stall_limit` is absent.
    pub const DEFAULT_STALL_LIMIT: SimTime = SimTime(SimTime::S);
}

impl Default for StopConfig {
    fn default() -> Self {
        StopConfig {
            flows: Some(10_000),
            duration: None,
            drain: false,
            drain_limit: None,
            stall_limit: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// FCT size-class cut-offs: classes `<c` for each c, plus `all` and `>=max`.
    pub size_classes: Vec<ByteSize>,
    /// Bin width of the goodput time series; none if absent.
    pub time_series: Option<SimTime>,
    /// Check fabric invariants after every event (slow; for debugging).
    pub check_invariants: bool,
    /// The steady-state window for `goodput_steady`, as [start, end]
    /// fractions of the arrival period (first to last arrival): warm-up and
    /// cool-down are left out.
    pub steady_state: [f64; 2],
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            size_classes: vec![ByteSize(10_000), ByteSize(100_000)],
            time_series: None,
            check_invariants: false,
            steady_state: [0.1, 0.9],
        }
    }
}

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
        cfg.tables = tables;
        Ok(cfg)
    }

    /// The complete config as TOML: the common keys with every default, and
    /// the selected fabric's table with every default (no other fabric's).
    pub fn to_toml(&self) -> String {
        let mut t = toml::Table::try_from(self).expect("config serialises");
        if let Ok((spec, _)) = self.selected() {
            // Tables are kept complete (`parse`, `set_params`); a config
            // built in code may lack its fabric's: the defaults.
            let own = match self.tables.get(spec.table) {
                Some(t) => t.clone(),
                None => spec.defaults(),
            };
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
        let n = self.topology.hosts() as u64;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn bad(toml: &str) -> ConfigError {
        Config::from_toml(toml).expect_err("should be rejected")
    }

    #[test]
    fn empty_config_is_the_default() {
        assert_eq!(Config::from_toml("").unwrap(), Config::default());
        let d = Config::default();
        assert_eq!(d.topology.hosts(), 3072);
        assert_eq!(d.topology.host_rate(), Rate(16_666_666_666));
    }

    #[test]
    fn round_trips_through_toml() {
        let mut c = Config::default();
        c.workload.sizes = SizesConfig::cdf("x.cdf");
        c.workload.pattern = PatternConfig {
            kind: PatternKind::Incast,
            degree: Some(4),
            size: Some(ByteSize(1000)),
            file: None,
            ..Default::default()
        };
        c.stop.duration = Some(SimTime::ms(3));
        let text = c.to_toml();
        assert_eq!(Config::from_toml(&text).unwrap(), c, "{text}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = bad("[workload]\nlod = 0.5\n");
        assert!(e.reason.contains("unknown field `lod`"), "{e}");
        assert!(e.key.contains("workload"), "{e}");
        let e = bad("speed = 3\n");
        assert!(e.reason.contains("unknown field `speed`"), "{e}");
        let e =
            bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\nmean = \"1KB\"\nextra = 1\n");
        assert!(e.reason.contains("extra"), "{e}");
    }

    #[test]
    fn malformed_units_name_key_and_value() {
        let e = bad("[topology]\nuplink_rate = \"50Gbs\"\n");
        assert_eq!(e.key, "topology.uplink_rate");
        assert!(
            e.reason.contains("50Gbs") && e.reason.contains("unknown unit"),
            "{e}"
        );
        let e = bad("[esn]\nbase_latency = 5\n");
        assert!(
            e.key == "esn.base_latency" && e.reason.contains("no unit"),
            "{e}"
        );
        let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"-3B\"\n");
        assert_eq!(e.key, "workload.sizes.size");
        assert!(e.reason.contains("negative"), "{e}");
    }

    #[test]
    fn impossible_values_are_rejected_with_reasons() {
        let e = bad("[workload]\nload = 0\n");
        assert_eq!((e.key.as_str(), e.value.as_str()), ("workload.load", "0"));
        let e = bad("[workload]\nload = -0.5\n");
        assert!(e.reason.contains("> 0"), "{e}");
        let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"0B\"\n");
        assert_eq!(e.key, "workload.sizes.size");
        let e = bad("[topology]\nuplink_rate = \"0Gbps\"\n");
        assert_eq!(e.key, "topology.uplink_rate");
        let e = bad("[topology]\nserver_rate = \"0bps\"\n");
        assert_eq!(e.key, "topology.server_rate");
        let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.0\nmean = \"1KB\"\n");
        assert_eq!(e.key, "workload.sizes.shape");
        let e = bad("fabric = \"warp\"\n");
        assert!(e.key == "fabric" && e.reason.contains("esn"), "{e}");
        let e = bad("[topology]\nracks = 0\n");
        assert_eq!(e.key, "topology.racks");
        let e = bad("[stop]\nflows = 0\n");
        assert_eq!(e.key, "stop.flows");
        let e = bad("fabric = \"esn_osub\"\n[esn_osub]\noversubscription = 0.5\n");
        assert_eq!(e.key, "esn_osub.oversubscription");
        let e = bad("[workload.pattern]\nkind = \"incast\"\ndegree = 5000\nsize = \"1KB\"\n");
        assert_eq!(e.key, "workload.pattern.degree");
        let e = bad("[workload.sizes]\ndist = \"zipf\"\n");
        assert!(
            e.key == "workload.sizes.dist" && e.reason.contains("zipf"),
            "{e}"
        );
        let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\n");
        assert!(
            e.key == "workload.sizes.mean" && e.reason.contains("required"),
            "{e}"
        );
        let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"1KB\"\nshape = 2.0\n");
        assert!(
            e.key == "workload.sizes.shape" && e.reason.contains("does not apply"),
            "{e}"
        );
    }
}

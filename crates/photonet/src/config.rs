//! Run configuration: serde structs with defaults (the schema is the
//! documentation), parsing from TOML, and validation with errors that name the
//! key, the value and the reason before any simulation time is spent.

use crate::fabric::esn::{EsnOsubParams, EsnParams};
use crate::fabric::sirius::SiriusParams;
use crate::units::{ByteSize, Rate, SimTime};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A configuration problem: which key, what value, and why it is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "`{}`: {}", self.key, self.reason)
        } else {
            write!(f, "`{}` = {}: {}", self.key, self.value, self.reason)
        }
    }
}
impl std::error::Error for ConfigError {}

fn err(key: &str, value: impl fmt::Display, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Racks of servers; every fabric sees the servers as its endpoints. A
/// server-based deployment is `servers_per_rack = 1`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Topology {
    /// Number of racks.
    pub racks: u32,
    /// Servers under each ToR.
    pub servers_per_rack: u32,
    /// Uplinks per rack towards the network core (the electrical baseline's count).
    pub uplinks: u32,
    /// Rate of each uplink.
    pub uplink_rate: Rate,
    /// Per-server bandwidth R. Default: the rack's uplink capacity shared by its
    /// servers (uplinks × uplink_rate / servers_per_rack), i.e. non-blocking.
    pub server_rate: Option<Rate>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            racks: 128,
            servers_per_rack: 24,
            uplinks: 8,
            uplink_rate: Rate::gbps(50),
            server_rate: None,
        }
    }
}

impl Topology {
    pub fn hosts(&self) -> usize {
        self.racks as usize * self.servers_per_rack as usize
    }
    pub fn rack_uplink_rate(&self) -> Rate {
        Rate(self.uplinks as u64 * self.uplink_rate.0)
    }
    pub fn host_rate(&self) -> Rate {
        self.server_rate.unwrap_or(Rate(
            self.rack_uplink_rate().0 / self.servers_per_rack.max(1) as u64,
        ))
    }
    pub fn rack_of(&self, host: u32) -> u32 {
        host / self.servers_per_rack
    }
    fn validate(&self) -> Result<(), ConfigError> {
        if self.racks == 0 {
            return Err(err("topology.racks", 0, "need at least one rack"));
        }
        if self.servers_per_rack == 0 {
            return Err(err(
                "topology.servers_per_rack",
                0,
                "need at least one server per rack",
            ));
        }
        if self.hosts() < 2 {
            return Err(err(
                "topology",
                format!("{} host", self.hosts()),
                "need at least two servers in all",
            ));
        }
        if self.uplinks == 0 {
            return Err(err(
                "topology.uplinks",
                0,
                "need at least one uplink per rack",
            ));
        }
        if self.uplink_rate.0 == 0 {
            return Err(err(
                "topology.uplink_rate",
                "\"0bps\"",
                "a rate must be > 0",
            ));
        }
        if let Some(r) = self.server_rate {
            if r.0 == 0 {
                return Err(err(
                    "topology.server_rate",
                    "\"0bps\"",
                    "a rate must be > 0",
                ));
            }
        }
        if self.host_rate().0 == 0 {
            return Err(err(
                "topology.servers_per_rack",
                self.servers_per_rack,
                "leaves each server a zero rate",
            ));
        }
        Ok(())
    }
}

/// Size distribution families.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SizeDistKind {
    /// Pareto with `shape` > 1 and mean `mean`, optionally truncated at `max`.
    Pareto,
    /// Every flow has `size` bytes.
    Fixed,
    /// An empirical CDF `file` (`<bytes> <cumulative probability>` per line). A
    /// relative path is looked up next to the config, then in the workload
    /// search path (which includes `../shared/workloads`).
    Cdf,
}

/// Flow sizes: `dist` picks the family; the other keys are its parameters.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SizesConfig {
    pub dist: SizeDistKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
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
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
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
}

/// Who sends to whom: `kind` picks the pattern; the other keys are its parameters.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    #[serde(default)]
    pub kind: PatternKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degree: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
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
            return Err(err(
                &key,
                "",
                format!("required when the family is `{family}`"),
            ));
        }
        if *present && !needed.contains(k) && !optional.contains(k) {
            return Err(err(
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// Offered load L = F / (R · N · τ), in (0, ∞); 1.0 means the hosts' full rate.
    pub load: f64,
    pub sizes: SizesConfig,
    pub pattern: PatternConfig,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            load: 0.5,
            sizes: SizesConfig::default(),
            pattern: PatternConfig::default(),
        }
    }
}

/// When to stop. Arrivals stop after `flows` flows or at `duration`, whichever
/// comes first; the run ends at the last arrival (or `duration`), unless `drain`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StopConfig {
    pub flows: Option<u64>,
    pub duration: Option<SimTime>,
    /// Keep running after the last arrival until every flow completes.
    pub drain: bool,
    /// Cap on simulated time when draining.
    pub drain_limit: Option<SimTime>,
}

impl Default for StopConfig {
    fn default() -> Self {
        StopConfig {
            flows: Some(10_000),
            duration: None,
            drain: false,
            drain_limit: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// FCT size-class cut-offs: classes `<c` for each c, plus `all` and `>=max`.
    pub size_classes: Vec<ByteSize>,
    /// Bin width of the goodput time series; none if absent.
    pub time_series: Option<SimTime>,
    /// Check fabric invariants after every event (slow; for debugging).
    pub check_invariants: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            size_classes: vec![ByteSize(10_000), ByteSize(100_000)],
            time_series: None,
            check_invariants: false,
        }
    }
}

/// Names accepted by `fabric`, in the order `photonet compare` runs them.
pub const FABRICS: &[&str] = &["esn", "esn_osub", "sirius", "sirius_ideal"];

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Free-form label for outputs.
    pub name: String,
    /// Seed of every random stream of the run.
    pub seed: u64,
    /// Which architecture runs: one of [`FABRICS`].
    pub fabric: String,
    pub topology: Topology,
    pub workload: WorkloadConfig,
    pub stop: StopConfig,
    pub metrics: MetricsConfig,
    /// Parameters of ESN (Ideal).
    pub esn: EsnParams,
    /// Parameters of ESN-OSUB (Ideal).
    pub esn_osub: EsnOsubParams,
    /// Parameters of SIRIUS and SIRIUS (IDEAL).
    pub sirius: SiriusParams,
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
            esn: EsnParams::default(),
            esn_osub: EsnOsubParams::default(),
            sirius: SiriusParams::default(),
        }
    }
}

impl Config {
    /// Parses TOML text; unknown keys and malformed values are errors naming the key.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let de = toml::Deserializer::parse(text)
            .map_err(|e| err("(toml)", "", e.message().to_string()))?;
        let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.inner().message().to_string();
            err(if path == "." { "(top level)" } else { &path }, "", msg)
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialises")
    }

    /// Checks values that parse but cannot be simulated.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !FABRICS.contains(&self.fabric.as_str()) {
            return Err(err(
                "fabric",
                format!("{:?}", self.fabric),
                format!("unknown fabric; expected one of {}", FABRICS.join(", ")),
            ));
        }
        self.topology.validate()?;
        let w = &self.workload;
        if !(w.load > 0.0 && w.load.is_finite()) {
            return Err(err(
                "workload.load",
                w.load,
                "load must be a finite number > 0",
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
                    return Err(err(
                        "workload.sizes.shape",
                        shape,
                        "a Pareto shape must be > 1 for the mean to exist",
                    ));
                }
                if mean.0 == 0 {
                    return Err(err(
                        "workload.sizes.mean",
                        "\"0B\"",
                        "a mean size must be > 0",
                    ));
                }
                if let Some(m) = z.max {
                    if m.0 <= mean.0 {
                        return Err(err(
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
                    return Err(err(
                        "workload.sizes.size",
                        "\"0B\"",
                        "a flow must carry at least one byte",
                    ));
                }
            }
            SizeDistKind::Cdf => {
                keys_for("workload.sizes", "cdf", &given, &["file"], &[])?;
                if z.file.as_deref().unwrap_or_default().is_empty() {
                    return Err(err(
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
                let n = self.topology.hosts() as u64;
                let degree = pt.degree.unwrap_or_default();
                if degree == 0 || degree as u64 >= n {
                    return Err(err(
                        "workload.pattern.degree",
                        degree,
                        format!("must be between 1 and hosts - 1 = {}", n - 1),
                    ));
                }
            }
            PatternKind::AllToAll => {
                keys_for("workload.pattern", "all_to_all", &given, &["size"], &[])?
            }
        }
        if pt.size == Some(ByteSize(0)) {
            return Err(err(
                "workload.pattern.size",
                "\"0B\"",
                "a flow must carry at least one byte",
            ));
        }
        let s = &self.stop;
        if s.flows.is_none()
            && s.duration.is_none()
            && !matches!(w.pattern.kind, PatternKind::AllToAll | PatternKind::Trace)
        {
            return Err(err(
                "stop",
                "",
                "give `flows` or `duration`, or the workload never ends",
            ));
        }
        if s.flows == Some(0) {
            return Err(err("stop.flows", 0, "must be > 0"));
        }
        if s.duration == Some(SimTime::ZERO) {
            return Err(err("stop.duration", "\"0ps\"", "must be > 0"));
        }
        for (i, c) in self.metrics.size_classes.iter().enumerate() {
            if c.0 == 0 {
                return Err(err(
                    &format!("metrics.size_classes[{i}]"),
                    "\"0B\"",
                    "a cut-off must be > 0",
                ));
            }
        }
        if self.metrics.time_series == Some(SimTime::ZERO) {
            return Err(err(
                "metrics.time_series",
                "\"0ps\"",
                "a bin width must be > 0",
            ));
        }
        if !(self.esn_osub.oversubscription >= 1.0 && self.esn_osub.oversubscription.is_finite()) {
            return Err(err(
                "esn_osub.oversubscription",
                self.esn_osub.oversubscription,
                "must be >= 1 (1 means non-blocking)",
            ));
        }
        if self.fabric.starts_with("sirius") {
            self.sirius.layout(&self.topology)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = bad("[esn_osub]\noversubscription = 0.5\n");
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

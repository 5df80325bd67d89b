//! The common tables besides the topology: the workload (flow sizes and
//! the traffic pattern), when the run stops, and what it measures.

use crate::error::ConfigError;
use crate::units::{ByteSize, SimTime};
use crate::workload::LoadBasis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

impl PatternKind {
    /// Open-loop Poisson patterns (one generator draws them at a load), the
    /// ones a workload's streams can mix.
    pub fn is_poisson(self) -> bool {
        use PatternKind::*;
        matches!(
            self,
            Uniform | Permutation | Incast | Transpose | Bisection | GroupPermutation | Hotspot
        )
    }
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
pub(super) fn keys_for(
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
    /// More Poisson streams merged with this one into one time-ordered
    /// arrival stream (e.g. incasts on top of Hadoop flows), each with its
    /// own load, pattern and (optionally) sizes. The summary then reports
    /// FCT statistics per stream (`streams`: this one first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlay: Vec<OverlayConfig>,
}

/// One overlaid stream of `workload.overlay`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverlayConfig {
    /// This stream's own offered load, L = F / (R · N · τ) with its F and τ
    /// (0.02: 2 % of the hosts' bandwidth).
    pub load: f64,
    /// Who sends to whom (a Poisson pattern).
    pub pattern: PatternConfig,
    /// Flow sizes (default: the workload's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<SizesConfig>,
}

impl OverlayConfig {
    /// This stream as a workload of its own (checked and generated like one).
    pub fn as_workload(&self, base: &WorkloadConfig) -> WorkloadConfig {
        WorkloadConfig {
            load: self.load,
            load_basis: base.load_basis,
            sizes: self.sizes.clone().unwrap_or_else(|| base.sizes.clone()),
            pattern: self.pattern.clone(),
            overlay: Vec::new(),
        }
    }
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            load: 0.5,
            load_basis: LoadBasis::Nominal,
            sizes: SizesConfig::default(),
            pattern: PatternConfig::default(),
            overlay: Vec::new(),
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

//! The fabric registry: every architecture and baseline declares itself once,
//! here, and everything else — config parsing, `default-config`, `validate`,
//! `photonet.fabrics()`, `compare`, `reproduce`, `bench`, the conformance suite —
//! reads the list [`REGISTRY`] in `fabric/mod.rs`. Adding a fabric touches its
//! own module and, in `fabric/mod.rs`, its `mod` line and one line of the list
//! (see `docs/adding-a-fabric.md`).
//!
//! A fabric module implements [`FabricModule`]: a parameter table (a serde
//! struct whose doc comments and `Default` are the documentation), the
//! `fabric = "…"` values it answers to ([`Variant`]s sharing that table), a
//! `plan` step that derives and checks everything for the chosen variant
//! before any simulated time, a `build` step handed that plan, and the bounds
//! on a lone flow's FCT that the conformance suite checks. A run parses its
//! table once, plans once and builds once ([`FabricSpec::plan`], [`FabricPlan::build`]).

use crate::error::{from_toml_table, ConfigError};
use crate::fabric::Fabric;
pub use crate::fabric::REGISTRY;
use crate::topology::Topology;
use crate::units::SimTime;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::Cell;

/// A fabric's parameter table, read from `[TABLE]` of a config.
pub trait ParamTable: Serialize + DeserializeOwned + Default + JsonSchema + Clone {
    /// The config table's name, e.g. `"sirius"`.
    const TABLE: &'static str;
}

/// One value of `fabric = "…"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The config value, e.g. `"sirius_ideal"`.
    pub name: &'static str,
    /// As shown in tables and plots, e.g. `"SIRIUS (IDEAL)"`.
    pub label: &'static str,
    /// One line: what it models.
    pub description: &'static str,
}

/// The family a fabric belongs to: plots facet by it and the docs group by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Electrical,
    Sirius,
    Negotiator,
    Circuit,
    Hpc,
    Ideal,
}

impl Family {
    /// As shown in plot facets and the docs, e.g. `"HPC / Baldur"`.
    pub fn label(self) -> &'static str {
        match self {
            Family::Electrical => "electrical",
            Family::Sirius => "Sirius",
            Family::Negotiator => "NegotiaToR",
            Family::Circuit => "circuit",
            Family::Hpc => "HPC / Baldur",
            Family::Ideal => "ideal",
        }
    }
}

/// How a variant is shown at a glance: a short label (≤ 12 characters, for
/// terminal tables and legends) and its family. Kept here, keyed by variant
/// name, so fabric modules need not change; a test checks every registered
/// variant has exactly one entry.
pub const LOOKS: &[(&str, &str, Family)] = &[
    ("esn", "ESN", Family::Electrical),
    ("esn_osub", "ESN-OSUB", Family::Electrical),
    ("fat_tree", "fat-tree", Family::Electrical),
    ("leaf_spine", "leaf-spine", Family::Electrical),
    ("sirius", "SIRIUS", Family::Sirius),
    ("sirius_ideal", "SIRIUS-IDEAL", Family::Sirius),
    ("negotiator", "NegTR-par", Family::Negotiator),
    ("negotiator_thin_clos", "NegTR-thin", Family::Negotiator),
    ("mordia", "Mordia", Family::Circuit),
    ("mordia_rr", "Mordia-RR", Family::Circuit),
    ("reactor", "REACToR", Family::Circuit),
    ("reactor_circuit", "circuit-ToR", Family::Circuit),
    ("baldur", "Baldur", Family::Hpc),
    ("multibutterfly", "e-mbfly", Family::Hpc),
    ("dragonfly", "dragonfly", Family::Hpc),
    ("ideal", "ideal", Family::Ideal),
];

/// The short label and family of variant `name` (see [`LOOKS`]).
pub fn looks(name: &str) -> Option<(&'static str, Family)> {
    LOOKS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, short, fam)| (short, fam))
}

/// Everything a fabric is built from besides its own table.
#[derive(Clone, Copy, Debug)]
pub struct BuildContext<'a> {
    pub topology: &'a Topology,
    /// The run's seed; fabrics draw their own named streams from it.
    pub seed: u64,
    /// `metrics.check_invariants`: the fabric may keep extra bookkeeping to check.
    pub check_invariants: bool,
}

#[cfg(test)]
impl<'a> BuildContext<'a> {
    /// Unit tests: `topology`, seed 1, invariants checked.
    pub(crate) fn test(topology: &'a Topology) -> Self {
        BuildContext {
            topology,
            seed: 1,
            check_invariants: true,
        }
    }
}

/// The FCT a lone flow may take in an idle fabric: at least `min`, at most `max`.
/// `min` is bytes/R plus the fabric's fixed latency; `max` is the module's
/// documented bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FctBounds {
    pub min: SimTime,
    pub max: SimTime,
}

/// A part of the memory a fabric allocates up front (at build, or sized by
/// the topology alone), and the config key whose value drives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPart {
    pub bytes: u128,
    /// The key to lower, e.g. `"topology.racks"`, and its value as written.
    pub key: &'static str,
    pub value: String,
    /// What the bytes hold, e.g. `"queues for every pair of ToRs"`.
    pub what: &'static str,
}

impl MemoryPart {
    /// `count` items of `each` bytes (saturating).
    pub fn of(
        count: u128,
        each: u128,
        key: &'static str,
        value: impl ToString,
        what: &'static str,
    ) -> MemoryPart {
        MemoryPart {
            bytes: count.saturating_mul(each),
            key,
            value: value.to_string(),
            what,
        }
    }
}

impl MemoryPart {
    /// `each` bytes per endpoint (racks × servers_per_rack), driven by
    /// `topology.racks`.
    pub fn per_host(ctx: &BuildContext, each: u128, what: &'static str) -> MemoryPart {
        let t = ctx.topology;
        MemoryPart::of(
            t.racks as u128 * t.servers_per_rack as u128,
            each,
            "topology.racks",
            t.racks,
            what,
        )
    }

    /// `each` bytes for every ordered pair of `n` endpoints (ToRs or hosts:
    /// per-pair queues and matrices grow with `topology.racks`²).
    pub fn per_pair(ctx: &BuildContext, n: usize, each: u128, what: &'static str) -> MemoryPart {
        let n = n as u128;
        MemoryPart::of(n * n, each, "topology.racks", ctx.topology.racks, what)
    }
}

/// The one memory check every plan passes ([`FabricSpec::plan`]): a fabric
/// whose estimate exceeds [`crate::units::limits::MEMORY_BYTES`] is refused,
/// naming the key behind its biggest part, before anything is allocated.
pub fn check_memory(v: &Variant, parts: &[MemoryPart]) -> Result<(), ConfigError> {
    let total = parts.iter().fold(0u128, |t, p| t.saturating_add(p.bytes));
    let limit = crate::units::limits::MEMORY_BYTES as u128;
    let Some(big) = parts.iter().max_by_key(|p| p.bytes) else {
        return Ok(());
    };
    if total <= limit {
        return Ok(());
    }
    let gb = |b: u128| b as f64 / (1u64 << 30) as f64;
    Err(ConfigError::new(
        big.key,
        &big.value,
        format!(
            "fabric = \"{}\" would need about {:.3e} GB up front ({:.3e} GB of it for the {}); the limit is {} GB",
            v.name,
            gb(total),
            gb(big.bytes),
            big.what,
            limit >> 30
        ),
    ))
}

/// What a fabric module declares.
pub trait FabricModule: 'static {
    type Params: ParamTable + Send;
    /// What `plan` derives and `build` is built from (`()` when nothing is
    /// derived beyond the checks).
    type Layout: Send;
    /// The `fabric = "…"` values configured by `Params`' table.
    const VARIANTS: &'static [Variant];
    /// Derives and checks everything `variant` needs from the topology and
    /// its table; errors name the key (`<table>.<key>` or `topology.<key>`).
    fn plan(
        p: &Self::Params,
        variant: &Variant,
        ctx: &BuildContext,
    ) -> Result<Self::Layout, ConfigError>;
    /// The memory `build` will allocate for this plan, by part, each with
    /// the key that drives it (an estimate that is not below what the built
    /// fabric holds: tests/memory_estimates.rs measures it). Checked against
    /// the limit by the registry after `plan`, so `plan` itself must not
    /// allocate by the topology's size beyond the layout it returns.
    fn memory(
        p: &Self::Params,
        layout: &Self::Layout,
        variant: &Variant,
        ctx: &BuildContext,
    ) -> Vec<MemoryPart>;
    /// Builds the fabric from its plan.
    fn build(
        p: Self::Params,
        layout: Self::Layout,
        variant: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError>;
    /// `plan`, then `build`: the fabric from its parameters alone (unit
    /// tests; runs go through [`FabricSpec::plan`]).
    fn plan_and_build(
        p: Self::Params,
        variant: &Variant,
        ctx: &BuildContext,
    ) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let layout = Self::plan(&p, variant, ctx)?;
        Self::build(p, layout, variant, ctx)
    }
    /// Bounds on the FCT of lone flow `f` starting in an idle fabric
    /// (checked by the conformance suite).
    fn lone_flow_fct(p: &Self::Params, f: &LoneFlow) -> Result<FctBounds, ConfigError>;
    /// Keys of the table that `variant` never reads with parameters `p`
    /// (another variant's own parameters, or an option of a mode `p` does not
    /// select). They are left out of its complete config, so a result is
    /// keyed only on what made it (a reading that moves only the dragonfly
    /// reuses the multi-butterfly's runs), and setting one is a warning.
    fn unread_keys(_variant: &Variant, _p: &Self::Params) -> &'static [&'static str] {
        &[]
    }
    /// Why [`FabricModule::unread_keys`] are unread when it is a parameter's
    /// choice, not the variant's (the warning's "but `<this>` does not read
    /// it", e.g. `algorithm = "negotiator"`); `None`: the variant's
    /// (`fabric = "<name>"`).
    fn unread_because(_variant: &Variant, _p: &Self::Params) -> Option<String> {
        None
    }
}

/// A lone flow of `bytes` from `src` to `dst` in an idle fabric of `variant`
/// built in `ctx`: what [`FabricModule::lone_flow_fct`] bounds.
#[derive(Clone, Copy, Debug)]
pub struct LoneFlow<'a> {
    pub variant: &'a Variant,
    pub ctx: &'a BuildContext<'a>,
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
}

impl<'a> LoneFlow<'a> {
    pub fn new(
        variant: &'a Variant,
        ctx: &'a BuildContext,
        src: u32,
        dst: u32,
        bytes: u64,
    ) -> Self {
        LoneFlow {
            variant,
            ctx,
            src,
            dst,
            bytes,
        }
    }
}

/// A fabric planned for one variant: its parameters, parsed once, and its
/// layout, derived once; [`FabricPlan::build`] consumes it.
pub struct FabricPlan {
    inner: Box<dyn Planned>,
}

trait Planned: Send {
    fn build(self: Box<Self>, ctx: &BuildContext) -> Result<Box<dyn Fabric + Send>, ConfigError>;
}

struct PlannedBy<M: FabricModule> {
    params: M::Params,
    layout: M::Layout,
    variant: &'static Variant,
}

impl<M: FabricModule> Planned for PlannedBy<M> {
    fn build(self: Box<Self>, ctx: &BuildContext) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        let me = *self;
        M::build(me.params, me.layout, me.variant, ctx)
    }
}

thread_local! {
    /// Fabrics built on this thread (see [`builds_on_this_thread`]).
    static BUILDS: Cell<u64> = const { Cell::new(0) };
}

/// How many fabrics [`FabricPlan::build`] has built on the calling thread: a test
/// counts the builds of one run with it (a run is prepared on one thread).
pub fn builds_on_this_thread() -> u64 {
    BUILDS.with(|b| b.get())
}

impl FabricPlan {
    /// Builds the fabric (`ctx` as given to [`FabricSpec::plan`]).
    pub fn build(self, ctx: &BuildContext) -> Result<Box<dyn Fabric + Send>, ConfigError> {
        BUILDS.with(|b| b.set(b.get() + 1));
        self.inner.build(ctx)
    }
}

/// Type-erased [`FabricModule::plan`] over a raw table.
type PlanFn = fn(&toml::Table, &'static Variant, &BuildContext) -> Result<FabricPlan, ConfigError>;
/// Type-erased plan-then-[`FabricModule::memory`] over a raw table.
type MemoryFn = fn(&toml::Table, &Variant, &BuildContext) -> Result<u128, ConfigError>;
/// Type-erased [`FabricModule::lone_flow_fct`] over a raw table.
type BoundsFn = fn(&toml::Table, &LoneFlow) -> Result<FctBounds, ConfigError>;

/// A registered fabric module, type-erased.
pub struct FabricSpec {
    pub table: &'static str,
    pub variants: &'static [Variant],
    complete: fn(&toml::Table) -> Result<toml::Table, ConfigError>,
    plan: PlanFn,
    memory: MemoryFn,
    bounds: BoundsFn,
    schema: fn() -> schemars::Schema,
    unread: UnreadFn,
}

/// Type-erased [`FabricModule::unread_keys`] and
/// [`FabricModule::unread_because`] over a complete table, parsed once.
type UnreadFn = fn(&Variant, &toml::Table) -> (&'static [&'static str], Option<String>);

fn params<P: ParamTable>(t: &toml::Table) -> Result<P, ConfigError> {
    from_toml_table(t, P::TABLE)
}

fn complete<M: FabricModule>(t: &toml::Table) -> Result<toml::Table, ConfigError> {
    let p: M::Params = params(t)?;
    Ok(toml::Table::try_from(&p).expect("a parameter table serialises"))
}

fn plan<M: FabricModule>(
    t: &toml::Table,
    variant: &'static Variant,
    ctx: &BuildContext,
) -> Result<FabricPlan, ConfigError> {
    let params: M::Params = params(t)?;
    let layout = M::plan(&params, variant, ctx)?;
    check_memory(variant, &M::memory(&params, &layout, variant, ctx))?;
    Ok(FabricPlan {
        inner: Box::new(PlannedBy::<M> {
            params,
            layout,
            variant,
        }),
    })
}

fn memory<M: FabricModule>(
    t: &toml::Table,
    v: &Variant,
    ctx: &BuildContext,
) -> Result<u128, ConfigError> {
    let params: M::Params = params(t)?;
    let layout = M::plan(&params, v, ctx)?;
    let parts = M::memory(&params, &layout, v, ctx);
    Ok(parts.iter().fold(0u128, |t, p| t.saturating_add(p.bytes)))
}

fn unread<M: FabricModule>(
    v: &Variant,
    t: &toml::Table,
) -> (&'static [&'static str], Option<String>) {
    // A table that does not parse is refused by `plan`, which names the key;
    // here it only keeps every key.
    match params::<M::Params>(t) {
        Ok(p) => (M::unread_keys(v, &p), M::unread_because(v, &p)),
        Err(_) => (&[], None),
    }
}

fn bounds<M: FabricModule>(t: &toml::Table, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
    M::lone_flow_fct(&params(t)?, f)
}

fn schema<M: FabricModule>() -> schemars::Schema {
    schemars::schema_for!(M::Params)
}

impl FabricSpec {
    pub const fn of<M: FabricModule>() -> FabricSpec {
        FabricSpec {
            table: <M::Params as ParamTable>::TABLE,
            variants: M::VARIANTS,
            complete: complete::<M>,
            plan: plan::<M>,
            memory: memory::<M>,
            bounds: bounds::<M>,
            schema: schema::<M>,
            unread: unread::<M>,
        }
    }

    /// Removes from `t` (this spec's complete table) the keys `v` never reads
    /// ([`FabricModule::unread_keys`]); returns those whose value was not the
    /// default (set by the user, so worth a warning), and why they are unread
    /// when a parameter of `t` decides it, not the variant
    /// ([`FabricModule::unread_because`], e.g. `algorithm = "negotiator"`).
    pub fn drop_unread(
        &self,
        v: &Variant,
        t: &mut toml::Table,
    ) -> (Vec<&'static str>, Option<String>) {
        let (keys, because) = (self.unread)(v, t);
        if keys.is_empty() {
            return (Vec::new(), because);
        }
        let defaults = self.defaults();
        let set = keys
            .iter()
            .copied()
            .filter(|k| matches!(t.remove(*k), Some(x) if defaults.get(*k) != Some(&x)))
            .collect();
        (set, because)
    }

    /// Parses the table (unknown keys and malformed values are errors naming
    /// `<table>.<key>`) and returns it complete, every default filled in.
    pub fn complete(&self, t: &toml::Table) -> Result<toml::Table, ConfigError> {
        (self.complete)(t)
    }
    /// Parses the table (defaults where not given) and plans variant `v`:
    /// every check before any simulated time.
    pub fn plan(
        &self,
        t: &toml::Table,
        v: &'static Variant,
        ctx: &BuildContext,
    ) -> Result<FabricPlan, ConfigError> {
        (self.plan)(t, v, ctx)
    }
    /// The plan's memory estimate in bytes (what the limit is checked
    /// against; errors as [`FabricSpec::plan`]'s, except the limit's).
    pub fn memory(
        &self,
        t: &toml::Table,
        v: &Variant,
        ctx: &BuildContext,
    ) -> Result<u128, ConfigError> {
        (self.memory)(t, v, ctx)
    }
    /// Parses the table and bounds the FCT of lone flow `f` (see
    /// [`FabricModule::lone_flow_fct`]).
    pub fn lone_flow_fct(&self, t: &toml::Table, f: &LoneFlow) -> Result<FctBounds, ConfigError> {
        (self.bounds)(t, f)
    }
    /// The table's JSON schema: a description per key from its doc comment,
    /// and defaults.
    pub fn schema(&self) -> schemars::Schema {
        (self.schema)()
    }
    /// The statistics this table's fabrics declare (see
    /// [`stats_decl`](crate::fabric::stats_decl)).
    pub fn stats(&self) -> &'static [crate::fabric::stats_decl::StatDecl] {
        crate::fabric::stats_decl::declared(self.table)
    }
    /// The complete default table.
    pub fn defaults(&self) -> toml::Table {
        self.complete(&toml::Table::new())
            .expect("the default table is valid")
    }
}

/// The spec and variant answering to `fabric = name`.
pub fn find(name: &str) -> Option<(&'static FabricSpec, &'static Variant)> {
    REGISTRY
        .iter()
        .find_map(|s| s.variants.iter().find(|v| v.name == name).map(|v| (s, v)))
}

/// The spec owning config table `table`.
pub fn by_table(table: &str) -> Option<&'static FabricSpec> {
    REGISTRY.iter().find(|s| s.table == table)
}

/// Every `fabric = "…"` value, in registry order.
pub fn names() -> Vec<&'static str> {
    variants().map(|(_, v)| v.name).collect()
}

/// Every (spec, variant), in registry order.
pub fn variants() -> impl Iterator<Item = (&'static FabricSpec, &'static Variant)> {
    REGISTRY
        .iter()
        .flat_map(|s| s.variants.iter().map(move |v| (s, v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tables_are_unique() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        let mut tables: Vec<_> = REGISTRY.iter().map(|s| s.table).collect();
        tables.sort();
        tables.dedup();
        assert_eq!(tables.len(), REGISTRY.len());
        for s in REGISTRY {
            assert!(!s.variants.is_empty(), "{} has no variant", s.table);
            for v in s.variants {
                assert!(
                    !v.description.is_empty() && !v.label.is_empty(),
                    "{}",
                    v.name
                );
            }
        }
    }

    #[test]
    fn every_variant_has_a_short_label_and_a_family() {
        for name in names() {
            let n = LOOKS.iter().filter(|(k, _, _)| *k == name).count();
            assert_eq!(
                n, 1,
                "fabric {name:?} needs exactly one entry in LOOKS (has {n})"
            );
            let (short, _) = looks(name).unwrap();
            assert!(
                !short.is_empty() && short.chars().count() <= 12,
                "{name}: short label {short:?} must be 1–12 characters"
            );
        }
        for (k, _, _) in LOOKS {
            assert!(
                find(k).is_some(),
                "LOOKS names {k:?}, which is not registered"
            );
        }
        let mut shorts: Vec<_> = LOOKS.iter().map(|l| l.1).collect();
        shorts.sort();
        shorts.dedup();
        assert_eq!(shorts.len(), LOOKS.len(), "short labels must be unique");
    }

    #[test]
    fn every_parameter_has_a_doc_comment() {
        for s in REGISTRY {
            let schema = s.schema();
            let props = schema
                .get("properties")
                .and_then(|p| p.as_object())
                .unwrap_or_else(|| panic!("{}: schema has no properties", s.table));
            for (k, v) in props {
                let doc = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                assert!(!doc.trim().is_empty(), "{}.{k} has no doc comment", s.table);
            }
        }
    }

    #[test]
    fn unknown_keys_in_a_table_are_named() {
        let (spec, _) = find("sirius").unwrap();
        let t: toml::Table = toml::from_str("queue_bund = 3").unwrap();
        let e = spec.complete(&t).unwrap_err();
        assert!(
            e.key.starts_with("sirius") && e.reason.contains("queue_bund"),
            "{e}"
        );
    }
}

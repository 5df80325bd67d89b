//! photonet: a fast, reproducible, packet-level simulator for optically switched
//! datacenter networks.
//!
//! The spine is the [`fabric::Fabric`] trait: every architecture and baseline
//! takes flows in and reports completions, so every workload, metric and sweep
//! works for all of them. Each fabric declares itself once in
//! [`fabric::registry`]. [`simulate`] builds a fabric and a workload from a
//! [`config::Config`] and runs them.
//!
//! Layers (each uses only the ones above it; no import cycles):
//! 1. core: [`units`], [`rng`], [`error`], [`files`] (bounded reads of input
//!    files), [`flow`], [`topology`], [`queue`]
//!    (event queue, slot clock), [`timer`] (cancellable timers), [`pool`]
//!    (index-addressed pools and FIFOs), [`delivery`] (in-order delivery),
//!    [`access`] (slotted host–ToR access links), [`host_edge`] (a ToR's
//!    queues draining to its hosts), [`recorder`] (what fabrics report);
//! 2. [`workload`], [`sched`] (pure algorithms), [`model`] (analytical models),
//!    [`net`] (the packet substrate of buffered fabrics: ports, links,
//!    routing, transports);
//! 3. [`fabric`]: the trait, the architectures, the registry;
//! 4. [`engine`]: the run loop, and [`dependent`] (flows released by
//!    completions of others: collectives);
//! 5. [`config`] and [`metrics`], then [`run`]: config → registry → fabric +
//!    workload → results.
#![forbid(unsafe_code)]

// 1. core
pub mod access;
pub mod delivery;
pub mod error;
pub mod files;
pub mod flow;
pub mod host_edge;
pub mod pool;
pub mod queue;
pub mod recorder;
pub mod rng;
pub mod timer;
pub mod topology;
pub mod units;
// 2. workloads, algorithms, models, the packet substrate
pub mod model;
pub mod net;
pub mod sched;
pub mod workload;
// 3. fabrics
pub mod fabric;
// 4. the run loop
pub mod dependent;
pub mod engine;
// 5. configs, metrics, runs
pub mod config;
pub mod metrics;
pub mod run;
pub mod sanity;
pub mod scenarios;

pub use config::{Config, ConfigError};
pub use run::{prepare, simulate, Prepared, RunResult};
pub use sanity::RunError;

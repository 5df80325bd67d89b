//! photonet: a fast, reproducible, packet-level simulator for optically switched
//! datacenter networks.
//!
//! The spine is the [`fabric::Fabric`] trait: every architecture and baseline
//! takes flows in and reports completions, so every workload, metric and sweep
//! works for all of them. [`simulate`] builds a fabric and a workload from a
//! [`config::Config`] and runs them.

pub mod config;
pub mod engine;
pub mod fabric;
pub mod metrics;
pub mod model;
pub mod rng;
pub mod run;
pub mod sched;
pub mod units;
pub mod workload;

pub use config::{Config, ConfigError};
pub use run::{prepare, simulate, Prepared, RunResult};

//! The end-to-end tests, as one test binary: each file of `tests/` is a module
//! here (`cargo test --release -p photonet --test integration ndp::` runs one
//! file's tests). One binary instead of one per file saved 15 s of a 168 s
//! build (319 → 279 s of CPU: the links and the crate's generics instantiated
//! once). `memory_estimates.rs` stays a binary of its own: its counting
//! allocator must see its own tests only.

mod common;

mod advance_until;
mod baldur_hotspot;
mod closed_loop;
mod collectives;
mod conformance;
mod defects;
mod esn;
mod fat_tree;
mod fuzz_fabrics;
mod fuzz_parsers;
mod hostile;
mod layers;
mod mixed_streams;
mod ndp;
mod negotiator;
mod net_exact;
mod net_lazy;
mod pfabric;
mod recorder_point;
mod result_keys;
mod sirius;

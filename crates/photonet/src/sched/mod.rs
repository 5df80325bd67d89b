//! Pure scheduling and allocation algorithms, testable without a simulation.

pub mod awgr;
pub mod maxmin;
pub mod negotiator;
pub mod sharing;
pub mod sirius;
pub mod solstice;
pub mod tms;

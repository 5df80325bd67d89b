//! The common topology every fabric is built from: racks of servers with
//! uplinks towards the network core. Each fabric decides what its endpoints are
//! (servers, or racks when `servers_per_rack = 1`).

use crate::error::ConfigError;
use crate::units::Rate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most endpoints (racks × servers per rack) a topology may have.
pub const MAX_HOSTS: usize = 1 << 24;

/// Racks of servers; every fabric sees the servers as its endpoints. A
/// server-based deployment is `servers_per_rack = 1`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.racks == 0 {
            return Err(ConfigError::new(
                "topology.racks",
                0,
                "need at least one rack",
            ));
        }
        if self.servers_per_rack == 0 {
            return Err(ConfigError::new(
                "topology.servers_per_rack",
                0,
                "need at least one server per rack",
            ));
        }
        if self.hosts() > MAX_HOSTS {
            return Err(ConfigError::new(
                "topology",
                format!("{} racks x {} servers", self.racks, self.servers_per_rack),
                format!(
                    "{} endpoints; photonet simulates at most {MAX_HOSTS} (2^24)",
                    self.hosts()
                ),
            ));
        }
        if self.hosts() < 2 {
            return Err(ConfigError::new(
                "topology",
                format!("{} host", self.hosts()),
                "need at least two servers in all",
            ));
        }
        if self.uplinks == 0 {
            return Err(ConfigError::new(
                "topology.uplinks",
                0,
                "need at least one uplink per rack",
            ));
        }
        if self.uplink_rate.0 == 0 {
            return Err(ConfigError::new(
                "topology.uplink_rate",
                "\"0bps\"",
                "a rate must be > 0",
            ));
        }
        if let Some(r) = self.server_rate {
            if r.0 == 0 {
                return Err(ConfigError::new(
                    "topology.server_rate",
                    "\"0bps\"",
                    "a rate must be > 0",
                ));
            }
        }
        if self.host_rate().0 == 0 {
            return Err(ConfigError::new(
                "topology.servers_per_rack",
                self.servers_per_rack,
                "leaves each server a zero rate",
            ));
        }
        Ok(())
    }
}

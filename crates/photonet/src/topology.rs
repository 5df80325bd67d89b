//! The common topology every fabric is built from: racks of servers with
//! uplinks towards the network core. Each fabric decides what its endpoints are
//! (servers, or racks when `servers_per_rack = 1`).

use crate::error::ConfigError;
use crate::rng::SimRng;
use crate::units::{limits, Rate};
use rand::Rng;
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
        // uplinks × uplink_rate in 128 bits: the product can pass 2^64, where
        // it would wrap to a small, plausible-looking rate.
        let rack_bps = self.uplinks as u128 * self.uplink_rate.0 as u128;
        if rack_bps > limits::RATE_BPS as u128 * self.servers_per_rack.max(1) as u128
            && self.server_rate.is_none()
        {
            return Err(ConfigError::new(
                "topology.uplinks",
                self.uplinks,
                format!(
                    "{} uplinks x {} b/s give each server {} b/s, above photonet's limit of 2^50 b/s; \
                     set topology.server_rate or fewer/slower uplinks",
                    self.uplinks,
                    self.uplink_rate.0,
                    rack_bps / self.servers_per_rack.max(1) as u128
                ),
            ));
        }
        if rack_bps > u64::MAX as u128 {
            return Err(ConfigError::new(
                "topology.uplinks",
                self.uplinks,
                format!(
                    "{} uplinks x {} b/s is {rack_bps} b/s per rack, more than photonet can count (2^64 b/s)",
                    self.uplinks, self.uplink_rate.0
                ),
            ));
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

/// The multi-butterfly's inter-stage wiring, shared by the all-optical fabric
/// (`fabric::baldur`), its electrical baseline (`net::multibutterfly`) and the
/// scale model (`model::baldur`): one seed gives all three one wiring.
///
/// Wires the outputs of stage `s` (< k−1) of a 2^k-node multi-butterfly of
/// multiplicity m: `next[port]` becomes the switch of stage s+1 that output
/// `port` = (switch·2 + direction)·m + j feeds. Within each sorting group and
/// direction the outputs are mapped onto the inputs of the group's child by a
/// random permutation drawn from `rng` (None: in order). `perm` is scratch.
pub fn wire_stage(
    k: u32,
    m: u32,
    s: u32,
    mut rng: Option<&mut SimRng>,
    perm: &mut Vec<u32>,
    next: &mut [u32],
) {
    let n = 1usize << k;
    let mu = m as usize;
    let s = s as usize;
    let g_size = n >> (s + 1); // switches per group at stage s
    let g_next = g_size / 2; // per group at stage s+1
    for g in 0..(1usize << s) {
        for b in 0..2usize {
            // g_size·m outputs onto g_next·2m inputs.
            let count = g_size * mu;
            perm.clear();
            perm.extend(0..count as u32);
            if let Some(r) = rng.as_deref_mut() {
                for i in (1..count).rev() {
                    let j = r.random_range(0..=i);
                    perm.swap(i, j);
                }
            }
            let base_next = (2 * g + b) * g_next;
            for i in 0..g_size {
                let sw = g * g_size + i;
                for j in 0..mu {
                    next[(sw * 2 + b) * mu + j] =
                        (base_next + perm[i * mu + j] as usize / (2 * mu)) as u32;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(servers_per_rack: u32, uplinks: u32, server_rate: Option<Rate>) -> Topology {
        Topology {
            racks: 4,
            servers_per_rack,
            uplinks,
            uplink_rate: Rate::gbps(50),
            server_rate,
        }
    }

    /// 4e8 uplinks × 50 Gb/s = 2e19 b/s, past 2^64: it used to wrap to a
    /// plausible 1.55e18 b/s per server; now it is refused, as is a derived
    /// rate above 2^50 b/s that does not wrap.
    #[test]
    fn a_derived_server_rate_never_wraps_nor_passes_the_limit() {
        let e = topo(1, 400_000_000, None)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.uplinks") && e.contains("2^50"), "{e}");
        let e = topo(1, 30_000, None).validate().unwrap_err().to_string(); // 1.5e15 > 2^50
        assert!(e.contains("2^50"), "{e}");
        assert!(topo(1, 20_000, None).validate().is_ok()); // 1e15 < 2^50 ≈ 1.13e15
        let e = topo(1, 400_000_000, Some(Rate::gbps(10)))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("2^64"), "{e}");
        assert!(topo(2, 30_000, Some(Rate::gbps(10))).validate().is_ok());
    }
}

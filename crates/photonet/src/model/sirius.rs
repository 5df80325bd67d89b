//! Analytical power and cost model of Sirius §5 ("Cost and power analysis",
//! Fig. 6): an electrically-switched folded Clos (ESN), the same Clos
//! oversubscribed (ESN-OSUB), Sirius (rack switches, one layer of passive
//! gratings, tunable transceivers), and an electrically-switched Sirius in which
//! each grating is replaced by an electrical switch plus transceivers.
//!
//! Every count is derived from the topology; nothing is a hard-coded total.
//! Power is in watts, cost in US dollars, bandwidth as [`Rate`].
//!
//! # Accounting rules (all architectures)
//!
//! * **Ports.** Bandwidth is counted in *ports* at the transceiver rate. A
//!   switch has `k = switch_capacity / transceiver_rate` ports (25.6 Tbps /
//!   400 Gbps = **64**). A rack's servers need `S = ⌈rack_server_rate /
//!   transceiver_rate⌉` switch ports (12.8 Tbps / 400 Gbps = **32**).
//! * **Switches.** Each switch layer is charged `⌈ports used in the layer / k⌉`
//!   whole switches. For the rack layer this is a capacity equivalent: a rack
//!   switch with 96 ports is charged 1.5 × a 25.6 Tbps switch (a rack cannot
//!   share an ASIC with its neighbour, but a 38.4 Tbps rack switch would be one
//!   bigger ASIC, and the paper scales "rack uplink capacity", not ASIC counts).
//! * **Transceivers.** Every switch-to-switch (or rack-to-switch) link has a
//!   transceiver at each end, i.e. 2 per link. This is the paper's own rule in
//!   §2 (Fig. 2a: "connecting two nodes directly with an optical transceiver
//!   plus fiber consumes only 50 W/Tbps" = 2 × 10 W / 0.4 Tbps). Server-to-rack
//!   links are in-rack copper, identical in every architecture, and are left
//!   out. A Sirius uplink has one transceiver at the rack and none at the
//!   grating (the grating is passive).
//! * **Lasers.** A fixed laser is `laser_power_share` of a transceiver's power
//!   (1 W of 10 W = 10 %, §5: "~1 W for fixed laser") and `laser_cost_share`
//!   of its cost (no figure in the paper; we assume the same 10 %). A tunable
//!   transceiver is a fixed one whose laser costs `tunable_*_multiplier` times
//!   as much: `P_tunable = P · (1 − share + share · m)`, e.g. 10 W · (0.9 +
//!   0.1 · 3) = 12 W. Laser sharing across transceivers (§4.5) is not modelled
//!   (conservative for Sirius).
//! * **Gratings.** Passive: 0 W. A grating costs `grating_cost_fraction` of an
//!   electrical switch *with the same number of ports* (per port at the
//!   transceiver rate), so the grating bill is `fraction × switch_cost ×
//!   (grating ports / k)`. This is independent of how a 400 Gbps transceiver's
//!   lanes are spread over gratings; charging 25 % of a switch per grating
//!   *device* instead would make the bill depend on lane granularity (with
//!   50 Gbps lanes, 8-port gratings: 256,000 devices).
//!
//! # ESN: non-blocking folded Clos (defaults: 4,000 racks)
//!
//! Racks are the bottom layer; level `i` above them has switches with `d_i`
//! down-ports and `k − d_i` up-ports (`d_i = k/2 = 32` when non-blocking); the
//! top level has all `k` ports down. One level-1 "pod" of `d_1` racks is served
//! by as many level-1 switches as a rack has uplinks, and so on up, so `L`
//! levels above the racks reach `k · d_1 ⋯ d_{L−1}` racks: 64, 2,048, 65,536.
//! 4,000 racks therefore need **L = 3** levels above the racks: **four layers
//! of switches** counting the racks, as in §5. Rack uplinks `u = S = 32`
//! (non-blocking), so each of the `L` link layers carries `E = 4,000 · 32 =
//! 128,000` links:
//!
//! * rack switches: ⌈4,000 · (32 + 32) / 64⌉ = 4,000
//! * levels 1 and 2: ⌈(E + E)/64⌉ = 4,000 each; top: ⌈E/64⌉ = 2,000
//!   → 14,000 switches = 7.0 MW, $70 M
//! * transceivers: 2 · 3 · 128,000 = 768,000 = 7.68 MW, $307.2 M
//!   (6 per rack uplink port; an end-to-end path crosses 6 links, i.e. six
//!   transceivers' worth of one direction's capacity: §5's "up to six
//!   transceivers across an end-to-end path")
//! * total 14.68 MW, $377.2 M.
//!
//! # ESN-OSUB: oversubscribed by `oversubscription` (3:1)
//!
//! With `oversubscription_tier = 0` (default, as the simulator's ESN-OSUB
//! fabric: oversubscribed at the rack uplinks), each rack has `⌈32 / 3⌉ = 11`
//! uplinks, `E = 44,000`, the same three levels (the pods do not change): rack
//! switches ⌈4,000 · 43 / 64⌉ = 2,688, levels 1,375 + 1,375 + 688, transceivers
//! 2 · 3 · 44,000 = 264,000 → 5.70 MW, $136.2 M. With tier `t ≥ 1` the links
//! between the racks and level `t` stay non-blocking and the link layers from
//! level `t` up carry `⌈E / 3⌉`; level-`t` switches then have `k · 3/4 = 48`
//! down-ports, which can also change the number of levels.
//!
//! # Sirius
//!
//! Rack uplink capacity is multiplied by `sirius_uplink_factor` (2: §5 "we
//! double the number of transceivers and rack uplink capacity"): `u_s =
//! ⌈2 · 32⌉ = 64` tunable transceivers per rack, each of `lanes_per_transceiver`
//! (8 × 50 Gbps) lanes going to a different grating (§4.1: 256 × 50 Gbps rack
//! uplinks; 4,096 racks "through just 16-port gratings"). With `U = 64 · 8 =
//! 512` lanes per rack, a grating needs `G = ⌈N / U⌉ = 8` ports so every rack
//! reaches every other, and there are `⌈N · U / G⌉ = 256,000` gratings.
//!
//! * rack switches: ⌈4,000 · (32 + 64) / 64⌉ = 6,000 = 3.0 MW, $30 M
//! * tunable transceivers: 4,000 · 64 = 256,000; at 3× laser power 12 W each
//!   = 3.07 MW; at 3× laser cost $480 each = $122.9 M
//! * gratings: 0.25 · $5,000 · 256,000 / 64 = $5 M, 0 W
//! * total 6.07 MW (41 % of ESN), $157.9 M (42 % of ESN).
//!
//! # Sirius, electrically switched
//!
//! Same racks and rack uplinks (fixed transceivers), and each grating port
//! becomes an electrical switch port reached through a transceiver at each end
//! (the replacement switch sees `⌈N / u_s⌉ = 63` racks, ≤ k): middle switches
//! ⌈256,000 / 64⌉ = 4,000, transceivers 2 · 256,000 → $254.8 M, 10.12 MW.
//!
//! # §2's scale tax (Fig. 2a)
//!
//! [`scale_tax`] builds the largest non-blocking folded Clos of 64-port
//! switches with 0…4 switch layers over 400 Gbps nodes, with the same rules
//! (every link, the nodes' own included, has a transceiver at each end) and
//! divides its power by the bisection bandwidth `nodes · 400 Gbps / 2`. A
//! direct link is 2 × 10 W / 0.4 Tbps = **50 W/Tbps**; three layers reach
//! 65,536 nodes, so "more than 65 K nodes" needs four, at 7 switch ports
//! (54.7 W) and 8 transceivers (80 W) per node: **673 W/Tbps** of bisection
//! (337 per Tbps of node capacity). This is the topology's own count: a path
//! up and down four layers crosses eight links.
//!
//! # The model's ratios
//!
//! Sirius relative to each baseline (tunable laser 3× a fixed one's power or
//! cost, 5× where stated), for the defaults and with the two boundary knobs:
//!
//! | Sirius relative to         | defaults     | no rack switches | OSUB tier 1 | both         |
//! |----------------------------|--------------|------------------|-------------|--------------|
//! | ESN power, 3× … 5×         | 41.4–44.9 %  | 24.2–28.3 %      | 41.4–44.9 % | 24.2–28.3 %  |
//! | ESN cost                   | 41.9 %       | 35.8 %           | 41.9 %      | 35.8 %       |
//! | ESN-OSUB 3:1 cost          | 115.9 %      | 104.2 %          | 73.8 %      | 65.9 %       |
//! | electrical Sirius cost     | 62.0 %       | 56.9 %           | 62.0 %      | 56.9 %       |
//! | (ESN-OSUB / ESN cost)      | 36.1 %       | 34.4 %           | 56.7 %      | 54.3 %       |
//!
//! Per 400 Gbps rack server port:
//!
//! * **Power.** ESN needs 7 switch ports (54.7 W) and 6 transceivers (60 W) =
//!   114.7 W; Sirius 3 switch ports (23.4 W: doubling the uplinks makes the
//!   rack switch 1.5× larger) and 2 tunable transceivers (24 W at 3×) = 47.4 W.
//!   The tunable transceivers alone are 21 % of ESN; without rack switches
//!   (`count_rack_switches = false`) only they and ESN's core remain.
//! * **Cost.** ESN is 7 × $78 + 6 × $400 = $2,947 per port, 81 % of it
//!   transceivers. Sirius's 2 transceivers per port cost $800 = 27.1 % of ESN
//!   before the tunable-laser premium (+$160), gratings (+$39) and rack
//!   switch (+$234).
//! * **ESN-OSUB.** Oversubscribing at the rack uplinks (the default, as the
//!   simulator's `esn_osub`) thins all three link layers: 36 % of ESN.
//!   Oversubscribing at the first aggregation tier (§7: "3:1
//!   oversubscription at the aggregation tier beyond the racks",
//!   `oversubscription_tier = 1`) gives 57 %.
//! * **Electrical Sirius.** Each grating port becomes a switch port and a
//!   second fixed transceiver.
//!
//! The paper's published numbers are not in this module: they are in
//! `experiments/sirius/model_s5.toml`, which picks the model's values out of
//! [`Report::paper_points`] and puts them next to the paper's (with why they
//! differ); `photonet reproduce sirius` evaluates it. The parameters are
//! deliberately not tuned to those numbers.

use crate::error::{from_toml_text, ConfigError};
use crate::units::Rate;
use serde::{Deserialize, Serialize};

/// Parameters of the power and cost model. Defaults are the paper's §5 numbers
/// plus the documented assumptions in the module docs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ModelParams {
    /// Number of racks (count). §5: 4,000.
    pub racks: u32,
    /// Aggregate server-facing bandwidth of one rack switch. Default 12.8 Tbps:
    /// half of a 25.6 Tbps rack switch (§4.1: 512 SERDESes, 256 of them
    /// uplinks). In the non-blocking ESN this is also the rack's uplink
    /// capacity.
    pub rack_server_rate: Rate,
    /// Switching capacity of one electrical switch. §5: 25.6 Tbps.
    pub switch_capacity: Rate,
    /// Power of one electrical switch, in W. §5: 500 W.
    pub switch_power_w: f64,
    /// Cost of one electrical switch, in $. §5: $5,000.
    pub switch_cost_usd: f64,
    /// Rate of one transceiver (and of one switch port). §5: 400 Gbps.
    pub transceiver_rate: Rate,
    /// Power of one fixed-wavelength transceiver, in W. §5: 10 W.
    pub transceiver_power_w: f64,
    /// Cost of a fixed-wavelength transceiver per Gbps of its rate, in $/Gbps.
    /// §5: $1/Gbps (so $400 per 400 Gbps transceiver).
    pub transceiver_cost_usd_per_gbps: f64,
    /// Optical lanes (wavelength channels) per transceiver, each going to its
    /// own grating port (count). Default 8 (400 Gbps = 8 × 50 Gbps, the
    /// prototype's channel rate). Only sets grating sizes and device counts;
    /// grating cost is per port-equivalent and does not depend on it.
    pub lanes_per_transceiver: u32,
    /// Share of a fixed transceiver's power drawn by its laser, in [0, 1].
    /// Default 0.1 (§5: ~1 W fixed laser in a 10 W transceiver).
    pub laser_power_share: f64,
    /// Share of a fixed transceiver's cost due to its laser, in [0, 1].
    /// Default 0.1: an assumption (the paper gives no split), taken equal to the
    /// power share.
    pub laser_cost_share: f64,
    /// Power of a tunable laser relative to a fixed one (≥ 1). §5: 3–5×.
    pub tunable_power_multiplier: f64,
    /// Cost of a tunable laser relative to a fixed one (≥ 1). §5: 3× (5× for
    /// the error bars of Fig. 6b).
    pub tunable_cost_multiplier: f64,
    /// Cost of a grating relative to an electrical switch with the same number
    /// of ports, in [0, 1]. §5: 25 %.
    pub grating_cost_fraction: f64,
    /// Largest grating that can be built, in ports (= wavelengths a laser must
    /// tune across). §4.1: 100.
    pub max_grating_ports: u32,
    /// Sirius rack uplink capacity relative to the rack's server capacity
    /// (≥ 1). §5: 2 ("we double the number of transceivers and rack uplink
    /// capacity"); §7 simulates 1.5.
    pub sirius_uplink_factor: f64,
    /// ESN-OSUB oversubscription ratio, server capacity : capacity above (≥ 1).
    /// §5: 3 (3:1).
    pub oversubscription: f64,
    /// Where ESN-OSUB is oversubscribed: 0 = at the rack uplinks (as the
    /// simulator's `esn_osub` fabric), `t` ≥ 1 = on the links above switch
    /// level `t` (1 = above the first aggregation layer). Must be below the
    /// number of switch levels above the racks.
    pub oversubscription_tier: u32,
    /// Whether rack switches are inside the network boundary (true) or, like
    /// the servers, left out of every architecture (false). Rack uplink
    /// transceivers are counted either way.
    pub count_rack_switches: bool,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            racks: 4_000,
            rack_server_rate: Rate::gbps(12_800),
            switch_capacity: Rate::gbps(25_600),
            switch_power_w: 500.0,
            switch_cost_usd: 5_000.0,
            transceiver_rate: Rate::gbps(400),
            transceiver_power_w: 10.0,
            transceiver_cost_usd_per_gbps: 1.0,
            lanes_per_transceiver: 8,
            laser_power_share: 0.1,
            laser_cost_share: 0.1,
            tunable_power_multiplier: 3.0,
            tunable_cost_multiplier: 3.0,
            grating_cost_fraction: 0.25,
            max_grating_ports: 100,
            sirius_uplink_factor: 2.0,
            oversubscription: 3.0,
            oversubscription_tier: 0,
            count_rack_switches: true,
        }
    }
}

/// Largest component count the model handles (well inside f64's exact
/// integers and u64).
const MAX_COUNT: f64 = 1e15;

fn check_positive(key: &str, v: f64, unit: &str) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            v,
            format!("must be a finite number of {unit} > 0"),
        ))
    }
}

fn check_fraction(key: &str, v: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::new(key, v, "must be a fraction in [0, 1]"))
    }
}

fn check_multiplier(key: &str, v: f64, what: &str) -> Result<(), ConfigError> {
    if v.is_finite() && v >= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::new(key, v, format!("must be >= 1 ({what})")))
    }
}

fn check_rate(key: &str, r: Rate) -> Result<(), ConfigError> {
    if r.0 == 0 {
        Err(ConfigError::new(key, "\"0bps\"", "a rate must be > 0"))
    } else {
        Ok(())
    }
}

impl ModelParams {
    /// Parses parameters from TOML (every key optional; missing keys take the
    /// defaults) and validates them. Unknown keys, wrong types and impossible
    /// values are errors that name the key.
    pub fn from_toml(text: &str) -> Result<ModelParams, ConfigError> {
        let p: ModelParams = from_toml_text(text, "")?;
        p.validate()?;
        Ok(p)
    }

    /// The parameters as TOML (every key, with units).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("model parameters serialise")
    }

    /// Checks every parameter; the error names the key, the value and why it is
    /// impossible. Topology-dependent limits (grating size, oversubscription
    /// tier) are checked when an architecture is built.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.racks < 2 {
            return Err(ConfigError::new(
                "racks",
                self.racks,
                "need at least two racks",
            ));
        }
        check_rate("rack_server_rate", self.rack_server_rate)?;
        check_rate("switch_capacity", self.switch_capacity)?;
        check_rate("transceiver_rate", self.transceiver_rate)?;
        if self.switch_ports() < 2 {
            return Err(ConfigError::new(
                "transceiver_rate",
                self.transceiver_rate,
                format!(
                    "a {} switch has only {} port(s) at this rate; need at least 2",
                    self.switch_capacity,
                    self.switch_ports()
                ),
            ));
        }
        check_positive("switch_power_w", self.switch_power_w, "watts")?;
        check_positive("switch_cost_usd", self.switch_cost_usd, "dollars")?;
        check_positive("transceiver_power_w", self.transceiver_power_w, "watts")?;
        check_positive(
            "transceiver_cost_usd_per_gbps",
            self.transceiver_cost_usd_per_gbps,
            "dollars per Gbps",
        )?;
        if self.lanes_per_transceiver == 0 {
            return Err(ConfigError::new(
                "lanes_per_transceiver",
                0,
                "a transceiver needs at least one lane",
            ));
        }
        check_fraction("laser_power_share", self.laser_power_share)?;
        check_fraction("laser_cost_share", self.laser_cost_share)?;
        check_multiplier(
            "tunable_power_multiplier",
            self.tunable_power_multiplier,
            "a tunable laser draws at least a fixed laser's power",
        )?;
        check_multiplier(
            "tunable_cost_multiplier",
            self.tunable_cost_multiplier,
            "a tunable laser costs at least a fixed laser",
        )?;
        check_fraction("grating_cost_fraction", self.grating_cost_fraction)?;
        if self.max_grating_ports < 2 {
            return Err(ConfigError::new(
                "max_grating_ports",
                self.max_grating_ports,
                "a grating needs at least 2 ports",
            ));
        }
        check_multiplier(
            "sirius_uplink_factor",
            self.sirius_uplink_factor,
            "Sirius racks have at least their servers' bandwidth of uplinks",
        )?;
        check_multiplier(
            "oversubscription",
            self.oversubscription,
            "1 means non-blocking",
        )?;
        // Keeps every count exact in u64 and f64 (Sirius lanes are the largest).
        let lanes = self.racks as f64
            * self.server_ports() as f64
            * self.sirius_uplink_factor.ceil()
            * self.lanes_per_transceiver as f64;
        if lanes > MAX_COUNT {
            return Err(ConfigError::new(
                "racks",
                self.racks,
                format!(
                    "with these rates, uplink factor and lanes the model would count \
                     {lanes:.3e} lanes; the limit is {MAX_COUNT:.0e}"
                ),
            ));
        }
        Ok(())
    }

    /// Ports of one electrical switch at the transceiver rate (25.6 Tbps /
    /// 400 Gbps = 64), rounded down.
    pub fn switch_ports(&self) -> u64 {
        self.switch_capacity
            .0
            .checked_div(self.transceiver_rate.0)
            .unwrap_or(0)
    }

    /// Switch ports a rack's servers occupy (⌈12.8 Tbps / 400 Gbps⌉ = 32).
    pub fn server_ports(&self) -> u64 {
        self.rack_server_rate
            .0
            .div_ceil(self.transceiver_rate.0.max(1))
    }

    fn transceiver_cost(&self) -> f64 {
        self.transceiver_rate.as_f64() / 1e9 * self.transceiver_cost_usd_per_gbps
    }

    /// Power of one tunable transceiver in W: the fixed transceiver with its
    /// laser's share multiplied by `tunable_power_multiplier`.
    pub fn tunable_transceiver_power_w(&self) -> f64 {
        self.transceiver_power_w
            * (1.0 - self.laser_power_share
                + self.laser_power_share * self.tunable_power_multiplier)
    }

    /// Cost of one tunable transceiver in $, likewise.
    pub fn tunable_transceiver_cost_usd(&self) -> f64 {
        self.transceiver_cost()
            * (1.0 - self.laser_cost_share + self.laser_cost_share * self.tunable_cost_multiplier)
    }
}

/// `⌈x⌉` for a port count computed in floating point, ignoring rounding noise
/// such as 2.0 × 24.000000000000004.
fn ceil_ports(x: f64) -> u64 {
    let r = x.round();
    if (x - r).abs() <= 1e-9 * r.abs().max(1.0) {
        r as u64
    } else {
        x.ceil() as u64
    }
}

/// A power or cost split by component. Units are those of the field holding it
/// (W for `power_w`, $ for `cost_usd`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Breakdown {
    /// Rack (top-of-rack) switches.
    pub rack_switches: f64,
    /// Electrical switches above the racks.
    pub core_switches: f64,
    /// Transceivers, fixed and tunable.
    pub transceivers: f64,
    /// Gratings (always 0 W: passive).
    pub gratings: f64,
    /// Sum of the above.
    pub total: f64,
}

impl Breakdown {
    fn new(rack_switches: f64, core_switches: f64, transceivers: f64, gratings: f64) -> Self {
        Breakdown {
            rack_switches,
            core_switches,
            transceivers,
            gratings,
            total: rack_switches + core_switches + transceivers + gratings,
        }
    }
}

/// Component counts, power and cost of one architecture.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Architecture {
    /// Stable identifier: `esn`, `esn_osub`, `sirius`, `sirius_electrical`.
    pub id: String,
    /// Display name, e.g. `ESN-OSUB 3:1`.
    pub label: String,
    /// Racks (count).
    pub racks: u64,
    /// Transceivers per rack towards the network (count).
    pub rack_uplinks: u64,
    /// Bandwidth per rack towards the network, in Gbps.
    pub rack_uplink_gbps: f64,
    /// Rack switches in 25.6 Tbps switch equivalents (0 when
    /// `count_rack_switches` is false).
    pub rack_switches: u64,
    /// Electrical switches above the racks, bottom level first (empty for
    /// Sirius).
    pub core_switches_per_level: Vec<u64>,
    /// Sum of `core_switches_per_level`.
    pub core_switches: u64,
    /// Fixed-wavelength transceivers (count).
    pub fixed_transceivers: u64,
    /// Tunable transceivers (count).
    pub tunable_transceivers: u64,
    /// Grating devices (count).
    pub gratings: u64,
    /// Ports of each grating (0 when there are none).
    pub grating_ports: u64,
    /// Power in W.
    pub power_w: Breakdown,
    /// Cost in $.
    pub cost_usd: Breakdown,
}

/// Links per link layer of a folded Clos above the racks (layer 0 joins the
/// racks to level 1) and the switches of each level.
struct Clos {
    rack_uplinks: u64,
    links: Vec<u64>,
    levels: Vec<u64>,
}

/// Builds the folded Clos for `p.racks` racks, oversubscribed `ratio`:1 at
/// `tier` (see [`ModelParams::oversubscription_tier`]); `ratio = 1` is
/// non-blocking.
fn folded_clos(p: &ModelParams, ratio: f64, tier: u32) -> Result<Clos, ConfigError> {
    let n = p.racks as u64;
    let k = p.switch_ports();
    let s = p.server_ports();
    let oversubscribed = ratio > 1.0;
    let (rack_uplinks, thin) = if tier == 0 {
        let u = ceil_ports(s as f64 / ratio).max(1);
        (u, n * u)
    } else {
        (s, ceil_ports((n * s) as f64 / ratio).max(1))
    };
    let links_at = |j: u32| -> u64 {
        if tier == 0 || j >= tier {
            thin
        } else {
            n * s
        }
    };
    // Levels: L levels reach k · d_1 ⋯ d_{L-1} racks, where d_i is level i's
    // down-port count, proportional to its share of down-links.
    let mut levels_n: u32 = 1;
    let mut reach = k;
    while reach < n {
        let (down, up) = (links_at(levels_n - 1), links_at(levels_n));
        let d = (k as u128 * down as u128 / (down as u128 + up as u128)) as u64;
        if d < 2 {
            return Err(ConfigError::new(
                "switch_capacity",
                p.switch_capacity,
                format!("{k}-port switches cannot build a Clos for {n} racks"),
            ));
        }
        reach = reach.saturating_mul(d);
        levels_n += 1;
    }
    if oversubscribed && tier >= levels_n {
        return Err(ConfigError::new(
            "oversubscription_tier",
            tier,
            format!(
                "the Clos for {n} racks has {levels_n} switch level(s) above the racks, \
                 so the tier must be below {levels_n}"
            ),
        ));
    }
    let links: Vec<u64> = (0..levels_n).map(links_at).collect();
    let mut levels: Vec<u64> = (1..levels_n as usize)
        .map(|i| (links[i - 1] + links[i]).div_ceil(k))
        .collect();
    levels.push(links[levels_n as usize - 1].div_ceil(k));
    Ok(Clos {
        rack_uplinks,
        links,
        levels,
    })
}

/// Rack switches (switch equivalents) for racks with `uplinks` network ports.
fn rack_switches(p: &ModelParams, uplinks: u64) -> u64 {
    if p.count_rack_switches {
        (p.racks as u64 * (p.server_ports() + uplinks)).div_ceil(p.switch_ports())
    } else {
        0
    }
}

fn electrical_clos(
    p: &ModelParams,
    id: &str,
    label: String,
    ratio: f64,
    tier: u32,
) -> Result<Architecture, ConfigError> {
    p.validate()?;
    let clos = folded_clos(p, ratio, tier)?;
    let racks_sw = rack_switches(p, clos.rack_uplinks);
    let core: u64 = clos.levels.iter().sum();
    let trx: u64 = 2 * clos.links.iter().sum::<u64>();
    let (sp, sc) = (p.switch_power_w, p.switch_cost_usd);
    let (tp, tc) = (p.transceiver_power_w, p.transceiver_cost());
    Ok(Architecture {
        id: id.to_string(),
        label,
        racks: p.racks as u64,
        rack_uplinks: clos.rack_uplinks,
        rack_uplink_gbps: clos.rack_uplinks as f64 * p.transceiver_rate.as_f64() / 1e9,
        rack_switches: racks_sw,
        core_switches_per_level: clos.levels,
        core_switches: core,
        fixed_transceivers: trx,
        tunable_transceivers: 0,
        gratings: 0,
        grating_ports: 0,
        power_w: Breakdown::new(racks_sw as f64 * sp, core as f64 * sp, trx as f64 * tp, 0.0),
        cost_usd: Breakdown::new(racks_sw as f64 * sc, core as f64 * sc, trx as f64 * tc, 0.0),
    })
}

/// The non-blocking electrical folded Clos (ESN).
pub fn esn(p: &ModelParams) -> Result<Architecture, ConfigError> {
    electrical_clos(p, "esn", "ESN".to_string(), 1.0, 0)
}

/// The folded Clos oversubscribed `p.oversubscription`:1 at
/// `p.oversubscription_tier` (ESN-OSUB).
pub fn esn_osub(p: &ModelParams) -> Result<Architecture, ConfigError> {
    electrical_clos(
        p,
        "esn_osub",
        format!("ESN-OSUB {}:1", p.oversubscription),
        p.oversubscription,
        p.oversubscription_tier,
    )
}

/// Sirius's rack uplinks: (transceivers per rack, grating ports, gratings).
fn sirius_topology(p: &ModelParams) -> Result<(u64, u64, u64), ConfigError> {
    p.validate()?;
    let n = p.racks as u64;
    let u = ceil_ports(p.sirius_uplink_factor * p.server_ports() as f64);
    let lanes = u * p.lanes_per_transceiver as u64;
    let g = n.div_ceil(lanes).max(2);
    if g > p.max_grating_ports as u64 {
        return Err(ConfigError::new(
            "racks",
            n,
            format!(
                "Sirius needs {g}-port gratings ({n} racks / {lanes} uplink lanes per rack) \
                 but max_grating_ports is {}",
                p.max_grating_ports
            ),
        ));
    }
    Ok((u, g, (n * lanes).div_ceil(g)))
}

/// Sirius: rack switches, tunable transceivers on doubled rack uplinks, and one
/// layer of passive gratings.
pub fn sirius(p: &ModelParams) -> Result<Architecture, ConfigError> {
    let (u, g, gratings) = sirius_topology(p)?;
    let n = p.racks as u64;
    let racks_sw = rack_switches(p, u);
    let trx = n * u;
    let grating_cost =
        p.grating_cost_fraction * p.switch_cost_usd * (trx as f64 / p.switch_ports() as f64);
    Ok(Architecture {
        id: "sirius".to_string(),
        label: "Sirius".to_string(),
        racks: n,
        rack_uplinks: u,
        rack_uplink_gbps: u as f64 * p.transceiver_rate.as_f64() / 1e9,
        rack_switches: racks_sw,
        core_switches_per_level: Vec::new(),
        core_switches: 0,
        fixed_transceivers: 0,
        tunable_transceivers: trx,
        gratings,
        grating_ports: g,
        power_w: Breakdown::new(
            racks_sw as f64 * p.switch_power_w,
            0.0,
            trx as f64 * p.tunable_transceiver_power_w(),
            0.0,
        ),
        cost_usd: Breakdown::new(
            racks_sw as f64 * p.switch_cost_usd,
            0.0,
            trx as f64 * p.tunable_transceiver_cost_usd(),
            grating_cost,
        ),
    })
}

/// Sirius's topology and routing with each grating port replaced by an
/// electrical switch port plus a transceiver at both ends of the rack link.
/// Each replacement switch sees ⌈racks / rack uplinks⌉ racks; if that exceeds
/// the switch's ports the count here is a lower bound.
pub fn sirius_electrical(p: &ModelParams) -> Result<Architecture, ConfigError> {
    let (u, _, _) = sirius_topology(p)?;
    let n = p.racks as u64;
    let racks_sw = rack_switches(p, u);
    let middle = (n * u).div_ceil(p.switch_ports());
    let trx = 2 * n * u;
    let (sp, sc) = (p.switch_power_w, p.switch_cost_usd);
    let (tp, tc) = (p.transceiver_power_w, p.transceiver_cost());
    Ok(Architecture {
        id: "sirius_electrical".to_string(),
        label: "Sirius (electrical)".to_string(),
        racks: n,
        rack_uplinks: u,
        rack_uplink_gbps: u as f64 * p.transceiver_rate.as_f64() / 1e9,
        rack_switches: racks_sw,
        core_switches_per_level: vec![middle],
        core_switches: middle,
        fixed_transceivers: trx,
        tunable_transceivers: 0,
        gratings: 0,
        grating_ports: 0,
        power_w: Breakdown::new(
            racks_sw as f64 * sp,
            middle as f64 * sp,
            trx as f64 * tp,
            0.0,
        ),
        cost_usd: Breakdown::new(
            racks_sw as f64 * sc,
            middle as f64 * sc,
            trx as f64 * tc,
            0.0,
        ),
    })
}

/// Sirius's total relative to each baseline's (1.0 = equal).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ratios {
    pub esn: f64,
    pub esn_osub: f64,
    pub sirius_electrical: f64,
}

/// All four architectures and Sirius's power and cost relative to the others.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub params: ModelParams,
    /// ESN, ESN-OSUB, Sirius, Sirius (electrical), in that order.
    pub architectures: Vec<Architecture>,
    /// Sirius power / baseline power.
    pub sirius_power_vs: Ratios,
    /// Sirius cost / baseline cost.
    pub sirius_cost_vs: Ratios,
}

/// Builds every architecture for `p`.
pub fn summary(p: &ModelParams) -> Result<Summary, ConfigError> {
    let (e, o, s, x) = (esn(p)?, esn_osub(p)?, sirius(p)?, sirius_electrical(p)?);
    let sirius_power_vs = Ratios {
        esn: s.power_w.total / e.power_w.total,
        esn_osub: s.power_w.total / o.power_w.total,
        sirius_electrical: s.power_w.total / x.power_w.total,
    };
    let sirius_cost_vs = Ratios {
        esn: s.cost_usd.total / e.cost_usd.total,
        esn_osub: s.cost_usd.total / o.cost_usd.total,
        sirius_electrical: s.cost_usd.total / x.cost_usd.total,
    };
    Ok(Summary {
        params: p.clone(),
        architectures: vec![e, o, s, x],
        sirius_power_vs,
        sirius_cost_vs,
    })
}

/// Tunable-laser power multipliers on the x-axis of Fig. 6a.
pub const FIG6A_MULTIPLIERS: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
/// Tunable-laser cost multiplier of the Fig. 6b error bars (the bars
/// themselves use `tunable_cost_multiplier`, 3× by default).
pub const FIG6B_ERROR_MULTIPLIER: f64 = 5.0;

/// One point of the power sweep (Fig. 6a).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PowerPoint {
    /// Tunable-laser power relative to a fixed laser.
    pub tunable_power_multiplier: f64,
    /// Power of one tunable transceiver, in W.
    pub tunable_transceiver_w: f64,
    /// Sirius power, in W.
    pub sirius_w: f64,
    /// ESN power, in W.
    pub esn_w: f64,
    /// ESN-OSUB power, in W.
    pub esn_osub_w: f64,
    /// `sirius_w / esn_w` (the Fig. 6a y-axis).
    pub sirius_vs_esn: f64,
    /// `sirius_w / esn_osub_w`.
    pub sirius_vs_esn_osub: f64,
}

/// Sirius power relative to ESN for each tunable-laser power multiplier
/// (overriding `p.tunable_power_multiplier`).
pub fn power_sweep(p: &ModelParams, multipliers: &[f64]) -> Result<Vec<PowerPoint>, ConfigError> {
    let e = esn(p)?;
    let o = esn_osub(p)?;
    multipliers
        .iter()
        .map(|&m| {
            let q = ModelParams {
                tunable_power_multiplier: m,
                ..p.clone()
            };
            let s = sirius(&q)?;
            Ok(PowerPoint {
                tunable_power_multiplier: m,
                tunable_transceiver_w: q.tunable_transceiver_power_w(),
                sirius_w: s.power_w.total,
                esn_w: e.power_w.total,
                esn_osub_w: o.power_w.total,
                sirius_vs_esn: s.power_w.total / e.power_w.total,
                sirius_vs_esn_osub: s.power_w.total / o.power_w.total,
            })
        })
        .collect()
}

/// Fig. 6a: [`power_sweep`] over 1×…6×.
pub fn fig6a(p: &ModelParams) -> Result<Vec<PowerPoint>, ConfigError> {
    power_sweep(p, &FIG6A_MULTIPLIERS)
}

/// One point of the cost sweep.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CostPoint {
    /// Tunable-laser cost relative to a fixed laser.
    pub tunable_cost_multiplier: f64,
    /// Cost of one tunable transceiver, in $.
    pub tunable_transceiver_usd: f64,
    /// Sirius cost, in $.
    pub sirius_usd: f64,
    /// ESN cost, in $.
    pub esn_usd: f64,
    /// ESN-OSUB cost, in $.
    pub esn_osub_usd: f64,
    /// Electrically-switched Sirius cost, in $.
    pub sirius_electrical_usd: f64,
    /// Sirius cost / ESN cost.
    pub sirius_vs_esn: f64,
    /// Sirius cost / ESN-OSUB cost.
    pub sirius_vs_esn_osub: f64,
    /// Sirius cost / electrically-switched Sirius cost.
    pub sirius_vs_sirius_electrical: f64,
}

/// Sirius cost relative to each baseline for each tunable-laser cost
/// multiplier (overriding `p.tunable_cost_multiplier`).
pub fn cost_sweep(p: &ModelParams, multipliers: &[f64]) -> Result<Vec<CostPoint>, ConfigError> {
    let e = esn(p)?;
    let o = esn_osub(p)?;
    let x = sirius_electrical(p)?;
    multipliers
        .iter()
        .map(|&m| {
            let q = ModelParams {
                tunable_cost_multiplier: m,
                ..p.clone()
            };
            let s = sirius(&q)?;
            let c = s.cost_usd.total;
            Ok(CostPoint {
                tunable_cost_multiplier: m,
                tunable_transceiver_usd: q.tunable_transceiver_cost_usd(),
                sirius_usd: c,
                esn_usd: e.cost_usd.total,
                esn_osub_usd: o.cost_usd.total,
                sirius_electrical_usd: x.cost_usd.total,
                sirius_vs_esn: c / e.cost_usd.total,
                sirius_vs_esn_osub: c / o.cost_usd.total,
                sirius_vs_sirius_electrical: c / x.cost_usd.total,
            })
        })
        .collect()
}

/// One bar of Fig. 6b: one architecture's cost relative to ESN, at the bar's
/// tunable-laser cost multiplier and at the error bar's.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CostBar {
    /// Architecture id (`esn`, `esn_osub`, `sirius_electrical`, `sirius`).
    pub id: String,
    /// Display name.
    pub label: String,
    /// Tunable-laser cost multiplier of the bar.
    pub tunable_cost_multiplier: f64,
    /// Cost in $ at `tunable_cost_multiplier`.
    pub cost_usd: f64,
    /// `cost_usd` / ESN cost (the bar height).
    pub vs_esn: f64,
    /// Sirius cost / `cost_usd` (the ratio §5 quotes for this baseline).
    pub sirius_vs_this: f64,
    /// Tunable-laser cost multiplier of the error bar.
    pub error_multiplier: f64,
    /// Cost in $ at `error_multiplier` (equal to `cost_usd` for architectures
    /// without tunable lasers).
    pub cost_usd_error: f64,
    /// `cost_usd_error` / ESN cost (the error-bar end).
    pub vs_esn_error: f64,
    /// Sirius cost / this architecture's cost, both at `error_multiplier`.
    pub sirius_vs_this_error: f64,
}

/// Fig. 6b-style bars (ESN, ESN-OSUB, electrical Sirius, Sirius) at
/// `multiplier` with error bars at `error_multiplier`.
pub fn cost_bars(
    p: &ModelParams,
    multiplier: f64,
    error_multiplier: f64,
) -> Result<Vec<CostBar>, ConfigError> {
    let build = |m: f64| -> Result<[Architecture; 4], ConfigError> {
        let q = ModelParams {
            tunable_cost_multiplier: m,
            ..p.clone()
        };
        Ok([esn(&q)?, esn_osub(&q)?, sirius_electrical(&q)?, sirius(&q)?])
    };
    let (a, b) = (build(multiplier)?, build(error_multiplier)?);
    let (esn_a, esn_b) = (a[0].cost_usd.total, b[0].cost_usd.total);
    let (sir_a, sir_b) = (a[3].cost_usd.total, b[3].cost_usd.total);
    Ok(a.iter()
        .zip(b.iter())
        .map(|(x, y)| CostBar {
            id: x.id.clone(),
            label: x.label.clone(),
            tunable_cost_multiplier: multiplier,
            cost_usd: x.cost_usd.total,
            vs_esn: x.cost_usd.total / esn_a,
            sirius_vs_this: sir_a / x.cost_usd.total,
            error_multiplier,
            cost_usd_error: y.cost_usd.total,
            vs_esn_error: y.cost_usd.total / esn_b,
            sirius_vs_this_error: sir_b / y.cost_usd.total,
        })
        .collect())
}

/// Fig. 6b: [`cost_bars`] at `p.tunable_cost_multiplier` (3× by default) with
/// error bars at [`FIG6B_ERROR_MULTIPLIER`] (5×).
pub fn fig6b(p: &ModelParams) -> Result<Vec<CostBar>, ConfigError> {
    cost_bars(p, p.tunable_cost_multiplier, FIG6B_ERROR_MULTIPLIER)
}

/// One point of §2's "scale tax" (Fig. 2a): the power of the largest
/// non-blocking folded Clos with `switch_layers` layers of switches whose
/// endpoints ("nodes") each have one port at the transceiver rate.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScaleTax {
    /// Layers of switches (0 = two nodes joined directly by one link).
    pub switch_layers: u32,
    /// Nodes: 2 for a direct link, else `k · (k/2)^(layers − 1)` (64, 2,048,
    /// 65,536, 2,097,152 for 64-port switches).
    pub nodes: u64,
    /// Switches (count).
    pub switches: u64,
    /// Transceivers (count): both ends of every link, the nodes' own included.
    pub transceivers: u64,
    /// Power in W.
    pub power_w: f64,
    /// W per Tbps of bisection bandwidth (`nodes · rate / 2`), the Fig. 2a
    /// y-axis: a direct link is 2 × 10 W / 0.4 Tbps = 50 W/Tbps.
    pub w_per_tbps_bisection: f64,
    /// W per Tbps of node capacity (`nodes · rate`).
    pub w_per_tbps_node: f64,
}

/// Switch layers of the §2 scale-tax curve (Fig. 2a).
pub const FIG2A_LAYERS: [u32; 5] = [0, 1, 2, 3, 4];

/// §2's scale tax for `switch_layers` layers, from the same folded-Clos
/// construction as ESN (each node is a "rack" with one port; every link,
/// including the node's own, has a transceiver at each end).
pub fn scale_tax(p: &ModelParams, switch_layers: u32) -> Result<ScaleTax, ConfigError> {
    p.validate()?;
    let rate_tbps = p.transceiver_rate.as_f64() / 1e12;
    let (nodes, switches, transceivers) = if switch_layers == 0 {
        (2u64, 0u64, 2u64)
    } else {
        let k = p.switch_ports();
        let d = k / 2;
        let nodes = (1..switch_layers).try_fold(k, |n, _| n.checked_mul(d));
        let nodes = match nodes {
            Some(n) if n <= u32::MAX as u64 && (n as f64) <= MAX_COUNT => n,
            _ => {
                return Err(ConfigError::new(
                    "switch_layers",
                    switch_layers,
                    format!(
                    "{switch_layers} layers of {k}-port switches connect too many nodes to count"
                ),
                ))
            }
        };
        let q = ModelParams {
            racks: nodes as u32,
            rack_server_rate: p.transceiver_rate,
            count_rack_switches: false,
            ..p.clone()
        };
        let clos = folded_clos(&q, 1.0, 0)?;
        debug_assert_eq!(clos.levels.len(), switch_layers as usize);
        (
            nodes,
            clos.levels.iter().sum(),
            2 * clos.links.iter().sum::<u64>(),
        )
    };
    let power_w = switches as f64 * p.switch_power_w + transceivers as f64 * p.transceiver_power_w;
    Ok(ScaleTax {
        switch_layers,
        nodes,
        switches,
        transceivers,
        power_w,
        w_per_tbps_bisection: power_w / (nodes as f64 * rate_tbps / 2.0),
        w_per_tbps_node: power_w / (nodes as f64 * rate_tbps),
    })
}

/// Fig. 2a: [`scale_tax`] for 0…4 switch layers.
pub fn fig2a(p: &ModelParams) -> Result<Vec<ScaleTax>, ConfigError> {
    FIG2A_LAYERS.iter().map(|&l| scale_tax(p, l)).collect()
}

/// The model at the operating points §2 and §5 quote, under stable keys:
/// `experiments/sirius/` names them (`paper_points.power_vs_esn_3x`) to put
/// the published numbers next to these. Tunable-laser multipliers are the
/// paper's (3× power and cost, 5× power) whatever `params` says; everything
/// else follows `params`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PaperPoints {
    /// Sirius power / ESN power, tunable laser 3× a fixed laser's power.
    pub power_vs_esn_3x: f64,
    /// Sirius power / ESN power, tunable laser 5× a fixed laser's power.
    pub power_vs_esn_5x: f64,
    /// Sirius cost / ESN cost, tunable laser 3× a fixed laser's cost.
    pub cost_vs_esn: f64,
    /// Sirius cost / ESN-OSUB cost, 3× laser cost.
    pub cost_vs_esn_osub: f64,
    /// Sirius cost / electrically switched Sirius cost, 3× laser cost.
    pub cost_vs_sirius_electrical: f64,
    /// §2: a direct transceiver link, W per Tbps of bisection.
    pub scale_tax_direct: f64,
    /// §2: four layers of switches, W per Tbps of bisection.
    pub scale_tax_4_layers: f64,
}

/// The model's values at the operating points of [`PaperPoints`].
pub fn paper_points(p: &ModelParams) -> Result<PaperPoints, ConfigError> {
    let pw = power_sweep(p, &[3.0, 5.0])?;
    let bars = cost_bars(p, 3.0, 5.0)?;
    let vs = |id: &str| {
        bars.iter()
            .find(|b| b.id == id)
            .map(|b| b.sirius_vs_this)
            .expect("every architecture has a bar")
    };
    Ok(PaperPoints {
        power_vs_esn_3x: pw[0].sirius_vs_esn,
        power_vs_esn_5x: pw[1].sirius_vs_esn,
        cost_vs_esn: vs("esn"),
        cost_vs_esn_osub: vs("esn_osub"),
        cost_vs_sirius_electrical: vs("sirius_electrical"),
        scale_tax_direct: scale_tax(p, 0)?.w_per_tbps_bisection,
        scale_tax_4_layers: scale_tax(p, 4)?.w_per_tbps_bisection,
    })
}

/// Everything `photonet power sirius` and `photonet cost sirius` show, in one
/// serialisable value (the model's numbers only; the paper's are in
/// `experiments/sirius/`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// The complete parameters (every default filled in).
    pub params: ModelParams,
    /// The four architectures at `params` and Sirius's ratios.
    pub summary: Summary,
    /// Power sweep over the tunable-laser power multiplier (Fig. 6a).
    pub fig6a: Vec<PowerPoint>,
    /// Cost bars (Fig. 6b).
    pub fig6b: Vec<CostBar>,
    /// §2 scale tax (Fig. 2a).
    pub fig2a: Vec<ScaleTax>,
    /// The model at the paper's operating points.
    pub paper_points: PaperPoints,
}

/// Builds the [`Report`]: Fig. 6a over `power_multipliers` and Fig. 6b with
/// error bars at `error_multiplier`.
pub fn report(
    p: &ModelParams,
    power_multipliers: &[f64],
    error_multiplier: f64,
) -> Result<Report, ConfigError> {
    if power_multipliers.is_empty() {
        return Err(ConfigError::new(
            "power_multipliers",
            "[]",
            "give at least one tunable-laser power multiplier",
        ));
    }
    Ok(Report {
        params: p.clone(),
        summary: summary(p)?,
        fig6a: power_sweep(p, power_multipliers)?,
        fig6b: cost_bars(p, p.tunable_cost_multiplier, error_multiplier)?,
        fig2a: fig2a(p)?,
        paper_points: paper_points(p)?,
    })
}

/// What a caller may choose besides the parameters (all optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Tunable-laser power multipliers of the power sweep (Fig. 6a); default
    /// [`FIG6A_MULTIPLIERS`].
    pub power_multipliers: Option<Vec<f64>>,
    /// Tunable-laser cost multiplier of the cost bars' error bars (Fig. 6b);
    /// default [`FIG6B_ERROR_MULTIPLIER`].
    pub error_multiplier: Option<f64>,
}

/// The registry's entry point: TOML parameters + JSON options → the report
/// as JSON.
fn evaluate(
    params_toml: &str,
    options: &serde_json::Value,
) -> Result<serde_json::Value, ConfigError> {
    let p = ModelParams::from_toml(params_toml)?;
    let o: Options = super::options_from_json(options)?;
    let multipliers = o
        .power_multipliers
        .unwrap_or_else(|| FIG6A_MULTIPLIERS.to_vec());
    let r = report(
        &p,
        &multipliers,
        o.error_multiplier.unwrap_or(FIG6B_ERROR_MULTIPLIER),
    )
    .map_err(|e| match e.key.as_str() {
        // These keys are options, not parameters: say so.
        "power_multipliers" => e.under("options"),
        _ => e,
    })?;
    Ok(serde_json::to_value(&r).expect("the model report serialises"))
}

/// The registry entry of this model.
pub const MODEL: super::Model = super::Model {
    name: "sirius",
    description: "Sirius (SIGCOMM '20) §5 power and cost of ESN, ESN-OSUB, Sirius and an \
                  electrically switched Sirius, with §2's scale tax",
    evaluate,
};

#[cfg(test)]
mod tests;

//! The model's parameters: the paper's §5 numbers as defaults, and their
//! validation.

use super::*;

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
pub(super) const MAX_COUNT: f64 = 1e15;

pub(super) fn check_positive(key: &str, v: f64, unit: &str) -> Result<(), ConfigError> {
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

pub(super) fn check_fraction(key: &str, v: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::new(key, v, "must be a fraction in [0, 1]"))
    }
}

pub(super) fn check_multiplier(key: &str, v: f64, what: &str) -> Result<(), ConfigError> {
    if v.is_finite() && v >= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::new(key, v, format!("must be >= 1 ({what})")))
    }
}

pub(super) fn check_rate(key: &str, r: Rate) -> Result<(), ConfigError> {
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

    pub(super) fn transceiver_cost(&self) -> f64 {
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

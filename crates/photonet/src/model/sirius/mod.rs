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

mod architectures;
mod figures;
mod params;

pub use architectures::*;
pub use figures::*;
pub use params::*;

use crate::error::{from_toml_text, ConfigError};
use crate::units::Rate;
use serde::{Deserialize, Serialize};

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

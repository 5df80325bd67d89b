//! The four architectures, counted from the topology: the folded Clos
//! behind ESN and ESN-OSUB, Sirius, and the electrically switched Sirius.

use super::*;

/// `⌈x⌉` for a port count computed in floating point, ignoring rounding noise
/// such as 2.0 × 24.000000000000004.
pub(super) fn ceil_ports(x: f64) -> u64 {
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
pub(super) struct Clos {
    pub(super) rack_uplinks: u64,
    pub(super) links: Vec<u64>,
    pub(super) levels: Vec<u64>,
}

/// Builds the folded Clos for `p.racks` racks, oversubscribed `ratio`:1 at
/// `tier` (see [`ModelParams::oversubscription_tier`]); `ratio = 1` is
/// non-blocking.
pub(super) fn folded_clos(p: &ModelParams, ratio: f64, tier: u32) -> Result<Clos, ConfigError> {
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
pub(super) fn rack_switches(p: &ModelParams, uplinks: u64) -> u64 {
    if p.count_rack_switches {
        (p.racks as u64 * (p.server_ports() + uplinks)).div_ceil(p.switch_ports())
    } else {
        0
    }
}

pub(super) fn electrical_clos(
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
pub(super) fn sirius_topology(p: &ModelParams) -> Result<(u64, u64, u64), ConfigError> {
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

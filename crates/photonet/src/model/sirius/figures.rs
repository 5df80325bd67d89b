//! What the model reports: the four architectures side by side, the
//! power and cost sweeps of Fig. 6, §2's scale tax (Fig. 2a) and the
//! paper's operating points.

use super::*;

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
    let with = |m| ModelParams {
        tunable_power_multiplier: m,
        ..p.clone()
    };
    sweep(multipliers, with, |m, q, s| PowerPoint {
        tunable_power_multiplier: m,
        tunable_transceiver_w: q.tunable_transceiver_power_w(),
        sirius_w: s.power_w.total,
        esn_w: e.power_w.total,
        esn_osub_w: o.power_w.total,
        sirius_vs_esn: s.power_w.total / e.power_w.total,
        sirius_vs_esn_osub: s.power_w.total / o.power_w.total,
    })
}

/// One point per multiplier `m`: Sirius built for `with(m)`, then
/// `point(m, with(m), that Sirius)` (the baselines do not depend on the
/// tunable laser, so the callers build them once).
fn sweep<T>(
    multipliers: &[f64],
    with: impl Fn(f64) -> ModelParams,
    point: impl Fn(f64, &ModelParams, &Architecture) -> T,
) -> Result<Vec<T>, ConfigError> {
    multipliers
        .iter()
        .map(|&m| {
            let q = with(m);
            Ok(point(m, &q, &sirius(&q)?))
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
    let with = |m| ModelParams {
        tunable_cost_multiplier: m,
        ..p.clone()
    };
    sweep(multipliers, with, |m, q, s| {
        let c = s.cost_usd.total;
        CostPoint {
            tunable_cost_multiplier: m,
            tunable_transceiver_usd: q.tunable_transceiver_cost_usd(),
            sirius_usd: c,
            esn_usd: e.cost_usd.total,
            esn_osub_usd: o.cost_usd.total,
            sirius_electrical_usd: x.cost_usd.total,
            sirius_vs_esn: c / e.cost_usd.total,
            sirius_vs_esn_osub: c / o.cost_usd.total,
            sirius_vs_sirius_electrical: c / x.cost_usd.total,
        }
    })
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

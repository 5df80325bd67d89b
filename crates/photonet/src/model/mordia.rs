//! Mordia + TMS analyses (SIGCOMM'13 §4): the duty cycle (Eq. 2), the buffer
//! requirement B = R(N−1)T (Eq. 3), and the longest-time-slot-first trade-off
//! of Table 2 computed by the method of §4.3 on a random TDM (Sinkhorn → BvN
//! → keep the n longest slots; D = 1 − n·night/week for n ≥ 2, 1 for n = 1).
//!
//! The paper's TDM "from [7]" is not published; Table 2 has k = 10 rows,
//! exactly N² − 2N + 2 for N = 4, so the default is a 4 × 4 TDM of uniform
//! random entries (diagonal included, as in §3.2) from a seeded stream.

// Matrix code reads best with explicit (i, j) indices.
#![allow(clippy::needless_range_loop)]

use crate::error::{from_toml_text, ConfigError};
use crate::rng::RngStreams;
use crate::sched::tms;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Parameters of the Mordia analyses.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MordiaModelParams {
    /// Ports of the random TDM of Table 2 (4: k = N² − 2N + 2 = 10 slots).
    pub tdm_ports: usize,
    /// Seed of the random TDM.
    pub tdm_seed: u64,
    /// Reconfiguration time for Table 2, µs (10 µs).
    pub table2_night_us: f64,
    /// Schedule (week) length for Table 2, µs (1,000: gives D = 1 − n %).
    pub table2_week_us: f64,
    /// Night for the duty-cycle curve, µs (11.5, §6.1).
    pub night_us: f64,
    /// Slot lengths (day + night) of the duty-cycle curve, µs (Fig. 10: 61–300).
    pub slots_us: Vec<f64>,
}

impl Default for MordiaModelParams {
    fn default() -> Self {
        MordiaModelParams {
            tdm_ports: 4,
            tdm_seed: 1,
            table2_night_us: 10.0,
            table2_week_us: 1000.0,
            night_us: 11.5,
            slots_us: vec![61.0, 80.0, 106.0, 135.0, 160.0, 200.0, 240.0, 300.0],
        }
    }
}

fn evaluate(params_toml: &str, _: &serde_json::Value) -> Result<serde_json::Value, ConfigError> {
    let p: MordiaModelParams = from_toml_text(params_toml, "")?;
    if p.tdm_ports < 2 || p.tdm_ports > 64 {
        return Err(ConfigError::new("tdm_ports", p.tdm_ports, "must be 2..=64"));
    }
    if p.night_us.is_nan()
        || p.night_us < 0.0
        || p.slots_us.iter().any(|&s| s.is_nan() || s <= p.night_us)
    {
        return Err(ConfigError::new(
            "slots_us",
            format!("{:?}", p.slots_us),
            "every slot must be longer than the night",
        ));
    }
    let n = p.tdm_ports;
    let mut rng = RngStreams::new(p.tdm_seed).stream("mordia.tdm");
    let tdm: tms::Matrix = (0..n)
        .map(|_| (0..n).map(|_| rng.random::<f64>() + 1e-9).collect())
        .collect();
    let bam = tms::sinkhorn(&tdm, 1e-12, 100_000)
        .map_err(|e| ConfigError::new("tdm_seed", p.tdm_seed, e))?
        .bam;
    let terms = tms::bvn(&bam, 1e-9).map_err(|e| ConfigError::new("tdm_seed", p.tdm_seed, e))?;
    let table2: Vec<_> = (0..=n * n - 2 * n + 2)
        .map(|k| {
            let t = tms::truncate(&bam, &terms, k);
            json!({
                "n": k,
                "circuit": t.circuit_share,
                "packet": 1.0 - t.circuit_share,
                "duty_cycle": if k == 0 { serde_json::Value::Null } else { json!(tms::week_duty_cycle(k, p.table2_night_us, p.table2_week_us)) },
            })
        })
        .collect();
    let duty: Vec<_> = p
        .slots_us
        .iter()
        .map(|&s| json!({"slot_us": s, "day_us": s - p.night_us, "duty_cycle": tms::duty_cycle(s - p.night_us, p.night_us)}))
        .collect();
    let b = |r: f64, n: usize, t: f64| tms::buffer_bits(r, n, t) / 8.0;
    Ok(json!({
        "params": serde_json::to_value(&p).unwrap(),
        "tdm": tdm,
        "bam": bam,
        "slots": terms.len(),
        "max_slots": n * n - 2 * n + 2,
        "table2": table2,
        "duty": duty,
        "duty_106us": tms::duty_cycle(106.0 - 11.5, 11.5),
        "buffer": {
            "r9g_n64_t100ms_bytes": b(9e9, 64, 0.1),
            "r9g_n64_t100us_bytes": b(9e9, 64, 100e-6),
        },
    }))
}

/// The registered model.
pub const MODEL: super::Model = super::Model {
    name: "mordia",
    description: "Mordia + TMS (SIGCOMM '13) §4: duty cycle, buffer B = R(N-1)T and the Table 2 circuit/packet/duty trade-off of longest-time-slot-first BvN",
    evaluate,
};

//! A workload table's pieces as the generators take them: its size
//! distribution, its Poisson pattern, and the overlaid streams
//! (`workload.overlay`) merged with the main one.

use super::Paths;
use crate::config::{ConfigError, PatternConfig, PatternKind, SizeDistKind, SizesConfig};
use crate::config::{OverlayConfig, WorkloadConfig};
use crate::rng::RngStreams;
use crate::units::Rate;
use crate::workload::{Cdf, FixedMap, Generator, Pattern, SizeDist};

/// The size distribution of `z` (`table` names its keys in errors).
pub(super) fn size_dist(
    z: &SizesConfig,
    table: &str,
    paths: &Paths,
) -> Result<SizeDist, ConfigError> {
    // Validation guarantees the keys each family needs are present.
    Ok(match z.dist {
        SizeDistKind::Fixed => SizeDist::Fixed(z.size.unwrap_or_default().0),
        SizeDistKind::Pareto => SizeDist::pareto(
            z.shape.unwrap_or_default(),
            z.mean.unwrap_or_default().0 as f64,
            z.max.map(|m| m.0),
        ),
        SizeDistKind::Cdf => {
            let key = format!("{table}.file");
            let file = z.file.clone().unwrap_or_default();
            let path = paths.resolve(&key, &file)?;
            let cdf = Cdf::from_file(&path)
                .map_err(|reason| ConfigError::new(&key, format!("{file:?}"), reason))?;
            SizeDist::Cdf(cdf)
        }
    })
}

/// The generator's pattern for an open-loop pattern table; None for the
/// others (closed loop, traces, dependent workloads).
pub(super) fn poisson_pattern(pt: &PatternConfig) -> Option<Pattern> {
    let size = pt.size.unwrap_or_default().0;
    Some(match pt.kind {
        PatternKind::Uniform => Pattern::Uniform,
        PatternKind::Permutation => Pattern::Permutation,
        PatternKind::Incast => Pattern::Incast {
            degree: pt.degree.unwrap_or(1),
            size,
        },
        PatternKind::AllToAll => Pattern::AllToAll { size },
        PatternKind::Transpose => Pattern::Fixed(FixedMap::Transpose),
        PatternKind::Bisection => Pattern::Fixed(FixedMap::Bisection),
        PatternKind::GroupPermutation => Pattern::Fixed(FixedMap::GroupPermutation {
            group: pt.group.unwrap_or(1),
            distinct: pt.distinct.unwrap_or(false),
        }),
        PatternKind::Hotspot => Pattern::Fixed(FixedMap::Hotspot {
            node: pt.node.unwrap_or(0),
        }),
        _ => return None,
    })
}

/// Flows per arrival event of `pattern` (an incast's degree, else one).
pub(super) fn per_event(pattern: &Pattern) -> u64 {
    match pattern {
        Pattern::Incast { degree, .. } => *degree as u64,
        _ => 1,
    }
}

/// The overlaid streams' generators, each on its own random streams, and
/// their flows per second together.
pub(super) fn overlays(
    w: &WorkloadConfig,
    hosts: u32,
    rate: Rate,
    paths: &Paths,
    streams: &RngStreams,
) -> Result<(Vec<Generator>, f64), ConfigError> {
    let (mut gens, mut flows_per_s) = (Vec::new(), 0.0);
    for (i, o) in w.overlay.iter().enumerate() {
        let OverlayConfig { pattern, .. } = o;
        let table = format!("workload.overlay[{i}]");
        let wo = o.as_workload(w);
        let sizes = size_dist(&wo.sizes, &format!("{table}.sizes"), paths)?;
        let p = poisson_pattern(pattern).expect("validation admits Poisson patterns only");
        let per = per_event(&p);
        let own = streams.derived(&format!("overlay{i}"));
        let g =
            Generator::new(hosts, rate, wo.load, p, sizes, &own).with_basis(wo.load_basis, None);
        flows_per_s += per as f64 / g.mean_gap();
        gens.push(g);
    }
    Ok((gens, flows_per_s))
}

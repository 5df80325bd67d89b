use super::*;
use crate::units::Rate;

fn bad(toml: &str) -> ConfigError {
    Config::from_toml(toml).expect_err("should be rejected")
}

#[test]
fn empty_config_is_the_default() {
    assert_eq!(Config::from_toml("").unwrap(), Config::default());
    let d = Config::default();
    assert_eq!(d.topology.hosts(), 3072);
    assert_eq!(d.topology.host_rate(), Rate(16_666_666_666));
}

#[test]
fn round_trips_through_toml() {
    let mut c = Config::default();
    c.workload.sizes = SizesConfig::cdf("x.cdf");
    c.workload.pattern = PatternConfig {
        kind: PatternKind::Incast,
        degree: Some(4),
        size: Some(ByteSize(1000)),
        file: None,
        ..Default::default()
    };
    c.stop.duration = Some(SimTime::ms(3));
    let text = c.to_toml();
    assert_eq!(Config::from_toml(&text).unwrap(), c, "{text}");
}

#[test]
fn unknown_keys_are_named() {
    let e = bad("[workload]\nlod = 0.5\n");
    assert!(e.reason.contains("unknown field `lod`"), "{e}");
    assert!(e.key.contains("workload"), "{e}");
    let e = bad("speed = 3\n");
    assert!(e.reason.contains("unknown field `speed`"), "{e}");
    let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\nmean = \"1KB\"\nextra = 1\n");
    assert!(e.reason.contains("extra"), "{e}");
}

/// `toml` is rejected on `key`, with a reason that contains `why` if given.
fn rejects(toml: &str, key: &str, why: Option<&str>) {
    let e = bad(toml);
    assert_eq!(e.key, key, "{toml}: {e}");
    if let Some(w) = why {
        assert!(e.reason.contains(w), "{toml}: {e}");
    }
}

#[test]
fn malformed_units_name_key_and_value() {
    let e = bad("[topology]\nuplink_rate = \"50Gbs\"\n");
    assert_eq!(e.key, "topology.uplink_rate");
    assert!(e.reason.contains("50Gbs"), "{e}");
    for (toml, key, why) in [
        (
            "[topology]\nuplink_rate = \"50Gbs\"\n",
            "topology.uplink_rate",
            Some("unknown unit"),
        ),
        (
            "[esn]\nbase_latency = 5\n",
            "esn.base_latency",
            Some("no unit"),
        ),
        (
            "[workload.sizes]\ndist = \"fixed\"\nsize = \"-3B\"\n",
            "workload.sizes.size",
            Some("negative"),
        ),
    ] {
        rejects(toml, key, why);
    }
}

#[test]
fn impossible_values_are_rejected_with_reasons() {
    let e = bad("[workload]\nload = 0\n");
    assert_eq!((e.key.as_str(), e.value.as_str()), ("workload.load", "0"));
    let e = bad("[workload]\nload = -0.5\n");
    assert!(e.reason.contains("> 0"), "{e}");
    // (the TOML, the key it is refused on, a part of the reason, if checked)
    let cases = [
        (
            "[workload.sizes]\ndist = \"fixed\"\nsize = \"0B\"\n",
            "workload.sizes.size",
            None,
        ),
        (
            "[topology]\nuplink_rate = \"0Gbps\"\n",
            "topology.uplink_rate",
            None,
        ),
        (
            "[topology]\nserver_rate = \"0bps\"\n",
            "topology.server_rate",
            None,
        ),
        (
            "[workload.sizes]\ndist = \"pareto\"\nshape = 1.0\nmean = \"1KB\"\n",
            "workload.sizes.shape",
            None,
        ),
        ("fabric = \"warp\"\n", "fabric", Some("esn")),
        ("[topology]\nracks = 0\n", "topology.racks", None),
        ("[stop]\nflows = 0\n", "stop.flows", None),
        (
            "fabric = \"esn_osub\"\n[esn_osub]\noversubscription = 0.5\n",
            "esn_osub.oversubscription",
            None,
        ),
        (
            "[workload.pattern]\nkind = \"incast\"\ndegree = 5000\nsize = \"1KB\"\n",
            "workload.pattern.degree",
            None,
        ),
        (
            "[workload.sizes]\ndist = \"zipf\"\n",
            "workload.sizes.dist",
            Some("zipf"),
        ),
        (
            "[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\n",
            "workload.sizes.mean",
            Some("required"),
        ),
        (
            "[workload.sizes]\ndist = \"fixed\"\nsize = \"1KB\"\nshape = 2.0\n",
            "workload.sizes.shape",
            Some("does not apply"),
        ),
    ];
    for (toml, key, why) in cases {
        rejects(toml, key, why);
    }
}

//! Analytical models (power, cost, scale), one module per paper, listed once
//! in [`MODELS`].
//!
//! A model is a pure function from its parameters (TOML; missing keys take
//! the paper's values) and options (JSON: what to sweep) to a JSON report of
//! the model's own numbers. The report is an object with at least `params`
//! (the complete parameters); the rest is the model's. Published numbers are
//! not here: an experiment file (`experiments/<paper>/`) picks values out of
//! the report by path and puts the paper's next to them, so `photonet
//! reproduce` checks a model exactly as it checks a simulated figure.
//!
//! Adding a model: a module with a `MODEL: Model` constant, and one line in
//! [`MODELS`].

pub mod baldur;
pub mod mordia;
pub mod sirius;

use crate::error::ConfigError;
use serde::de::DeserializeOwned;

/// A model's entry point: parameters as TOML text and options as JSON (an
/// object, or null for none) → the report. Errors name the key (options
/// under `options.`), the value and why.
pub type EvaluateFn = fn(&str, &serde_json::Value) -> Result<serde_json::Value, ConfigError>;

/// One registered model.
#[derive(Clone, Copy)]
pub struct Model {
    /// The name `photonet power|cost <name>` and `[reproduce] model = ...` use.
    pub name: &'static str,
    /// One line: what the model computes, from which paper.
    pub description: &'static str,
    /// Parameters + options → report.
    pub evaluate: EvaluateFn,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("name", &self.name).finish()
    }
}

/// Every model, in the order listings show them; the first is the default of
/// `photonet power|cost`.
pub const MODELS: &[Model] = &[sirius::MODEL, baldur::MODEL, mordia::MODEL];

/// The model called `name`, or an error listing the registered ones.
pub fn find(name: &str) -> Result<&'static Model, ConfigError> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        ConfigError::new(
            "model",
            format!("{name:?}"),
            format!("no such model; expected one of {}", names.join(", ")),
        )
    })
}

/// Evaluates the model called `name`; the report gains `model = name`.
pub fn evaluate(
    name: &str,
    params_toml: &str,
    options: &serde_json::Value,
) -> Result<serde_json::Value, ConfigError> {
    let m = find(name)?;
    let mut report = (m.evaluate)(params_toml, options)?;
    if let Some(obj) = report.as_object_mut() {
        obj.insert("model".to_string(), serde_json::Value::from(m.name));
    }
    Ok(report)
}

/// Reads a model's options from JSON (null means none), naming the key path
/// of what is wrong under `options`.
pub fn options_from_json<T: DeserializeOwned>(v: &serde_json::Value) -> Result<T, ConfigError> {
    let v = if v.is_null() {
        serde_json::Value::Object(Default::default())
    } else {
        v.clone()
    };
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." {
            "options".to_string()
        } else {
            format!("options.{path}")
        };
        ConfigError::new(key, "", e.inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_found_by_name_and_evaluates_its_defaults() {
        assert!(!MODELS.is_empty());
        let mut names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MODELS.len(), "model names are unique");
        for m in MODELS {
            assert_eq!(find(m.name).unwrap().name, m.name);
            assert!(!m.description.is_empty());
            let r = evaluate(m.name, "", &serde_json::Value::Null).unwrap();
            assert_eq!(r["model"], m.name);
            assert!(r["params"].is_object(), "{}: report has params", m.name);
        }
    }

    #[test]
    fn unknown_model_lists_the_known_ones() {
        let e = find("nope").unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("model", "\"nope\""));
        assert!(e.reason.contains("sirius"), "{e}");
    }

    #[test]
    fn bad_options_name_their_key() {
        let e = evaluate(
            "sirius",
            "",
            &serde_json::json!({"power_multiplier": [1.0]}),
        )
        .unwrap_err();
        assert_eq!(e.key, "options.power_multiplier", "{e}");
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = evaluate("sirius", "", &serde_json::json!({"error_multiplier": "x"})).unwrap_err();
        assert_eq!(e.key, "options.error_multiplier", "{e}");
        let e = evaluate("sirius", "", &serde_json::json!({"power_multipliers": []})).unwrap_err();
        assert_eq!(e.key, "options.power_multipliers", "{e}");
        let e = evaluate("sirius", "racks = 1\n", &serde_json::Value::Null).unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("racks", "1"));
    }
}

//! The one error type of bad input, and the one way to read a TOML table into a
//! typed struct while keeping the key path of whatever is wrong.

use serde::de::DeserializeOwned;
use std::fmt;

/// A configuration problem: which key, what value, and why it is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl ConfigError {
    /// An error about `key` (a dotted path such as `sirius.queue_bound`);
    /// `value` as the user wrote it (may be empty), and why it cannot be used.
    pub fn new(
        key: impl Into<String>,
        value: impl fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        ConfigError {
            key: key.into(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The same error with `prefix.` in front of its key.
    pub fn under(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() {
            self.key = if self.key.is_empty() || self.key == "(top level)" {
                prefix.to_string()
            } else {
                format!("{prefix}.{}", self.key)
            };
        }
        self
    }

    /// The same error with its key's leading `from` replaced by `to` (a
    /// check written for one table, run on another of the same shape).
    pub fn rekey(mut self, from: &str, to: &str) -> Self {
        if let Some(rest) = self.key.strip_prefix(from) {
            self.key = format!("{to}{rest}");
        }
        self
    }
}

/// A bad value of `key` in the parameter table `table` (`table.key`; `""` for
/// a top-level key): the one constructor every parameter check uses, so each
/// error names the key, the value as written and why it cannot be used.
pub fn bad(
    table: &str,
    key: &str,
    value: impl fmt::Display,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::new(key, value, reason).under(table)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "`{}`: {}", self.key, self.reason)
        } else {
            write!(f, "`{}` = {}: {}", self.key, self.value, self.reason)
        }
    }
}
impl std::error::Error for ConfigError {}

/// Parses TOML text into `T`; syntax errors, unknown keys and malformed values
/// are errors naming the key path (under `prefix`, e.g. `sirius`).
pub fn from_toml_text<T: DeserializeOwned>(text: &str, prefix: &str) -> Result<T, ConfigError> {
    let de = toml::Deserializer::parse(text)
        .map_err(|e| ConfigError::new("(toml)", "", e.message().to_string()))?;
    with_path(serde_path_to_error::deserialize(de), prefix)
}

/// Reads an already parsed TOML table into `T`, naming the key path of errors
/// (under `prefix`).
pub fn from_toml_table<T: DeserializeOwned>(
    table: &toml::Table,
    prefix: &str,
) -> Result<T, ConfigError> {
    with_path(
        serde_path_to_error::deserialize(toml::Value::Table(table.clone())),
        prefix,
    )
}

fn with_path<T>(
    r: Result<T, serde_path_to_error::Error<toml::de::Error>>,
    prefix: &str,
) -> Result<T, ConfigError> {
    r.map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().message().to_string();
        let key = if path == "." { String::new() } else { path };
        let e = ConfigError::new(key, "", msg);
        if prefix.is_empty() && e.key.is_empty() {
            ConfigError::new("(top level)", "", e.reason)
        } else {
            e.under(prefix)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        a: u32,
    }
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }

    #[test]
    fn errors_name_the_key_path_under_the_prefix() {
        let e = from_toml_text::<Outer>("[inner]\na = \"x\"\n", "t").unwrap_err();
        assert_eq!(e.key, "t.inner.a", "{e}");
        let e = from_toml_text::<Outer>("[inner]\nb = 1\n", "").unwrap_err();
        assert!(
            e.key == "inner.b" && e.reason.contains("unknown field `b`"),
            "{e}"
        );
        let e = from_toml_text::<Outer>("x = 1\n", "").unwrap_err();
        assert_eq!(e.key, "x", "{e}");
        let e = from_toml_text::<Outer>("", "").unwrap_err();
        assert!(
            e.key == "(top level)" && e.reason.contains("missing field `inner`"),
            "{e}"
        );
        let t: toml::Table = toml::from_str("[inner]\na = -1\n").unwrap();
        let e = from_toml_table::<Outer>(&t, "p").unwrap_err();
        assert_eq!(e.key, "p.inner.a", "{e}");
    }
}

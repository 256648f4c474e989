//! The settings schema: every setting's name, type, default, limits, help text, CLI flag and
//! environment variable, defined once in [`super::Settings`]'s declaration (the `settings!` macro
//! in `mod.rs`). From it come the `Settings` struct and its defaults, the CLI's flags, the
//! settings file's keys, the environment layer (`SITETRAIL_<NAME>` for every setting), the checks
//! every value gets, and the app's settings form (the UI receives [`SCHEMA`](super::SCHEMA) and draws its fields
//! from it).
//!
//! Values travel between layers as JSON ([`serde_json::Value`]): a layer (the file, the
//! environment, the command line, the app's form) is a map from setting name to value, checked
//! against its [`Spec`] when it is read, with an error that names where the value came from.

use serde::Serialize;
use serde_json::Value;

/// Which commands take a setting as a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Which provider and how to reach it: `worker`, `daemon` and `classify`.
    Provider,
    /// How the worker runs: `worker` and `daemon`.
    Worker,
    /// How the database is opened (`synchronous`): a flag of `worker` and `daemon`. Read from
    /// the settings file only by the processes that load the settings anyway (the app, `worker`
    /// and `daemon`); every other command takes it from its environment variable alone, so a
    /// malformed settings file never stops a command that did not read it before.
    Store,
    /// The automatic import of the browsers' history: flags of `daemon`, and the app's import
    /// settings (not its classifier form).
    Import,
}

/// What values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Kind {
    /// One of a few names.
    Choice {
        /// The names.
        choices: &'static [&'static str],
    },
    /// A line of text (a model name).
    Text,
    /// An `http://` or `https://` URL.
    Url,
    /// A whole number in `min..=max`.
    Integer {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// A number in `min..=max`.
    Number {
        /// Smallest value.
        min: f64,
        /// Largest value.
        max: f64,
    },
    /// A list of host patterns (`example.com`, `*.corp.example`); in text, comma-separated.
    Hosts,
    /// A list of file paths (browser profiles' history files); in text, separated as in `PATH`
    /// (`:`, or `;` on Windows).
    Paths,
}

/// The most paths a [`Kind::Paths`] setting holds.
pub const MAX_PATHS: usize = 100;

/// The longest path a [`Kind::Paths`] setting takes (bytes).
pub const MAX_PATH_BYTES: usize = 4096;

/// One setting. Built with the `const` builders below, in `settings!`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spec {
    /// The key in the settings file and in the app's form (`fixed_delay_ms`).
    pub name: &'static str,
    /// The CLI flag, without dashes (`fixed-delay-ms`).
    pub flag: &'static str,
    /// A short label for the app's form.
    pub label: &'static str,
    /// What it does, for `--help` and the form.
    pub help: &'static str,
    /// Its values.
    pub kind: Kind,
    /// True if it may be unset (`null`): then `unset` says what that means.
    pub optional: bool,
    /// What an unset value means ("no limit", "the provider's default").
    pub unset: &'static str,
    /// Unit shown beside the value (`ms`), if any.
    pub unit: &'static str,
    /// Which commands take it as a flag.
    pub scope: Scope,
    /// True for settings most people never change (the form shows them under "Advanced").
    pub advanced: bool,
}

impl Spec {
    const fn new(flag: &'static str, label: &'static str, kind: Kind) -> Spec {
        Spec {
            name: "",
            flag,
            label,
            help: "",
            kind,
            optional: false,
            unset: "",
            unit: "",
            scope: Scope::Worker,
            advanced: false,
        }
    }

    /// One of `choices`.
    pub const fn choice(flag: &'static str, label: &'static str, choices: &'static [&'static str]) -> Spec {
        Spec::new(flag, label, Kind::Choice { choices })
    }

    /// A line of text.
    pub const fn text(flag: &'static str, label: &'static str) -> Spec {
        Spec::new(flag, label, Kind::Text)
    }

    /// An http(s) URL.
    pub const fn url(flag: &'static str, label: &'static str) -> Spec {
        Spec::new(flag, label, Kind::Url)
    }

    /// A whole number in `min..=max`.
    pub const fn integer(flag: &'static str, label: &'static str, min: u64, max: u64) -> Spec {
        Spec::new(flag, label, Kind::Integer { min, max })
    }

    /// A number in `min..=max`.
    pub const fn number(flag: &'static str, label: &'static str, min: f64, max: f64) -> Spec {
        Spec::new(flag, label, Kind::Number { min, max })
    }

    /// A list of host patterns.
    pub const fn hosts(flag: &'static str, label: &'static str) -> Spec {
        Spec::new(flag, label, Kind::Hosts)
    }

    /// A list of file paths.
    pub const fn paths(flag: &'static str, label: &'static str) -> Spec {
        Spec::new(flag, label, Kind::Paths)
    }

    /// With help text.
    pub const fn help(mut self, help: &'static str) -> Spec {
        self.help = help;
        self
    }

    /// May be unset, which means `meaning`.
    pub const fn optional(mut self, meaning: &'static str) -> Spec {
        self.optional = true;
        self.unset = meaning;
        self
    }

    /// Shown with `unit`.
    pub const fn unit(mut self, unit: &'static str) -> Spec {
        self.unit = unit;
        self
    }

    /// Taken by `classify` too.
    pub const fn provider(mut self) -> Spec {
        self.scope = Scope::Provider;
        self
    }

    /// About opening the database ([`Scope::Store`]).
    pub const fn store(mut self) -> Spec {
        self.scope = Scope::Store;
        self
    }

    /// About the automatic import ([`Scope::Import`]).
    pub const fn import(mut self) -> Spec {
        self.scope = Scope::Import;
        self
    }

    /// Shown under "Advanced".
    pub const fn advanced(mut self) -> Spec {
        self.advanced = true;
        self
    }

    /// Named `name` (set by `settings!`).
    pub const fn named(mut self, name: &'static str) -> Spec {
        self.name = name;
        self
    }

    /// The environment variable that sets it: `SITETRAIL_` and the name in capitals.
    pub fn env_var(&self) -> String {
        format!("SITETRAIL_{}", self.name.to_ascii_uppercase())
    }

    /// True for list settings (given several times on the command line, a JSON array).
    pub fn is_list(&self) -> bool {
        matches!(self.kind, Kind::Hosts | Kind::Paths)
    }

    /// True for lists whose layers add up instead of replacing each other: the exclusions (a
    /// host excluded anywhere is never sent out). Other lists (the profiles to import) are a
    /// choice, which a higher layer replaces.
    pub fn adds_up(&self) -> bool {
        matches!(self.kind, Kind::Hosts)
    }

    /// The integer limits, for settings of that kind.
    pub fn integer_limits(&self) -> Option<(u64, u64)> {
        match self.kind {
            Kind::Integer { min, max } => Some((min, max)),
            _ => None,
        }
    }

    /// What the setting takes, in words, for error messages.
    fn expects(&self) -> String {
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.unit)
        };
        match self.kind {
            Kind::Choice { choices } => format!("one of {}", choices.join(", ")),
            Kind::Text => "a non-empty text".into(),
            Kind::Url => "an http:// or https:// URL".into(),
            Kind::Integer { min, max } => format!("a whole number from {min} to {max}{unit}"),
            Kind::Number { min, max } => format!("a number from {min} to {max}{unit}"),
            Kind::Hosts => "host names or *.suffix patterns".into(),
            Kind::Paths => format!("a list of at most {MAX_PATHS} file paths"),
        }
    }

    /// Checks `value` (from a file, a form, or [`Spec::parse_text`]) and returns it normalised:
    /// choices lower-cased, text trimmed, an empty optional text as `null`. The error says what
    /// the setting takes; the caller adds where the value came from.
    pub fn check(&self, value: &Value) -> Result<Value, String> {
        let bad = || Err(format!("must be {}, not {}", self.expects(), shorten(value)));
        if value.is_null() {
            return if self.optional || self.is_list() {
                Ok(if self.is_list() {
                    Value::Array(Vec::new())
                } else {
                    Value::Null
                })
            } else {
                Err(format!("must be set ({})", self.expects()))
            };
        }
        match self.kind {
            Kind::Choice { choices } => {
                let Some(s) = value.as_str().map(|s| s.trim().to_ascii_lowercase()) else {
                    return bad();
                };
                if choices.contains(&s.as_str()) {
                    Ok(Value::String(s))
                } else {
                    bad()
                }
            }
            Kind::Text | Kind::Url => {
                let Some(s) = value.as_str().map(str::trim) else {
                    return bad();
                };
                if s.is_empty() {
                    return if self.optional { Ok(Value::Null) } else { bad() };
                }
                if self.kind == Kind::Url {
                    crate::classify::http::normalise_base_url(s)?;
                }
                Ok(Value::String(s.to_owned()))
            }
            Kind::Integer { min, max } => match value.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Value::from(n)),
                _ => bad(),
            },
            Kind::Number { min, max } => match value.as_f64() {
                Some(n) if n.is_finite() && (min..=max).contains(&n) => Ok(Value::from(n)),
                _ => bad(),
            },
            Kind::Hosts => {
                let Some(items) = value.as_array() else {
                    return bad();
                };
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let Some(s) = item.as_str() else {
                        return bad();
                    };
                    let s = s.trim();
                    if !s.is_empty() {
                        out.push(s.to_owned());
                    }
                }
                crate::classify::privacy::Exclusions::parse(&out).map_err(|e| e.to_string())?;
                Ok(Value::from(out))
            }
            Kind::Paths => {
                let Some(items) = value.as_array() else {
                    return bad();
                };
                let mut out: Vec<String> = Vec::with_capacity(items.len());
                for item in items {
                    let Some(s) = item.as_str() else {
                        return bad();
                    };
                    let s = s.trim();
                    if s.len() > MAX_PATH_BYTES || s.chars().any(char::is_control) {
                        return Err(format!(
                            "must hold paths of at most {MAX_PATH_BYTES} bytes without control characters, not {}",
                            shorten(&Value::from(s))
                        ));
                    }
                    if !s.is_empty() && !out.iter().any(|o| o == s) {
                        out.push(s.to_owned());
                    }
                }
                if out.len() > MAX_PATHS {
                    return bad();
                }
                Ok(Value::from(out))
            }
        }
    }

    /// Reads a value written as text (an environment variable, a command-line argument), then
    /// [`Spec::check`]s it. Lists are comma-separated; an empty text unsets an optional setting.
    pub fn parse_text(&self, text: &str) -> Result<Value, String> {
        let t = text.trim();
        let value = match self.kind {
            Kind::Choice { .. } | Kind::Text | Kind::Url => {
                if t.is_empty() && self.optional {
                    Value::Null
                } else {
                    Value::String(t.to_owned())
                }
            }
            Kind::Integer { .. } => match t.parse::<u64>() {
                Ok(n) => Value::from(n),
                Err(_) if t.is_empty() && self.optional => Value::Null,
                Err(_) => return Err(format!("must be {}, not {t:?}", self.expects())),
            },
            Kind::Number { .. } => match t.parse::<f64>() {
                Ok(n) if n.is_finite() => Value::from(n),
                _ => return Err(format!("must be {}, not {t:?}", self.expects())),
            },
            Kind::Hosts => Value::from(
                t.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>(),
            ),
            Kind::Paths => Value::from(
                std::env::split_paths(t)
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
        };
        self.check(&value)
    }
}

/// A value for an error message, shortened.
fn shorten(value: &Value) -> String {
    crate::error::truncate_chars(&value.to_string(), 80)
}

/// The spec named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    super::SCHEMA.iter().find(|s| s.name == name)
}

/// The integer limits of the setting `name` (for [`crate::worker::WorkerConfig`]'s checks).
pub fn limits(name: &str) -> (u64, u64) {
    spec(name).and_then(Spec::integer_limits).unwrap_or((0, u64::MAX))
}

/// The limits of the number setting `name`.
pub fn number_limits(name: &str) -> (f64, f64) {
    match spec(name).map(|s| s.kind) {
        Some(Kind::Number { min, max }) => (min, max),
        _ => (f64::MIN, f64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get(name: &str) -> &'static Spec {
        spec(name).unwrap()
    }

    #[test]
    fn values_are_checked_against_their_kind_and_limits() {
        let delay = get("fixed_delay_ms");
        assert_eq!(delay.check(&json!(1500)), Ok(json!(1500)));
        let err = delay.check(&json!(-5)).unwrap_err();
        assert!(err.contains("from 0 to 3600000") && err.contains("-5"), "{err}");
        assert!(
            delay.check(&json!("1500")).is_err(),
            "text is not a number in a file"
        );
        assert_eq!(delay.parse_text(" 1500 "), Ok(json!(1500)));
        assert!(delay.parse_text("1e3").is_err());
        assert!(delay.check(&Value::Null).is_err(), "required");

        let batch = get("batch_size");
        assert_eq!(batch.check(&Value::Null), Ok(Value::Null), "optional");
        assert_eq!(batch.parse_text(""), Ok(Value::Null));
        assert!(batch.check(&json!(0)).is_err() && batch.check(&json!(501)).is_err());

        let provider = get("provider");
        assert_eq!(provider.parse_text(" OpenAI "), Ok(json!("openai")));
        assert!(provider
            .parse_text("gemini")
            .unwrap_err()
            .contains("builtin, openai, ollama"));

        let factor = get("retry_factor");
        assert!(factor.parse_text("inf").is_err() && factor.parse_text("NaN").is_err());
        assert_eq!(factor.parse_text("1.5"), Ok(json!(1.5)));

        let url = get("base_url");
        assert!(url.parse_text("ftp://x").is_err());
        assert_eq!(url.parse_text(""), Ok(Value::Null));

        let hosts = get("exclusions");
        assert_eq!(
            hosts.parse_text("a.example, *.corp.example,"),
            Ok(json!(["a.example", "*.corp.example"]))
        );
        assert!(hosts.check(&json!("a.example")).is_err(), "a list, not a string");

        let paths = get("import_profiles");
        #[cfg(unix)]
        assert_eq!(
            paths.parse_text("/a/History:/b/places.sqlite"),
            Ok(json!(["/a/History", "/b/places.sqlite"]))
        );
        assert_eq!(
            paths.check(&json!([" /a/History ", "", "/a/History"])),
            Ok(json!(["/a/History"])),
            "trimmed, blanks and repeats dropped"
        );
        assert!(paths.check(&json!("/a/History")).is_err(), "a list, not a string");
        assert!(
            paths.check(&json!(["/a\u{0}b"])).is_err(),
            "no control characters"
        );
        let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("/p{i}")).collect();
        assert!(paths.check(&json!(many)).is_err());
        assert_eq!(paths.check(&Value::Null), Ok(json!([])));
    }

    #[test]
    fn every_setting_has_a_flag_label_help_and_env_var() {
        let mut flags = std::collections::HashSet::new();
        for s in super::super::SCHEMA {
            assert!(
                !s.name.is_empty() && !s.label.is_empty() && !s.help.is_empty(),
                "{s:?}"
            );
            assert!(flags.insert(s.flag), "flag --{} used twice", s.flag);
            assert_eq!(
                s.optional,
                !s.unset.is_empty(),
                "{}: say what unset means",
                s.name
            );
            assert!(s.env_var().starts_with("SITETRAIL_"));
        }
    }
}

//! The settings' command-line flags, made from the settings schema (`sitetrail::settings::SCHEMA`):
//! every setting has its flag, help text and default from the one definition, and a value is
//! checked by the same function that checks the file, the environment and the app's form.

use clap::builder::{TypedValueParser, ValueParser};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use serde_json::{Map, Value};
use sitetrail::settings::{Kind, Overrides, Scope, Settings, Spec, SCHEMA};

/// The settings flags of the scopes in `SCOPES` (a set of [`bit`]s: [`CLASSIFY`], [`WORKER`],
/// [`IMPORT`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct SettingFlags<const SCOPES: u8> {
    /// The values given, checked.
    pub(crate) overrides: Overrides,
}

/// A scope as a bit of a command's set.
const fn bit(scope: Scope) -> u8 {
    match scope {
        Scope::Provider => 1,
        Scope::Worker => 2,
        Scope::Store => 4,
        Scope::Import => 8,
    }
}

/// `classify`'s flags: which provider and how to reach it.
pub(crate) const CLASSIFY: u8 = bit(Scope::Provider);
/// `worker`'s (and `daemon`'s) flags: the provider, the worker, and how the database is opened.
pub(crate) const WORKER: u8 = bit(Scope::Provider) | bit(Scope::Worker) | bit(Scope::Store);
/// `daemon`'s flags beside the worker's: the automatic import.
pub(crate) const IMPORT: u8 = bit(Scope::Import);

fn in_scope(spec: &Spec, scopes: u8) -> bool {
    bit(spec.scope) & scopes != 0
}

/// What the flag's value looks like, for `--help`.
fn value_name(spec: &Spec) -> &'static str {
    match spec.kind {
        Kind::Choice { .. } => "NAME",
        Kind::Text => "NAME",
        Kind::Url => "URL",
        Kind::Integer { .. } => "N",
        Kind::Number { .. } => "F",
        Kind::Hosts => "PATTERN",
        Kind::Paths => "PATH",
    }
}

/// The help line: the spec's help, its choices and its default.
fn help(spec: &Spec) -> String {
    let mut h = spec.help.to_owned();
    if let Kind::Choice { choices } = spec.kind {
        h.push_str(&format!(" [possible values: {}]", choices.join(", ")));
    }
    if spec.optional {
        h.push_str(&format!(" [default: {}]", spec.unset));
    } else if !spec.is_list() {
        let defaults = serde_json::to_value(Settings::default()).unwrap_or_default();
        if let Some(d) = defaults.get(spec.name) {
            let d = d.as_str().map_or_else(|| d.to_string(), str::to_owned);
            let unit = if spec.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", spec.unit)
            };
            h.push_str(&format!(" [default: {d}{unit}, or the saved setting]"));
        }
    }
    h.push_str(&format!(" [env: {}]", spec.env_var()));
    h
}

fn arg(spec: &'static Spec) -> Arg {
    Arg::new(spec.name)
        .long(spec.flag)
        .value_name(value_name(spec))
        .help(help(spec))
        .action(if spec.is_list() {
            ArgAction::Append
        } else {
            ArgAction::Set
        })
        .value_parser(ValueParser::new(SpecParser(spec)))
}

/// Reads a flag's value with its spec. clap's own error would repeat the value as given, and a
/// URL may hold a user name and password: a URL's error shows only the spec's message, which
/// names the URL without them (`display_url`).
#[derive(Clone)]
struct SpecParser(&'static Spec);

impl TypedValueParser for SpecParser {
    type Value = Value;

    fn parse_ref(&self, _: &Command, _: Option<&Arg>, value: &std::ffi::OsStr) -> Result<Value, clap::Error> {
        let flag = self.0.flag;
        let bad = |m: String| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{m}\n"));
        let text = value
            .to_str()
            .ok_or_else(|| bad(format!("invalid value for '--{flag}': it is not UTF-8")))?;
        self.0.parse_text(text).map_err(|why| {
            if self.0.kind == Kind::Url {
                bad(format!("invalid value for '--{flag} <URL>': {why}"))
            } else {
                bad(format!(
                    "invalid value '{text}' for '--{flag} <{}>': {why}",
                    value_name(self.0)
                ))
            }
        })
    }
}

impl<const SCOPES: u8> Args for SettingFlags<SCOPES> {
    fn augment_args(cmd: Command) -> Command {
        SCHEMA
            .iter()
            .filter(|s| in_scope(s, SCOPES))
            .fold(cmd, |cmd, s| cmd.arg(arg(s)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<const SCOPES: u8> FromArgMatches for SettingFlags<SCOPES> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut values = Map::new();
        for spec in SCHEMA.iter().filter(|s| in_scope(s, SCOPES)) {
            let Some(mut given) = m.get_many::<Value>(spec.name) else {
                continue;
            };
            let value = if spec.is_list() {
                // Each `--exclude` (`--import-profile`) is a list of its own: join them.
                Value::Array(
                    given
                        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                        .collect(),
                )
            } else {
                match given.next_back() {
                    Some(v) => v.clone(),
                    None => continue,
                }
            };
            values.insert(spec.name.to_owned(), value);
        }
        Ok(SettingFlags {
            overrides: Overrides::from_checked(values),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Cmd {
        #[command(flatten)]
        settings: SettingFlags<WORKER>,
        #[command(flatten)]
        import: SettingFlags<IMPORT>,
    }

    #[derive(clap::Parser, Debug)]
    struct ProviderOnly {
        #[command(flatten)]
        settings: SettingFlags<CLASSIFY>,
    }

    #[derive(clap::Parser, Debug)]
    struct WorkerOnly {
        #[command(flatten)]
        settings: SettingFlags<WORKER>,
    }

    #[test]
    fn every_setting_is_a_flag_checked_by_its_spec() {
        use clap::Parser;
        let c = Cmd::try_parse_from([
            "x",
            "--retry-delay-ms",
            "100",
            "--exclude",
            "a.example",
            "--exclude",
            "*.b.example",
            "--provider",
            "OLLAMA",
        ])
        .unwrap();
        let o = &c.settings.overrides;
        assert_eq!(o.get("retry_base_ms"), Some(&Value::from(100)));
        assert_eq!(o.get("provider"), Some(&Value::from("ollama")));
        assert_eq!(
            o.get("exclusions"),
            Some(&serde_json::json!(["a.example", "*.b.example"]))
        );
        let err = Cmd::try_parse_from(["x", "--batch-size", "0"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("from 1 to 500"), "{err}");
        assert!(ProviderOnly::try_parse_from(["x", "--max-attempts", "3"]).is_err());
        assert!(ProviderOnly::try_parse_from(["x", "--model", "m"]).is_ok());
        assert!(
            WorkerOnly::try_parse_from(["x", "--import-interval-min", "5"]).is_err(),
            "the import's flags are the daemon's, not the worker's"
        );
        let c = Cmd::try_parse_from([
            "x",
            "--synchronous",
            "FULL",
            "--import-interval-min",
            "30",
            "--import-profile",
            "/a/History",
            "--import-profile",
            "/b/places.sqlite",
        ])
        .unwrap();
        assert_eq!(
            c.settings.overrides.get("synchronous"),
            Some(&Value::from("full"))
        );
        assert_eq!(
            c.import.overrides.get("auto_import_minutes"),
            Some(&Value::from(30))
        );
        assert_eq!(
            c.import.overrides.get("import_profiles"),
            Some(&serde_json::json!(["/a/History", "/b/places.sqlite"]))
        );
        let err = Cmd::try_parse_from(["x", "--import-interval-min", "10081"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("from 0 to 10080"), "{err}");
        for spec in SCHEMA {
            let flag = format!("--{}", spec.flag);
            let help = Cmd::try_parse_from(["x", "--help"]).unwrap_err().to_string();
            assert!(help.contains(&flag), "{flag} missing from --help");
        }
    }
}

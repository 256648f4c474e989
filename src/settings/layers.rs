//! The layers above the settings file: [`Overrides`] (a command line's flags, the app's form) and
//! the [`Environment`] (`SITETRAIL_<NAME>` variables and the API key), each value checked
//! against its [`Spec`].

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{schema, Spec, SCHEMA};
use crate::classify::secret::ApiKey;
use crate::error::{Error, Result};

/// Values for some settings, by name, each checked against its [`Spec`]: one layer of the
/// settings (the command line, the app's form). Names not in the layer keep the lower layers'
/// values; list values are added to them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub(super) values: Map<String, Value>,
    /// True for an edit of the saved settings (the app's form): its lists replace the saved
    /// ones instead of adding to them, so an exclusion can be removed.
    pub(super) replaces_lists: bool,
}

impl Overrides {
    /// No overrides.
    pub fn new() -> Overrides {
        Overrides::default()
    }

    /// Sets `name` to `value` (JSON, as the settings file holds it), checked against its spec.
    pub fn set(&mut self, name: &str, value: Value) -> Result<&mut Overrides> {
        let spec = schema::spec(name)
            .ok_or_else(|| Error::InvalidInput(format!("there is no setting named {name:?}")))?;
        let value = spec
            .check(&value)
            .map_err(|why| Error::InvalidInput(format!("{name} {why}")))?;
        self.values.insert(name.to_owned(), value);
        Ok(self)
    }

    /// Sets `name` from `value` written as text, as a flag or an environment variable gives it.
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<&mut Overrides> {
        let spec = schema::spec(name)
            .ok_or_else(|| Error::InvalidInput(format!("there is no setting named {name:?}")))?;
        let value = spec
            .parse_text(value)
            .map_err(|why| Error::InvalidInput(format!("{name} {why}")))?;
        self.values.insert(name.to_owned(), value);
        Ok(self)
    }

    /// The value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// This layer with `other`'s values added (the daemon's worker and import flags).
    pub fn extend(&mut self, other: &Overrides) -> &mut Overrides {
        self.values
            .extend(other.values.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// A layer from already-checked values (the CLI's parsed flags).
    pub fn from_checked(values: Map<String, Value>) -> Overrides {
        Overrides {
            values,
            replaces_lists: false,
        }
    }

    /// An edit of the saved settings from a JSON object (the app's form): every key must be a
    /// setting, every value is checked; keys not in the object keep their saved values, and a
    /// list given replaces the saved list.
    pub fn edit_from_json(object: &Map<String, Value>) -> Result<Overrides> {
        let mut o = Overrides::new();
        for (name, value) in object {
            o.set(name, value.clone())?;
        }
        o.replaces_lists = true;
        Ok(o)
    }
}

/// The environment's part: `SITETRAIL_<NAME>` for every setting (read as text, checked when the
/// settings are resolved, with an error naming the variable) and the API key from
/// `SITETRAIL_API_KEY`. Empty variables count as unset.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// Setting name → (variable, raw value).
    vars: BTreeMap<&'static str, (String, String)>,
    /// `SITETRAIL_API_KEY`.
    pub api_key: Option<ApiKey>,
}

impl Environment {
    /// Reads the process environment.
    pub fn from_process() -> Environment {
        Environment::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads variables through `get` (for tests and for the app's own sources).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Environment {
        let mut vars = BTreeMap::new();
        for spec in SCHEMA {
            let var = spec.env_var();
            if let Some(v) = get(&var).filter(|v| !v.trim().is_empty()) {
                vars.insert(spec.name, (var, v));
            }
        }
        Environment {
            vars,
            api_key: get(API_KEY_ENV).and_then(ApiKey::new),
        }
    }

    /// The variables that are set (settings and the key), to tell the user why a saved value is
    /// not the one in use.
    pub fn variables_set(&self) -> Vec<String> {
        let mut names: Vec<String> = self.vars.values().map(|(var, _)| var.clone()).collect();
        if self.api_key.is_some() {
            names.push(API_KEY_ENV.into());
        }
        names
    }

    /// The settings layer the variables make, each value checked.
    pub(super) fn layer(&self) -> Result<Overrides> {
        self.layer_where(|_| true)
    }

    /// The layer of the variables whose spec passes `keep`.
    pub(super) fn layer_where(&self, keep: impl Fn(&Spec) -> bool) -> Result<Overrides> {
        let mut o = Overrides::new();
        for (name, (var, raw)) in &self.vars {
            let spec = schema::spec(name).ok_or_else(|| Error::Task(format!("no spec for {name}")))?;
            if !keep(spec) {
                continue;
            }
            let value = spec
                .parse_text(raw)
                .map_err(|why| Error::InvalidConfig(format!("{var} {why}")))?;
            o.values.insert((*name).to_owned(), value);
        }
        Ok(o)
    }
}

/// The environment variable holding the API key (never a setting: it is not saved in the
/// settings file).
pub const API_KEY_ENV: &str = "SITETRAIL_API_KEY";

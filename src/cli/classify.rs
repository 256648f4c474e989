//! `sitetrail classify`: the category a provider gives each domain, without the database.
//! `--title` (built-in provider only) gives the learned model page titles to judge by, as the
//! worker's local pass does with the titles stored on the device.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use sitetrail::classify::builtin::{judge_with_titles, RuleOptions};
use sitetrail::classify::model::features::TitleWords;
use sitetrail::classify::{Classifier, Verdict};
use sitetrail::domain::Domain;
use sitetrail::settings::Provider;
use sitetrail::{Category, CategorySource, Confidence, Error, Result};

use super::out::{self, Align, Cell, Style, Table};
use super::settings::{SettingFlags, CLASSIFY};
use super::{human, resolve_settings};

#[derive(Args, Debug)]
pub(crate) struct ClassifyArgs {
    /// Domains (or URLs) to classify.
    #[arg(required = true, value_name = "DOMAIN")]
    domains: Vec<String>,
    /// Provider settings (each overrides the environment and the saved settings).
    #[command(flatten)]
    provider: SettingFlags<CLASSIFY>,
    /// A page title of the site(s), for the built-in provider's learned model (repeatable; the
    /// titles apply to every domain given). Titles never leave the machine: refused with a
    /// remote provider.
    #[arg(long = "title", value_name = "TEXT")]
    titles: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_classify(db: Option<PathBuf>, settings: Option<PathBuf>, args: ClassifyArgs) -> Result<()> {
    let mut resolved = resolve_settings(settings, &args.provider.overrides)?;
    // The hosts kept from remote providers on all the user's devices are kept from this one too;
    // a database that does not exist is not created for it.
    let db = super::db_path(db)?;
    if db.exists() {
        let shared = super::open(Some(db))?.excluded_hosts()?;
        resolved
            .settings
            .exclusions
            .extend(shared.into_iter().map(|e| e.pattern));
    }
    let domains = args
        .domains
        .iter()
        .map(|d| Domain::parse(d).map(|d| d.as_str().to_owned()))
        .collect::<Result<Vec<_>>>()?;
    // The database is not opened, so the user's own categories do not apply here.
    let classifier: Arc<dyn Classifier> = resolved.classifier(Default::default())?;
    let titles = if args.titles.is_empty() {
        None
    } else if resolved.settings.provider != Provider::Builtin {
        return Err(Error::InvalidInput(format!(
            "--title is for the built-in provider only (titles never leave this machine); the provider is {}",
            resolved.settings.provider.as_str()
        )));
    } else {
        let mut words = TitleWords::new();
        args.titles.iter().for_each(|t| words.add(t));
        Some(words)
    };
    let batch = resolved.worker_config().batch_size;
    let rt = tokio::runtime::Runtime::new()?;
    let mut rows = Vec::with_capacity(domains.len());
    for chunk in domains.chunks(batch) {
        let outcomes = match &titles {
            Some(words) => chunk
                .iter()
                .map(|d| {
                    let j = judge_with_titles(d, None, RuleOptions::default(), Some(words));
                    Ok(Verdict {
                        category: j.category,
                        source: CategorySource::Builtin,
                        confidence: j.confidence,
                    })
                })
                .collect(),
            None => rt.block_on(classifier.classify(chunk))?,
        };
        for (domain, outcome) in chunk.iter().zip(outcomes) {
            rows.push(match outcome {
                Ok(v) => Row {
                    category: Some(v.category),
                    confidence: Some(v.confidence),
                    domain,
                    error: None,
                    source: Some(v.source),
                },
                Err(error) => Row {
                    category: None,
                    confidence: None,
                    domain,
                    error: Some(error),
                    source: None,
                },
            });
        }
    }
    if args.json {
        return out::json(&rows);
    }
    let mut t = Table::new()
        .column("DOMAIN", Align::Left)
        .column("CATEGORY", Align::Left)
        .flex("BY");
    for r in &rows {
        let domain = sitetrail::domain::unicode_form(r.domain).into_owned();
        match (r.category, r.source) {
            (Some(c), Some(source)) => t.row(vec![
                domain.into(),
                human::category_name(Some(c)).into(),
                human::source_name(source).into(),
            ]),
            _ => t.row(vec![
                domain.into(),
                Cell::styled("-", Style::Dim),
                Cell::styled(r.error.as_deref().unwrap_or(""), Style::Red),
            ]),
        }
    }
    out::table(&t)
}

/// One domain's answer, as `--json` prints it: every key always present (`null` where it does
/// not apply), in alphabetical order as the JSON has always had them.
#[derive(serde::Serialize)]
struct Row<'a> {
    category: Option<Category>,
    confidence: Option<Confidence>,
    domain: &'a str,
    error: Option<String>,
    source: Option<CategorySource>,
}

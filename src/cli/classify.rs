//! `sitetrail classify`: the category a provider gives each domain, without the database.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde_json::json;

use sitetrail::classify::Classifier;
use sitetrail::domain::Domain;
use sitetrail::{CategorySource, Result};

use super::out::{self, Align, Cell, Style, Table};
use super::settings::SettingFlags;
use super::{human, resolve_settings};

#[derive(Args, Debug)]
pub(crate) struct ClassifyArgs {
    /// Domains (or URLs) to classify.
    #[arg(required = true, value_name = "DOMAIN")]
    domains: Vec<String>,
    /// Provider settings (each overrides the environment and the saved settings).
    #[command(flatten)]
    provider: SettingFlags<false>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_classify(settings: Option<PathBuf>, args: ClassifyArgs) -> Result<()> {
    let resolved = resolve_settings(settings, &args.provider.overrides)?;
    let domains = args
        .domains
        .iter()
        .map(|d| Domain::parse(d).map(|d| d.as_str().to_owned()))
        .collect::<Result<Vec<_>>>()?;
    // The database is not opened, so the user's own categories do not apply here.
    let classifier: Arc<dyn Classifier> = resolved.classifier(Default::default())?;
    let batch = resolved.worker_config().batch_size;
    let rt = tokio::runtime::Runtime::new()?;
    let mut rows = Vec::with_capacity(domains.len());
    for chunk in domains.chunks(batch) {
        let outcomes = rt.block_on(classifier.classify(chunk))?;
        for (domain, outcome) in chunk.iter().zip(outcomes) {
            rows.push(match outcome {
                Ok(v) => json!({"domain": domain, "category": v.category, "source": v.source,
                                "confidence": v.confidence, "error": null}),
                Err(e) => json!({"domain": domain, "category": null, "source": null,
                                 "confidence": null, "error": e}),
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
        let domain = sitetrail::domain::unicode_form(r["domain"].as_str().unwrap_or("")).into_owned();
        match r["category"].as_str() {
            Some(c) => t.row(vec![
                domain.into(),
                human::category_name(c.parse().ok()).into(),
                r["source"]
                    .as_str()
                    .map(|s| CategorySource::parse(s).map_or(s, |src| human::source_name(src)))
                    .unwrap_or("")
                    .into(),
            ]),
            None => t.row(vec![
                domain.into(),
                Cell::styled("-", Style::Dim),
                Cell::styled(r["error"].as_str().unwrap_or(""), Style::Red),
            ]),
        }
    }
    out::table(&t)
}

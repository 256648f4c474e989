//! The website commands: `websites` (list), `categorize` (the user's category), `reclassify`
//! (classify again) and `categories` (the taxonomy).

use clap::Args;
use serde_json::json;

use sitetrail::domain::unicode_form;
use sitetrail::websites::{Reclassify, WebsiteFilter};
use sitetrail::{Category, Result, Store};

use super::human;
use super::out::{self, Align, Cell, Style, Table};

#[derive(Args, Debug)]
pub(crate) struct WebsitesArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Only websites in this category: its id or name (see `sitetrail categories`).
    #[arg(long, value_name = "C", value_parser = human::CategoryArg, hide_possible_values = true)]
    category: Option<String>,
    /// Only websites without a category yet.
    #[arg(long, conflicts_with = "category")]
    uncategorized: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CategorizeArgs {
    /// The website's domain.
    domain: String,
    /// A category: its id or name (see `sitetrail categories`).
    #[arg(value_parser = human::CategoryArg, hide_possible_values = true)]
    category: String,
}

#[derive(Args, Debug)]
pub(crate) struct ReclassifyArgs {
    /// The website's domain.
    domain: String,
    /// Classify again with the AI: ask the remote provider even where the built-in answer
    /// is certain.
    #[arg(long)]
    ai: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CategoriesArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_websites(store: &Store, args: WebsitesArgs) -> Result<()> {
    let category = args.category.as_deref().map(human::parse_category).transpose()?;
    let sites = store.websites(&WebsiteFilter {
        category,
        uncategorized: args.uncategorized,
    })?;
    if args.json {
        return out::json(&sites);
    }
    if sites.is_empty() {
        return out::line("no websites");
    }
    let mut t = Table::new()
        .flex("WEBSITE")
        .column("CATEGORY", Align::Left)
        .column("BY", Align::Left)
        .column("CONFIDENCE", Align::Left)
        .column("CLASSIFIED", Align::Left);
    for w in &sites {
        let dim = |text: &str| Cell::styled(text, Style::Dim);
        t.row(vec![
            unicode_form(&w.domain).into_owned().into(),
            match w.category {
                Some(c) => c.name().into(),
                None => dim(human::category_name(None)),
            },
            w.category_source
                .map_or_else(|| dim("-"), |s| human::source_name(s).into()),
            w.category_confidence
                .map_or_else(|| dim("-"), |c| c.to_string().into()),
            w.classified_at
                .map_or_else(|| dim("-"), |at| human::local_time(at).into()),
        ]);
    }
    out::table(&t)
}

pub(crate) fn run_categorize(store: &Store, args: CategorizeArgs) -> Result<()> {
    let category = human::parse_category(&args.category)?;
    let w = store.set_user_category(&args.domain, category)?;
    out::line(&format!(
        "{} is now {} ({}: your choice; never overwritten)",
        unicode_form(&w.domain),
        category.id(),
        category.name()
    ))
}

pub(crate) fn run_reclassify(store: &Store, args: ReclassifyArgs) -> Result<()> {
    let w = store.reclassify_with(&args.domain, Reclassify { ai: args.ai })?;
    let with = if args.ai { " by the AI" } else { "" };
    out::line(&format!(
        "{} queued to be classified again{with}",
        unicode_form(&w.domain)
    ))
}

pub(crate) fn run_categories(args: CategoriesArgs) -> Result<()> {
    if args.json {
        let list: Vec<_> = Category::ALL
            .iter()
            .map(|c| json!({"id": c.id(), "name": c.name()}))
            .collect();
        return out::json(&list);
    }
    let mut t = Table::new().column("ID", Align::Left).flex("NAME");
    for c in Category::ALL {
        t.row(vec![c.id().into(), c.name().into()]);
    }
    out::table(&t)
}

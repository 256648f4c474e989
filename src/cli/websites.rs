//! The website commands: `websites` (list), `categorize` (the user's category), `reclassify`
//! (classify again) and `categories` (the taxonomy).

use clap::Args;
use serde_json::json;

use sitetrail::websites::{Reclassify, WebsiteFilter};
use sitetrail::{Category, Result, Store};

use super::print_json;

#[derive(Args, Debug)]
pub(crate) struct WebsitesArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Only websites in this category.
    #[arg(long, value_name = "C")]
    category: Option<String>,
    /// Only websites without a category yet.
    #[arg(long, conflicts_with = "category")]
    uncategorized: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CategorizeArgs {
    /// The website's domain.
    domain: String,
    /// A category id (see `sitetrail categories`).
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
    let category = args.category.map(|c| c.parse::<Category>()).transpose()?;
    let sites = store.websites(&WebsiteFilter {
        category,
        uncategorized: args.uncategorized,
    })?;
    if args.json {
        return print_json(&sites);
    }
    for w in sites {
        let cat = w.category.map_or("-", Category::id);
        let src = match (w.category_source, w.category_confidence) {
            (Some(s), Some(c)) => format!(" ({}, {c})", s.as_str()),
            (Some(s), None) => format!(" ({})", s.as_str()),
            _ => String::new(),
        };
        println!("{}  {cat}{src}", w.domain);
    }
    Ok(())
}

pub(crate) fn run_categorize(store: &Store, args: CategorizeArgs) -> Result<()> {
    let category: Category = args.category.parse()?;
    let w = store.set_user_category(&args.domain, category)?;
    println!(
        "{} is now {} (your choice; never overwritten)",
        w.domain, category
    );
    Ok(())
}

pub(crate) fn run_reclassify(store: &Store, args: ReclassifyArgs) -> Result<()> {
    let w = store.reclassify_with(&args.domain, Reclassify { ai: args.ai })?;
    let with = if args.ai { " by the AI" } else { "" };
    println!("{} queued to be classified again{with}", w.domain);
    Ok(())
}

pub(crate) fn run_categories(args: CategoriesArgs) -> Result<()> {
    if args.json {
        let list: Vec<_> = Category::ALL
            .iter()
            .map(|c| json!({"id": c.id(), "name": c.name()}))
            .collect();
        return print_json(&list);
    }
    for c in Category::ALL {
        println!("{:<18} {}", c.id(), c.name());
    }
    Ok(())
}

//! The `review` command: the websites whose category is not certain, most visited first, and
//! `--confirm` to make a shown category your own ("right"). To pick another category, use
//! `sitetrail categorize DOMAIN CATEGORY`.

use clap::Args;

use sitetrail::review::{ReviewQuery, MAX_REVIEW};
use sitetrail::{Category, Confidence, Error, Result, Store};

use super::print_json;

#[derive(Args, Debug)]
pub(crate) struct ReviewArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Websites at most.
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: usize,
    /// Only this band: `low` or `medium` [default: both].
    #[arg(long, value_name = "BAND", value_parser = ["low", "medium"])]
    confidence: Option<String>,
    /// Make these websites' current categories your own ("right"): they are then certain and
    /// never overwritten.
    #[arg(long, value_name = "DOMAIN", num_args = 1.., conflicts_with_all = ["limit", "confidence"])]
    confirm: Vec<String>,
    /// With --confirm: only if the category is still this one (as the list showed it).
    #[arg(long, value_name = "CATEGORY", requires = "confirm")]
    expect: Option<String>,
}

pub(crate) fn run_review(store: &Store, args: ReviewArgs) -> Result<()> {
    if !args.confirm.is_empty() {
        let expected = args.expect.as_deref().map(str::parse::<Category>).transpose()?;
        // All or nothing: check every domain first, so one typo confirms none.
        for domain in &args.confirm {
            store.website(domain)?;
        }
        for domain in &args.confirm {
            let w = store.confirm_category(domain, expected)?;
            println!(
                "{} is now {} (your choice; never overwritten)",
                w.domain,
                w.category.map_or("-", Category::id)
            );
        }
        return Ok(());
    }
    if args.limit == 0 || args.limit > MAX_REVIEW {
        return Err(Error::InvalidInput(format!(
            "--limit must be between 1 and {MAX_REVIEW}, not {}",
            args.limit
        )));
    }
    let confidence = args
        .confidence
        .as_deref()
        .map(str::parse::<Confidence>)
        .transpose()?;
    let items = store.review(&ReviewQuery {
        limit: args.limit,
        confidence,
    })?;
    if args.json {
        return print_json(&items);
    }
    if items.is_empty() {
        println!("nothing to review: every category is certain or yours");
        return Ok(());
    }
    for i in &items {
        let waiting = if i.waiting_for_ai {
            ", waiting for the AI"
        } else {
            ""
        };
        println!(
            "{}  {} ({}, {}{waiting})  {} visit{}",
            i.domain,
            i.category,
            i.category_source.as_str(),
            i.category_confidence,
            i.visits,
            if i.visits == 1 { "" } else { "s" }
        );
    }
    println!(
        "right: `sitetrail review --confirm DOMAIN`; another category: `sitetrail categorize DOMAIN CATEGORY`"
    );
    Ok(())
}

//! The `review` command: the websites whose category is not certain, most visited first, and
//! `--confirm` to make a shown category your own ("right"). To pick another category, use
//! `sitetrail categorize DOMAIN CATEGORY`.

use clap::Args;

use sitetrail::domain::unicode_form;
use sitetrail::review::{ReviewQuery, DEFAULT_REVIEW};
use sitetrail::{Category, Confidence, Error, Result, Store};

use super::human;
use super::out::{self, Align, Cell, Style, Table};

#[derive(Args, Debug)]
pub(crate) struct ReviewArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Websites at most.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REVIEW)]
    limit: usize,
    /// Only this band: `low` or `medium` [default: both].
    #[arg(long, value_name = "BAND", value_parser = ["low", "medium"])]
    confidence: Option<String>,
    /// Make these websites' current categories your own ("right"): they are then certain and
    /// never overwritten.
    #[arg(long, value_name = "DOMAIN", num_args = 1.., conflicts_with_all = ["limit", "confidence"])]
    confirm: Vec<String>,
    /// With --confirm: only if the category is still this one (as the list showed it; its id or
    /// name).
    #[arg(
        long,
        value_name = "CATEGORY",
        requires = "confirm",
        value_parser = human::CategoryArg,
        hide_possible_values = true
    )]
    expect: Option<String>,
}

pub(crate) fn run_review(store: &Store, args: ReviewArgs) -> Result<()> {
    if !args.confirm.is_empty() {
        let expected = args.expect.as_deref().map(human::parse_category).transpose()?;
        // All or nothing: check every domain first, so one typo confirms none.
        for domain in &args.confirm {
            store.website(domain)?;
        }
        // Every change is made before anything is printed, so a reader that stops reading
        // (`| head -1`) never leaves some of them undone.
        let confirmed = args
            .confirm
            .iter()
            .map(|domain| store.confirm_category(domain, expected))
            .collect::<Result<Vec<_>>>()?;
        for w in &confirmed {
            out::line(&format!(
                "{} is now {} ({}: your choice; never overwritten)",
                unicode_form(&w.domain),
                w.category.map_or("-", Category::id),
                human::category_name(w.category)
            ))?;
        }
        return Ok(());
    }
    // clap has checked the band: a refusal here is about the limit.
    let query = ReviewQuery::parse(Some(args.limit), args.confidence.as_deref()).map_err(|e| match e {
        Error::InvalidInput(m) => Error::InvalidInput(format!("--limit: {m}")),
        other => other,
    })?;
    let items = store.review(&query)?;
    if args.json {
        return out::json(&items);
    }
    if items.is_empty() {
        return out::line("nothing to review: every category is certain or yours");
    }
    // When each category was given, read before anything is printed.
    let classified = items
        .iter()
        .map(|i| Ok(store.website(&i.domain)?.classified_at))
        .collect::<Result<Vec<_>>>()?;
    let mut t = Table::new()
        .flex("WEBSITE")
        .column("CATEGORY", Align::Left)
        .column("BY", Align::Left)
        .column("CONFIDENCE", Align::Left)
        .column("VISITS", Align::Right)
        .column("CLASSIFIED", Align::Left)
        .column("NOTE", Align::Left);
    for (i, at) in items.iter().zip(classified) {
        t.row(vec![
            unicode_form(&i.domain).into_owned().into(),
            i.category.name().into(),
            human::source_name(i.category_source).into(),
            Cell::styled(
                i.category_confidence.to_string(),
                if i.category_confidence == Confidence::Low {
                    Style::Yellow
                } else {
                    Style::Plain
                },
            ),
            i.visits.to_string().into(),
            at.map_or_else(
                || Cell::styled("-", Style::Dim),
                |at| human::local_time(at).into(),
            ),
            if i.waiting_for_ai {
                Cell::styled("waiting for the AI", Style::Dim)
            } else {
                "".into()
            },
        ]);
    }
    out::table(&t)?;
    out::note("right: `sitetrail review --confirm DOMAIN`; another category: `sitetrail categorize DOMAIN CATEGORY`");
    Ok(())
}

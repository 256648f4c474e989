//! `sitetrail export`: history or categories to a CSV or JSON file.

use std::path::PathBuf;

use clap::Args;

use sitetrail::export::{ExportFormat, ExportKind};
use sitetrail::{Result, Store};

use super::out;

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// What to export.
    #[arg(value_enum)]
    what: ExportWhat,
    /// File format.
    #[arg(long, value_enum, default_value = "csv")]
    format: ExportAs,
    /// The file to write (replaced only once the export is complete).
    #[arg(long, short, value_name = "PATH")]
    output: PathBuf,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExportWhat {
    History,
    Categories,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExportAs {
    Csv,
    Json,
}

pub(crate) fn run_export(store: &Store, args: ExportArgs) -> Result<()> {
    let kind = match args.what {
        ExportWhat::History => ExportKind::History,
        ExportWhat::Categories => ExportKind::Categories,
    };
    let format = match args.format {
        ExportAs::Csv => ExportFormat::Csv,
        ExportAs::Json => ExportFormat::Json,
    };
    let n = store.export(kind, format, &args.output)?;
    out::line(&format!("exported {n} row(s) to {}", args.output.display()))
}

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
    /// The file to write (replaced only once the export is complete; a symlink's target is
    /// replaced, never the link; a pipe or device such as /dev/stdout is written to directly).
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
    let summary = format!("exported {n} row(s) to {}", args.output.display());
    // Into a pipe or a terminal (`-o /dev/stdout`) the summary would join the exported rows.
    if std::fs::metadata(&args.output).is_ok_and(|m| m.is_file()) {
        out::line(&summary)
    } else {
        out::note(&summary);
        Ok(())
    }
}

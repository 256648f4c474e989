//! Exporting history or categories to a file the user picks in a save dialog.
//!
//! The dialog is opened from Rust, not from JavaScript: the UI can ask for an export but never name
//! a path, so it needs no file-system or dialog permission. The picker is managed state so that
//! command tests can stand in for the native dialog.

use std::path::PathBuf;

use serde::Serialize;
use sitetrail::export::{ExportFormat, ExportKind};
use tauri::State;
use tokio::sync::oneshot;

use super::lib;
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Asks the user where to save a file; the answer is `None` if they cancelled.
pub type PickSavePath = dyn Fn(SaveRequest) -> oneshot::Receiver<Option<PathBuf>> + Send + Sync;

/// What the save dialog proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveRequest {
    /// Proposed file name.
    pub file_name: String,
    /// Filter name (`CSV`, `JSON`).
    pub filter: &'static str,
    /// Extension, without the dot.
    pub extension: &'static str,
}

/// The save dialog (managed state).
pub struct SavePicker(pub Box<PickSavePath>);

/// A finished export.
#[derive(Clone, Debug, Serialize)]
pub struct ExportDone {
    /// Where it went.
    pub path: String,
    /// Rows written.
    pub rows: u64,
}

fn parse_kind(kind: &str) -> CmdResult<ExportKind> {
    match kind {
        "history" => Ok(ExportKind::History),
        "categories" => Ok(ExportKind::Categories),
        other => Err(CmdError::invalid(format!(
            "Export history or categories, not {:?}.",
            sitetrail::error::truncate_chars(other, 40)
        ))),
    }
}

fn parse_format(format: &str) -> CmdResult<(ExportFormat, &'static str, &'static str)> {
    match format {
        "csv" => Ok((ExportFormat::Csv, "CSV", "csv")),
        "json" => Ok((ExportFormat::Json, "JSON", "json")),
        other => Err(CmdError::invalid(format!(
            "Export as csv or json, not {:?}.",
            sitetrail::error::truncate_chars(other, 40)
        ))),
    }
}

/// Asks where to save, then exports; `None` if the user cancelled the dialog.
#[tauri::command]
pub async fn export_data(
    state: State<'_, AppState>,
    picker: State<'_, SavePicker>,
    kind: String,
    format: String,
) -> CmdResult<Option<ExportDone>> {
    let what = parse_kind(&kind)?;
    let (format, filter, extension) = parse_format(&format)?;
    let answer = (picker.0)(SaveRequest {
        file_name: format!("sitetrail-{kind}.{extension}"),
        filter,
        extension,
    });
    let Some(path) = answer.await.ok().flatten() else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    let rows = lib(state.store.run(move |s| s.export(what, format, &path)).await)?;
    Ok(Some(ExportDone { path: shown, rows }))
}

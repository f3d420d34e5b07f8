//! An export carried out for any interface, through the one writer: a bundle (copied to a
//! destination when named), a transcript written to a file, or a Provenance Run RO-Crate.
//! Each is recorded as an `export_recorded` event naming its form and destination.

use std::path::{Path, PathBuf};

use heartwood_audit::{BundleFiles, JournalEnd};
use heartwood_events::{Event, ExportFormat, ExportRequest};
use heartwood_project::ProjectContext;
use heartwood_project::config::ProjectConfig;
use serde_json::{Value, json};

use crate::GatewayError;
use crate::provenance::{CrateSource, write_crate};

/// Writes the export `request` asks for, of the journal up to `end`, and returns the event that
/// records it with the command's result. `transcript` is asked for only for a Markdown export.
/// Nothing here needs the session's writer or its lock: the journal's prefix up to `end` never
/// changes.
pub(crate) fn perform(
    end: &JournalEnd,
    project: &ProjectContext,
    request: &ExportRequest,
    transcript: impl FnOnce(u64) -> Result<String, GatewayError>,
) -> Result<(Event, Value), GatewayError> {
    let destination = request.destination.as_deref().map(|d| resolve(project, d));
    let shown = destination.as_ref().map(|d| d.display().to_string());
    match request.format {
        ExportFormat::Bundle => {
            let (bundle, mut event) = end.write_bundle()?;
            if let Some(to) = &destination {
                copy_dir(&bundle, to).map_err(|source| GatewayError::Io {
                    doing: format!("cannot copy the bundle to {}", to.display()),
                    source,
                })?;
            }
            set_destination(&mut event, None, shown.clone());
            let name = name_of(&bundle);
            Ok((event, json!({ "bundle": name, "destination": shown })))
        }
        ExportFormat::Markdown => {
            let Some(to) = destination else {
                return Err(missing_destination("a transcript"));
            };
            let text = transcript(end.count())?;
            write_new(&to, text.as_bytes()).map_err(|source| GatewayError::Io {
                doing: format!("cannot create {} (it must not exist yet)", to.display()),
                source,
            })?;
            let event = Event::ExportRecorded {
                bundle: String::new(),
                format: Some(ExportFormat::Markdown),
                destination: shown.clone(),
                count: end.count(),
                terminal_hash: end.terminal_hash().to_hex(),
            };
            Ok((event, json!({ "destination": shown })))
        }
        ExportFormat::RoCrate => {
            let Some(to) = destination else {
                return Err(missing_destination("an RO-Crate"));
            };
            if to.exists() {
                return Err(crate::provenance::CrateError::Exists(to).into());
            }
            let (bundle, mut event) = end.write_bundle()?;
            let files = BundleFiles::read(&bundle)?;
            let route = ProjectConfig::load(project)
                .ok()
                .and_then(|c| c.model)
                .map(|r| (r.category.as_str().to_owned(), r.model));
            let report = write_crate(&CrateSource {
                project_dir: project.root().as_std_path(),
                bundle: &files,
                route,
                private: &request.private,
                destination: to,
                zip: request.zip,
            })?;
            set_destination(&mut event, Some(ExportFormat::RoCrate), shown.clone());
            Ok((
                event,
                json!({
                    "bundle": name_of(&bundle), "destination": shown,
                    "files": report.files, "bytes": report.bytes,
                }),
            ))
        }
    }
}

fn missing_destination(what: &str) -> GatewayError {
    GatewayError::Io {
        doing: format!("{what} needs a destination; name a new path with --out"),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    }
}

fn set_destination(event: &mut Event, to_format: Option<ExportFormat>, to: Option<String>) {
    if let Event::ExportRecorded {
        format,
        destination,
        ..
    } = event
    {
        *format = to_format;
        *destination = to;
    }
}

fn name_of(bundle: &Path) -> String {
    bundle
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A destination relative to the project folder, unless absolute.
fn resolve(project: &ProjectContext, destination: &str) -> PathBuf {
    let path = Path::new(destination);
    if path.is_absolute() {
        path.to_owned()
    } else {
        project.root().as_std_path().join(path)
    }
}

/// Writes `bytes` to `path`, which must not exist yet (an export never overwrites).
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

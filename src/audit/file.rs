//! The audit file: appended to, rotated by size and age (the old file set aside under a time-stamped name and
//! compressed), old ones deleted by count and age, and reopened when an external logrotate moved it away.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::output::Output;

/// When to rotate and what to keep (`audit.rotate`, `audit.retain`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rotation {
    /// Rotate once the file holds this many bytes.
    pub(crate) size: Option<u64>,
    /// Rotate once the file has been written to for this long.
    pub(crate) every: Option<Duration>,
    /// Keep at most this many rotated files.
    pub(crate) keep_files: Option<usize>,
    /// Delete rotated files older than this.
    pub(crate) keep_for: Option<Duration>,
    /// Compress rotated files (gzip).
    pub(crate) compress: bool,
}

/// The audit file being written.
pub(crate) struct AuditFile {
    path: PathBuf,
    out: File,
    written: u64,
    opened: Instant,
    rotation: Rotation,
    /// Rotated files being compressed: waited for when cordon stops, so none is left half done.
    compressing: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for AuditFile {
    fn drop(&mut self) {
        for t in self.compressing.drain(..) {
            let _ = t.join();
        }
    }
}

/// Whether the audit file at `path` can be opened the way [`AuditFile::open`] will (appended to, created if it
/// is missing), found without creating anything: `cordon check` and `cordon run` refuse the same paths, with
/// the same words, before anything starts.
pub(crate) fn check_openable(path: &Path) -> Result<(), String> {
    use nix::unistd::{AccessFlags, access};
    let at = |what: String| format!("audit.path {}: {what}", path.display());
    let dir = folder(path).unwrap_or(Path::new("/"));
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(at(format!("{} is not a folder", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(at(format!(
                "its folder {} does not exist; create it (`mkdir -p {}`, owned by cordon's user)",
                dir.display(),
                dir.display()
            )));
        }
        Err(e) => return Err(at(format!("cannot inspect its folder {}: {e}", dir.display()))),
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(at("is not a regular file".into())),
        Ok(_) => access(path, AccessFlags::W_OK).map_err(|e| at(format!("cannot be appended to: {}", e.desc()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => access(dir, AccessFlags::W_OK | AccessFlags::X_OK)
            .map_err(|e| at(format!("cannot be created in {}: {}", dir.display(), e.desc()))),
        Err(e) => Err(at(format!("cannot inspect it: {e}"))),
    }
}

impl AuditFile {
    /// Open (append to) the file at `path`.
    pub(crate) fn open(path: &Path, rotation: Rotation) -> std::io::Result<AuditFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        Ok(AuditFile {
            path: path.to_path_buf(),
            // Unbuffered: the audit thread gathers each batch and writes it whole, and must know exactly what
            // a failing disk took.
            out: file,
            written,
            opened: Instant::now(),
            rotation,
            compressing: Vec::new(),
        })
    }

    /// The rotated files of `path` (`NAME.<time>` and `NAME.<time>.gz`), oldest first.
    pub(crate) fn rotated(path: &Path) -> Vec<PathBuf> {
        let (Some(dir), Some(name)) = (folder(path), path.file_name().and_then(|n| n.to_str())) else {
            return Vec::new();
        };
        let prefix = format!("{name}.");
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with(&prefix)
                        && n.as_bytes().get(prefix.len()).is_some_and(u8::is_ascii_digit)
                        && !n.ends_with(".partial")
                })
            })
            .collect();
        found.sort();
        found
    }
}

/// Delete the rotated files of `path` beyond `keep_files` (the oldest first) and older than `keep_for`.
fn retain(path: &Path, rotation: &Rotation) {
    // A file being compressed shows up twice (NAME.t and NAME.t.gz) for a moment: it counts once.
    let mut files: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for f in AuditFile::rotated(path) {
        let name = f.to_string_lossy().trim_end_matches(".gz").to_string();
        match files.last_mut() {
            Some((last, group)) if *last == name => group.push(f),
            _ => files.push((name, vec![f])),
        }
    }
    let now = SystemTime::now();
    let too_many = rotation.keep_files.map_or(0, |keep| files.len().saturating_sub(keep));
    for (i, (_, group)) in files.iter().enumerate() {
        for f in group {
            let old = rotation.keep_for.is_some_and(|age| {
                std::fs::metadata(f)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > age)
            });
            if i < too_many || old {
                match std::fs::remove_file(f) {
                    Ok(()) => tracing::info!(file = %f.display(), "audit file deleted (audit.retain)"),
                    Err(e) => tracing::warn!(file = %f.display(), "cannot delete an old audit file: {e}"),
                }
            }
        }
    }
}

impl Write for AuditFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Output for AuditFile {
    fn rotation_due(&self) -> bool {
        self.rotation.size.is_some_and(|s| self.written >= s)
            || self.rotation.every.is_some_and(|e| self.opened.elapsed() >= e)
    }

    fn rotate(&mut self) -> std::io::Result<Option<String>> {
        self.out.sync_all()?;
        let stamp = crate::rfc3339::now_millis().replace(':', "-");
        let name = format!(
            "{}.{stamp}",
            self.path.file_name().and_then(|n| n.to_str()).unwrap_or("audit")
        );
        let aside = self.path.with_file_name(&name);
        std::fs::rename(&self.path, &aside)?;
        let mut compressing = std::mem::take(&mut self.compressing);
        compressing.retain(|t| !t.is_finished());
        *self = AuditFile::open(&self.path, std::mem::take(&mut self.rotation))?;
        self.compressing = compressing;
        if self.rotation.compress {
            let keep = self.rotation.clone();
            let path = self.path.clone();
            // Off the writer's thread: compressing a large file must not hold up the records.
            let spawned = std::thread::Builder::new()
                .name("cordon-audit-gzip".into())
                .spawn(move || {
                    if let Err(e) = compress(&aside) {
                        tracing::warn!(file = %aside.display(), "cannot compress a rotated audit file: {e}");
                    }
                    retain(&path, &keep);
                });
            match spawned {
                Ok(t) => self.compressing.push(t),
                Err(e) => tracing::warn!("cannot start compressing a rotated audit file: {e}"),
            }
        } else {
            retain(&self.path, &self.rotation);
        }
        Ok(Some(name))
    }

    fn reopen(&mut self) -> std::io::Result<()> {
        let compressing = std::mem::take(&mut self.compressing);
        *self = AuditFile::open(&self.path, std::mem::take(&mut self.rotation))?;
        self.compressing = compressing;
        Ok(())
    }
}

/// Gzip `path` into `path.gz` (written aside, then renamed), then remove `path`.
fn compress(path: &Path) -> std::io::Result<()> {
    let gz = PathBuf::from(format!("{}.gz", path.display()));
    let partial = PathBuf::from(format!("{}.gz.partial", path.display()));
    {
        let mut input = File::open(path)?;
        let out = File::create(&partial)?;
        let mut enc = flate2::write::GzEncoder::new(BufWriter::new(out), flate2::Compression::default());
        std::io::copy(&mut input, &mut enc)?;
        enc.finish()?.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    std::fs::rename(&partial, &gz)?;
    std::fs::remove_file(path)
}

fn folder(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

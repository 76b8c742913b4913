//! The export spool: every audit line, in order, in segment files on disk, until the exporter has handed it to
//! the collector. The audit thread appends each batch ([`SpoolWriter`]); the exporter reads from its cursor
//! ([`SpoolReader`]), moves the cursor (a small file, replaced whole) once the collector has the lines, and deletes
//! the segments it is done with. A collector that is down only makes the spool longer, up to its bound; past it,
//! the oldest segments are deleted and the exporter says which lines it skipped. Lines survive a restart: the
//! cursor says where to go on, so a line may be sent twice (at-least-once; `seq` tells a receiver it has it).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A segment is closed and the next one begun once it holds this much.
const SEGMENT: u64 = 1 << 20;
/// The most the writer holds in memory while the spool's disk fails.
const HOLD_AT_MOST: usize = 16 << 20;
/// The most the reader takes from a segment at once.
const READ_AT_MOST: u64 = 4 << 20;

/// What the writer and the reader share.
#[derive(Debug)]
pub(crate) struct Spool {
    dir: PathBuf,
    /// At most this many bytes in segments.
    max: u64,
    /// Bytes in segments now.
    bytes: AtomicU64,
    /// Lines the bound or a failing disk made the spool drop.
    dropped_bytes: AtomicU64,
    /// Rung by the writer after each batch.
    pub(crate) wake: tokio::sync::Notify,
}

impl Spool {
    /// The spool in `dir` (made, 0700, if missing), holding at most `max` bytes.
    pub(crate) fn open(dir: &Path, max: u64) -> std::io::Result<Arc<Spool>> {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let spool = Spool {
            dir: dir.to_path_buf(),
            max,
            bytes: AtomicU64::new(0),
            dropped_bytes: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
        };
        let total = spool
            .segments()?
            .iter()
            .filter_map(|(_, p)| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        spool.bytes.store(total, Ordering::Relaxed);
        Ok(Arc::new(spool))
    }

    /// Bytes waiting to be exported.
    pub(crate) fn backlog(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Bytes dropped (the bound, or a disk that failed) since cordon started.
    pub(crate) fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes.load(Ordering::Relaxed)
    }

    /// The segments, oldest first.
    fn segments(&self) -> std::io::Result<Vec<(u64, PathBuf)>> {
        let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(&self.dir)?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let n = name.to_str()?.strip_suffix(".jsonl")?.parse().ok()?;
                Some((n, e.path()))
            })
            .collect();
        found.sort();
        Ok(found)
    }

    fn segment(&self, n: u64) -> PathBuf {
        self.dir.join(format!("{n:020}.jsonl"))
    }

    /// Delete segment `n` (whoever deletes it first counts its bytes out); whether this call deleted it.
    fn delete(&self, n: u64) -> bool {
        let path = self.segment(n);
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let _ = self
                    .bytes
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some(b.saturating_sub(len)));
                true
            }
            Err(_) => false,
        }
    }
}

/// The audit thread's end: lines gathered per batch, appended to the newest segment.
pub(crate) struct SpoolWriter {
    spool: Arc<Spool>,
    segment: u64,
    file: Option<File>,
    len: u64,
    buf: Vec<u8>,
}

impl SpoolWriter {
    /// Append from now on to a new segment after every one there (a segment a killed run left is never
    /// appended to: its last line may be cut).
    pub(crate) fn new(spool: Arc<Spool>) -> std::io::Result<SpoolWriter> {
        let segment = spool.segments()?.last().map_or(0, |(n, _)| n + 1);
        Ok(SpoolWriter {
            spool,
            segment,
            file: None,
            len: 0,
            buf: Vec::new(),
        })
    }

    /// Take one whole line.
    pub(crate) fn push(&mut self, line: &[u8]) {
        if self.buf.len() < HOLD_AT_MOST {
            self.buf.extend_from_slice(line);
        } else {
            self.spool.dropped_bytes.fetch_add(line.len() as u64, Ordering::Relaxed);
        }
    }

    /// Append what was taken, keep what the disk did not take, keep within the bound, and wake the exporter.
    pub(crate) fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if let Err(e) = self.append() {
            tracing::warn!(
                "cannot append to the audit export spool {}: {e}; trying again with the next batch",
                self.spool.dir.display()
            );
        }
        self.keep_within_bound();
        self.spool.wake.notify_one();
    }

    fn append(&mut self) -> std::io::Result<()> {
        // A new segment begins only at a batch's start, never after a partial write.
        if self.len >= SEGMENT {
            self.file = None;
            self.segment += 1;
            self.len = 0;
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.spool.segment(self.segment))?,
            ),
        };
        let (done, result) = super::output::write_taken(file, &self.buf);
        self.buf.drain(..done);
        self.len += done as u64;
        self.spool.bytes.fetch_add(done as u64, Ordering::Relaxed);
        result
    }

    /// Delete the oldest closed segments while the spool holds more than its bound.
    fn keep_within_bound(&self) {
        if self.spool.backlog() <= self.spool.max {
            return;
        }
        let Ok(segments) = self.spool.segments() else { return };
        for (n, _) in segments.into_iter().filter(|(n, _)| *n < self.segment) {
            if self.spool.backlog() <= self.spool.max {
                break;
            }
            let len = std::fs::metadata(self.spool.segment(n)).map_or(0, |m| m.len());
            if self.spool.delete(n) {
                self.spool.dropped_bytes.fetch_add(len, Ordering::Relaxed);
                tracing::error!(
                    segment = n,
                    "the audit export spool is over its bound (the collector has been unreachable too long): its \
                     oldest {len} bytes of records were deleted unsent"
                );
            }
        }
    }
}

/// Where the reader is: a segment and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    segment: u64,
    offset: u64,
}

/// Lines read and not yet acknowledged.
#[derive(Debug)]
pub(crate) struct Batch {
    /// Whole lines, each without its newline.
    pub(crate) lines: Vec<Vec<u8>>,
    /// Where the cursor goes once they are sent.
    pub(crate) end: Position,
}

/// The exporter's end: reads from the cursor, and moves it once lines are sent.
pub(crate) struct SpoolReader {
    spool: Arc<Spool>,
    at: Position,
}

impl SpoolReader {
    /// Go on from the saved cursor (from the oldest segment if there is none).
    pub(crate) fn new(spool: Arc<Spool>) -> SpoolReader {
        let saved = std::fs::read_to_string(spool.dir.join("cursor")).ok().and_then(|t| {
            let (s, o) = t.trim().split_once(' ')?;
            Some(Position {
                segment: s.parse().ok()?,
                offset: o.parse().ok()?,
            })
        });
        let at = saved.unwrap_or(Position { segment: 0, offset: 0 });
        SpoolReader { spool, at }
    }

    /// Up to `most` whole lines after the cursor (none: nothing waits). Segments read to their end and
    /// followed by a newer one are deleted on the way.
    pub(crate) fn read(&mut self, most: usize) -> std::io::Result<Batch> {
        loop {
            let segments = self.spool.segments()?;
            let Some(&(first, _)) = segments.iter().find(|(n, _)| *n >= self.at.segment) else {
                return Ok(self.empty());
            };
            if first != self.at.segment {
                if self.at.offset > 0 || segments.iter().any(|(n, _)| *n < first) {
                    tracing::error!(
                        from = self.at.segment,
                        to = first,
                        "audit export: spool segments were deleted unsent (over the spool's bound); going on"
                    );
                }
                self.at = Position {
                    segment: first,
                    offset: 0,
                };
            }
            let newer = segments.iter().any(|(n, _)| *n > first);
            let batch = self.read_segment(most)?;
            if !batch.lines.is_empty() || !newer {
                return Ok(batch);
            }
            // Read to its end and closed: done with it (a line a kill cut short at its end is skipped).
            self.spool.delete(first);
            self.at = Position {
                segment: first + 1,
                offset: 0,
            };
            self.save()?;
        }
    }

    fn empty(&self) -> Batch {
        Batch {
            lines: Vec::new(),
            end: self.at,
        }
    }

    fn read_segment(&self, most: usize) -> std::io::Result<Batch> {
        let mut file = match File::open(self.spool.segment(self.at.segment)) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(self.empty()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.at.offset))?;
        let mut bytes = Vec::new();
        file.take(READ_AT_MOST).read_to_end(&mut bytes)?;
        let mut lines = Vec::new();
        let mut used = 0;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if lines.len() == most || line.last() != Some(&b'\n') {
                break;
            }
            used += line.len();
            lines.push(line[..line.len() - 1].to_vec());
        }
        Ok(Batch {
            lines,
            end: Position {
                segment: self.at.segment,
                offset: self.at.offset + used as u64,
            },
        })
    }

    /// The lines up to `to` are with the collector: move the cursor there.
    pub(crate) fn commit(&mut self, to: Position) -> std::io::Result<()> {
        self.at = to;
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        let tmp = self.spool.dir.join("cursor.tmp");
        std::fs::write(&tmp, format!("{} {}\n", self.at.segment, self.at.offset))?;
        std::fs::rename(&tmp, self.spool.dir.join("cursor"))
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;

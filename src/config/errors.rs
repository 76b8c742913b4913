//! Errors with the path of the offending value: the list one validation gathers (with its warnings), and
//! what a configuration that fails to load reports (`FILE:LINE:COLUMN: PATH: message`).

/// Errors gathered while validating one file.
pub(super) struct Errors {
    pub(super) file: String,
    pub(super) list: Vec<ConfigError>,
    /// What is accepted but probably not meant, with where.
    pub(super) warnings: Vec<String>,
    /// What the file's relative paths are read against.
    pub(super) base: crate::config::paths::Base,
}

impl Errors {
    /// Note something accepted but probably not meant: `FILE: PATH: message`.
    pub(super) fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.warnings
            .push(format!("{}: {}: {}", self.file, path.into(), message.into()));
    }

    /// A path the file wrote, read against the file's base (see [`crate::config::paths`]).
    pub(super) fn path(&self, written: &str) -> std::path::PathBuf {
        self.base.resolve(written)
    }

    /// Note an error: `path` holds a value that is wrong, as `message` says.
    pub(super) fn at(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.list.push(ConfigError {
            file: self.file.clone(),
            location: None,
            path: path.into(),
            message: message.into(),
        });
    }
}

/// One problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File name.
    pub(crate) file: String,
    /// Line and column, where the parser knows them.
    pub(crate) location: Option<(usize, usize)>,
    /// Path of the offending value, e.g. `policies.web.allow[2].host`.
    pub(crate) path: String,
    /// What is wrong and what would be right.
    pub(crate) message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        if self.path.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.path, self.message)
        }
    }
}

/// Every problem found; a configuration with any is never used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

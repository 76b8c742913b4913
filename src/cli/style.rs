//! Colour in what the commands print for people, by the rule clap's help follows (anstream's): only on a
//! terminal (`TERM` not `dumb`, or `CI` set: a CI runner's log shows colour), never when `NO_COLOR` is set to
//! anything but the empty string (<https://no-color.org>) or `CLICOLOR=0`; `CLICOLOR_FORCE` (non-empty) forces
//! it, piped too. JSON output is never painted.

use anstream::ColorChoice;
use anstream::stream::RawStream;
use clap::builder::styling::{AnsiColor, Style};

/// Whether colour may be written to `stream` (standard output or standard error).
pub(crate) fn colour_on(stream: &impl RawStream) -> bool {
    anstream::AutoStream::choice(stream) != ColorChoice::Never
}

/// Paints text for one stream: plainly when it takes no colour.
#[derive(Clone, Copy)]
pub(crate) struct Paint {
    on: bool,
}

impl Paint {
    /// For standard output.
    pub(crate) fn stdout() -> Paint {
        Paint {
            on: colour_on(&std::io::stdout()),
        }
    }

    /// `text` in `style`, or as it is.
    fn styled(self, style: Style, text: &str) -> String {
        if self.on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    /// What went well: an allowed request, an intact log.
    pub(crate) fn good(self, text: &str) -> String {
        self.styled(AnsiColor::Green.on_default().bold(), text)
    }

    /// What went wrong: a refused request, a tampered log.
    pub(crate) fn bad(self, text: &str) -> String {
        self.styled(AnsiColor::Red.on_default().bold(), text)
    }

    /// What needs a look: nothing changed, but nothing proves it either.
    pub(crate) fn doubt(self, text: &str) -> String {
        self.styled(AnsiColor::Yellow.on_default().bold(), text)
    }

    /// A table (aligned lines) with its first line, the heading, in bold.
    pub(crate) fn table(self, table: &str) -> String {
        match table.split_once('\n') {
            Some((heading, rest)) if self.on => format!("{}\n{rest}", self.styled(Style::new().bold(), heading)),
            _ => table.to_owned(),
        }
    }
}

#[cfg(test)]
#[path = "style_tests.rs"]
mod tests;

//! Standard output that a closed pipe cannot turn into a panic: `cordon check | head` ends quietly, with
//! the status a process killed by SIGPIPE has (141), as the shell would report for any other program.

use std::fmt;
use std::io::{ErrorKind, Write};

/// Write `args` (and a line break when `line`) to standard output; exit quietly when the reader is gone.
pub(crate) fn write(args: fmt::Arguments<'_>, line: bool) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| if line { out.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => {
            eprintln!("cordon: cannot write to standard output: {e}");
            std::process::exit(1);
        }
    }
}

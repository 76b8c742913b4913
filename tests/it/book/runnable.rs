//! The docs' runnable shell blocks: a fenced block whose info string is `sh,tested` (mdBook still highlights it
//! as `sh`) is run, every such block of a page in order, in one bash session, so `cd`, variables and background
//! jobs carry from block to block as they do for a reader pasting them into one terminal.
//!
//! Each command (a line, with its `\` continuations) must exit 0, unless its line ends in `# -> exit N ...`;
//! a line ending in `# -> TEXT` (after the exit status, if any) must print TEXT on standard output or error.
//! The session runs with this tree's `cordon` first on `PATH`, `CORDON_REPO` set to the repository, in an empty
//! folder, inside a network and PID namespace of its own (root only): the documented fixed ports (3128, 8443)
//! cannot meet another test's, and nothing started by a page outlives it. `CORDON_STATE_DIR` is a folder of the
//! page's own, so the embedded configuration keeps its state there rather than in root's `/var/lib/cordon`.
//!
//! The pages run beside a CPU hog (a busy loop per core), as a reader's machine may be busy: a block that races
//! its own server (starts it in the background and uses it at once) fails here rather than on some reader's
//! slower machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::rigs::wait::{TimedChild, Within};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// One command of a tested block: where it is, what it runs and what it must give.
#[derive(Debug)]
struct Step {
    /// `file:line` of the command's first line.
    at: String,
    /// The command, continuations joined.
    command: String,
    /// The exit status it must give.
    exit: i32,
    /// What its output must contain.
    shows: Option<String>,
}

/// The tested blocks of a Markdown file: (line of the block's first command, the block's text).
fn tested_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let mut words = info.split([',', ' ']).filter(|w| !w.is_empty());
                let shell = words.next().is_some_and(|w| matches!(w, "sh" | "bash" | "shell"));
                if shell && words.any(|w| w == "tested") {
                    let line = text[..range.start].lines().count() + 2;
                    open = Some((line, String::new()));
                }
            }
            Event::Text(t) => {
                if let Some((_, body)) = open.as_mut() {
                    body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

/// The commands of a block, with what each must give (see the module documentation).
fn steps(file: &str, first_line: usize, block: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in block.lines().enumerate() {
        let (start, mut command) = pending.take().unwrap_or((first_line + i, String::new()));
        command.push_str(line);
        if let Some(head) = line.strip_suffix('\\') {
            command.truncate(command.len() - line.len());
            command.push_str(head);
            command.push_str("\\\n");
            pending = Some((start, command));
            continue;
        }
        let trimmed = command.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (mut exit, mut shows) = (0, None);
        if let Some(at) = command.rfind("# -> ") {
            let mut said = command[at + 5..].trim();
            if let Some(rest) = said.strip_prefix("exit ") {
                let (code, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                exit = code
                    .parse()
                    .unwrap_or_else(|_| panic!("{file}:{start}: `# -> exit {code}`: not a number"));
                said = rest.trim();
            }
            shows = (!said.is_empty()).then(|| said.to_string());
        }
        steps.push(Step {
            at: format!("{file}:{start}"),
            command,
            exit,
            shows,
        });
    }
    steps
}

/// The bash script of a page's steps: each writes its output and exit status to `out/N.*`, and the first that
/// does not exit as the page says ends the session (what comes after it would wait on it).
fn script(steps: &[Step]) -> String {
    let mut s = String::from("cd \"$CORDON_WORK\"\n");
    for (n, step) in steps.iter().enumerate() {
        s.push_str(&format!(
            "{{ {}\n}} > \"$CORDON_OUT/{n}.out\" 2> \"$CORDON_OUT/{n}.err\"\nrc=$?; echo $rc > \"$CORDON_OUT/{n}.rc\"; [ $rc = {} ] || exit 1\n",
            step.command, step.exit
        ));
    }
    s
}

/// The Markdown files that may hold tested blocks: the README and every page of the book.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// Run one page's steps in a namespace of their own and say what went wrong, if anything.
fn run_page(root: &Path, page: &str, steps: &[Step]) -> Option<String> {
    let work = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // cordon's state folder for the embedded configuration: the page's own, not root's /var/lib/cordon.
    let state = tempfile::tempdir().unwrap();
    let file = out.path().join("page.sh");
    std::fs::write(&file, script(steps)).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_cordon")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let ran = Command::new("timeout")
        .args([
            "300",
            "unshare",
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "bash",
            "-c",
        ])
        .arg("ip link set lo up && exec bash \"$0\"")
        .arg(&file)
        .env("PATH", path)
        .env("CORDON_REPO", root)
        .env("CORDON_WORK", work.path())
        .env("CORDON_OUT", out.path())
        .env("CORDON_STATE_DIR", state.path())
        .env_remove("CORDON_CONFIG")
        .timed_output()
        .unwrap();
    let read = |n: usize, what: &str| std::fs::read_to_string(out.path().join(format!("{n}.{what}")));
    for (n, step) in steps.iter().enumerate() {
        let Ok(rc) = read(n, "rc") else {
            return Some(format!(
                "{page}: the session ended before {} ran ({}; bash said: {})\n{}",
                step.at,
                ran.status,
                String::from_utf8_lossy(&ran.stderr),
                step.command
            ));
        };
        let (stdout, stderr) = (read(n, "out").unwrap_or_default(), read(n, "err").unwrap_or_default());
        let rc: i32 = rc.trim().parse().unwrap();
        let shown = step
            .shows
            .as_ref()
            .is_none_or(|want| stdout.contains(want.as_str()) || stderr.contains(want.as_str()));
        if rc != step.exit || !shown {
            return Some(format!(
                "{}: `{}` exited {rc} (the page says {}){}\n--- stdout\n{stdout}--- stderr\n{stderr}",
                step.at,
                step.command,
                step.exit,
                step.shows
                    .as_ref()
                    .map(|w| format!(" and must show {w:?}"))
                    .unwrap_or_default()
            ));
        }
    }
    None
}

/// Every tested block of the README and the book runs as written (see the module documentation).
#[test]
fn the_docs_tested_shell_blocks_run_as_written() {
    if !crate::rigs::netns::available("book::runnable") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let _hog = Hog::start();
    let mut ran = Vec::new();
    let mut failures = Vec::new();
    for path in pages(root) {
        let page = path.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let steps: Vec<Step> = tested_blocks(&text)
            .iter()
            .flat_map(|(line, block)| steps(&page, *line, block))
            .collect();
        if steps.is_empty() {
            continue;
        }
        ran.push(format!("{page} ({} commands)", steps.len()));
        failures.extend(run_page(root, &page, &steps));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The walkthroughs are here: a marker dropped by accident would otherwise pass by testing nothing.
    for page in ["README.md", "docs/src/getting-started.md"] {
        assert!(
            ran.iter().any(|r| r.starts_with(page)),
            "{page} has no tested block: {ran:?}"
        );
    }
}

/// The reading of a page: blocks, continuations, comments and expectations.
#[test]
fn a_pages_steps_are_read_as_a_reader_runs_them() {
    let text = "# T\n\n```sh\nnot run\n```\n\n```sh,tested\n# a comment\ncurl a \\\n  b   # -> 403 no_rule\n\ncordon explain x  # -> exit 1 deny\ncordon run &\n```\n";
    let blocks = tested_blocks(text);
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let steps = steps("p.md", blocks[0].0, &blocks[0].1);
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(steps[0].at, "p.md:9");
    assert_eq!(steps[0].command, "curl a \\\n  b   # -> 403 no_rule");
    assert_eq!((steps[0].exit, steps[0].shows.as_deref()), (0, Some("403 no_rule")));
    assert_eq!((steps[1].exit, steps[1].shows.as_deref()), (1, Some("deny")));
    assert_eq!(steps[1].at, "p.md:12");
    assert_eq!((steps[2].exit, steps[2].shows.as_deref()), (0, None));
    assert_eq!(steps[2].at, "p.md:13");
}

/// A busy loop on every core for as long as it lives (killed when dropped).
struct Hog(Vec<std::process::Child>);

impl Hog {
    fn start() -> Hog {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Hog((0..cores)
            .map(|_| Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap())
            .collect())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.timed_wait();
        }
    }
}

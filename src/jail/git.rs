//! What git on the host reads from the writable folder and then runs or obeys, kept read-only in the jail: a
//! developer's `git status` after the jail (or while it runs: a shell prompt or an editor runs git all the time)
//! must not run what the command planted.
//!
//! Each repository of the folder (its `.git`, and every `.git` below it: nested repositories and submodule
//! checkouts) is found at start. For each git directory (also each submodule's under `.git/modules/`, and each
//! linked worktree's under `.git/worktrees/`) these are bound read-only ([`SURFACES`]): `config` (`core.fsmonitor`,
//! `core.hooksPath`, `core.pager`, aliases, filters, diff drivers, `core.sshCommand`, credential helpers, includes),
//! `config.worktree` (read when `extensions.worktreeConfig` is on), `commondir` (makes git take its config and
//! hooks from another directory), `hooks/`, `info/` (attributes, exclude, sparse-checkout) and
//! `objects/info/alternates`; a linked worktree's `commondir`, `gitdir` and `config.worktree`; a `.git` file
//! (`gitdir:`) itself; the folder `core.hooksPath` and the files `include.path` name, when they lie in the
//! folder. What does not exist is made first, as its owner, harmless to git (an empty file or folder; `commondir`
//! as `.`, the git directory itself), so that the command cannot create it; cordon removes what it made, if still
//! as made, when the jail ends. Every directory between the folder and a protected path is bound onto itself, so
//! that it cannot be renamed away and replaced. A folder without `.git` gets an empty, read-only one: `git init`
//! inside cannot make a repository whose config git on the host would obey.
//!
//! What is left: a repository the command makes in a new subfolder (`git init sub`, or a `.git` file naming a
//! directory it wrote) is its own, like any file it writes; git on the host obeys it only when run in that
//! subfolder, or from the top when the command also registered it as a submodule. Those are listed in the
//! end-of-jail report ([`super::planted`]), with everything else git reads there.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What git reads in each git directory for configuration and hooks, or to look elsewhere, and what cordon makes
/// there when it is missing.
const SURFACES: [(&str, GuardMade); 6] = [
    ("config", GuardMade::File("")),
    ("config.worktree", GuardMade::File("")),
    ("commondir", GuardMade::File(".\n")),
    ("hooks", GuardMade::Dir),
    ("info", GuardMade::Dir),
    ("objects/info/alternates", GuardMade::File("")),
];

/// What a linked worktree's own git directory (`.git/worktrees/NAME/`) holds that says where git looks: protected
/// where it exists (`commondir` and `gitdir` are git's own), `config.worktree` made when missing.
const WORKTREE_SURFACES: [(&str, Option<GuardMade>); 3] = [
    ("commondir", None),
    ("gitdir", None),
    ("config.worktree", Some(GuardMade::File(""))),
];

/// How many entries of the folder are looked at, at most, to find its repositories.
const MOST: usize = 200_000;

/// How deep submodules' git directories are looked for under `.git/modules/` (a name may hold slashes).
const MODULE_DEPTH: usize = 6;

/// What cordon makes where a protected path does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GuardMade {
    /// A file with this text.
    File(&'static str),
    /// An empty folder.
    Dir,
}

/// The read-only view of git's files in the writable folder: what is bound, and what cordon made for it (removed
/// when the guard is dropped, after the jail).
#[derive(Debug, Default)]
pub(crate) struct GitGuard {
    /// Folders bound onto themselves (so that they cannot be renamed away).
    kept: Vec<PathBuf>,
    /// Paths bound read-only onto themselves.
    read_only: Vec<PathBuf>,
    /// What cordon made, to remove when the jail ends if it is still as made.
    made: Vec<(PathBuf, GuardMade)>,
}

impl GitGuard {
    /// Find the repositories of `folder` and make what is missing; refused when a path git reads is a symbolic
    /// link (a mount cannot hold one in place: the command could replace it).
    pub(crate) fn set_up(folder: &Path) -> Result<GitGuard, String> {
        let mut g = GitGuard::default();
        let root = folder.join(".git");
        let mut made_root = false;
        if std::fs::symlink_metadata(&root).is_err() {
            // SECURITY: a folder without a repository gets an empty, read-only `.git`: none can be made inside.
            made_root = g.make(folder, &root, GuardMade::Dir, folder);
            if made_root {
                g.read_only.push(root.clone());
            }
        }
        for dot_git in repositories(folder) {
            if !(made_root && dot_git == root) {
                g.repository(folder, &dot_git)?;
            }
        }
        g.kept.sort();
        g.kept.dedup();
        g.read_only.sort();
        g.read_only.dedup();
        Ok(g)
    }

    /// A `.git` of `folder` (a folder or a `gitdir:` file).
    fn repository(&mut self, folder: &Path, dot_git: &Path) -> Result<(), String> {
        let meta = std::fs::symlink_metadata(dot_git).map_err(|e| format!("{}: {e}", dot_git.display()))?;
        if meta.is_symlink() {
            return Err(linked(dot_git));
        }
        self.keep_ancestors(folder, dot_git);
        let work_tree = dot_git.parent().unwrap_or(folder);
        if meta.is_dir() {
            self.kept.push(dot_git.to_path_buf());
            return self.git_dir(folder, dot_git, work_tree, 0);
        }
        // SECURITY: a `.git` file (a submodule's or a linked worktree's checkout) keeps naming its git directory.
        self.read_only.push(dot_git.to_path_buf());
        let named = std::fs::read_to_string(dot_git)
            .ok()
            .and_then(|t| t.trim().strip_prefix("gitdir:").map(|p| work_tree.join(p.trim())));
        if let Some(dir) = named.map(|d| super::view::resolve(&d))
            && dir.starts_with(folder)
            && dir.is_dir()
            && !self.kept.contains(&dir)
        {
            self.keep_ancestors(folder, &dir);
            self.kept.push(dir.clone());
            self.git_dir(folder, &dir, work_tree, 0)?;
        }
        Ok(())
    }

    /// Protect what git reads in the git directory `dir` (of the checkout `work_tree`), its submodules' and its
    /// linked worktrees'.
    fn git_dir(&mut self, folder: &Path, dir: &Path, work_tree: &Path, depth: usize) -> Result<(), String> {
        // SECURITY: git's configuration, hooks and what redirects it (config, config.worktree, commondir, hooks,
        // info, objects/info/alternates) are read-only in the jail, made first when missing.
        for (name, made) in SURFACES {
            let path = dir.join(name);
            if name == "objects/info/alternates" && !dir.join("objects/info").is_dir() {
                continue;
            }
            self.protect(folder, &path, made, dir)?;
        }
        for (path, made) in configured(dir, work_tree) {
            if path.starts_with(folder) && path != folder {
                self.protect(folder, &path, made, dir)?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
            for entry in entries.flatten() {
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let own = entry.path();
                self.keep_ancestors(folder, &own);
                self.kept.push(own.clone());
                for (name, made) in WORKTREE_SURFACES {
                    let path = own.join(name);
                    match made {
                        Some(made) => self.protect(folder, &path, made, dir)?,
                        None if std::fs::symlink_metadata(&path).is_ok() => {
                            self.protect(folder, &path, GuardMade::Dir, dir)?;
                        }
                        None => {}
                    }
                }
            }
        }
        if depth < MODULE_DEPTH {
            for module in modules(&dir.join("modules")) {
                self.keep_ancestors(folder, &module);
                self.kept.push(module.clone());
                self.git_dir(folder, &module, &module, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Bind `path` read-only, made as `made` first if missing (as the owner of `owner`), its folders kept.
    fn protect(&mut self, folder: &Path, path: &Path, made: GuardMade, owner: &Path) -> Result<(), String> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_symlink() => return Err(linked(path)),
            Ok(_) => {}
            Err(_) => {
                if !self.make(folder, path, made, owner) {
                    return Ok(());
                }
            }
        }
        self.keep_ancestors(folder, path);
        self.read_only.push(path.to_path_buf());
        Ok(())
    }

    /// Every folder between `folder` and `path` (both excluded) bound onto itself.
    fn keep_ancestors(&mut self, folder: &Path, path: &Path) {
        let mut at = path.parent();
        while let Some(dir) = at {
            if dir == folder || !dir.starts_with(folder) {
                break;
            }
            self.kept.push(dir.to_path_buf());
            at = dir.parent();
        }
    }

    /// Make `path` as `made` (and the folders that lead to it from `folder`), owned as `owner` is; whether it was
    /// made.
    fn make(&mut self, folder: &Path, path: &Path, made: GuardMade, owner: &Path) -> bool {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let mut missing: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(folder) && *a != folder && std::fs::symlink_metadata(a).is_err())
            .collect();
        missing.reverse();
        for dir in missing {
            if !self.made_as(
                dir,
                GuardMade::Dir,
                owner,
                std::fs::DirBuilder::new().mode(0o755).create(dir),
            ) {
                return false;
            }
        }
        let done = match made {
            GuardMade::Dir => std::fs::DirBuilder::new().mode(0o755).create(path),
            GuardMade::File(text) => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes())),
        };
        self.made_as(path, made, owner, done)
    }

    /// Record `path`, made as `made` if `done`, and give it to the owner of `owner`; whether it was made.
    fn made_as(&mut self, path: &Path, made: GuardMade, owner: &Path, done: std::io::Result<()>) -> bool {
        if done.is_err() {
            return false;
        }
        if let Ok(meta) = std::fs::metadata(owner) {
            // Root makes it for the folder's owner; a user makes it as themselves (then this changes nothing).
            let _ = std::os::unix::fs::lchown(path, Some(meta.uid()), Some(meta.gid()));
        }
        self.made.push((path.to_path_buf(), made));
        true
    }

    /// bubblewrap's arguments: the kept folders bound onto themselves, then the read-only paths, the shallower
    /// first (each is bound in place after the folder that holds it).
    pub(crate) fn args(&self) -> Vec<String> {
        let mut all: Vec<(&Path, &str)> = self.kept.iter().map(|p| (p.as_path(), "--bind")).collect();
        all.extend(self.read_only.iter().map(|p| (p.as_path(), "--ro-bind")));
        all.sort_by_key(|(p, how)| (p.components().count(), *how == "--ro-bind"));
        all.into_iter()
            .flat_map(|(p, how)| {
                let p = p.to_string_lossy().into_owned();
                [how.to_owned(), p.clone(), p]
            })
            .collect()
    }

    /// The paths kept read-only in the jail, for the report.
    pub(crate) fn protected(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// Remove what cordon made, where it is still as made (an empty folder, a file with the text it was made with).
    fn restore(&self) {
        for (path, made) in self.made.iter().rev() {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            match made {
                GuardMade::Dir if meta.is_dir() => {
                    let _ = std::fs::remove_dir(path);
                }
                GuardMade::File(text) if meta.is_file() && std::fs::read(path).is_ok_and(|b| b == text.as_bytes()) => {
                    let _ = std::fs::remove_file(path);
                }
                _ => {}
            }
        }
    }
}

/// Keep git's files in `view`'s writable folder read-only (unless `writable`): the guard, which removes what it
/// made when dropped.
pub(crate) fn guard(view: &mut super::view::View, writable: bool) -> Result<Option<GitGuard>, String> {
    let Some(folder) = view.writable.as_deref().filter(|_| !writable) else {
        return Ok(None);
    };
    let guard = GitGuard::set_up(folder)?;
    view.git = guard.args();
    Ok(Some(guard))
}

impl Drop for GitGuard {
    fn drop(&mut self) {
        self.restore();
    }
}

/// What of git's the end-of-jail report compares in `folder`: for each repository found now, what git reads
/// there for configuration and hooks or to look elsewhere (its `.git` file; in each git directory, its
/// submodules' and its linked worktrees': [`SURFACES`], [`WORKTREE_SURFACES`], and what `core.hooksPath` and
/// `include.path` name).
pub(crate) fn watched(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dot_git in repositories(folder) {
        if !dot_git.is_dir() || dot_git.is_symlink() {
            found.push(dot_git);
            continue;
        }
        let work_tree = dot_git.parent().unwrap_or(folder).to_path_buf();
        let mut dirs = vec![dot_git];
        while let Some(dir) = dirs.pop() {
            found.extend(SURFACES.iter().map(|(name, _)| dir.join(name)));
            found.extend(configured(&dir, &work_tree).into_iter().map(|(p, _)| p));
            if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
                for entry in entries.flatten() {
                    found.extend(WORKTREE_SURFACES.iter().map(|(name, _)| entry.path().join(name)));
                }
            }
            dirs.extend(modules(&dir.join("modules")));
        }
    }
    found.retain(|p| p.starts_with(folder));
    found
}

fn linked(path: &Path) -> String {
    format!(
        "{} is a symbolic link: git on this host reads it, and the command could replace a link (a mount cannot hold \
         one in place); make it a real file or folder, or give --writable-git to leave git's files writable",
        path.display()
    )
}

/// Every `.git` in `folder` (the folder's own first), not looking inside them; at most [`MOST`] entries looked at.
pub(crate) fn repositories(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut walk = walkdir::WalkDir::new(folder).follow_links(false).into_iter();
    let mut seen = 0;
    while let Some(entry) = walk.next() {
        seen += 1;
        if seen > MOST {
            break;
        }
        let Ok(entry) = entry else { continue };
        if entry.file_name() == ".git" {
            found.push(entry.path().to_path_buf());
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
        }
    }
    found
}

/// The submodules' git directories under `modules` (each a folder with a `HEAD`; names may hold slashes).
fn modules(modules: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut walk = walkdir::WalkDir::new(modules)
        .min_depth(1)
        .max_depth(MODULE_DEPTH)
        .follow_links(false)
        .into_iter();
    while let Some(entry) = walk.next() {
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_dir() && entry.path().join("HEAD").is_file() {
            found.push(entry.path().to_path_buf());
            walk.skip_current_dir();
        }
    }
    found
}

/// The folder `core.hooksPath` and the files `include.path` and `includeIf.*.path` name in `dir`'s config, as git
/// resolves them (relative hooks path: against the checkout `work_tree`; relative include: against the config's
/// folder), each with what to make where it is missing; read by git itself when it is installed (when it is not,
/// nothing on this host reads them).
fn configured(dir: &Path, work_tree: &Path) -> Vec<(PathBuf, GuardMade)> {
    let get = |args: &[&str]| -> Vec<String> {
        std::process::Command::new("git")
            .arg("config")
            .arg("--file")
            .arg(dir.join("config"))
            .args(args)
            // Not in the folder: no repository is looked for, only the file is read.
            .current_dir("/")
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let mut found: Vec<(PathBuf, GuardMade)> = get(&["--get", "core.hooksPath"])
        .into_iter()
        .map(|p| (super::view::resolve(&work_tree.join(p)), GuardMade::Dir))
        .collect();
    for line in get(&["--get-regexp", r"^include(if\..*)?\.path$"]) {
        if let Some((_, p)) = line.split_once(' ') {
            found.push((super::view::resolve(&dir.join(p)), GuardMade::File("")));
        }
    }
    found
}

#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;

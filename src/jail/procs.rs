//! The processes of a running jail.

/// Every process below `root` (not `root`), parents before their children.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    let links: Vec<(i32, i32)> = all
        .flatten()
        .filter_map(|p| p.stat().ok())
        .map(|s| (s.ppid, s.pid))
        .collect();
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(links.iter().filter(|(pp, _)| *pp == parent).map(|(_, p)| *p));
        at += 1;
    }
    found.remove(0);
    found
}

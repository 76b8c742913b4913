//! Real VMs for the tests (QEMU, root only): an initramfs the rig builds itself from installed packages (busybox
//! as init and tools, curl with its libraries found by `ldd`, the virtio modules of the installed Debian kernel
//! with their dependencies from `modules.dep`), cached under the target folder by its inputs, and a VM booted
//! from it with a script of the test's own that prints its results on the serial console and powers off.
//! Every boot has a deadline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::rigs::wait::{Within, wait_for};

/// The one kernel of the installed linux-image-amd64 (the newest, if several).
fn kernel() -> Option<(PathBuf, String)> {
    let mut found: Vec<String> = std::fs::read_dir("/boot")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("vmlinuz-").map(str::to_string))
        .filter(|v| Path::new(&format!("/lib/modules/{v}/modules.dep")).exists())
        .collect();
    found.sort();
    let v = found.pop()?;
    Some((PathBuf::from(format!("/boot/vmlinuz-{v}")), v))
}

/// How QEMU runs here: KVM where /dev/kvm boots a stock kernel, else TCG (emulation, several times slower).
/// Some nested hosts offer a /dev/kvm that boots only kernels built for it (kvm-pvm): that is found by a probe
/// boot and said loudly, and the VM is emulated. A missing /dev/kvm is a failure in CI.
fn accel(test: &str) -> Option<&'static str> {
    static ACCEL: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *ACCEL.get_or_init(|| {
        if let Ok(forced) = std::env::var("CORDON_VM_ACCEL") {
            return Some(if forced == "kvm" { "kvm" } else { "tcg" });
        }
        if !Path::new("/dev/kvm").exists() {
            crate::rigs::tool::skip(
                test,
                "no /dev/kvm: the real-VM tests need KVM",
                Some("CORDON_REQUIRE_VM"),
            );
            return None;
        }
        let probe = Image::base().with(&[("run.sh", b"echo @@probe-ok\n".as_slice())]);
        let out = boot_raw("kvm", None, &probe, &[], Duration::from_secs(20), false);
        if out.contains("@@probe-ok") {
            return Some("kvm");
        }
        // This machine's and CI's /dev/kvm are a nested host's kvm-pvm, which boots only kernels built as PVM
        // guests (Debian ships none): the VM is still a real one, its kernel and virtio NIC the same, only slower.
        let why = "/dev/kvm is here but does not boot the Debian kernel (a nested host's kvm-pvm, say)";
        eprintln!("\n*** {test}: {why}: emulating (TCG) instead, slower ***\n");
        Some("tcg")
    })
}

/// Whether the real-VM tests can run here: root, qemu-system-x86_64, a Debian kernel and a way to run it. When
/// they cannot, say why; in CI that is a failure.
pub(crate) fn available(test: &str) -> bool {
    if !crate::rigs::netns::available(test) {
        return false;
    }
    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .timed_output()
        .is_ok_and(|o| o.status.success());
    if !qemu || kernel().is_none() {
        crate::rigs::tool::skip(
            test,
            "needs qemu-system-x86_64 (qemu-system-x86) and a kernel in /boot with its /lib/modules \
             (linux-image-amd64)",
            Some("CORDON_REQUIRE_VM"),
        );
        return false;
    }
    accel(test).is_some()
}

/// An initramfs: newc cpio archives made by Debian's `cpio` from a folder of files. The kernel unpacks archives
/// laid one after another in turn, so a test's own files are a second small archive after the cached base.
#[derive(Clone, Default)]
pub(crate) struct Image {
    bytes: Vec<u8>,
}

/// `cpio -o -H newc` of everything under `dir` (owned by root, in a stable order), at most 60 s.
fn pack(dir: &Path) -> Vec<u8> {
    let out = Command::new("sh")
        .args([
            "-c",
            "find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet",
        ])
        .current_dir(dir)
        .timed_output()
        .unwrap();
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "cpio of {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Put `data` at `rel` under `root` (mode 0755), with the folders above it.
fn put(root: &Path, rel: &str, data: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    let at = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::write(&at, data).unwrap();
    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Image {
    /// The base image (cached under the target folder, keyed by the kernel and the tools' files): busybox,
    /// curl and their libraries, the CA bundle, the virtio modules, and an init that loads them, mounts
    /// what a system mounts, runs /run.sh and powers off.
    pub(crate) fn base() -> Image {
        use sha2::{Digest, Sha256};
        let (_, version) = kernel().unwrap();
        let tools = ["/usr/bin/busybox", "/usr/bin/curl"];
        let mut files: Vec<String> = tools.iter().map(|t| t.to_string()).collect();
        for t in tools {
            let out = Command::new("ldd").arg(t).timed_output().unwrap();
            for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if word.starts_with('/') && !files.contains(&word.to_string()) {
                    files.push(word.to_string());
                }
            }
        }
        let modules = modules(&version, &["virtio_net", "virtio_pci"]);
        let key = files
            .iter()
            .chain(&modules)
            .map(|f| {
                let m = std::fs::metadata(f).unwrap();
                format!("{f}:{}:{:?}", m.len(), m.modified().ok())
            })
            .collect::<Vec<_>>()
            .join(",");
        let digest = hex::encode(&Sha256::digest(key.as_bytes())[..8]);
        let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("vm-image-{digest}.cpio"));
        if let Ok(bytes) = std::fs::read(&cache) {
            return Image { bytes };
        }
        let stage = tempfile::tempdir().unwrap();
        let root = stage.path().join("root");
        for d in [
            "bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "etc", "tmp", "mods",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in files
            .iter()
            .map(String::as_str)
            .chain(["/etc/ssl/certs/ca-certificates.crt"])
        {
            // At the same path as on the host (ldd gives the loader's own path too).
            put(&root, f, &std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}")));
        }
        let mut load = String::new();
        for m in &modules {
            let name = Path::new(m).file_name().unwrap().to_str().unwrap();
            put(&root, &format!("mods/{name}"), &std::fs::read(m).unwrap());
            load.push_str(&format!("insmod /mods/{name}\n"));
        }
        std::os::unix::fs::symlink("/usr/bin/busybox", root.join("bin/sh")).unwrap();
        let init = format!(
            "#!/bin/sh\n/usr/bin/busybox --install -s /bin\nmount -t proc proc /proc\nmount -t sysfs sys /sys\n\
             mount -t devtmpfs dev /dev\nmount -t tmpfs tmp /tmp\n{load}ip link set lo up\necho @@init-ok\n\
             sh /run.sh 2>&1\necho @@end\nreboot -f\n"
        );
        put(&root, "init", init.as_bytes());
        let img = Image { bytes: pack(&root) };
        // Written aside and renamed: tests booting at once never read half an image.
        let part = cache.with_extension(format!("part{}", std::process::id()));
        if std::fs::write(&part, &img.bytes).is_ok() {
            let _ = std::fs::rename(&part, &cache);
        }
        img
    }

    /// This image with more files at the top (the test's /run.sh and what it needs), as a second archive.
    pub(crate) fn with(&self, files: &[(&str, &[u8])]) -> Vec<u8> {
        let stage = tempfile::tempdir().unwrap();
        let root = stage.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        for (name, data) in files {
            put(&root, name, data);
        }
        let mut bytes = self.bytes.clone();
        bytes.extend(pack(&root));
        bytes
    }
}

/// The module files `wanted` need (unless built in), dependencies first, from `modules.dep`.
fn modules(version: &str, wanted: &[&str]) -> Vec<String> {
    let root = format!("/lib/modules/{version}");
    let dep = std::fs::read_to_string(format!("{root}/modules.dep")).unwrap();
    let map: BTreeMap<String, Vec<String>> = dep
        .lines()
        .filter_map(|l| {
            let (m, deps) = l.split_once(':')?;
            Some((m.to_string(), deps.split_whitespace().map(str::to_string).collect()))
        })
        .collect();
    fn visit(m: &str, map: &BTreeMap<String, Vec<String>>, out: &mut Vec<String>) {
        if out.iter().any(|o| o == m) {
            return;
        }
        for d in map.get(m).into_iter().flatten().rev() {
            visit(d, map, out);
        }
        out.push(m.to_string());
    }
    let mut out = Vec::new();
    for w in wanted {
        let found = map.keys().find(|k| {
            Path::new(k)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.split('.').next() == Some(w))
        });
        if let Some(k) = found {
            visit(k, &map, &mut out);
        }
    }
    out.into_iter().map(|m| format!("{root}/{m}")).collect()
}

/// Boot `initrd` under `accel` (in network namespace `ns`, if given, with `net` QEMU's network arguments, or
/// devices when they name no `-netdev`: then the VM has no NIC), at most `limit` (past it the VM is killed; a
/// failure when `must_end`); what the console and QEMU said.
fn boot_raw(accel: &str, ns: Option<&str>, initrd: &[u8], net: &[String], limit: Duration, must_end: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("initrd.cpio");
    std::fs::write(&path, initrd).unwrap();
    let (kernel, _) = kernel().unwrap();
    let no_nic = ["-nic".to_string(), "none".to_string()];
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns.unwrap_or("")]);
    if ns.is_none() {
        c = Command::new("env");
    }
    c.arg("qemu-system-x86_64")
        .args([
            "-accel",
            accel,
            "-m",
            "512",
            "-smp",
            "1",
            "-nographic",
            "-no-reboot",
            "-kernel",
        ])
        .arg(kernel)
        .arg("-initrd")
        .arg(&path)
        .args(["-append", "console=ttyS0 quiet panic=-1 rdinit=/init"])
        .args(if net.iter().any(|a| a == "-netdev") {
            &[][..]
        } else {
            &no_nic[..]
        })
        .args(net)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let out = if must_end {
        wait_for(child, "a VM (qemu-system-x86_64)", limit)
    } else {
        let deadline = crate::rigs::wait::Deadline::start(&child, limit, "the KVM probe boot");
        let out = child.wait_with_output().unwrap();
        drop(deadline);
        out
    };
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Boot a VM in network namespace `ns` with one virtio NIC on tap `tap` (made beforehand) with `mac`, running
/// `script` as /run.sh with `files` beside it; the console's lines. Fails past `limit` or when the VM did not
/// run the script to its end.
pub(crate) fn boot(ns: &str, tap: &str, mac: &str, script: &str, files: &[(&str, &[u8])], limit: Duration) -> String {
    let accel = accel("a real VM").unwrap();
    let mut all: Vec<(&str, &[u8])> = vec![("run.sh", script.as_bytes())];
    all.extend_from_slice(files);
    let initrd = Image::base().with(&all);
    let net = [
        "-netdev".to_string(),
        format!("tap,id=n0,ifname={tap},script=no,downscript=no"),
        "-device".to_string(),
        format!("virtio-net-pci,netdev=n0,mac={mac}"),
    ];
    let text = boot_raw(accel, Some(ns), &initrd, &net, limit, true);
    assert!(
        text.contains("@@init-ok") && text.contains("@@end"),
        "the VM did not run its script to the end: {text}"
    );
    text
}

/// Boot a VM without a NIC that sees the host's own file system read-only over 9p (mount tag `hostroot`), with
/// the host kernel's `modules` (and what they need, beyond the base image's) loaded before `script` runs as
/// /run.sh with `files` beside it; the console's lines. Fails past `limit` or when the VM did not run the script
/// to its end.
pub(crate) fn boot_sharing_host(script: &str, files: &[(&str, &[u8])], modules: &[&str], limit: Duration) -> String {
    let accel = accel("a real VM").unwrap();
    let (_, version) = kernel().unwrap();
    let base = self::modules(&version, &["virtio_net", "virtio_pci"]);
    let mut mods: Vec<(String, Vec<u8>)> = Vec::new();
    let mut load = String::new();
    for m in self::modules(&version, modules)
        .into_iter()
        .filter(|m| !base.contains(m))
    {
        let name = Path::new(&m).file_name().unwrap().to_str().unwrap().to_string();
        load.push_str(&format!("insmod /mods/{name} || echo @@insmod-failed {name}\n"));
        mods.push((format!("mods/{name}"), std::fs::read(&m).unwrap()));
    }
    let run = format!("{load}{script}");
    let mut all: Vec<(&str, &[u8])> = vec![("run.sh", run.as_bytes())];
    all.extend_from_slice(files);
    all.extend(mods.iter().map(|(n, d)| (n.as_str(), d.as_slice())));
    let initrd = Image::base().with(&all);
    let share = [
        "-virtfs".to_string(),
        "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap".to_string(),
    ];
    let text = boot_raw(accel, None, &initrd, &share, limit, true);
    assert!(
        text.contains("@@init-ok") && text.contains("@@end"),
        "the VM did not run its script to the end: {text}"
    );
    text
}

/// The value of the console's `@@key value` line, if any.
pub(crate) fn said<'a>(console: &'a str, key: &str) -> Option<&'a str> {
    let mark = format!("@@{key} ");
    console.lines().find_map(|l| l.split_once(&mark).map(|(_, v)| v.trim()))
}

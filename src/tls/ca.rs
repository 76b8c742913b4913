//! Per-sandbox certificate authorities for TLS interception.
//!
//! Every sandbox gets a CA of its own, so that a CA key that leaks, or a CA certificate that one sandbox was told
//! to trust, gives nothing over any other sandbox: a leaf minted by sandbox A's CA fails verification in a client
//! that trusts only sandbox B's CA. A CA can further be limited by RFC 5280 name constraints ([`Scope`]) to the
//! names its sandbox's policy allows, so that even a stolen CA key cannot sign for anything else.
//!
//! # On disk
//!
//! `<dir>/<sandbox>/ca.pem` (the certificate, PEM) and `<dir>/<sandbox>/ca.key` (its PKCS#8 key, PEM, mode 0600),
//! in a folder of mode 0700. [`CaStore`] never regenerates an existing CA: a broken one is refused with an error
//! that says what to do, and only [`CaStore::rotate`] replaces it.
//!
//! # Installing a new pair
//!
//! Creation and rotation write `ca.pem.new` and then `ca.key.new` (each through a temporary file that is fsynced
//! and renamed, so a file with one of these names is always complete), fsync the folder, and only then rename
//! `ca.key.new` over `ca.key` and `ca.pem.new` over `ca.pem`. Whenever a `.new` file is found on load, the pair
//! made of the `.new` files (falling back to the live file where there is no `.new` one) is installed if its
//! certificate and key match, and the `.new` files are discarded if they do not. So a crash never leaves a
//! certificate without its key: an interrupted installation is either completed or undone on the next load.
//!
//! Rotation keeps the previous certificate as `ca.pem.old` (public, useful to tell sandboxes which CA to stop
//! trusting) but not the previous key: renaming the new key over it unlinks it, since a CA that was rotated
//! (possibly because it leaked) must not stay usable.
//!
//! # Validity
//!
//! A CA is valid from one hour before its creation (clock skew between cordon and the sandboxes) for
//! [`CA_VALIDITY_DAYS`] days, about ten years: it is a private root that lives as long as its sandbox, and
//! rotation is explicit. An expired CA is refused on load.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DistinguishedName, DnType, GeneralSubtree, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, NameConstraints, PKCS_ECDSA_P256_SHA256, SerialNumber,
};
use rustls::crypto::CryptoProvider;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, DnsName};
use time::OffsetDateTime;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use super::leaf::LeafName;

/// How long a CA certificate is valid, in days (ten years and the leap days in them).
pub const CA_VALIDITY_DAYS: i64 = 3652;
/// How far before its creation a CA certificate's validity starts, so that a sandbox whose clock is behind
/// cordon's still accepts it.
const CA_BACKDATE: time::Duration = time::Duration::hours(1);

const CERT_FILE: &str = "ca.pem";
const KEY_FILE: &str = "ca.key";
const NEW_CERT_FILE: &str = "ca.pem.new";
const NEW_KEY_FILE: &str = "ca.key.new";
const OLD_CERT_FILE: &str = "ca.pem.old";

/// The longest sandbox id accepted.
const MAX_SANDBOX_ID_LEN: usize = 64;

/// The crypto provider for everything in this module tree, built here rather than taken from rustls' process-wide
/// default so that nothing depends on what another part of the process installed.
static PROVIDER: LazyLock<Arc<CryptoProvider>> = LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));

/// The ring crypto provider shared by the TLS modules.
pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::clone(&PROVIDER)
}

/// `N` bytes from the provider's CSPRNG.
pub(super) fn random_bytes<const N: usize>() -> Result<[u8; N], CaError> {
    let mut buf = [0u8; N];
    PROVIDER.secure_random.fill(&mut buf).map_err(|_| CaError::Random)?;
    Ok(buf)
}

/// A random, positive 128-bit certificate serial number (RFC 5280 allows 20 octets; CA/B forum wants 64 random
/// bits).
pub(super) fn random_serial() -> Result<SerialNumber, CaError> {
    let mut bytes = random_bytes::<16>()?;
    // Clear the sign bit (serials are positive) and set the next one, so the DER INTEGER is exactly 16 octets.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}

/// What a CA may sign for, derived by the caller from the sandbox's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// No name constraints (e.g. a report-mode policy that may allow anything).
    Unconstrained,
    /// Permitted DNS subtrees (each "example.com" permits the name and every name under it, RFC 5280) and
    /// permitted IP ranges. When `ips` is empty, ALL IP addresses are excluded (0.0.0.0/0 and ::/0 as excluded
    /// subtrees), because RFC 5280 leaves a name type without permitted subtrees unconstrained: without the
    /// exclusion a stolen CA key could still sign for any IP address. Likewise, when `dns` is empty, all DNS names
    /// are excluded (the empty DNS name as excluded subtree, which matches every name).
    ///
    /// Entries must be plain names: a wildcard such as `*.example.com` is refused; reduce it to `example.com`.
    Names {
        /// DNS subtrees, e.g. `example.com`.
        dns: Vec<String>,
        /// IP ranges; an IPv4-only list excludes every IPv6 address and vice versa (one name form, RFC 5280).
        ips: Vec<IpNet>,
    },
}

impl Scope {
    /// The canonical form of this scope: DNS names lowercased without a trailing dot, IP ranges truncated to their
    /// network address, both sorted and deduplicated. This is the form written into certificates and returned by
    /// [`SandboxCa::scope`], so `ca.scope() == &wanted.normalized()?` tells whether a CA matches a policy.
    pub fn normalized(&self) -> Result<Scope, CaError> {
        match self {
            Scope::Unconstrained => Ok(Scope::Unconstrained),
            Scope::Names { dns, ips } => {
                let mut dns = dns
                    .iter()
                    .map(|entry| normalize_dns_subtree(entry))
                    .collect::<Result<Vec<_>, _>>()?;
                dns.sort();
                dns.dedup();
                let mut ips: Vec<IpNet> = ips.iter().map(IpNet::trunc).collect();
                ips.sort();
                ips.dedup();
                Ok(Scope::Names { dns, ips })
            }
        }
    }

    /// Whether a certificate for `name` issued under this scope passes RFC 5280 name-constraint checks. cordon
    /// uses it to refuse minting leaves that clients would reject anyway.
    pub fn permits(&self, name: &LeafName) -> bool {
        match (self, name) {
            (Scope::Unconstrained, _) => true,
            (Scope::Names { dns, .. }, LeafName::Dns(host)) => dns.iter().any(|base| dns_in_subtree(host, base)),
            (Scope::Names { ips, .. }, LeafName::Ip(addr)) => ips.iter().any(|net| net.contains(addr)),
        }
    }
}

/// `example.com` as a DNS subtree contains `example.com` and `api.example.com`, but not `badexample.com`.
fn dns_in_subtree(host: &str, base: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).as_bytes();
    let base = base.as_bytes();
    if host.len() == base.len() {
        return host.eq_ignore_ascii_case(base);
    }
    host.len() > base.len()
        && host[host.len() - base.len()..].eq_ignore_ascii_case(base)
        && host[host.len() - base.len() - 1] == b'.'
}

fn normalize_dns_subtree(entry: &str) -> Result<String, CaError> {
    let lower = entry.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.parse::<IpAddr>().is_ok() {
        return Err(CaError::InvalidScope {
            entry: entry.to_owned(),
            reason: "an IP address belongs in the IP ranges, not the DNS names",
        });
    }
    DnsName::try_from(name).map_err(|_| CaError::InvalidScope {
        entry: entry.to_owned(),
        reason: "not a DNS name (wildcards must be reduced to their parent domain, e.g. example.com)",
    })?;
    Ok(name.to_owned())
}

/// The name-constraints extension cordon writes for `scope` (already normalized).
fn name_constraints(scope: &Scope) -> Option<NameConstraints> {
    let Scope::Names { dns, ips } = scope else {
        return None;
    };
    let mut permitted_subtrees: Vec<GeneralSubtree> = dns.iter().cloned().map(GeneralSubtree::DnsName).collect();
    permitted_subtrees.extend(
        ips.iter()
            .map(|net| GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(net.network(), net.prefix_len()))),
    );
    let mut excluded_subtrees = Vec::new();
    if dns.is_empty() {
        // SECURITY: a CA with only IP subtrees would otherwise sign for any DNS name (RFC 5280: a name form
        // without permitted subtrees is unconstrained); the empty DNS name matches every name.
        excluded_subtrees.push(GeneralSubtree::DnsName(String::new()));
    }
    if ips.is_empty() {
        // SECURITY: a stolen CA key with only DNS subtrees could otherwise sign for any IP address.
        excluded_subtrees.push(GeneralSubtree::IpAddress(CidrSubnet::V4([0; 4], [0; 4])));
        excluded_subtrees.push(GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16])));
    }
    Some(NameConstraints {
        permitted_subtrees,
        excluded_subtrees,
    })
}

/// Errors of the TLS modules, each saying what went wrong and, where a person can fix it, how.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// The sandbox id cannot name a CA folder.
    #[error("invalid sandbox id {id:?}: {reason}")]
    InvalidSandboxId {
        /// The id as given.
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// An entry of a [`Scope`] cannot be written as a name constraint.
    #[error("invalid CA scope entry {entry:?}: {reason}")]
    InvalidScope {
        /// The entry as given.
        entry: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A file operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What cordon was doing, e.g. "read".
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The CA key file can be read by other users.
    #[error(
        "{} is readable by group or others (mode {mode:03o}); a CA key must be private to cordon: run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    KeyPermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A CA folder can be written by other users.
    #[error(
        "{} is writable by group or others (mode {mode:03o}), so someone else could replace the CA in it: run `chmod 700 {}`",
        path.display(),
        path.display()
    )]
    DirPermissions {
        /// The folder.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Something that should be a folder is not.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// One file of the pair exists without the other.
    #[error(
        "{} exists but {} does not; restore the missing file, or run `cordon ca rotate` to make a new CA",
        present.display(),
        missing.display()
    )]
    Incomplete {
        /// The file that exists.
        present: PathBuf,
        /// The file that is missing.
        missing: PathBuf,
    },
    /// The certificate file cannot be used as a CA.
    #[error("{} is not a usable CA certificate: {reason}", path.display())]
    BadCert {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The key file cannot be used.
    #[error("{} is not a usable CA key: {reason}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate was not made for the key.
    #[error(
        "{} does not belong to {}: the certificate's public key is not the key's; restore the matching pair, or run \
         `cordon ca rotate` to make a new CA",
        cert.display(),
        key.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The CA certificate has expired.
    #[error("{} expired on {not_after}; run `cordon ca rotate` to make a new CA", path.display())]
    Expired {
        /// The certificate file.
        path: PathBuf,
        /// When it expired.
        not_after: OffsetDateTime,
    },
    /// The certificate's name constraints are not of the form cordon writes, so its scope cannot be reported
    /// faithfully.
    #[error(
        "{} has name constraints cordon did not write ({reason}); run `cordon ca rotate` to make a new CA",
        path.display()
    )]
    UnsupportedConstraints {
        /// The certificate file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A leaf was asked for a name that cannot be put in a certificate.
    #[error("cannot mint a certificate for {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A leaf was asked for a name the sandbox's CA may not sign for (clients would reject it).
    #[error(
        "{name} is outside the names the CA of sandbox {sandbox} may sign for; if the policy now allows it, run \
         `cordon ca rotate {sandbox}` and have the sandbox trust the new CA"
    )]
    OutOfScope {
        /// The sandbox.
        sandbox: String,
        /// The name.
        name: String,
    },
    /// Key or certificate generation failed.
    #[error("cannot generate {what}: {source}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// The leaf validity cannot be used.
    #[error("invalid leaf validity: {0}")]
    InvalidValidity(&'static str),
    /// The system's random number generator failed.
    #[error("the system random number generator failed")]
    Random,
    /// rustls refused the certificate chain or key.
    #[error("cannot build a TLS server configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The same error, shared by several callers that waited for one leaf to be minted.
    #[error("{0}")]
    Shared(Arc<CaError>),
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CaError {
    let path = path.to_path_buf();
    move |source| CaError::Io { action, path, source }
}

/// A sandbox's CA, ready to sign leaves.
pub struct SandboxCa {
    sandbox: String,
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    scope: Scope,
    not_after: OffsetDateTime,
    key_id: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for SandboxCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxCa")
            .field("sandbox", &self.sandbox)
            .field("scope", &self.scope)
            .field("not_after", &self.not_after)
            // SECURITY: the CA key must never reach logs; only public parts are shown.
            .field("key", &"[elided]")
            .finish_non_exhaustive()
    }
}

impl SandboxCa {
    /// The sandbox this CA belongs to.
    pub fn sandbox(&self) -> &str {
        &self.sandbox
    }

    /// The CA certificate in PEM, as on disk: what `cordon ca export` prints for the sandbox to trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate in DER, the second element of every leaf chain.
    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// What the CA may sign for, as read back from the certificate (normalized, see [`Scope::normalized`]), so
    /// the caller can compare it with what the policy needs now.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// When the CA certificate expires.
    pub fn not_after(&self) -> OffsetDateTime {
        self.not_after
    }

    /// The CA's key identifier (truncated SHA-256 of its public key): tells two CAs of one sandbox apart.
    pub(super) fn key_id(&self) -> &[u8] {
        &self.key_id
    }

    /// What rcgen needs to sign a leaf.
    pub(super) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    /// Builds a CA from its PEM files' contents, checking everything [`CaStore::load`] promises; the paths are
    /// for error messages.
    fn from_pem(
        sandbox: &str,
        cert_pem: String,
        key_pem: &str,
        cert_path: &Path,
        key_path: &Path,
    ) -> Result<SandboxCa, CaError> {
        let bad_cert = |reason: String| CaError::BadCert {
            path: cert_path.to_path_buf(),
            reason,
        };
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| bad_cert(format!("no PEM certificate in it ({e})")))?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| CaError::BadKey {
            path: key_path.to_path_buf(),
            reason: format!("not a PKCS#8 PEM private key ({e})"),
        })?;
        let (scope, not_after) = {
            let (_, x509) = x509_parser::parse_x509_certificate(&cert_der)
                .map_err(|e| bad_cert(format!("cannot parse it ({e})")))?;
            if x509.public_key().subject_public_key.data.as_ref() != rcgen::PublicKeyData::der_bytes(&key) {
                return Err(CaError::KeyMismatch {
                    cert: cert_path.to_path_buf(),
                    key: key_path.to_path_buf(),
                });
            }
            match x509.basic_constraints() {
                Ok(Some(bc)) if bc.value.ca => {}
                Ok(_) => {
                    return Err(bad_cert(
                        "it is not a CA certificate (no basicConstraints CA:TRUE)".into(),
                    ));
                }
                Err(e) => return Err(bad_cert(format!("bad basicConstraints ({e})"))),
            }
            match x509.key_usage() {
                Ok(Some(ku)) if !ku.value.key_cert_sign() => {
                    return Err(bad_cert("its key usage does not allow signing certificates".into()));
                }
                Ok(_) => {}
                Err(e) => return Err(bad_cert(format!("bad keyUsage ({e})"))),
            }
            let not_after = x509.validity().not_after.to_datetime();
            if not_after <= OffsetDateTime::now_utc() {
                return Err(CaError::Expired {
                    path: cert_path.to_path_buf(),
                    not_after,
                });
            }
            (scope_from_cert(&x509, cert_path)?, not_after)
        };
        let key_id = CertificateParams::default().key_identifier(&key);
        let issuer =
            Issuer::from_ca_cert_der(&cert_der, key).map_err(|e| bad_cert(format!("cannot sign with it ({e})")))?;
        Ok(SandboxCa {
            sandbox: sandbox.to_owned(),
            cert_pem,
            cert_der,
            scope,
            not_after,
            key_id,
            issuer,
        })
    }
}

/// Reads the scope back from a CA certificate, refusing constraints that cordon would not have written for it.
fn scope_from_cert(x509: &X509Certificate<'_>, path: &Path) -> Result<Scope, CaError> {
    let unsupported = |reason: String| CaError::UnsupportedConstraints {
        path: path.to_path_buf(),
        reason,
    };
    let nc = x509
        .name_constraints()
        .map_err(|e| unsupported(format!("cannot parse them: {e}")))?;
    let Some(nc) = nc else {
        return Ok(Scope::Unconstrained);
    };
    let permitted = subtrees_from_cert(nc.value.permitted_subtrees.as_deref()).map_err(&unsupported)?;
    let excluded = subtrees_from_cert(nc.value.excluded_subtrees.as_deref()).map_err(&unsupported)?;
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for subtree in &permitted {
        match subtree {
            GeneralSubtree::DnsName(name) => dns.push(name.clone()),
            GeneralSubtree::IpAddress(cidr) => ips.push(ipnet_from_cidr(*cidr).map_err(&unsupported)?),
            _ => {
                return Err(unsupported(
                    "a permitted subtree is neither a DNS name nor an IP range".into(),
                ));
            }
        }
    }
    let scope = Scope::Names { dns, ips };
    // SECURITY: `scope()` must describe what clients enforce; a certificate edited to, say, drop the IP exclusion
    // would otherwise be reported as IP-free while signing for every IP address.
    if scope.normalized().ok().as_ref() != Some(&scope)
        || name_constraints(&scope)
            != Some(NameConstraints {
                permitted_subtrees: permitted,
                excluded_subtrees: excluded,
            })
    {
        return Err(unsupported(
            "they differ from what cordon writes for the names they permit".into(),
        ));
    }
    Ok(scope)
}

fn subtrees_from_cert(
    subtrees: Option<&[x509_parser::extensions::GeneralSubtree<'_>]>,
) -> Result<Vec<GeneralSubtree>, String> {
    subtrees
        .unwrap_or_default()
        .iter()
        .map(|subtree| match &subtree.base {
            GeneralName::DNSName(name) => Ok(GeneralSubtree::DnsName((*name).to_owned())),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                8 => {
                    let (addr, mask) = bytes.split_at(4);
                    Ok(GeneralSubtree::IpAddress(CidrSubnet::V4(
                        addr.try_into().map_err(|_| "bad IPv4 subtree")?,
                        mask.try_into().map_err(|_| "bad IPv4 subtree")?,
                    )))
                }
                32 => {
                    let (addr, mask) = bytes.split_at(16);
                    Ok(GeneralSubtree::IpAddress(CidrSubnet::V6(
                        addr.try_into().map_err(|_| "bad IPv6 subtree")?,
                        mask.try_into().map_err(|_| "bad IPv6 subtree")?,
                    )))
                }
                n => Err(format!("an IP subtree of {n} bytes")),
            },
            other => Err(format!("an unsupported subtree {other}")),
        })
        .collect()
}

fn ipnet_from_cidr(cidr: CidrSubnet) -> Result<IpNet, String> {
    let net = match cidr {
        CidrSubnet::V4(addr, mask) => {
            let mask = u32::from_be_bytes(mask);
            if mask.leading_ones() != mask.count_ones() {
                return Err(format!("a non-contiguous IPv4 mask {mask:#010x}"));
            }
            Ipv4Net::new(Ipv4Addr::from(addr), mask.count_ones() as u8).map(IpNet::V4)
        }
        CidrSubnet::V6(addr, mask) => {
            let mask = u128::from_be_bytes(mask);
            if mask.leading_ones() != mask.count_ones() {
                return Err("a non-contiguous IPv6 mask".into());
            }
            Ipv6Net::new(Ipv6Addr::from(addr), mask.count_ones() as u8).map(IpNet::V6)
        }
    };
    net.map_err(|e| format!("a bad IP range ({e})"))
}

/// Generates a CA certificate and key for `sandbox` limited to `scope` (normalized); returns their PEM.
fn generate(sandbox: &str, scope: &Scope) -> Result<(String, String), CaError> {
    let generate_err = |what| move |source| CaError::Generate { what, source };
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate_err("a CA key"))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("cordon sandbox {sandbox} CA"));
    dn.push(DnType::OrganizationName, "cordon");
    params.distinguished_name = dn;
    // Path length 0: this CA signs leaves only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.name_constraints = name_constraints(scope);
    let now = OffsetDateTime::now_utc();
    params.not_before = now - CA_BACKDATE;
    params.not_after = now + time::Duration::days(CA_VALIDITY_DAYS);
    params.serial_number = Some(random_serial()?);
    let cert = params.self_signed(&key).map_err(generate_err("a CA certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The CAs of all sandboxes, one folder each under one directory.
#[derive(Debug)]
pub struct CaStore {
    dir: PathBuf,
    /// Serializes file operations: two connections of a new sandbox must not both create its CA. (One cordon
    /// process is expected to own the directory; nothing locks it against other processes.)
    lock: Mutex<()>,
}

impl CaStore {
    /// A store keeping each sandbox's CA in `dir/<sandbox>/`. Nothing is touched until first use.
    pub fn new(dir: impl Into<PathBuf>) -> CaStore {
        CaStore {
            dir: dir.into(),
            lock: Mutex::new(()),
        }
    }

    /// Loads `dir/<sandbox>/ca.pem` and `ca.key` if present (never regenerating them), else creates them with
    /// `scope`. A loaded CA keeps the scope it was made with: compare [`SandboxCa::scope`] with what the policy
    /// needs now. Refuses a certificate that does not match its key, a key file readable by group or others, a
    /// certificate that is not a CA or has expired, and a folder writable by group or others, with an error that
    /// names the file and says what to do.
    pub fn load_or_create(&self, sandbox: &str, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let _guard = self.lock();
        let dir = self.sandbox_dir(sandbox)?;
        if let Some(ca) = load_locked(sandbox, &dir)? {
            return Ok(ca);
        }
        self.install_new(sandbox, &dir, scope)
    }

    /// Loads a sandbox's CA; `Ok(None)` if it has none yet. Completes or undoes an installation that a crash
    /// interrupted (see the module documentation), so it may rename or delete `.new` files.
    pub fn load(&self, sandbox: &str) -> Result<Option<Arc<SandboxCa>>, CaError> {
        let _guard = self.lock();
        let dir = self.sandbox_dir(sandbox)?;
        load_locked(sandbox, &dir)
    }

    /// Replaces a sandbox's CA with a fresh key and certificate limited to `scope`, whatever state the current
    /// one is in (this is the remedy for a broken CA). The previous certificate is kept as `ca.pem.old`, the
    /// previous key is not kept. Leaves minted by the old CA stay cached until
    /// [`LeafCache::invalidate_sandbox`](super::cache::LeafCache::invalidate_sandbox) is called (they are never
    /// served for the new CA, whose leaves are cached apart).
    pub fn rotate(&self, sandbox: &str, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let _guard = self.lock();
        let dir = self.sandbox_dir(sandbox)?;
        self.install_new(sandbox, &dir, scope)
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        // The guarded state is on disk and every step leaves it recoverable, so a panic elsewhere poisons nothing.
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sandbox_dir(&self, sandbox: &str) -> Result<PathBuf, CaError> {
        validate_sandbox_id(sandbox)?;
        Ok(self.dir.join(sandbox))
    }

    /// Generates a CA and installs it in `dir` (creating the folders as needed), keeping a previous certificate
    /// as `ca.pem.old`.
    fn install_new(&self, sandbox: &str, dir: &Path, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let scope = scope.normalized()?;
        // SECURITY: the folders are private from their creation (mode 0700), so no other local user can list,
        // read or replace a CA in them.
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create", dir))?;
        check_dir(dir)?;
        let (cert_pem, key_pem) = generate(sandbox, &scope)?;
        // Check the pair exactly as a later load will, before it replaces anything.
        let ca = SandboxCa::from_pem(sandbox, cert_pem, &key_pem, &dir.join(CERT_FILE), &dir.join(KEY_FILE))?;

        write_file(dir, NEW_CERT_FILE, ca.cert_pem().as_bytes(), 0o644)?;
        write_file(dir, NEW_KEY_FILE, key_pem.as_bytes(), 0o600)?;
        sync_dir(dir)?;
        let cert_path = dir.join(CERT_FILE);
        if exists(&cert_path)? {
            let old = dir.join(OLD_CERT_FILE);
            remove_if_present(&old)?;
            fs::hard_link(&cert_path, &old).map_err(io_err("keep a copy of", &cert_path))?;
        }
        rename(&dir.join(NEW_KEY_FILE), &dir.join(KEY_FILE))?;
        rename(&dir.join(NEW_CERT_FILE), &cert_path)?;
        sync_dir(dir)?;
        Ok(Arc::new(ca))
    }
}

/// Sandbox ids are `[A-Za-z0-9._-]{1,64}`, but not `.` or `..`.
fn validate_sandbox_id(id: &str) -> Result<(), CaError> {
    let invalid = |reason| {
        Err(CaError::InvalidSandboxId {
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() || id.len() > MAX_SANDBOX_ID_LEN {
        return invalid("it must be 1 to 64 characters long");
    }
    // SECURITY: path traversal out of the CA folder (`..`, `a/../../b`) or onto the folder itself (`.`).
    if id == "."
        || id == ".."
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return invalid("it may contain only letters, digits, '.', '_' and '-', and may not be '.' or '..'");
    }
    Ok(())
}

fn load_locked(sandbox: &str, dir: &Path) -> Result<Option<Arc<SandboxCa>>, CaError> {
    if !exists(dir)? {
        return Ok(None);
    }
    check_dir(dir)?;
    finish_interrupted_install(sandbox, dir)?;
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    match (exists(&cert_path)?, exists(&key_path)?) {
        (false, false) => Ok(None),
        (true, false) => Err(CaError::Incomplete {
            present: cert_path,
            missing: key_path,
        }),
        (false, true) => Err(CaError::Incomplete {
            present: key_path,
            missing: cert_path,
        }),
        (true, true) => read_pair(sandbox, &cert_path, &key_path).map(|ca| Some(Arc::new(ca))),
    }
}

/// Installs the pair left by an interrupted installation if it matches, else discards its `.new` files.
fn finish_interrupted_install(sandbox: &str, dir: &Path) -> Result<(), CaError> {
    let new_cert = dir.join(NEW_CERT_FILE);
    let new_key = dir.join(NEW_KEY_FILE);
    remove_stale_temporaries(dir)?;
    let (has_new_cert, has_new_key) = (exists(&new_cert)?, exists(&new_key)?);
    if !has_new_cert && !has_new_key {
        return Ok(());
    }
    let cert = if has_new_cert {
        new_cert.clone()
    } else {
        dir.join(CERT_FILE)
    };
    let key = if has_new_key {
        new_key.clone()
    } else {
        dir.join(KEY_FILE)
    };
    let complete = exists(&cert)?
        && exists(&key)?
        && match read_pair(sandbox, &cert, &key) {
            Ok(_) => true,
            Err(CaError::KeyMismatch { .. }) => false,
            Err(e) => return Err(e),
        };
    if complete {
        if has_new_key {
            rename(&new_key, &dir.join(KEY_FILE))?;
        }
        if has_new_cert {
            rename(&new_cert, &dir.join(CERT_FILE))?;
        }
    } else {
        remove_if_present(&new_cert)?;
        remove_if_present(&new_key)?;
    }
    sync_dir(dir)
}

/// Removes temporary files a crash left behind while writing (one may hold a never-used CA key).
fn remove_stale_temporaries(dir: &Path) -> Result<(), CaError> {
    for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let name = entry.map_err(io_err("list", dir))?.file_name();
        let name = name.to_string_lossy();
        let ours = [NEW_CERT_FILE, NEW_KEY_FILE]
            .iter()
            .any(|file| name.starts_with(&format!(".{file}.tmp-")));
        if ours {
            remove_if_present(&dir.join(&*name))?;
        }
    }
    Ok(())
}

fn read_pair(sandbox: &str, cert_path: &Path, key_path: &Path) -> Result<SandboxCa, CaError> {
    let cert_pem = fs::read_to_string(cert_path).map_err(io_err("read", cert_path))?;
    let key_pem = read_key(key_path)?;
    SandboxCa::from_pem(sandbox, cert_pem, &key_pem, cert_path, key_path)
}

fn read_key(path: &Path) -> Result<String, CaError> {
    let mut file = File::open(path).map_err(io_err("open", path))?;
    // The mode of the file actually opened, not of whatever the path names a moment later.
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if !meta.is_file() {
        return Err(CaError::BadKey {
            path: path.to_path_buf(),
            reason: "not a regular file".into(),
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        // SECURITY: a CA key other local users can read lets them mint certificates the sandbox trusts.
        return Err(CaError::KeyPermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut key = String::new();
    io::Read::read_to_string(&mut file, &mut key).map_err(io_err("read", path))?;
    Ok(key)
}

fn check_dir(dir: &Path) -> Result<(), CaError> {
    let meta = fs::symlink_metadata(dir).map_err(io_err("inspect", dir))?;
    if !meta.is_dir() {
        return Err(CaError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        // SECURITY: whoever can write the folder can swap in a CA and key of their own, which cordon would then
        // sign with and tell the sandbox to trust.
        return Err(CaError::DirPermissions {
            path: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Writes `name` in `dir` through a fresh temporary file: complete and durable once it has its name.
fn write_file(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), CaError> {
    let suffix: String = random_bytes::<8>()?.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(".{name}.tmp-{suffix}"));
    let result = write_then_rename(&tmp, &dir.join(name), contents, mode);
    if result.is_err() {
        // Best effort: the error being returned matters more than a stray temporary file.
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(tmp: &Path, dest: &Path, contents: &[u8], mode: u32) -> Result<(), CaError> {
    // SECURITY: the key file has mode 0600 from its creation (not chmod afterwards), so no other local user can
    // open it in between; create_new never reuses or follows an existing file.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(tmp)
        .map_err(io_err("create", tmp))?;
    file.write_all(contents).map_err(io_err("write", tmp))?;
    file.sync_all().map_err(io_err("sync", tmp))?;
    rename(tmp, dest)
}

fn rename(from: &Path, to: &Path) -> Result<(), CaError> {
    fs::rename(from, to).map_err(io_err("rename", from))
}

fn sync_dir(dir: &Path) -> Result<(), CaError> {
    // Renames are durable only once the folder itself is synced.
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err("sync", dir))
}

fn exists(path: &Path) -> Result<bool, CaError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CaError::Io {
            action: "inspect",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

fn remove_if_present(path: &Path) -> Result<(), CaError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CaError::Io {
            action: "remove",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

#[cfg(test)]
#[path = "ca_tests.rs"]
pub(super) mod tests;

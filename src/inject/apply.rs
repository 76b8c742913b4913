//! The configured credentials as the request path uses them: which ones a request may carry, their
//! placeholders, where their secrets come from, and the scanners and maskers built from what is known of
//! those secrets. Applying them to a request is `outgoing.rs`.

use crate::names::Incarnation;
use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use http::Method;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::config::credentials::{CredentialSpec, Inject, SecretSource};
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::leak::mask::masker::{Forms, Masker};
use crate::leak::scan::detect::Detector;
use crate::names::CredentialName;
use crate::placeholder::Placeholders;
use crate::policy::Policy;
use crate::secrets::Secrets;
use crate::target::Target;

/// How many sets of secrets' forms are kept built (a set per destination's masked credentials and their
/// current values; every sandbox masking the same secrets shares one).
const FORMS: u64 = 256;

/// How many sandboxes' maskers are kept ready (each holds only its placeholders and a shared set of forms).
const MASKERS: u64 = 16_384;

/// The configured credentials, their placeholders, and where their secrets come from.
pub(crate) struct Credentials {
    pub(super) specs: Arc<BTreeMap<CredentialName, CredentialSpec>>,
    /// Whether any credential is configured at all (otherwise nothing is scanned or masked).
    pub(super) any: bool,
    /// Where the values come from.
    pub(super) secrets: Secrets,
    /// Placeholder computation and recognition.
    pub(crate) placeholders: Placeholders,
    /// The exfiltration scanner for what the book knew, and the book's version it was built at.
    detector: ArcSwap<(u64, Arc<Detector>)>,
    /// The forms of sets of secrets, by a digest of their values.
    forms: moka::sync::Cache<[u8; 32], Arc<Forms>>,
    /// Maskers ready for a sandbox, by its incarnation, the credentials masked and the book's version.
    maskers: moka::sync::Cache<String, Arc<Masker>>,
}

impl Credentials {
    /// Set up from the configuration: the placeholder key sits beside the vault file.
    pub(crate) fn new(config: &Config) -> Result<Credentials, String> {
        let mut key = config.vault.path.clone();
        key.set_file_name("placeholder.key");
        let mut placeholders = if config.credentials.is_empty() {
            // Nothing to protect: no key file is created for a config without credentials.
            Placeholders::from_key(&[0u8; 32])
        } else {
            Placeholders::load(&key)?
        };
        let pairs: Vec<Incarnation> = config
            .sandboxes
            .iter()
            .map(|s| crate::names::Incarnation::declared(&s.id, &s.user))
            .collect();
        let pairs: Vec<(&Incarnation, &CredentialName)> = pairs
            .iter()
            .flat_map(|s| config.credentials.keys().map(move |c| (s, c)))
            .collect();
        placeholders.learn(pairs);
        Credentials::with(config, Secrets::new(config)?, placeholders)
    }

    /// The credentials of `config` with no key file read or made and no secret source opened: for a dry run
    /// (`cordon explain`), which only asks which credentials are bound where. Any secret asked of it is
    /// unavailable.
    pub(crate) fn inert(config: &Config) -> Result<Credentials, String> {
        let placeholders = Placeholders::from_key(&[0u8; 32]);
        Credentials::with(config, Secrets::inert(config)?, placeholders)
    }

    fn with(config: &Config, secrets: Secrets, placeholders: Placeholders) -> Result<Credentials, String> {
        let detector = Detector::new(&[]).map_err(|e| format!("cannot build the exfiltration scanner: {e}"))?;
        Ok(Credentials {
            any: !config.credentials.is_empty(),
            secrets,
            specs: Arc::new(config.credentials.clone()),
            placeholders,
            detector: ArcSwap::from_pointee((0, Arc::new(detector))),
            forms: moka::sync::Cache::new(FORMS),
            maskers: moka::sync::Cache::builder()
                .max_capacity(MASKERS)
                .time_to_idle(std::time::Duration::from_secs(600))
                .build(),
        })
    }

    /// Read every stored secret once, so that the exfiltration scan knows them before any request has
    /// used them (a secret that cannot be read now is read, and learnt, when a request needs it).
    pub(crate) async fn learn_stored(&self) {
        for spec in self
            .specs
            .values()
            // Stored secrets, and stored AWS keys that are used as they are (a role's are learnt when assumed).
            .filter(|s| match &s.source {
                SecretSource::Static(_) => true,
                SecretSource::Aws(a) => a.assume_role.is_none(),
                _ => false,
            })
        {
            let read = tokio::time::timeout(std::time::Duration::from_secs(2), self.secrets.value(spec, None)).await;
            if !matches!(read, Ok(Ok(_))) {
                tracing::debug!(credential = %spec.name, "not learnt at start; it will be when first used");
            }
        }
    }

    /// Count token mints in these metrics.
    pub(crate) fn set_metrics(&mut self, metrics: Arc<crate::metrics::Metrics>) {
        self.secrets.set_metrics(metrics);
    }

    /// Open custody of the refresh tokens of `config`'s `oauth2_refresh` credentials (see `secrets::custody`).
    pub(crate) async fn open_custody(
        &mut self,
        config: &Config,
        metrics: &Arc<crate::metrics::Metrics>,
    ) -> Result<(), String> {
        self.secrets.open_custody(config, Some(metrics.clone())).await
    }

    /// Where secret values come from.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The placeholders a sandbox incarnation (`Sandbox::incarnation`) may use: (credential, placeholder) for
    /// each placeholder credential its policy allows.
    pub(crate) fn placeholders_for(
        &self,
        incarnation: &Incarnation,
        allowed: &[CredentialName],
    ) -> Vec<(CredentialName, String)> {
        allowed
            .iter()
            .filter(|n| {
                self.specs
                    .get(*n)
                    .is_some_and(|s| matches!(s.inject, Inject::Placeholder { .. } | Inject::AwsSigV4 { .. }))
            })
            .map(|n| (n.clone(), self.placeholders.value(incarnation, n)))
            .collect()
    }

    /// The credentials of `policy` that may be applied to a request of `method` to `target` and `path`:
    /// bound to it, and only `intercepted` (never over cleartext, where nothing is ever injected and any
    /// placeholder is refused).
    pub(crate) fn usable(
        &self,
        policy: &Policy,
        target: &Target,
        method: &Method,
        path: &str,
        intercepted: bool,
    ) -> Vec<CredentialName> {
        if !intercepted {
            return Vec::new();
        }
        policy
            .credentials
            .iter()
            .filter(|name| self.bound(name, target, method, path))
            .cloned()
            .collect()
    }

    /// The credentials of `policy` with `mask_echo` bound to `target`'s host (at any port, by any method and
    /// path): whatever the request, their secrets are masked in what comes back from there.
    pub(crate) fn masked(&self, policy: &Policy, target: &Target) -> Vec<CredentialName> {
        policy
            .credentials
            .iter()
            .filter(|name| {
                self.specs
                    .get(*name)
                    .is_some_and(|s| s.mask_echo && s.binding.matches_host(&target.host))
            })
            .cloned()
            .collect()
    }

    /// Whether credential `name` is bound to a request of `method` to `target` and `path`.
    pub(crate) fn bound(&self, name: &CredentialName, target: &Target, method: &Method, path: &str) -> bool {
        self.specs
            .get(name)
            .is_some_and(|s| s.binding.matches(target, method, path))
    }

    /// How credential `name` is attached, for explanations.
    pub(crate) fn how(&self, name: &CredentialName) -> Option<String> {
        Some(match &self.specs.get(name)?.inject {
            Inject::Header { name: h, .. } => format!("header {h}"),
            Inject::Basic { .. } => "Basic authorization".to_string(),
            Inject::Placeholder { .. } => "placeholder swap".to_string(),
            Inject::AwsSigV4 { .. } => "AWS SigV4 signature".to_string(),
        })
    }

    /// The exfiltration scanner for every secret known so far (rebuilt when a new value is learnt).
    pub(crate) fn detector(&self) -> Arc<Detector> {
        let current = self.detector.load();
        if current.0 == self.secrets.book.version() {
            return current.1.clone();
        }
        let (version, known) = self.secrets.book.all();
        match Detector::new(&known) {
            Ok(d) => {
                let d = Arc::new(d);
                self.detector.store(Arc::new((version, d.clone())));
                d
            }
            Err(e) => {
                tracing::error!("cannot rebuild the exfiltration scanner: {e}; the previous one stays");
                current.1.clone()
            }
        }
    }

    /// The masker for `names` (credentials of `sandbox`'s `policy`): every value known for each, replaced
    /// with the sandbox's placeholder for it. A stored secret not yet known is read now; a token never
    /// obtained has nothing to mask. The forms of a set of values are built once, whoever masks them.
    pub(crate) async fn masker(
        &self,
        sandbox: &Sandbox,
        policy: &Policy,
        names: &[CredentialName],
    ) -> Result<Option<Arc<Masker>>, ProxyError> {
        if names.is_empty() {
            return Ok(None);
        }
        let incarnation = sandbox.incarnation();
        let ready = format!("{incarnation}\0{}\0{}", self.secrets.book.version(), names.join("\0"));
        if let Some(m) = self.maskers.get(&ready) {
            return Ok(Some(m));
        }
        let mut values: Vec<SecretString> = Vec::new();
        let mut placeholders: Vec<String> = Vec::new();
        for name in names {
            let Some(spec) = self.specs.get(name) else { continue };
            let mut known = self.secrets.book.of(name.as_str());
            if known.is_empty() && matches!(spec.source, SecretSource::Static(_)) {
                known.push(self.secret(spec, policy).await?);
            }
            let placeholder = self.placeholders.value(incarnation, name);
            placeholders.extend(std::iter::repeat_n(placeholder, known.len()));
            values.extend(known);
        }
        if values.is_empty() {
            return Ok(None);
        }
        let mut digest = Sha256::new();
        for value in &values {
            digest.update(value.expose_secret().as_bytes());
            digest.update([0]);
        }
        let key: [u8; 32] = digest.finalize().into();
        let forms = match self.forms.get(&key) {
            Some(forms) => forms,
            None => {
                let Some(forms) = Forms::new(&values) else {
                    return Ok(None);
                };
                let forms = Arc::new(forms);
                self.forms.insert(key, forms.clone());
                forms
            }
        };
        let masker = Arc::new(Masker::with(forms, placeholders.iter().map(String::as_str).collect()));
        // Keyed by the book's version from before the values were read: a value learnt meanwhile only means
        // one more build next time.
        self.maskers.insert(ready, masker.clone());
        Ok(Some(masker))
    }

    /// The value to apply for `spec` now, narrowed as `policy` says.
    pub(super) async fn secret(&self, spec: &CredentialSpec, policy: &Policy) -> Result<SecretString, ProxyError> {
        let narrowed = policy
            .credential_scope
            .get(&spec.name)
            .map(|o| (policy.name.as_str(), o));
        match self.secrets.value(spec, narrowed).await {
            Ok(v) if crate::secrets::header_safe(&v) => Ok(v),
            Ok(_) => Err(unavailable(
                &spec.name,
                "the value has characters a header cannot carry".into(),
            )),
            Err(detail) => {
                tracing::warn!(credential = %spec.name, "credential unavailable: {detail}");
                Err(unavailable(&spec.name, detail))
            }
        }
    }
}

pub(super) fn unavailable(credential: &str, detail: String) -> ProxyError {
    ProxyError::CredentialUnavailable {
        credential: credential.to_string().into(),
        detail,
    }
}

//! The calls that mint credentials: through an injected credential, each one would hand the sandbox a new
//! credential it could keep and use without cordon (temporary AWS keys, a new access key, a login password,
//! a registry token). cordon refuses them unless the
//! credential's `allow_minting` names them; this table is what `allow_minting` may name.

/// Which kind of credential a minting call is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// AWS keys (`source.aws`), signed with SigV4 (the only kind whose minting calls are refused so far).
    Aws,
}

impl Kind {
    /// How the kind is written in an `allow_minting` entry (`aws`'s entries are `service:Action`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Aws => "AWS",
        }
    }
}

/// One minting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Minting {
    /// The kind of credential it is made with.
    pub(crate) kind: Kind,
    /// Its name in `allow_minting`: AWS `service:Action` (the IAM action name).
    pub(crate) name: &'static str,
    /// For a REST-style AWS call (the action is the path, not a parameter or a target header): its method and
    /// path, `*` one segment.
    pub(crate) rest: Option<(&'static str, &'static str)>,
}

const fn aws(name: &'static str) -> Minting {
    Minting {
        kind: Kind::Aws,
        name,
        rest: None,
    }
}

const fn aws_rest(name: &'static str, method: &'static str, path: &'static str) -> Minting {
    Minting {
        kind: Kind::Aws,
        name,
        rest: Some((method, path)),
    }
}

/// Every minting call cordon knows, by kind.
pub(crate) const MINTING: &[Minting] = &[
    // STS: temporary keys.
    aws("sts:GetSessionToken"),
    aws("sts:GetFederationToken"),
    aws("sts:AssumeRole"),
    aws("sts:AssumeRoleWithSAML"),
    aws("sts:AssumeRoleWithWebIdentity"),
    aws("sts:AssumeRoot"),
    aws("sts:GetWebIdentityToken"),
    // IAM: permanent keys, passwords, service credentials, SSH keys, certificates, MFA seeds, identity providers.
    aws("iam:CreateAccessKey"),
    aws("iam:UpdateAccessKey"),
    aws("iam:CreateLoginProfile"),
    aws("iam:UpdateLoginProfile"),
    aws("iam:ChangePassword"),
    aws("iam:CreateServiceSpecificCredential"),
    aws("iam:ResetServiceSpecificCredential"),
    aws("iam:UpdateServiceSpecificCredential"),
    aws("iam:UploadSSHPublicKey"),
    aws("iam:UpdateSSHPublicKey"),
    aws("iam:UploadSigningCertificate"),
    aws("iam:UpdateSigningCertificate"),
    aws("iam:CreateVirtualMFADevice"),
    aws("iam:EnableMFADevice"),
    aws("iam:CreateOpenIDConnectProvider"),
    aws("iam:CreateSAMLProvider"),
    // Tokens and passwords of other services.
    aws("cognito-identity:GetCredentialsForIdentity"),
    aws("cognito-identity:GetOpenIdToken"),
    aws("cognito-identity:GetOpenIdTokenForDeveloperIdentity"),
    aws("cognito-idp:AdminInitiateAuth"),
    aws("cognito-idp:AdminRespondToAuthChallenge"),
    aws("cognito-idp:AdminSetUserPassword"),
    aws("ecr:GetAuthorizationToken"),
    aws("ecr-public:GetAuthorizationToken"),
    aws_rest("codeartifact:GetAuthorizationToken", "POST", "/v1/authorization-token"),
    aws_rest("sso:GetRoleCredentials", "GET", "/federation/credentials"),
    aws("redshift:GetClusterCredentials"),
    aws("redshift:GetClusterCredentialsWithIAM"),
    aws("redshift-serverless:GetCredentials"),
    aws("rds-db:connect"),
    aws("ec2:CreateKeyPair"),
    aws("ec2-instance-connect:SendSSHPublicKey"),
    aws("ec2-instance-connect:SendSerialConsoleSSHPublicKey"),
    aws("lightsail:GetInstanceAccessDetails"),
    aws("lightsail:CreateKeyPair"),
    aws("lightsail:DownloadDefaultKeyPair"),
    aws("ssm:StartSession"),
    aws_rest("iot:CreateKeysAndCertificate", "POST", "/keys-and-certificate"),
    aws_rest("apigateway:CreateApiKey", "POST", "/apikeys"),
    aws_rest("appsync:CreateApiKey", "POST", "/v1/apis/*/apikeys"),
];

/// The minting call `name` names (`service:Action` matched as IAM does, without regard to case), if any.
pub(crate) fn named(name: &str) -> Option<&'static Minting> {
    MINTING.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The names of `kind`'s minting calls, each once, for an error message.
pub(crate) fn names(kind: Kind) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for m in MINTING.iter().filter(|m| m.kind == kind) {
        if !out.contains(&m.name) {
            out.push(m.name);
        }
    }
    out
}

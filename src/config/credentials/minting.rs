//! The calls that mint credentials or hand out lasting access: through an injected credential, each one would
//! hand the sandbox a new credential it could keep and use without cordon (temporary AWS keys, a new access key,
//! a login password, a registry token, a GitHub installation token or deploy key, an OAuth2 access token), or
//! give someone outside lasting access that outlives the sandbox (a role's trust policy, a resource policy
//! naming another account, a GitHub collaborator, member or transfer). cordon refuses them unless the
//! credential's `allow_minting` names them; this table is what `allow_minting` may name, and the book's table
//! (docs/src/credentials/minting.md) lists it row by row (a test reads that table and tries every row through
//! the binary).

/// Which kind of credential a minting call is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MintingKind {
    /// AWS keys (`source.aws`), signed with SigV4.
    Aws,
    /// A credential on the GitHub REST API: a `github_app` source, a credential bound to `github.com` or a
    /// host under it, or one marked `kind: github` (GitHub Enterprise).
    GitHub,
    /// Any credential cordon injects (header, Basic, placeholder): an OAuth2 token request (a `grant_type`) or
    /// device authorization request sent with it mints a token.
    OAuth2,
}

impl MintingKind {
    /// How the kind is written in an `allow_minting` entry (`aws`'s entries are `service:Action`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            MintingKind::Aws => "AWS",
            MintingKind::GitHub => "GitHub",
            MintingKind::OAuth2 => "OAuth2",
        }
    }
}

/// One minting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Minting {
    /// The kind of credential it is made with.
    pub(crate) kind: MintingKind,
    /// Its name in `allow_minting`: AWS `service:Action` (the IAM action name), `github:group`, `oauth2:grant`.
    /// Several rows may share a name (one name allows them all).
    pub(crate) name: &'static str,
    /// For a REST-style call (the action is the path, not a parameter or a target header): its method and
    /// path, `*` one segment, `**` at the end any number of them, and `?name` a query parameter it must have.
    pub(crate) rest: Option<(&'static str, &'static str)>,
    /// For an OAuth2 token request: the `grant_type` value (`*`: any other grant).
    pub(crate) grant: Option<&'static str>,
}

const fn aws(name: &'static str) -> Minting {
    Minting {
        kind: MintingKind::Aws,
        name,
        rest: None,
        grant: None,
    }
}

const fn aws_rest(name: &'static str, method: &'static str, path: &'static str) -> Minting {
    Minting {
        kind: MintingKind::Aws,
        name,
        rest: Some((method, path)),
        grant: None,
    }
}

const fn github(name: &'static str, method: &'static str, path: &'static str) -> Minting {
    Minting {
        kind: MintingKind::GitHub,
        name,
        rest: Some((method, path)),
        grant: None,
    }
}

const fn oauth2(name: &'static str, grant: &'static str) -> Minting {
    Minting {
        kind: MintingKind::OAuth2,
        name,
        rest: None,
        grant: Some(grant),
    }
}

/// The device authorization request (RFC 8628 §3.1), known by its path: a `POST` whose path ends so.
pub(crate) const DEVICE_AUTHORIZATION: Minting = Minting {
    kind: MintingKind::OAuth2,
    name: "oauth2:device_authorization",
    rest: None,
    grant: None,
};

/// The ends of the paths of device authorization endpoints (RFC 8628's `device_authorization`, GitHub's and
/// Auth0's `device/code`, Microsoft's `devicecode`, Okta's `device/authorize`, Keycloak's `auth/device`).
pub(crate) const DEVICE_PATHS: [&str; 6] = [
    "device_authorization",
    "device/code",
    "devicecode",
    "device_code",
    "device/authorize",
    "auth/device",
];

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
    // IAM trust: who may assume a role, and which identity providers' users may.
    aws("iam:CreateRole"),
    aws("iam:UpdateAssumeRolePolicy"),
    aws("iam:UpdateSAMLProvider"),
    aws("iam:AddClientIDToOpenIDConnectProvider"),
    aws("iam:UpdateOpenIDConnectProviderThumbprint"),
    // IAM Identity Center: an account assignment for a user or group, and a token for an identity-enhanced
    // session (SSO OIDC, signed with AWS keys).
    aws("sso:CreateAccountAssignment"),
    aws_rest("sso-oauth:CreateTokenWithIAM", "POST", "/token"),
    // Resource policies, grants and shares that can name another account or everyone.
    aws_rest("s3:PutBucketPolicy", "PUT", "/**?policy"),
    aws_rest("s3:PutBucketAcl", "PUT", "/**?acl"),
    aws_rest("s3:PutObjectAcl", "PUT", "/**?acl"),
    aws("kms:PutKeyPolicy"),
    aws("kms:CreateGrant"),
    aws("secretsmanager:PutResourcePolicy"),
    aws_rest("lambda:AddPermission", "POST", "/2015-03-31/functions/*/policy"),
    aws_rest("lambda:CreateFunctionUrlConfig", "POST", "/2021-10-31/functions/*/url"),
    aws_rest("lambda:UpdateFunctionUrlConfig", "PUT", "/2021-10-31/functions/*/url"),
    aws("sqs:AddPermission"),
    aws("sns:AddPermission"),
    aws("ecr:SetRepositoryPolicy"),
    aws("ecr-public:SetRepositoryPolicy"),
    aws("ec2:ModifySnapshotAttribute"),
    aws("ec2:ModifyImageAttribute"),
    aws("rds:ModifyDBSnapshotAttribute"),
    aws("rds:ModifyDBClusterSnapshotAttribute"),
    aws_rest("ram:CreateResourceShare", "POST", "/createresourceshare"),
    aws_rest("ram:AssociateResourceShare", "POST", "/associateresourceshare"),
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
    // GitHub: installation and user tokens of Apps and OAuth apps, an App's keys from its manifest.
    github("github:app_tokens", "POST", "/app/installations/*/access_tokens"),
    github("github:oauth_tokens", "POST", "/applications/*/token"),
    github("github:oauth_tokens", "PATCH", "/applications/*/token"),
    github("github:oauth_tokens", "POST", "/applications/*/token/scoped"),
    github("github:oauth_tokens", "POST", "/login/oauth/access_token"),
    github("github:oauth_tokens", "POST", "/login/device/code"),
    github("github:app_manifests", "POST", "/app-manifests/*/conversions"),
    // Legacy OAuth authorizations (personal tokens made with a password) and Enterprise impersonation tokens.
    github("github:authorizations", "POST", "/authorizations"),
    github("github:authorizations", "PUT", "/authorizations/clients/*"),
    github("github:authorizations", "PUT", "/authorizations/clients/*/*"),
    github("github:authorizations", "POST", "/admin/users/*/authorizations"),
    // Keys that let their holder in without cordon: deploy keys, the user's SSH, GPG and signing keys.
    github("github:deploy_keys", "POST", "/repos/*/*/keys"),
    github("github:user_keys", "POST", "/user/keys"),
    github("github:user_keys", "POST", "/user/gpg_keys"),
    github("github:user_keys", "POST", "/user/ssh_signing_keys"),
    // Actions runners: registration and removal tokens, just-in-time runner configurations.
    github(
        "github:runner_tokens",
        "POST",
        "/repos/*/*/actions/runners/registration-token",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/repos/*/*/actions/runners/remove-token",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/repos/*/*/actions/runners/generate-jitconfig",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/orgs/*/actions/runners/registration-token",
    ),
    github("github:runner_tokens", "POST", "/orgs/*/actions/runners/remove-token"),
    github(
        "github:runner_tokens",
        "POST",
        "/orgs/*/actions/runners/generate-jitconfig",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/enterprises/*/actions/runners/registration-token",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/enterprises/*/actions/runners/remove-token",
    ),
    github(
        "github:runner_tokens",
        "POST",
        "/enterprises/*/actions/runners/generate-jitconfig",
    ),
    // Codespaces: a machine outside cordon that holds a GitHub token of its own.
    github("github:codespaces", "POST", "/user/codespaces"),
    github("github:codespaces", "POST", "/repos/*/*/codespaces"),
    github("github:codespaces", "POST", "/repos/*/*/pulls/*/codespaces"),
    // Fine-grained personal access tokens: approving a token's request for an organisation's resources.
    github("github:pat_grants", "POST", "/orgs/*/personal-access-token-requests"),
    github("github:pat_grants", "POST", "/orgs/*/personal-access-token-requests/*"),
    // Lasting access for someone else: a collaborator (invited), an organisation's member or invitee, a team's
    // member, a team or role given a repository or the organisation.
    github("github:collaborators", "PUT", "/repos/*/*/collaborators/*"),
    github("github:collaborators", "PATCH", "/repos/*/*/invitations/*"),
    github("github:members", "POST", "/orgs/*/invitations"),
    github("github:members", "PUT", "/orgs/*/memberships/*"),
    github("github:members", "PUT", "/orgs/*/teams/*/memberships/*"),
    github("github:members", "PUT", "/teams/*/memberships/*"),
    github("github:members", "PUT", "/teams/*/members/*"),
    github("github:members", "PUT", "/orgs/*/teams/*/repos/*/*"),
    github("github:members", "PUT", "/teams/*/repos/*/*"),
    github("github:members", "PUT", "/orgs/*/organization-roles/users/*/*"),
    github("github:members", "PUT", "/orgs/*/organization-roles/teams/*/*"),
    // A repository handed to another owner; a GitHub App's installation given a repository.
    github("github:transfers", "POST", "/repos/*/*/transfer"),
    github(
        "github:app_installations",
        "PUT",
        "/user/installations/*/repositories/*",
    ),
    // Webhooks: every later event of a repository or organisation sent to an address of someone's choosing.
    github("github:webhooks", "POST", "/repos/*/*/hooks"),
    github("github:webhooks", "POST", "/orgs/*/hooks"),
    // OAuth2 token requests (RFC 6749 §4, RFC 8693, RFC 7523, RFC 7522, RFC 8628, OpenID CIBA), by grant.
    oauth2("oauth2:client_credentials", "client_credentials"),
    oauth2("oauth2:refresh_token", "refresh_token"),
    oauth2("oauth2:password", "password"),
    oauth2("oauth2:authorization_code", "authorization_code"),
    oauth2(
        "oauth2:token_exchange",
        "urn:ietf:params:oauth:grant-type:token-exchange",
    ),
    oauth2("oauth2:jwt_bearer", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
    oauth2("oauth2:saml2_bearer", "urn:ietf:params:oauth:grant-type:saml2-bearer"),
    oauth2("oauth2:device_code", "urn:ietf:params:oauth:grant-type:device_code"),
    oauth2("oauth2:ciba", "urn:openid:params:grant-type:ciba"),
    oauth2("oauth2:other_grants", "*"),
    DEVICE_AUTHORIZATION,
];

/// The minting call `name` names (`service:Action` matched as IAM does, without regard to case), if any.
pub(crate) fn named(name: &str) -> Option<&'static Minting> {
    MINTING.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The names of `kind`'s minting calls, each once, for an error message.
pub(crate) fn names(kind: MintingKind) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for m in MINTING.iter().filter(|m| m.kind == kind) {
        if !out.contains(&m.name) {
            out.push(m.name);
        }
    }
    out
}

//! Sign-ins cordon holds (`source.oauth2_refresh`), through the `cordon` binary against a real provider that
//! rotates refresh tokens on every use (npm `oidc-provider`, `tests/servers/oauth2-refresh.mjs`): a sandbox
//! holding only its placeholder gets the access token injected, across rotations; the refresh token is kept
//! sealed in the store and never reaches the sandbox; a revoked grant makes the credential unavailable (refused,
//! `/readyz`, the metric) instead of the placeholder going on; a process killed mid-refresh loses nothing once
//! the provider's answer reached it; replicas on PostgreSQL refresh once per rotation.

mod admin;
mod replicas;
mod rig;
mod sqlite;

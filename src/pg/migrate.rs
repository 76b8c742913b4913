//! Versioned schema migrations, run by every replica at start under one advisory lock, so that replicas
//! starting at once apply each migration exactly once and none serves before the schema is complete.

/// The advisory lock key that serializes migrations (any constant no other user of the database takes).
const LOCK: i64 = 0x636f_7264_6f6e; // "cordon"

/// Each migration: version, description, SQL. Append only; never edit one that shipped.
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "sandboxes, CAs, approvals, grants, byte budgets and replicas",
        "
CREATE TABLE sandboxes (
    id      text PRIMARY KEY,
    nonce   text NOT NULL,
    owner   text NOT NULL,
    policy  text NOT NULL,
    labels  jsonb NOT NULL,
    created bigint NOT NULL,
    expires bigint NOT NULL,
    revoked bigint
);
CREATE INDEX sandboxes_expires ON sandboxes (expires);
CREATE TABLE cas (
    sandbox    text PRIMARY KEY,
    cert_pem   text NOT NULL,
    key_sealed bytea NOT NULL,
    created    bigint NOT NULL
);
CREATE TABLE approvals (
    id       text PRIMARY KEY,
    replica  text NOT NULL,
    pending  jsonb NOT NULL,
    created  bigint NOT NULL,
    decision jsonb
);
CREATE TABLE grants (
    id      text PRIMARY KEY,
    sandbox text NOT NULL,
    body    jsonb NOT NULL,
    created bigint NOT NULL
);
CREATE TABLE budgets (
    sandbox    text NOT NULL,
    slot       bigint NOT NULL,
    up_bytes   bigint NOT NULL DEFAULT 0,
    down_bytes bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (sandbox, slot)
);
CREATE TABLE replicas (
    id      text PRIMARY KEY,
    host    text NOT NULL,
    version text NOT NULL,
    started bigint NOT NULL,
    seen    bigint NOT NULL
);
",
    ),
    (
        2,
        "sandboxes known by source address",
        "ALTER TABLE sandboxes ADD COLUMN source_cidrs jsonb NOT NULL DEFAULT '[]';",
    ),
    (
        3,
        "sandboxes with their own policy",
        "ALTER TABLE sandboxes ADD COLUMN inline_policy text;",
    ),
    (
        4,
        "credential usage budgets",
        "
CREATE TABLE credential_budgets (
    key      text NOT NULL,
    slot     bigint NOT NULL,
    ends     bigint NOT NULL,
    requests bigint NOT NULL DEFAULT 0,
    bytes    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key, slot)
);
CREATE INDEX credential_budgets_ends ON credential_budgets (ends);
",
    ),
    (
        5,
        "model budgets",
        "
CREATE TABLE model_budgets (
    key      text NOT NULL,
    slot     bigint NOT NULL,
    ends     bigint NOT NULL,
    requests bigint NOT NULL DEFAULT 0,
    tokens   bigint NOT NULL DEFAULT 0,
    cost     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key, slot)
);
CREATE INDEX model_budgets_ends ON model_budgets (ends);
",
    ),
    (
        6,
        "refresh tokens held for oauth2_refresh credentials",
        "
CREATE TABLE oauth_refresh (
    credential     text PRIMARY KEY,
    generation     bigint NOT NULL,
    token          bytea NOT NULL,
    access         bytea,
    access_expires bigint,
    lease_until    bigint,
    lease_by       text,
    dead           text,
    updated        bigint NOT NULL
);
",
    ),
];

/// Bring the schema to the newest version in one transaction, refusing a database a newer cordon wrote.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object, location: &str) -> Result<(), String> {
    let fail = |e: tokio_postgres::Error| format!("cannot migrate the schema at {location}: {e}");
    let tx = client.transaction().await.map_err(fail)?;
    // SECURITY: one replica at a time; the others wait here and then find the work done.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await
        .map_err(fail)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS cordon_schema (
             version     integer PRIMARY KEY,
             description text NOT NULL,
             applied     timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(fail)?;
    let current: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM cordon_schema", &[])
        .await
        .map_err(fail)?
        .get(0);
    let newest = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
    if current > newest {
        return Err(format!(
            "the database at {location} was written by a newer cordon (schema version {current}; this one knows up \
             to {newest})"
        ));
    }
    for (version, description, sql) in MIGRATIONS.iter().filter(|m| m.0 > current) {
        tracing::info!(version, "applying schema migration: {description}");
        tx.batch_execute(sql).await.map_err(fail)?;
        tx.execute(
            "INSERT INTO cordon_schema (version, description) VALUES ($1, $2)",
            &[version, description],
        )
        .await
        .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

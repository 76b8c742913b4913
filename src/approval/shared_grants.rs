//! Standing grants shared through PostgreSQL: a grant made on the replica that held the request is written as a
//! row and announced ([`Event::Grant`]); every replica keeps the rows in its own list, and removing one on any
//! replica deletes the row and announces that too. The row carries what the API does not show (the sandbox
//! incarnation, the query as sent, the rule's fingerprint), since covering a request depends on them.

use crate::names::SandboxId;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::shared::SharedApprovals;
use super::types::{Grant, Reach};
use crate::identity::{Origin, Sandbox};
use crate::pg::DbError;
use crate::pg::listen::{Event, announce};

/// A grant as stored.
#[derive(Serialize, Deserialize)]
struct Row {
    id: String,
    /// Read with the id rule checked: a row naming no sandbox id fails to read.
    who_id: SandboxId,
    who_user: String,
    who_policy: String,
    /// The incarnation of a run-time sandbox (none: declared in the file).
    who_nonce: Option<String>,
    who_expires: Option<i64>,
    reach: Reach,
    method: String,
    host: String,
    port: u16,
    path: String,
    query: Option<String>,
    shown_query: Option<String>,
    body_sha256: Option<String>,
    policy: String,
    rule: usize,
    rule_fingerprint: String,
    /// For an MCP endpoint: the tools the grant covers (absent in rows written before).
    #[serde(default)]
    tools: Option<Vec<String>>,
    /// For a GraphQL endpoint: the operations the grant covers (absent in rows written before).
    #[serde(default)]
    operations: Option<Vec<String>>,
    by: String,
    at: String,
    approval: String,
}

impl From<&Grant> for Row {
    fn from(g: &Grant) -> Row {
        let (who_nonce, who_expires) = match &g.who.origin {
            Origin::Config => (None, None),
            Origin::Api { nonce, expires } => (Some(nonce.clone()), Some(*expires)),
        };
        Row {
            id: g.id.clone(),
            who_id: g.who.id.clone(),
            who_user: g.who.user.clone(),
            who_policy: g.who.policy.clone(),
            who_nonce,
            who_expires,
            reach: g.reach,
            method: g.method.clone(),
            host: g.host.clone(),
            port: g.port,
            path: g.path.clone(),
            query: g.query.clone(),
            shown_query: g.shown_query.clone(),
            body_sha256: g.body_sha256.clone(),
            policy: g.policy.clone(),
            rule: g.rule,
            rule_fingerprint: g.rule_fingerprint.clone(),
            tools: g.tools.clone(),
            operations: g.operations.clone(),
            by: g.by.clone(),
            at: g.at.clone(),
            approval: g.approval.clone(),
        }
    }
}

impl From<Row> for Grant {
    fn from(r: Row) -> Grant {
        let origin = match (r.who_nonce, r.who_expires) {
            (Some(nonce), Some(expires)) => Origin::Api { nonce, expires },
            _ => Origin::Config,
        };
        Grant {
            id: r.id,
            sandbox: r.who_id.clone(),
            who: Arc::new(Sandbox::new(r.who_id, r.who_user, r.who_policy, origin)),
            reach: r.reach,
            method: r.method,
            host: r.host,
            port: r.port,
            path: r.path,
            query: r.query,
            shown_query: r.shown_query,
            body_sha256: r.body_sha256,
            policy: r.policy,
            rule: r.rule,
            rule_fingerprint: r.rule_fingerprint,
            tools: r.tools,
            operations: r.operations,
            by: r.by,
            at: r.at,
            approval: r.approval,
        }
    }
}

impl SharedApprovals {
    /// Store a grant this replica made and announce it.
    pub(crate) async fn publish_grant(&self, grant: &Grant) -> Result<(), DbError> {
        let db = self.db();
        let body = serde_json::to_value(Row::from(grant)).map_err(|e| db.corrupt("grant", e))?;
        let what = "storing a grant";
        let mut client = db.client().await?;
        let tx = db.outcome(what, client.transaction().await)?;
        db.outcome(
            what,
            tx.execute(
                "INSERT INTO grants (id, sandbox, body, created) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                &[&grant.id, &grant.sandbox.as_str(), &body, &crate::pg::now()],
            )
            .await,
        )?;
        db.outcome(what, announce(&tx, &Event::Grant(grant.id.clone())).await)?;
        db.outcome(what, tx.commit().await)
    }

    /// Delete a grant and announce it; false if there was none.
    pub(crate) async fn remove_grant(&self, id: &str) -> Result<bool, DbError> {
        let db = self.db();
        let what = "removing a grant";
        let mut client = db.client().await?;
        let tx = db.outcome(what, client.transaction().await)?;
        let n = db.outcome(what, tx.execute("DELETE FROM grants WHERE id = $1", &[&id]).await)?;
        db.outcome(what, announce(&tx, &Event::Grant(id.to_owned())).await)?;
        db.outcome(what, tx.commit().await)?;
        Ok(n > 0)
    }

    /// The grant `id`, if it is stored.
    pub(crate) async fn grant(&self, id: &str) -> Result<Option<Grant>, DbError> {
        let db = self.db();
        let client = db.client().await?;
        let r = client.query_opt("SELECT body FROM grants WHERE id = $1", &[&id]).await;
        match db.outcome("reading a grant", r)? {
            None => Ok(None),
            Some(row) => serde_json::from_value::<Row>(row.get(0))
                .map(|r| Some(r.into()))
                .map_err(|e| db.corrupt("grant", e)),
        }
    }

    /// Every stored grant, oldest first.
    pub(crate) async fn grants(&self) -> Result<Vec<Grant>, DbError> {
        let db = self.db();
        let client = db.client().await?;
        let r = client.query("SELECT body FROM grants ORDER BY created, id", &[]).await;
        db.outcome("listing grants", r)?
            .iter()
            .map(|row| {
                serde_json::from_value::<Row>(row.get(0))
                    .map(Grant::from)
                    .map_err(|e| db.corrupt("grant", e))
            })
            .collect()
    }
}

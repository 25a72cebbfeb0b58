//! SQL for OAuth: clients, pending consents, authorization codes, grants and
//! tokens. Secrets arrive here already hashed (`access::oauth::secret`).

use sqlx::AssertSqlSafe;

use super::{Store, Tx};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ClientRow {
    pub id: String,
    pub kind: String,
    pub name: String,
    /// JSON array of strings.
    pub redirect_uris: String,
    pub auth_method: String,
    pub secret_hash: Option<String>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub registered_from: Option<String>,
}

const CLIENT: &str = "id, kind, name, redirect_uris, auth_method, secret_hash, created_at, expires_at, last_used_at, registered_from";

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RequestRow {
    pub id: String,
    pub csrf_hash: String,
    pub pair_hash: Option<String>,
    pub approved_key_id: Option<String>,
    pub approved_email: Option<String>,
    pub client_id: String,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub challenge: String,
    pub resource: String,
    pub scopes: String,
    pub created_at: i64,
    pub expires_at: i64,
}

const REQUEST: &str = "id, csrf_hash, pair_hash, approved_key_id, approved_email, client_id, redirect_uri, state, challenge, resource, scopes, created_at, expires_at";

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CodeRow {
    pub hash: String,
    pub grant_id: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub resource: String,
    pub scopes: String,
    /// Exactly one of `key_id` and `user_email` (see `access::oauth::Principal`).
    pub key_id: Option<String>,
    pub user_email: Option<String>,
    pub created_from: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

const CODE: &str = "hash, grant_id, client_id, redirect_uri, challenge, resource, scopes, key_id, user_email, created_from, created_at, expires_at, used_at";

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GrantRow {
    pub id: String,
    pub client_id: String,
    /// Exactly one of `key_id` and `user_email` (see `access::oauth::Principal`).
    pub key_id: Option<String>,
    pub user_email: Option<String>,
    pub scopes: String,
    pub resource: String,
    pub redirect_uri: String,
    pub created_at: i64,
    pub created_from: Option<String>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub revoked_reason: Option<String>,
}

const GRANT: &str = "id, client_id, key_id, user_email, scopes, resource, redirect_uri, created_at, created_from, last_used_at, revoked_at, revoked_reason";

/// A token with the grant it belongs to, as one read finds them.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenGrantRow {
    pub grant_id: String,
    pub kind: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub client_id: String,
    pub key_id: Option<String>,
    pub user_email: Option<String>,
    pub scopes: String,
    pub resource: String,
    pub revoked_at: Option<i64>,
}

fn fail(context: &'static str) -> impl Fn(sqlx::Error) -> Error {
    move |e| Error::storage(context, e)
}

pub async fn insert_client(tx: &mut Tx, c: &ClientRow) -> Result<()> {
    write_client(tx, c, "", "registering an OAuth client").await
}

/// Caches a metadata document's client, or refreshes what a fetched
/// document says over the cached one (same id), keeping when it was first
/// cached and last used: a refetch is no new client, and one marked unused
/// would be purged with its users' grants still live.
pub async fn upsert_document_client(tx: &mut Tx, c: &ClientRow) -> Result<()> {
    write_client(
        tx,
        c,
        " ON CONFLICT (id) DO UPDATE SET name = excluded.name,
             redirect_uris = excluded.redirect_uris, auth_method = excluded.auth_method,
             secret_hash = excluded.secret_hash, expires_at = excluded.expires_at
         WHERE oauth_clients.kind = 'document'",
        "caching a client metadata document",
    )
    .await
}

/// Inserts `c`, with `on_conflict` after the values.
async fn write_client(
    tx: &mut Tx,
    c: &ClientRow,
    on_conflict: &str,
    context: &'static str,
) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO oauth_clients ({CLIENT}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10){on_conflict}"
    )))
    .bind(&c.id)
    .bind(&c.kind)
    .bind(&c.name)
    .bind(&c.redirect_uris)
    .bind(&c.auth_method)
    .bind(&c.secret_hash)
    .bind(c.created_at)
    .bind(c.expires_at)
    .bind(c.last_used_at)
    .bind(&c.registered_from)
    .execute(&mut **tx)
    .await
    .map_err(fail(context))?;
    Ok(())
}

pub async fn get_client(store: &Store, id: &str) -> Result<Option<ClientRow>> {
    let sql = &format!("SELECT {CLIENT} FROM oauth_clients WHERE id = $1");
    store
        .read("looking up an OAuth client", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(id)
                .fetch_optional(&pool)
                .await
        })
        .await
}

/// Live clients of `kind` (`registered`, `document`) no grant has used
/// yet: what a flood would fill.
pub async fn count_unused(tx: &mut Tx, kind: &str, now: i64) -> Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM oauth_clients WHERE kind = $1 AND last_used_at IS NULL AND expires_at > $2",
    )
    .bind(kind)
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(fail("counting OAuth clients"))
}

/// Removes the `n` oldest clients of `kind` no grant has used (and none
/// live: see [`delete_lapsed_unused`]).
pub async fn delete_oldest_unused(tx: &mut Tx, kind: &str, n: i64) -> Result<u64> {
    let done = sqlx::query(
        "DELETE FROM oauth_clients WHERE id IN (SELECT c.id FROM oauth_clients c
         WHERE c.kind = $1 AND c.last_used_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM oauth_grants g
                           WHERE g.client_id = c.id AND g.revoked_at IS NULL)
         ORDER BY c.created_at, c.id LIMIT $2)",
    )
    .bind(kind)
    .bind(n)
    .execute(&mut **tx)
    .await
    .map_err(fail("removing the oldest unused OAuth clients"))?;
    Ok(done.rows_affected())
}

/// Removes clients of `kind` (`registered`, `document`) that lapsed with
/// no grant made (and, whatever their mark says, none live).
pub async fn delete_lapsed_unused(tx: &mut Tx, kind: &str, now: i64) -> Result<u64> {
    let done = sqlx::query(
        "DELETE FROM oauth_clients WHERE kind = $1 AND last_used_at IS NULL AND expires_at <= $2
           AND NOT EXISTS (SELECT 1 FROM oauth_grants g
                           WHERE g.client_id = oauth_clients.id AND g.revoked_at IS NULL)",
    )
    .bind(kind)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(fail("removing lapsed OAuth clients"))?;
    Ok(done.rows_affected())
}

/// Marks a client used: a used registration no longer lapses.
pub async fn touch_client(tx: &mut Tx, id: &str, at: i64) -> Result<()> {
    sqlx::query("UPDATE oauth_clients SET last_used_at = $1, expires_at = CASE WHEN kind = 'registered' THEN NULL ELSE expires_at END WHERE id = $2")
        .bind(at)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(fail("recording OAuth client use"))?;
    Ok(())
}

pub async fn insert_request(tx: &mut Tx, r: &RequestRow) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO oauth_requests ({REQUEST}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    )))
    .bind(&r.id)
    .bind(&r.csrf_hash)
    .bind(&r.pair_hash)
    .bind(&r.approved_key_id)
    .bind(&r.approved_email)
    .bind(&r.client_id)
    .bind(&r.redirect_uri)
    .bind(&r.state)
    .bind(&r.challenge)
    .bind(&r.resource)
    .bind(&r.scopes)
    .bind(r.created_at)
    .bind(r.expires_at)
    .execute(&mut **tx)
    .await
    .map_err(fail("storing an authorization request"))?;
    // Old requests go as new ones come: nothing else sweeps them.
    sqlx::query("DELETE FROM oauth_requests WHERE expires_at <= $1")
        .bind(r.created_at)
        .execute(&mut **tx)
        .await
        .map_err(fail("removing expired authorization requests"))?;
    Ok(())
}

/// How many authorization requests are stored (pending or expired).
pub async fn count_requests(store: &Store) -> Result<i64> {
    store
        .read("counting authorization requests", |pool| async move {
            sqlx::query_scalar("SELECT COUNT(*) FROM oauth_requests")
                .fetch_one(&pool)
                .await
        })
        .await
}

/// Past `max` pending requests, removes the oldest that nobody has begun
/// to answer (no pairing code, no approval), so that a flood from many
/// networks pushes out its own requests instead of growing the table.
pub async fn bound_requests(tx: &mut Tx, max: i64) -> Result<u64> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_requests")
        .fetch_one(&mut **tx)
        .await
        .map_err(fail("counting authorization requests"))?;
    if n <= max {
        return Ok(0);
    }
    let done = sqlx::query(
        "DELETE FROM oauth_requests WHERE id IN (SELECT id FROM oauth_requests
         WHERE pair_hash IS NULL AND approved_key_id IS NULL AND approved_email IS NULL
         ORDER BY created_at, id LIMIT $1)",
    )
    .bind(n - max)
    .execute(&mut **tx)
    .await
    .map_err(fail("removing the oldest authorization requests"))?;
    Ok(done.rows_affected())
}

/// Takes a pending request out (it is answered once, whatever the answer).
pub async fn take_request(tx: &mut Tx, id: &str) -> Result<Option<RequestRow>> {
    let row: Option<RequestRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {REQUEST} FROM oauth_requests WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(fail("reading an authorization request"))?;
    if row.is_some() {
        sqlx::query("DELETE FROM oauth_requests WHERE id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(fail("answering an authorization request"))?;
    }
    Ok(row)
}

pub async fn insert_code(tx: &mut Tx, c: &CodeRow) -> Result<()> {
    // Codes are kept a day past their expiry, so a late replay is still
    // recognised (and revokes its grant); then they go.
    sqlx::query("DELETE FROM oauth_codes WHERE expires_at <= $1")
        .bind(c.created_at - 86_400_000)
        .execute(&mut **tx)
        .await
        .map_err(fail("removing old authorization codes"))?;
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO oauth_codes ({CODE}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    )))
    .bind(&c.hash)
    .bind(&c.grant_id)
    .bind(&c.client_id)
    .bind(&c.redirect_uri)
    .bind(&c.challenge)
    .bind(&c.resource)
    .bind(&c.scopes)
    .bind(&c.key_id)
    .bind(&c.user_email)
    .bind(&c.created_from)
    .bind(c.created_at)
    .bind(c.expires_at)
    .bind(c.used_at)
    .execute(&mut **tx)
    .await
    .map_err(fail("storing an authorization code"))?;
    Ok(())
}

pub async fn get_code(tx: &mut Tx, hash: &str) -> Result<Option<CodeRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {CODE} FROM oauth_codes WHERE hash = $1"
    )))
    .bind(hash)
    .fetch_optional(&mut **tx)
    .await
    .map_err(fail("reading an authorization code"))
}

/// Marks a code used; false when it already was (a replay).
pub async fn use_code(tx: &mut Tx, hash: &str, at: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE oauth_codes SET used_at = $1 WHERE hash = $2 AND used_at IS NULL")
            .bind(at)
            .bind(hash)
            .execute(&mut **tx)
            .await
            .map_err(fail("using an authorization code"))?;
    Ok(done.rows_affected() == 1)
}

pub async fn insert_grant(tx: &mut Tx, g: &GrantRow) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO oauth_grants ({GRANT}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    )))
    .bind(&g.id)
    .bind(&g.client_id)
    .bind(&g.key_id)
    .bind(&g.user_email)
    .bind(&g.scopes)
    .bind(&g.resource)
    .bind(&g.redirect_uri)
    .bind(g.created_at)
    .bind(&g.created_from)
    .bind(g.last_used_at)
    .bind(g.revoked_at)
    .bind(&g.revoked_reason)
    .execute(&mut **tx)
    .await
    .map_err(fail("storing an OAuth grant"))?;
    Ok(())
}

pub async fn get_grant(tx: &mut Tx, id: &str) -> Result<Option<GrantRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {GRANT} FROM oauth_grants WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(fail("reading an OAuth grant"))
}

pub async fn list_grants(store: &Store) -> Result<Vec<GrantRow>> {
    let sql = &format!("SELECT {GRANT} FROM oauth_grants ORDER BY created_at, id");
    store
        .read("listing OAuth grants", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .fetch_all(&pool)
                .await
        })
        .await
}

/// Revokes a grant and deletes its tokens; false when it was unknown or
/// already revoked.
pub async fn revoke_grant(tx: &mut Tx, id: &str, at: i64, reason: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_grants SET revoked_at = $1, revoked_reason = $2 WHERE id = $3 AND revoked_at IS NULL",
    )
    .bind(at)
    .bind(reason)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(fail("revoking an OAuth grant"))?;
    sqlx::query("DELETE FROM oauth_tokens WHERE grant_id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(fail("revoking an OAuth grant's tokens"))?;
    Ok(done.rows_affected() == 1)
}

/// Ends every OAuth authorization acting as the user whose email is
/// `email` (compared as stored users are: trimmed, lowercased): grants
/// revoked with their tokens, codes not yet exchanged and pairings approved
/// as the user deleted. Returns the grants revoked. Disabling or removing a
/// user runs it: each of these names its user by email and is re-read on
/// use, so one left standing acted again for whoever got the email next,
/// or for the user enabled again, without anyone consenting anew.
pub async fn end_user_authorizations(
    tx: &mut Tx,
    email: &str,
    at: i64,
    reason: &str,
) -> Result<Vec<String>> {
    let norm = |e: &str| e.trim().to_lowercase();
    let wanted = norm(email);
    let of = |rows: Vec<(String, String)>| -> Vec<String> {
        rows.into_iter()
            .filter(|(_, e)| norm(e) == wanted)
            .map(|(id, _)| id)
            .collect()
    };
    let grants: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, user_email FROM oauth_grants WHERE user_email IS NOT NULL AND revoked_at IS NULL",
    )
    .fetch_all(&mut **tx)
    .await
    .map_err(fail("reading the grants that act as users"))?;
    let mut ended = Vec::new();
    for id in of(grants) {
        if revoke_grant(tx, &id, at, reason).await? {
            ended.push(id);
        }
    }
    // Codes not yet exchanged, and pairings approved as the user.
    for (read, delete) in [
        (
            "SELECT hash, user_email FROM oauth_codes WHERE user_email IS NOT NULL",
            "DELETE FROM oauth_codes WHERE hash = $1",
        ),
        (
            "SELECT id, approved_email FROM oauth_requests WHERE approved_email IS NOT NULL",
            "DELETE FROM oauth_requests WHERE id = $1",
        ),
    ] {
        let rows: Vec<(String, String)> = sqlx::query_as(read)
            .fetch_all(&mut **tx)
            .await
            .map_err(fail("reading what a user authorized"))?;
        for id in of(rows) {
            sqlx::query(delete)
                .bind(id)
                .execute(&mut **tx)
                .await
                .map_err(fail("ending what a user authorized"))?;
        }
    }
    Ok(ended)
}

pub async fn insert_token(
    tx: &mut Tx,
    hash: &str,
    grant_id: &str,
    kind: &str,
    created_at: i64,
    expires_at: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO oauth_tokens (hash, grant_id, kind, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(hash)
    .bind(grant_id)
    .bind(kind)
    .bind(created_at)
    .bind(expires_at)
    .execute(&mut **tx)
    .await
    .map_err(fail("storing an OAuth token"))?;
    Ok(())
}

const TOKEN_GRANT: &str = "SELECT t.grant_id, t.kind, t.expires_at, t.used_at, g.client_id, g.key_id, g.user_email, g.scopes, g.resource, g.revoked_at FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.hash = $1";

/// A token and its grant, read outside a transaction (every `/mcp` request).
pub async fn find_token(store: &Store, hash: &str) -> Result<Option<TokenGrantRow>> {
    store
        .read("checking an OAuth token", |pool| async move {
            sqlx::query_as(TOKEN_GRANT)
                .bind(hash)
                .fetch_optional(&pool)
                .await
        })
        .await
}

pub async fn find_token_in(tx: &mut Tx, hash: &str) -> Result<Option<TokenGrantRow>> {
    sqlx::query_as(TOKEN_GRANT)
        .bind(hash)
        .fetch_optional(&mut **tx)
        .await
        .map_err(fail("checking an OAuth token"))
}

/// Marks a refresh token rotated; false when it already was (a replay).
pub async fn use_token(tx: &mut Tx, hash: &str, at: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE oauth_tokens SET used_at = $1 WHERE hash = $2 AND used_at IS NULL")
            .bind(at)
            .bind(hash)
            .execute(&mut **tx)
            .await
            .map_err(fail("rotating a refresh token"))?;
    Ok(done.rows_affected() == 1)
}

/// Records grant use, at most once a minute, outside any transaction.
pub async fn touch_grant(store: &Store, id: &str, at: i64) -> Result<()> {
    let _gate = store.write_gate().await;
    sqlx::query("UPDATE oauth_grants SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)")
        .bind(at)
        .bind(id)
        .bind(at - 60_000)
        .execute(store.writer())
        .await
        .map_err(|e| store.error("recording OAuth grant use", e))?;
    Ok(())
}

/// A pending request, left in place.
pub async fn get_request(store: &Store, id: &str) -> Result<Option<RequestRow>> {
    request_where(store, "id", id).await
}

/// The authorization request whose `column` is `value`, outside a transaction.
async fn request_where(
    store: &Store,
    column: &'static str,
    value: &str,
) -> Result<Option<RequestRow>> {
    let sql = &format!("SELECT {REQUEST} FROM oauth_requests WHERE {column} = $1");
    store
        .read("reading an authorization request", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(value)
                .fetch_optional(&pool)
                .await
        })
        .await
}

/// Gives a pending request a pairing code (its hash).
pub async fn set_pairing(tx: &mut Tx, id: &str, pair_hash: &str) -> Result<bool> {
    let done = sqlx::query("UPDATE oauth_requests SET pair_hash = $1 WHERE id = $2")
        .bind(pair_hash)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(fail("pairing an authorization request"))?;
    Ok(done.rows_affected() == 1)
}

/// [`request_by_pairing`] outside a transaction, for a look that changes
/// nothing.
pub async fn find_by_pairing(store: &Store, pair_hash: &str) -> Result<Option<RequestRow>> {
    request_where(store, "pair_hash", pair_hash).await
}

/// The pending request a pairing code names.
pub async fn request_by_pairing(tx: &mut Tx, pair_hash: &str) -> Result<Option<RequestRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {REQUEST} FROM oauth_requests WHERE pair_hash = $1"
    )))
    .bind(pair_hash)
    .fetch_optional(&mut **tx)
    .await
    .map_err(fail("finding a pairing code"))
}

/// Records whom an admin approved a paired request as (exactly one of a
/// key and a user's email); false when it was already approved.
pub async fn approve_pairing(
    tx: &mut Tx,
    id: &str,
    key_id: Option<&str>,
    email: Option<&str>,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_requests SET approved_key_id = $1, approved_email = $2 WHERE id = $3 AND approved_key_id IS NULL AND approved_email IS NULL",
    )
    .bind(key_id)
    .bind(email)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(fail("approving a pairing code"))?;
    Ok(done.rows_affected() == 1)
}

/// Removes a grant's tokens that are past their expiry.
pub async fn delete_expired_tokens(tx: &mut Tx, grant_id: &str, now: i64) -> Result<()> {
    sqlx::query("DELETE FROM oauth_tokens WHERE grant_id = $1 AND expires_at <= $2")
        .bind(grant_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(fail("removing expired OAuth tokens"))?;
    Ok(())
}

/// A grant's `revoked_at`: `None` when there is no such grant.
pub async fn grant_revoked_at(store: &Store, id: &str) -> Result<Option<Option<i64>>> {
    store
        .read("checking an OAuth grant", |pool| async move {
            sqlx::query_scalar("SELECT revoked_at FROM oauth_grants WHERE id = $1")
                .bind(id)
                .fetch_optional(&pool)
                .await
        })
        .await
}

//! Content entries, permission-checked: the operations the MCP tools and the UI
//! call. Each write is one transaction with its audit entry; the full-text index
//! and redirects change in that same transaction.
//!
//! The edit model (see `access::permissions`): authors edit their own entries,
//! editors and admins all of them; an edit of a published entry is kept as its
//! pending revision (the published text stays live) until it is published.
//!
//! A key's content scope ([`crate::access::restrictions::ContentScope`]) is
//! applied here, for every caller: a slug outside its patterns is refused
//! on the name alone, before anything is looked up; an entry reached that is
//! outside the scope (through a redirect, or by its status) reads as absent;
//! lists and searches filter in their SQL, so limits, offsets and ranking
//! never count an entry outside it; a published-only scope hides pending
//! revisions (they are unpublished text).

use crate::access::actor::Actor;
use crate::access::audit::AuditAction;
use crate::access::audit::{self, AuditEntry};
use crate::access::permissions::Action;
use crate::access::restrictions::{ContentScope, StatusScope};
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::content::{self as sql, Entry, NewEntry, Status, Visible};
use crate::store::content_pending::{self as pending_sql, Pending};
use crate::time::now_ms;

pub use crate::store::content::Entry as ContentEntry;
pub use crate::store::content_pending::Pending as PendingRevision;

/// Slugs are lowercase ASCII letters, digits and single dashes, 1–100 long.
pub fn check_slug(slug: &str) -> Result<()> {
    let ok = !slug.is_empty()
        && slug.len() <= 100
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--");
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::SLUG_INVALID,
            format!("{slug:?} is not a valid slug"),
            "use lowercase letters, digits and dashes, e.g. my-first-post",
        ))
    }
}

fn not_found(slug: &str) -> Error {
    Error::new(
        codes::CONTENT_NOT_FOUND,
        format!("no entry with slug {slug:?}"),
    )
    .hint("content_list shows the slugs you can see")
}

/// Refuses a slug outside the actor's scope patterns: decided on the name
/// alone, so the refusal says nothing about what exists.
fn check_named(actor: &Actor, slug: &str) -> Result<()> {
    match actor.content_scope() {
        Some(scope) if !scope.names(slug) => Err(scope.refuse_slug(slug)),
        _ => Ok(()),
    }
}

/// Whether `actor`'s content scope (if any) admits acting on `slug`, stored
/// as `entry` now: the approval step holds only what a write would not
/// refuse for its scope anyway, so nothing outside it is shown or asked.
pub fn scope_admits(actor: &Actor, slug: &str, entry: Option<&Entry>) -> bool {
    check_named(actor, slug).is_ok() && entry.is_none_or(|e| in_scope(actor, e))
}

/// Refuses a rename of `slug` to `new` outside the actor's scope: a new
/// slug outside it by name, or any rename by a scope blind to drafts (the
/// new slug may be a draft's, and failing there while a free slug works
/// would tell the key which drafts exist).
pub fn check_rename(actor: &Actor, slug: &str, new: &str) -> Result<()> {
    check_named(actor, new)?;
    match actor.content_scope() {
        Some(scope) if scope.status == StatusScope::Published && new != slug => {
            Err(scope.refuse_status(new, "renames (the new slug may be a hidden draft's) are"))
        }
        _ => Ok(()),
    }
}

/// Whether the actor's scope (if any) admits an entry as stored.
fn in_scope(actor: &Actor, entry: &Entry) -> bool {
    actor
        .content_scope()
        .is_none_or(|s| s.admits(&entry.slug, &entry.status))
}

/// Whether the actor may see pending revisions: draft readers, unless their
/// scope is published entries only.
fn sees_pending(actor: &Actor) -> bool {
    actor.may(Action::ContentReadDraft)
        && actor
            .content_scope()
            .is_none_or(|s| s.status != StatusScope::Published)
}

/// What lists and searches may return to `actor`; `None`: nothing at all.
fn visible<'a>(actor: &Actor, likes: &'a [String]) -> Option<Visible<'a>> {
    let drafts = actor.may(Action::ContentReadDraft);
    let scope = actor.content_scope().map_or(StatusScope::Any, |s| s.status);
    let status = match (drafts, scope) {
        (false, StatusScope::Draft) => return None,
        (false, _) | (true, StatusScope::Published) => Some(Status::Published),
        (true, StatusScope::Draft) => Some(Status::Draft),
        (true, StatusScope::Any) => None,
    };
    Some(Visible {
        status,
        slug_like: likes,
    })
}

fn likes(scope: Option<&ContentScope>) -> Vec<String> {
    scope.map_or_else(Vec::new, |s| s.slugs.iter().map(|p| p.to_like()).collect())
}

/// Reads an entry (following redirects) and, for those who may read drafts,
/// its pending revision. Drafts are invisible without the right; an entry
/// outside the actor's scope is invisible, whichever slug reached it.
pub async fn read(store: &Store, actor: &Actor, slug: &str) -> Result<(Entry, Option<Pending>)> {
    actor.check(Action::ContentReadPublished)?;
    check_named(actor, slug)?;
    let (entry, pending) = sql::by_slug(store, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    visible_entry(actor, slug, entry, pending)
}

/// [`read`] for a reader shown display names instead of author labels: also
/// the author's display name as the entry's own statement joined it, when
/// it did (`store::content::by_slug_named`), so the call reads once.
#[allow(clippy::type_complexity)]
pub async fn read_named(
    store: &Store,
    actor: &Actor,
    slug: &str,
) -> Result<(Entry, Option<Pending>, Option<Option<String>>)> {
    actor.check(Action::ContentReadPublished)?;
    check_named(actor, slug)?;
    let (entry, pending, name) = sql::by_slug_named(store, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    let (entry, pending) = visible_entry(actor, slug, entry, pending)?;
    Ok((entry, pending, name))
}

/// The checks of [`read`] after the entry was found.
fn visible_entry(
    actor: &Actor,
    slug: &str,
    entry: Entry,
    pending: Option<Pending>,
) -> Result<(Entry, Option<Pending>)> {
    let drafts = actor.may(Action::ContentReadDraft);
    if entry.status != "published" && !drafts {
        return Err(not_found(slug));
    }
    if !in_scope(actor, &entry) {
        return Err(not_found(slug));
    }
    Ok((entry, pending.filter(|_| sees_pending(actor))))
}

pub async fn list(store: &Store, actor: &Actor, limit: i64, offset: i64) -> Result<Vec<Entry>> {
    actor.check(Action::ContentReadPublished)?;
    let likes = likes(actor.content_scope());
    let Some(visible) = visible(actor, &likes) else {
        return Ok(Vec::new());
    };
    sql::list(store, visible, limit.clamp(1, 500), offset.max(0)).await
}

/// Refuses text no database column or index can hold: a NUL character
/// (PostgreSQL rejects it, SQLite's full-text index truncates at it). A tool
/// call meets the same rule earlier, in its arguments' check; this one holds
/// for every caller of the library.
pub fn check_no_nul(field: &str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("the {field} contains a NUL character"),
            format!("remove the NUL (\\u0000) characters from the {field}"),
        ));
    }
    Ok(())
}

pub async fn search(store: &Store, actor: &Actor, text: &str, limit: i64) -> Result<Vec<Entry>> {
    actor.check(Action::ContentReadPublished)?;
    check_no_nul("search query", text)?;
    let likes = likes(actor.content_scope());
    let Some(visible) = visible(actor, &likes) else {
        return Ok(Vec::new());
    };
    sql::search(store, text, visible, limit.clamp(1, 100)).await
}

/// What a draft write asks for.
#[derive(Debug, Clone)]
pub struct DraftWrite<'a> {
    pub slug: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    /// Rename the entry; the old slug keeps working as a redirect.
    pub new_slug: Option<&'a str>,
}

/// An entry's pending revision, for actors who may read drafts (after a
/// write; [`read`] returns it with the entry).
pub async fn pending(store: &Store, actor: &Actor, entry: &Entry) -> Result<Option<Pending>> {
    if !sees_pending(actor) {
        return Ok(None);
    }
    pending_sql::get(store, entry.id).await
}

/// Refuses a write to an existing entry outside the actor's scope. Its slug
/// was already checked by name, so only its status can be out: a published
/// entry (public anyway) is refused as such; a draft the actor cannot see
/// reads as absent, and creating or editing one gets the same refusal
/// whether it exists or not ([`drafts_refused`]).
fn check_scoped_write(actor: &Actor, entry: &Entry, creating: bool) -> Result<()> {
    match actor.content_scope() {
        Some(scope) if !scope.admits(&entry.slug, &entry.status) => {
            Err(if entry.status == "published" {
                scope.refuse_status(&entry.slug, "published entries are")
            } else if creating {
                drafts_refused(scope, &entry.slug)
            } else {
                not_found(&entry.slug)
            })
        }
        _ => Ok(()),
    }
}

fn drafts_refused(scope: &ContentScope, slug: &str) -> Error {
    scope.refuse_status(slug, "drafts (new entries start as drafts) are")
}

/// Refuses an edit of someone else's entry without `content_edit_others`.
fn check_owner(actor: &Actor, entry: &Entry) -> Result<()> {
    if entry.author == actor.label() || actor.may(Action::ContentEditOthers) {
        return Ok(());
    }
    Err(
        actor
            .check(Action::ContentEditOthers)
            .unwrap_err()
            .hint(format!(
                "{:?} was written by someone else: authors edit their own entries; ask an editor, or write a new entry",
                entry.slug
            )),
    )
}

/// Creates a draft, or edits an entry: a draft is changed in place, a
/// published entry gets a pending revision and stays live as it was.
pub async fn write_draft(store: &Store, actor: &Actor, w: &DraftWrite<'_>) -> Result<Entry> {
    actor.check(Action::ContentWriteDraft)?;
    // An entry at a slug no write could make (imported before imports
    // checked slugs) may be renamed away from it, and nothing else.
    let valid = check_slug(w.slug);
    let renaming_away = valid.is_err() && w.new_slug.is_some_and(|n| n != w.slug);
    if !renaming_away {
        valid.clone()?;
    }
    if let Some(new) = w.new_slug {
        check_slug(new)?;
    }
    check_named(actor, w.slug)?;
    if let Some(new) = w.new_slug {
        check_rename(actor, w.slug, new)?;
    }
    check_no_nul("title", w.title)?;
    check_no_nul("body", w.body)?;
    if w.title.trim().is_empty() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "the title is empty",
            "give the entry a title",
        ));
    }
    let now = now_ms();
    let who = actor.label();
    let mut tx = store.begin_write().await?;
    let mut revised = false;
    let existing = sql::by_slug_in(&mut tx, w.slug).await?;
    still_as_approved(&mut tx, existing.as_ref()).await?;
    let (id, created) = match existing {
        Some(existing) => {
            check_scoped_write(actor, &existing, true)?;
            check_owner(actor, &existing)?;
            if existing.status == "published" {
                if w.new_slug.is_some_and(|n| n != w.slug) {
                    actor.check(Action::ContentPublish).map_err(|e| {
                        e.hint("renaming a published entry changes its live address; ask an editor")
                    })?;
                }
                // A key that may not read pending edits (published only)
                // may not replace one it never saw, someone else's work.
                if let Some(scope) = actor.content_scope()
                    && !scope.status.admits("draft")
                    && pending_sql::get_in(&mut tx, existing.id)
                        .await?
                        .is_some_and(|p| p.author != who)
                {
                    return Err(scope.refuse_status(
                        w.slug,
                        "someone else's pending edit of this entry (unpublished, so unreadable to this key) is",
                    ));
                }
                pending_sql::put(&mut tx, existing.id, w.title, w.body, &who, now).await?;
                revised = true;
            } else {
                sql::update_draft(&mut tx, existing.id, w.title, w.body, now).await?;
            }
            (existing.id, false)
        }
        None => {
            valid?;
            if let Some(scope) = actor.content_scope()
                && !scope.status.admits("draft")
            {
                return Err(drafts_refused(scope, w.slug));
            }
            let id = sql::insert(
                &mut tx,
                &NewEntry {
                    slug: w.slug,
                    title: w.title,
                    body: w.body,
                    author: &who,
                    status: "draft",
                },
                now,
            )
            .await?;
            (id, true)
        }
    };
    let final_slug = match w.new_slug {
        Some(new) if new != w.slug => {
            sql::rename(&mut tx, id, w.slug, new, now).await?;
            new
        }
        _ => w.slug,
    };
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &who,
            action: if created {
                AuditAction::ContentCreate
            } else if revised {
                AuditAction::ContentRevise
            } else {
                AuditAction::ContentUpdate
            },
            subject: final_slug,
            detail: serde_json::json!({"renamed_from": (final_slug != w.slug).then_some(w.slug)}),
        },
    )
    .await?;
    let entry = sql::by_slug_in(&mut tx, final_slug)
        .await?
        .ok_or_else(|| not_found(final_slug))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a draft", e))?;
    Ok(entry)
}

tokio::task_local! {
    /// The digest ([`base_digest`]) of the entry an approved call was shown
    /// (or an unheld rename of a draft read), set by the server's call path
    /// (`mcp::server::handler`) around the call the approval step let run.
    /// Each write checks it in its own transaction, so an edit landing after
    /// the approval step is refused, not published. Unset: nothing to check.
    pub static APPROVED_BASE: String;
}

/// The digest of an entry as an approval shows it (none: no entry).
pub fn base_digest(entry: Option<(&Entry, Option<&Pending>)>) -> String {
    let shape = entry.map(|(e, p)| {
        serde_json::json!({
            "slug": e.slug, "title": e.title, "body": e.body, "status": e.status,
            "updated_at": e.updated_at,
            "pending": p.map(|p| serde_json::json!({"title": p.title, "body": p.body, "updated_at": p.updated_at})),
        })
    });
    crate::json::canonical_sha256(&shape.unwrap_or(serde_json::Value::Null))
}

/// Refuses a write under an approval ([`APPROVED_BASE`]) when the entry is
/// no longer what the approval was shown.
async fn still_as_approved(tx: &mut crate::store::Tx, entry: Option<&Entry>) -> Result<()> {
    let Ok(approved) = APPROVED_BASE.try_with(String::clone) else {
        return Ok(());
    };
    let pending = match entry {
        Some(e) => pending_sql::get_in(tx, e.id).await?,
        None => None,
    };
    if base_digest(entry.map(|e| (e, pending.as_ref()))) == approved {
        return Ok(());
    }
    Err(Error::new(
        codes::APPROVAL_STALE,
        "the entry changed after the call passed the approval step",
    )
    .hint("what was approved is no longer what would run; nothing was run: call again to be asked again"))
}

pub async fn publish(store: &Store, actor: &Actor, slug: &str) -> Result<Entry> {
    actor.check(Action::ContentPublish)?;
    let mut tx = store.begin_write().await?;
    check_named(actor, slug)?;
    let entry = sql::by_slug_in(&mut tx, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    check_scoped_write(actor, &entry, false)?;
    still_as_approved(&mut tx, Some(&entry)).await?;
    if let Some(scope) = actor.content_scope()
        && !scope.status.admits("published")
    {
        return Err(scope.refuse_status(slug, "published entries are"));
    }
    let now = now_ms();
    // A pending revision is what gets published. One this actor cannot read
    // (a published-only scope) goes live only where someone was shown it,
    // under an approval: else the key would put text live that nobody
    // reviewed, and read it back in the answer.
    let revision = pending_sql::get_in(&mut tx, entry.id).await?;
    if revision.is_some() && !sees_pending(actor) && APPROVED_BASE.try_with(|_| ()).is_err() {
        return Err(Error::new(
            codes::KEY_SCOPE_CONTENT,
            format!("{slug:?} has a pending revision, unpublished text outside this key's content scope: it is not published unseen"),
        )
        .hint("have someone who may read drafts review and publish it, or hold publishing for approval ([approvals] in gatehouse.toml), which shows the revision to whoever decides"));
    }
    if let Some(rev) = &revision {
        sql::update_draft(&mut tx, entry.id, &rev.title, &rev.body, now).await?;
        pending_sql::delete(&mut tx, entry.id).await?;
    }
    sql::publish(&mut tx, entry.id, now).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor.label(),
            action: AuditAction::ContentPublish,
            subject: slug,
            detail: serde_json::json!({"revision_by": revision.as_ref().map(|r| &r.author)}),
        },
    )
    .await?;
    let entry = sql::by_slug_in(&mut tx, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a publish", e))?;
    Ok(entry)
}

pub async fn delete(store: &Store, actor: &Actor, slug: &str) -> Result<()> {
    actor.check(Action::ContentDelete)?;
    check_named(actor, slug)?;
    let mut tx = store.begin_write().await?;
    let entry = sql::by_slug_in(&mut tx, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    check_scoped_write(actor, &entry, false)?;
    still_as_approved(&mut tx, Some(&entry)).await?;
    pending_sql::delete(&mut tx, entry.id).await?;
    sql::delete(&mut tx, entry.id).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor.label(),
            action: AuditAction::ContentDelete,
            subject: slug,
            detail: serde_json::json!({}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a delete", e))?;
    Ok(())
}

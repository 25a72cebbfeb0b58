//! Content entries, permission-checked: the operations the MCP tools and the UI
//! call. Each write is one transaction with its audit entry; the full-text index
//! and redirects change in that same transaction.

use crate::access::actor::Actor;
use crate::access::audit::{self, Entry as AuditEntry};
use crate::access::permissions::Action;
use crate::error::{Error, Result, codes};
use crate::store::content::{self as sql, Entry, NewEntry};
use crate::store::{Store, now_ms};

pub use crate::store::content::Entry as ContentEntry;

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

/// Reads an entry (following redirects). Drafts are invisible without the right.
pub async fn read(store: &Store, actor: &Actor, slug: &str) -> Result<Entry> {
    actor.check(Action::ContentReadPublished)?;
    let entry = sql::by_slug(store, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    if entry.status != "published" && !actor.may(Action::ContentReadDraft) {
        return Err(not_found(slug));
    }
    Ok(entry)
}

pub async fn list(store: &Store, actor: &Actor, limit: i64, offset: i64) -> Result<Vec<Entry>> {
    actor.check(Action::ContentReadPublished)?;
    sql::list(
        store,
        !actor.may(Action::ContentReadDraft),
        limit.clamp(1, 500),
        offset.max(0),
    )
    .await
}

pub async fn search(store: &Store, actor: &Actor, text: &str, limit: i64) -> Result<Vec<Entry>> {
    actor.check(Action::ContentReadPublished)?;
    sql::search(
        store,
        text,
        !actor.may(Action::ContentReadDraft),
        limit.clamp(1, 100),
    )
    .await
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

/// Creates a draft, or updates an entry (which returns it to draft).
pub async fn write_draft(store: &Store, actor: &Actor, w: &DraftWrite<'_>) -> Result<Entry> {
    actor.check(Action::ContentWriteDraft)?;
    check_slug(w.slug)?;
    if let Some(new) = w.new_slug {
        check_slug(new)?;
    }
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
    let (id, created) = match sql::by_slug_in(&mut tx, w.slug).await? {
        Some(existing) => {
            sql::update_draft(&mut tx, existing.id, w.title, w.body, now).await?;
            (existing.id, false)
        }
        None => {
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
                "content.create"
            } else {
                "content.update"
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

pub async fn publish(store: &Store, actor: &Actor, slug: &str) -> Result<Entry> {
    actor.check(Action::ContentPublish)?;
    let mut tx = store.begin_write().await?;
    let entry = sql::by_slug_in(&mut tx, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    sql::publish(&mut tx, entry.id, now_ms()).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor.label(),
            action: "content.publish",
            subject: slug,
            detail: serde_json::json!({}),
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
    let mut tx = store.begin_write().await?;
    let entry = sql::by_slug_in(&mut tx, slug)
        .await?
        .ok_or_else(|| not_found(slug))?;
    sql::delete(&mut tx, entry.id).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &actor.label(),
            action: "content.delete",
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

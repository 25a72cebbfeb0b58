//! Sample data for scratch sites: one user per role, published and draft
//! entries, one media item and some config, so a new scratch site is useful at once.

use sha2::{Digest, Sha256};

use crate::access::audit::AuditAction;
use crate::access::audit::{self, AuditEntry};
use crate::error::{Error, Result};
use crate::store::content::{self, NewEntry};
use crate::store::media::{self, NewMedia};
use crate::store::{Store, site_config, users};
use crate::time::now_ms;

/// A 1×1 transparent PNG (whole and valid: media uploads are checked chunk by chunk).
pub const SAMPLE_PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// The sample users' roles; each gets `ROLE@example.com`.
pub const SAMPLE_ROLES: [&str; 4] = ["viewer", "author", "editor", "admin"];

/// Seeds a fresh scratch store in one transaction.
pub async fn scratch(store: &Store) -> Result<()> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    for role in SAMPLE_ROLES {
        users::insert(&mut tx, &format!("{role}@example.com"), role, now).await?;
    }
    let entries = [
        (
            "welcome",
            "Welcome to the scratch site",
            "This published entry is visible to everyone, including anonymous readers.",
            "published",
        ),
        (
            "getting-started",
            "Getting started",
            "Mint an API key, paste the client config into your AI client, and try content_search.",
            "published",
        ),
        (
            "roadmap-draft",
            "Roadmap (draft)",
            "Unpublished plans: only viewers and above can read this draft.",
            "draft",
        ),
    ];
    for (slug, title, body, status) in entries {
        content::insert(
            &mut tx,
            &NewEntry {
                slug,
                title,
                body,
                author: "admin@example.com",
                status,
            },
            now,
        )
        .await?;
    }
    let sha = hex::encode(Sha256::digest(SAMPLE_PNG));
    media::insert(
        &mut tx,
        &NewMedia {
            filename: "pixel.png",
            mime_type: "image/png",
            sha256: &sha,
            bytes: SAMPLE_PNG,
            uploaded_by: "admin@example.com",
        },
        now,
    )
    .await?;
    for (key, value) in [
        ("site.title", "Scratch site"),
        ("site.tagline", "A place to try Gatehouse"),
        ("http_fetch.allowlist", ""),
    ] {
        site_config::set(&mut tx, key, value, now).await?;
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor: crate::access::audit::AuditActor::CLI,
            action: AuditAction::SiteSeed,
            subject: "scratch",
            detail: serde_json::json!({"users": 4, "entries": 3, "media": 1}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("seeding the scratch site", e))?;
    Ok(())
}

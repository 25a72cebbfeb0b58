//! Media items, permission-checked: what the MCP media tools and the UI call.
//!
//! Bytes cross process boundaries as standard base64. An upload is refused
//! before anything is stored when it is larger than [`MAX_BYTES`], when its
//! declared MIME type is not one Gatehouse serves, or when the bytes do not
//! look like that type (sniffed from their magic numbers), so a client cannot
//! smuggle, say, HTML under an `image/png` label.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::access::actor::Actor;
use crate::access::audit::{self, Entry as AuditEntry};
use crate::access::permissions::Action;
use crate::error::{Error, Result, codes};
use crate::store::media::{self as sql, NewMedia};
use crate::store::{Store, now_ms};

pub use crate::store::media::MediaInfo;

/// The largest media item accepted, in decoded bytes (2 MiB).
pub const MAX_BYTES: usize = 2 * 1024 * 1024;

/// The MIME types an upload may declare.
pub const ALLOWED_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/markdown",
    "application/json",
];

/// Filenames are 1–200 characters of letters, digits, `.`, `-` and `_`, not
/// starting with a dot: no paths, no hidden files, nothing a shell or URL must escape.
pub fn check_filename(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::MEDIA_FILENAME_INVALID,
            format!("{name:?} is not a valid media filename"),
            "use letters, digits, dots, dashes and underscores, e.g. header-image.png",
        ))
    }
}

/// What the bytes look like, from their magic numbers (text types by content).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else if std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0) {
        Some("text/plain")
    } else {
        None
    }
}

/// Whether `bytes` may be stored as `declared`.
fn check_type(declared: &str, bytes: &[u8]) -> Result<()> {
    if !ALLOWED_TYPES.contains(&declared) {
        return Err(Error::invalid(
            codes::MEDIA_TYPE_UNSUPPORTED,
            format!("media type {declared:?} is not accepted"),
            format!("use one of {}", ALLOWED_TYPES.join(", ")),
        ));
    }
    let sniffed = sniff(bytes);
    let matches = match declared {
        // Text types are told apart by content, not magic: all need valid UTF-8.
        "text/plain" | "text/markdown" => sniffed == Some("text/plain"),
        "application/json" => {
            sniffed == Some("text/plain")
                && serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
        }
        other => sniffed == Some(other),
    };
    if matches {
        return Ok(());
    }
    Err(Error::invalid(
        codes::MEDIA_TYPE_MISMATCH,
        format!(
            "the bytes do not look like {declared} (they look like {})",
            sniffed.unwrap_or("unknown binary data")
        ),
        "declare the type the file really has",
    )
    .detail(serde_json::json!({"declared": declared, "sniffed": sniffed})))
}

/// Decodes base64, refusing oversized input before decoding it.
pub fn decode_base64(data: &str) -> Result<Vec<u8>> {
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() > MAX_BYTES.div_ceil(3) * 4 {
        return Err(too_large(compact.len() / 4 * 3));
    }
    let bytes = STANDARD.decode(compact.as_bytes()).map_err(|e| {
        Error::invalid(
            codes::MEDIA_BASE64_INVALID,
            format!("the data is not valid base64: {e}"),
            "send the file's bytes as standard base64 (RFC 4648, with padding)",
        )
    })?;
    if bytes.len() > MAX_BYTES {
        return Err(too_large(bytes.len()));
    }
    Ok(bytes)
}

fn too_large(size: usize) -> Error {
    Error::invalid(
        codes::MEDIA_TOO_LARGE,
        format!("the file is {size} bytes; the limit is {MAX_BYTES}"),
        "upload a smaller file",
    )
    .detail(serde_json::json!({"size": size, "max": MAX_BYTES}))
}

pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub async fn list(store: &Store, actor: &Actor) -> Result<Vec<MediaInfo>> {
    actor.check(Action::MediaRead)?;
    sql::list(store).await
}

pub async fn read(store: &Store, actor: &Actor, filename: &str) -> Result<(MediaInfo, Vec<u8>)> {
    actor.check(Action::MediaRead)?;
    sql::read(store, filename).await?.ok_or_else(|| {
        Error::new(
            codes::MEDIA_NOT_FOUND,
            format!("no media item named {filename:?}"),
        )
        .hint("media_list shows the filenames")
    })
}

/// What an upload asks for.
#[derive(Debug, Clone)]
pub struct Upload<'a> {
    pub filename: &'a str,
    pub mime_type: &'a str,
    pub bytes: &'a [u8],
}

/// Stores a new media item; its row and audit entry commit together.
pub async fn write(store: &Store, actor: &Actor, upload: &Upload<'_>) -> Result<MediaInfo> {
    actor.check(Action::MediaWrite)?;
    check_filename(upload.filename)?;
    if upload.bytes.len() > MAX_BYTES {
        return Err(too_large(upload.bytes.len()));
    }
    check_type(upload.mime_type, upload.bytes)?;
    let sha = hex::encode(Sha256::digest(upload.bytes));
    let who = actor.label();
    let mut tx = store.begin_write().await?;
    let info = sql::insert(
        &mut tx,
        &NewMedia {
            filename: upload.filename,
            mime_type: upload.mime_type,
            sha256: &sha,
            bytes: upload.bytes,
            uploaded_by: &who,
        },
        now_ms(),
    )
    .await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: &who,
            action: "media.upload",
            subject: upload.filename,
            detail: serde_json::json!({"mime_type": upload.mime_type, "size": upload.bytes.len(), "sha256": sha}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a media upload", e))?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_tells_the_common_types_apart() {
        assert_eq!(sniff(crate::site::seed::SAMPLE_PNG), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"%PDF-1.7"), Some("application/pdf"));
        assert_eq!(sniff(b"hello"), Some("text/plain"));
        assert_eq!(sniff(&[0, 1, 2, 0xFE]), None);
    }

    #[test]
    fn declared_type_must_match_the_bytes() {
        assert!(check_type("image/png", crate::site::seed::SAMPLE_PNG).is_ok());
        let err = check_type("image/png", b"<html>hi</html>").unwrap_err();
        assert_eq!(err.code, codes::MEDIA_TYPE_MISMATCH);
        let err = check_type("text/html", b"<html>hi</html>").unwrap_err();
        assert_eq!(err.code, codes::MEDIA_TYPE_UNSUPPORTED);
        assert!(check_type("application/json", br#"{"a":1}"#).is_ok());
        assert_eq!(
            check_type("application/json", b"not json")
                .unwrap_err()
                .code,
            codes::MEDIA_TYPE_MISMATCH
        );
    }

    #[test]
    fn base64_is_capped_before_decoding() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(
            decode_base64("not base64!").unwrap_err().code,
            codes::MEDIA_BASE64_INVALID
        );
        let big = "A".repeat(MAX_BYTES / 3 * 4 + 8);
        assert_eq!(
            decode_base64(&big).unwrap_err().code,
            codes::MEDIA_TOO_LARGE
        );
    }

    #[test]
    fn filenames_are_plain() {
        assert!(check_filename("photo-1.png").is_ok());
        for bad in ["", ".env", "../x.png", "a/b.png", "a b.png"] {
            assert!(check_filename(bad).is_err(), "{bad}");
        }
    }
}

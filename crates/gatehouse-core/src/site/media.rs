//! Media items, permission-checked: what the MCP media tools and the UI call.
//!
//! Bytes cross process boundaries as standard base64. An upload is refused
//! before anything is stored when it is larger than [`MAX_BYTES`], when its
//! declared MIME type is not one Gatehouse serves, or when the bytes do not
//! look like that type, so a client cannot smuggle, say, HTML under an
//! `image/png` label. The whole file is checked, not just its first bytes
//! ([`check_structure`]): a PNG must be a chain of chunks with valid CRCs
//! ending at `IEND`, a GIF and a JPEG must end where they say, a WebP's RIFF
//! size must be the file's, a PDF must end with `%%EOF`, and text and JSON
//! must hold no HTML or SVG markup (a browser shown `text/plain` may still
//! sniff it). A name ends in an extension of its type (`g.html` as a GIF is
//! a page to whatever saves it by name), names no Windows device, and differs
//! from every other name in more than letter case.
//!
//! # Caveats
//! Gatehouse serves media over MCP only (base64 in a tool result). Anything
//! that puts media on a web page or a disk should follow
//! [`content_disposition`]: only raster images are `inline`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::access::actor::Actor;
use crate::access::audit::AuditAction;
use crate::access::audit::{self, AuditEntry};
use crate::access::permissions::Action;
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::media::{self as sql, NewMedia};
use crate::time::now_ms;

pub use crate::store::media::MediaInfo;

/// The largest media item accepted, in decoded bytes (2 MiB).
pub const MAX_BYTES: usize = 2 * 1024 * 1024;

/// The media types an upload may declare, stored and served as their MIME
/// names ([`MediaType::as_mime`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::EnumString,
    strum::EnumIter,
    strum::IntoStaticStr,
    serde::Serialize,
    serde::Deserialize,
    ts_rs::TS,
)]
pub enum MediaType {
    #[strum(serialize = "image/png")]
    #[serde(rename = "image/png")]
    Png,
    #[strum(serialize = "image/jpeg")]
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[strum(serialize = "image/gif")]
    #[serde(rename = "image/gif")]
    Gif,
    #[strum(serialize = "image/webp")]
    #[serde(rename = "image/webp")]
    Webp,
    #[strum(serialize = "application/pdf")]
    #[serde(rename = "application/pdf")]
    Pdf,
    #[strum(serialize = "text/plain")]
    #[serde(rename = "text/plain")]
    Text,
    #[strum(serialize = "text/markdown")]
    #[serde(rename = "text/markdown")]
    Markdown,
    #[strum(serialize = "application/json")]
    #[serde(rename = "application/json")]
    Json,
}

impl MediaType {
    /// The MIME name, as stored and served.
    pub fn as_mime(self) -> &'static str {
        self.into()
    }

    /// Every accepted type's MIME name, in declaration order.
    pub fn mimes() -> Vec<&'static str> {
        <MediaType as strum::IntoEnumIterator>::iter()
            .map(MediaType::as_mime)
            .collect()
    }

    /// Raster images a browser may show inline; everything else downloads.
    pub fn is_inline_image(self) -> bool {
        matches!(
            self,
            MediaType::Png | MediaType::Jpeg | MediaType::Gif | MediaType::Webp
        )
    }

    /// The filename extensions of this type (the first is the usual one).
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            MediaType::Png => &["png"],
            MediaType::Jpeg => &["jpg", "jpeg"],
            MediaType::Gif => &["gif"],
            MediaType::Webp => &["webp"],
            MediaType::Pdf => &["pdf"],
            MediaType::Text => &["txt"],
            MediaType::Markdown => &["md", "markdown"],
            MediaType::Json => &["json"],
        }
    }

    /// The declared MIME name as a type, or `MEDIA_TYPE_UNSUPPORTED`.
    pub fn parse_declared(declared: &str) -> Result<MediaType> {
        declared.parse().map_err(|_| {
            Error::invalid(
                codes::MEDIA_TYPE_UNSUPPORTED,
                format!("media type {declared:?} is not accepted"),
                format!("use one of {}", MediaType::mimes().join(", ")),
            )
        })
    }
}

impl std::fmt::Display for MediaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_mime())
    }
}

/// Filenames are 1–200 characters of letters, digits, `.`, `-` and `_`, not
/// starting with a dot: no paths, no hidden files, nothing a shell or URL must
/// escape, and no name Windows keeps for a device (`CON`, `aux.txt`).
pub fn check_filename(name: &str) -> Result<()> {
    let stem = name.split('.').next().unwrap_or("").to_ascii_lowercase();
    let device = matches!(stem.as_str(), "con" | "prn" | "aux" | "nul")
        || ((stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit());
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && !device
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

/// What the bytes look like, from their magic numbers (text types by
/// content: any UTF-8 text sniffs as [`MediaType::Text`]).
pub fn sniff(bytes: &[u8]) -> Option<MediaType> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some(MediaType::Png)
    } else if starts(&[0xFF, 0xD8, 0xFF]) {
        Some(MediaType::Jpeg)
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some(MediaType::Gif)
    } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(MediaType::Webp)
    } else if starts(b"%PDF-") {
        Some(MediaType::Pdf)
    } else if std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0) {
        Some(MediaType::Text)
    } else {
        None
    }
}

/// Markup that makes a browser treat text as a page or an image with script.
const ACTIVE_MARKUP: &[&str] = &[
    "<html",
    "<head",
    "<body",
    "<script",
    "<svg",
    "<iframe",
    "<object",
    "<embed",
    "<style",
    "<meta",
    "<link",
    "<form",
    "<!doctype",
    "<?xml",
    "<xml",
    "<math",
    "<base",
];

/// The markup tag `text` holds, if any (case-insensitive, anywhere in the text).
fn markup_in(text: &[u8]) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    ACTIVE_MARKUP.iter().copied().find(|tag| {
        lower
            .windows(tag.len() + 1)
            .any(|w| w.starts_with(tag.as_bytes()) && !w[tag.len()].is_ascii_alphanumeric())
            || lower.ends_with(tag.as_bytes())
    })
}

fn png_chunks_ok(bytes: &[u8]) -> bool {
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let Some(end) = (at + 8).checked_add(len).filter(|e| e + 4 <= bytes.len()) else {
            return false;
        };
        let crc = u32::from_be_bytes(bytes[end..end + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&bytes[at + 4..end]) != crc {
            return false;
        }
        if &bytes[at + 4..at + 8] == b"IEND" {
            return end + 4 == bytes.len();
        }
        at = end + 4;
    }
    false
}

/// Whether the whole of `bytes` is a well-formed `declared` file (see the module doc).
pub fn check_structure(declared: MediaType, bytes: &[u8]) -> std::result::Result<(), String> {
    let ok = match declared {
        MediaType::Png => png_chunks_ok(bytes),
        MediaType::Gif => bytes.last() == Some(&0x3B),
        MediaType::Jpeg => bytes.ends_with(&[0xFF, 0xD9]),
        MediaType::Webp => {
            bytes.len() >= 12
                && u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize + 8
                    == bytes.len()
        }
        MediaType::Pdf => {
            let tail = &bytes[bytes.len().saturating_sub(1024)..];
            tail.windows(5).any(|w| w == b"%%EOF")
        }
        MediaType::Text | MediaType::Markdown => {
            if let Some(tag) = markup_in(bytes) {
                return Err(format!("the text holds HTML/SVG markup ({tag}…)"));
            }
            true
        }
        // JSON strings can hold a page too, opened by whatever saves it.
        MediaType::Json => {
            if let Some(tag) = markup_in(bytes) {
                return Err(format!("the JSON holds HTML/SVG markup ({tag}…)"));
            }
            true
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the file is not a complete, well-formed {declared}"
        ))
    }
}

/// How media should be handed to a browser or a disk: raster images may be
/// shown inline; everything else (PDF, text, JSON) is a download, so it is
/// never rendered as a page of the origin that serves it.
pub fn content_disposition(info: &MediaInfo) -> String {
    let inline = info
        .mime_type
        .parse::<MediaType>()
        .is_ok_and(MediaType::is_inline_image);
    format!(
        "{}; filename=\"{}\"",
        if inline { "inline" } else { "attachment" },
        info.filename
    )
}

/// The name ends in an extension of its declared type: a `g.html` stored
/// as `image/gif` (a GIF that is also a page) is opened as a page by
/// whatever saves it under its name.
fn check_extension(name: &str, declared: MediaType) -> Result<()> {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if ext
        .as_deref()
        .is_some_and(|e| declared.extensions().contains(&e))
    {
        return Ok(());
    }
    let want = declared.extensions();
    Err(Error::invalid(
        codes::MEDIA_FILENAME_INVALID,
        format!(
            "{name:?} does not end in .{} as a {declared} file must",
            want.join(" or .")
        ),
        format!(
            "name the file for its type, e.g. {}.{}",
            name.rsplit_once('.').map_or(name, |(stem, _)| stem),
            want[0]
        ),
    ))
}

/// Whether `bytes` may be stored as `declared`.
fn check_type(declared: &str, bytes: &[u8]) -> Result<()> {
    let declared = MediaType::parse_declared(declared)?;
    let sniffed = sniff(bytes);
    let matches = match declared {
        // Text types are told apart by content, not magic: all need valid UTF-8.
        MediaType::Text | MediaType::Markdown => sniffed == Some(MediaType::Text),
        MediaType::Json => {
            sniffed == Some(MediaType::Text)
                && serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
        }
        other => sniffed == Some(other),
    };
    if matches {
        return check_structure(declared, bytes).map_err(|why| {
            Error::invalid(
                codes::MEDIA_TYPE_MISMATCH,
                format!("the bytes are not a valid {declared}: {why}"),
                "upload the file as it is, without anything appended or embedded",
            )
            .detail(serde_json::json!({"declared": declared, "sniffed": sniffed}))
        });
    }
    Err(Error::invalid(
        codes::MEDIA_TYPE_MISMATCH,
        format!(
            "the bytes do not look like {declared} (they look like {})",
            sniffed.map_or("unknown binary data", MediaType::as_mime)
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
    actor.check_unscoped("media")?;
    sql::list(store).await
}

pub async fn read(store: &Store, actor: &Actor, filename: &str) -> Result<(MediaInfo, Vec<u8>)> {
    actor.check(Action::MediaRead)?;
    actor.check_unscoped("media")?;
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
    actor.check_unscoped("media")?;
    check_filename(upload.filename)?;
    if upload.bytes.len() > MAX_BYTES {
        return Err(too_large(upload.bytes.len()));
    }
    check_extension(
        upload.filename,
        MediaType::parse_declared(upload.mime_type)?,
    )?;
    check_type(upload.mime_type, upload.bytes)?;
    let sha = hex::encode(Sha256::digest(upload.bytes));
    let who = actor.label();
    let mut tx = store.begin_write().await?;
    if let Some(taken) = sql::same_name_in(&mut tx, upload.filename).await? {
        return Err(Error::new(
            codes::INPUT_INVALID,
            format!("a media item named {taken} already exists"),
        )
        .hint("choose another filename: names that differ only in letter case are one file on many disks"));
    }
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
            action: AuditAction::MediaUpload,
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
        assert_eq!(
            sniff(crate::site::seed::SAMPLE_PNG).map(MediaType::as_mime),
            Some("image/png")
        );
        assert_eq!(
            sniff(&[0xFF, 0xD8, 0xFF, 0xE0]).map(MediaType::as_mime),
            Some("image/jpeg")
        );
        assert_eq!(
            sniff(b"GIF89a...").map(MediaType::as_mime),
            Some("image/gif")
        );
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 ").map(MediaType::as_mime),
            Some("image/webp")
        );
        assert_eq!(
            sniff(b"%PDF-1.7").map(MediaType::as_mime),
            Some("application/pdf")
        );
        assert_eq!(sniff(b"hello").map(MediaType::as_mime), Some("text/plain"));
        assert_eq!(sniff(&[0, 1, 2, 0xFE]).map(MediaType::as_mime), None);
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
    fn the_whole_file_is_checked_not_only_its_magic() {
        let png = crate::site::seed::SAMPLE_PNG;
        let mut polyglot = png.to_vec();
        polyglot.extend_from_slice(b"<html><script>alert(1)</script>");
        assert_eq!(
            check_type("image/png", &polyglot).unwrap_err().code,
            codes::MEDIA_TYPE_MISMATCH
        );
        let mut bad_crc = png.to_vec();
        bad_crc[20] ^= 1;
        assert!(check_type("image/png", &bad_crc).is_err());
        assert!(check_type("image/png", &png[..png.len() - 4]).is_err());
        assert!(check_type("image/gif", b"GIF89a\x01\x00\x01\x00<script>").is_err());
        assert!(check_type("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xE0, 1, 2]).is_err());
        assert!(check_type("application/pdf", b"%PDF-1.7\n1 0 obj\n%%EOF\n").is_ok());
        assert!(check_type("application/pdf", b"%PDF-1.7\n<html>").is_err());
    }

    #[test]
    fn text_refuses_html_and_svg_markup() {
        for bad in [
            &b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>"[..],
            b"hello\n<SCRIPT>alert(1)</SCRIPT>",
            b"<!DOCTYPE html><p>hi",
            b"x <iframe src=//evil>",
            b"ends with <html",
        ] {
            let e = check_type("text/plain", bad).unwrap_err();
            assert_eq!(
                e.code,
                codes::MEDIA_TYPE_MISMATCH,
                "{}",
                String::from_utf8_lossy(bad)
            );
            assert!(e.message.contains("markup"), "{}", e.message);
            assert!(check_type("text/markdown", bad).is_err());
        }
        for good in [
            &b"a < b and c > d"[..],
            b"<header> is not a tag here",
            b"email <ann@example.com>",
        ] {
            assert!(
                check_type("text/plain", good).is_ok(),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
    }

    #[test]
    fn only_raster_images_are_inline() {
        let info = |mime: &str| MediaInfo {
            id: 1,
            filename: "f.bin".into(),
            mime_type: mime.into(),
            size: 1,
            sha256: String::new(),
            uploaded_by: String::new(),
            created_at: 0,
        };
        assert!(content_disposition(&info("image/png")).starts_with("inline"));
        for mime in [
            "text/plain",
            "application/pdf",
            "application/json",
            "text/markdown",
        ] {
            assert!(content_disposition(&info(mime)).starts_with("attachment;"));
        }
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

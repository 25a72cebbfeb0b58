//! A tool result cut to what a window shows: each content item as text, an
//! image, or pretty-printed JSON, within one byte budget for the whole
//! result. What is cut is counted, never dropped silently; the full result
//! stays with the caller (the desktop keeps it to save to a file).

use serde::Serialize;
use serde_json::Value;

/// Bytes of a result a view shows by default.
pub const DEFAULT_VIEW_BYTES: usize = 256 * 1024;

/// One piece of a result as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ViewItem {
    /// A text item (cut at a character boundary when over budget).
    Text { text: String, cut: bool },
    /// An image small enough to show; `data` is base64 as the server sent it.
    Image { mime_type: String, data: String },
    /// An image too large for the view, or of a type the page does not show.
    ImageOmitted { mime_type: String, bytes: u64 },
    /// Structured content or an item of another type, pretty-printed.
    Json {
        label: String,
        text: String,
        cut: bool,
    },
}

/// A result as shown, plus what was cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ResultView {
    /// The server flagged the result as a tool error (`isError`).
    pub is_error: bool,
    pub items: Vec<ViewItem>,
    /// Bytes of the whole result as JSON.
    pub total_bytes: u64,
    /// Something was cut or omitted: the full result must be saved to be seen.
    pub cut: bool,
}

/// Image types a webview shows from a `data:` URL without risk (no SVG: it can script).
const SHOWN_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Cuts `text` to at most `budget` bytes at a character boundary.
fn cut_text(text: &str, budget: &mut usize) -> (String, bool) {
    if text.len() <= *budget {
        *budget -= text.len();
        return (text.to_string(), false);
    }
    let mut end = *budget;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    *budget = 0;
    (text[..end].to_string(), true)
}

/// Pushes `value` pretty-printed within the budget; true when it was cut.
fn json_item(label: String, value: &Value, left: &mut usize, items: &mut Vec<ViewItem>) -> bool {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    let (text, was_cut) = cut_text(&pretty, left);
    items.push(ViewItem::Json {
        label,
        text,
        cut: was_cut,
    });
    was_cut
}

/// `result` (a `tools/call` result) as a view of at most `budget` bytes of content.
pub fn view(result: &Value, budget: usize) -> ResultView {
    let total_bytes = serde_json::to_vec(result).map_or(0, |v| v.len() as u64);
    let mut left = budget;
    let mut items = Vec::new();
    let mut cut = false;
    for (i, item) in result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        match (item["type"].as_str(), item["text"].as_str()) {
            (Some("text"), Some(t)) => {
                let (text, was_cut) = cut_text(t, &mut left);
                cut |= was_cut;
                items.push(ViewItem::Text { text, cut: was_cut });
            }
            (Some("image"), _) => {
                let mime_type = item["mimeType"].as_str().unwrap_or("").to_string();
                let data = item["data"].as_str().unwrap_or("");
                if SHOWN_IMAGES.contains(&mime_type.as_str()) && data.len() <= left {
                    left -= data.len();
                    items.push(ViewItem::Image {
                        mime_type,
                        data: data.to_string(),
                    });
                } else {
                    cut = true;
                    items.push(ViewItem::ImageOmitted {
                        mime_type,
                        bytes: (data.len() as u64 * 3) / 4,
                    });
                }
            }
            (kind, _) => {
                let label = format!("content[{i}] ({})", kind.unwrap_or("untyped"));
                cut |= json_item(label, item, &mut left, &mut items);
            }
        }
    }
    if let Some(structured) = result.get("structuredContent") {
        cut |= json_item(
            "structuredContent".into(),
            structured,
            &mut left,
            &mut items,
        );
    }
    if items.is_empty() {
        cut |= json_item("result".into(), result, &mut left, &mut items);
    }
    ResultView {
        is_error: result["isError"].as_bool() == Some(true),
        items,
        total_bytes,
        cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_images_and_structured_content_are_shown_as_such() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
            {"type": "resource_link", "uri": "file:///x"}
        ], "structuredContent": {"n": 1}});
        let v = view(&r, 1 << 20);
        assert!(!v.is_error);
        assert_eq!(
            v.items[0],
            ViewItem::Text {
                text: "hello".into(),
                cut: false
            }
        );
        assert!(
            matches!(&v.items[1], ViewItem::Image { mime_type, .. } if mime_type == "image/png")
        );
        assert!(
            matches!(&v.items[2], ViewItem::ImageOmitted { mime_type, .. } if mime_type == "image/svg+xml")
        );
        assert!(
            matches!(&v.items[3], ViewItem::Json { label, .. } if label == "content[3] (resource_link)")
        );
        assert_eq!(
            v.items[4],
            ViewItem::Json {
                label: "structuredContent".into(),
                text: "{\n  \"n\": 1\n}".into(),
                cut: false
            }
        );
        assert!(v.cut, "the SVG was omitted");
        assert_eq!(v.total_bytes, serde_json::to_vec(&r).unwrap().len() as u64);
    }

    #[test]
    fn one_budget_for_the_whole_result_cut_at_a_character() {
        let r = json!({"isError": true, "content": [
            {"type": "text", "text": "ééééé"},
            {"type": "text", "text": "never shown"}
        ]});
        let v = view(&r, 5);
        assert!(v.is_error && v.cut);
        assert_eq!(
            v.items[0],
            ViewItem::Text {
                text: "éé".into(),
                cut: true
            }
        );
        assert_eq!(
            v.items[1],
            ViewItem::Text {
                text: String::new(),
                cut: true
            }
        );
    }

    #[test]
    fn a_result_without_content_is_shown_whole() {
        let v = view(&json!({"other": 1}), 100);
        assert!(
            matches!(&v.items[..], [ViewItem::Json { label, cut: false, .. }] if label == "result")
        );
    }
}

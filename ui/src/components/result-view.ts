import { h } from "../dom";
import {
  type ResultView,
  toGatehouseError,
} from "../ipc";
import { errorView } from "./error-view";

/**
 * A call result as Rust cut it for the view: text, images (from the server's
 * base64 data, raster types only) and pretty-printed JSON; every cut is said,
 * and `onSave` writes the whole result to a file.
 */
export function resultView(view: ResultView, onSave: () => Promise<string>): HTMLElement {
  const items = view.items.map((item) => {
    switch (item.kind) {
      case "text":
        return h("pre", { class: "result-text mono" }, item.text, item.cut ? h("span", { class: "muted" }, "\n[cut]") : null);
      case "image":
        return h("img", {
          class: "result-image",
          alt: `image (${item.mime_type}) returned by the tool`,
          src: `data:${item.mime_type};base64,${item.data}`,
        });
      case "image_omitted":
        return h("p", { class: "muted" }, `[image of type ${item.mime_type || "unknown"}, ${String(item.bytes)} bytes, not shown]`);
      case "json":
        return h(
          "figure",
          { class: "result-json" },
          h("figcaption", { class: "muted small" }, item.label),
          h("pre", { class: "mono" }, item.text, item.cut ? h("span", { class: "muted" }, "\n[cut]") : null),
        );
    }
  });
  const note = h("div", { class: "muted small", role: "status" });
  const save = h("button", { type: "button", class: "button button-small", id: "result-save" }, "Save full result to a file");
  save.addEventListener("click", () => {
    save.disabled = true;
    onSave()
      .then((path) => {
        note.replaceChildren(`saved to ${path}`);
        note.dataset.path = path;
      })
      .catch((raw: unknown) => {
        delete note.dataset.path;
        note.replaceChildren(errorView(toGatehouseError(raw)));
      })
      .finally(() => {
        save.disabled = false;
      });
  });
  return h(
    "div",
    { id: "call-result", class: "call-result", "data-error": String(view.is_error), "data-cut": String(view.cut) },
    view.is_error ? h("p", { class: "notice notice-error" }, "The tool reported an error:") : null,
    ...items,
    h(
      "div",
      { class: "row" },
      view.cut ? h("span", { class: "badge badge-warn" }, `cut: ${String(view.total_bytes)} bytes in full`) : null,
      save,
      note,
    ),
  );
}

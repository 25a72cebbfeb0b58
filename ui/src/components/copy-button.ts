import { h } from "../dom";

/**
 * Copies text without a clipboard plugin: the async Clipboard API where the
 * webview allows it, else a selected, off-screen textarea and `execCommand`.
 * Nothing is logged: the text may be a raw key.
 */
async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", readonly: true, "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      // Deprecated, but the only fallback without a clipboard plugin where
      // the webview refuses the Clipboard API.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      return document.execCommand("copy");
    } finally {
      area.remove();
    }
  }
}

/** A button that copies `text()` and says whether it worked. */
export function copyButton(id: string, text: () => string, label = "Copy"): HTMLButtonElement {
  const button = h("button", { id, type: "button", class: "button button-small" }, label);
  let timer: number | undefined;
  button.addEventListener("click", () => {
    void copyText(text()).then((ok) => {
      button.textContent = ok ? "Copied" : "Copy failed: select and copy by hand";
      button.dataset.state = ok ? "copied" : "failed";
      window.clearTimeout(timer);
      timer = window.setTimeout(() => {
        button.textContent = label;
        delete button.dataset.state;
      }, 2000);
    });
  });
  return button;
}

import { h } from "../dom";

/** How long an action may take before it shows progress. */
export const PROGRESS_AFTER_MS = 100;

/**
 * Runs `work` with `button` disabled and marked busy; after
 * {@link PROGRESS_AFTER_MS} the button also shows a spinner and `busyText`,
 * so a slow action is visibly in progress and a fast one does not flicker.
 * The button always comes back as it was, whether `work` succeeds or fails.
 */
export async function whileBusy<T>(
  button: HTMLButtonElement,
  busyText: string,
  work: () => Promise<T>,
): Promise<T> {
  const label = Array.from(button.childNodes);
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  const timer = window.setTimeout(() => {
    button.dataset.progress = "shown";
    button.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), busyText);
  }, PROGRESS_AFTER_MS);
  try {
    return await work();
  } finally {
    window.clearTimeout(timer);
    button.replaceChildren(...label);
    button.removeAttribute("aria-busy");
    delete button.dataset.progress;
    button.disabled = false;
  }
}

import { h } from "../dom";
import type { GatehouseError } from "../ipc";

/**
 * Shows a failed command as the user should read it: the message first, the
 * hint as the next step, and the stable code for a bug report or a search.
 */
export function errorView(err: GatehouseError): HTMLElement {
  return h(
    "div",
    { class: "notice notice-error", role: "alert", "data-code": err.code },
    h("div", { class: "notice-title" }, err.body.message),
    err.body.hint ? h("div", { class: "notice-hint" }, err.body.hint) : null,
    h("code", { class: "error-code" }, err.code),
  );
}

export function successView(title: string, detail?: string): HTMLElement {
  return h(
    "div",
    { class: "notice notice-ok", role: "status", "data-code": "OK" },
    h("div", { class: "notice-title" }, title),
    detail ? h("div", { class: "notice-hint mono" }, detail) : null,
  );
}

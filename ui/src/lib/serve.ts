/**
 * Pure helpers of the Serve panel: the allowlist fields' entries and how the
 * live counters read, the form's settings, and the URL connectors are given.
 */

import type { ServeSettings, ServeStatus } from "../ipc";

/** One entry per line or comma, trimmed, blanks and repeats dropped. */
export function listEntries(text: string): string[] {
  const seen = new Set<string>();
  for (const entry of text.split(/[\n,]/).map((s) => s.trim())) {
    if (entry) seen.add(entry);
  }
  return [...seen];
}

/** Requests per second as the panel shows it: one decimal under 10, whole above. */
export function rateText(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return "0/s";
  return perSecond < 10 ? `${perSecond.toFixed(1)}/s` : `${String(Math.round(perSecond))}/s`;
}

/** The Serve panel's form as text, one field per `gatehouse serve` flag. */
export interface ServeForm {
  listen: string;
  hosts: string;
  origins: string;
  publicUrl: string;
  tlsCert: string;
  tlsKey: string;
  proxies: string;
  requireKey: boolean;
}

/**
 * The settings the form asks for, as text: Rust checks them with serve's own
 * rules (the page does not judge a URL or an address a second way).
 */
export function settingsOf(form: ServeForm): ServeSettings {
  return {
    listen: form.listen.trim(),
    hosts: listEntries(form.hosts),
    origins: listEntries(form.origins),
    public_url: form.publicUrl.trim(),
    tls_cert: form.tlsCert.trim(),
    tls_key: form.tlsKey.trim(),
    behind_proxy: listEntries(form.proxies),
    require_key: form.requireKey,
  };
}

/**
 * The form that shows `settings`: a running server's (to start it again), or
 * the ones kept in `[serve]` of the site's gatehouse.toml.
 */
export function formOf(settings: ServeSettings): ServeForm {
  return {
    listen: settings.listen,
    hosts: settings.hosts.join("\n"),
    origins: settings.origins.join("\n"),
    publicUrl: settings.public_url,
    tlsCert: settings.tls_cert,
    tlsKey: settings.tls_key,
    proxies: settings.behind_proxy.join("\n"),
    requireKey: settings.require_key,
  };
}

/**
 * The URL to paste into claude.ai, Claude Desktop or ChatGPT: the running
 * server's `/mcp` under its public URL, or `null` when none runs with OAuth.
 */
export function connectorUrl(status: ServeStatus | null): string | null {
  return status?.running && status.oauth_issuer ? status.url : null;
}

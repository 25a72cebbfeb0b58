/**
 * What every screen shares: the site that is open. Screens read it when they
 * render and subscribe to hear when it changes.
 */
import type { SiteSummary } from "./ipc";

type Listener = (site: SiteSummary | null) => void;

let current: SiteSummary | null = null;
const listeners = new Set<Listener>();

export function currentSite(): SiteSummary | null {
  return current;
}

export function setCurrentSite(site: SiteSummary | null): void {
  current = site;
  for (const listener of listeners) listener(site);
}

/** Calls `listener` on every change; returns a function that unsubscribes. */
export function onSiteChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

import { h } from "../dom";
import type { Isolation, Layer, LayerName } from "../generated/ipc-types";

const mib = (b: number) => `${String(Math.round(b / 1048576))} MiB`;

/** Bytes in the largest whole binary unit, as core's status lines say them ("1 GiB", "512 MiB"). */
export function sizeText(b: number): string {
  const units: [number, string][] = [
    [1 << 30, "GiB"],
    [1 << 20, "MiB"],
    [1 << 10, "KiB"],
  ];
  for (const [size, unit] of units) if (b >= size && b % size === 0) return `${String(b / size)} ${unit}`;
  return `${String(b)} bytes`;
}

/** Milliseconds in the largest whole unit ("10 min", "90 s", "1500 ms"). */
export function millisText(ms: number): string {
  if (ms >= 60000 && ms % 60000 === 0) return `${String(ms / 60000)} min`;
  if (ms >= 1000 && ms % 1000 === 0) return `${String(ms / 1000)} s`;
  return `${String(ms)} ms`;
}

/** A ceiling as the consent dialog shows it: its value, and whose it is when the site set it. */
export function ceilingText(value: string | null, siteDefault: boolean): string {
  if (value === null) return "no limit";
  return siteDefault ? `${value} (site default)` : value;
}

const LABELS: Record<LayerName, string> = {
  landlock_fs: "Landlock fs",
  signal_scope: "signal scope",
  seccomp: "seccomp",
  read_only_view: "read-only view",
  bwrap: "bwrap",
  no_new_privs: "no_new_privs",
  seatbelt: "Seatbelt",
  job_object: "Job Object",
  restricted_token: "restricted token",
  write_grants: "write grants",
  handle_list: "inherited handles",
  cpu_rate: "CPU rate",
  ui_limits: "UI limits",
  network: "network",
  unix_sockets: "UNIX sockets",
  memory_ceiling: "memory ceiling",
  cpu_budget: "CPU budget",
  process_ceiling: "process ceiling",
  open_files: "open files",
  scratch_quota: "scratch quota",
  priority: "priority",
};

/** The layer's name as the status lines give it. */
export const layerLabel = (l: LayerName): string => LABELS[l];

/** What one layer says: "applied (ABI 7)" or "not applied: why not" (the CLI's words). */
export function layerState(l: Layer): string {
  if (!l.applied) return `not applied: ${l.detail}`;
  return l.detail ? `applied (${l.detail})` : "applied";
}

/**
 * Every layer of this system's backend, applied or not and why not, one item
 * each; a layer that did not apply is marked, never left out. Folded under its
 * counts so the facts stay short (the tools sit below them): the summary says
 * how many did not apply, and the warnings rows say what that weakens.
 */
export function isolationLayers(iso: Isolation): HTMLElement {
  const missing = iso.layers.filter((l) => !l.applied).length;
  const applied = iso.layers.length - missing;
  const summary = missing > 0 ? `${String(applied)} applied, ${String(missing)} not applied` : `all ${String(applied)} applied`;
  return h(
    "details",
    { class: "isolation-layers" },
    h("summary", {}, summary),
    h(
      "ul",
      { class: "plain-list" },
      ...iso.layers.map((l) =>
        h("li", { "data-layer": l.layer, "data-applied": l.applied ? "true" : "false" }, `${layerLabel(l.layer)}: ${layerState(l)}`),
      ),
    ),
  );
}

/**
 * One line saying how a server is confined: the backend (with the Landlock
 * ABI actually applied, and whether everything but its scratch is mounted
 * read-only for it, its scratch then a tmpfs of the quota's size), what
 * network it has, its scratch quota and its
 * scheduling niceness. The
 * warnings (a layer weaker than the profile asks for) are shown apart, never
 * folded into this line.
 */
export function isolationSummary(iso: Isolation): string {
  const landlock = iso.backend === "landlock" && iso.landlock_abi > 0 ? `Landlock ABI ${String(iso.landlock_abi)}` : iso.backend;
  const backend = iso.read_only_view ? `${landlock} + read-only view` : landlock;
  const network = iso.network
    ? "network allowed"
    : iso.connect_ports.length > 0
      ? `network: TCP ${iso.connect_ports.join(", ")} only`
      : "no network";
  const priority = iso.nice > 0 ? `nice ${String(iso.nice)}` : "host priority";
  const unix = iso.unix_sockets ? " · UNIX sockets allowed" : "";
  const scratch = `scratch ${mib(iso.scratch_quota_bytes)}${iso.read_only_view ? " in memory" : ""}`;
  return `${backend} · ${network}${unix} · ${scratch} · ${priority}`;
}

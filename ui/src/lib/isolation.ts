import type { Isolation } from "../generated/ipc-types";

const mib = (b: number) => `${String(Math.round(b / 1048576))} MiB`;

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

import { describe, expect, it } from "vitest";
import type { Isolation } from "../generated/ipc-types";
import { isolationSummary } from "./isolation";

const base: Isolation = {
  backend: "landlock",
  landlock_abi: 7,
  read_only_view: true,
  network: false,
  connect_ports: [],
  scratch_quota_bytes: 256 * 1048576,
  unix_sockets: false,
  nice: 10,
  warnings: [],
};

describe("isolationSummary", () => {
  it("names the Landlock ABI applied, the network and the quota", () => {
    expect(isolationSummary(base)).toBe("Landlock ABI 7 + read-only view · no network · scratch 256 MiB in memory · nice 10");
  });

  it("lists the only ports a server without network may connect to", () => {
    expect(isolationSummary({ ...base, connect_ports: [5432, 443] })).toBe("Landlock ABI 7 + read-only view · network: TCP 5432, 443 only · scratch 256 MiB in memory · nice 10");
  });

  it("says plainly when nothing confines the server", () => {
    expect(isolationSummary({ ...base, backend: "none", landlock_abi: 0, read_only_view: false, network: true, unix_sockets: true, nice: 0 })).toBe(
      "none · network allowed · UNIX sockets allowed · scratch 256 MiB · host priority",
    );
  });
});

// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { Isolation } from "../generated/ipc-types";
import { ceilingText, isolationLayers, isolationSummary, layerLabel, layerState, millisText, sizeText } from "./isolation";

const base: Isolation = {
  backend: "landlock",
  landlock_abi: 7,
  read_only_view: true,
  network: false,
  connect_ports: [],
  scratch_quota_bytes: 256 * 1048576,
  unix_sockets: false,
  nice: 10,
  layers: [],
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

describe("isolation layers", () => {
  it("says what applied and why a layer did not, in the CLI's words", () => {
    expect(`${layerLabel("landlock_fs")}: ${layerState({ layer: "landlock_fs", applied: true, detail: "ABI 7" })}`).toBe("Landlock fs: applied (ABI 7)");
    expect(`${layerLabel("network")}: ${layerState({ layer: "network", applied: false, detail: "the profile allows the network (--network)" })}`).toBe(
      "network: not applied: the profile allows the network (--network)",
    );
    expect(layerLabel("job_object")).toBe("Job Object");
  });

  it("fold under their counts, every layer still listed with why not", () => {
    const layers = isolationLayers({
      ...base,
      layers: [
        { layer: "landlock_fs", applied: true, detail: "ABI 7" },
        { layer: "seccomp", applied: true, detail: "" },
        { layer: "network", applied: false, detail: "the profile allows the network (--network)" },
      ],
    });
    expect(layers.tagName).toBe("DETAILS");
    expect(layers.hasAttribute("open")).toBe(false);
    expect(layers.querySelector("summary")?.textContent).toBe("2 applied, 1 not applied");
    expect(Array.from(layers.querySelectorAll("li"), (li) => li.textContent)).toEqual([
      "Landlock fs: applied (ABI 7)",
      "seccomp: applied",
      "network: not applied: the profile allows the network (--network)",
    ]);
    const all = isolationLayers({ ...base, layers: [{ layer: "seccomp", applied: true, detail: "" }] });
    expect(all.querySelector("summary")?.textContent).toBe("all 1 applied");
  });
});

describe("ceilings", () => {
  it("show the site's default as such, never as no limit", () => {
    expect(ceilingText(sizeText(1 << 30), true)).toBe("1 GiB (site default)");
    expect(ceilingText(millisText(600000), true)).toBe("10 min (site default)");
    expect(ceilingText(sizeText(512 * 1048576), false)).toBe("512 MiB");
    expect(ceilingText(null, false)).toBe("no limit");
    expect(millisText(1500)).toBe("1500 ms");
    expect(sizeText(1000)).toBe("1000 bytes");
  });
});

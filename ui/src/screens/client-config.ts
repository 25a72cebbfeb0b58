import { ConfigPanel } from "../components/config-panel";
import { errorView } from "../components/error-view";
import { h } from "../dom";
import { listKeys, toGatehouseError } from "../ipc";
import { currentSite } from "../session";
import { noSitePanel } from "./common";
import { type Screen, screenFrame } from "./screen";

const PUBLIC = "";

/**
 * Ready-to-paste configuration for any key of the open site. A key minted in
 * this window can be written in; any other key only referenced (its raw key is
 * gone), which core reports with a hint.
 */
export const clientConfig: Screen = {
  id: "client-config",
  title: "Client config",
  render() {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Client config",
        ["Ready-to-paste configuration that points an MCP client at this site through the gatehouse CLI."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const keyPicker = h(
      "select",
      { id: "config-key", class: "input select" },
      h("option", { value: PUBLIC }, "No key (public actor)"),
    );
    const status = h("div", { class: "result" });
    const config = new ConfigPanel(
      null,
      h(
        "span",
        { class: "field-pair" },
        h("label", { for: "config-key", class: "field-label" }, "Key"),
        keyPicker,
      ),
    );
    const labels = new Map<string, string>();
    keyPicker.addEventListener("change", () => {
      const id = keyPicker.value;
      config.setKey(id === PUBLIC ? null : { id, label: labels.get(id) ?? id });
    });
    listKeys()
      .then((list) => {
        for (const key of list.filter((k) => k.status === "active")) {
          labels.set(key.id, key.label);
          keyPicker.append(h("option", { value: key.id }, `${key.label} (${key.id})`));
        }
      })
      .catch((raw: unknown) => {
        status.replaceChildren(errorView(toGatehouseError(raw)));
      });
    return frame(config.element, status);
  },
};

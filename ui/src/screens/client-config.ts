import { ConfigPanel } from "../components/config-panel";
import { errorView } from "../components/error-view";
import { h } from "../dom";
import {
  toGatehouseError,
  call,
} from "../ipc";
import { installState } from "../lib/client-config";
import { currentSite } from "../session";
import { doctorPanel, installPanel } from "./client-config-install";
import { noSitePanel } from "./common";
import { type Screen, screenFrame } from "./screen";

const PUBLIC = "";

/**
 * Ready-to-paste configuration for any key of the open site. A key minted in
 * this window is written in by the install, and shown masked here (the page
 * saw it once, at its mint); any other key can only be referenced (its raw key
 * is gone), which core reports with a hint.
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
      // Called once core's client list has loaded, after `install` exists.
      (choice) => {
        install.setAvailability(installState(choice));
      },
    );
    const labels = new Map<string, string>();
    // The install writes what the panel shows: read its client and secret
    // reference from its own controls, and drop a preview when they change.
    const clientPicker = config.element.querySelector<HTMLSelectElement>("#config-client");
    const secretRef = config.element.querySelector<HTMLInputElement>("#config-secret-ref");
    const install = installPanel(() =>
      clientPicker?.value
        ? {
            client: clientPicker.value,
            keyId: keyPicker.value === PUBLIC ? null : keyPicker.value,
            secretRef: secretRef?.checked ?? false,
          }
        : null,
    );
    clientPicker?.addEventListener("change", install.reset);
    secretRef?.addEventListener("change", install.reset);
    keyPicker.addEventListener("change", () => {
      const id = keyPicker.value;
      config.setKey(id === PUBLIC ? null : { id, label: labels.get(id) ?? id });
      install.reset();
    });
    call("list_keys", {})
      .then((list) => {
        for (const key of list.filter((k) => k.status === "active")) {
          labels.set(key.id, key.label);
          keyPicker.append(h("option", { value: key.id }, `${key.label} (${key.id})`));
        }
      })
      .catch((raw: unknown) => {
        status.replaceChildren(errorView(toGatehouseError(raw)));
      });
    return frame(config.element, status, install.element, doctorPanel());
  },
};

import { h } from "../dom";
import {
  type ClientChoice,
  type Location,
  type GeneratedConfig,
  type Snippet,
  configClients,
  generateClientConfig,
  toGatehouseError,
} from "../ipc";
import { copyButton } from "./copy-button";
import { errorView } from "./error-view";

/** Who the generated config runs as: a key (by id) or the public actor. */
export interface ConfigKey {
  id: string;
  label: string;
}

let clientsCache: Promise<ClientChoice[]> | null = null;

/** Core's client list never changes while the app runs: ask once. */
function clients(): Promise<ClientChoice[]> {
  clientsCache ??= configClients().catch((raw: unknown) => {
    clientsCache = null;
    throw raw;
  });
  return clientsCache;
}

function locationText(loc: Location): string {
  const scope = loc.scope === "project" ? "Project" : "User";
  return `${scope}${loc.os ? `, ${loc.os}` : ""}: ${loc.path}`;
}

function snippetView(snippet: Snippet, index: number): HTMLElement {
  const suffix = index === 0 ? "" : `-${String(index)}`;
  const text = h("pre", { id: `config-text${suffix}`, class: "codeblock", "data-format": snippet.format }, snippet.text);
  return h(
    "div",
    { class: "snippet", "data-index": index },
    h(
      "div",
      { class: "snippet-head" },
      snippet.locations.length > 0
        ? h(
            "ul",
            { class: "location-list" },
            ...snippet.locations.map((loc) => h("li", { class: "mono" }, locationText(loc))),
          )
        : h("span", { class: "muted" }, "Command line"),
      h(
        "div",
        { class: "toolbar" },
        snippet.contains_secret ? h("span", { class: "badge badge-warn" }, "contains the key") : null,
        copyButton(`config-copy${suffix}`, () => snippet.text),
      ),
    ),
    text,
    h("p", { id: `config-instructions${suffix}`, class: "snippet-instructions muted" }, snippet.instructions),
  );
}

/**
 * Picks a client and shows the configuration core generates for it: where the
 * file goes, the text with a copy button, and what to do with it. The same
 * generator serves `gatehouse config`.
 */
export class ConfigPanel {
  readonly element: HTMLElement;
  private readonly picker: HTMLSelectElement;
  private readonly secretRef: HTMLInputElement;
  private readonly subject: HTMLElement;
  private readonly output: HTMLElement;
  private key: ConfigKey | null;
  private choices: ClientChoice[] = [];
  /** Drops answers to requests that a newer one replaced. */
  private generation = 0;

  constructor(key: ConfigKey | null, extra?: HTMLElement) {
    this.key = key;
    this.picker = h("select", { id: "config-client", class: "input select" });
    this.secretRef = h("input", { id: "config-secret-ref", type: "checkbox" });
    this.subject = h("span", { id: "config-subject", class: "muted" });
    this.output = h("div", { id: "config-output", class: "stack", "aria-live": "polite" });
    this.picker.addEventListener("change", () => {
      this.syncSecretRef();
      void this.refresh();
    });
    this.secretRef.addEventListener("change", () => void this.refresh());

    this.element = h(
      "section",
      { id: "config-panel", class: "panel" },
      h("header", { class: "panel-header" }, h("h2", {}, "Client config"), this.subject),
      h(
        "div",
        { class: "field-row wrap" },
        extra ?? null,
        h("label", { for: "config-client", class: "field-label" }, "Client"),
        this.picker,
        h(
          "label",
          { class: "check", title: "The client supplies the key at start; the config never holds it" },
          this.secretRef,
          "Secret reference",
        ),
      ),
      this.output,
    );
    this.showSubject();
    void this.load();
  }

  /** Generates for another key (or the public actor). */
  setKey(key: ConfigKey | null): void {
    this.key = key;
    this.showSubject();
    void this.refresh();
  }

  private showSubject(): void {
    this.subject.textContent = this.key ? `runs as key ${this.key.id} (${this.key.label})` : "runs as the public actor";
  }

  private async load(): Promise<void> {
    try {
      this.choices = await clients();
    } catch (raw) {
      this.output.replaceChildren(errorView(toGatehouseError(raw)));
      return;
    }
    this.picker.replaceChildren(...this.choices.map((c) => h("option", { value: c.id }, c.name)));
    this.syncSecretRef();
    await this.refresh();
  }

  /** A client without a secret indirection cannot take a reference: say so. */
  private syncSecretRef(): void {
    const choice = this.choices.find((c) => c.id === this.picker.value);
    const supported = choice?.secret_ref ?? false;
    this.secretRef.disabled = !supported;
    if (!supported) this.secretRef.checked = false;
    this.secretRef.parentElement?.setAttribute(
      "title",
      supported
        ? "The client supplies the key at start; the config never holds it"
        : `${choice?.name ?? "This client"} cannot reference a secret: the key is written into its config`,
    );
  }

  private async refresh(): Promise<void> {
    if (!this.picker.value) return;
    const generation = ++this.generation;
    const secretRef = this.secretRef.checked;
    this.output.dataset.state = "loading";
    let config: GeneratedConfig;
    try {
      config = await generateClientConfig(this.picker.value, this.key?.id ?? null, secretRef);
    } catch (raw) {
      if (generation !== this.generation) return;
      this.output.replaceChildren(errorView(toGatehouseError(raw)));
      this.output.dataset.state = "error";
      return;
    }
    if (generation !== this.generation) return;
    this.output.replaceChildren(...config.snippets.map(snippetView));
    this.output.dataset.state = "ready";
    this.output.dataset.client = config.client;
    this.output.dataset.secretRef = String(secretRef);
  }
}

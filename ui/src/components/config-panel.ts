import { h } from "../dom";
import {
  type ClientChoice,
  type GeneratedConfig,
  type Snippet,
  toGatehouseError,
  call,
} from "../ipc";
import { pickClient, secretRefState, snippetModel } from "../lib/client-config";
import { copyButton } from "./copy-button";
import { errorView } from "./error-view";

/** Who the generated config runs as: a key (by id) or the public actor. */
export interface ConfigKey {
  id: string;
  label: string;
  /**
   * The raw key, only in the panel shown with a fresh mint: the app masks it
   * in every config it sends, and this panel puts it back.
   */
  raw?: string;
}

let clientsCache: Promise<ClientChoice[]> | null = null;

/** Core's client list never changes while the app runs: ask once. */
function clients(): Promise<ClientChoice[]> {
  clientsCache ??= call("config_clients", {}).catch((raw: unknown) => {
    clientsCache = null;
    throw raw;
  });
  return clientsCache;
}

function snippetView(snippet: Snippet, index: number, rawKey?: string): HTMLElement {
  const m = snippetModel(snippet, index, rawKey);
  const text = h("pre", { id: `config-text${m.idSuffix}`, class: "codeblock", "data-format": m.format }, m.text);
  return h(
    "div",
    { class: "snippet", "data-index": index },
    h(
      "div",
      { class: "snippet-head" },
      m.where.kind === "files"
        ? h("ul", { class: "location-list" }, ...m.where.paths.map((path) => h("li", { class: "mono" }, path)))
        : h("span", { class: "muted" }, "Command line"),
      h(
        "div",
        { class: "toolbar" },
        m.warnSecret ? h("span", { class: "badge badge-warn" }, "contains the key") : null,
        m.keyMasked
          ? h(
              "span",
              {
                class: "badge key-masked",
                title: "A key is shown once, when it is minted. Install into the client writes it in; or turn on Secret reference.",
              },
              "key not shown",
            )
          : null,
        copyButton(`config-copy${m.idSuffix}`, () => m.text),
      ),
    ),
    text,
    h("p", { id: `config-instructions${m.idSuffix}`, class: "snippet-instructions muted" }, m.instructions),
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

  /**
   * `onChoice` hears of every client shown (the first once core's list has
   * loaded, then each pick), so what depends on the client can follow.
   */
  constructor(
    key: ConfigKey | null,
    extra?: HTMLElement,
    private readonly onChoice?: (choice: ClientChoice | null) => void,
  ) {
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
    const shown = pickClient(this.choices, this.picker.value);
    this.picker.replaceChildren(...this.choices.map((c) => h("option", { value: c.id }, c.name)));
    if (shown) this.picker.value = shown.id;
    this.syncSecretRef();
    await this.refresh();
  }

  /** The client the picker shows (null until core's list has loaded). */
  get choice(): ClientChoice | null {
    return this.choices.find((c) => c.id === this.picker.value) ?? null;
  }

  /** A client without a secret indirection cannot take a reference: say so. */
  private syncSecretRef(): void {
    const state = secretRefState(this.choice, this.secretRef.checked);
    this.secretRef.disabled = !state.enabled;
    this.secretRef.checked = state.checked;
    this.secretRef.parentElement?.setAttribute("title", state.title);
    this.onChoice?.(this.choice);
  }

  private async refresh(): Promise<void> {
    if (!this.picker.value) return;
    const generation = ++this.generation;
    const secretRef = this.secretRef.checked;
    this.output.dataset.state = "loading";
    let config: GeneratedConfig;
    try {
      config = await call("generate_client_config", { client: this.picker.value, key_id: this.key?.id ?? null, secret_ref: secretRef });
    } catch (raw) {
      if (generation !== this.generation) return;
      this.output.replaceChildren(errorView(toGatehouseError(raw)));
      this.output.dataset.state = "error";
      return;
    }
    if (generation !== this.generation) return;
    const raw = this.key?.raw;
    this.output.replaceChildren(...config.snippets.map((s, i) => snippetView(s, i, raw)));
    this.output.dataset.state = "ready";
    this.output.dataset.client = config.client;
    this.output.dataset.secretRef = String(secretRef);
  }
}

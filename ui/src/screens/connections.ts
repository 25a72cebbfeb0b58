import { TailPanel } from "../components/tail-panel";
import { h } from "../dom";
import { streamDemo, toGatehouseError } from "../ipc";
import { type Screen, plannedPanel, screenFrame } from "./screen";

const DEMO_LINES = 40;

/** MCP servers Gatehouse connects to, each with a live stderr tail. */
export const connections: Screen = {
  id: "connections",
  title: "Connections",
  render(signal) {
    const tail = new TailPanel("stderr tail");
    const start = h("button", { id: "tail-start", type: "button", class: "button" }, "Stream demo lines");
    start.addEventListener("click", () => {
      start.disabled = true;
      tail.reset();
      streamDemo(DEMO_LINES, (message) => {
        if (!signal.aborted) tail.push(message);
      })
        .catch((raw: unknown) => {
          tail.fail(toGatehouseError(raw).message);
        })
        .finally(() => {
          start.disabled = false;
        });
    });

    return screenFrame(
      "Connections",
      ["MCP servers this site's clients reach through Gatehouse, with each server's stderr as it happens."],
      h(
        "div",
        { class: "split" },
        plannedPanel("Connections", ["Each connection's state, last call and exit status"]),
        h("div", { class: "stack" }, h("div", { class: "toolbar" }, start), tail.element),
      ),
    );
  },
};

import { TailPanel } from "../components/tail-panel";
import { h } from "../dom";
import { streamDemo, toGatehouseError } from "../ipc";
import { type Screen, plannedPanel, screenFrame } from "./screen";

const DEMO_LINES = 40;

/** MCP servers Gatehouse connects to, each with a live stderr tail. */
export const connections: Screen = {
  id: "connections",
  title: "Connections",
  render() {
    const tail = new TailPanel("stderr tail");
    const start = h("button", { id: "tail-start", type: "button", class: "button" }, "Stream demo lines");
    start.addEventListener("click", () => {
      start.disabled = true;
      tail.reset();
      streamDemo(DEMO_LINES, (event) => {
        tail.push(event);
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
      "MCP servers this site's clients reach through Gatehouse.",
      plannedPanel("Connections", ["Each connection's state, last call and exit status"]),
      h("div", { class: "toolbar" }, start),
      tail.element,
    );
  },
};

import { type Screen, plannedPanel, screenFrame } from "./screen";

export const clientConfig: Screen = {
  id: "client-config",
  title: "Client config",
  render() {
    return screenFrame(
      "Client config",
      "Ready-to-paste configuration for MCP clients.",
      plannedPanel("Client config", [
        "Pick a client and a key; copy the generated configuration",
      ]),
    );
  },
};

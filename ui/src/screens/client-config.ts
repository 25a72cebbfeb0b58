import { type Screen, plannedPanel, screenFrame } from "./screen";

export const clientConfig: Screen = {
  id: "client-config",
  title: "Client config",
  render() {
    return screenFrame(
      "Client config",
      ["Ready-to-paste configuration that points an MCP client at this site."],
      plannedPanel("Client config", ["Pick a client and a key; copy the generated configuration"]),
    );
  },
};

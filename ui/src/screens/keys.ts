import { type Screen, plannedPanel, screenFrame } from "./screen";

export const keys: Screen = {
  id: "keys",
  title: "Keys",
  render() {
    return screenFrame(
      "API keys",
      ["Keys give an AI client a scoped identity on this site. A raw key is shown once, when it is minted."],
      plannedPanel("Keys", [
        "List: id, label, roles, created, expires, last used, revoked",
        "Mint, revoke, and roll with a grace period",
      ]),
    );
  },
};

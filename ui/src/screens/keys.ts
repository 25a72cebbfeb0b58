import { type Screen, plannedPanel, screenFrame } from "./screen";

export const keys: Screen = {
  id: "keys",
  title: "Keys",
  render() {
    return screenFrame(
      "API keys",
      "Keys give an AI client a scoped identity on this site.",
      plannedPanel("Keys", [
        "List: id, label, roles, created, expires, last used, revoked",
        "Mint (the raw key is shown once), revoke, roll with a grace period",
      ]),
    );
  },
};

import { describe, expect, it } from "vitest";
import { restrictionForm, toolBoxes } from "./key-form";

const base = { limitTools: false, tools: [], readOnly: false, content: "", status: "any" as const, rate: "", from: "" };

describe("restrictionForm", () => {
  it("sends no allowlist unless the limit is ticked, and trims text", () => {
    expect(restrictionForm({ ...base, tools: ["content_read"] }).tools).toBeNull();
    expect(
      restrictionForm({
        ...base,
        limitTools: true,
        tools: ["content_read"],
        readOnly: true,
        content: "  blog-* ",
        status: "draft",
        rate: " 60/min",
        from: "10.0.0.0/8 ",
      }),
    ).toEqual({
      tools: ["content_read"],
      read_only: true,
      content: "blog-*",
      content_status: "draft",
      rate: "60/min",
      from: "10.0.0.0/8",
    });
  });

  it("keeps an empty ticked allowlist for core to refuse", () => {
    expect(restrictionForm({ ...base, limitTools: true }).tools).toEqual([]);
  });
});

describe("toolBoxes", () => {
  const choices = [
    { name: "content_list", title: "List", effect: "read" },
    { name: "content_read", title: "Read", effect: "read" },
  ];
  it("ticks the listed tools and keeps ones beyond the roles", () => {
    const boxes = toolBoxes(choices, ["content_read", "content_publish"]);
    expect(boxes.map((b) => [b.name, b.checked, b.beyondRoles])).toEqual([
      ["content_list", false, false],
      ["content_read", true, false],
      ["content_publish", true, true],
    ]);
  });
  it("ticks nothing without an allowlist", () => {
    expect(toolBoxes(choices, null).every((b) => !b.checked)).toBe(true);
  });
});

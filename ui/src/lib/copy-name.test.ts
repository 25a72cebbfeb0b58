import { describe, expect, it } from "vitest";
import { copyName } from "./copy-name";

describe("copyName", () => {
  it("takes the first free -copy name", () => {
    expect(copyName("docs", new Set(["docs"]))).toBe("docs-copy");
    expect(copyName("docs", new Set(["docs", "docs-copy"]))).toBe("docs-copy-2");
    expect(copyName("docs", new Set(["docs", "docs-copy", "docs-copy-2"]))).toBe("docs-copy-3");
  });

  it("cuts a long name so the suffix fits in 64 characters", () => {
    const long = "a".repeat(64);
    const first = copyName(long, new Set([long]));
    expect(first).toBe(`${"a".repeat(59)}-copy`);
    const second = copyName(long, new Set([long, first]));
    expect(second).toBe(`${"a".repeat(57)}-copy-2`);
    expect(second.length).toBe(64);
  });
});

import { describe, expect, it } from "vitest";
import { badgeText, diffLines, takeUnseen } from "./held-calls";

describe("badgeText", () => {
  it("is empty when nothing waits and caps at 99+", () => {
    expect(badgeText(0)).toBe("");
    expect(badgeText(1)).toBe("1");
    expect(badgeText(99)).toBe("99");
    expect(badgeText(100)).toBe("99+");
  });
});

describe("diffLines", () => {
  it("tells added, removed, hunk and context lines apart", () => {
    const kinds = diffLines("--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same").map((l) => l.kind);
    expect(kinds).toEqual(["context", "context", "hunk", "del", "add", "context"]);
  });
});

describe("takeUnseen", () => {
  it("answers each waiting call once", () => {
    const seen = new Set<string>();
    expect(takeUnseen(["a", "b"], seen)).toEqual(["a", "b"]);
    expect(takeUnseen(["a", "b"], seen)).toEqual([]);
    expect(takeUnseen(["b", "c"], seen)).toEqual(["c"]);
    expect([...seen]).toEqual(["a", "b", "c"]);
  });
});

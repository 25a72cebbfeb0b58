import { describe, expect, it } from "vitest";
import { tabKeyTarget } from "./roving";

describe("tabKeyTarget", () => {
  it("moves right and left, wrapping at both ends", () => {
    expect(tabKeyTarget("ArrowRight", 0, 3)).toBe(1);
    expect(tabKeyTarget("ArrowRight", 2, 3)).toBe(0);
    expect(tabKeyTarget("ArrowLeft", 1, 3)).toBe(0);
    expect(tabKeyTarget("ArrowLeft", 0, 3)).toBe(2);
  });

  it("jumps to the first and last tab", () => {
    expect(tabKeyTarget("Home", 2, 3)).toBe(0);
    expect(tabKeyTarget("End", 0, 3)).toBe(2);
  });

  it("ignores other keys and an empty tablist", () => {
    expect(tabKeyTarget("ArrowDown", 0, 3)).toBeNull();
    expect(tabKeyTarget("Enter", 0, 3)).toBeNull();
    expect(tabKeyTarget("ArrowRight", 0, 0)).toBeNull();
  });

  it("stays on a single tab", () => {
    expect(tabKeyTarget("ArrowRight", 0, 1)).toBe(0);
    expect(tabKeyTarget("ArrowLeft", 0, 1)).toBe(0);
  });
});

import { describe, expect, it } from "vitest";
import { listEntries, rateText } from "./serve";

describe("listEntries", () => {
  it("splits on lines and commas, trims, drops blanks and repeats", () => {
    expect(listEntries(" a.example \n\nb.example, a.example ,\n")).toEqual(["a.example", "b.example"]);
    expect(listEntries("")).toEqual([]);
  });
});

describe("rateText", () => {
  it("shows a decimal under 10 per second and whole numbers above", () => {
    expect(rateText(0)).toBe("0/s");
    expect(rateText(-1)).toBe("0/s");
    expect(rateText(Number.NaN)).toBe("0/s");
    expect(rateText(2.25)).toBe("2.3/s");
    expect(rateText(123.6)).toBe("124/s");
  });
});

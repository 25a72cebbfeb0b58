import { describe, expect, it } from "vitest";
import { MIN_VISIBLE, chartBars, countText, niceCeiling } from "./usage-chart";

describe("niceCeiling", () => {
  it("rounds up to 1, 2 or 5 times a power of ten", () => {
    expect([0, 1, 2, 3, 5, 6, 10, 11, 19, 20, 21, 49, 51, 99, 101, 4000].map(niceCeiling)).toEqual([
      1, 1, 2, 5, 5, 10, 10, 20, 20, 20, 50, 50, 100, 100, 200, 5000,
    ]);
  });
});

describe("chartBars", () => {
  it("scales the busiest day to a round maximum and stacks refusals", () => {
    const { max, bars } = chartBars(
      [
        { calls: 0, refused: 0 },
        { calls: 10, refused: 0 },
        { calls: 20, refused: 5 },
      ],
      30,
      40,
      2,
    );
    expect(max).toBe(20);
    expect(bars.map((b) => b.x)).toEqual([1, 11, 21]);
    expect(bars.every((b) => b.width === 8)).toBe(true);
    expect(bars[0]).toMatchObject({ answered: 0, refused: 0 });
    expect(bars[1]).toMatchObject({ answered: 20, refused: 0 });
    expect(bars[2]).toMatchObject({ answered: 30, refused: 10 });
  });

  it("keeps a single call visible beside a busy day", () => {
    const { bars } = chartBars(
      [
        { calls: 1, refused: 1 },
        { calls: 1000, refused: 0 },
      ],
      20,
      30,
    );
    expect(bars[0]?.refused).toBe(MIN_VISIBLE);
    expect(bars[0]?.answered).toBe(0);
    expect(bars[1]?.answered).toBe(30);
  });

  it("never draws more refused than called, nor negative heights", () => {
    const { bars } = chartBars([{ calls: 2, refused: 9 }, { calls: -1, refused: -1 }], 10, 10);
    expect(bars[0]?.answered).toBe(0);
    expect(bars[0]?.refused).toBeGreaterThan(0);
    expect(bars[1]).toMatchObject({ answered: 0, refused: 0 });
    expect(chartBars([], 10, 10).bars).toEqual([]);
  });
});

describe("countText", () => {
  it("says calls and refusals", () => {
    expect(countText(0, 0)).toBe("no calls");
    expect(countText(1, 0)).toBe("1 call");
    expect(countText(5, 2)).toBe("5 calls, 2 refused");
  });
});

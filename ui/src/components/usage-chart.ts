import type { DayUsage } from "../ipc";
import { chartBars, countText } from "../lib/usage-chart";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 112;
const HEIGHT = 28;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  return el;
}

const day = (rfc3339: string) =>
  new Date(rfc3339).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

/**
 * A key's calls per day over the last week as a small bar chart (hand-drawn
 * SVG: seven bars need no chart library). Refused calls are the bar's top
 * part; each bar's tooltip gives its day and counts, and `data-calls` /
 * `data-refused` carry the numbers for tests and assistive tools.
 */
export function usageChart(keyId: string, days: readonly DayUsage[]): SVGSVGElement {
  const calls = days.reduce((n, d) => n + d.calls, 0);
  const refused = days.reduce((n, d) => n + d.refused, 0);
  const chart = svg("svg", {
    class: "usage-chart",
    width: WIDTH,
    height: HEIGHT,
    viewBox: `0 0 ${String(WIDTH)} ${String(HEIGHT)}`,
    role: "img",
    "aria-label": `calls per day over the last 7 days: ${countText(calls, refused)}`,
    "data-key-id": keyId,
    "data-calls": calls,
    "data-refused": refused,
  });
  chart.append(svg("line", { class: "usage-axis", x1: 0, x2: WIDTH, y1: HEIGHT - 0.5, y2: HEIGHT - 0.5 }));
  const { max, bars } = chartBars(days, WIDTH, HEIGHT - 1);
  chart.dataset.max = String(max);
  bars.forEach((bar, i) => {
    const d = days[i];
    if (!d) return;
    const g = svg("g", { class: "usage-day", "data-day": i, "data-calls": d.calls, "data-refused": d.refused });
    const title = svg("title", {});
    const end = new Date(Date.parse(d.start) + 24 * 3600 * 1000).toISOString();
    title.textContent = `${day(d.start)} – ${day(end)}: ${countText(d.calls, d.refused)}`;
    g.append(title);
    // An invisible full-height target, so the tooltip works over empty days too.
    g.append(svg("rect", { class: "usage-slot", x: bar.x, y: 0, width: bar.width, height: HEIGHT }));
    const base = HEIGHT - 1;
    if (bar.answered > 0) {
      g.append(svg("rect", { class: "usage-ok", x: bar.x, y: base - bar.answered, width: bar.width, height: bar.answered }));
    }
    if (bar.refused > 0) {
      g.append(
        svg("rect", { class: "usage-refused", x: bar.x, y: base - bar.answered - bar.refused, width: bar.width, height: bar.refused }),
      );
    }
    chart.append(g);
  });
  return chart;
}

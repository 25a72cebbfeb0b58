// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { PagedRows } from "./paged-rows";

const item = (n: number) => {
  const li = document.createElement("li");
  li.textContent = `tool ${String(n)}`;
  return li;
};
const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const shown = (list: HTMLElement) => Array.from(list.children, (li) => li.textContent);

describe("PagedRows", () => {
  it("shows a long list a page at a time, its bar moving back and forth", () => {
    const list = document.createElement("ul");
    const paged = new PagedRows(list, "tools", "tools", item, 25);
    paged.set(range(60));
    const next = paged.bar.element.querySelector<HTMLButtonElement>("#tools-next");
    const back = paged.bar.element.querySelector<HTMLButtonElement>("#tools-previous");
    expect(list.children).toHaveLength(25);
    expect(shown(list)[0]).toBe("tool 1");
    expect(back?.disabled).toBe(true);
    next?.click();
    expect(shown(list)[0]).toBe("tool 26");
    next?.click();
    expect(shown(list)).toEqual(range(10).map((n) => `tool ${String(n + 50)}`));
    expect(next?.disabled).toBe(true);
    back?.click();
    expect(shown(list)[0]).toBe("tool 26");
  });

  it("keeps its page across a refresh and steps back when the list shrinks under it", () => {
    const list = document.createElement("ul");
    const paged = new PagedRows(list, "conn", "connections", item, 25);
    paged.set(range(60));
    paged.bar.element.querySelector<HTMLButtonElement>("#conn-next")?.click();
    paged.bar.element.querySelector<HTMLButtonElement>("#conn-next")?.click();
    paged.set(range(60));
    expect(shown(list)[0]).toBe("tool 51");
    paged.set(range(30));
    expect(shown(list)[0]).toBe("tool 26");
    expect(list.dataset.page).toBe("1");
  });
});

// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConnectionView, LiveView, SiteSummary } from "../ipc";

/**
 * The Rust side, faked: two connected connections, and stderr streams that
 * stay open (as a live server's do) until the page unwatches them.
 */
const fake = vi.hoisted(() => ({
  watched: [] as string[],
  unwatched: [] as string[],
}));

vi.mock("../ipc", async (importOriginal) => {
  const real = await importOriginal<typeof import("../ipc")>();
  const live = (name: string): LiveView =>
    ({
      id: `${name}-1`,
      pid: 4242,
      state: "connected",
      server_name: "fixture",
      server_version: "1",
      protocol_version: "2025-11-25",
      exit: null,
      on_hold: false,
    }) as unknown as LiveView;
  const call = (name: string, args: Record<string, unknown>): Promise<unknown> => {
    switch (name) {
      case "list_connections":
        return Promise.resolve(
          ["docs", "search"].map((name): ConnectionView => ({ name, program: "/bin/true", args: [], live: live(name) })),
        );
      case "unwatch_stderr":
        fake.unwatched.push(args.stream as string);
        return Promise.resolve(true);
      default:
        return Promise.reject(new Error(`${name} is not faked`));
    }
  };
  // The stream stays open and sends nothing: the test is about stopping it.
  const callStreaming = (name: string, args: Record<string, unknown>): Promise<boolean> => {
    expect(name).toBe("watch_stderr");
    fake.watched.push(args.stream as string);
    return new Promise<boolean>(() => undefined);
  };
  return { ...real, call, callStreaming };
});

vi.mock("../session", () => ({
  currentSite: (): SiteSummary => ({ name: "fake", path: "/fake", scratch: true }) as unknown as SiteSummary,
  onSiteChange: () => () => undefined,
}));

const { connections } = await import("./connections");

/** Waits until `css` is in the screen (the row list loads asynchronously). */
async function found(root: HTMLElement, css: string): Promise<HTMLElement> {
  for (let i = 0; i < 100; i++) {
    const el = root.querySelector<HTMLElement>(css);
    if (el) return el;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`${css} never appeared`);
}

describe("leaving the Connections screen", () => {
  let leaving: AbortController;
  let screen: HTMLElement;

  beforeEach(() => {
    fake.watched.length = 0;
    fake.unwatched.length = 0;
    leaving = new AbortController();
    screen = connections.render(leaving.signal);
    document.body.replaceChildren(screen);
  });

  afterEach(() => {
    document.body.replaceChildren();
  });

  it("stops every stderr stream its tail tabs opened", async () => {
    for (const name of ["docs", "search"]) {
      (await found(screen, `#conn-rows tr[data-connection='${name}'] button[data-action='watch']`)).click();
    }
    // Watching docs again replaces its stream: the first one is stopped at once.
    (await found(screen, "#conn-rows tr[data-connection='docs'] button[data-action='watch']")).click();
    expect(fake.watched).toHaveLength(3);
    expect(fake.unwatched).toEqual([fake.watched[0]]);

    leaving.abort();
    expect([...fake.unwatched].sort()).toEqual([...fake.watched].sort());
    expect(new Set(fake.unwatched).size).toBe(fake.unwatched.length);
  });

  it("does not stop a stream twice that was closed by its tab", async () => {
    (await found(screen, "#conn-rows tr[data-connection='search'] button[data-action='watch']")).click();
    (await found(screen, ".tab-wrap[data-tail='search'] .tab-close")).click();
    expect(fake.unwatched).toEqual(fake.watched);
    leaving.abort();
    expect(fake.unwatched).toEqual(fake.watched);
  });
});

// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PROGRESS_AFTER_MS, whileBusy } from "./busy";

describe("whileBusy", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const makeButton = () => {
    const b = document.createElement("button");
    b.textContent = "Save";
    return b;
  };

  it("shows progress only once the action passes the threshold", async () => {
    const b = makeButton();
    let finish: (() => void) | undefined;
    const run = whileBusy(b, "Saving…", () => new Promise<void>((r) => (finish = r)));
    expect(b.disabled).toBe(true);
    expect(b.getAttribute("aria-busy")).toBe("true");
    vi.advanceTimersByTime(PROGRESS_AFTER_MS - 1);
    expect(b.textContent).toBe("Save");
    vi.advanceTimersByTime(1);
    expect(b.dataset.progress).toBe("shown");
    expect(b.textContent).toBe("Saving…");
    expect(b.querySelector(".spinner")).not.toBeNull();
    finish?.();
    await run;
    expect(b.textContent).toBe("Save");
    expect(b.disabled).toBe(false);
    expect(b.hasAttribute("aria-busy")).toBe(false);
    expect(b.dataset.progress).toBeUndefined();
  });

  it("a fast action never flickers, and a failure gives the button back", async () => {
    const b = makeButton();
    await whileBusy(b, "Saving…", () => Promise.resolve(1));
    vi.advanceTimersByTime(PROGRESS_AFTER_MS * 2);
    expect(b.textContent).toBe("Save");
    const failed = whileBusy(b, "Saving…", () => Promise.reject(new Error("no")));
    vi.advanceTimersByTime(PROGRESS_AFTER_MS);
    await expect(failed).rejects.toThrow("no");
    expect(b.textContent).toBe("Save");
    expect(b.disabled).toBe(false);
  });
});

import { defineConfig } from "vitest/config";

// Unit tests of the page's pure logic (no DOM, no Tauri): src/**/*.test.ts.
export default defineConfig({
  test: { include: ["src/**/*.test.ts"], environment: "node" },
});

import { defineConfig } from "vite";

// Tauri serves ui/dist through its own protocol and `tauri dev` expects the dev
// server on a fixed port (devUrl in tauri.conf.json).
export default defineConfig({
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
  },
});

// @ts-check
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  // src/generated/ is written by src-tauri/src/ipc_types.rs (ts-rs); tsc still checks it.
  { ignores: ["dist/", "node_modules/", "src/generated/"] },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      globals: globals.browser,
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    // This file is plain JS outside the tsconfig: lint it without types.
    files: ["**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  {
    // invoke() and Channel go through src/ipc.ts only, so errors keep one shape.
    files: ["src/**/*.ts"],
    ignores: ["src/ipc.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@tauri-apps/api", "@tauri-apps/api/*"],
              message: "Call commands through src/ipc.ts.",
            },
          ],
        },
      ],
    },
  },
);

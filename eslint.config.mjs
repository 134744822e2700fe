// Lint rules for gavel: typescript-eslint with type information, so that floating
// promises and unsafe any are caught.
import tseslint from "typescript-eslint";
import { gavelRules } from "./lint/gavel-plugin.mjs";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "charts/**", "manifests/**", "**/*.js", "**/*.mjs"] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  // Functions of one idea (issue 9 step 5): limits every function meets, so that they stay so.
  // The few larger ones say so where they stand (an eslint-disable naming the rule and why).
  {
    files: ["**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
      complexity: ["error", 25],
    },
  },
  // re2js is loaded at the first pattern compiled, through re2js() in src/engine/re2.ts
  // (ADR 0043): a value import would load it (300 KB) at the start of every command that imports it.
  {
    files: ["src/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": ["error", { paths: [{ name: "re2js", message: "use re2js() or compilePattern from src/engine/re2.ts (ADR 0043)", allowTypeImports: true }] }],
    },
  },
  // The floors of docs/layout.md and the file-length limit, each with a shrinking allowlist (ADR 0050).
  ...gavelRules(import.meta.dirname),
  { linterOptions: { reportUnusedDisableDirectives: "error" } },
);

// Three test tiers: pure unit tests beside the code, integration tests against real
// servers started by test/harness, and end-to-end tests on the single-node cluster.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["src/**/*.test.ts", "judges/**/*.test.ts", "bench/**/*.test.ts"], environment: "node" } },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          // The cluster up and the chart installed once for every file (test/harness/gavel-chart.ts).
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

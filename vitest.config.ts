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
          // Two files at a time: each starts its own servers (free ports, own temp dirs) and
          // most of a file's time is waiting on them, so two halve the tier on two cores
          // (315 s -> 165 s, 2026-11-25).
          fileParallelism: true,
          maxWorkers: 2,
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

// Three test tiers: pure unit tests beside the code, integration tests against real
// servers started by test/harness, and end-to-end tests on the single-node cluster.
import { defineConfig } from "vitest/config";

/** Files run at once in the group of the integration tier and the shared-controller e2e files. */
const SHARED_WORKERS = 3;

/** The tiers that spawn bin/gavel refuse to run an out-of-date dist/ (test/harness/dist-fresh.ts). */
const DIST_FRESH = "test/harness/dist-fresh.ts";

/** Both e2e projects: the cluster up and the chart installed once (test/harness/gavel-chart.ts). */
const E2E = {
  globalSetup: [DIST_FRESH, "test/e2e/global-setup.ts"],
  testTimeout: 600_000,
  hookTimeout: 600_000,
};

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["src/**/*.test.ts", "judges/**/*.test.ts", "bench/**/*.test.ts"], environment: "node" } },
      // The integration tier and the e2e files that only need the shared controller up run as one
      // group, three files at a time: most of a file's time is waiting on servers and pods, so
      // they overlap well on two cores (integration alone: 315 s with one file at a time, 165 s
      // with two, 2026-11-25). The e2e files that crash, restart or reconfigure the chart's
      // controller or NATS, or count its metrics, are named *.exclusive.test.ts and run after
      // that group, one at a time with nothing else running.
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: [DIST_FRESH],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: true,
          maxWorkers: SHARED_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/**/*.exclusive.test.ts"],
          ...E2E,
          fileParallelism: true,
          maxWorkers: SHARED_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "e2e-exclusive",
          include: ["test/e2e/**/*.exclusive.test.ts"],
          ...E2E,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});

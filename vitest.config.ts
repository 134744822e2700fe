// Three test tiers: pure unit tests beside the code, integration tests against real
// servers started by test/harness, and end-to-end tests on the single-node cluster.
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { CLUSTER_PROJECT, FILE_SLOTS } from "./test/harness/file-slots.js";

/** Files run at once by the e2e files that only need the shared controller up. */
const SHARED_WORKERS = 3;

/** The tiers that spawn bin/gavel refuse to run an out-of-date dist/ (test/harness/dist-fresh.ts). */
const DIST_FRESH = "test/harness/dist-fresh.ts";

/** Both e2e projects: the cluster up and the chart installed once (test/harness/gavel-chart.ts). */
const E2E_SETUP = [DIST_FRESH, "test/e2e/global-setup.ts"];
const E2E_TIMEOUTS = { testTimeout: 600_000, hookTimeout: 600_000 };

/** The projects whose files take a slot before they start (test/harness/file-slots.ts). */
const FILE_SLOTS_SETUP = "test/harness/file-slots.ts";
const EXCLUSIVE_FILES = readdirSync(fileURLToPath(new URL("test/e2e/", import.meta.url))).filter((f) => f.endsWith(".exclusive.test.ts")).length;
const SLOTTED = {
  setupFiles: ["test/harness/take-file-slot.ts"],
  fileParallelism: true,
  // Vitest starts every file of the group; FILE_SLOTS of them are at work at once, the others
  // wait for their slot. Each exclusive file waits in a worker of its own, so that the next one
  // starts the moment the cluster is free.
  maxWorkers: FILE_SLOTS + EXCLUSIVE_FILES,
  sequence: { groupOrder: 2 },
};

export default defineConfig({
  test: {
    projects: [
      // Unit tests get 30 s each, not vitest's 5 s: the property tests and the CLI spawns take 1-3 s
      // alone and passed 5 s on a quiet machine, but timed out at load 15-20 (two cores shared
      // with image and Go builds, 2026-12-07); a unit test asserts results, never durations.
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "judges/**/*.test.ts", "bench/**/*.test.ts", "test/harness/**/*.test.ts", "lint/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
        },
      },
      // The controller's fast tier: the Execution reconciler on a control plane of its own (API
      // server + etcd, no kubelet) with in-memory workloads; needs the Kubernetes binaries, not
      // the cluster, images or NATS (make test-controller; make test runs it too). In make test it
      // runs beside the integration tier and takes one of its slots, as an integration file does
      // (vitest refuses projects of one group with different maxWorkers).
      {
        test: {
          name: "controller",
          include: ["test/controller/**/*.test.ts"],
          globalSetup: [FILE_SLOTS_SETUP],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          ...SLOTTED,
          env: { GAVEL_FILE_SLOT: "shared" },
        },
      },
      // First the e2e files that only need the shared controller up, three at a time: most of a
      // file's time is waiting on pods, so they overlap well on two cores. Then the e2e files
      // that crash, restart or reconfigure the chart's controller or NATS, or count its metrics
      // (*.exclusive.test.ts), one at a time with no other e2e file running, and beside them the
      // integration tier, which never touches the cluster: two of its files at a time (three
      // in a run without exclusive files). The exclusive files are the run's longest chain
      // (455 s one after another at a716ab2); the integration tier (429 s of files) fits beside.
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/**/*.exclusive.test.ts"],
          globalSetup: E2E_SETUP,
          ...E2E_TIMEOUTS,
          fileParallelism: true,
          maxWorkers: SHARED_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: CLUSTER_PROJECT,
          include: ["test/e2e/**/*.exclusive.test.ts"],
          globalSetup: [...E2E_SETUP, FILE_SLOTS_SETUP],
          ...E2E_TIMEOUTS,
          ...SLOTTED,
          env: { GAVEL_FILE_SLOT: "cluster" },
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: [DIST_FRESH, FILE_SLOTS_SETUP],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          ...SLOTTED,
          env: { GAVEL_FILE_SLOT: "shared" },
        },
      },
    ],
  },
});

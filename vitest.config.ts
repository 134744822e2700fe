// Three test tiers: pure unit tests beside the code, integration tests against real
// servers started by test/harness, and end-to-end tests on the single-node cluster.
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { CLUSTER_PROJECT, FILE_SLOTS, TierSequencer } from "./test/harness/file-slots.js";

/** The tiers that spawn bin/gavel refuse to run an out-of-date dist/ (test/harness/dist-fresh.ts). */
const DIST_FRESH = "test/harness/dist-fresh.ts";

/** Both e2e projects: the cluster up and the chart installed once (test/harness/gavel-chart.ts). */
const E2E_SETUP = [DIST_FRESH, "test/e2e/global-setup.ts"];
const E2E_TIMEOUTS = { testTimeout: 600_000, hookTimeout: 600_000 };

/** The e2e projects' files take a slot before they start (test/harness/file-slots.ts). */
const FILE_SLOTS_SETUP = "test/harness/file-slots.ts";
const TAKE_SLOT = "test/harness/take-file-slot.ts";
const E2E_FILES = readdirSync(fileURLToPath(new URL("test/e2e/", import.meta.url))).filter((f) => f.endsWith(".test.ts")).length;
const SLOTTED = {
  fileParallelism: true,
  // Vitest starts the files in TierSequencer's order, the lanes' first: every e2e file gets a
  // worker of its own (idle while it waits for its slot), so that the next file of a lane or of
  // the shared release starts the moment a slot is free.
  maxWorkers: E2E_FILES,
  setupFiles: [TAKE_SLOT],
  sequence: { groupOrder: 1 },
};
/**
 * The tiers that never touch the cluster, after the e2e tier, FILE_SLOTS files at a time: beside
 * five e2e files their API-server and process timeouts failed at load 20-40 (ADR 0081).
 */
const OFF_CLUSTER = { fileParallelism: true, maxWorkers: FILE_SLOTS, sequence: { groupOrder: 2 } };

export default defineConfig({
  test: {
    sequence: { sequencer: TierSequencer },
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
      // runs beside the integration tier, as one of its files (vitest refuses projects of one
      // group with different maxWorkers).
      {
        test: {
          name: "controller",
          include: ["test/controller/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          ...OFF_CLUSTER,
        },
      },
      // First the e2e tier: the files that only need the shared release's controller up, three at
      // a time (most of a file's time is waiting on pods, so they overlap well on two cores), and
      // beside them the files that crash, restart or reconfigure the chart's controller or NATS,
      // or count its metrics (*.exclusive.test.ts), each on a release of its lane (ADR 0081):
      // E2E_LANES lanes, one file at a time in each. Each release's controller reconciles only
      // its own namespaces (watchNamespaceSelector), so a lane's crashes reach no other file.
      // Then the integration and controller tiers, which never touch the cluster.
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/**/*.exclusive.test.ts"],
          globalSetup: [...E2E_SETUP, FILE_SLOTS_SETUP],
          ...E2E_TIMEOUTS,
          ...SLOTTED,
          env: { GAVEL_FILE_SLOT: "e2e" },
        },
      },
      {
        test: {
          name: CLUSTER_PROJECT,
          include: ["test/e2e/**/*.exclusive.test.ts"],
          globalSetup: [...E2E_SETUP, FILE_SLOTS_SETUP],
          ...E2E_TIMEOUTS,
          ...SLOTTED,
          setupFiles: [TAKE_SLOT, "test/e2e/lane-setup.ts"],
          env: { GAVEL_FILE_SLOT: "cluster" },
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: [DIST_FRESH],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          ...OFF_CLUSTER,
        },
      },
    ],
  },
});

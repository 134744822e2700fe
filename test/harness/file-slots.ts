// Which test files of one vitest run are at work at once, where vitest's own groups cannot say
// it (vitest.config.ts): the e2e files that crash, restart or reconfigure the chart's
// controller or NATS (*.exclusive.test.ts) have the cluster alone, one at a time, while the
// integration files, which never touch the cluster, run beside them. Vitest starts them all;
// each file first takes its slot here (the projects' setupFiles), and a file whose turn has
// not come waits before it loads. A slot is an abstract Unix socket this process listens on:
// taken by one process at a time, given back when the file ends or its process dies.
import { createServer, type Server } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { TestProject } from "vitest/node";

/** Files at work at once in a run of integration and exclusive e2e files (two cores; most of a file's time is waiting on servers and pods). */
export const FILE_SLOTS = 3;

/** What a file needs (the project's env GAVEL_FILE_SLOT): the cluster alone, or one of the other slots. */
export type SlotKind = "cluster" | "shared";

/** The project whose files take the cluster alone. */
export const CLUSTER_PROJECT = "e2e-exclusive";

const RUN_ENV = "GAVEL_FILE_SLOTS_RUN";
const SHARED_ENV = "GAVEL_FILE_SLOTS_SHARED";

/**
 * The slots a file of `kind` may take, as socket names: the cluster's one, or the shared ones,
 * one fewer while the run has exclusive files (the cluster's file is one of the FILE_SLOTS).
 */
export function slotNames(run: string, kind: SlotKind, shared: number): string[] {
  if (kind === "cluster") return [`\0gavel-test-${run}-cluster`];
  return Array.from({ length: shared }, (_, i) => `\0gavel-test-${run}-shared-${i}`);
}

/** Listens on `name`, or undefined when another process holds it. */
function listen(name: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(undefined) : reject(err)));
    server.listen(name, () => resolve(server));
  });
}

/** Takes the first free one of `names`, waiting until one is; resolves with its release. */
export async function takeSlot(names: readonly string[], everyMs = 200): Promise<() => Promise<void>> {
  if (names.length === 0) throw new Error("takeSlot: no slot names");
  for (;;) {
    for (const name of names) {
      const server = await listen(name);
      if (server !== undefined) return () => new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await sleep(everyMs);
  }
}

/**
 * Global setup of the projects that take slots, in vitest's process before any file starts:
 * names the run (its slots are its own), and when the exclusive project is in it, leaves the
 * other files FILE_SLOTS - 1 slots. Files inherit this environment.
 */
export default function setup(project: TestProject): void {
  process.env[RUN_ENV] ??= String(process.pid);
  if (project.name === CLUSTER_PROJECT) process.env[SHARED_ENV] = String(FILE_SLOTS - 1);
}

/** The slot names of this test file's process (a setup file), from what setup() left in its environment. */
export function slotsOfThisFile(env: NodeJS.ProcessEnv = process.env): string[] {
  const kind = env.GAVEL_FILE_SLOT;
  if (kind !== "cluster" && kind !== "shared")
    throw new Error(`GAVEL_FILE_SLOT is ${JSON.stringify(kind)}: set it to cluster or shared in the project's env (vitest.config.ts)`);
  const run = env[RUN_ENV];
  if (run === undefined)
    throw new Error(`${RUN_ENV} is not set: add test/harness/file-slots.ts to the project's globalSetup (vitest.config.ts)`);
  return slotNames(run, kind, Number(env[SHARED_ENV] ?? FILE_SLOTS));
}

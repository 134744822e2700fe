// Which test files of one vitest run are at work at once, where vitest's own groups cannot say
// it (vitest.config.ts). The e2e files that crash, restart or reconfigure the chart's controller
// or NATS (*.exclusive.test.ts) each run on a chart release of their lane (gavel-lane-N, ADR
// 0081): E2E_LANES lanes, one file at a time in each, beside the e2e files that share the one
// release (E2E_SLOTS of them at a time). Vitest starts them all; each file first takes its
// slot here (the projects' setupFiles), and a file whose turn has not come waits before it
// loads. A slot is an abstract Unix socket this process listens on: taken by one process at a
// time, given back when the file ends or its process dies.
import { createServer, type Server } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Integration and controller files at work at once, after the e2e tier (two cores; most of a file's time is waiting on servers). */
export const FILE_SLOTS = 3;

/** E2e files on the shared release at work at once (most of a file's time is waiting on pods). */
export const E2E_SLOTS = 3;

/** Lanes of exclusive e2e files, each a chart release of its own (GAVEL_E2E_LANES, default 2; measured in docs/development.md). */
export const E2E_LANES = Number(process.env.GAVEL_E2E_LANES ?? "2");

/** What a file needs (the project's env GAVEL_FILE_SLOT): a lane of its own, or a shared-release e2e slot. */
export type SlotKind = "cluster" | "e2e";

/** The project whose files each take a lane's release alone. */
export const CLUSTER_PROJECT = "e2e-exclusive";

const RUN_ENV = "GAVEL_FILE_SLOTS_RUN";

/** The slots a file of `kind` may take, as socket names: the lanes, or the shared release's e2e slots. */
export function slotNames(run: string, kind: SlotKind, lanes = E2E_LANES): string[] {
  if (kind === "cluster") return Array.from({ length: lanes }, (_, i) => `\0gavel-test-${run}-lane-${i + 1}`);
  return Array.from({ length: E2E_SLOTS }, (_, i) => `\0gavel-test-${run}-e2e-${i}`);
}

/** Projects in the order their files get vitest's workers: the lanes' first, so that the longest chains start at once. */
const PROJECT_ORDER = [CLUSTER_PROJECT, "e2e"];

/** Vitest's order of files (longest first, from its cache), grouped by PROJECT_ORDER. */
export class TierSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => ((i) => (i < 0 ? PROJECT_ORDER.length : i))(PROJECT_ORDER.indexOf(f.project.name));
    return (await super.sort(files))
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

/** Listens on `name`, or undefined when another process holds it. */
function listen(name: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(undefined) : reject(err)));
    server.listen(name, () => resolve(server));
  });
}

/** A slot taken: which of the names (its index), and its release. */
export interface TakenSlot {
  index: number;
  release: () => Promise<void>;
}

/** Takes the first free one of `names`, waiting until one is. */
export async function takeSlot(names: readonly string[], everyMs = 200): Promise<TakenSlot> {
  if (names.length === 0) throw new Error("takeSlot: no slot names");
  for (;;) {
    for (const [index, name] of names.entries()) {
      const server = await listen(name);
      if (server !== undefined) return { index, release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
    }
    await sleep(everyMs);
  }
}

/** Global setup of the projects that take slots, in vitest's process before any file starts: names the run (its slots are its own). Files inherit this environment. */
export default function setup(): void {
  process.env[RUN_ENV] ??= String(process.pid);
}

/** The slot names of this test file's process (a setup file), from what setup() left in its environment. */
export function slotsOfThisFile(env: NodeJS.ProcessEnv = process.env): string[] {
  const kind = env.GAVEL_FILE_SLOT;
  if (kind !== "cluster" && kind !== "e2e")
    throw new Error(`GAVEL_FILE_SLOT is ${JSON.stringify(kind)}: set it to cluster or e2e in the project's env (vitest.config.ts)`);
  const run = env[RUN_ENV];
  if (run === undefined)
    throw new Error(`${RUN_ENV} is not set: add test/harness/file-slots.ts to the project's globalSetup (vitest.config.ts)`);
  return slotNames(run, kind);
}

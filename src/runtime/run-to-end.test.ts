import { describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { InMemoryWorkloads } from "../../test/harness/in-memory-workloads.js";
import type { WorkloadPlacement, WorkloadSpec } from "./workload.js";
import { runToEnd } from "./run-to-end.js";

const spec: WorkloadSpec = { name: "quick", image: "any", mounts: [], network: "none", timeoutSeconds: 30 };

describe("runToEnd", () => {
  it("times a run from when it was asked for, so a workload that ended before ensure returned never ends before it started", async () => {
    const inner = new InMemoryWorkloads(() => ({ exitCode: 7, stdout: "to out" }));
    // A busy engine: the container ran and exited while create and start were still answering.
    const slow = Object.assign(Object.create(inner) as InMemoryWorkloads, {
      ensure: async (s: WorkloadSpec, p: WorkloadPlacement) => {
        const made = await inner.ensure(s, p);
        await sleep(30);
        return made;
      },
    });
    const r = await runToEnd(slow, spec, { namespace: "local" });
    expect(r).toMatchObject({ exitCode: 7, stdout: "to out" });
    expect(r.finishedAt.getTime()).toBeGreaterThanOrEqual(r.startedAt.getTime());
  });
});

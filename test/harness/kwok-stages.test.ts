// kwok's configuration for the scale harness: CRI log lines and the documents of its --config.
import { describe, expect, it } from "vitest";
import { criLog, kwokConfig } from "./kwok-stages.js";

describe("criLog", () => {
  it("writes one full stdout line per line of the stream, framed records as they are", () => {
    const at = new Date("2026-12-07T07:00:00.000Z");
    expect(criLog("Summary\n\x1eEwarn\n", at)).toBe(
      "2026-12-07T07:00:00.000Z stdout F Summary\n2026-12-07T07:00:00.000Z stdout F \x1eEwarn\n",
    );
    expect(criLog("no newline", at)).toBe("2026-12-07T07:00:00.000Z stdout F no newline\n");
  });
});

describe("kwokConfig", () => {
  it("holds the node and pod Stages, the run time and one ClusterLogs per log", () => {
    const text = kwokConfig({ podRunMs: 1500, logs: [{ name: "workers", file: "/tmp/w.log", pods: ["gavel-a-i1-ex"] }] });
    const docs = text.split("---\n");
    expect(docs.map((d) => /name: ([\w"-]+)/.exec(d)?.[1])).toEqual([
      "node-initialize",
      "pod-ready",
      "pod-complete",
      "pod-delete",
      '"workers"',
    ]);
    expect(text).toContain("durationMilliseconds: 1500");
    expect(docs[4]).toContain('matchNames: ["gavel-a-i1-ex"]');
    expect(docs[4]).toContain('logsFile: "/tmp/w.log"');
  });

  it("holds named pods until their annotation is set, the others for the run time", () => {
    const text = kwokConfig({
      podRunMs: 800,
      logs: [],
      held: { pods: ["w-i1-ex"], annotation: "scale.gavel.dev/program-ended" },
    });
    const docs = text.split("---\n");
    expect(docs.map((d) => /name: ([\w"-]+)/.exec(d)?.[1])).toEqual([
      "node-initialize",
      "pod-ready",
      "pod-complete",
      "pod-complete-held",
      "pod-delete",
    ]);
    expect(docs[2]).toContain('{ key: .metadata.name, operator: NotIn, values: ["w-i1-ex"] }');
    expect(docs[2]).toContain("durationMilliseconds: 800");
    expect(docs[3]).toContain(`{ key: '.metadata.annotations["scale.gavel.dev/program-ended"]', operator: Exists }`);
    expect(docs[3]).toContain("durationMilliseconds: 0");
  });
});

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
});

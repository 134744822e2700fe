// The programs gavel knows of its own images are the ENTRYPOINTs their Dockerfiles give.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { knownEntrypoint } from "./images.js";

const ROOT = join(import.meta.dirname, "..", "..");
const entrypointOf = (dockerfile: string): unknown =>
  JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(join(ROOT, dockerfile), "utf8"))?.[1] ?? "null");

describe("gavel's images' programs", () => {
  it("are the ENTRYPOINTs of their Dockerfiles", () => {
    expect(knownEntrypoint("gavel/agent:dev")).toEqual(entrypointOf("src/agent/Dockerfile"));
    for (const judge of ["rule-judge", "command-judge", "llm-judge"]) {
      expect(knownEntrypoint(`gavel/${judge}:0.1.0`), judge).toEqual(entrypointOf(`judges/${judge}/Dockerfile`));
    }
  });

  it("are known whatever the tag or digest, and only for gavel's repositories", () => {
    expect(knownEntrypoint("gavel/rule-judge")).toEqual(knownEntrypoint("gavel/rule-judge:dev"));
    expect(knownEntrypoint(`gavel/rule-judge@sha256:${"a".repeat(64)}`)).toEqual(knownEntrypoint("gavel/rule-judge:dev"));
    expect(knownEntrypoint("registry.example:5000/gavel/rule-judge:dev")).toBeUndefined();
    expect(knownEntrypoint("mine/rule-judge:dev")).toBeUndefined();
    expect(knownEntrypoint("gavel/example-k8s-worker:dev")).toBeUndefined();
  });
});

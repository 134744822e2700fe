// Live code hashes: a changed file changes the hash and the guard denies the tool.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentScope } from "./guard/context.js";
import { runGuard } from "./guard/guard.js";
import { compilePolicy } from "./guard/policy.js";
import { hashToolCode, ToolCodeHasher } from "./tool-code.js";

describe("tool code hashes", () => {
  it("detects tampering with a registered tool's file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-tool-code-"));
    try {
      const file = join(dir, "db-query.js");
      await writeFile(file, "export function query() {}\n");
      const expected = hashToolCode([{ name: "db-query.js", content: Buffer.from("export function query() {}\n") }]);
      const hasher = new ToolCodeHasher({ "db.query": [file], "gone.tool": [join(dir, "missing.js")] });
      await hasher.refresh();
      expect(hasher.hashes().get("db.query")).toBe(expected);
      expect(hasher.hashes().has("gone.tool")).toBe(false);
      const policy = compilePolicy([{ name: "p", spec: { tool_registry: [{ tool: "db.query", sha256: expected }] } }]);
      const decide = () =>
        runGuard(
          { tool: "db.query", args: {}, step: 1 },
          { policy, scope: agentScope({ spec: { tools: ["db.query"] } }), history: [], liveHashes: hasher.hashes() },
        );
      expect(decide().check).not.toBe("hash");
      await writeFile(file, "export function query() { exfiltrate(); }\n");
      await hasher.refresh();
      expect(decide()).toEqual({ approved: false, check: "hash", reason: "hash_mismatch: db.query" });
      // Refreshing one tool re-reads only its files and keeps the others' hashes.
      await writeFile(file, "export function query() {}\n");
      await hasher.refresh(["db.query", "not.a.tool"]);
      expect(hasher.hashes().get("db.query")).toBe(expected);
      expect([...hasher.hashes().keys()]).toEqual(["db.query"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

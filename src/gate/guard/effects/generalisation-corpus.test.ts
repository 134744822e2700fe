// The generalisation corpus (test/fixtures/threats/generalisation.json, issue 27): commands from
// public sources the threat corpus does not use, in a tuning part the guard was developed
// against and a held-out part measured once, after the work. Each part is measured under the
// standard and the strict profile; the figures and every miss of the tuning part are in
// docs/guard.md.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { GuardProfile } from "../../../api/types.js";
import { agentScope } from "../context.js";
import { runGuard } from "../guard.js";
import { compilePolicy } from "../policy.js";

interface Entry {
  id: string;
  command: string;
  source: string;
  class?: string;
}
interface Part {
  dangerous: Entry[];
  everyday: Entry[];
}
const threats = JSON.parse(readFileSync(new URL("../../../../test/fixtures/threats/corpus.json", import.meta.url), "utf8")) as Part;
const corpus = JSON.parse(readFileSync(new URL("../../../../test/fixtures/threats/generalisation.json", import.meta.url), "utf8")) as { tuning: Part; heldout: Part };
const docs = readFileSync(new URL("../../../../docs/guard.md", import.meta.url), "utf8");

const scope = agentScope({ spec: { tools: ["cmd.run"] } });
const views = { home: "/home/agent", cwd: "/workspace" };
const policies: Record<GuardProfile, ReturnType<typeof compilePolicy>> = {
  standard: compilePolicy([]),
  strict: compilePolicy([{ name: "strict", spec: { profile: "strict" } }]),
  permissive: compilePolicy([{ name: "permissive", spec: { profile: "permissive" } }]),
};
const decide = (command: string, profile: GuardProfile) => runGuard({ tool: "cmd.run", args: { command }, step: 1 }, { policy: policies[profile], scope, history: [], views });
/** Denied or flagged under its class: the denial's reason or one of the flags names it. */
const caught = (e: Entry, profile: GuardProfile): boolean => {
  const d = decide(e.command, profile);
  return [d.reason ?? "", ...(d.flags ?? [])].some((t) => t.startsWith(`${e.class ?? ""}: `));
};

/** Dangerous caught by class and everyday denied, with the misses and denials by id. */
function measure(part: Part, profile: GuardProfile): { caught: number; misses: string[]; denied: string[] } {
  const misses = part.dangerous.filter((e) => !caught(e, profile)).map((e) => e.id);
  const stopped = part.dangerous.filter((e) => {
    const d = decide(e.command, profile);
    return !d.approved || (d.flags ?? []).length > 0;
  }).length;
  const denied = part.everyday.filter((e) => !decide(e.command, profile).approved).map((e) => e.id);
  const pct = (n: number, of: number): string => `${((n / of) * 100).toFixed(1)}%`;
  console.log(
    `generalisation ${profile}: ${part.dangerous.length - misses.length}/${part.dangerous.length} dangerous caught by class (${pct(part.dangerous.length - misses.length, part.dangerous.length)}), ${stopped} denied or flagged for any reason (${pct(stopped, part.dangerous.length)}); ${denied.length}/${part.everyday.length} everyday denied (${pct(denied.length, part.everyday.length)})`,
  );
  return { caught: part.dangerous.length - misses.length, misses, denied };
}

describe("generalisation corpus", () => {
  it("names a source for every entry and a class for every dangerous one", () => {
    const all = [...corpus.tuning.dangerous, ...corpus.tuning.everyday, ...corpus.heldout.dangerous, ...corpus.heldout.everyday];
    expect(all.filter((e) => !/^[\w.-]+\/[\w.-]+(@[0-9a-f]{7})?:\S/.test(e.source)).map((e) => e.id)).toEqual([]);
    expect([...corpus.tuning.dangerous, ...corpus.heldout.dangerous].filter((e) => e.class === undefined).map((e) => e.id)).toEqual([]);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
  });

  for (const profile of ["standard", "strict"] as const) {
    it(`tuning part, ${profile}: reports what it catches`, () => {
      const r = measure(corpus.tuning, profile);
      console.log(`  misses: ${r.misses.join(" ")}\n  denied: ${r.denied.join(" ")}`);
      expect(docs.length).toBeGreaterThan(0);
    });
    it(`held-out part, ${profile}: reports what it catches`, () => {
      const r = measure(corpus.heldout, profile);
      console.log(`  misses: ${r.misses.join(" ")}\n  denied: ${r.denied.join(" ")}`);
    });
    it(`threat corpus, ${profile}: reports what it catches`, () => {
      measure(threats, profile);
    });
  }
});

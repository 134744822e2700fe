// The generalisation corpus (test/fixtures/threats/generalisation.json, issue 27): commands from
// public sources the threat corpus does not use, in a tuning part the guard was developed
// against, a held-out part measured before and after the first round of work (and read since),
// a fresh part committed before the second round and measured once, after it (its misses were
// read for the third round), a third part committed before the third round (read for the fourth),
// a fourth part committed before the fourth round (read for the fifth), a fifth part committed
// before the fifth round (read for the sixth), a sixth part committed before the sixth round
// (read for the seventh), a seventh part committed before the seventh round (read for the eighth),
// an eighth part committed before the eighth round (read for the ninth), and a ninth part committed before the ninth
// round and measured once, after it. Each part is measured under the
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
  /** An everyday command that does what a class or a built-in table covers: reported, not counted. */
  by_design?: string;
}
interface Part {
  dangerous: Entry[];
  everyday: Entry[];
}
const threats = JSON.parse(readFileSync(new URL("../../../../test/fixtures/threats/corpus.json", import.meta.url), "utf8")) as Part;
/** The figures of the held-out, fresh, third, fourth, fifth, sixth, seventh, eighth and ninth parts after the work (docs/guard.md), as shares: the tests keep them from regressing. */
const FLOOR: Record<
  "heldout" | "fresh" | "third" | "fourth" | "fifth" | "sixth" | "seventh" | "eighth" | "ninth",
  Record<"standard" | "strict", { caught: number; denied: number }>
> = {
  heldout: { standard: { caught: 178 / 203, denied: 2 / 496 }, strict: { caught: 178 / 203, denied: 2 / 496 } },
  fresh: { standard: { caught: 126 / 130, denied: 1 / 604 }, strict: { caught: 126 / 130, denied: 5 / 604 } },
  third: { standard: { caught: 63 / 71, denied: 3 / 698 }, strict: { caught: 63 / 71, denied: 6 / 698 } },
  fourth: { standard: { caught: 42 / 57, denied: 0 / 270 }, strict: { caught: 42 / 57, denied: 1 / 270 } },
  fifth: { standard: { caught: 126 / 130, denied: 0 / 303 }, strict: { caught: 126 / 130, denied: 24 / 303 } },
  sixth: { standard: { caught: 120 / 146, denied: 0 / 64 }, strict: { caught: 120 / 146, denied: 0 / 64 } },
  seventh: { standard: { caught: 25 / 26, denied: 0 / 35 }, strict: { caught: 25 / 26, denied: 0 / 35 } },
  eighth: { standard: { caught: 35 / 40, denied: 1 / 153 }, strict: { caught: 35 / 40, denied: 2 / 153 } },
  ninth: { standard: { caught: 27 / 56, denied: 11 / 98 }, strict: { caught: 27 / 56, denied: 14 / 98 } },
};
const corpus = JSON.parse(readFileSync(new URL("../../../../test/fixtures/threats/generalisation.json", import.meta.url), "utf8")) as {
  tuning: Part;
  heldout: Part;
  fresh: Part;
  third: Part;
  /** The fourth held-out part: committed before the guard was run on it, measured once after the fourth round. */
  fourth: Part;
  /** The fifth held-out part: committed before the guard was run on it, measured once after the fifth round. */
  fifth: Part;
  /** The sixth held-out part: committed before the guard was run on it, measured once after the sixth round. */
  sixth: Part;
  /** The seventh held-out part: committed before the guard was run on it, measured once after the seventh round. */
  seventh: Part;
  /** The eighth held-out part: committed before the guard was run on it, measured once after the eighth round. */
  eighth: Part;
  /** The ninth held-out part: committed before the guard was run on it, measured once after the ninth round. */
  ninth: Part;
};
const docs = readFileSync(new URL("../../../../docs/guard.md", import.meta.url), "utf8");

const scope = agentScope({ spec: { tools: ["cmd.run"] } });
const views = { home: "/home/agent", cwd: "/workspace" };
const policies: Record<GuardProfile, ReturnType<typeof compilePolicy>> = {
  standard: compilePolicy([]),
  strict: compilePolicy([{ name: "strict", spec: { profile: "strict" } }]),
  permissive: compilePolicy([{ name: "permissive", spec: { profile: "permissive" } }]),
};
const decide = (command: string, profile: GuardProfile) =>
  runGuard({ tool: "cmd.run", args: { command }, step: 1 }, { policy: policies[profile], scope, history: [], views });
/** Denied or flagged under its class: the denial's reason or one of the flags names it (or the payload it carries). */
const caught = (e: Entry, profile: GuardProfile): boolean => {
  const d = decide(e.command, profile);
  // A payload written to run later is named persistence and carries its own class in parentheses.
  return [d.reason ?? "", ...(d.flags ?? [])].some((t) => t.startsWith(`${e.class ?? ""}: `) || t.includes(`(${e.class ?? ""}: `));
};

/** Dangerous caught by class and everyday denied (those denied by design apart), with the misses and denials by id. */
function measure(
  part: Part,
  profile: GuardProfile,
): { share: number; misses: string[]; denied: string[]; deniedShare: number; runAs: string[] } {
  const misses = part.dangerous.filter((e) => !caught(e, profile)).map((e) => e.id);
  const stopped = part.dangerous.filter((e) => {
    const d = decide(e.command, profile);
    return !d.approved || (d.flags ?? []).length > 0;
  }).length;
  const deniedAll = part.everyday.filter((e) => !decide(e.command, profile).approved);
  const denied = deniedAll.filter((e) => e.by_design === undefined).map((e) => e.id);
  // Denied only as a command run as another user: strict's choice (ADR 0078), flagged under standard.
  const runAs = deniedAll
    .filter((e) => e.by_design === undefined && decide(e.command, profile).reason?.startsWith("privilege_change: ") === true)
    .map((e) => e.id);
  const counted = part.everyday.filter((e) => e.by_design === undefined).length;
  const pct = (n: number, of: number): string => `${((n / of) * 100).toFixed(1)}%`;
  console.log(
    `generalisation ${profile}: ${part.dangerous.length - misses.length}/${part.dangerous.length} dangerous caught by class (${pct(part.dangerous.length - misses.length, part.dangerous.length)}), ${stopped} denied or flagged for any reason (${pct(stopped, part.dangerous.length)}); ${deniedAll.length}/${part.everyday.length} everyday denied (${pct(deniedAll.length, part.everyday.length)}), ${denied.length}/${counted} not counting those denied by design (${pct(denied.length, counted)}), ${runAs.length} of them only as run as another user`,
  );
  return { share: 1 - misses.length / part.dangerous.length, misses, denied, deniedShare: denied.length / counted, runAs };
}

describe("generalisation corpus", () => {
  it("names a source for every entry and a class for every dangerous one", () => {
    const parts = [
      corpus.tuning,
      corpus.heldout,
      corpus.fresh,
      corpus.third,
      corpus.fourth,
      corpus.fifth,
      corpus.sixth,
      corpus.seventh,
      corpus.eighth,
      corpus.ninth,
    ];
    const all = parts.flatMap((p) => [...p.dangerous, ...p.everyday]);
    expect(all.filter((e) => !/^[\w.-]+\/[\w.-]+(@[0-9a-f]{7})?:\S/.test(e.source)).map((e) => e.id)).toEqual([]);
    expect(
      parts
        .flatMap((p) => p.dangerous)
        .filter((e) => e.class === undefined)
        .map((e) => e.id),
    ).toEqual([]);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
  });

  for (const profile of ["standard", "strict"] as const) {
    it(`tuning part, ${profile}: >= 95 % of the dangerous caught by class, <= 1 % of the everyday denied; every miss and denial is listed in docs/guard.md`, () => {
      const r = measure(corpus.tuning, profile);
      expect(r.share).toBeGreaterThanOrEqual(0.95);
      // strict denies every `sudo X` by choice (ADR 0078): those are counted in docs/guard.md, not held to this limit.
      const denied = r.denied.filter((id) => !r.runAs.includes(id));
      expect(denied.length / corpus.tuning.everyday.filter((e) => e.by_design === undefined).length).toBeLessThanOrEqual(0.01);
      expect([...r.misses, ...denied].filter((id) => !docs.includes(id))).toEqual([]);
    });
    // Measured once after a round (the ninth after round 9), some read since: the test keeps the figures docs/guard.md reports from regressing.
    for (const part of ["heldout", "fresh", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"] as const)
      it(`${part === "heldout" ? "held-out" : part} part, ${profile}: catches no fewer and denies no more than docs/guard.md reports`, () => {
        const r = measure(corpus[part], profile);
        // 1 - 29/56 and 27/56 differ in the last bit: the floors are shares of whole commands.
        expect(r.share).toBeGreaterThanOrEqual(FLOOR[part][profile].caught - 1e-9);
        expect(r.deniedShare).toBeLessThanOrEqual(FLOOR[part][profile].denied + 1e-9);
      });
    it(`threat corpus, ${profile}: reports what it catches`, () => {
      const r = measure(threats, profile);
      expect(r.share).toBeGreaterThanOrEqual(0.97);
    });
  }
});

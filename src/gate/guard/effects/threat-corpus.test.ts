// The threat corpus (test/fixtures/threats/corpus.json): commands from other projects' public
// material, each with its source. Dangerous ones must be denied or flagged under their threat
// class (>= 97 %), everyday ones must not be denied (<= 1 %); generated obfuscations of the
// dangerous one-liners (quoting, a variable, base64, a here-document, sh -c, xargs, a copy of
// the binary) must be caught under the same class. Every miss is listed in docs/guard.md.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { agentScope } from "../context.js";
import { runGuard } from "../guard.js";
import { compilePolicy } from "../policy.js";

interface Entry {
  id: string;
  command: string;
  source: string;
  class?: string;
}
const corpus = JSON.parse(readFileSync(new URL("../../../../test/fixtures/threats/corpus.json", import.meta.url), "utf8")) as {
  dangerous: Entry[];
  everyday: Entry[];
};
const docs = readFileSync(new URL("../../../../docs/guard.md", import.meta.url), "utf8");

const policy = compilePolicy([]);
const scope = agentScope({ spec: { tools: ["cmd.run"] } });
const views = { home: "/home/agent", cwd: "/workspace" };
const decide = (command: string) => runGuard({ tool: "cmd.run", args: { command }, step: 1 }, { policy, scope, history: [], views });
/** Denied or flagged under its class: the denial's reason or one of the flags names it (or the payload it carries). */
const caught = (command: string, cls: string): boolean => {
  const d = decide(command);
  // A payload written to run later is named persistence and carries its own class in parentheses.
  return [d.reason ?? "", ...(d.flags ?? [])].some((t) => t.startsWith(`${cls}: `) || t.includes(`(${cls}: `));
};

/** Obfuscations of a one-line command, each as sh would still run it. */
function obfuscations(cmd: string): Record<string, string> {
  const [first = "", ...restWords] = cmd.split(" ");
  const rest = restWords.join(" ");
  const plainFirst = /^[a-z][a-z0-9_-]+$/.test(first);
  const out: Record<string, string> = {
    base64: `echo ${Buffer.from(cmd).toString("base64")} | base64 -d | sh`,
    "here-doc": `sh <<'EOF'\n${cmd}\nEOF`,
    "sh -c": `sh -c '${cmd.replace(/'/g, `'\\''`)}'`,
  };
  if (plainFirst) {
    out.quoting = `${first.slice(0, 1)}''${first.slice(1)} ${rest}`;
    out.variable = `X=${first}; $X ${rest}`;
    out["binary copy"] = `cp /usr/bin/${first} /tmp/t; /tmp/t ${rest}`;
    if (/^[\w ./:=@,+-]+$/.test(rest) && rest !== "") out.xargs = `echo ${rest} | xargs ${first}`;
  }
  return out;
}

describe("threat corpus", () => {
  it("has at least 300 dangerous and 300 everyday commands, each with its source", () => {
    expect(corpus.dangerous.length).toBeGreaterThanOrEqual(300);
    expect(corpus.everyday.length).toBeGreaterThanOrEqual(300);
    expect(
      [...corpus.dangerous, ...corpus.everyday].filter((e) => !/^[\w.-]+\/[\w.-]+(@[0-9a-f]{7})?:\S/.test(e.source)).map((e) => e.id),
    ).toEqual([]);
  });

  it("denies or flags >= 97 % of the dangerous commands under their class; every miss is listed in docs/guard.md", () => {
    const started = performance.now();
    const misses = corpus.dangerous.filter((e) => !caught(e.command, e.class ?? ""));
    const perCall = ((performance.now() - started) * 1000) / corpus.dangerous.length;
    const byClass = new Map<string, [number, number]>();
    for (const e of corpus.dangerous) {
      const [n, hit] = byClass.get(e.class ?? "") ?? [0, 0];
      byClass.set(e.class ?? "", [n + 1, hit + (misses.includes(e) ? 0 : 1)]);
    }
    const share = 1 - misses.length / corpus.dangerous.length;
    console.log(
      `threat corpus: ${corpus.dangerous.length - misses.length}/${corpus.dangerous.length} dangerous caught by their class (${(share * 100).toFixed(1)}%); ${[...byClass].map(([c, [n, h]]) => `${c} ${h}/${n}`).join(", ")}; ${perCall.toFixed(0)} us per call`,
    );
    expect(share).toBeGreaterThanOrEqual(0.97);
    expect(misses.map((m) => m.id).filter((id) => !docs.includes(id))).toEqual([]);
  });

  it("denies <= 1 % of the everyday commands; every one denied is listed in docs/guard.md", () => {
    const denied = corpus.everyday.filter((e) => !decide(e.command).approved);
    console.log(
      `threat corpus: ${denied.length}/${corpus.everyday.length} everyday denied (${((denied.length / corpus.everyday.length) * 100).toFixed(2)}%)`,
    );
    expect(denied.length / corpus.everyday.length).toBeLessThanOrEqual(0.01);
    expect(denied.map((m) => m.id).filter((id) => !docs.includes(id))).toEqual([]);
  });

  it("catches generated obfuscations of the dangerous one-liners under the same class", () => {
    const tally = new Map<string, [number, number]>();
    for (const e of corpus.dangerous) {
      if (e.command.includes("\n") || e.command.length > 300 || !caught(e.command, e.class ?? "")) continue;
      for (const [kind, cmd] of Object.entries(obfuscations(e.command))) {
        const [n, hit] = tally.get(kind) ?? [0, 0];
        tally.set(kind, [n + 1, hit + (caught(cmd, e.class ?? "") ? 1 : 0)]);
      }
    }
    const total = [...tally.values()].reduce(([n, h], [a, b]) => [n + a, h + b], [0, 0]);
    console.log(
      `threat corpus obfuscations: ${total[1]}/${total[0]} caught by their class; ${[...tally].map(([k, [n, h]]) => `${k} ${h}/${n}`).join(", ")}`,
    );
    expect(total[0]).toBeGreaterThanOrEqual(1000);
    expect(total[1] / total[0]).toBeGreaterThanOrEqual(0.97);
  });
});

// Which commands the command judge may run: lines of the criteria (`run: npm test`) checked
// against an allowlist of argv prefixes. Commands are split into argv here and never reach
// a shell, so `npm test; curl evil` is just `npm` with odd arguments, and not allowlisted.

/** Commands allowed when the judge runs without a manifest (no GAVEL_TOOLS, e.g. by hand). */
export const DEFAULT_ALLOWLIST: readonly string[] = [
  "npm test",
  "npm run test",
  "node --test",
  "pytest",
  "python -m pytest",
  "python3 -m pytest",
  "go test",
  "cargo test",
  "make test",
];

/** Splits a command line into argv: whitespace-separated, with '…' and "…" quoting. */
export function splitArgv(line: string): string[] {
  const argv: string[] = [];
  let current = "";
  let quote: string | undefined;
  let has = false;
  for (const ch of line) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
      else current += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      has = true;
    } else if (/\s/.test(ch)) {
      if (has || current !== "") argv.push(current);
      current = "";
      has = false;
    } else {
      current += ch;
    }
  }
  if (quote !== undefined) throw new Error(`unclosed ${quote} in command ${JSON.stringify(line)}`);
  if (has || current !== "") argv.push(current);
  return argv;
}

/** Whether argv starts with one of the allowlisted commands, word for word. */
export function isAllowed(argv: readonly string[], allowlist: readonly string[]): boolean {
  return allowlist.some((entry) => {
    const prefix = splitArgv(entry);
    return prefix.length > 0 && prefix.length <= argv.length && prefix.every((w, i) => argv[i] === w);
  });
}

/** What the criteria ask for: commands to run and, optionally, where. */
export interface CommandPlan {
  commands: string[];
  workdir?: string;
}

const LINE = /^\s*(?:[-*]\s+)?(run|workdir)\s*:\s*(.*?)\s*$/;

/** Reads `run: CMD` and `workdir: PATH` lines; everything else is prose. */
export function parsePlan(criteria: string): CommandPlan {
  const plan: CommandPlan = { commands: [] };
  for (const line of criteria.split(/\r?\n/)) {
    const m = LINE.exec(line);
    if (m === null || (m[2] as string) === "") continue;
    if (m[1] === "run") plan.commands.push(m[2] as string);
    else plan.workdir = m[2] as string;
  }
  return plan;
}

/** Test counts found in a test runner's output, if it printed any we know. */
export interface TestCounts {
  passed: number;
  failed: number;
}

/**
 * Finds test counts in common runners' summaries: node --test (`# pass N` / `# fail N`,
 * `ℹ pass N`), pytest (`N passed, M failed`), jest/vitest (`Tests: M failed, N passed`).
 */
export function testCounts(output: string): TestCounts | undefined {
  const num = (re: RegExp): number | undefined => {
    let last: number | undefined;
    for (const m of output.matchAll(re)) last = Number(m[1]);
    return last;
  };
  const nodePass = num(/^[#ℹ]\s*pass\s+(\d+)\s*$/gm);
  const nodeFail = num(/^[#ℹ]\s*fail\s+(\d+)\s*$/gm);
  if (nodePass !== undefined || nodeFail !== undefined) return { passed: nodePass ?? 0, failed: nodeFail ?? 0 };
  const summary = /(\d+) (passed|failed|errors?)\b/g;
  let passed: number | undefined;
  let failed = 0;
  for (const line of output.split("\n")) {
    if (!/\b\d+ (passed|failed)\b/.test(line)) continue;
    let p: number | undefined;
    let f = 0;
    for (const m of line.matchAll(summary)) {
      if (m[2] === "passed") p = Number(m[1]);
      else f += Number(m[1]);
    }
    passed = p ?? 0;
    failed = f;
  }
  return passed === undefined ? undefined : { passed, failed };
}

// The rule judge's checks for an outer-loop (validation) payload: rules written as
// `key: value` lines in the criteria (or env RULE_JUDGE_RULES) over the worker's output and
// the files under its read-only mounts. Regexes are RE2, so no rule can stall the judge.
import { posix } from "node:path";
import { RE2JS } from "re2js";
import { messageOf } from "../../src/errors.js";

/** One check over the output or a file. */
export type OutputRule =
  | { kind: "contains" | "not_contains"; text: string }
  | { kind: "matches" | "not_matches"; pattern: string }
  | { kind: "max_output_bytes"; bytes: number }
  | { kind: "file_exists" | "file_absent"; path: string }
  | { kind: "file_contains"; path: string; text: string }
  | { kind: "file_matches"; path: string; pattern: string }
  | { kind: "file_json"; path: string };

/** Rules plus the settings that may sit beside them in the criteria. */
export interface RuleSet {
  rules: OutputRule[];
  threshold?: number;
  /** Lines that looked like rules but were not valid (reported, never silently dropped). */
  errors: string[];
}

const LINE = /^\s*(?:[-*]\s+)?([a-z_]+)\s*:\s*(.*?)\s*$/;

/** Parses `key: value` lines; prose lines and unknown keys are left for humans. */
export function parseRules(text: string): RuleSet {
  const set: RuleSet = { rules: [], errors: [] };
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    const m = LINE.exec(line);
    if (m === null) continue;
    const key = m[1] as string;
    const value = m[2] as string;
    const where = `criteria line ${i + 1} (${key})`;
    const pathAndRest = (): [string, string] | undefined => {
      const at = value.indexOf(" :: ");
      return at < 0 ? undefined : [value.slice(0, at).trim(), value.slice(at + 4)];
    };
    switch (key) {
      case "contains":
      case "not_contains":
        set.rules.push({ kind: key, text: value });
        break;
      case "matches":
      case "not_matches": {
        const problem = regexProblem(value);
        if (problem !== undefined) set.errors.push(`${where}: ${problem}`);
        else set.rules.push({ kind: key, pattern: value });
        break;
      }
      case "max_output_bytes": {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 0) set.errors.push(`${where}: expected a byte count, got ${JSON.stringify(value)}`);
        else set.rules.push({ kind: key, bytes: n });
        break;
      }
      case "file_exists":
      case "file_absent":
      case "file_json":
        if (value === "") set.errors.push(`${where}: expected a path`);
        else set.rules.push({ kind: key, path: value });
        break;
      case "file_contains":
      case "file_matches": {
        const parts = pathAndRest();
        if (parts === undefined) {
          set.errors.push(`${where}: expected "PATH :: ${key === "file_contains" ? "TEXT" : "REGEX"}"`);
          break;
        }
        if (key === "file_contains") set.rules.push({ kind: key, path: parts[0], text: parts[1] });
        else {
          const problem = regexProblem(parts[1]);
          if (problem !== undefined) set.errors.push(`${where}: ${problem}`);
          else set.rules.push({ kind: key, path: parts[0], pattern: parts[1] });
        }
        break;
      }
      case "threshold": {
        const t = Number(value);
        if (!(t >= 0 && t <= 1)) set.errors.push(`${where}: expected a number in [0, 1], got ${JSON.stringify(value)}`);
        else set.threshold = t;
        break;
      }
      default:
        break;
    }
  }
  return set;
}

function regexProblem(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (err) {
    return `regex ${JSON.stringify(pattern)} is not valid RE2: ${messageOf(err)}`;
  }
}

/** Reads a file the judge can see; undefined when missing. */
export type FileReader = (absolutePath: string) => Promise<string | undefined>;

/** The outcome of one rule. */
export interface RuleOutcome {
  rule: OutputRule;
  passed: boolean;
  message: string;
}

/**
 * Where a rule's path lives: an absolute path must be under one of the worker mounts; a
 * relative one is tried under each mount in order (the first that has it wins).
 */
async function locate(
  path: string,
  mounts: readonly string[],
  read: FileReader,
): Promise<{ path: string; text: string | undefined } | { error: string }> {
  if (mounts.length === 0) return { error: `no worker_mounts in the payload to look for ${path} in` };
  if (path.startsWith("/")) {
    const full = posix.normalize(path);
    const inside = mounts.some((m) => full === m || full.startsWith(m.endsWith("/") ? m : `${m}/`));
    if (!inside) return { error: `${path} is outside the worker mounts (${mounts.join(", ")})` };
    return { path: full, text: await read(full) };
  }
  let first: string | undefined;
  for (const m of mounts) {
    const full = posix.normalize(posix.join(m, path));
    if (!full.startsWith(m.endsWith("/") ? m : `${m}/`)) return { error: `${path} leaves the worker mount ${m}` };
    first ??= full;
    const text = await read(full);
    if (text !== undefined) return { path: full, text };
  }
  return { path: first as string, text: undefined };
}

/** Runs every rule over the output and the mounted files. */
export async function evaluateRules(
  rules: readonly OutputRule[],
  output: string,
  mounts: readonly string[],
  read: FileReader,
): Promise<RuleOutcome[]> {
  const outcomes: RuleOutcome[] = [];
  for (const rule of rules) {
    const ok = (passed: boolean, message: string) => outcomes.push({ rule, passed, message });
    switch (rule.kind) {
      case "contains":
        ok(
          output.includes(rule.text),
          `output ${output.includes(rule.text) ? "contains" : "does not contain"} ${JSON.stringify(rule.text)}`,
        );
        break;
      case "not_contains":
        ok(
          !output.includes(rule.text),
          `output ${output.includes(rule.text) ? "contains" : "does not contain"} ${JSON.stringify(rule.text)}`,
        );
        break;
      case "matches":
      case "not_matches": {
        const found = RE2JS.compile(rule.pattern).matcher(output).find();
        ok(found === (rule.kind === "matches"), `output ${found ? "matches" : "does not match"} /${rule.pattern}/`);
        break;
      }
      case "max_output_bytes": {
        const n = Buffer.byteLength(output);
        ok(n <= rule.bytes, `output is ${n} bytes (limit ${rule.bytes})`);
        break;
      }
      default: {
        const where = await locate(rule.path, mounts, read);
        if ("error" in where) {
          ok(false, where.error);
          break;
        }
        const present = where.text !== undefined;
        if (rule.kind === "file_exists") ok(present, `${where.path} ${present ? "exists" : "is missing"}`);
        else if (rule.kind === "file_absent") ok(!present, `${where.path} ${present ? "exists" : "is absent"}`);
        else if (!present) ok(false, `${where.path} is missing`);
        else if (rule.kind === "file_contains") {
          const has = (where.text as string).includes(rule.text);
          ok(has, `${where.path} ${has ? "contains" : "does not contain"} ${JSON.stringify(rule.text)}`);
        } else if (rule.kind === "file_matches") {
          const found = RE2JS.compile(rule.pattern)
            .matcher(where.text as string)
            .find();
          ok(found, `${where.path} ${found ? "matches" : "does not match"} /${rule.pattern}/`);
        } else {
          try {
            JSON.parse(where.text as string);
            ok(true, `${where.path} is valid JSON`);
          } catch (err) {
            ok(false, `${where.path} is not valid JSON: ${messageOf(err)}`);
          }
        }
      }
    }
  }
  return outcomes;
}

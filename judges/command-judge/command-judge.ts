// The command judge: runs allowlisted test commands over the read-only workspace and
// scores the pass ratio; the failing commands' output tails become the reasoning.
import { spawn } from "node:child_process";
import { readdir, readFile, stat } from "node:fs/promises";
import { join, posix } from "node:path";
import { type JudgePayload, type Verdict, stringField, stringList, unit } from "../shared/judge-io.js";
import { DEFAULT_ALLOWLIST, isAllowed, parsePlan, splitArgv, testCounts } from "./commands.js";
import { messageOf } from "../../src/errors.js";

/** Settings read at the edge (env) and passed in. */
export interface CommandJudgeConfig {
  /** Command prefixes it may run: its manifest's cmd.run allowlist; "any" when that entry has none. */
  allowlist: readonly string[] | "any";
  /** Per command; the command is killed after it. */
  timeoutSeconds: number;
  /** Commands run for every payload in addition to the criteria's (env COMMAND_JUDGE_COMMANDS). */
  extraCommands: string[];
  /** Bytes of each failing command's output kept in the reasoning. */
  tailBytes: number;
}

/**
 * The judge's allowlist from its own manifest: gavel passes the Agent's spec.tools as JSON in
 * GAVEL_TOOLS. Its cmd.run entry's allowlist governs; a manifest without cmd.run may run
 * nothing; cmd.run without an allowlist may run any command. Run by hand (no GAVEL_TOOLS):
 * the default test commands.
 */
export function allowlistFromTools(toolsJson: string | undefined): readonly string[] | "any" {
  if (toolsJson === undefined || toolsJson === "") return DEFAULT_ALLOWLIST;
  let tools: unknown;
  try {
    tools = JSON.parse(toolsJson);
  } catch (err) {
    throw new Error(`GAVEL_TOOLS is not JSON: ${messageOf(err)}`);
  }
  if (!Array.isArray(tools)) throw new Error("GAVEL_TOOLS must be a JSON list of the Agent's spec.tools");
  const entry: unknown = tools.find(
    (t: unknown) => t === "cmd.run" || (typeof t === "object" && t !== null && (t as { name?: unknown }).name === "cmd.run"),
  );
  if (entry === undefined) return [];
  const allowlist = typeof entry === "object" && entry !== null ? (entry as { allowlist?: unknown }).allowlist : undefined;
  if (allowlist === undefined) return "any";
  if (!Array.isArray(allowlist) || !allowlist.every((a) => typeof a === "string"))
    throw new Error("GAVEL_TOOLS: the allowlist of cmd.run must be a list of strings");
  return allowlist;
}

/** Reads the configuration from env; a bad value is an error naming the variable. */
export function configFromEnv(env: NodeJS.ProcessEnv): CommandJudgeConfig {
  const list = (v: string | undefined) =>
    (v ?? "")
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter((s) => s !== "");
  const timeout = Number(env.COMMAND_JUDGE_TIMEOUT_SECONDS ?? "120");
  if (!(timeout > 0))
    throw new Error(`COMMAND_JUDGE_TIMEOUT_SECONDS must be a positive number, got ${JSON.stringify(env.COMMAND_JUDGE_TIMEOUT_SECONDS)}`);
  return {
    allowlist: allowlistFromTools(env.GAVEL_TOOLS),
    timeoutSeconds: timeout,
    extraCommands: list(env.COMMAND_JUDGE_COMMANDS),
    tailBytes: 2000,
  };
}

/** One command's run. */
export interface CommandRun {
  command: string;
  exitCode: number | null;
  output: string;
  timedOut: boolean;
  /** Why it did not run (not allowlisted, not found), if it did not. */
  refused?: string;
}

// The workspace is read-only: caches and bytecode go to /tmp or nowhere.
const READ_ONLY_FRIENDLY_ENV = {
  HOME: "/tmp",
  npm_config_cache: "/tmp/.npm",
  npm_config_update_notifier: "false",
  PYTHONDONTWRITEBYTECODE: "1",
  PYTEST_ADDOPTS: "-p no:cacheprovider",
  CI: "true",
  NO_COLOR: "1",
};

/** Runs argv in cwd without a shell, output interleaved and capped, killed at the deadline. */
export function runCommand(argv: string[], cwd: string, timeoutSeconds: number, env: NodeJS.ProcessEnv): Promise<CommandRun> {
  const command = argv.join(" ");
  return new Promise((resolve) => {
    let output = "";
    let timedOut = false;
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd,
      env: { ...env, ...READ_ONLY_FRIENDLY_ENV },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const keep = (d: Buffer) => {
      output += d.toString();
      if (output.length > 256 * 1024) output = output.slice(-128 * 1024);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const timer = setTimeout(() => {
      timedOut = true;
      // The whole process group: test runners spawn workers.
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutSeconds * 1000);
    child.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({
        command,
        exitCode: null,
        output,
        timedOut,
        refused: err.code === "ENOENT" ? `${argv[0]} is not installed in this judge image` : err.message,
      });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ command, exitCode: code, output, timedOut });
    });
  });
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** When the criteria name no command: `npm test` for a package with a test script, else `node --test` / `pytest` by the files present. */
export async function detectCommands(dir: string): Promise<string[]> {
  try {
    const pkg = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { scripts?: Record<string, string> };
    if (typeof pkg.scripts?.test === "string") return ["npm test"];
  } catch {
    // no package.json, or not JSON: look at the files instead
  }
  const names = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  if (names.some((n) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(n))) return ["pytest"];
  if (names.some((n) => /\.test\.(m|c)?js$/.test(n) && !n.includes("node_modules"))) return ["node --test"];
  return [];
}

function countsText(output: string): string {
  const c = testCounts(output);
  return c === undefined ? "" : `, ${c.passed}/${c.passed + c.failed} tests pass`;
}

function tail(text: string, bytes: number): string {
  const t = text.trimEnd();
  return t.length <= bytes ? t : `…${t.slice(-bytes)}`;
}

/** Score of one run: its test pass ratio when the runner printed counts, else 1/0 by exit code. */
export function runScore(run: CommandRun): number {
  if (run.refused !== undefined || run.timedOut || run.exitCode === null) return 0;
  const counts = testCounts(run.output);
  if (counts !== undefined && counts.passed + counts.failed > 0) {
    // A non-zero exit with no failed test still means something broke.
    if (run.exitCode !== 0 && counts.failed === 0) return 0;
    return counts.passed / (counts.passed + counts.failed);
  }
  return run.exitCode === 0 ? 1 : 0;
}

/** The whole judge. `run` is injectable so tests can count what would be executed. */
export async function commandJudge(
  payload: JudgePayload,
  config: CommandJudgeConfig,
  env: NodeJS.ProcessEnv,
  run: typeof runCommand = runCommand,
): Promise<Verdict> {
  const plan = parsePlan(stringField(payload, "criteria", "intent") ?? "");
  const mounts = stringList(payload, "worker_mounts");
  const workdir =
    plan.workdir !== undefined ? (plan.workdir.startsWith("/") ? plan.workdir : posix.join(mounts[0] ?? "/", plan.workdir)) : mounts[0];
  if (workdir === undefined) {
    return {
      score: 0,
      confidence: 1,
      reasoning: "no workspace to test: the payload has no worker_mounts and the criteria no `workdir:`",
      signals: [{ category: "setup", score: 0, message: "no workspace" }],
    };
  }
  if (!(await isDirectory(workdir))) {
    return {
      score: 0,
      confidence: 1,
      reasoning: `the workspace ${workdir} is not a directory the judge can see`,
      signals: [{ category: "setup", score: 0, message: `${workdir} missing` }],
    };
  }
  let commands = [...plan.commands, ...config.extraCommands];
  const detected = commands.length === 0;
  if (detected) commands = await detectCommands(workdir);
  if (commands.length === 0) {
    return {
      score: 0,
      confidence: 1,
      reasoning: `nothing to run in ${workdir}: name commands in the criteria (\`run: npm test\`) or add tests`,
      signals: [{ category: "setup", score: 0, message: "no commands" }],
    };
  }
  const runs: CommandRun[] = [];
  for (const command of commands) {
    let argv: string[];
    try {
      argv = splitArgv(command);
    } catch (err) {
      runs.push({ command, exitCode: null, output: "", timedOut: false, refused: messageOf(err) });
      continue;
    }
    if (argv.length === 0) continue;
    if (config.allowlist !== "any" && !isAllowed(argv, config.allowlist)) {
      const listed = config.allowlist.length > 0 ? config.allowlist.join(", ") : "the judge's manifest declares no cmd.run tool";
      runs.push({ command, exitCode: null, output: "", timedOut: false, refused: `not in the allowlist (${listed})` });
      continue;
    }
    runs.push(await run(argv, workdir, config.timeoutSeconds, env));
  }
  const scores = runs.map(runScore);
  const score = scores.reduce((a, b) => a + b, 0) / Math.max(1, scores.length);
  const signals = runs.map((r, i) => ({
    category: "command",
    score: unit(scores[i] as number),
    message: `${r.command}: ${r.refused ?? (r.timedOut ? `killed after ${config.timeoutSeconds}s` : `exit ${r.exitCode}${countsText(r.output)}`)}`,
  }));
  const failing = runs.filter((_, i) => (scores[i] as number) < 1);
  const passedCount = runs.length - failing.length;
  const head = `${passedCount}/${runs.length} commands pass in ${workdir}${detected ? " (commands detected from the files)" : ""}: ${signals.map((sig) => sig.message).join("; ")}`;
  const details = failing.map(
    (r) =>
      `$ ${r.command}\n${r.refused ?? (r.timedOut ? `killed after ${config.timeoutSeconds}s\n` : "") + tail(r.output, config.tailBytes)}`,
  );
  return {
    score: unit(score),
    confidence: 1,
    reasoning: [head, ...details].join("\n\n"),
    signals,
    metadata: { judge_kind: "command-v1", workdir, commands: runs.map((r) => r.command) },
  };
}

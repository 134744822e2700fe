// The framed pod log of gavel-launch: decoded exactly, and produced by the real launcher (dist/bin, `make build`).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FramedLogReader, mergedStreamsReason, podStreams, splitFramedLog, type Streams } from "./log-streams.js";

const RS = "\x1e";
const LAUNCHER = join(import.meta.dirname, "../../../dist/bin/gavel-launch");

describe("splitFramedLog", () => {
  it("keeps plain lines as stdout and records apart: full and partial lines of both streams", () => {
    const log = `out 1\n${RS}Eerr 1\n${RS}opart${RS}\n${RS}ewarn: \n${RS}O${RS}starts with RS\nlast`;
    expect(splitFramedLog(log)).toEqual({ stdout: `out 1\npart${RS}${RS}starts with RS\nlast`, stderr: "err 1\nwarn: " });
  });

  it("keeps a record of an unknown type, and an empty log, as they are", () => {
    expect(splitFramedLog(`${RS}Zodd\n`)).toEqual({ stdout: `${RS}Zodd\n`, stderr: "" });
    expect(splitFramedLog("")).toEqual({ stdout: "", stderr: "" });
    expect(splitFramedLog("\n\n")).toEqual({ stdout: "\n\n", stderr: "" });
  });

  it("reads a log cut anywhere the same as whole", () => {
    const log = `out 1\n${RS}Eerr 1\n${RS}opart${RS}\n${RS}ewarn: \n${RS}O${RS}starts with RS\nlast`;
    for (let cut = 0; cut <= log.length; cut++) {
      const got: Streams = { stdout: "", stderr: "" };
      const reader = new FramedLogReader((stream, text) => {
        got[stream] += text;
      });
      reader.push(log.slice(0, cut));
      reader.push(log.slice(cut));
      reader.end();
      expect(got).toEqual(splitFramedLog(log));
    }
  });

  it("splits only the logs of pods that ran under the launcher", () => {
    const framed = { metadata: { annotations: { "gavel.dev/log-streams": "framed" } } };
    expect(podStreams(framed, `a\n${RS}Eb\n`)).toEqual({ stdout: "a\n", stderr: "b\n" });
    expect(podStreams({}, `a\n${RS}Eb\n`)).toMatchObject({ stdout: `a\n${RS}Eb\n`, stderr: "" });
  });

  it("says why a log is merged: an image whose program gavel does not know, or no launcher", () => {
    const bare = { spec: { containers: [{ name: "main", image: "python:3.12-slim" }] } };
    expect(podStreams(bare, "x\n").streamsMerged).toMatch(
      /gavel does not know the program of image python:3\.12-slim .*declare spec\.runtime\.command/,
    );
    const unlaunched = { spec: { containers: [{ name: "main", image: "gavel/agent:dev", command: ["node", "main.js"] }] } };
    expect(mergedStreamsReason(unlaunched)).toMatch(/ran without gavel-launch \(the controller has no launcher ConfigMap\)/);
    expect(mergedStreamsReason(undefined)).toMatch(/pod is gone/);
    expect(podStreams({ metadata: { annotations: { "gavel.dev/log-streams": "framed" } } }, "x\n").streamsMerged).toBeUndefined();
  });
});

describe.runIf(existsSync(LAUNCHER))("gavel-launch (dist/bin)", () => {
  const run = (script: string) => {
    try {
      return { code: 0, log: execFileSync(LAUNCHER, ["sh", "-c", script], { encoding: "utf8" }) };
    } catch (err) {
      const e = err as { status: number; stdout: string };
      return { code: e.status, log: e.stdout };
    }
  };

  it("writes both streams apart in one log, byte for byte, and exits with the program's code", () => {
    const script = `echo RESULT=ok; echo 'noise: RESULT=bad' >&2; printf 'no newline'; printf 'half' >&2; printf '\\036x\\n'; echo; printf tail; exit 3`;
    const { code, log } = run(script);
    expect(code).toBe(3);
    expect(splitFramedLog(log)).toEqual({ stdout: `RESULT=ok\nno newline${RS}x\n\ntail`, stderr: "noise: RESULT=bad\nhalf" });
  });

  it("reports a program that is not there with 127 on stderr, and a signal as 128 + N", () => {
    const missing = run("exec /no/such/program");
    expect(missing.code).toBe(127);
    expect(splitFramedLog(missing.log).stdout).toBe("");
    expect(run("kill -TERM $$").code).toBe(143);
  });

  it("passes long output through whole", () => {
    const { log } = run("head -c 300000 /dev/zero | tr '\\0' a; echo; head -c 200000 /dev/zero | tr '\\0' b >&2");
    const s = splitFramedLog(log);
    expect(s.stdout.length).toBe(300001);
    expect(s.stdout === `${"a".repeat(300000)}\n`).toBe(true);
    expect(s.stderr.length).toBe(200000);
    expect(s.stderr === "b".repeat(200000)).toBe(true);
  });

  it("--judge-input writes stdin to DIR/payload (made new), sets the variables, then runs the program with its own streams", () => {
    const dir = join(mkdtempSync(join(tmpdir(), "gji-")), "input");
    const out = execFileSync(
      LAUNCHER,
      [
        "--judge-input",
        dir,
        "--env",
        "GAVEL_INPUT_DIR=" + dir,
        "--env",
        "X=a=b",
        "--",
        "sh",
        "-c",
        'echo "$X"; cat "$GAVEL_INPUT_DIR/payload"; cat; ls -ld "$GAVEL_INPUT_DIR" | cut -c1-10',
      ],
      { encoding: "utf8", input: '{"call":1}' },
    );
    expect(out).toBe('a=b\n{"call":1}drwx------\n');
    // The payload directory is made new: a second call in the same pod is refused (one call per pod).
    const again = spawnSync(LAUNCHER, ["--judge-input", dir, "--", "true"], { encoding: "utf8", input: "{}" });
    expect(again.status).toBe(126);
    expect(again.stderr).toContain("File exists");
    const bad = spawnSync(LAUNCHER, ["--judge-input", `${dir}2`, "--env", "NOEQUALS", "--", "true"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--env NOEQUALS: expected NAME=VALUE");
  });

  it("--wait waits until SIGTERM, then exits 0", async () => {
    const child = spawn(LAUNCHER, ["--wait"]);
    await new Promise((r) => setTimeout(r, 1000));
    expect(child.exitCode).toBe(null);
    child.kill("SIGTERM");
    const code = await new Promise((r) => child.on("exit", (c) => r(c)));
    expect(code).toBe(0);
  });
});

// `gavel logs --judge` of a judge whose pod and stored result are gone: the tails its status
// keeps (status.rawOutput, as engine/phases.ts rawOutputOf writes them), and what is missing;
// and the wait between `gavel logs -f`'s polls.
import { getEventListeners } from "node:events";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { rawOutputOf } from "../engine/phases.js";
import { printKeptOutput, sleep } from "./logs.js";

function printed(raw: Parameters<typeof printKeptOutput>[0]): { out: string; err: string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  printKeptOutput(raw, { stdout, stderr });
  return { out: String(stdout.read() ?? ""), err: String(stderr.read() ?? "") };
}

describe("printKeptOutput", () => {
  it("prints stdout and stderr apart, with nothing added when all of it was kept", () => {
    expect(printed(rawOutputOf({ stdout: '{"score":1}\n', stderr: "note\n", exitCode: 0 }))).toEqual({
      out: '{"score":1}\n',
      err: "note\n",
    });
  });

  it("says how much of a long stdout is missing (the status keeps its last 16 KiB)", () => {
    const long = `${"x".repeat(20_000)}\n{"score":0.5}\n`;
    const { out, err } = printed(rawOutputOf({ stdout: long, exitCode: 0 }));
    expect(long.endsWith(out)).toBe(true);
    expect(err).toBe(
      `gavel logs: the first ${long.length - out.length} of ${long.length} bytes of stdout were not kept (the judge's status keeps its end)\n`,
    );
  });

  it("says why stdout holds stderr too when the judge's pod log merged them", () => {
    const why = "stderr is merged into stdout: gavel does not know the program of image example/judge:1";
    const { out, err } = printed(rawOutputOf({ stdout: "warning\n{}\n", exitCode: 1, streamsMerged: why }));
    expect(out).toBe("warning\n{}\n");
    expect(err).toBe(`gavel logs: ${why}\n`);
  });
});

describe("sleep between -f's polls", () => {
  it("leaves no abort listener on the signal after each wait, and ends at once on abort", async () => {
    const stop = new AbortController();
    for (let i = 0; i < 12; i++) await sleep(1, stop.signal);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    const t0 = Date.now();
    const waiting = sleep(60_000, stop.signal);
    stop.abort();
    await waiting;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });
});

// The real Docker engine: a container from the locally built base image sees a
// read-only bind mount and cannot write to it.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, runOk } from "../harness/exec.js";
import { BASE_IMAGE, HARNESS_DIR } from "../harness/paths.js";

describe("Docker engine (real dockerd, local base image)", () => {
  let dir: string;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "base-image.sh"), []);
    dir = await mkdtemp(join(tmpdir(), "gavel-docker-"));
    await writeFile(join(dir, "note.txt"), "written by the host\n");
  }, 600_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("runs node from the base image and reads the read-only mount", async () => {
    const out = await runOk("docker", [
      "run",
      "--rm",
      "--network",
      "none",
      "-v",
      `${dir}:/workspace:ro`,
      BASE_IMAGE,
      "node",
      "-e",
      "process.stdout.write(require('fs').readFileSync('/workspace/note.txt','utf8'))",
    ]);
    expect(out).toBe("written by the host\n");
  });

  it("refuses a write to the read-only mount with EROFS", async () => {
    const r = await run("docker", [
      "run",
      "--rm",
      "--network",
      "none",
      "-v",
      `${dir}:/workspace:ro`,
      BASE_IMAGE,
      "node",
      "-e",
      "require('fs').writeFileSync('/workspace/note.txt','overwritten')",
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("EROFS");
    expect(await readFile(join(dir, "note.txt"), "utf8")).toBe("written by the host\n");
  });

  it("lets the same mount be written when mounted read-write (the control case)", async () => {
    await runOk("docker", [
      "run",
      "--rm",
      "--network",
      "none",
      "-v",
      `${dir}:/workspace`,
      BASE_IMAGE,
      "node",
      "-e",
      "require('fs').writeFileSync('/workspace/out.txt','from the container')",
    ]);
    expect(await readFile(join(dir, "out.txt"), "utf8")).toBe("from the container");
  });
});

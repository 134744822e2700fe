// DockerWorkloads (the Workloads port on Docker, ADR 0030) on the real engine, as local mode
// drives it with runToEnd: exit codes, separate and capped streams, deadline and stop kills,
// read-only mounts, no network, file readers, nothing left behind; the port's own calls.
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LABELS, MANAGED_BY } from "../../src/runtime/docker/container-config.js";
import { DEADLINE_LABEL, DockerWorkloads, removeStaleContainers } from "../../src/runtime/docker/docker-workloads.js";
import { readerContent, volumeReader } from "../../src/runtime/file-reader.js";
import { runToEnd } from "../../src/runtime/run-to-end.js";
import type { WorkloadMount, WorkloadResult, WorkloadSpec } from "../../src/runtime/workload.js";
import { OUTPUT_CAP_BYTES, TRUNCATION_MARKER } from "../../src/runtime/workload.js";
import { runOk } from "../harness/exec.js";
import { BASE_IMAGE, HARNESS_DIR } from "../harness/paths.js";

const docker = new Docker({ socketPath: "/var/run/docker.sock" });

function node(name: string, script: string, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return { name, image: BASE_IMAGE, command: ["node", "-e", script], mounts: [], network: "none", timeoutSeconds: 30, ...extra };
}

/** A shell workload: it prints within milliseconds of its start, where node takes over a second
 * at load 20-30 (two cores shared with builds), so a 1-2 s deadline tests the kill, not node's boot. */
function sh(name: string, script: string, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return { ...node(name, "", extra), command: ["sh", "-c", script] };
}

async function containersOf(instance: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${instance}`] } });
}

const LOCAL = { namespace: "local" };

describe("DockerWorkloads (real dockerd)", () => {
  let workloads: DockerWorkloads;
  let dir: string;
  let mount: WorkloadMount;
  const run = (spec: WorkloadSpec, opts: { signal?: AbortSignal } = {}): Promise<WorkloadResult> => runToEnd(workloads, spec, LOCAL, opts);

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "base-image.sh"), []);
    workloads = new DockerWorkloads();
    dir = await mkdtemp(join(tmpdir(), "gavel-runtime-"));
    // Read-only workloads run as nobody: the workspace must be world-readable (mkdtemp makes 0700).
    await chmod(dir, 0o755);
    await writeFile(join(dir, "note.txt"), "from the host\n");
    mount = { name: "workspace", source: dir, mountPath: "/workspace", readOnly: true };
  }, 600_000);
  afterAll(async () => {
    await workloads.removeAll();
    await rm(dir, { recursive: true, force: true });
  });

  it("reports exit codes and keeps stdout and stderr apart", async () => {
    const r = await run(node("exit-7", "process.stdout.write('to out'); process.stderr.write('to err'); process.exit(7)"));
    expect(r).toMatchObject({ exitCode: 7, stdout: "to out", stderr: "to err", truncated: false, timedOut: false, cancelled: false });
    expect(r.finishedAt.getTime()).toBeGreaterThanOrEqual(r.startedAt.getTime());
    const ok = await run(node("exit-0", "console.log('fine')"));
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe("fine\n");
  });

  it("feeds stdin and passes env", async () => {
    const r = await run(
      node(
        "stdin-echo",
        "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.stringify({s,env:process.env.GAVEL_INPUT})))",
        {
          stdin: '{"task":"t"}',
          env: { GAVEL_INPUT: "payload" },
        },
      ),
    );
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ s: '{"task":"t"}', env: "payload" });
  });

  it("caps each stream at 8 MiB with the marker", async () => {
    const r = await run(
      node("flood", "const b=Buffer.alloc(64*1024,'x');for(let i=0;i<160;i++)process.stdout.write(b);process.stderr.write('small')"),
    );
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.stdout.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(r.stdout.length).toBe(OUTPUT_CAP_BYTES + TRUNCATION_MARKER.length);
    expect(r.stderr).toBe("small");
  });

  it("kills a workload past its deadline", async () => {
    // Left alone it would sleep 60 s and exit 0: timedOut and the non-zero exit say it was killed.
    const r = await run(sh("sleeper", "echo started; exec sleep 60", { timeoutSeconds: 1 }));
    expect(r.timedOut).toBe(true);
    expect(r.cancelled).toBe(false);
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe("started\n");
  });

  it("a deadline beyond setTimeout's range does not fire at once", async () => {
    const r = await run(node("far-deadline", "setTimeout(()=>console.log('done'),500)", { timeoutSeconds: 10 ** 9 }));
    expect(r).toMatchObject({ exitCode: 0, stdout: "done\n", timedOut: false });
  });

  it("aborting the signal cancels a running workload, keeping what it printed", async () => {
    const stop = new AbortController();
    const running = run(node("stoppable", "console.log('up'); setTimeout(()=>{},60000)"), { signal: stop.signal });
    await expect.poll(async () => (await containersOf(workloads.instance)).length).toBe(1);
    stop.abort();
    const r = await running;
    expect(r).toMatchObject({ cancelled: true, timedOut: false, exitCode: 137 });
  });

  it("a read-only mount refuses writes with EROFS; the root filesystem too", async () => {
    const r = await run(
      node(
        "writer",
        "const fs=require('fs');for(const p of ['/workspace/note.txt','/etc/x']){try{fs.writeFileSync(p,'x');console.log('wrote '+p)}catch(e){console.log(e.code)}}",
        {
          mounts: [mount],
        },
      ),
    );
    expect(r.stdout).toBe("EROFS\nEROFS\n");
    expect(await readFile(join(dir, "note.txt"), "utf8")).toBe("from the host\n");
  });

  it("a writable mount is written as the host owner", async () => {
    const r = await run(
      node("rw", "require('fs').writeFileSync('/workspace/out.txt','made')", { mounts: [{ ...mount, readOnly: false }] }),
    );
    expect(r.exitCode).toBe(0);
    expect(await readFile(join(dir, "out.txt"), "utf8")).toBe("made");
  });

  it("network none leaves only loopback; allow shares the host network", async () => {
    const script = "console.log(Object.keys(require('os').networkInterfaces()).sort().join(','))";
    const none = await run(node("net-none", script));
    expect(none.stdout.trim()).toBe("lo");
    // Pods of the test cluster add and remove veth interfaces on this host at any moment, so
    // the container must see the host's interfaces as they were before or after its run.
    const { networkInterfaces } = await import("node:os");
    const before = new Set(Object.keys(networkInterfaces()));
    const allow = await run(node("net-allow", script, { network: "allow" }));
    const after = new Set(Object.keys(networkInterfaces()));
    const seen = allow.stdout.trim().split(",");
    expect(seen.length).toBeGreaterThan(1);
    for (const name of seen) expect(before.has(name) || after.has(name), `${name} is not a host interface`).toBe(true);
    for (const name of before) if (after.has(name)) expect(seen, `host interface ${name}`).toContain(name);
  });

  it("runs as a non-root user with no capabilities", async () => {
    const r = await run(
      node(
        "whoami",
        "console.log(process.getuid(), require('fs').readFileSync('/proc/self/status','utf8').match(/CapEff:\\s*(\\w+)/)[1])",
        { mounts: [mount] },
      ),
    );
    expect(r.stdout.trim()).toBe("65534 0000000000000000");
  });

  it("a file reader container reads the read-only volume: present, missing, symlink, unreadable", async () => {
    let n = 0;
    const read = async (path: string) => readerContent(await run(volumeReader(`reader-${n++}`, BASE_IMAGE, mount, path, 30)), "workspace");
    expect(await read("/workspace/note.txt")).toEqual({ ok: true, content: "from the host\n" });
    expect(await read("/workspace/missing.json")).toMatchObject({ ok: false, reason: "missing" });
    // A planted symlink resolves inside the reader, not on this host.
    await writeFile("/tmp/gavel-host-secret", "host secret");
    await symlink("/tmp/gavel-host-secret", join(dir, "leak.txt"));
    expect(await read("/workspace/leak.txt")).toMatchObject({ ok: false, reason: "missing" });
    await rm("/tmp/gavel-host-secret", { force: true });
    // A directory the reader (nobody) cannot enter is an error, not a missing file.
    await mkdir(join(dir, "private"), { mode: 0o700 });
    await writeFile(join(dir, "private", "f.txt"), "hidden");
    expect(await read("/workspace/private/f.txt")).toMatchObject({
      ok: false,
      reason: "unreadable",
      detail: expect.stringMatching(/cannot access/) as unknown,
    });
    expect(await read("/workspace")).toMatchObject({
      ok: false,
      reason: "unreadable",
      detail: expect.stringMatching(/not a regular file/) as unknown,
    });
  });

  it("passes a large stdin intact (beyond pipe buffers)", async () => {
    const big = "x".repeat(3 * 1024 * 1024) + "end";
    const r = await run(
      node(
        "big-stdin",
        "const h=require('crypto').createHash('sha256');let n=0;process.stdin.on('data',d=>{n+=d.length;h.update(d)}).on('end',()=>console.log(n,h.digest('hex')))",
        { stdin: big },
      ),
    );
    const { createHash } = await import("node:crypto");
    expect(r.stdout.trim()).toBe(`${big.length} ${createHash("sha256").update(big).digest("hex")}`);
  });

  it("enforces the memory limit (the workload is OOM-killed, not the host)", async () => {
    const r = await run(
      node("hog", "const a=[];for(;;){a.push(Buffer.alloc(16*1024*1024,1))}", { resources: { memoryBytes: 64 * 1024 * 1024 } }),
    );
    expect(r.exitCode).toBe(137);
    expect(r.timedOut).toBe(false);
    expect(r.cancelled).toBe(false);
  });

  it("runs workloads side by side, each with its own output", async () => {
    const results = await Promise.all([1, 2, 3, 4].map((i) => run(node(`parallel-${i}`, `setTimeout(()=>console.log('n=${i}'),300)`))));
    expect(results.map((r) => r.stdout)).toEqual(["n=1\n", "n=2\n", "n=3\n", "n=4\n"]);
  });

  it("a command the image lacks is a clear start error and leaves nothing behind", async () => {
    await expect(run({ ...node("no-binary", ""), command: ["/no/such/binary"] })).rejects.toThrow(/starting no-binary failed/);
    expect(await containersOf(workloads.instance)).toEqual([]);
  });

  it("fails clearly for a missing image and leaves nothing behind", async () => {
    await expect(run(node("no-image", "", { image: "gavel/does-not-exist:dev" }))).rejects.toThrow(/gavel\/does-not-exist:dev/);
  });

  it("retires every container after its run, and removeAll() removes the running ones", async () => {
    expect(await containersOf(workloads.instance)).toEqual([]);
    const other = new DockerWorkloads();
    await other.ensure(node("left-running-1", "setTimeout(()=>{},60000)"), LOCAL);
    await other.ensure(node("left-running-2", "setTimeout(()=>{},60000)"), LOCAL);
    expect((await containersOf(other.instance)).length).toBe(2);
    await other.removeAll();
    expect(await containersOf(other.instance)).toEqual([]);
  });

  it("removeStaleContainers removes a dead owner's leftovers and spares live ones", async () => {
    const dead = await docker.createContainer({
      Image: BASE_IMAGE,
      Cmd: ["true"],
      Labels: { [LABELS.managed]: MANAGED_BY, [LABELS.instance]: "crashed", [LABELS.ownerPid]: "999999999" },
    });
    await workloads.ensure(node("live", "setTimeout(()=>{},60000)"), LOCAL);
    await removeStaleContainers(docker);
    expect(await containersOf("crashed")).toEqual([]);
    expect((await containersOf(workloads.instance)).length).toBe(1);
    await workloads.retire("live", LOCAL, 0);
    await dead.remove({ force: true }).catch(() => undefined);
  });

  it("the port: ensure adopts by name, observe kills past the deadline, retire keeps then removes", async () => {
    const w = new DockerWorkloads();
    const place = { namespace: "local" };
    // 4 s: the first looks must come before the deadline even when creating and starting the
    // container takes seconds at load 20-30; then the test waits until the label's deadline passed.
    const spec = sh("port-sleeper", "echo up; exec sleep 60", { timeoutSeconds: 4 });
    expect(await w.ensure(spec, place)).toBe(true);
    expect(await w.ensure(spec, place)).toBe(false);
    expect((await w.observe(spec.name, place)).state).toBe("running");
    const [info] = await containersOf(w.instance);
    const deadline = Number(info?.Labels[DEADLINE_LABEL]);
    await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()) + 50));
    // The look past the deadline kills it; the next one sees it ended, timed out.
    expect((await w.observe(spec.name, place)).state).toBe("running");
    await expect.poll(async () => (await w.observe(spec.name, place)).state).toBe("ended");
    expect(await w.observe(spec.name, place)).toMatchObject({ state: "ended", exitCode: 137, timedOut: true });
    expect((await w.output(spec.name, place)).stdout).toBe("up\n");
    expect(await w.retire(spec.name, place, 60)).toBeGreaterThan(Date.now());
    expect(await w.retire(spec.name, place, 0)).toBeUndefined();
    expect(await w.observe(spec.name, place)).toEqual({ state: "absent" });
    await expect(w.ensure(node("placed", ""), { namespace: "local", node: "n1" })).rejects.toThrow(/placement\.node/);
    const r = await runToEnd(w, node("port-once", "process.stderr.write('e'); process.exit(3)"), place);
    expect(r).toMatchObject({ exitCode: 3, stdout: "", stderr: "e", timedOut: false, cancelled: false });
    expect(await containersOf(w.instance)).toEqual([]);
  });
});

// DockerRuntime on the real engine: exit codes, separate and capped streams, deadline and
// stop kills, read-only mounts, no network, readFile through a reader, nothing left behind;
// and the level-triggered DockerWorkloads under it (ADR 0030).
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LABELS, MANAGED_BY } from "../../src/runtime/docker/container-config.js";
import { DockerRuntime, removeStaleContainers } from "../../src/runtime/docker/docker-runtime.js";
import { DockerWorkloads } from "../../src/runtime/docker/docker-workloads.js";
import { runToEnd } from "../../src/runtime/run-to-end.js";
import type { WorkloadMount, WorkloadSpec } from "../../src/runtime/workload.js";
import { OUTPUT_CAP_BYTES, TRUNCATION_MARKER } from "../../src/runtime/workload.js";
import { runOk } from "../harness/exec.js";
import { BASE_IMAGE, HARNESS_DIR } from "../harness/paths.js";

const docker = new Docker({ socketPath: "/var/run/docker.sock" });

function node(name: string, script: string, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return { name, image: BASE_IMAGE, command: ["node", "-e", script], mounts: [], network: "none", timeoutSeconds: 30, ...extra };
}

async function containersOf(instance: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${instance}`] } });
}

describe("DockerRuntime (real dockerd)", () => {
  let runtime: DockerRuntime;
  let dir: string;
  let mount: WorkloadMount;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "base-image.sh"), []);
    runtime = new DockerRuntime({ readerImage: BASE_IMAGE });
    dir = await mkdtemp(join(tmpdir(), "gavel-runtime-"));
    // Read-only workloads run as nobody: the workspace must be world-readable (mkdtemp makes 0700).
    await chmod(dir, 0o755);
    await writeFile(join(dir, "note.txt"), "from the host\n");
    mount = { name: "workspace", source: dir, mountPath: "/workspace", readOnly: true };
  }, 600_000);
  afterAll(async () => {
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("reports exit codes and keeps stdout and stderr apart", async () => {
    const h = await runtime.start(node("exit-7", "process.stdout.write('to out'); process.stderr.write('to err'); process.exit(7)"));
    const r = await h.wait();
    expect(r).toMatchObject({ exitCode: 7, stdout: "to out", stderr: "to err", truncated: false, timedOut: false, cancelled: false });
    expect(r.finishedAt.getTime()).toBeGreaterThanOrEqual(r.startedAt.getTime());
    const ok = await (await runtime.start(node("exit-0", "console.log('fine')"))).wait();
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe("fine\n");
  });

  it("feeds stdin and passes env", async () => {
    const h = await runtime.start(
      node("stdin-echo", "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.stringify({s,env:process.env.GAVEL_INPUT})))", {
        stdin: '{"task":"t"}',
        env: { GAVEL_INPUT: "payload" },
      }),
    );
    const r = await h.wait();
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ s: '{"task":"t"}', env: "payload" });
  });

  it("caps each stream at 8 MiB with the marker", async () => {
    const r = await (
      await runtime.start(node("flood", "const b=Buffer.alloc(64*1024,'x');for(let i=0;i<160;i++)process.stdout.write(b);process.stderr.write('small')"))
    ).wait();
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.stdout.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(r.stdout.length).toBe(OUTPUT_CAP_BYTES + TRUNCATION_MARKER.length);
    expect(r.stderr).toBe("small");
  });

  it("kills a workload past its deadline", async () => {
    const t0 = Date.now();
    const r = await (await runtime.start(node("sleeper", "setTimeout(()=>{},60000); console.log('started')", { timeoutSeconds: 1 }))).wait();
    expect(r.timedOut).toBe(true);
    expect(r.cancelled).toBe(false);
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe("started\n");
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it("a deadline beyond setTimeout's range does not fire at once", async () => {
    const r = await (await runtime.start(node("far-deadline", "setTimeout(()=>console.log('done'),500)", { timeoutSeconds: 10 ** 9 }))).wait();
    expect(r).toMatchObject({ exitCode: 0, stdout: "done\n", timedOut: false });
  });

  it("stop() cancels a running workload and is idempotent", async () => {
    const h = await runtime.start(node("stoppable", "setTimeout(()=>{},60000)"));
    await Promise.all([h.stop(), h.stop()]);
    const r = await h.wait();
    expect(r.cancelled).toBe(true);
    expect(r.timedOut).toBe(false);
    await h.stop();
  });

  it("a read-only mount refuses writes with EROFS; the root filesystem too", async () => {
    const r = await (
      await runtime.start(
        node("writer", "const fs=require('fs');for(const p of ['/workspace/note.txt','/etc/x']){try{fs.writeFileSync(p,'x');console.log('wrote '+p)}catch(e){console.log(e.code)}}", {
          mounts: [mount],
        }),
      )
    ).wait();
    expect(r.stdout).toBe("EROFS\nEROFS\n");
    expect(await readFile(join(dir, "note.txt"), "utf8")).toBe("from the host\n");
  });

  it("a writable mount is written as the host owner", async () => {
    const r = await (
      await runtime.start(node("rw", "require('fs').writeFileSync('/workspace/out.txt','made')", { mounts: [{ ...mount, readOnly: false }] }))
    ).wait();
    expect(r.exitCode).toBe(0);
    expect(await readFile(join(dir, "out.txt"), "utf8")).toBe("made");
  });

  it("network none leaves only loopback; allow shares the host network", async () => {
    const script = "console.log(Object.keys(require('os').networkInterfaces()).sort().join(','))";
    const none = await (await runtime.start(node("net-none", script))).wait();
    expect(none.stdout.trim()).toBe("lo");
    // Pods of the test cluster add and remove veth interfaces on this host at any moment, so
    // the container must see the host's interfaces as they were before or after its run.
    const { networkInterfaces } = await import("node:os");
    const before = new Set(Object.keys(networkInterfaces()));
    const allow = await (await runtime.start(node("net-allow", script, { network: "allow" }))).wait();
    const after = new Set(Object.keys(networkInterfaces()));
    const seen = allow.stdout.trim().split(",");
    expect(seen.length).toBeGreaterThan(1);
    for (const name of seen) expect(before.has(name) || after.has(name), `${name} is not a host interface`).toBe(true);
    for (const name of before) if (after.has(name)) expect(seen, `host interface ${name}`).toContain(name);
  });

  it("runs as a non-root user with no capabilities", async () => {
    const r = await (await runtime.start(node("whoami", "console.log(process.getuid(), require('fs').readFileSync('/proc/self/status','utf8').match(/CapEff:\\s*(\\w+)/)[1])", { mounts: [mount] }))).wait();
    expect(r.stdout.trim()).toBe("65534 0000000000000000");
  });

  it("readFile reads through a reader container: present, missing, outside, symlink", async () => {
    expect(await runtime.readFile(mount, "note.txt")).toBe("from the host\n");
    expect(await runtime.readFile(mount, "/workspace/note.txt")).toBe("from the host\n");
    expect(await runtime.readFile(mount, "missing.json")).toBeUndefined();
    await expect(runtime.readFile(mount, "../etc/passwd")).rejects.toThrow(/outside the mount/);
    // A planted symlink resolves inside the reader, not on this host.
    await writeFile("/tmp/gavel-host-secret", "host secret");
    await symlink("/tmp/gavel-host-secret", join(dir, "leak.txt"));
    expect(await runtime.readFile(mount, "leak.txt")).toBeUndefined();
    await rm("/tmp/gavel-host-secret", { force: true });
    // A directory the reader (nobody) cannot enter is an error, not a missing file.
    await mkdir(join(dir, "private"), { mode: 0o700 });
    await writeFile(join(dir, "private", "f.txt"), "hidden");
    await expect(runtime.readFile(mount, "private/f.txt")).rejects.toThrow(/cannot access/);
    await expect(runtime.readFile(mount, "/workspace")).rejects.toThrow(/not a regular file/);
  });

  it("passes a large stdin intact (beyond pipe buffers)", async () => {
    const big = "x".repeat(3 * 1024 * 1024) + "end";
    const r = await (
      await runtime.start(node("big-stdin", "const h=require('crypto').createHash('sha256');let n=0;process.stdin.on('data',d=>{n+=d.length;h.update(d)}).on('end',()=>console.log(n,h.digest('hex')))", { stdin: big }))
    ).wait();
    const { createHash } = await import("node:crypto");
    expect(r.stdout.trim()).toBe(`${big.length} ${createHash("sha256").update(big).digest("hex")}`);
  });

  it("enforces the memory limit (the workload is OOM-killed, not the host)", async () => {
    const r = await (
      await runtime.start(node("hog", "const a=[];for(;;){a.push(Buffer.alloc(16*1024*1024,1))}", { resources: { memoryBytes: 64 * 1024 * 1024 } }))
    ).wait();
    expect(r.exitCode).toBe(137);
    expect(r.timedOut).toBe(false);
    expect(r.cancelled).toBe(false);
  });

  it("runs workloads side by side, each with its own output", async () => {
    const handles = await Promise.all([1, 2, 3, 4].map((i) => runtime.start(node(`parallel-${i}`, `setTimeout(()=>console.log('n=${i}'),300)`))));
    const results = await Promise.all(handles.map((h) => h.wait()));
    expect(results.map((r) => r.stdout)).toEqual(["n=1\n", "n=2\n", "n=3\n", "n=4\n"]);
  });

  it("stop() after a workload ended on its own does not mark it cancelled", async () => {
    const h = await runtime.start(node("quick", "console.log('bye')"));
    const r = await h.wait();
    await h.stop();
    expect(r.cancelled).toBe(false);
    expect((await h.wait()).cancelled).toBe(false);
  });

  it("a command the image lacks is a clear start error and leaves nothing behind", async () => {
    await expect(runtime.start({ ...node("no-binary", ""), command: ["/no/such/binary"] })).rejects.toThrow(/starting no-binary failed/);
    expect(await containersOf(runtime.instance)).toEqual([]);
  });

  it("fails clearly for a missing image and leaves nothing behind", async () => {
    await expect(runtime.start(node("no-image", "", { image: "gavel/does-not-exist:dev" }))).rejects.toThrow(/gavel\/does-not-exist:dev/);
  });

  it("removes every container after the runs, and close() removes the running ones", async () => {
    expect(await containersOf(runtime.instance)).toEqual([]);
    const other = new DockerRuntime({ readerImage: BASE_IMAGE });
    await other.start(node("left-running-1", "setTimeout(()=>{},60000)"));
    await other.start(node("left-running-2", "setTimeout(()=>{},60000)"));
    expect((await containersOf(other.instance)).length).toBe(2);
    await other.close();
    expect(await containersOf(other.instance)).toEqual([]);
    await expect(other.start(node("after-close", ""))).rejects.toThrow(/closed/);
  });

  it("removeStaleContainers removes a dead owner's leftovers and spares live ones", async () => {
    const dead = await docker.createContainer({
      Image: BASE_IMAGE,
      Cmd: ["true"],
      Labels: { [LABELS.managed]: MANAGED_BY, [LABELS.instance]: "crashed", [LABELS.ownerPid]: "999999999" },
    });
    const live = await runtime.start(node("live", "setTimeout(()=>{},60000)"));
    await removeStaleContainers(docker);
    expect(await containersOf("crashed")).toEqual([]);
    expect((await containersOf(runtime.instance)).length).toBe(1);
    await live.stop();
    await live.wait();
    await dead.remove({ force: true }).catch(() => undefined);
  });

  it("DockerWorkloads: ensure adopts by name, observe kills past the deadline, retire keeps then removes", async () => {
    const w = new DockerWorkloads();
    const place = { namespace: "local" };
    const spec = node("port-sleeper", "console.log('up'); setTimeout(()=>{},60000)", { timeoutSeconds: 1 });
    expect(await w.ensure(spec, place)).toBe(true);
    expect(await w.ensure(spec, place)).toBe(false);
    expect((await w.observe(spec.name, place)).state).toBe("running");
    await new Promise((r) => setTimeout(r, 1200));
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

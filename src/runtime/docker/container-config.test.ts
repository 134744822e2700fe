// The container policy: hardening, mounts, network, limits and user for a spec.
import { describe, expect, it } from "vitest";
import type { WorkloadSpec } from "../workload.js";
import {
  LABELS,
  MAX_ENV_ENTRY_BYTES,
  NOBODY,
  containerConfig,
  containerName,
  networkMode,
  specProblem,
  userFor,
} from "./container-config.js";

const judgeSpec: WorkloadSpec = {
  name: "exec-1-i1-judge-a",
  image: "gavel/rule-judge:dev",
  stdin: "{}",
  env: { GAVEL_INPUT: "{}" },
  mounts: [{ name: "workspace", source: "/tmp/ws", mountPath: "/workspace", readOnly: true }],
  network: "none",
  resources: { memoryBytes: 256 * 1024 * 1024, nanoCpus: 500_000_000 },
  timeoutSeconds: 30,
  labels: { "gavel.dev/execution": "exec-1" },
};

describe("containerConfig", () => {
  const opts = containerConfig({ spec: judgeSpec, name: "n", instance: "abcd", ownerPid: 42, user: NOBODY });
  const host = opts.HostConfig ?? {};

  it("hardens every container", () => {
    expect(host.CapDrop).toEqual(["ALL"]);
    expect(host.SecurityOpt).toContain("no-new-privileges");
    expect(host.ReadonlyRootfs).toBe(true);
    expect(Object.keys(host.Tmpfs ?? {})).toEqual(["/tmp"]);
    expect(opts.User).toBe(NOBODY);
    expect(host.PidsLimit).toBeGreaterThan(0);
  });

  it("mounts read-only volumes with :ro and applies limits", () => {
    expect(host.Binds).toEqual(["/tmp/ws:/workspace:ro"]);
    expect(host.NetworkMode).toBe("none");
    expect(host.Memory).toBe(256 * 1024 * 1024);
    expect(host.MemorySwap).toBe(256 * 1024 * 1024);
    expect(host.NanoCpus).toBe(500_000_000);
  });

  it("opens stdin only when there is stdin to give", () => {
    expect(opts.OpenStdin).toBe(true);
    expect(opts.StdinOnce).toBe(true);
    const noStdin = containerConfig({ spec: { ...judgeSpec, stdin: undefined }, name: "n", instance: "i", ownerPid: 1, user: NOBODY });
    expect(noStdin.OpenStdin).toBe(false);
  });

  it("labels the container so leftovers can be found, keeping the spec's labels", () => {
    expect(opts.Labels?.[LABELS.instance]).toBe("abcd");
    expect(opts.Labels?.[LABELS.ownerPid]).toBe("42");
    expect(opts.Labels?.[LABELS.workload]).toBe(judgeSpec.name);
    expect(opts.Labels?.["gavel.dev/execution"]).toBe("exec-1");
  });

  it("passes env through and defaults HOME to the writable /tmp", () => {
    expect(opts.Env).toContain("GAVEL_INPUT={}");
    expect(opts.Env).toContain("HOME=/tmp");
  });
});

describe("the Agent's variables in local mode", () => {
  it("passes values (gavel's own win on a clash) and refuses Secret and ConfigMap references, naming the field", () => {
    const spec: WorkloadSpec = {
      ...judgeSpec,
      agentEnv: {
        env: [
          { name: "GAVEL_LLM_MODEL", value: "small" },
          { name: "GAVEL_INPUT", value: "forged" },
        ],
      },
    };
    expect(specProblem(spec)).toBeUndefined();
    const env = containerConfig({ spec, name: "n", instance: "abcd", ownerPid: 42, user: NOBODY }).Env ?? [];
    expect(env).toContain("GAVEL_LLM_MODEL=small");
    expect(env).toContain("GAVEL_INPUT={}");
    expect(env).not.toContain("GAVEL_INPUT=forged");
    const secret: WorkloadSpec = {
      ...judgeSpec,
      agentEnv: {
        env: [
          { name: "A", value: "x" },
          { name: "KEY", valueFrom: { secretKeyRef: { name: "llm", key: "k" } } },
        ],
      },
    };
    expect(specProblem(secret)).toMatch(/^spec\.runtime\.env\[1\] \(KEY\) takes its value from a Secret: only a cluster resolves those/);
    expect(specProblem({ ...judgeSpec, agentEnv: { envFrom: [{ configMapRef: { name: "c" } }] } })).toMatch(
      /^spec\.runtime\.envFrom reads a Secret or ConfigMap/,
    );
  });
});

describe("policy helpers", () => {
  it("maps allow to the host network (no bridge on this engine) and none to none", () => {
    expect(networkMode("allow")).toBe("host");
    expect(networkMode("none")).toBe("none");
  });

  it("runs read-only workloads as nobody and writers as the host owner", () => {
    const ro = judgeSpec.mounts;
    const rw = [{ ...ro[0]!, readOnly: false }];
    expect(userFor(ro, 0, 0)).toBe(NOBODY);
    expect(userFor([], 1000, 1000)).toBe(NOBODY);
    expect(userFor(rw, 1000, 1001)).toBe("1000:1001");
    expect(userFor(rw, 1000, 1001, "5:5")).toBe("5:5");
  });

  it("makes valid container names", () => {
    expect(containerName("exec/1 i:2", "ab12")).toBe("gavel-exec-1-i-2-ab12");
    expect(containerName("--x", "ab12")).toBe("gavel-x-ab12");
    expect(containerName("", "ab12")).toBe("gavel-workload-ab12");
  });

  it("names the bad field of a spec", () => {
    expect(specProblem(judgeSpec)).toBeUndefined();
    expect(specProblem({ ...judgeSpec, timeoutSeconds: 0 })).toMatch(/timeoutSeconds/);
    expect(specProblem({ ...judgeSpec, mounts: [{ ...judgeSpec.mounts[0]!, source: "rel" }] })).toMatch(/mounts\[0\]\.source/);
    expect(specProblem({ ...judgeSpec, image: "" })).toMatch(/spec.image/);
    expect(specProblem({ ...judgeSpec, env: { GAVEL_INPUT: "x".repeat(MAX_ENV_ENTRY_BYTES) } })).toMatch(
      /spec\.env\.GAVEL_INPUT is \d+ bytes/,
    );
    expect(specProblem({ ...judgeSpec, env: { GAVEL_INPUT: "x".repeat(64 * 1024) } })).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import { agentCrd, executionCrd, guardPolicyCrd, toolApprovalCrd } from "../api/crds.js";
import { UsageError } from "./command.js";
import { RESOURCES } from "../views/resources.js";
import { resolveResource } from "./resources.js";

describe("resource names", () => {
  it("are the CRDs' plural, singular and short names", () => {
    for (const [r, crd] of [
      [RESOURCES[0], executionCrd],
      [RESOURCES[1], agentCrd],
      [RESOURCES[2], guardPolicyCrd],
      [RESOURCES[3], toolApprovalCrd],
    ] as const) {
      const n = crd.spec.names;
      expect(r?.names).toEqual([n.plural, n.singular, ...n.shortNames]);
      expect(r?.kind).toBe(n.kind);
    }
  });
  it("resolve any alias, and kubectl's kind.group form", () => {
    expect(resolveResource("ex").plural).toBe("executions");
    expect(resolveResource("Execution").plural).toBe("executions");
    expect(resolveResource("gp").plural).toBe("guardpolicies");
    expect(resolveResource("agents.100monkeys.ai").plural).toBe("agents");
  });
  it("refuse an unknown one naming it", () => {
    expect(() => resolveResource("jobs")).toThrow(UsageError);
    expect(() => resolveResource("jobs")).toThrow(/"jobs"/);
  });
});

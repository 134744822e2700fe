// Defaults: the CRD's structural defaults plus the validator-list defaults of the references.
import { describe, expect, it } from "vitest";
import { admissionExpression } from "./admission-policy.js";
import { declaredVersion } from "./declared-version.js";
import { withDefaults } from "./defaults.js";
import type { Agent } from "./types.js";

const agent = (spec: Agent["spec"]): Agent => ({ apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name: "a" }, spec });

describe("withDefaults", () => {
  it("fills validator entries by type, keeping what is set", () => {
    const got = withDefaults(
      agent({
        execution: {
          validation: [
            { type: "exit_code" },
            { type: "regex", pattern: "ok" },
            { type: "semantic", judge_agent: "j", min_score: 0.75 },
            { type: "multi_judge", judges: ["a", "b"], min_judges_required: 2 },
            { type: "json_schema", target_path: "/w/o.json", schema_path: "/s.json" },
          ],
        },
      }),
    );
    expect(got.spec.execution).toEqual({
      mode: "iterative",
      max_iterations: 10,
      validation: [
        { type: "exit_code", expected: 0, min_score: 1, min_confidence: 0 },
        { type: "regex", pattern: "ok", target: "stdout", min_score: 1, min_confidence: 0 },
        { type: "semantic", judge_agent: "j", min_score: 0.75, min_confidence: 0, timeout_seconds: 300 },
        {
          type: "multi_judge",
          judges: ["a", "b"],
          consensus: "weighted_average",
          min_judges_required: 2,
          min_score: 1,
          min_confidence: 0,
          timeout_seconds: 300,
        },
        { type: "json_schema", target_path: "/w/o.json", schema_path: "/s.json", min_score: 1, min_confidence: 0 },
      ],
    });
  });

  it("leaves the judge form alone and fills tool_validation with 0.7 / 0.0 / 300", () => {
    const got = withDefaults(
      agent({
        execution: {
          mode: "one-shot",
          validation: { output: { format: "json" } },
          tool_validation: [{ type: "semantic", judge_agent: "j" }],
        },
        volumes: [{ name: "w", mount_path: "/workspace" }],
        security: { network: {} },
        tools: ["fs.read", { name: "cmd.run" }],
      }),
    );
    expect(got.spec.execution?.validation).toEqual({ output: { format: "json" } });
    expect(got.spec.execution?.tool_validation).toEqual([
      { type: "semantic", judge_agent: "j", min_score: 0.7, min_confidence: 0, timeout_seconds: 300 },
    ]);
    expect(got.spec.volumes).toEqual([{ name: "w", mount_path: "/workspace", size: "1Gi", access_mode: "ReadWriteOnce" }]);
    expect(got.spec.security?.network).toEqual({ mode: "none" });
    expect(got.spec.tools).toEqual(["fs.read", { name: "cmd.run" }]);
  });

  it("does not touch its argument", () => {
    const a = agent({ execution: { validation: [{ type: "exit_code" }] } });
    withDefaults(a);
    expect(a.spec.execution).toEqual({ validation: [{ type: "exit_code" }] });
  });
});

describe("declaredVersion", () => {
  it("reads metadata.version from the last-applied annotation", () => {
    const applied = JSON.stringify({ metadata: { name: "j", version: "1.0.0" } });
    expect(declaredVersion({ annotations: { "kubectl.kubernetes.io/last-applied-configuration": applied } })).toBe("1.0.0");
    expect(declaredVersion({})).toBeUndefined();
    expect(declaredVersion({ annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{not json" } })).toBeUndefined();
  });
});

describe("admissionExpression", () => {
  it("guards each step and maps self onto the field", () => {
    expect(admissionExpression(["spec", "execution", "validation"], "type(self) == list")).toBe(
      "!has(object.spec) || !has(object.spec.execution) || !has(object.spec.execution.validation) || (type(object.spec.execution.validation) == list)",
    );
    expect(admissionExpression(["spec", "tools", "[]"], "selfish(self)")).toBe(
      "!has(object.spec) || !has(object.spec.tools) || object.spec.tools.all(x0, (selfish(x0)))",
    );
  });
});

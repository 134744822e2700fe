// The controller's own reads of an Execution: the judges it needs, and whether a status write changes anything.
import { describe, expect, it } from "vitest";
import type { Agent } from "../api/types.js";
import { judgeNamesOf } from "./execution-state.js";
import { sameStatus } from "./execution-status.js";

const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "worker" },
  spec: {
    execution: {
      mode: "iterative",
      validation: [
        { type: "exit_code" },
        { type: "semantic", judge_agent: "rule-judge" },
        { type: "multi_judge", judges: ["rule-judge", "command-judge"] },
      ],
      tool_validation: [{ type: "semantic", judge_agent: "tool-judge" }],
    },
  },
};

describe("execution state", () => {
  it("names the judges an agent's validators use and compares statuses field by field", () => {
    expect(judgeNamesOf(agent)).toEqual(["rule-judge", "command-judge", "tool-judge"]);
    expect(sameStatus({ phase: "Running", iteration: 1 }, { iteration: 1, phase: "Running" })).toBe(true);
    expect(sameStatus({ phase: "Running" }, { phase: "Running", message: undefined })).toBe(true);
    expect(sameStatus({ phase: "Running" }, { phase: "Refining" })).toBe(false);
  });
});

// skip_judge as the operators set it: gavel's built-in table, the GuardPolicies (merged
// first-wins), and an Agent's own skip_judge, which can only ask for more judging.
import { describe, expect, it } from "vitest";
import { agentScope } from "./guard/context.js";
import { compilePolicy } from "./guard/policy.js";
import { PolicyStore } from "./guard/policy-store.js";
import { skipJudge } from "./skip-judge.js";

describe("skip_judge", () => {
  const none = compilePolicy([]);
  it("the operators decide: the built-in table, overridden by a GuardPolicy; unknown tools are judged", () => {
    const scope = agentScope({ spec: { tools: ["fs.read", "fs.list", "cmd.run", "fs.write", "x.custom", "db.query"] } });
    const tools = ["fs.read", "fs.list", "cmd.run", "fs.write", "x.custom", "db.query"];
    expect(tools.map((t) => skipJudge(t, scope, none))).toEqual([true, true, false, false, false, false]);
    const policy = compilePolicy([{ name: "ops", spec: { skip_judge: { "db.query": true, "fs.read": false } } }]);
    expect(tools.map((t) => skipJudge(t, scope, policy))).toEqual([false, true, false, false, false, true]);
  });

  it("an Agent's author can ask for judging but never switch it off alone", () => {
    const policy = compilePolicy([{ name: "ops", spec: { skip_judge: { "db.query": true } } }]);
    const scope = agentScope({
      spec: {
        tools: [
          { name: "fs.read", skip_judge: false },
          { name: "cmd.run", skip_judge: true },
          { name: "x.custom", skip_judge: true },
          { name: "db.query", skip_judge: false },
          { name: "fs.list", skip_judge: true },
        ],
      },
    });
    expect(["fs.read", "cmd.run", "x.custom", "db.query", "fs.list"].map((t) => skipJudge(t, scope, policy))).toEqual([
      false,
      false,
      false,
      false,
      true,
    ]);
  });

  it("merges policies first-wins (the cluster default first) and reports the conflict", () => {
    const store = new PolicyStore("gavel-system", [
      { name: "default", namespace: "gavel-system", spec: { skip_judge: { "db.query": false } } },
      { name: "team", namespace: "team-a", spec: { skip_judge: { "db.query": true, "db.read": true } } },
    ]);
    const merged = store.get("team-a");
    expect([merged.skipJudge.get("db.query"), merged.skipJudge.get("db.read")]).toEqual([false, true]);
    expect(merged.warnings).toEqual(["GuardPolicy team-a/team: skip_judge.db.query ignored, already false"]);
  });
});

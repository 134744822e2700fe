// The runtime table: built-ins, operator entries over them, and how an Agent's runtime picks its image.
import { describe, expect, it } from "vitest";
import type { Agent } from "../api/types.js";
import { builtinRuntimes, chooseRuntime, parseRuntimeTable, runtimeTable } from "./runtime-table.js";

function agent(runtime: NonNullable<Agent["spec"]["runtime"]> | undefined): Agent {
  return { apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name: "a" }, spec: runtime === undefined ? {} : { runtime } };
}

describe("runtime table", () => {
  const table = runtimeTable([], builtinRuntimes("1.2.3"));

  it("ships Python 3.11 and Node 20 at this build's images", () => {
    expect(chooseRuntime(agent({ language: "python", version: "3.11" }), table)).toMatchObject({
      image: "gavel/runtime-python-3.11:1.2.3",
    });
    expect(chooseRuntime(agent({ language: "node", version: "20" }), table)).toMatchObject({ image: "gavel/runtime-node-20:1.2.3" });
    expect(chooseRuntime(agent({ language: "node" }), table)).toMatchObject({ image: "gavel/runtime-node-20:1.2.3" });
  });

  it("an explicit image wins; neither image nor language takes the fallback, or is a problem", () => {
    expect(chooseRuntime(agent({ language: "python", version: "9", image: "mine:1" }), table)).toEqual({ image: "mine:1", env: {} });
    expect(chooseRuntime(agent(undefined), table, "gavel/agent:x")).toEqual({ image: "gavel/agent:x", env: {} });
    expect(chooseRuntime(agent(undefined), table)).toMatchObject({ field: "spec.runtime" });
  });

  it("names the field and what is known when the table has no such runtime", () => {
    expect(chooseRuntime(agent({ language: "ruby" }), table)).toEqual({
      field: "spec.runtime.language",
      problem: 'spec.runtime.language: no runtime for "ruby" in the runtime table (known: python 3.11, node 20)',
    });
    const r = chooseRuntime(agent({ language: "python", version: "3.12" }), table);
    expect("field" in r && r.field).toBe("spec.runtime.version");
    expect("problem" in r && r.problem).toMatch(/known: python 3\.11\)/);
  });

  it("operator entries add versions, replace an entry and move the default", () => {
    const extra = parseRuntimeTable(`
runtimes:
  - {language: Python, version: "3.12", image: "reg/py:3.12", default: true, env: {GAVEL_LLM_MODEL: "m"}}
  - {language: node, version: "20", image: "reg/node:20"}
`);
    const t = runtimeTable(extra, builtinRuntimes("1.2.3"));
    expect(chooseRuntime(agent({ language: "python" }), t)).toMatchObject({ image: "reg/py:3.12", env: { GAVEL_LLM_MODEL: "m" } });
    expect(chooseRuntime(agent({ language: "python", version: "3.11" }), t)).toMatchObject({ image: "gavel/runtime-python-3.11:1.2.3" });
    expect(chooseRuntime(agent({ language: "node", version: "20" }), t)).toMatchObject({ image: "reg/node:20" });
  });

  it("refuses a bad table naming the entry and field", () => {
    expect(() => parseRuntimeTable("- {language: python, version: 3.10, image: x}", "values.yaml")).toThrow(
      /values.yaml: runtimes\[0\]\.version must be a quoted string/,
    );
    expect(() => parseRuntimeTable("- {language: python, version: '3', image: x, tag: y}")).toThrow(
      /runtimes\[0\]\.tag is not a known field/,
    );
    expect(() => parseRuntimeTable("- {language: python, version: '3'}")).toThrow(/runtimes\[0\]\.image must be a non-empty string/);
    expect(() => parseRuntimeTable("- {language: python, version: '3', image: x, env: {A: 1}}")).toThrow(/env must be a map of strings/);
    expect(() => parseRuntimeTable("runtimes: 3")).toThrow(/expected a list/);
    expect(() => parseRuntimeTable("- {language: python, version: '3', image: x, command: python3}")).toThrow(
      /runtimes\[0\]\.command must be a non-empty list of non-empty strings/,
    );
    expect(parseRuntimeTable("- {language: python, version: '3', image: x, command: [python3, /a.py]}")[0]?.command).toEqual([
      "python3",
      "/a.py",
    ]);
    expect(parseRuntimeTable("")).toEqual([]);
  });

  it("names every bad entry and field of a table at once", () => {
    expect(() =>
      parseRuntimeTable(
        "- {language: ' ', version: '3', image: x}\n- 7\n- {language: node, version: '20', image: y, env: {A: '1', B: 2}, default: yes}",
        "runtimes.yaml",
      ),
    ).toThrow(
      "runtimes.yaml: runtimes[0].language must be a non-empty string; runtimes.yaml: runtimes[1] must be a mapping; runtimes.yaml: runtimes[2].env must be a map of strings (B is not a string); runtimes.yaml: runtimes[2].default must be true or false",
    );
  });
});

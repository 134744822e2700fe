import { describe, expect, it } from "vitest";
import { candidates, type NameLookup } from "./completion.js";

const lookup: NameLookup = {
  names: (resource, ns) =>
    Promise.resolve(resource.startsWith("ex") ? [`run-${ns ?? "default"}`, "run-i1-v1-checker"] : ["writer", "checker"]),
  judges: (execution) => Promise.resolve([`${execution}-i1-v1-checker`, "checker"]),
};

const values = async (words: string[]) => (await candidates(words, lookup)).values;

describe("completion candidates", () => {
  it("complete commands, resource types, object names in the -n namespace, flags and their values", async () => {
    expect(await values(["de"])).toEqual(["describe", "deny"]);
    expect(await values(["get", ""])).toContain("gp");
    expect(await values(["get", "ex", "-n", "team", "run"])).toEqual(["run-team", "run-i1-v1-checker"]);
    expect(await values(["logs", ""])).toEqual(["run-default", "run-i1-v1-checker"]);
    expect(await values(["logs", "run", "--judge", "ch"])).toEqual(["checker"]);
    // The execution named after flags (seen on the test cluster: `logs -n NS EXEC --judge` asked for the judges of "-n")
    expect(await values(["logs", "-n", "team", "--iteration", "2", "run", "--judge", ""])).toEqual(["run-i1-v1-checker", "checker"]);
    expect(await values(["get", "ex", "-o", "y"])).toEqual(["yaml"]);
    expect(await values(["logs", "run", "--f"])).toEqual(["--follow"]);
    expect(await values(["completion", ""])).toEqual(["bash", "zsh"]);
  });
  it("complete guard's subcommands and guard check's flags, leaving --agent and --policy files to the shell", async () => {
    expect(await values(["guard", ""])).toEqual(["check", "tool-hash"]);
    expect(await values(["guard", "check", "--t"])).toEqual(["--tool"]);
    expect(await values(["guard", "check", "--tool", "fs.read", "--p"])).toEqual(["--policy"]);
    expect(await candidates(["guard", "check", "--policy", ""], lookup)).toEqual({ values: [], directive: 0 });
    expect(await candidates(["guard", "check", "--tool", ""], lookup)).toEqual({ values: [], directive: 4 });
  });
  it("hide hidden commands, and leave files to the shell for commands that take them", async () => {
    expect(await values(["__"])).toEqual([]);
    expect(await candidates(["validate", "-f", ""], lookup)).toEqual({ values: [], directive: 0 });
  });
  it("offer nothing rather than fail when the cluster cannot be asked", async () => {
    const down: NameLookup = { names: () => Promise.reject(new Error("connection refused")), judges: () => Promise.reject(new Error("x")) };
    expect((await candidates(["get", "ex", ""], down)).values).toEqual([]);
  });
});

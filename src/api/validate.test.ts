// Offline validation: every reference manifest passes (warnings only), and typical mistakes are
// reported at the field that is wrong.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { validateManifest, withSchemaDefaults, pointerToPath } from "./validate.js";

const refDir = join(import.meta.dirname, "..", "..", "test", "fixtures", "reference");

function agent(spec: unknown): unknown {
  return { apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name: "a" }, spec };
}
const errors = (doc: unknown) => validateManifest(doc).filter((p) => p.severity === "error");

describe("validateManifest", () => {
  for (const file of readdirSync(refDir).filter((f) => f.endsWith(".yaml"))) {
    it(`accepts the reference manifest ${file}`, () => {
      for (const doc of parseAllDocuments(readFileSync(join(refDir, file), "utf8"))) {
        expect(errors(doc.toJS())).toEqual([]);
      }
    });
  }

  it("warns that metadata.version is dropped", () => {
    const doc = { ...(agent({}) as object), metadata: { name: "j", version: "1.0.0" } };
    expect(validateManifest(doc)).toEqual([expect.objectContaining({ path: "metadata.version", severity: "warning" })]);
  });

  it.each([
    [{ execution: { validation: [{ type: "semantic" }] } }, "spec.execution.validation[0].judge_agent"],
    [{ execution: { validation: [{ type: "exit_code", min_score: 1.5 }] } }, "spec.execution.validation[0].min_score"],
    [
      { execution: { validation: [{ type: "multi_judge", judges: ["a"], min_judges_required: 2 }] } },
      "spec.execution.validation[0].min_judges_required",
    ],
    [{ execution: { validation: [{ type: "regex", pattern: "x", target: "out.txt" }] } }, "spec.execution.validation[0].target"],
    [{ execution: { validation: [{ type: "bogus" }] } }, "spec.execution.validation[0].type"],
    [{ execution: { validation: "exit_code" } }, "spec.execution.validation"],
    [{ execution: { validation: { output: { format: "xml" } } } }, "spec.execution.validation.output.format"],
    [{ execution: { tool_validation: [{ type: "regex", judge_agent: "j" }] } }, "spec.execution.tool_validation[0].type"],
    [
      { execution: { tool_validation: [{ type: "semantic", judge_agent: "j", min_score: -1 }] } },
      "spec.execution.tool_validation[0].min_score",
    ],
    [{ execution: { tool_validation: { type: "semantic" } } }, "spec.execution.tool_validation"],
    [{ execution: { mode: "twice" } }, "spec.execution.mode"],
    [{ execution: { max_iterations: 0 } }, "spec.execution.max_iterations"],
    [{ execution: { timeout_seconds: -5 } }, "spec.execution.timeout_seconds"],
    [{ security: { network: { mode: "none", allowlist: ["x.com"] } } }, "spec.security.network.allowlist"],
    [{ volumes: [{ name: "w", mount_path: "workspace" }] }, "spec.volumes[0].mount_path"],
    [{ tools: [{ allowlist: ["x"] }] }, "spec.tools[0].name"],
    [{ tools: ["fs.read", { name: "fs.write", approval: "sometimes" }] }, "spec.tools[1].approval"],
    [{ tools: [{ name: "fs.write", approval: "always", approval_on_timeout: "allow" }] }, "spec.tools[0].approval_on_timeout"],
    [{ tools: [{ name: "fs.write", approval: "always", approval_timeout: "soon" }] }, "spec.tools[0].approval_timeout"],
    [{ runtime: { language: "python", versoin: "3" } }, "spec.runtime.versoin"],
    [{ runtime: { image: "x", command: [] } }, "spec.runtime.command"],
    [{ workspace_strategy: "clone" }, "spec.workspace_strategy"],
    [{ mcp_servers: [{ name: "r", command: ["x"], url: "https://h/mcp" }] }, "spec.mcp_servers[0]"],
    [{ mcp_servers: [{ name: "r" }] }, "spec.mcp_servers[0]"],
    [{ mcp_servers: [{ name: "r", url: "ftp://h/mcp" }] }, "spec.mcp_servers[0].url"],
    [
      { mcp_servers: [{ name: "r", command: ["x"], bearer_token_secret: { name: "s", key: "k" } }] },
      "spec.mcp_servers[0].bearer_token_secret",
    ],
    [
      { mcp_servers: [{ name: "r", url: "https://h/mcp", bearer_token_secret: { name: "s" } }] },
      "spec.mcp_servers[0].bearer_token_secret.key",
    ],
    [{ mcp_servers: [{ name: "r", image: "srv:1", url: "https://h/mcp", port: 8080 }] }, "spec.mcp_servers[0]"],
    [{ mcp_servers: [{ name: "r", image: "srv:1" }] }, "spec.mcp_servers[0].port"],
    [{ mcp_servers: [{ name: "r", command: ["x"], port: 8080 }] }, "spec.mcp_servers[0].port"],
    [{ mcp_servers: [{ name: "r", url: "https://h/mcp", args: ["a"] }] }, "spec.mcp_servers[0].args"],
    [{ mcp_servers: [{ name: "r", command: ["x"], env: [{ name: "A", value: "1" }] }] }, "spec.mcp_servers[0].env"],
    [{ mcp_servers: [{ name: "r", image: "srv:1", port: 8080, path: "mcp" }] }, "spec.mcp_servers[0].path"],
    [{ mcp_servers: [{ name: "r", image: "srv:1", port: 80 }] }, "spec.mcp_servers[0].port"],
    [{ mcp_servers: [{ name: "r", image: "srv:1", port: 8080, env: [{ name: "A", valueFrom: {} }] }] }, "spec.mcp_servers[0].env[0].value"],
    [
      {
        mcp_servers: [
          { name: "a", image: "srv:1", port: 8080 },
          { name: "b", image: "srv:2", port: 8080 },
        ],
      },
      "spec.mcp_servers",
    ],
    [{ mcp_endpoint: { enabled: true }, mcp_servers: [{ name: "a", image: "srv:1", port: 8931 }] }, "spec.mcp_servers"],
    [{ mcp_endpoint: { enabled: true, port: 9000 }, mcp_servers: [{ name: "a", image: "srv:1", port: 9000 }] }, "spec.mcp_servers"],
    [
      { workspace_strategy: "shared", volumes: [{ name: "w", mount_path: "/w", access_mode: "ReadWriteOncePod" }] },
      "spec.workspace_strategy",
    ],
  ])("refuses %j at %s", (spec, path) => {
    const found = errors(agent(spec)).map((p) => p.path);
    expect(found).toContain(path);
  });

  it("takes a remote MCP server by url with its bearer token's Secret key, and says why a server with both forms is refused", () => {
    expect(
      errors(
        agent({
          mcp_servers: [
            { name: "r", url: "https://mcp.example.test/mcp", bearer_token_secret: { name: "s", key: "k" } },
            { name: "f", command: ["x"] },
          ],
        }),
      ),
    ).toEqual([]);
    expect(errors(agent({ mcp_servers: [{ name: "r", command: ["x"], url: "https://h/mcp" }] }))[0]?.message).toBe(
      "an MCP server has exactly one of command (a stdio server), url (a remote server) and image (a server container in the worker's pod)",
    );
  });

  it("takes an image server beside the worker (port on the pod's loopback, args, literal env), and says why a port is refused", () => {
    const everything = {
      name: "everything",
      image: "gavel/mcp-everything:dev",
      port: 3001,
      args: ["streamableHttp"],
      env: [{ name: "PORT", value: "3001" }],
    };
    expect(errors(agent({ mcp_servers: [everything, { name: "f", command: ["x"] }], mcp_endpoint: { enabled: true } }))).toEqual([]);
    expect(errors(agent({ mcp_servers: [{ ...everything, port: 8931 }], mcp_endpoint: { enabled: false } }))).toEqual([]);
    expect(errors(agent({ mcp_servers: [{ ...everything, port: 8931 }], mcp_endpoint: { enabled: true } }))[0]?.message).toBe(
      "an image server cannot take the MCP endpoint's port (mcp_endpoint.port, default 8931): both listen on the pod's loopback",
    );
    expect(errors(agent({ mcp_servers: [everything, { ...everything, name: "again" }] }))[0]?.message).toBe(
      "two image servers cannot share a port: every container of a pod shares its loopback",
    );
    expect(errors(agent({ mcp_servers: [{ name: "e", image: "x:1" }] }))[0]?.message).toBe(
      "an image server needs port: the port it serves on in the worker's pod",
    );
  });

  it("says what a bad workspace_strategy may be, and why shared cannot serve a ReadWriteOncePod volume", () => {
    expect(
      errors(agent({ workspace_strategy: "clone" }))
        .map((p) => p.message)
        .join("\n"),
    ).toMatch(/shared.*snapshot.*copy/);
    expect(
      errors(agent({ workspace_strategy: "shared", volumes: [{ name: "w", mount_path: "/w", access_mode: "ReadWriteOncePod" }] }))[0]
        ?.message,
    ).toBe("workspace_strategy shared cannot serve a ReadWriteOncePod volume (one pod at a time): use copy or snapshot");
    expect(
      errors(agent({ workspace_strategy: "snapshot", volumes: [{ name: "w", mount_path: "/w", access_mode: "ReadWriteOncePod" }] })),
    ).toEqual([]);
  });

  it("fills the structural defaults the API server fills", () => {
    const got = withSchemaDefaults("Agent", agent({ execution: { tool_validation: [{ type: "semantic", judge_agent: "j" }] } })) as {
      spec: { execution: Record<string, unknown> };
    };
    expect(got.spec.execution).toEqual({
      mode: "iterative",
      max_iterations: 10,
      tool_validation: [{ type: "semantic", judge_agent: "j", min_score: 0.7, min_confidence: 0, timeout_seconds: 300 }],
    });
  });

  it("turns JSON pointers into field paths", () => {
    expect(pointerToPath("/spec/tools/0/name")).toBe("spec.tools[0].name");
    expect(pointerToPath("")).toBe("");
  });

  it("never throws, whatever the document holds", () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    fc.assert(
      fc.property(fc.constantFrom("Agent", "Execution", "GuardPolicy"), json, json, (kind, spec, status) => {
        const problems = validateManifest({ apiVersion: "100monkeys.ai/v1", kind, metadata: { name: "x" }, spec, status });
        expect(Array.isArray(problems)).toBe(true);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(json, (execution) => {
        validateManifest(agent({ execution, tools: [execution], volumes: [execution] }));
        validateManifest(
          agent({ execution: { validation: [execution, { type: "multi_judge", judges: execution }], tool_validation: [execution] } }),
        );
      }),
      { numRuns: 300 },
    );
  });
});

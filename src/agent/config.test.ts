// The worker runtime's environment contract: what drivers set is what the runtime reads.
import { describe, expect, it } from "vitest";
import { agentEnvironment, mcpTokenEnv } from "../api/agent-env.js";
import { commandEnvironment, readAgentConfig } from "./config.js";

const base = { GAVEL_NAMESPACE: "team", GAVEL_EXECUTION: "run-a", GAVEL_NATS_URL: "nats://127.0.0.1:4222", GAVEL_SCRIPT: "- final: x" };

describe("readAgentConfig", () => {
  it("reads the MCP servers agentEnvironment writes, and names the entry and field of a bad one", () => {
    const servers = [{ name: "files", command: ["mcp-server-filesystem", "/workspace"], tools: ["read_text_file"], timeout_seconds: 5 }];
    const env = agentEnvironment({ namespace: "team", execution: "run-a", iteration: 1, mcpServers: servers, natsUrl: "nats://gate:4222" });
    expect(readAgentConfig({ ...env, GAVEL_SCRIPT: "- final: x" }).mcpServers).toEqual(servers);
    expect(readAgentConfig(base).mcpServers).toEqual([]);
    const bad = (v: unknown) => () => readAgentConfig({ ...base, GAVEL_MCP_SERVERS: JSON.stringify(v) });
    expect(bad({})).toThrow("GAVEL_MCP_SERVERS must be a JSON list of MCP servers");
    expect(bad([{ name: "Files", command: ["x"] }])).toThrow(/GAVEL_MCP_SERVERS\[0\]\.name must match/);
    expect(bad([{ name: "files", command: [] }])).toThrow(
      "GAVEL_MCP_SERVERS[0].command (server files) must be a non-empty list of strings",
    );
    expect(
      bad([
        { name: "a", command: ["x"] },
        { name: "a", command: ["y"] },
      ]),
    ).toThrow("GAVEL_MCP_SERVERS[1].name: MCP server a is declared twice");
    expect(bad([{ name: "a", command: ["x"], timeout_seconds: 0 }])).toThrow(
      "GAVEL_MCP_SERVERS[0].timeout_seconds (server a) must be a positive integer",
    );
  });

  it("reads a remote (url) server and its bearer token from GAVEL_MCP_TOKEN_<index>; refuses a server with both or neither form, a bad URL, a missing token", () => {
    const servers = [
      { name: "files", command: ["mcp-server-filesystem", "/workspace"] },
      { name: "remote", url: "https://mcp.example.test/mcp", bearer_token_secret: { name: "remote-mcp", key: "token" } },
    ];
    const env = agentEnvironment({ namespace: "team", execution: "run-a", iteration: 1, mcpServers: servers, natsUrl: "nats://gate:4222" });
    expect(JSON.stringify(env)).not.toContain("s3cret");
    const c = readAgentConfig({ ...env, GAVEL_SCRIPT: "- final: x", [mcpTokenEnv(1)]: "s3cret" });
    expect(c.mcpServers).toEqual(servers);
    expect(c.mcpTokens).toEqual({ remote: "s3cret" });
    // Kept from child processes (stdio MCP servers, cmd.run).
    expect(commandEnvironment({ ...env, [mcpTokenEnv(1)]: "s3cret", PATH: "/bin" })).toEqual({ PATH: "/bin" });
    expect(() => readAgentConfig({ ...env, GAVEL_SCRIPT: "- final: x" })).toThrow(
      "GAVEL_MCP_SERVERS[1].bearer_token_secret (server remote): GAVEL_MCP_TOKEN_1 is not set (Secret remote-mcp, key token)",
    );
    const bad = (v: unknown) => () => readAgentConfig({ ...base, GAVEL_MCP_SERVERS: JSON.stringify(v) });
    expect(bad([{ name: "a", command: ["x"], url: "http://h/mcp" }])).toThrow(
      "GAVEL_MCP_SERVERS[0] (server a) must have exactly one of command (a stdio server), url (a remote server) and image (a server container in the pod)",
    );
    expect(bad([{ name: "a" }])).toThrow("GAVEL_MCP_SERVERS[0] (server a) must have exactly one of command");
    expect(bad([{ name: "a", url: "http://h/mcp", image: "srv:1", port: 3001 }])).toThrow(
      "GAVEL_MCP_SERVERS[0] (server a) must have exactly one",
    );
    expect(bad([{ name: "a", image: "srv:1" }])).toThrow(
      "GAVEL_MCP_SERVERS[0].port (server a) must be the port the image server serves on",
    );
    expect(bad([{ name: "a", image: "srv:1", port: 3001, path: "mcp" }])).toThrow(
      "GAVEL_MCP_SERVERS[0].path (server a) must be a path starting with /",
    );
    expect(bad([{ name: "a", url: "ftp://h/mcp" }])).toThrow("GAVEL_MCP_SERVERS[0].url (server a) must be an http:// or https:// URL");
    expect(bad([{ name: "a", command: ["x"], bearer_token_secret: { name: "s", key: "k" } }])).toThrow(
      "GAVEL_MCP_SERVERS[0].bearer_token_secret (server a) is for a url server only",
    );
  });

  it("reads back what agentEnvironment writes", () => {
    const env = agentEnvironment({
      namespace: "team",
      execution: "run-a",
      iteration: 3,
      task: "do it",
      input: { n: 1 },
      feedback: "try harder",
      tools: ["fs.read", { name: "cmd.run", allowlist: ["ls"] }],
      mounts: [
        { path: "/workspace", readOnly: false },
        { path: "/data", readOnly: true },
      ],
      natsUrl: "nats://gate:4222",
      natsCreds: "CREDS",
    });
    const c = readAgentConfig({ ...env, GAVEL_SCRIPT: "- final: x" });
    expect(c).toMatchObject({
      namespace: "team",
      execution: "run-a",
      iteration: 3,
      task: "do it",
      input: { n: 1 },
      feedback: "try harder",
      tools: ["fs.read", { name: "cmd.run", allowlist: ["ls"] }],
      mounts: [
        { path: "/workspace", readOnly: false },
        { path: "/data", readOnly: true },
      ],
      nats: { url: "nats://gate:4222", creds: "CREDS" },
      model: { kind: "scripted", script: "- final: x" },
      gate: { totalTimeoutMs: 330_000, attemptTimeoutMs: 2000 },
    });
  });

  it("reads the iteration's deadline the driver sets (GAVEL_ITERATION_TIMEOUT_SECONDS), naming it when it is bad", () => {
    const env = agentEnvironment({
      namespace: "team",
      execution: "run-a",
      iteration: 1,
      natsUrl: "nats://gate:4222",
      iterationTimeoutSeconds: 30,
    });
    expect(env.GAVEL_ITERATION_TIMEOUT_SECONDS).toBe("30");
    expect(readAgentConfig({ ...env, GAVEL_SCRIPT: "- final: x" }).iterationTimeoutMs).toBe(30_000);
    expect(readAgentConfig(base).iterationTimeoutMs).toBeUndefined();
    expect(() => readAgentConfig({ ...base, GAVEL_ITERATION_TIMEOUT_SECONDS: "soon" })).toThrow(
      /GAVEL_ITERATION_TIMEOUT_SECONDS must be a positive number/,
    );
    expect(readAgentConfig({ ...base, GAVEL_DEADLINE: "2026-12-07T01:00:30.000Z" }).deadlineMs).toBe(
      Date.parse("2026-12-07T01:00:30.000Z"),
    );
    expect(() => readAgentConfig({ ...base, GAVEL_DEADLINE: "1765069230" })).toThrow(/GAVEL_DEADLINE must be an RFC 3339 time/);
  });

  it("takes the iteration's TRACEPARENT for its proposals; an invalid one is ignored (W3C trace context)", () => {
    const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    expect(readAgentConfig({ ...base, TRACEPARENT: tp }).gate.traceParent).toBe(tp);
    expect(readAgentConfig({ ...base, TRACEPARENT: "not-a-traceparent" }).gate.traceParent).toBeUndefined();
    expect(readAgentConfig(base).gate.traceParent).toBeUndefined();
  });

  it("accepts local mode's GAVEL_WORKSPACE and null input", () => {
    const c = readAgentConfig({ ...base, GAVEL_WORKSPACE: "/workspace:/cache", GAVEL_INPUT: "null", GAVEL_FEEDBACK: "" });
    expect(c.mounts).toEqual([
      { path: "/workspace", readOnly: false },
      { path: "/cache", readOnly: false },
    ]);
    expect(c.input).toBeUndefined();
    expect(c.feedback).toBeUndefined();
  });

  it("picks the OpenAI-compatible model when no script is given", () => {
    const { GAVEL_SCRIPT: _s, ...rest } = base;
    expect(readAgentConfig({ ...rest, GAVEL_LLM_MODEL: "gpt-4o-mini", GAVEL_LLM_BASE_URL: "http://llm:8000/v1" }).model).toEqual({
      kind: "openai",
      baseUrl: "http://llm:8000/v1",
      model: "gpt-4o-mini",
    });
    expect(() => readAgentConfig(rest)).toThrow(/GAVEL_LLM_MODEL is not set/);
  });

  it.each([
    [{ GAVEL_NAMESPACE: undefined }, /GAVEL_NAMESPACE is not set/],
    [{ GAVEL_ITERATION: "x" }, /GAVEL_ITERATION/],
    [{ GAVEL_TOOLS: "{}" }, /GAVEL_TOOLS must be a JSON list/],
    [{ GAVEL_TOOLS: '[{"name":"cmd.run","allowlist":"ls"}]' }, /allowlist of "cmd.run"/],
    [{ GAVEL_MOUNTS: "[1]" }, /GAVEL_MOUNTS\[0\]/],
    [{ GAVEL_INPUT: "{" }, /GAVEL_INPUT is not valid JSON/],
    [{ GAVEL_MODEL: "magic" }, /GAVEL_MODEL must be/],
    [{ GAVEL_GATE_TIMEOUT_SECONDS: "-1" }, /GAVEL_GATE_TIMEOUT_SECONDS must be a positive number/],
  ])("refuses %j", (patch, message) => {
    expect(() => readAgentConfig({ ...base, ...patch })).toThrow(message);
  });
});

describe("commandEnvironment", () => {
  it("drops gavel's own variables and anything that looks like a secret", () => {
    expect(
      commandEnvironment({ PATH: "/bin", HOME: "/root", GAVEL_NATS_CREDS: "c", AWS_SECRET_ACCESS_KEY: "k", GITHUB_TOKEN: "t", LANG: "C" }),
    ).toEqual({
      PATH: "/bin",
      HOME: "/root",
      LANG: "C",
    });
  });
});

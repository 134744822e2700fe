// The CRD schema of gavel's MCP extension (ADR 0051): an Agent's `spec.mcp_servers` and a
// GuardPolicy's `mcp_servers` (the operators' MCP-server capability declarations).
import { arr, bool, cel, int, isMap, map, obj, ok, str, type Static } from "./schema-dsl.js";

/** Server names the built-in tools' prefixes take (`fs.read`, `cmd.run`): refused so a `<server>.<tool>` name never shadows one. */
export const RESERVED_MCP_SERVER_NAMES = ["fs", "cmd"] as const;

/** A server name: one token of a `<server>.<tool>` tool name. */
export const MCP_SERVER_NAME_PATTERN = "^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$";

/** Agent `spec.mcp_servers`. */
export const agentMcpServers = arr(
  "gavel extension (ADR 0051): MCP servers whose tools the agent may call, each offered as <server>.<tool> and proposed to the gate like a built-in tool (guard, skip_judge, tool_validation); only an allowed call reaches the server.",
  obj(
    "One MCP server: run over stdio as a child of the worker runtime in the worker's container (command), or a remote Streamable HTTP server (url).",
    {
      name: str("Server name, the <server> of its tools' names (not fs or cmd).", {
        minLength: 1,
        maxLength: 32,
        pattern: MCP_SERVER_NAME_PATTERN,
      }),
      command: arr(
        "The server's program and arguments (stdio transport), e.g. [mcp-server-filesystem, /workspace]. Either command or url.",
        str("One word.", { minLength: 1 }),
        { minItems: 1, maxItems: 64 },
      ),
      url: str(
        "A remote server's Streamable HTTP endpoint (http:// or https://), reached from the worker pod (its network mode must let it). Either command or url.",
        { maxLength: 2048, pattern: "^https?://[^\\s]+$" },
      ),
      bearer_token_secret: obj(
        "The Secret key holding a url server's bearer token (sent as Authorization: Bearer); the pod reads it, the Execution never holds it.",
        {
          name: str("Secret name (the Agent's namespace).", { minLength: 1, maxLength: 253 }),
          key: str("Key in the Secret.", { minLength: 1, maxLength: 253 }),
        },
        { required: ["name", "key"] },
      ),
      tools: arr(
        "The only tools of this server offered to the model (names as the server lists them); default every tool it lists.",
        str("A tool name.", { minLength: 1, maxLength: 128 }),
        { maxItems: 256 },
      ),
      timeout_seconds: int("Deadline of one call to this server, in seconds. Default 60.", { minimum: 1, maximum: 3600, default: 60 }),
      startup_timeout_seconds: int("Deadline for the server to start and answer initialize and tools/list, in seconds. Default 30.", {
        minimum: 1,
        maximum: 600,
        default: 30,
      }),
    },
    {
      required: ["name"],
      "x-kubernetes-validations": [
        cel("has(self.command) != has(self.url)", "an MCP server has either command (a stdio server) or url (a remote server)", (self) =>
          ok(isMap(self) && (self.command === undefined) !== (self.url === undefined)),
        ),
        cel(
          "!has(self.bearer_token_secret) || has(self.url)",
          "bearer_token_secret is for a url server only",
          (self) => ok(!(isMap(self) && self.bearer_token_secret !== undefined && self.url === undefined), ".bearer_token_secret"),
          ".bearer_token_secret",
        ),
        cel(
          `!(self.name in [${RESERVED_MCP_SERVER_NAMES.map((n) => `'${n}'`).join(", ")}])`,
          `an MCP server cannot be named ${RESERVED_MCP_SERVER_NAMES.join(" or ")}: its <server>.<tool> names would shadow the built-in tools`,
          (self) => ok(!(isMap(self) && (RESERVED_MCP_SERVER_NAMES as readonly string[]).includes(String(self.name))), ".name"),
          ".name",
        ),
      ],
    },
  ),
  { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], maxItems: 16 },
);

/** Agent `spec.mcp_endpoint`. */
export const agentMcpEndpoint = obj(
  "gavel extension (ADR 0061): an MCP endpoint (Streamable HTTP, on 127.0.0.1 in the worker's pod; its URL in env GAVEL_MCP_URL) for an agent gavel did not write. It serves spec.tools' built-in tools and spec.mcp_servers' tools; every call goes through the gate as the worker's own.",
  {
    enabled: bool("Run the endpoint beside the worker. Default false."),
    port: int("Its port on 127.0.0.1. Default 8931.", { minimum: 1024, maximum: 65535 }),
    image: str(
      "The endpoint's image: gavel's agent image (the default) or one built on it that carries the programs of spec.mcp_servers' commands.",
      { minLength: 1, maxLength: 512 },
    ),
  },
  { required: ["enabled"] },
);

/** GuardPolicy `mcp_servers`. */
export const guardPolicyMcpServers = arr(
  "MCP-server capability declarations (ADR 0051), decided by operators: per server (the name an Agent's spec.mcp_servers gives it), whether its tool annotations are trusted, and per tool (or *) skip_judge and the capability it requires. The first policy that declares a server wins.",
  obj(
    "One MCP server.",
    {
      server: str("Server name, as in the Agent's spec.mcp_servers.", { minLength: 1, maxLength: 32, pattern: MCP_SERVER_NAME_PATTERN }),
      trusted: bool(
        "Whether the server's tool annotations may choose a default: readOnlyHint true without destructiveHint true skips the judges. Default false (annotations are the server's claims).",
        { default: false },
      ),
      capabilities: map(
        "Tool name as the server lists it (or * for every tool of the server) -> {skip_judge, capability}. skip_judge: true skips the tool_validation judges (the guard always runs); capability is required by guard check 3, e.g. read.",
        obj("What operators declare for the tool.", {
          skip_judge: bool("Skip the tool_validation judges for this tool's calls."),
          capability: str("Capability the tool requires (a|b: either), checked against the agent's security.capabilities."),
        }),
      ),
    },
    { required: ["server"] },
  ),
  { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["server"] },
);

/** One MCP server of an Agent, run over stdio beside the worker runtime (ADR 0051). */
export type McpServerSpec = Static<typeof agentMcpServers>[number];
/** A GuardPolicy's declaration of one MCP server (ADR 0051). */
export type McpServerPolicy = Static<typeof guardPolicyMcpServers>[number];
/** What operators declare for one MCP tool (GuardPolicy `mcp_servers[].capabilities`). */
export type McpToolCapability = NonNullable<McpServerPolicy["capabilities"]>[string];

// The CRD schema of gavel's MCP extension (ADR 0051): an Agent's `spec.mcp_servers` and a
// GuardPolicy's `mcp_servers` (the operators' MCP-server capability declarations).
import { arr, bool, cel, int, isMap, map, obj, ok, str, type Static } from "./schema-dsl.js";

/** Server names the built-in tools' prefixes take (`fs.read`, `cmd.run`): refused so a `<server>.<tool>` name never shadows one. */
export const RESERVED_MCP_SERVER_NAMES = ["fs", "cmd"] as const;

/** A server name: one token of a `<server>.<tool>` tool name. */
export const MCP_SERVER_NAME_PATTERN = "^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$";

/** The in-pod MCP endpoint's port when the Agent names none (ADR 0061); an image server may not take it. */
export const DEFAULT_MCP_ENDPOINT_PORT = 8931;
/** The path of an image server's Streamable HTTP endpoint when the Agent names none. */
export const DEFAULT_MCP_IMAGE_PATH = "/mcp";

/** The fields only an image server takes (ADR 0066). */
const IMAGE_ONLY = ["port", "path", "args", "env"] as const;

/** Agent `spec.mcp_servers`. */
export const agentMcpServers = arr(
  "gavel extension (ADR 0051): MCP servers whose tools the agent may call, each offered as <server>.<tool> and proposed to the gate like a built-in tool (guard, skip_judge, tool_validation); only an allowed call reaches the server.",
  obj(
    "One MCP server, in one of three forms: run over stdio as a child of the worker runtime in the worker's container (command), a remote Streamable HTTP server (url), or a Streamable HTTP server in a container of its own beside the worker in its pod (image, port; gavel extension, ADR 0066).",
    {
      name: str("Server name, the <server> of its tools' names (not fs or cmd).", {
        minLength: 1,
        maxLength: 32,
        pattern: MCP_SERVER_NAME_PATTERN,
      }),
      command: arr(
        "The server's program and arguments (stdio transport), e.g. [mcp-server-filesystem, /workspace]. Exactly one of command, url and image.",
        str("One word.", { minLength: 1 }),
        { minItems: 1, maxItems: 64 },
      ),
      url: str(
        "A remote server's Streamable HTTP endpoint (http:// or https://), reached from the worker pod (its network mode must let it). Exactly one of command, url and image.",
        { maxLength: 2048, pattern: "^https?://[^\\s]+$" },
      ),
      image: str(
        "gavel extension (ADR 0066): the image of a Streamable HTTP MCP server run as a native sidecar of the worker's pod (started before the worker, hardened for Pod Security restricted, no service account token, its own /tmp, none of the worker's volumes or variables); the worker reaches it on http://127.0.0.1:<port><path>. Exactly one of command, url and image.",
        { minLength: 1, maxLength: 512 },
      ),
      port: int(
        "An image server's port on the pod's loopback (required with image): it must differ from the other image servers' and from the MCP endpoint's (default 8931). The server must listen on it; 127.0.0.1 alone keeps it from the pod's network (ADR 0066).",
        { minimum: 1024, maximum: 65535 },
      ),
      path: str("An image server's Streamable HTTP path. Default /mcp.", { minLength: 1, maxLength: 256, pattern: "^/[^\\s?#]*$" }),
      args: arr("An image server's container arguments (its image's entrypoint is kept), e.g. [streamableHttp].", str("One word."), {
        maxItems: 64,
      }),
      env: arr(
        "An image server's environment: literal values only (a value it must keep secret does not belong in an Agent; the server's image or a url server with bearer_token_secret does).",
        obj(
          "One variable.",
          {
            name: str("Variable name.", { minLength: 1, maxLength: 128, pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }),
            value: str("Its value.", { maxLength: 4096 }),
          },
          { required: ["name", "value"] },
        ),
        { maxItems: 64, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
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
        cel(
          "(has(self.command) ? 1 : 0) + (has(self.url) ? 1 : 0) + (has(self.image) ? 1 : 0) == 1",
          "an MCP server has exactly one of command (a stdio server), url (a remote server) and image (a server container in the worker's pod)",
          (self) => ok(isMap(self) && [self.command, self.url, self.image].filter((f) => f !== undefined).length === 1),
        ),
        cel(
          "!has(self.image) || has(self.port)",
          "an image server needs port: the port it serves on in the worker's pod",
          (self) => ok(!(isMap(self) && self.image !== undefined && self.port === undefined), ".port"),
          ".port",
        ),
        ...IMAGE_ONLY.map((f) =>
          cel(
            `!has(self.${f}) || has(self.image)`,
            `${f} is for an image server only`,
            (self) => ok(!(isMap(self) && self[f] !== undefined && self.image === undefined), `.${f}`),
            `.${f}`,
          ),
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
  {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
    maxItems: 16,
    "x-kubernetes-validations": [
      cel(
        "self.all(a, !has(a.port) || self.filter(b, has(b.port) && b.port == a.port).size() == 1)",
        "two image servers cannot share a port: every container of a pod shares its loopback",
        (self) => {
          const ports = Array.isArray(self) ? self.flatMap((s) => (isMap(s) && s.port !== undefined ? [s.port] : [])) : [];
          return ok(new Set(ports).size === ports.length);
        },
      ),
    ],
  },
);

/** The Agent spec's rule that an image server's port is not the in-pod MCP endpoint's (both listen on the pod's loopback). */
export const imageServerPortsFreeOfEndpoint = cel(
  "!has(self.mcp_endpoint) || !self.mcp_endpoint.enabled || !has(self.mcp_servers) || " +
    `self.mcp_servers.all(s, !has(s.port) || s.port != (has(self.mcp_endpoint.port) ? self.mcp_endpoint.port : ${DEFAULT_MCP_ENDPOINT_PORT}))`,
  `an image server cannot take the MCP endpoint's port (mcp_endpoint.port, default ${DEFAULT_MCP_ENDPOINT_PORT}): both listen on the pod's loopback`,
  (self) => {
    if (!isMap(self) || !isMap(self.mcp_endpoint) || self.mcp_endpoint.enabled !== true || !Array.isArray(self.mcp_servers)) return true;
    const taken = self.mcp_endpoint.port ?? DEFAULT_MCP_ENDPOINT_PORT;
    return ok(!self.mcp_servers.some((s) => isMap(s) && s.port === taken), ".mcp_servers");
  },
  ".mcp_servers",
);

/** Agent `spec.mcp_endpoint`. */
export const agentMcpEndpoint = obj(
  "gavel extension (ADR 0061): an MCP endpoint (Streamable HTTP, on 127.0.0.1 in the worker's pod; its URL in env GAVEL_MCP_URL) for an agent gavel did not write. It serves spec.tools' built-in tools and spec.mcp_servers' tools; every call goes through the gate as the worker's own.",
  {
    enabled: bool("Run the endpoint beside the worker. Default false."),
    port: int(`Its port on 127.0.0.1. Default ${DEFAULT_MCP_ENDPOINT_PORT}; no image server of spec.mcp_servers may take it.`, {
      minimum: 1024,
      maximum: 65535,
    }),
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

/** One MCP server of an Agent: a stdio command, a remote url or a server image in the worker's pod (ADR 0051, 0059, 0066). */
export type McpServerSpec = Static<typeof agentMcpServers>[number];
/** A GuardPolicy's declaration of one MCP server (ADR 0051). */
export type McpServerPolicy = Static<typeof guardPolicyMcpServers>[number];
/** What operators declare for one MCP tool (GuardPolicy `mcp_servers[].capabilities`). */
export type McpToolCapability = NonNullable<McpServerPolicy["capabilities"]>[string];

// What the e2e tests read from gavel/mcp-everything (examples/mcp-container, ADR 0066), the
// official server-everything as an Agent's MCP server image in the worker's pod: how many
// requests reached it, and how to kill it from inside its container.

/** The server's container in the worker's pod (mcp-<server> for the examples' server `everything`). */
export const EVERYTHING_CONTAINER = "mcp-everything";

/**
 * The POSTs in the server's log: it writes this line for every one. initialize,
 * notifications/initialized and tools/list make 3; each tools/call is one more.
 */
export const everythingPosts = (log: string): number => log.split("\n").filter((l) => l.startsWith("Received MCP POST request")).length;

/** SIGKILLs every process named `comm` in a container (the images have no pkill), failing when there is none: `sh -c` it. */
export const killAll = (comm: string): string =>
  `n=0; for d in /proc/[0-9]*; do if [ "$(cat "$d/comm" 2>/dev/null)" = ${comm} ]; then kill -9 "\${d#/proc/}" && n=1; fi; done; [ "$n" = 1 ]`;

/** Succeeds when a process named `comm` runs in the container: `sh -c` it. */
export const running = (comm: string): string =>
  `for d in /proc/[0-9]*; do [ "$(cat "$d/comm" 2>/dev/null)" = ${comm} ] && exit 0; done; exit 1`;

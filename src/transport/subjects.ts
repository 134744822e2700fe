// NATS subject names gavel uses. Kubernetes names may contain dots, which NATS treats as
// token separators, so names are encoded into a single token first.

/** Encodes a Kubernetes name as one NATS subject token ('.' becomes '_', which k8s names never contain). */
export function token(name: string): string {
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
    throw new Error(`"${name}" is not a valid Kubernetes name for a NATS subject token`);
  }
  return name.replaceAll(".", "_");
}

/** Decodes a token made by token(). */
export function untoken(tok: string): string {
  return tok.replaceAll("_", ".");
}

/** The stream holding every Execution's events. */
export const EVENT_STREAM = "GAVEL_EVENTS";
/** Prefix of all event subjects: gavel.events.<namespace>.<root>.<execution>.<type>. */
export const EVENT_SUBJECT_PREFIX = "gavel.events";

/** Subject a worker publishes its tool-call proposals to (request/reply). */
export function toolCallSubject(namespace: string, execution: string): string {
  return `gavel.toolcall.${token(namespace)}.${token(execution)}`;
}

/** Wildcard the gate subscribes to: every execution's proposals. */
export const TOOL_CALL_WILDCARD = "gavel.toolcall.*.*";

/** Inbox prefix of one execution: its worker may subscribe only below it. */
export function inboxPrefix(namespace: string, execution: string): string {
  return `_INBOX_gavel.${token(namespace)}.${token(execution)}`;
}

/**
 * Where the gate may answer a proposal received on `proposalSubject`: only below its own
 * execution's inbox (inboxPrefix + "."). A reply subject is the sender's choice and NATS
 * checks no permission on it, while the gate answers with its own, unrestricted connection:
 * answering anywhere else would let a worker make the gate publish to any subject (a
 * JetStream API, another execution's inbox, a stream).
 */
export function replyPrefixOf(proposalSubject: string): string {
  return `_INBOX_gavel.${proposalSubject.slice(TOOL_CALL_PREFIX.length)}.`;
}

const TOOL_CALL_PREFIX = "gavel.toolcall.";

/** Parses a proposal subject back into namespace and execution; undefined if it is not one. */
export function parseToolCallSubject(subject: string): { namespace: string; execution: string } | undefined {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "gavel" || parts[1] !== "toolcall") return undefined;
  return { namespace: untoken(parts[2] ?? ""), execution: untoken(parts[3] ?? "") };
}

/** Subject of one event: type is dot-separated (e.g. "iteration.finished"). */
export function eventSubject(namespace: string, root: string, execution: string, type: string): string {
  if (!/^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/.test(type)) throw new Error(`bad event type "${type}"`);
  return `${EVENT_SUBJECT_PREFIX}.${token(namespace)}.${token(root)}.${token(execution)}.${type}`;
}

/** Filter for the events of a namespace, or of one execution tree within it. */
export function eventFilter(namespace?: string, root?: string): string {
  if (namespace === undefined) return `${EVENT_SUBJECT_PREFIX}.>`;
  if (root === undefined) return `${EVENT_SUBJECT_PREFIX}.${token(namespace)}.>`;
  return `${EVENT_SUBJECT_PREFIX}.${token(namespace)}.${token(root)}.>`;
}

// gavel's typed errors and the one place that classifies a thrown value (nats.js
// core/src/errors.ts is the model): not found, conflict, transient (retry with backoff) or
// terminal (retrying cannot help: stop and record why). Kubernetes API errors, Docker API
// errors and Node's network errors are all read here, so no other module looks at `.code`.

/** What a caller should do about an error. */
export type ErrorKind = "not_found" | "conflict" | "transient" | "terminal";

/** Options of a GavelError: the error it stands for. */
export interface GavelErrorOptions {
  cause?: unknown;
}

/** Base of gavel's typed errors: `kind` says how to handle it, `cause` keeps the original. */
export abstract class GavelError extends Error {
  abstract readonly kind: ErrorKind;
  constructor(message: string, options: GavelErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** The object does not exist (HTTP 404). */
export class NotFoundError extends GavelError {
  override readonly name = "NotFoundError";
  readonly kind = "not_found";
}

/** A write lost a race: the object changed since it was read, or it exists already (HTTP 409). */
export class ConflictError extends GavelError {
  override readonly name = "ConflictError";
  readonly kind = "conflict";
}

/** Worth trying again after a pause: the server or the network failed, or was overloaded. */
export class TransientError extends GavelError {
  override readonly name = "TransientError";
  readonly kind = "transient";
}

/**
 * Trying again cannot help until someone changes the object (an invalid spec, a request the
 * server refuses as malformed). A controller stops retrying the key and records `reason` and
 * the message on the object (a condition or an Event).
 */
export class TerminalError extends GavelError {
  override readonly name = "TerminalError";
  readonly kind = "terminal";
  /** A CamelCase reason for a condition or Event, e.g. InvalidSpec. */
  readonly reason: string;
  constructor(reason: string, message: string, options: GavelErrorOptions = {}) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * The message of anything thrown: an Error's message, else its string form. A Kubernetes API
 * error says its status and the server's own message, not the response headers and body
 * client-node packs into its message.
 */
export function messageOf(err: unknown): string {
  const status = kubernetesStatusOf(err);
  if (status !== undefined && typeof status.message === "string" && status.message !== "") {
    return `HTTP ${httpStatusOf(err) ?? status.code ?? "?"}${status.reason !== undefined && status.reason !== "" ? ` ${status.reason}` : ""}: ${status.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * The HTTP status an error carries: `code` (client-node's ApiException, a Kubernetes Status
 * object), `statusCode` (dockerode, client-node's Watch). Undefined for anything else.
 */
export function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
  if (typeof code === "number") return code;
  if (typeof statusCode === "number") return statusCode;
  return undefined;
}

/** The system error code (ECONNREFUSED, ETIMEDOUT, ...) of an error or of one of its causes. */
export function errnoOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E(?!RR_)[A-Z_]+$/.test(code)) return code;
  }
  return undefined;
}

/** The Kubernetes Status `reason` of an API error (AlreadyExists, Conflict, Invalid, ...), when its body has one. */
export function statusReasonOf(err: unknown): string | undefined {
  const reason = kubernetesStatusOf(err)?.reason;
  return typeof reason === "string" && reason !== "" ? reason : undefined;
}

interface KubernetesStatus {
  kind?: unknown;
  code?: number;
  reason?: string;
  message?: unknown;
}

/** The metav1.Status in an API error's body (client-node keeps it as JSON text). */
function kubernetesStatusOf(err: unknown): KubernetesStatus | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const body = (err as { body?: unknown }).body;
  let status: unknown = body;
  if (typeof body === "string") {
    if (!body.startsWith("{")) return undefined;
    try {
      status = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof status !== "object" || status === null || (status as KubernetesStatus).kind !== "Status") return undefined;
  return status as KubernetesStatus;
}

// The request itself is refused as it is; sending it again gives the same answer.
const TERMINAL_STATUS = new Set([400, 405, 413, 414, 415, 422]);

/**
 * How to handle an error. gavel's typed errors say so themselves; HTTP statuses and network
 * errors are mapped; anything else (a bug, an unknown failure) is transient, as in
 * controller-runtime: retried with backoff, never dropped. That includes 401 and 403: a token
 * is rotated and RBAC is fixed while the controller runs, and neither is the object's fault.
 */
export function classify(err: unknown): ErrorKind {
  if (err instanceof GavelError) return err.kind;
  const status = httpStatusOf(err);
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status !== undefined && TERMINAL_STATUS.has(status)) return "terminal";
  return "transient";
}

/** Whether the error means the object does not exist. */
export function isNotFound(err: unknown): boolean {
  return classify(err) === "not_found";
}

/** Whether the error is a lost write race or an object that exists already. */
export function isConflict(err: unknown): boolean {
  return classify(err) === "conflict";
}

/** Whether the error is a network failure (no HTTP answer at all): the server is unreachable. */
export function isNetworkError(err: unknown): boolean {
  return errnoOf(err) !== undefined && httpStatusOf(err) === undefined;
}

/** `promise.catch(ignoreNotFound)`: a missing object is not an error (controller-runtime's client.IgnoreNotFound). */
export function ignoreNotFound(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}

/** Creates an object; an existing one of that name is adopted (deterministic names make it ours): false then. */
export async function createOrAdopt(create: () => Promise<unknown>): Promise<boolean> {
  try {
    await create();
    return true;
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}

/** The error as one of gavel's typed errors (itself when it is one), with the original as `cause`. */
export function typedError(err: unknown, context?: string): GavelError {
  if (err instanceof GavelError) return err;
  const message = context === undefined ? messageOf(err) : `${context}: ${messageOf(err)}`;
  switch (classify(err)) {
    case "not_found":
      return new NotFoundError(message, { cause: err });
    case "conflict":
      return new ConflictError(message, { cause: err });
    case "terminal":
      return new TerminalError(statusReasonOf(err) ?? "Invalid", message, { cause: err });
    default:
      return new TransientError(message, { cause: err });
  }
}

import { ApiException } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  ConflictError,
  NotFoundError,
  TerminalError,
  TransientError,
  classify,
  errnoOf,
  httpStatusOf,
  ignoreNotFound,
  isNetworkError,
  messageOf,
  statusReasonOf,
  typedError,
} from "./errors.js";

const status = (code: number, reason: string, message: string) =>
  new ApiException(
    code,
    "Unknown API Status Code!",
    JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message }),
    { "content-type": "application/json" },
  );

const systemError = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code, errno: -110, type: "system" });

describe("classify", () => {
  it("maps Kubernetes API statuses", () => {
    expect(classify(status(404, "NotFound", 'executions "x" not found'))).toBe("not_found");
    expect(classify(status(409, "AlreadyExists", "exists"))).toBe("conflict");
    expect(classify(status(409, "Conflict", "the object has been modified"))).toBe("conflict");
    expect(classify(status(422, "Invalid", "spec.x: Invalid value"))).toBe("terminal");
    expect(classify(status(400, "BadRequest", "bad"))).toBe("terminal");
    for (const code of [401, 403, 410, 429, 500, 503, 504]) expect(classify(status(code, "X", "y")), String(code)).toBe("transient");
  });

  it("maps dockerode's and the watch's statusCode", () => {
    expect(classify(Object.assign(new Error("no such container"), { statusCode: 404 }))).toBe("not_found");
    expect(classify(Object.assign(new Error("Gone"), { statusCode: 410 }))).toBe("transient");
  });

  it("network errors and unknown failures are transient, typed errors say their kind", () => {
    expect(classify(systemError("ETIMEDOUT"))).toBe("transient");
    expect(classify(new TypeError("x is undefined"))).toBe("transient");
    expect(classify("a string")).toBe("transient");
    expect(classify(new TerminalError("InvalidSpec", "no"))).toBe("terminal");
    expect(classify(new NotFoundError("gone"))).toBe("not_found");
    expect(classify(new ConflictError("raced"))).toBe("conflict");
    expect(classify(new TransientError("later", { cause: status(404, "NotFound", "x") }))).toBe("transient");
  });
});

describe("reading errors", () => {
  it("httpStatusOf, statusReasonOf, errnoOf (through causes)", () => {
    expect(httpStatusOf(status(409, "Conflict", "m"))).toBe(409);
    expect(httpStatusOf({ kind: "Status", code: 410 })).toBe(410);
    expect(httpStatusOf(new Error("x"))).toBeUndefined();
    expect(statusReasonOf(status(409, "AlreadyExists", "m"))).toBe("AlreadyExists");
    expect(statusReasonOf(new ApiException(401, "Unauthorized", undefined, {}))).toBeUndefined();
    expect(errnoOf(new TypeError("fetch failed", { cause: systemError("ECONNREFUSED") }))).toBe("ECONNREFUSED");
    expect(errnoOf(Object.assign(new Error("x"), { code: "ERR_INVALID_ARG_TYPE" }))).toBeUndefined();
    expect(isNetworkError(systemError("ECONNRESET"))).toBe(true);
    expect(isNetworkError(status(503, "ServiceUnavailable", "m"))).toBe(false);
  });

  it("messageOf gives the server's message for an API error, without headers", () => {
    const m = messageOf(status(404, "NotFound", 'executions.100monkeys.ai "run-1" not found'));
    expect(m).toBe('HTTP 404 NotFound: executions.100monkeys.ai "run-1" not found');
    expect(messageOf(new Error("plain"))).toBe("plain");
    expect(messageOf(42)).toBe("42");
    expect(messageOf(new ApiException(401, "Unauthorized", undefined, { "www-authenticate": "x" }))).toContain("HTTP-Code: 401");
  });

  it("ignoreNotFound swallows 404 only", async () => {
    await expect(Promise.reject(status(404, "NotFound", "x")).catch(ignoreNotFound)).resolves.toBeUndefined();
    await expect(Promise.reject(status(500, "InternalError", "x")).catch(ignoreNotFound)).rejects.toThrow(/InternalError|HTTP-Code/);
  });

  it("typedError wraps with cause and keeps typed errors", () => {
    const raw = status(422, "Invalid", "spec.containers[0].name: Invalid value");
    const t = typedError(raw, "creating pod p");
    expect(t).toBeInstanceOf(TerminalError);
    expect((t as TerminalError).reason).toBe("Invalid");
    expect(t.message).toBe("creating pod p: HTTP 422 Invalid: spec.containers[0].name: Invalid value");
    expect(t.cause).toBe(raw);
    expect(typedError(systemError("ETIMEDOUT"))).toBeInstanceOf(TransientError);
    const own = new ConflictError("x");
    expect(typedError(own)).toBe(own);
  });
});

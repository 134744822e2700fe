// The tool-call codec: valid messages round-trip, invalid ones are refused with the field named.
import { describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import {
  decodeProposal,
  decodeReply,
  encodeDecision,
  encodeErrorReply,
  encodeProposal,
  MAX_ARGS_DEPTH,
  proposalFingerprint,
  ProtocolError,
} from "./codec.js";

const proposal: ToolCallProposal = {
  namespace: "team",
  execution: "run-a",
  iteration: 1,
  step: 1,
  toolCallId: "call_1",
  tool: "fs.read",
  args: { path: "/workspace/a.txt" },
  intent: "read the file",
};

const decision: ToolCallDecision = {
  toolCallId: "call_1",
  allowed: false,
  blocked_by: "judge",
  reason: "judge said no",
  guard: { approved: true },
  skippedJudges: false,
  judges: [{ judge: "security-judge", child: "run-a-tj-1", passed: false, result: { score: 0.2, confidence: 0.9, reasoning: "unsafe" } }],
  latencyMs: 12.5,
};

describe("proposal codec", () => {
  it("round-trips a valid proposal", () => {
    const d = decodeProposal(encodeProposal(proposal));
    expect(d).toEqual({ ok: true, value: proposal });
    const hashed = { ...proposal, toolHash: "0123456789abcdef".repeat(4) };
    expect(decodeProposal(encodeProposal(hashed))).toEqual({ ok: true, value: hashed });
  });

  it.each([
    [{ ...proposal, toolCallId: undefined }, "/toolCallId"],
    [{ ...proposal, toolCallId: "has.dot" }, "/toolCallId"],
    [{ ...proposal, args: "rm -rf /" }, "/args"],
    [{ ...proposal, args: [1] }, "/args"],
    [{ ...proposal, step: 0 }, "/step"],
    [{ ...proposal, iteration: 1.5 }, "/iteration"],
    [{ ...proposal, execution: "Bad_Name" }, "/execution"],
    [{ ...proposal, tool: "" }, "/tool"],
    [{ ...proposal, approved: true }, "/approved"],
    [{ ...proposal, toolHash: "ABC" }, "/toolHash"],
    [{ ...proposal, toolHash: "A".repeat(64) }, "/toolHash"],
  ])("refuses %j naming %s", (bad, field) => {
    const d = decodeProposal(JSON.stringify(bad));
    expect(d.ok).toBe(false);
    if (!d.ok) {
      expect(d.error).toBeInstanceOf(ProtocolError);
      expect(d.error.field).toBe(field);
      expect(d.error.message).toContain(field);
    }
  });

  it("refuses bytes that are not JSON", () => {
    const d = decodeProposal(new TextEncoder().encode("{not json"));
    expect(d.ok).toBe(false);
    if (!d.ok) expect(d.error.message).toMatch(/not JSON/);
  });

  it("refuses args nested deeper than MAX_ARGS_DEPTH (a few KB that would overflow the gate's stack), accepts the limit itself", () => {
    const nested = (levels: number): unknown => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`) as unknown;
    const deep = decodeProposal(
      `{"namespace":"team","execution":"run-a","iteration":1,"step":1,"toolCallId":"c1","tool":"fs.list","args":{"a":${"[".repeat(20_000)}${"]".repeat(20_000)}}}`,
    );
    expect(deep).toMatchObject({
      ok: false,
      error: { field: "/args", message: `proposal: field /args nests objects and arrays deeper than ${MAX_ARGS_DEPTH} levels` },
    });
    expect(decodeProposal(JSON.stringify({ ...proposal, args: { a: nested(MAX_ARGS_DEPTH - 1) } })).ok).toBe(true);
    expect(decodeProposal(JSON.stringify({ ...proposal, args: { a: nested(MAX_ARGS_DEPTH) } })).ok).toBe(false);
    expect(() => encodeProposal({ ...proposal, args: { a: nested(MAX_ARGS_DEPTH) } as ToolCallProposal["args"] })).toThrow(/\/args nests/);
  });

  it("throws on encoding an invalid proposal", () => {
    expect(() => encodeProposal({ ...proposal, step: -1 })).toThrow(/\/step/);
  });

  it("fingerprints ignore key order, intent and the tool hash but not args", () => {
    const reordered = { ...proposal, args: { path: "/workspace/a.txt" }, intent: "other words", toolHash: "f".repeat(64) };
    expect(proposalFingerprint(reordered)).toBe(proposalFingerprint(proposal));
    expect(proposalFingerprint({ ...proposal, args: { path: "/etc/passwd" } })).not.toBe(proposalFingerprint(proposal));
    const a = { ...proposal, args: { x: 1, y: { b: 2, a: 1 } } };
    const b = { ...proposal, args: { y: { a: 1, b: 2 }, x: 1 } };
    expect(proposalFingerprint(a)).toBe(proposalFingerprint(b));
  });

  it("fingerprints are stable across gavel versions (stored records are compared with new proposals)", () => {
    // Computed by the first implementation (Object.entries, sort, join); a re-send after an
    // upgrade must still match the record its first send left in GAVEL_DECISIONS.
    const p = {
      ...proposal,
      namespace: "ns",
      execution: "ex",
      iteration: 2,
      step: 3,
      tool: "fs.write",
      args: { path: "/w/a", z: [1, "x", { b: null, a: true, "10": 1.5, "2": "é\u2028" }], "": {}, e: [] },
    };
    expect(proposalFingerprint(p)).toBe("691a331c832b67484b7bd1468e1768354a01ff560cf6625717955c4fb6dcd51c");
  });
});

describe("reply codec", () => {
  it("round-trips a decision", () => {
    expect(decodeReply(encodeDecision(decision))).toEqual({ ok: true, value: { kind: "decision", decision } });
  });

  it("decodes an error reply", () => {
    const text = encodeErrorReply({ toolCallId: "x", error: { code: "invalid_proposal", field: "/args", message: "bad" } });
    const d = decodeReply(text);
    expect(d.ok && d.value.kind === "error" && d.value.reply.error.field).toBe("/args");
  });

  it("refuses an allowed decision that names a blocker, and a blocked one that names none", () => {
    expect(() => encodeDecision({ ...decision, allowed: true, blocked_by: "judge" })).toThrow(/blocked_by/);
    expect(() => encodeDecision({ ...decision, allowed: false, blocked_by: "none" })).toThrow(/blocked_by/);
  });

  it("refuses a decision with a judge verdict out of range", () => {
    const bad = { ...decision, judges: [{ judge: "j", child: "c", passed: true, result: { score: 2, confidence: 1, reasoning: "" } }] };
    const d = decodeReply(JSON.stringify(bad));
    expect(d.ok).toBe(false);
    if (!d.ok) expect(d.error.field).toBe("/judges/0/result/score");
  });

  it("refuses a decision missing a field", () => {
    const { latencyMs: _omit, ...rest } = decision;
    const d = decodeReply(JSON.stringify(rest));
    expect(!d.ok && d.error.field).toBe("/latencyMs");
  });
});

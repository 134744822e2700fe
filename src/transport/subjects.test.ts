import { describe, expect, it } from "vitest";
import {
  eventFilter,
  eventSubject,
  inboxPrefix,
  parseToolCallSubject,
  replyPrefixOf,
  token,
  toolCallSubject,
  untoken,
} from "./subjects.js";

describe("subjects", () => {
  it("encodes dotted Kubernetes names into one token and back", () => {
    expect(token("a.b-c")).toBe("a_b-c");
    expect(untoken(token("judge.v1.x"))).toBe("judge.v1.x");
  });
  it("refuses names that could inject wildcards or separators", () => {
    for (const bad of ["*", ">", "a b", "A", "", "x.>", "-a"]) expect(() => token(bad)).toThrow();
  });
  it("round-trips a proposal subject", () => {
    const s = toolCallSubject("team-a", "run.7");
    expect(s).toBe("gavel.toolcall.team-a.run_7");
    expect(parseToolCallSubject(s)).toEqual({ namespace: "team-a", execution: "run.7" });
    expect(parseToolCallSubject("gavel.toolcall.x")).toBeUndefined();
  });
  it("derives the one inbox a proposal may be answered in from its subject", () => {
    expect(replyPrefixOf(toolCallSubject("team-a", "run.7"))).toBe(`${inboxPrefix("team-a", "run.7")}.`);
    expect(replyPrefixOf(toolCallSubject("team-a", "run.7"))).toBe("_INBOX_gavel.team-a.run_7.");
  });
  it("builds event subjects under the tree filter", () => {
    const s = eventSubject("ns", "root", "root-judge-1", "judge.verdict");
    expect(s).toBe("gavel.events.ns.root.root-judge-1.judge.verdict");
    expect(eventFilter("ns", "root")).toBe("gavel.events.ns.root.>");
    expect(() => eventSubject("ns", "r", "e", "Bad Type")).toThrow();
  });
});

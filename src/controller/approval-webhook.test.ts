// The approval webhook's signature (ADR 0082): the Standard Webhooks secret format, and headers
// that the reference implementation (the standardwebhooks package) verifies; a changed body, an
// old timestamp or another secret does not verify.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signatureHeaders, webhookKey } from "./approval-webhook.js";

const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;

describe("approval webhook signatures", () => {
  it("reads a whsec_ secret as its base64 key and refuses other text, naming where it came from", () => {
    expect(webhookKey(`  ${SECRET}\n`, "f")).toEqual(Buffer.alloc(32, 7));
    expect(() => webhookKey("hunter2", "approval webhook secret /s")).toThrow(
      'approval webhook secret /s: an approval webhook secret is "whsec_" followed by base64 (Standard Webhooks)',
    );
    expect(() => webhookKey("whsec_not base64!", "f")).toThrow('is "whsec_" followed by base64');
    expect(() => webhookKey(`whsec_${Buffer.alloc(8).toString("base64")}`, "f")).toThrow(
      "f: the secret's key is 8 bytes, it must be 24 to 64",
    );
  });

  it("signs id.timestamp.body with HMAC-SHA256 as Standard Webhooks does: the reference verifier accepts it, and nothing changed", () => {
    const body = JSON.stringify({ type: "toolcall.approval.pending", approval: "a-1" });
    // An hour ago, to the second.
    const now = (Math.floor(Date.now() / 1000) - 3600) * 1000;
    const headers = signatureHeaders(webhookKey(SECRET, "f"), "uid-1", body, now);
    expect(headers).toMatchObject({ "webhook-id": "uid-1", "webhook-timestamp": String(now / 1000) });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const fresh = signatureHeaders(webhookKey(SECRET, "f"), "uid-1", body);
    const hook = new Webhook(SECRET);
    expect(hook.verify(body, fresh)).toEqual(JSON.parse(body));
    expect(() => hook.verify(body.replace("a-1", "a-2"), fresh)).toThrow("No matching signature found");
    expect(() => hook.verify(body, { ...fresh, "webhook-id": "uid-2" })).toThrow("No matching signature found");
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 8).toString("base64")}`).verify(body, fresh)).toThrow("No matching signature found");
    // Played again an hour later, a message signed then is refused for its age.
    expect(() => hook.verify(body, headers)).toThrow("Message timestamp too old");
  });
});

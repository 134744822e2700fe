// The key Secrets: the operator Secret round-trips, the credentials Secret holds exactly what
// the controller mounts, and reading the mounted keys names the file that is wrong.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createTrust, publicKeyOf, serverJwts } from "../transport/credentials.js";
import { credentialsSecret, operatorSecret, readMintingKeys, trustOf } from "./nats-secrets.js";

const dirs: string[] = [];
async function mounted(data: Record<string, string> | undefined): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-keys-"));
  dirs.push(dir);
  for (const [k, v] of Object.entries(data ?? {})) await writeFile(join(dir, k), Buffer.from(v, "base64"));
  return dir;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe("NATS key Secrets", () => {
  const trust = createTrust();

  it("reads back the trust and JWTs of an operator Secret, and names a missing key", () => {
    const jwts = serverJwts(trust);
    const s = operatorSecret("gavel-nats-operator", trust, jwts);
    expect(trustOf(s)).toEqual({ trust, jwts });
    const broken = { ...s, data: { ...s.data, "account-signing.nk": "" } };
    expect(() => trustOf(broken)).toThrow("Secret gavel-nats-operator: key account-signing.nk is missing");
  });

  it("gives the controller its user, the account signing key and the revocation keys, never an identity seed", async () => {
    const s = credentialsSecret("gavel-nats-credentials", trust);
    expect(Object.keys(s.data ?? {}).sort()).toEqual([
      "account-signing.nk",
      "account.pub",
      "nats.creds",
      "operator-signing.nk",
      "system.creds",
    ]);
    const text = Object.values(s.data ?? {})
      .map((v) => Buffer.from(v, "base64").toString())
      .join("\n");
    for (const identity of [trust.operatorSeed, trust.accountSeed, trust.systemAccountSeed]) expect(text).not.toContain(identity);
    const keys = await readMintingKeys(await mounted(s.data));
    expect(keys).toMatchObject({
      account: publicKeyOf(trust.accountSeed),
      accountSigningSeed: trust.accountSigningSeed,
      revocation: { operatorSigningSeed: trust.operatorSigningSeed },
    });
    // The .creds text is kept as it is: the NATS client's parser needs the line end after its last block.
    expect(keys?.revocation?.systemCreds).toBe(Buffer.from(s.data?.["system.creds"] ?? "", "base64").toString());
    expect(keys?.revocation?.systemCreds.endsWith("------END USER NKEY SEED------\n")).toBe(true);
  });

  it("reads a Secret with gavel's user only as no minting keys, without revocation keys as expiry only", async () => {
    const s = credentialsSecret("c", trust);
    const only = await mounted({ "nats.creds": s.data?.["nats.creds"] ?? "" });
    expect(await readMintingKeys(only)).toBeUndefined();
    const noRevocation = await mounted({
      "account-signing.nk": s.data?.["account-signing.nk"] ?? "",
      "account.pub": s.data?.["account.pub"] ?? "",
    });
    expect((await readMintingKeys(noRevocation))?.revocation).toBeUndefined();
  });

  it("names the file that is wrong", async () => {
    const s = credentialsSecret("c", trust);
    const noAccount = await mounted({ "account-signing.nk": s.data?.["account-signing.nk"] ?? "" });
    await expect(readMintingKeys(noAccount)).rejects.toThrow(/account\.pub: gavel's account public key \(A\.\.\.\) is missing/);
    const badSeed = await mounted({ "account-signing.nk": Buffer.from("nope").toString("base64") });
    await expect(readMintingKeys(badSeed)).rejects.toThrow(/account-signing\.nk is not a valid NATS nkey seed/);
    const badCreds = await mounted({ ...s.data, "system.creds": Buffer.from("nope").toString("base64") });
    await expect(readMintingKeys(badCreds)).rejects.toThrow(/system\.creds: not a NATS \.creds file/);
  });
});

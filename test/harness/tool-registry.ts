// What an operator does for guard check 2: hash this build's built-in tools with
// `gavel guard tool-hash` (the code the gavel/agent image carries), sign the registrations
// with a key of their own, and put them in a GuardPolicy with the public key as trusted.
import { createHash, generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import type { GuardPolicy } from "../../src/api/types.js";
import { signRegistration } from "../../src/gate/guard/signature.js";
import { runOk } from "./exec.js";
import { REPO_DIR } from "./paths.js";

/** The SHA-256 of each built-in tool of this build, as `gavel guard tool-hash` prints them. */
export async function builtinToolHashes(): Promise<Record<string, string>> {
  return JSON.parse(await runOk(join(REPO_DIR, "bin", "gavel"), ["guard", "tool-hash"])) as Record<string, string>;
}

/** A hash no build of the tool has: a registration "from another build". */
export function staleHash(tool: string): string {
  return createHash("sha256").update(`${tool} of another build`).digest("hex");
}

/** A GuardPolicy `name` registering each [tool, sha256], signed by a fresh trusted key. */
export function signedRegistry(name: string, entries: [string, string][]): GuardPolicy {
  const keys = generateKeyPairSync("ed25519");
  const signer = keys.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "GuardPolicy",
    metadata: { name },
    spec: {
      tool_registry: entries.map(([tool, sha256]) => ({ tool, sha256, signature: signRegistration(signer, tool, sha256) })),
      trusted_keys: [{ name: "ops", public_key: keys.publicKey.export({ type: "spki", format: "pem" }).toString() }],
    },
  } as GuardPolicy;
}

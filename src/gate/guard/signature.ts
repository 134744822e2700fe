// Ed25519 signatures of tool registrations (guardian check 6). The signed message binds the
// tool's name to its code hash, so a valid signature cannot be moved to another tool.
import type { KeyObject } from "node:crypto";
import { nodeCrypto } from "../../lazy-builtins.js";

// DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** The bytes a registration signature covers: `gavel-tool-v1\n<tool>\n<sha256 hex>`. */
export function registrationMessage(tool: string, sha256: string): Buffer {
  return Buffer.from(`gavel-tool-v1\n${tool}\n${sha256.toLowerCase()}`, "utf8");
}

/** Parses a trusted key: PEM, or base64 of the raw 32-byte Ed25519 public key. Throws on anything else. */
export function parsePublicKey(text: string): KeyObject {
  const { createPublicKey } = nodeCrypto();
  const trimmed = text.trim();
  const key = trimmed.startsWith("-----BEGIN")
    ? createPublicKey(trimmed)
    : (() => {
        const raw = Buffer.from(trimmed, "base64");
        if (raw.length !== 32) throw new Error(`a raw Ed25519 public key is 32 bytes, this one is ${raw.length}`);
        return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
      })();
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`key type is ${key.asymmetricKeyType ?? "unknown"}, not ed25519`);
  return key;
}

/** Signs a registration with a PEM Ed25519 private key; returns base64 (the tool_registry `signature`). */
export function signRegistration(privateKeyPem: string, tool: string, sha256: string): string {
  const { createPrivateKey, sign } = nodeCrypto();
  return sign(null, registrationMessage(tool, sha256), createPrivateKey(privateKeyPem)).toString("base64");
}

/** True when any of the keys verifies the base64 signature of the registration. */
export function verifyRegistration(keys: readonly KeyObject[], tool: string, sha256: string, signature: string | undefined): boolean {
  if (signature === undefined || signature === "") return false;
  const sig = Buffer.from(signature, "base64");
  if (sig.length !== 64) return false;
  const msg = registrationMessage(tool, sha256);
  const { verify } = nodeCrypto();
  return keys.some((k) => verify(null, msg, k, sig));
}

// Node's built-in modules that a short command seldom needs, loaded at their first use rather
// than with the modules that may use them: an ES import of node:crypto compiles its ~20
// internal modules at start, which `gavel guard check` paid for on every run although only a
// policy with trusted keys or signed registrations verifies anything (ADR 0043). require() of a
// built-in is synchronous and cached by Node, so each call after the first is a lookup.
import { createRequire } from "node:module";
import type * as Crypto from "node:crypto";

const require = createRequire(import.meta.url);

/** node:crypto (Ed25519 registration signatures, guard check 6). */
export const nodeCrypto = (): typeof Crypto => require("node:crypto") as typeof Crypto;

// The `metadata.version` a reference-style manifest declares. The API server drops that field, but
// client-side `kubectl apply` keeps the manifest as applied in an annotation, so it can be recovered.
import type { ObjectMeta } from "./types.js";
import { isMap } from "./schema-dsl.js";

/** Annotation in which client-side `kubectl apply` stores the manifest it applied. */
export const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** metadata.version as declared in the applied manifest, or undefined (not declared, or applied another way). */
export function declaredVersion(meta: Pick<ObjectMeta, "annotations">): string | undefined {
  const raw = meta.annotations?.[LAST_APPLIED];
  if (raw === undefined) return undefined;
  try {
    const applied: unknown = JSON.parse(raw);
    const version = isMap(applied) && isMap(applied.metadata) ? applied.metadata.version : undefined;
    return typeof version === "string" ? version : undefined;
  } catch {
    return undefined; // not ours to repair; the version is simply unknown
  }
}

// Bytes larger than one ConfigMap holds (1 MiB, etcd's object limit) kept in several: immutable
// ConfigMaps `<prefix>-<k>` of at most PART_BYTES each, in `binaryData.part`, described by
// their count, byte length and SHA-256. The judge payloads and the stored worker output of
// the Execution reconciler travel this way (ADR 0020, ADR 0033). Built without I/O.
import { createHash } from "node:crypto";
import type * as k8s from "@kubernetes/client-node";

/** Bytes per part: a ConfigMap holds at most 1 MiB of data, with room left for its metadata. */
export const PART_BYTES = 900 * 1024;

/** Key of a part's bytes in its ConfigMap's binaryData (the file name when mounted). */
export const PART_KEY = "part";

/** What a set of parts holds: how many, how many bytes in all, and their SHA-256 (hex). */
export interface PartsDescriptor {
  parts: number;
  bytes: number;
  sha256: string;
}

/** Name of part k (0-based) of `prefix`; zero-padded so the names sort in part order. */
export function partName(prefix: string, k: number): string {
  return `${prefix}-${String(k).padStart(2, "0")}`;
}

/** The descriptor of `bytes` cut into parts. */
export function describeParts(bytes: Buffer): PartsDescriptor {
  return {
    parts: Math.max(1, Math.ceil(bytes.length / PART_BYTES)),
    bytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
}

/** The immutable ConfigMaps holding `bytes` (at least one, even for no bytes), with the labels and owners given. */
export function partConfigMaps(
  prefix: string,
  bytes: Buffer,
  meta: { labels?: Record<string, string>; ownerReferences?: k8s.V1OwnerReference[] },
): k8s.V1ConfigMap[] {
  const { parts } = describeParts(bytes);
  return Array.from({ length: parts }, (_, k) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: partName(prefix, k),
      ...(meta.labels !== undefined ? { labels: meta.labels } : {}),
      ...(meta.ownerReferences !== undefined ? { ownerReferences: meta.ownerReferences } : {}),
    },
    immutable: true,
    binaryData: { [PART_KEY]: bytes.subarray(k * PART_BYTES, (k + 1) * PART_BYTES).toString("base64") },
  }));
}

/** The descriptor as an annotation value, and back; undefined when the text is not one. */
export function descriptorText(d: PartsDescriptor): string {
  return JSON.stringify(d);
}
export function parseDescriptor(text: string | undefined): PartsDescriptor | undefined {
  if (text === undefined) return undefined;
  try {
    const d = JSON.parse(text) as Partial<PartsDescriptor>;
    if (
      Number.isInteger(d.parts) &&
      (d.parts as number) >= 1 &&
      Number.isInteger(d.bytes) &&
      (d.bytes as number) >= 0 &&
      typeof d.sha256 === "string" &&
      /^[0-9a-f]{64}$/.test(d.sha256)
    ) {
      return { parts: d.parts as number, bytes: d.bytes as number, sha256: d.sha256 };
    }
  } catch {
    // not JSON: not a descriptor
  }
  return undefined;
}

/** The bytes of parts read back in order; throws when they do not match the descriptor (a missing or foreign part). */
export function joinParts(prefix: string, d: PartsDescriptor, configMaps: readonly k8s.V1ConfigMap[]): Buffer {
  const bytes = Buffer.concat(
    configMaps.map((cm, k) => {
      if (cm.metadata?.name !== partName(prefix, k)) throw new Error(`part ${k} of ${prefix} is ${cm.metadata?.name ?? "unnamed"}`);
      return Buffer.from(cm.binaryData?.[PART_KEY] ?? "", "base64");
    }),
  );
  const got = describeParts(bytes);
  if (configMaps.length !== d.parts || got.bytes !== d.bytes || got.sha256 !== d.sha256) {
    throw new Error(
      `the ${configMaps.length} parts of ${prefix} hold ${got.bytes} bytes (sha256 ${got.sha256.slice(0, 12)}); expected ${d.parts} parts, ${d.bytes} bytes (sha256 ${d.sha256.slice(0, 12)})`,
    );
  }
  return bytes;
}

/** A projected volume of the parts, each at `<partName>` (name order is part order), for a pod to read as one directory. */
export function partsVolume(volume: string, prefix: string, d: PartsDescriptor): k8s.V1Volume {
  return {
    name: volume,
    projected: {
      sources: Array.from({ length: d.parts }, (_, k) => ({
        configMap: { name: partName(prefix, k), items: [{ key: PART_KEY, path: partName("part", k) }] },
      })),
    },
  };
}

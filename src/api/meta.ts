// What every gavel resource shares: the API group and version, Kubernetes object metadata,
// conditions (schema and type, one declaration), and JSON values.
import { arr, int, obj, str, type Static } from "./schema-dsl.js";

export const GROUP = "100monkeys.ai";
export const VERSION = "v1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Label that marks an Agent as a judge (`metadata.labels.role: judge`). */
export const ROLE_LABEL = "role";
export const ROLE_JUDGE = "judge";

/** Kubernetes object metadata as gavel reads and writes it (the API server's own schema, not gavel's). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

const condition = obj(
  "One condition.",
  {
    type: str("Condition type, e.g. Ready."),
    status: str("True, False or Unknown.", { enum: ["True", "False", "Unknown"] }),
    reason: str("CamelCase reason, e.g. JudgeNotFound."),
    message: str("Human-readable detail: what is wrong and what to write instead."),
    lastTransitionTime: str("When status last changed.", { format: "date-time" }),
    observedGeneration: int("metadata.generation the condition was computed from.", { format: "int64" }),
  },
  { required: ["type", "status"], written: ["reason", "message", "lastTransitionTime"] },
);

/** `status.conditions` of every gavel resource. */
export const conditions = arr("Observations of the object's state (Kubernetes conditions, one per type).", condition, {
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
});

/** One Kubernetes condition (gavel always writes its reason, message and transition time). */
export type Condition = Static<typeof condition>;

export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

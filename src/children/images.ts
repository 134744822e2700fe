// The images gavel runs when a manifest or a flag names none: one place, so local mode, the
// controller and the chart agree. Released code runs the images of its own version
// (`make images` tags each image :dev and :<version>); tests name their :dev images.
import { gavelVersion } from "../version.js";

/** Default images of the workloads gavel starts. */
export interface DefaultImages {
  /** A worker whose Agent names no `spec.runtime.image`: the worker runtime. */
  worker: string;
  /** The one-shot reader of workspace files (needs `sh` and `cat`). */
  reader: string;
}

/**
 * The program of gavel's agent image and the runtime images built on it (their ENTRYPOINT),
 * so a pod can run it under gavel-launch (src/runtime/kubernetes/log-streams.ts).
 */
export const AGENT_ENTRYPOINT: readonly string[] = ["node", "/opt/gavel/dist/src/agent/main.js"];

/** The default images of this build: the worker runtime `gavel/agent:<version>`; the base image reads files. */
export function defaultImages(): DefaultImages {
  const agent = `gavel/agent:${gavelVersion()}`;
  return { worker: agent, reader: "gavel/base:bookworm-node20" };
}

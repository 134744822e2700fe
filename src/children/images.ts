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

/**
 * The programs (ENTRYPOINT) of the images gavel builds, by repository and whatever their tag:
 * an Agent naming one of them in `spec.runtime.image` runs it under gavel-launch without
 * declaring `spec.runtime.command` (images.test.ts holds them to the Dockerfiles).
 */
const GAVEL_IMAGE_ENTRYPOINTS: ReadonlyMap<string, readonly string[]> = new Map([
  ["gavel/agent", AGENT_ENTRYPOINT],
  ["gavel/rule-judge", ["node", "/app/dist/judges/rule-judge/main.js"]],
  ["gavel/command-judge", ["node", "/app/dist/judges/command-judge/main.js"]],
  ["gavel/llm-judge", ["node", "/app/dist/judges/llm-judge/main.js"]],
]);

/** The program of `image` when it is one gavel builds (any tag or digest), else undefined. */
export function knownEntrypoint(image: string): readonly string[] | undefined {
  const repository = image
    .trim()
    .replace(/@sha256:[0-9a-f]+$/, "")
    .replace(/:[^/:]+$/, "");
  return GAVEL_IMAGE_ENTRYPOINTS.get(repository);
}

/** The default images of this build: the worker runtime `gavel/agent:<version>`; the base image reads files. */
export function defaultImages(): DefaultImages {
  const agent = `gavel/agent:${gavelVersion()}`;
  return { worker: agent, reader: "gavel/base:bookworm-node20" };
}

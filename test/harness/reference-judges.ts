// The reference's judge manifests (test/fixtures/reference/av-08, av-09: runtime.language
// python, version "3.11", no image) as both drivers run them, and what the tests around them
// share: a worker whose output they judge, and the runtime table entry an operator would add.
// The language runtime is gavel's image (gavel/runtime-python-3.11); only the model behind the
// judge's agent runtime is scripted (GAVEL_MODEL=scripted), as no LLM is reachable here.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { Agent } from "../../src/api/types.js";
import type { RuntimeEntry } from "../../src/children/runtime-table.js";
import { REPO_DIR } from "./paths.js";

/** The reference judge manifests, verbatim. */
export const REFERENCE_JUDGES = ["av-08-code-quality-judge.yaml", "av-09-manifest-quality-judge.yaml"];

/** The verdict the scripted model answers with (score and confidence the tests look for). */
export const SCRIPTED_VERDICT = { score: 0.87, confidence: 0.93, reasoning: "idiomatic and correct", verdict: "pass" };

/** The operator's runtime entry for the tests: the shipped Python 3.11 image with a scripted model. */
export function scriptedPythonRuntime(tag: string): RuntimeEntry {
  return {
    language: "python",
    version: "3.11",
    image: `gavel/runtime-python-3.11:${tag}`,
    env: { GAVEL_MODEL: "scripted", GAVEL_SCRIPT: `- final: '${JSON.stringify(SCRIPTED_VERDICT)}'` },
  };
}

/** The text of one reference fixture and its Agent document. */
export async function referenceJudge(file: string): Promise<{ text: string; agent: Agent }> {
  const text = await readFile(join(REPO_DIR, "test", "fixtures", "reference", file), "utf8");
  const agent = parseAllDocuments(text)
    .map((d) => d.toJS() as Agent)
    .find((d) => d.kind === "Agent");
  if (agent === undefined) throw new Error(`${file} holds no Agent`);
  return { text, agent };
}

/** The worker's output both judges evaluate: a small Python function. */
export const WORKER_OUTPUT = "def add(a, b):\n    return a + b\n";

/** Semantic validators naming both reference judges, as YAML lines under `validation:` (6 spaces). */
export const REFERENCE_VALIDATION = `      - type: semantic
        judge_agent: code-quality-judge
        criteria: Is the Python code correct and idiomatic?
        min_score: 0.75
        min_confidence: 0.70
      - type: semantic
        judge_agent: manifest-quality-judge
        criteria: Does the output fulfil the objective?
        min_score: 0.75
`;

/** What the garbage judge's scripted model answers: no verdict anywhere. */
export const GARBAGE = "I think it is fine <<<not json>>>";

/** A Node 20 runtime entry whose model answers garbage (the judge's output is malformed). */
export function garbageNodeRuntime(tag: string): RuntimeEntry {
  return {
    language: "node",
    version: "20",
    image: `gavel/runtime-node-20:${tag}`,
    env: { GAVEL_MODEL: "scripted", GAVEL_SCRIPT: `- final: '${GARBAGE}'` },
  };
}

/** A judge Agent on the Node 20 runtime (no image), YAML. */
export const GARBAGE_JUDGE = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: garbage-judge
  labels:
    role: judge
spec:
  runtime:
    language: node
    version: "20"
  task:
    instruction: Judge the output.
  security:
    network:
      mode: none
  execution:
    mode: one-shot
`;

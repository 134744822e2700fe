// Every CustomResourceDefinition gavel installs. Each resource is declared once, in its own file
// (agent-crd.ts, execution-crd.ts, guard-policy-crd.ts, tool-approval-crd.ts), as the schema its TypeScript types are
// read from; `render-crds.ts` writes crds/*.yaml from this list (`make verify` fails on drift)
// and `validate.ts` checks manifests with it.
import { agentCrd } from "./agent-crd.js";
import type { CrdDocument } from "./crd-document.js";
import { executionCrd } from "./execution-crd.js";
import { guardPolicyCrd } from "./guard-policy-crd.js";
import { toolApprovalCrd } from "./tool-approval-crd.js";

export type { CrdDocument } from "./crd-document.js";
export { agentCrd, executionCrd, guardPolicyCrd, toolApprovalCrd };

/** Every CRD gavel installs, with the file it is rendered to under crds/. */
export const crds: { file: string; crd: CrdDocument }[] = [
  { file: "agents.100monkeys.ai.yaml", crd: agentCrd },
  { file: "executions.100monkeys.ai.yaml", crd: executionCrd },
  { file: "guardpolicies.100monkeys.ai.yaml", crd: guardPolicyCrd },
  { file: "toolapprovals.100monkeys.ai.yaml", crd: toolApprovalCrd },
];

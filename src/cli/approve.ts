// `gavel approve|deny NAME [--reason TEXT] [--for-execution]`: a person's decision on a
// ToolApproval (ADR 0067); --for-execution makes it stand for the identical calls of that run.
// The decision goes into the approval's status subresource as the authenticated user the API
// server names (SelfSubjectReview), with the digest of the call shown; the API server's
// admission policy refuses it unless that user holds the `approve` verb on toolapprovals, the
// digest is the call's and nothing was decided before. Refused here first, with the reason:
// an approval already decided, expired, or whose Execution is gone.
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Execution, type ToolApproval } from "../api/types.js";
import { isNotFound, messageOf } from "../errors.js";
import { connectKube, KUBE_FLAGS, type Kube } from "../views/kube.js";
import { UsageError, type Command, type CommandIO } from "./command.js";
import { parseFlags } from "./flags.js";

const PLURAL = "toolapprovals";

/** Why a decision on this approval is refused before it is sent, or undefined when it may be decided. */
export function refusal(a: ToolApproval, execution: Execution | undefined, now: Date): string | undefined {
  const d = a.status?.decision;
  if (d !== undefined) return `toolapproval ${a.metadata.name} is already decided: ${d.approved ? "approved" : "denied"} by ${d.decidedBy}`;
  if (a.status?.phase === "Withdrawn") return `toolapproval ${a.metadata.name} was withdrawn: ${a.status.message ?? "its run ended"}`;
  if (a.status?.phase === "TimedOut" || now.getTime() >= Date.parse(a.spec.deadline))
    return `toolapproval ${a.metadata.name} expired at ${a.spec.deadline} (onTimeout: ${a.spec.onTimeout})`;
  if (execution === undefined || (a.spec.executionUID !== undefined && execution.metadata.uid !== a.spec.executionUID))
    return `toolapproval ${a.metadata.name}: its Execution ${a.spec.execution} is gone`;
  return undefined;
}

async function read<T>(kube: Kube, plural: string, name: string): Promise<T | undefined> {
  try {
    return (await kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: kube.namespace, plural, name })) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The authenticated user the API server sees for this kubeconfig (impersonation included). */
async function whoAmI(kc: k8s.KubeConfig): Promise<string> {
  const review = await kc
    .makeApiClient(k8s.AuthenticationV1Api)
    .createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
  const user = review.status?.userInfo?.username;
  if (user === undefined || user === "") throw new Error("the API server did not say who this kubeconfig's user is (SelfSubjectReview)");
  return user;
}

async function decide(approved: boolean, argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags({
    args: argv,
    allowPositionals: true,
    options: { ...KUBE_FLAGS, reason: { type: "string" }, "for-execution": { type: "boolean", default: false } },
  });
  const forExecution = parsed.values["for-execution"];
  const [name, ...extra] = parsed.positionals;
  if (name === undefined) throw new UsageError("name the ToolApproval (gavel get toolapprovals, or kubectl get ta)");
  if (extra.length > 0) throw new UsageError(`one ToolApproval at a time (got ${parsed.positionals.join(", ")})`);
  const kube = connectKube(parsed.values, io);
  const approval = await read<ToolApproval>(kube, PLURAL, name);
  if (approval === undefined) throw new Error(`toolapproval "${name}" not found in namespace "${kube.namespace}"`);
  const refused = refusal(approval, await read<Execution>(kube, "executions", approval.spec.execution), new Date());
  if (refused !== undefined) throw new Error(refused);
  const decidedBy = await whoAmI(kube.kc);
  const reason = parsed.values.reason;
  const patch = {
    // The resourceVersion read: a decision or a timeout written meanwhile makes this a conflict, not a second decision.
    metadata: { resourceVersion: approval.metadata.resourceVersion },
    status: {
      decision: {
        approved,
        decidedBy,
        digest: approval.spec.digest,
        decidedAt: new Date().toISOString(),
        ...(reason !== undefined && reason !== "" ? { reason } : {}),
        // Stands for the identical calls of this run that follow (same spec.repeatDigest): the gate answers them without asking.
        ...(forExecution ? { forExecution: true } : {}),
      },
    },
  };
  try {
    await kube.custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace: kube.namespace, plural: PLURAL, name, body: patch },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  } catch (err) {
    throw new Error(`the API server refused the decision on toolapproval ${name}: ${messageOf(err)}`, { cause: err });
  }
  io.stdout.write(
    `toolapproval/${name} ${approved ? "approved" : "denied"} by ${decidedBy}: ${approval.spec.tool} (step ${approval.spec.step} of ${approval.spec.execution}, ${approval.spec.digest})${forExecution ? `; also for the identical calls of ${approval.spec.execution} that follow` : ""}\n`,
  );
  return 0;
}

export const approveCommand: Command = {
  name: "approve",
  summary: "approve a tool call waiting for a person (a ToolApproval), as the authenticated Kubernetes user",
  usage: "gavel approve TOOLAPPROVAL [--reason TEXT] [--for-execution] [-n NS] [--kubeconfig FILE] [--context NAME]",
  run: (argv, io) => decide(true, argv, io),
};

export const denyCommand: Command = {
  name: "deny",
  summary: "deny a tool call waiting for a person (a ToolApproval); the worker is told who denied it and why",
  usage: "gavel deny TOOLAPPROVAL [--reason TEXT] [--for-execution] [-n NS] [--kubeconfig FILE] [--context NAME]",
  run: (argv, io) => decide(false, argv, io),
};

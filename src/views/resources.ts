// The gavel kinds as the API serves them (the CRDs' plural, singular and short names, which
// kubectl accepts too): what the CLI and the web view list and read.

export type ResourceKind = "Execution" | "Agent" | "GuardPolicy" | "ToolApproval";

export interface Resource {
  kind: ResourceKind;
  plural: string;
  names: string[];
}

// Names are the CRDs' (crds.ts: plural, singular, shortNames); a unit test checks they agree.
export const EXECUTIONS: Resource = { kind: "Execution", plural: "executions", names: ["executions", "execution", "ex"] };
export const AGENTS: Resource = { kind: "Agent", plural: "agents", names: ["agents", "agent", "ag"] };
export const GUARD_POLICIES: Resource = { kind: "GuardPolicy", plural: "guardpolicies", names: ["guardpolicies", "guardpolicy", "gp"] };
export const TOOL_APPROVALS: Resource = {
  kind: "ToolApproval",
  plural: "toolapprovals",
  names: ["toolapprovals", "toolapproval", "ta", "approvals"],
};

/** The gavel kinds. */
export const RESOURCES: Resource[] = [EXECUTIONS, AGENTS, GUARD_POLICIES, TOOL_APPROVALS];

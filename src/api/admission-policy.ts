// The ValidatingAdmissionPolicy that holds the CEL rules the Agent CRD cannot (rules on fields
// without a structural type, marked [ADMISSION] in the schema; docs/adr/0003-crd-schemas.md).
import { ADMISSION, type CelRule, type SchemaNode } from "./schema-dsl.js";
import { GROUP, VERSION } from "./meta.js";
import { rootSchema } from "./crd-document.js";
import { agentCrd } from "./agent-crd.js";

/** A ValidatingAdmissionPolicy or its binding, as rendered under crds/policies/. */
export type PolicyDocument = Record<string, unknown>;

/** Every [ADMISSION] rule of a schema, with the steps from the object root ("[]" = each item). */
export function admissionRules(node: SchemaNode, steps: string[] = []): { steps: string[]; rule: CelRule }[] {
  const here = (node[ADMISSION] ?? []).map((rule) => ({ steps, rule }));
  const below = [
    ...Object.entries(node.properties ?? {}).flatMap(([k, child]) => admissionRules(child, [...steps, k])),
    ...(node.items === undefined ? [] : admissionRules(node.items, [...steps, "[]"])),
  ];
  return [...here, ...below];
}

/** The CEL expression of a rule on `object`: vacuously true where the field is absent. */
export function admissionExpression(steps: string[], rule: string): string {
  const walk = (ctx: string, rest: string[], depth: number): string => {
    const [step, ...tail] = rest;
    if (step === undefined) return `(${rule.replace(/\bself\b/g, ctx)})`;
    if (step === "[]") return `${ctx}.all(x${depth}, ${walk(`x${depth}`, tail, depth + 1)})`;
    return `!has(${ctx}.${step}) || ${walk(`${ctx}.${step}`, tail, depth)}`;
  };
  return walk("object", steps, 0);
}

/** The field path a rule's message starts with, e.g. spec.tools[*]. */
function stepsPath(steps: string[]): string {
  return steps.map((s, i) => (s === "[]" ? "[*]" : i === 0 ? s : `.${s}`)).join("");
}

/** The ValidatingAdmissionPolicy (and binding) enforcing the rules the Agent CRD cannot hold. */
export function agentAdmissionPolicy(): PolicyDocument[] {
  const name = `agents.${GROUP}`;
  const rules = admissionRules(rootSchema(agentCrd));
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [{ apiGroups: [GROUP], apiVersions: [VERSION], operations: ["CREATE", "UPDATE"], resources: ["agents"] }],
        },
        validations: rules.map(({ steps, rule }) => ({
          expression: admissionExpression(steps, rule.rule),
          message: `${stepsPath(steps)}: ${rule.message}`,
          reason: "Invalid",
        })),
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name },
      spec: { policyName: name, validationActions: ["Deny"] },
    },
  ];
}

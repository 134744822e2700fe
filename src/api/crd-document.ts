// The CustomResourceDefinition wrapper every gavel resource is declared in: names, printer
// columns and the openAPIV3Schema around its spec and status.
import { GROUP, VERSION } from "./meta.js";
import { str, type SchemaNode } from "./schema-dsl.js";

/** A CustomResourceDefinition as gavel writes them (one served and stored version). */
export interface CrdDocument {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    scope: "Namespaced";
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    versions: {
      name: string;
      served: true;
      storage: true;
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: SchemaNode };
    }[];
  };
}

/** One `kubectl get` column. */
export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** The CRD of a namespaced kind with a status subresource, in the category gavel. */
export function crd(
  kind: string,
  plural: string,
  shortNames: string[],
  o: { columns: PrinterColumn[]; spec: SchemaNode; status: SchemaNode; required: string[] },
): CrdDocument {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames, categories: ["gavel"] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: o.columns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: `gavel ${kind} (${GROUP}/${VERSION}); see docs/api.md.`,
              required: o.required,
              properties: {
                apiVersion: str("APIVersion: 100monkeys.ai/v1."),
                kind: str(`Kind: ${kind}.`),
                metadata: { type: "object" },
                spec: o.spec,
                status: o.status,
              },
            },
          },
        },
      ],
    },
  };
}

/** The root schema of a CRD (its one version's openAPIV3Schema). */
export function rootSchema(doc: CrdDocument): SchemaNode {
  const v = doc.spec.versions[0];
  if (v === undefined) throw new Error(`${doc.metadata.name} has no version`);
  return v.schema.openAPIV3Schema;
}

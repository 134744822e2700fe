// crds/*.yaml must be exactly what src/api/crds.ts renders (make verify checks the same from dist/).
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { crds } from "./crds.js";
import { driftedCrds, renderCrd } from "./render-crds.js";

describe("rendered CRDs", () => {
  it("crds/ has not drifted from src/api/crds.ts", async () => {
    expect(await driftedCrds(join(import.meta.dirname, "..", "..", "crds"))).toEqual([]);
  });

  it("renders the CEL rules without their TypeScript twins", () => {
    for (const { crd } of crds) {
      const text = renderCrd(crd);
      expect(parse(text)).toEqual(JSON.parse(JSON.stringify(crd)));
      expect(text).not.toMatch(/Symbol|\[object/);
    }
    expect(renderCrd(crds[0]!.crd)).toContain("x-kubernetes-validations");
  });
});

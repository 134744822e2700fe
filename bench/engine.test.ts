// The engine bench's loop really runs the outer loop: every simulated Execution refines
// nine times and succeeds on its tenth iteration.
import { describe, expect, it } from "vitest";
import { engineIterations } from "./engine.js";

describe("engine bench loop", () => {
  it("counts whole Executions of ten iterations, each ending Succeeded", async () => {
    expect(await engineIterations(30)).toBe(30);
    expect(await engineIterations(31)).toBe(40);
  });
});

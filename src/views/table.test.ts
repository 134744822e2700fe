import { describe, expect, it } from "vitest";
import { humanDuration, renderTable } from "./table.js";

describe("kubectl-style tables and ages", () => {
  it("prints ages in kubectl's units", () => {
    const s = 1000;
    const cases: [number, string][] = [
      [0, "0s"],
      [59 * s, "59s"],
      [119 * s, "119s"],
      [200 * s, "3m20s"],
      [600 * s, "10m"],
      [179 * 60 * s, "179m"],
      [3 * 3600 * s, "3h"],
      [(3 * 60 + 5) * 60 * s, "3h5m"],
      [20 * 3600 * s, "20h"],
      [(3 * 24 + 4) * 3600 * s, "3d4h"],
      [30 * 24 * 3600 * s, "30d"],
      [(3 * 365 + 2) * 24 * 3600 * s, "3y2d"],
    ];
    for (const [ms, want] of cases) expect(humanDuration(ms)).toBe(want);
  });
  it("pads each column to its widest cell plus three spaces", () => {
    expect(
      renderTable(
        ["NAME", "PHASE"],
        [
          ["a-long-name", "Running"],
          ["b", "Succeeded"],
        ],
      ),
    ).toBe("NAME          PHASE\na-long-name   Running\nb             Succeeded\n");
  });
});

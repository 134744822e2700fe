// Setup file of the projects whose files take a slot (test/harness/file-slots.ts): the test
// file waits here for its turn, before it loads, and gives the slot back after its last
// afterAll (hooks run in reverse order: this one, registered first, runs last). An exclusive
// e2e file's slot is its lane: the test harness reads it as GAVEL_E2E_LANE (test/harness/cluster.ts).
import { afterAll } from "vitest";
import { slotsOfThisFile, takeSlot } from "./file-slots.js";

const slot = await takeSlot(slotsOfThisFile());
if (process.env.GAVEL_FILE_SLOT === "cluster") process.env.GAVEL_E2E_LANE = String(slot.index + 1);
else delete process.env.GAVEL_E2E_LANE;
afterAll(slot.release);

// Setup file of the projects whose files take a slot (test/harness/file-slots.ts): the test
// file waits here for its turn, before it loads, and gives the slot back after its last
// afterAll (hooks run in reverse order: this one, registered first, runs last).
import { afterAll } from "vitest";
import { slotsOfThisFile, takeSlot } from "./file-slots.js";

const release = await takeSlot(slotsOfThisFile());
afterAll(release);

import { spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { FILE_SLOTS, slotNames, slotsOfThisFile, takeSlot } from "./file-slots.js";

describe("file slots", () => {
  it("names one cluster slot and the shared ones, per run", () => {
    expect(slotNames("7", "cluster", 2)).toEqual(["\0gavel-test-7-cluster"]);
    expect(slotNames("7", "shared", 2)).toEqual(["\0gavel-test-7-shared-0", "\0gavel-test-7-shared-1"]);
    expect(slotsOfThisFile({ GAVEL_FILE_SLOT: "shared", GAVEL_FILE_SLOTS_RUN: "7" })).toHaveLength(FILE_SLOTS);
    expect(slotsOfThisFile({ GAVEL_FILE_SLOT: "shared", GAVEL_FILE_SLOTS_RUN: "7", GAVEL_FILE_SLOTS_SHARED: "2" })).toHaveLength(2);
  });

  it("refuses a project without its kind or the run's global setup, naming what is missing", () => {
    expect(() => slotsOfThisFile({ GAVEL_FILE_SLOTS_RUN: "7" })).toThrow(/GAVEL_FILE_SLOT is undefined/);
    expect(() => slotsOfThisFile({ GAVEL_FILE_SLOT: "cluster" })).toThrow(/GAVEL_FILE_SLOTS_RUN is not set.*globalSetup/);
  });

  it("gives each slot to one taker at a time: the next takes it once it is released", async () => {
    const names = slotNames(randomUUID(), "shared", 2);
    const first = await takeSlot(names, 10);
    const second = await takeSlot(names, 10);
    let third: (() => Promise<void>) | undefined;
    const waiting = takeSlot(names, 10).then((r) => (third = r));
    await sleep(100);
    expect(third).toBeUndefined();
    await first();
    await waiting;
    expect(third).toBeDefined();
    await second();
    await third?.();
  });

  it("frees a slot when the process holding it dies", async () => {
    const [name] = slotNames(randomUUID(), "cluster", 0);
    const holder = spawn(process.execPath, [
      "-e",
      `require("node:net").createServer().listen(${JSON.stringify(name)}, () => console.log("held"))`,
    ]);
    await once(holder.stdout, "data");
    let taken = false;
    const waiting = takeSlot([name ?? ""], 10).then((release) => ((taken = true), release));
    await sleep(100);
    expect(taken).toBe(false);
    holder.kill("SIGKILL");
    await (
      await waiting
    )();
  });
});

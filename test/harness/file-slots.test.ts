import { spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { E2E_LANES, E2E_SLOTS, slotNames, slotsOfThisFile, takeSlot } from "./file-slots.js";

describe("file slots", () => {
  it("names the lanes and the shared release's e2e slots, per run", () => {
    expect(slotNames("7", "cluster", 2)).toEqual(["\0gavel-test-7-lane-1", "\0gavel-test-7-lane-2"]);
    expect(slotNames("7", "e2e")).toEqual(["\0gavel-test-7-e2e-0", "\0gavel-test-7-e2e-1", "\0gavel-test-7-e2e-2"]);
    expect(slotsOfThisFile({ GAVEL_FILE_SLOT: "e2e", GAVEL_FILE_SLOTS_RUN: "7" })).toHaveLength(E2E_SLOTS);
    expect(slotsOfThisFile({ GAVEL_FILE_SLOT: "cluster", GAVEL_FILE_SLOTS_RUN: "7" })).toHaveLength(E2E_LANES);
  });

  it("refuses a project without its kind or the run's global setup, naming what is missing", () => {
    expect(() => slotsOfThisFile({ GAVEL_FILE_SLOTS_RUN: "7" })).toThrow(/GAVEL_FILE_SLOT is undefined/);
    expect(() => slotsOfThisFile({ GAVEL_FILE_SLOT: "cluster" })).toThrow(/GAVEL_FILE_SLOTS_RUN is not set.*globalSetup/);
  });

  it("gives each slot to one taker at a time: the next takes it once it is released", async () => {
    const names = slotNames(randomUUID(), "cluster", 2);
    const first = await takeSlot(names, 10);
    const second = await takeSlot(names, 10);
    expect([first.index, second.index]).toEqual([0, 1]);
    let third: Awaited<ReturnType<typeof takeSlot>> | undefined;
    const waiting = takeSlot(names, 10).then((r) => (third = r));
    await sleep(100);
    expect(third).toBeUndefined();
    await first.release();
    await waiting;
    expect(third?.index).toBe(0);
    await second.release();
    await third?.release();
  });

  it("frees a slot when the process holding it dies", async () => {
    const [name] = slotNames(randomUUID(), "cluster", 1);
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
    await (await waiting).release();
  });
});

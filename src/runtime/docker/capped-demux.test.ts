// The multiplexed-stream demuxer: frames split anywhere, streams kept apart, each capped.
import { describe, expect, it } from "vitest";
import { TRUNCATION_MARKER } from "../workload.js";
import { CappedBuffer, CappedDemuxer, completeUtf8Length } from "./capped-demux.js";

function frame(type: number, payload: string | Buffer): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

describe("CappedDemuxer", () => {
  it("separates stdout and stderr frames", () => {
    const d = new CappedDemuxer();
    d.write(Buffer.concat([frame(1, "out1 "), frame(2, "err1"), frame(1, "out2")]));
    expect(d.stdout.text()).toBe("out1 out2");
    expect(d.stderr.text()).toBe("err1");
    expect(d.stdout.truncated || d.stderr.truncated).toBe(false);
  });

  it("reassembles frames split at every possible byte boundary", () => {
    const raw = Buffer.concat([frame(1, "hello"), frame(2, "wörld"), frame(0, "stdin echo"), frame(1, "!")]);
    for (let cut = 0; cut <= raw.length; cut++) {
      const d = new CappedDemuxer();
      d.write(raw.subarray(0, cut));
      d.write(raw.subarray(cut));
      expect(d.stdout.text()).toBe("hello!");
      expect(d.stderr.text()).toBe("wörld");
    }
    const d = new CappedDemuxer();
    for (const byte of raw) d.write(Buffer.from([byte]));
    expect(d.stdout.text()).toBe("hello!");
  });

  it("caps each stream on its own and appends the marker", () => {
    const d = new CappedDemuxer(10);
    d.write(frame(1, "0123456789abc"));
    d.write(frame(2, "short"));
    expect(d.stdout.truncated).toBe(true);
    expect(d.stdout.text()).toBe("0123456789" + TRUNCATION_MARKER);
    expect(d.stderr.truncated).toBe(false);
    expect(d.stderr.text()).toBe("short");
  });
});

describe("CappedBuffer", () => {
  it("is not truncated at exactly the cap", () => {
    const b = new CappedBuffer(4);
    b.push(Buffer.from("ab"));
    b.push(Buffer.from("cd"));
    expect(b.truncated).toBe(false);
    expect(b.text()).toBe("abcd");
    b.push(Buffer.from("e"));
    expect(b.truncated).toBe(true);
  });

  it("does not leave half a UTF-8 character at the cut", () => {
    const b = new CappedBuffer(5);
    b.push(Buffer.from("abcdé")); // é is 2 bytes: the cut falls inside it
    expect(b.text()).toBe("abcd" + TRUNCATION_MARKER);
  });
});

describe("completeUtf8Length", () => {
  it("keeps complete sequences and drops a partial tail", () => {
    const euro = Buffer.from("€"); // 3 bytes
    expect(completeUtf8Length(Buffer.concat([Buffer.from("a"), euro]))).toBe(4);
    expect(completeUtf8Length(Buffer.concat([Buffer.from("a"), euro.subarray(0, 2)]))).toBe(1);
    expect(completeUtf8Length(Buffer.from("plain"))).toBe(5);
    expect(completeUtf8Length(Buffer.alloc(0))).toBe(0);
  });
});

describe("CappedDemuxer properties", () => {
  it("any frames cut at any points come out as the concatenation per stream, capped", async () => {
    const fc = await import("fast-check");
    fc.assert(
      fc.property(
        fc.array(fc.record({ type: fc.constantFrom(0, 1, 2), body: fc.uint8Array({ maxLength: 64 }) }), { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.integer({ min: 1, max: 300 }),
        (frames, cuts, cap) => {
          const raw = Buffer.concat(frames.map((f) => frame(f.type, Buffer.from(f.body))));
          const points = [...new Set(cuts.map((c) => c % (raw.length + 1)))].sort((a, b) => a - b);
          const d = new CappedDemuxer(cap);
          let at = 0;
          for (const p of [...points, raw.length]) {
            d.write(raw.subarray(at, p));
            at = p;
          }
          for (const type of [1, 2]) {
            const all = Buffer.concat(frames.filter((f) => f.type === type).map((f) => Buffer.from(f.body)));
            const got = type === 1 ? d.stdout : d.stderr;
            expect(got.truncated).toBe(all.length > cap);
            if (all.length <= cap) expect(got.text()).toBe(all.toString("utf8"));
            else expect(got.text().endsWith(TRUNCATION_MARKER)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

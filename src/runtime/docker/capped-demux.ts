// Splits Docker's multiplexed log stream (8-byte frame headers) into stdout and stderr,
// keeping at most OUTPUT_CAP_BYTES of each so a chatty workload cannot exhaust our memory.
import { OUTPUT_CAP_BYTES, TRUNCATION_MARKER } from "../workload.js";

/** One output stream kept up to a byte cap; bytes past the cap are counted, then dropped. */
export class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** True once a byte past the cap arrived. */
  truncated = false;

  constructor(private readonly cap: number = OUTPUT_CAP_BYTES) {}

  /** Appends bytes, keeping only what fits under the cap. */
  push(bytes: Buffer): void {
    const room = this.cap - this.kept;
    if (bytes.length > room) this.truncated = true;
    if (room <= 0) return;
    const part = bytes.length > room ? bytes.subarray(0, room) : bytes;
    // Copy: the frame parser hands out views of buffers it reuses.
    this.chunks.push(Buffer.from(part));
    this.kept += part.length;
  }

  /** The kept text, with the truncation marker appended when output was cut. */
  text(): string {
    let buf = Buffer.concat(this.chunks, this.kept);
    // A cut may split a UTF-8 sequence; drop the partial character instead of a U+FFFD.
    if (this.truncated) buf = buf.subarray(0, completeUtf8Length(buf));
    const text = buf.toString("utf8");
    return this.truncated ? text + TRUNCATION_MARKER : text;
  }
}

/** Length of the longest prefix of `buf` that does not end inside a UTF-8 sequence. */
export function completeUtf8Length(buf: Buffer): number {
  let i = buf.length - 1;
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  let continuation = 0;
  while (i >= 0 && continuation < 3 && ((buf[i] as number) & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return buf.length;
  const lead = buf[i] as number;
  const need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return need > continuation ? i : buf.length;
}

const STDOUT = 1;
const STDERR = 2;
const HEADER = 8;

/**
 * A push parser for Docker's stream framing: `[type, 0, 0, 0, size(u32 BE)]` then `size`
 * bytes. Frames may be split across chunks arbitrarily and payload bytes are passed on as
 * they arrive, so one huge frame never sits in memory whole; stdin frames (type 0) are ignored.
 */
export class CappedDemuxer {
  readonly stdout: CappedBuffer;
  readonly stderr: CappedBuffer;
  private header: Buffer = Buffer.alloc(0);
  private frameType = 0;
  private remaining = 0;

  constructor(cap: number = OUTPUT_CAP_BYTES) {
    this.stdout = new CappedBuffer(cap);
    this.stderr = new CappedBuffer(cap);
  }

  /** Feeds the next chunk of the raw multiplexed stream. */
  write(chunk: Buffer): void {
    let buf = chunk;
    while (buf.length > 0) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length);
        const payload = buf.subarray(0, n);
        if (this.frameType === STDOUT) this.stdout.push(payload);
        else if (this.frameType === STDERR) this.stderr.push(payload);
        this.remaining -= n;
        buf = buf.subarray(n);
        continue;
      }
      const need = HEADER - this.header.length;
      this.header = Buffer.concat([this.header, buf.subarray(0, need)]);
      buf = buf.subarray(Math.min(need, buf.length));
      if (this.header.length < HEADER) return;
      this.frameType = this.header[0] as number;
      this.remaining = this.header.readUInt32BE(4);
      this.header = Buffer.alloc(0);
    }
  }
}

// A run's recorded calls as a file (`gavel audit export`, read by `gavel replay --from`): JSON
// lines, a header naming the run and its Agent, then one line per decided call with the
// proposal (arguments included: the guard reads them) and the decision, as the stream of
// recorded calls holds them (tool-call/call-log.ts). Unlike the audit trail (audit.ts: key
// paths, never values) this file holds argument values: kept like any secret-bearing export.
import type { AgentSpec } from "../api/types.js";
import { checkDecision, decodeProposal } from "../transport/codec.js";
import type { RecordedCall } from "./replay.js";

/** The header's `format`: what this reader understands. */
export const RECORDED_RUN_FORMAT = "gavel.recorded-run/v1";

/** The first line: which run the calls are of, and the Agent that made them (its spec, as applied). */
export interface RecordedRunHeader {
  format: typeof RECORDED_RUN_FORMAT;
  namespace: string;
  execution: string;
  /** The Execution's uid (the run of the tool-call store). */
  run: string;
  agent?: { name: string; spec: AgentSpec };
  exportedAt: string;
}

/** A run read back: its header and its calls. */
export interface RecordedRun {
  header: RecordedRunHeader;
  calls: RecordedCall[];
}

/** A line of a recorded-run file that cannot be read, named by file, line and field. */
export class RecordedRunError extends Error {
  override readonly name = "RecordedRunError";
}

/** The file's text: the header line, then a line per call. */
export function recordedRunText(header: RecordedRunHeader, calls: readonly (RecordedCall & { decidedAt?: string })[]): string {
  const lines = [JSON.stringify(header)];
  for (const c of calls)
    lines.push(
      JSON.stringify({
        proposal: c.proposal,
        decision: c.decision,
        ...(c.decidedAt !== undefined ? { decidedAt: c.decidedAt } : {}),
      }),
    );
  return `${lines.join("\n")}\n`;
}

/** Reads a recorded-run file; a bad line is a RecordedRunError naming `file`, the line and the field. */
export function parseRecordedRun(text: string, file: string): RecordedRun {
  const lines = text.split("\n").map((l, i) => ({ l: l.trim(), n: i + 1 }));
  const nonEmpty = lines.filter((x) => x.l !== "");
  const first = nonEmpty[0];
  if (first === undefined) throw new RecordedRunError(`${file}: empty; a recorded run starts with a ${RECORDED_RUN_FORMAT} header line`);
  const header = json(first.l, `${file}:${first.n}`) as Partial<RecordedRunHeader>;
  if (header.format !== RECORDED_RUN_FORMAT)
    throw new RecordedRunError(
      `${file}:${first.n}: format must be "${RECORDED_RUN_FORMAT}", not ${JSON.stringify(header.format ?? null)} (write the file with gavel audit export)`,
    );
  for (const field of ["namespace", "execution", "run"] as const)
    if (typeof header[field] !== "string" || header[field] === "")
      throw new RecordedRunError(`${file}:${first.n}: header field ${field} must be a non-empty string`);
  if (
    header.agent !== undefined &&
    (typeof header.agent.name !== "string" || typeof header.agent.spec !== "object" || header.agent.spec === null)
  )
    throw new RecordedRunError(`${file}:${first.n}: header field agent must be {name, spec}`);
  const calls = nonEmpty.slice(1).map(({ l, n }) => {
    const where = `${file}:${n}`;
    const o = json(l, where) as { proposal?: unknown; decision?: unknown };
    if (o.proposal === undefined || o.decision === undefined)
      throw new RecordedRunError(`${where}: a call line needs proposal and decision`);
    const p = decodeProposal(JSON.stringify(o.proposal));
    if (!p.ok) throw new RecordedRunError(`${where}: ${p.error.message}`);
    if (p.value.namespace !== header.namespace || p.value.execution !== header.execution)
      throw new RecordedRunError(
        `${where}: proposal /execution ${p.value.namespace}/${p.value.execution} is not the header's ${header.namespace}/${header.execution}`,
      );
    const d = checkDecision(o.decision);
    if (!d.ok) throw new RecordedRunError(`${where}: ${d.error.message}`);
    if (d.value.toolCallId !== p.value.toolCallId)
      throw new RecordedRunError(`${where}: decision /toolCallId ${d.value.toolCallId} is not the proposal's ${p.value.toolCallId}`);
    return { proposal: p.value, decision: d.value };
  });
  return { header: header as RecordedRunHeader, calls };
}

function json(line: string, where: string): unknown {
  try {
    const v = JSON.parse(line) as unknown;
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not a JSON object");
    return v;
  } catch (err) {
    throw new RecordedRunError(`${where}: not a JSON object: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// The approval webhook (issue 25 item 4, ADR 0067): each ToolApproval that starts waiting for a
// person is announced with a JSON POST to an operator's URL (a chat bridge, a pager), retried with
// backoff until the approval's deadline, and never in the gate's way: announce() returns at once.
// The announcement names the approval and summarises the call; it carries no argument values
// (their key paths only), no judge reasoning and no credential, as the audit does not. With a
// secret, each attempt is signed as Standard Webhooks signs (ADR 0082): HMAC-SHA256 over
// "id.timestamp.body", so a receiver knows who sent it and refuses an old one played again.
import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { ToolApproval } from "../api/types.js";
import { Backoff } from "../backoff.js";
import { messageOf } from "../errors.js";
import { argKeyPaths } from "../gate/audit.js";
import type { Logger } from "../telemetry/logger.js";
import { gavelVersion } from "../version.js";

/** The JSON body of one announcement. */
export interface ApprovalAnnouncement {
  type: "toolcall.approval.pending";
  approval: string;
  namespace: string;
  execution: string;
  iteration: number;
  step: number;
  tool: string;
  /** Key paths of the call's arguments, never their values. */
  argumentKeys: string[];
  trigger: string;
  /** The guard's flags and warnings (rule and class names). */
  guardFindings: string[];
  judges: { judge: string; passed: boolean; score?: number }[];
  deadline: string;
  onTimeout: string;
  digest: string;
  summary: string;
  /** How a person decides it. */
  decide: string;
}

/** Where and how announcements go. */
export interface ApprovalWebhookOptions {
  url: string;
  /**
   * The file holding the signing secret (a mounted Secret's key: "whsec_" and base64), read at
   * each attempt so that a rotated Secret counts without a restart; unsigned when undefined.
   */
  secretFile?: string;
  logger?: Logger;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** Pauses between attempts; default 1 s doubling to 60 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Announcements on their way at once at most; more are dropped, logged (default 100). */
  maxInFlight?: number;
}

/** What an approval is announced as: its name, the call without values, why, until when, and the command that decides it. */
export function announcementOf(a: ToolApproval): ApprovalAnnouncement {
  const namespace = a.metadata.namespace ?? "default";
  const s = a.spec;
  return {
    type: "toolcall.approval.pending",
    approval: a.metadata.name,
    namespace,
    execution: s.execution,
    iteration: s.iteration,
    step: s.step,
    tool: s.tool,
    argumentKeys: argKeyPaths(s.arguments ?? {}),
    trigger: s.trigger,
    guardFindings: [...(s.guardFindings ?? [])],
    judges: (s.judges ?? []).map((j) => ({ judge: j.judge, passed: j.passed, ...(j.score !== undefined ? { score: j.score } : {}) })),
    deadline: s.deadline,
    onTimeout: s.onTimeout,
    digest: s.digest,
    summary: `${namespace}/${s.execution} iteration ${s.iteration} step ${s.step}: ${s.tool} waits for a person (${s.trigger}) until ${s.deadline}, then ${s.onTimeout}`,
    decide: `gavel approve|deny ${a.metadata.name} -n ${namespace}`,
  };
}

/** The prefix of a Standard Webhooks secret; the HMAC key is the base64 after it. */
const SECRET_PREFIX = "whsec_";

/** The HMAC key of a Standard Webhooks secret ("whsec_" and the base64 of 24 to 64 bytes); an error names `where`. */
export function webhookKey(text: string, where: string): Buffer {
  const t = text.trim();
  const b64 = t.startsWith(SECRET_PREFIX) ? t.slice(SECRET_PREFIX.length) : undefined;
  if (b64 === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
    throw new Error(
      `${where}: an approval webhook secret is "${SECRET_PREFIX}" followed by base64 (Standard Webhooks), e.g. ${SECRET_PREFIX}$(head -c 32 /dev/urandom | base64)`,
    );
  const key = Buffer.from(b64, "base64");
  if (key.length < 24 || key.length > 64) throw new Error(`${where}: the secret's key is ${key.length} bytes, it must be 24 to 64`);
  return key;
}

/** Reads and checks the secret file: its HMAC key, or an error naming the file. */
export async function readWebhookKey(file: string): Promise<Buffer> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new Error(`approval webhook secret ${file}: ${messageOf(err)}`, { cause: err });
  }
  return webhookKey(text, `approval webhook secret ${file}`);
}

/**
 * The Standard Webhooks headers of one attempt: webhook-id (the same on every attempt),
 * webhook-timestamp (seconds, now) and webhook-signature, "v1," and the base64 HMAC-SHA256 of
 * "id.timestamp.body" under `key`.
 */
export function signatureHeaders(key: Buffer, id: string, body: string, nowMs = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(nowMs / 1000));
  const signature = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` };
}

/** Announces pending approvals to one URL; a failing or slow receiver costs the gate nothing. */
export class ApprovalWebhook {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  /** Counters for tests and logs. */
  readonly stats = { delivered: 0, attempts: 0, failed: 0, dropped: 0 };

  constructor(private readonly o: ApprovalWebhookOptions) {}

  /** Starts announcing `approval` and returns at once; retries until delivered, its deadline, or stop(). */
  announce(approval: ToolApproval): void {
    if (this.stopping.signal.aborted) return;
    if (this.inFlight.size >= (this.o.maxInFlight ?? 100)) {
      this.stats.dropped++;
      this.o.logger?.warn(
        { approval: approval.metadata.name, url: this.o.url },
        "approval webhook: too many announcements on their way, this one is dropped",
      );
      return;
    }
    const p = this.deliver(approval).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Stops retrying; resolves once every announcement's current attempt ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  private async deliver(approval: ToolApproval): Promise<void> {
    const body = JSON.stringify(announcementOf(approval));
    const deadline = Date.parse(approval.spec.deadline);
    const backoff = new Backoff(this.o.backoff ?? { initialMs: 1000, maxMs: 60_000 });
    // The same for every attempt: a receiver that got it already can tell.
    const id = approval.metadata.uid ?? approval.metadata.name;
    for (;;) {
      this.stats.attempts++;
      let why: string;
      try {
        // Signed anew at each attempt: its timestamp is when it was sent, which the receiver checks.
        const signed = this.o.secretFile !== undefined ? signatureHeaders(await readWebhookKey(this.o.secretFile), id, body) : {};
        const res = await fetch(this.o.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": `gavel/${gavelVersion()}`,
            "x-gavel-delivery": id,
            ...signed,
          },
          body,
          signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.o.timeoutMs ?? 10_000)]),
        });
        await res.body?.cancel().catch(() => undefined);
        if (res.ok) {
          this.stats.delivered++;
          return;
        }
        why = `HTTP ${res.status}`;
      } catch (err) {
        why = messageOf(err);
      }
      // Past its deadline an announcement asks for nothing anybody can still do.
      if (!(await backoff.wait({ signal: this.stopping.signal, deadline }))) {
        this.stats.failed++;
        this.o.logger?.warn(
          { approval: approval.metadata.name, url: this.o.url, attempts: backoff.attempts, err: why },
          "approval webhook: not delivered before the approval's deadline",
        );
        return;
      }
      this.o.logger?.debug({ approval: approval.metadata.name, err: why }, "approval webhook: retrying");
    }
  }
}

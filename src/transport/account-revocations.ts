// Revokes NATS users of gavel's account on a running server: reads the account JWT the
// server holds ($SYS.REQ.ACCOUNT.<id>.CLAIMS.LOOKUP), adds the revocations, re-signs it
// with the operator signing key and pushes it ($SYS.REQ.CLAIMS.UPDATE) as a system-account
// user. The server then refuses those users and closes their connections. Updates are
// serialised, and revocations asked for while one is in flight go out together in the next.
import type { NatsConnection } from "@nats-io/transport-node";
import { ACCOUNT_LOOKUP_SUBJECT, CLAIMS_UPDATE_SUBJECT, withRevocations } from "./credentials.js";

export interface AccountRevokerOptions {
  /** Connects as a system-account user (credentials from issueSystemCredentials). */
  connect: () => Promise<NatsConnection>;
  /** gavel's account public key (A...). */
  account: string;
  operatorSigningSeed: string;
  /** Per request; default 5 s. */
  timeoutMs?: number;
  now?: () => number;
}

/** The server's answer to a claims update. */
interface ClaimUpdateResponse {
  data?: { account?: string; code?: number; message?: string };
  error?: { account?: string; code?: number; description?: string };
}

/** Pushes revocations of gavel's account to the server. */
export class AccountRevoker {
  private nc: Promise<NatsConnection> | undefined;
  private pending = new Map<string, number>();
  private waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private running: Promise<void> | undefined;

  constructor(private readonly opts: AccountRevokerOptions) {}

  /**
   * Revokes each user (public key) until its time (epoch seconds, normally its JWT's expiry).
   * Resolves once the server has taken an account JWT that holds them.
   */
  revoke(users: Record<string, number>): Promise<void> {
    for (const [user, at] of Object.entries(users)) this.pending.set(user, Math.max(at, this.pending.get(user) ?? 0));
    const done = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.running ??= this.drain();
    return done;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.size > 0) {
        const batch = Object.fromEntries(this.pending);
        const waiting = this.waiting;
        this.pending = new Map();
        this.waiting = [];
        try {
          await this.push(batch);
          for (const w of waiting) w.resolve();
        } catch (err) {
          for (const w of waiting) w.reject(err);
        }
      }
    } finally {
      this.running = undefined;
    }
  }

  private async connection(): Promise<NatsConnection> {
    if (this.nc !== undefined) {
      const nc = await this.nc.catch(() => undefined);
      if (nc !== undefined && !nc.isClosed()) return nc;
    }
    this.nc = this.opts.connect();
    return this.nc;
  }

  private async push(users: Record<string, number>): Promise<void> {
    const nc = await this.connection();
    const timeout = this.opts.timeoutMs ?? 5000;
    const found = await nc.request(ACCOUNT_LOOKUP_SUBJECT(this.opts.account), "", { timeout });
    const current = found.string().trim();
    if (!current.startsWith("ey")) throw new Error(`the server holds no JWT for account ${this.opts.account}: ${current.slice(0, 200)}`);
    const updated = withRevocations(current, this.opts.operatorSigningSeed, users, (this.opts.now ?? Date.now)());
    const reply = await nc.request(CLAIMS_UPDATE_SUBJECT, updated, { timeout });
    const r = reply.json<ClaimUpdateResponse>();
    if (r.error !== undefined || r.data?.code !== 200) {
      throw new Error(`the server refused the account update: ${r.error?.description ?? r.data?.message ?? reply.string()}`);
    }
  }

  /** Closes the system-account connection. */
  async close(): Promise<void> {
    await this.running;
    const nc = await this.nc?.catch(() => undefined);
    await nc?.close();
  }
}

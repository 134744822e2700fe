// The ledger of worker credentials that may still work: one JetStream message per minted
// user (the last per subject is kept), removed once the user is revoked. It outlives the
// controller, so an Execution deleted while no controller ran still has its credential
// revoked by the next one (src/controller/execution-credentials.ts sweeps it).
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, DiscardPolicy, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { ensureStream } from "./streams.js";

/** The stream holding the ledger; only gavel's own user can reach it (workers have no JetStream API). */
export const LEDGER_STREAM = "GAVEL_NATS_USERS";
const PREFIX = "gavel.natsusers";

/** One minted worker user. */
export interface LedgerEntry {
  /** The user's public key (U...). */
  user: string;
  namespace: string;
  /** The Execution's name and uid: a new Execution of the same name has another uid. */
  name: string;
  uid: string;
  /** The user JWT's expiry, epoch seconds: after it the entry is moot. */
  expiresAt: number;
}

function isEntry(v: unknown): v is LedgerEntry {
  const e = v as Partial<LedgerEntry> | null;
  return (
    typeof e === "object" &&
    e !== null &&
    typeof e.user === "string" &&
    typeof e.namespace === "string" &&
    typeof e.name === "string" &&
    typeof e.uid === "string" &&
    typeof e.expiresAt === "number"
  );
}

/** Reads and writes the ledger stream. */
export class CredentialLedger {
  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly nc: NatsConnection,
  ) {}

  /** Opens the ledger, creating its stream when it is missing (with `replicas`, or bringing an existing one to them). */
  static async open(nc: NatsConnection, replicas?: number): Promise<CredentialLedger> {
    const jsm = await jetstreamManager(nc);
    const config = {
      name: LEDGER_STREAM,
      subjects: [`${PREFIX}.*`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_msgs_per_subject: 1,
      discard: DiscardPolicy.Old,
      allow_direct: true,
    };
    await ensureStream(jsm, config, replicas);
    return new CredentialLedger(jsm, nc);
  }

  /** Records a user (a repeat replaces the earlier record); resolves once the stream has it. */
  async put(entry: LedgerEntry): Promise<void> {
    const js = this.jsm.jetstream();
    await js.publish(`${PREFIX}.${entry.user}`, JSON.stringify(entry), { timeout: 5000 });
  }

  /** Forgets a user. */
  async remove(user: string): Promise<void> {
    await this.jsm.streams.purge(LEDGER_STREAM, { filter: `${PREFIX}.${user}` });
  }

  /** Every recorded user. */
  async list(): Promise<LedgerEntry[]> {
    const info = await this.jsm.streams.info(LEDGER_STREAM, { subjects_filter: `${PREFIX}.*` });
    const out: LedgerEntry[] = [];
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const m = await this.jsm.streams.getMessage(LEDGER_STREAM, { last_by_subj: subject });
      if (m === null) continue;
      const v: unknown = m.json();
      if (isEntry(v)) out.push(v);
    }
    return out;
  }

  /** The connection the ledger uses. */
  get connection(): NatsConnection {
    return this.nc;
  }
}

// Keeps this controller replica's tool-call gate running: the NATS connection (retried until
// it answers), the ClusterGate on it, and meanwhile why no tool call can be decided.
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import { Backoff } from "../backoff.js";
import { messageOf } from "../errors.js";
import { ClusterGate, type ClusterGateOptions } from "./cluster-gate.js";
import { guardingOf, type GateHealth } from "./gate-guarding.js";
import type { GateStatus, Guarding } from "./gate-status.js";

export interface GateSupervisorOptions extends Omit<ClusterGateOptions, "nc"> {
  /** NATS URL(s) of the gate. */
  servers: string;
  /** The controller's NATS credentials (a .creds file's content), if the server asks for them. */
  creds?: Uint8Array;
  /** Called when the gate starts or stops being able to serve (Agent Ready conditions follow it). */
  onAvailabilityChange?: () => void;
}

/**
 * Keeps this replica's gate running: connects to NATS (retrying until it can; then the
 * client reconnects by itself), starts the gate, and says meanwhile why it cannot serve.
 */
export class GateSupervisor implements GateStatus, GateHealth {
  private gate: ClusterGate | undefined;
  private nc: NatsConnection | undefined;
  private connected = false;
  private lastError = "connecting";
  private stopped = false;
  /** Aborted by stop(): ends a backoff pause at once. */
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly opts: GateSupervisorOptions) {}

  /** Starts connecting in the background; the gate serves once NATS answers. */
  start(): void {
    this.running = this.run();
  }

  /** The running gate, once it runs. */
  get current(): ClusterGate | undefined {
    return this.gate;
  }

  /** Resolves once the gate serves (tests and start-up logs); rejects after `timeoutMs`. */
  async serving(timeoutMs = 30_000): Promise<ClusterGate> {
    const end = Date.now() + timeoutMs;
    while (this.gate === undefined || this.unavailable() !== undefined) {
      if (Date.now() > end) throw new Error(`the tool-call gate is not serving after ${timeoutMs} ms: ${this.unavailable() ?? ""}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.gate;
  }

  unavailable(): string | undefined {
    if (this.gate === undefined) return `the tool-call gate cannot reach NATS at ${this.opts.servers} (${this.lastError})`;
    if (!this.connected) return `the tool-call gate lost NATS at ${this.opts.servers} and is reconnecting`;
    return this.gate.unavailable();
  }

  policiesInScope(namespace: string): boolean {
    return this.opts.policies.hasPolicies?.(namespace) ?? false;
  }

  guarding(agent: Agent, namespace: string): Guarding {
    return guardingOf(this, agent, namespace);
  }

  annotate(execution: Execution, status: ExecutionStatus): void {
    this.gate?.annotate(execution, status);
  }

  async stop(graceMs?: number): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.running;
    await this.gate?.stop(graceMs);
    await this.nc?.drain().catch(() => undefined);
  }

  private async run(): Promise<void> {
    const backoff = new Backoff({ initialMs: 500, maxMs: 5000 });
    while (!this.stopped) {
      try {
        this.nc = await connect({
          servers: this.opts.servers,
          name: `gavel-gate ${this.opts.gateId}`,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          // Every request (a store write, an event publish) would otherwise capture two stack
          // traces for a timeout that almost never happens: 7 % of the controller's busy time in the gate bench.
          noAsyncTraces: true,
          ...(this.opts.creds !== undefined ? { authenticator: credsAuthenticator(this.opts.creds) } : {}),
        });
        break;
      } catch (err) {
        this.lastError = messageOf(err);
        this.opts.logger?.warn({ servers: this.opts.servers, err: this.lastError }, "tool-call gate: NATS not reachable yet");
        await backoff.wait({ signal: this.stopping.signal });
      }
    }
    const nc = this.nc;
    if (nc === undefined || this.stopped) return;
    this.connected = true;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") this.connected = false;
        else if (s.type === "reconnect") this.connected = true;
        else continue;
        this.opts.onAvailabilityChange?.();
      }
    })().catch(() => undefined);
    backoff.reset();
    while (!this.stopped) {
      try {
        this.gate = await ClusterGate.start({ ...this.opts, nc });
        this.opts.logger?.info({ gate: this.opts.gateId }, "tool-call gate serving");
        this.opts.onAvailabilityChange?.();
        return;
      } catch (err) {
        // JetStream may still be starting: the store cannot be opened yet.
        this.lastError = messageOf(err);
        this.opts.logger?.warn({ err: this.lastError }, "tool-call gate: could not open the tool-call store yet");
        await backoff.wait({ signal: this.stopping.signal });
      }
    }
  }
}

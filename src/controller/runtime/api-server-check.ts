// Whether the API server answered recently: a GET /version every few seconds (any
// authenticated client may read it, no grant needed), for the controller's /readyz. A
// controller that cannot reach the API server keeps running and retrying; it only says so.
import * as k8s from "@kubernetes/client-node";
import { messageOf } from "../../errors.js";
import type { Check } from "./health.js";

export interface ApiServerCheckOptions {
  kc: k8s.KubeConfig;
  /** Between two reads, in ms. Default 10 000. */
  intervalMs?: number;
  /** A read unanswered for this long counts as failed, in ms. Default 5 000. */
  timeoutMs?: number;
  now?: () => number;
}

/** The check `apiserver`: fails while the last read failed, went unanswered, or succeeded too long ago. */
export class ApiServerCheck implements Check {
  readonly name = "apiserver";
  private readonly api: k8s.VersionApi;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly server: string;
  private timer: NodeJS.Timeout | undefined;
  private lastOk: number | undefined;
  private lastError: { at: number; message: string } | undefined;
  private inflightSince: number | undefined;

  constructor(opts: ApiServerCheckOptions) {
    this.api = opts.kc.makeApiClient(k8s.VersionApi);
    this.intervalMs = opts.intervalMs ?? 10_000;
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.now = opts.now ?? Date.now;
    this.server = opts.kc.getCurrentCluster()?.server ?? "the API server";
  }

  /** Reads at once, then every interval, until stop(). */
  start(): void {
    if (this.timer !== undefined) return;
    void this.read();
    this.timer = setInterval(() => void this.read(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One read of /version now (also what the timer does). */
  async read(): Promise<void> {
    if (this.inflightSince !== undefined) return;
    const started = this.now();
    this.inflightSince = started;
    try {
      await this.api.getCode();
      this.lastOk = this.now();
      this.lastError = undefined;
    } catch (err) {
      this.lastError = { at: this.now(), message: messageOf(err) };
    } finally {
      this.inflightSince = undefined;
    }
  }

  check(): string | undefined {
    const now = this.now();
    const server = this.server;
    if (this.lastError !== undefined)
      return `GET ${server}/version failed ${seconds(now - this.lastError.at)} ago: ${this.lastError.message}`;
    if (this.inflightSince !== undefined && now - this.inflightSince > this.timeoutMs)
      return `GET ${server}/version unanswered for ${seconds(now - this.inflightSince)}`;
    if (this.lastOk === undefined) return `GET ${server}/version not answered yet`;
    if (now - this.lastOk > 3 * this.intervalMs + this.timeoutMs)
      return `GET ${server}/version last answered ${seconds(now - this.lastOk)} ago`;
    return undefined;
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

// A real HTTP receiver for the approval webhook (chart value approvals.webhookUrl, ADR 0067),
// started once per e2e run by the global set-up on the node's address, where the controller
// pod reaches it, like the run's Jaeger. It answers 204 to every POST on /hook and keeps what
// it got (headers and the raw body, as sent); tests in other processes read that back from
// GET /deliveries on loopback. The announcements are signed (approvals.webhookSecret, ADR 0082)
// with a secret made for the run, in a Secret of the release's namespace.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { stringify } from "yaml";
import type { Cluster } from "./cluster.js";

/** Where the e2e global set-up tells the test files the receiver is (its base URL). */
export const E2E_APPROVAL_WEBHOOK_ENV = "GAVEL_E2E_APPROVAL_WEBHOOK";
/** The run's signing secret ("whsec_" and base64), for the tests to verify with. */
export const E2E_APPROVAL_WEBHOOK_SECRET_ENV = "GAVEL_E2E_APPROVAL_WEBHOOK_SECRET";
/** The Secret in the release's namespace that holds it (key `secret`), the chart's approvals.webhookSecret.name. */
export const E2E_APPROVAL_WEBHOOK_SECRET = "gavel-e2e-approval-webhook";

/** Makes a new signing secret and writes it to the Secret in `namespace` (made with it, if absent); returns it. */
export async function writeWebhookSecret(cluster: Cluster, namespace: string): Promise<string> {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const yaml = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: E2E_APPROVAL_WEBHOOK_SECRET, namespace }, stringData: { secret } },
  ]
    .map((o) => stringify(o))
    .join("---\n");
  const r = await cluster.kubectl(["apply", "-f", "-"], { stdin: yaml });
  if (r.code !== 0) throw new Error(`the approval webhook's Secret: ${r.stderr}`);
  return secret;
}

/** One POST the receiver got. */
export interface WebhookDelivery {
  receivedAt: number;
  path: string;
  headers: Record<string, string>;
  /** The body exactly as sent (what a signature covers). */
  body: string;
}

export interface WebhookReceiver {
  /** http://HOST:PORT: POSTs to `${base}/hook` are kept, GET `${base}/deliveries` lists them. */
  base: string;
  stop(): Promise<void>;
}

function bodyOf(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Starts the receiver on `host` (a free port); at most `keep` deliveries are kept, the oldest dropped. */
export async function startWebhookReceiver(host: string, keep = 2000): Promise<WebhookReceiver> {
  const deliveries: WebhookDelivery[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? "/", "http://receiver").pathname;
      if (req.method === "GET" && path === "/deliveries") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(deliveries));
        return;
      }
      if (req.method !== "POST") {
        res.writeHead(405).end();
        return;
      }
      const body = await bodyOf(req);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      deliveries.push({ receivedAt: Date.now(), path, headers, body });
      if (deliveries.length > keep) deliveries.shift();
      res.writeHead(204).end();
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("webhook receiver: no address");
  return {
    base: `http://${host}:${String(address.port)}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What the run's receiver got so far (the global set-up's, named by E2E_APPROVAL_WEBHOOK_ENV). */
export async function webhookDeliveries(): Promise<WebhookDelivery[]> {
  const base = process.env[E2E_APPROVAL_WEBHOOK_ENV];
  if (base === undefined || base === "")
    throw new Error(`${E2E_APPROVAL_WEBHOOK_ENV} is not set: the e2e global set-up starts the receiver`);
  const r = await fetch(`${base}/deliveries`);
  if (!r.ok) throw new Error(`GET ${base}/deliveries: HTTP ${r.status}`);
  return (await r.json()) as WebhookDelivery[];
}

// `gavel nats bootstrap`: run by the chart's NATS pod before the server starts (an init
// container of the controller image). Creates the operator and credentials Secrets when
// they are absent (src/controller/nats-secrets.ts) and writes the server's trust
// configuration (operator, system account, full resolver, preloaded accounts) for nats.conf
// to include, and for a JetStream cluster its routes (cluster.conf). Idempotent: a restart
// reuses the keys.
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { loadKubeConfig } from "../controller/runtime.js";
import { bootstrapNatsSecrets } from "../controller/nats-secrets.js";
import { messageOf } from "../errors.js";
import { clusterRoutesConfig, routePassword } from "../transport/cluster-routes.js";
import { serverAuthConfig } from "../transport/credentials.js";
import { UsageError, type Command } from "./command.js";

const USAGE =
  "gavel nats bootstrap --operator-secret NAME --credentials-secret NAME [-n NAMESPACE] [--auth-config FILE] [--resolver-dir DIR] [--cluster-config FILE --route nats://HOST:PORT...] [--kubeconfig FILE]";

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export const natsCommand: Command = {
  name: "nats",
  summary: "set up gavel's NATS keys: `nats bootstrap` creates the key Secrets when absent and writes the server's trust config",
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub !== "bootstrap")
      throw new UsageError(sub === undefined ? "a subcommand is required: bootstrap" : `unknown subcommand "${sub}" (known: bootstrap)`);
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        namespace: { type: "string", short: "n", default: io.env.GAVEL_NAMESPACE },
        "operator-secret": { type: "string" },
        "credentials-secret": { type: "string" },
        "auth-config": { type: "string" },
        // Where the server keeps account JWTs (a path on its volume; relative paths are from its working directory).
        "resolver-dir": { type: "string", default: "jwt" },
        // A JetStream cluster's routes (one per server, this one's included) and where their cluster.conf goes.
        "cluster-config": { type: "string" },
        route: { type: "string", multiple: true },
        kubeconfig: { type: "string", default: io.env.KUBECONFIG },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0] ?? ""}`);
    const operatorSecret = values["operator-secret"];
    const credentialsSecret = values["credentials-secret"];
    for (const [flag, v] of [
      ["--operator-secret", operatorSecret],
      ["--credentials-secret", credentialsSecret],
    ] as const) {
      if (v === undefined || !NAME.test(v))
        throw new UsageError(`${flag} NAME is required: a Secret name (lower-case DNS name), got ${JSON.stringify(v ?? "")}`);
    }
    const routes = values.route ?? [];
    if ((values["cluster-config"] === undefined) !== (routes.length === 0))
      throw new UsageError("--cluster-config FILE and --route URL go together: the cluster's routes are written to that file");
    const clusterConfig = (password: string): string => {
      try {
        return clusterRoutesConfig(password, routes);
      } catch (err) {
        throw new UsageError(messageOf(err));
      }
    };
    // Bad routes are refused before any Secret is touched.
    if (routes.length > 0) clusterConfig("-");
    if (operatorSecret === credentialsSecret)
      throw new UsageError("--operator-secret and --credentials-secret must differ: the operator seed stays out of the controller's mount");
    const kc = loadKubeConfig(values.kubeconfig);
    const namespace = values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";

    const { trust, jwts, created } = await bootstrapNatsSecrets(kc.makeApiClient(k8s.CoreV1Api), {
      namespace,
      operatorSecret: operatorSecret as string,
      credentialsSecret: credentialsSecret as string,
    });
    io.stdout.write(
      created.length > 0
        ? `created Secret(s) ${created.map((n) => `${namespace}/${n}`).join(", ")}\n`
        : `Secrets ${namespace}/${operatorSecret} and ${namespace}/${credentialsSecret} exist: keys kept\n`,
    );
    const file = values["auth-config"];
    if (file !== undefined) {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(`${file}.tmp`, `${serverAuthConfig(jwts, values["resolver-dir"])}\n`, { mode: 0o644 });
      await rename(`${file}.tmp`, file);
      io.stdout.write(`wrote ${file}\n`);
    }
    const clusterFile = values["cluster-config"];
    if (clusterFile !== undefined) {
      const conf = clusterConfig(routePassword(trust.operatorSeed));
      await mkdir(dirname(clusterFile), { recursive: true });
      // The routes' password is in it: readable by the server's user only.
      await writeFile(`${clusterFile}.tmp`, `${conf}\n`, { mode: 0o600 });
      await rename(`${clusterFile}.tmp`, clusterFile);
      io.stdout.write(`wrote ${clusterFile} (${routes.length} routes)\n`);
    }
    return 0;
  },
};

// Where `gavel replay` and `gavel audit export` find a run's recorded calls: the tool-call store
// on NATS (the run named by its Execution on the API server, or --run UID once it is gone), or a
// file `gavel audit export` wrote. Both end in the same RecordedRun, or in an error that names
// the Execution, the stream or the file.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Agent, Execution } from "../api/types.js";
import { withDefaults } from "../api/defaults.js";
import { messageOf } from "../errors.js";
import { parseRecordedRun, RECORDED_RUN_FORMAT, RecordedRunError, type RecordedRun } from "../gate/recorded-run.js";
import { CALL_LOG_STREAM, readLoggedCalls, type LoggedCall } from "../gate/tool-call.js";
import { AGENTS, EXECUTIONS } from "../views/resources.js";
import { connectKube, findObject, KUBE_FLAGS, type Kube } from "../views/kube.js";
import { UsageError, type CommandIO } from "./command.js";

/** The flags that say where the run is: the API server and NATS, or --from FILE. */
export const RUN_SOURCE_FLAGS = {
  ...KUBE_FLAGS,
  nats: { type: "string" },
  "nats-creds": { type: "string" },
  run: { type: "string" },
  from: { type: "string" },
} as const;

export interface RunSourceFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
  nats?: string | undefined;
  "nats-creds"?: string | undefined;
  run?: string | undefined;
  from?: string | undefined;
}

/** A run read back, and the API server it came through (if any). */
export interface LoadedRun extends RecordedRun {
  calls: (RecordedRun["calls"][number] & Partial<Pick<LoggedCall, "decidedAt">>)[];
  kube?: Kube;
}

/** The run of `--from FILE`, or of the Execution named by `positional` read from the store on NATS. */
export async function loadRun(values: RunSourceFlags, positional: string | undefined, io: CommandIO): Promise<LoadedRun> {
  if (values.from !== undefined) {
    if (positional !== undefined)
      throw new UsageError(`give an Execution or --from FILE, not both (got ${positional} and --from ${values.from})`);
    const text = await readFile(resolve(io.cwd, values.from), "utf8").catch((err: unknown) => {
      throw new UsageError(`--from ${values.from}: ${messageOf(err)}`);
    });
    try {
      return parseRecordedRun(text, values.from);
    } catch (err) {
      if (err instanceof RecordedRunError) throw new UsageError(err.message);
      throw err;
    }
  }
  if (positional === undefined) throw new UsageError("name the Execution whose recorded calls to read, or give --from FILE");
  const nats = values.nats ?? io.env.NATS_URL;
  if (nats === undefined || nats === "")
    throw new UsageError("--nats URL (or NATS_URL) is required to read the tool-call store; or give --from FILE (gavel audit export)");
  const kube = connectKube(values, io);
  const execution = await findObject<Execution>(kube, EXECUTIONS, kube.namespace, positional);
  const run = values.run ?? execution?.metadata.uid;
  if (run === undefined)
    throw new Error(
      `executions "${positional}" not found in namespace "${kube.namespace}"; give --run UID to read the records of a deleted run`,
    );
  if (values.run !== undefined && execution !== undefined && execution.metadata.uid !== values.run)
    io.stderr.write(
      `gavel: --run ${values.run} is not the uid of the Execution there now (${execution.metadata.uid ?? "?"}): reading run ${values.run}\n`,
    );
  const agentName = execution?.spec.agentRef.name;
  const agent = agentName === undefined ? undefined : await findObject<Agent>(kube, AGENTS, kube.namespace, agentName);
  const nc = await connectNats(nats, values["nats-creds"] ?? io.env.NATS_CREDS);
  try {
    const { calls, unreadable } = await readLoggedCalls(nc, { namespace: kube.namespace, execution: positional, run });
    if (unreadable > 0) io.stderr.write(`gavel: ${unreadable} recorded call(s) of the run do not parse and are left out\n`);
    if (calls.length === 0)
      throw new Error(
        `Execution ${kube.namespace}/${positional} (run ${run}) has no recorded calls in ${CALL_LOG_STREAM} on ${nats} (calls are recorded by a controller with --recorded-calls-max-age above 0, and kept that long, 24 h by default)`,
      );
    return {
      header: {
        format: RECORDED_RUN_FORMAT,
        namespace: kube.namespace,
        execution: positional,
        run,
        ...(agent !== undefined ? { agent: { name: agent.metadata.name, spec: withDefaults(agent).spec } } : {}),
        exportedAt: new Date().toISOString(),
      },
      calls,
      kube,
    };
  } finally {
    await nc.close();
  }
}

async function connectNats(url: string, creds: string | undefined): Promise<NatsConnection> {
  const authenticator =
    creds !== undefined && creds !== ""
      ? credsAuthenticator(
          await readFile(creds).catch((err: unknown) => {
            throw new UsageError(`--nats-creds ${creds}: ${messageOf(err)}`);
          }),
        )
      : undefined;
  try {
    return await connect({
      servers: url,
      maxReconnectAttempts: 0,
      timeout: 10_000,
      ...(authenticator !== undefined ? { authenticator } : {}),
    });
  } catch (err) {
    throw new Error(`cannot connect to NATS at ${url}: ${messageOf(err)}`, { cause: err });
  }
}

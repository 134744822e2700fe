// `gavel events`: reads the durable event stream of a namespace or one execution tree
// and prints it as JSON lines or as the execution tree, following new events if asked.
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { EventStream } from "../transport/event-stream.js";
import { UsageError, type Command } from "./command.js";
import { applyEvent, emptyTree, renderTree } from "./tree.js";

export const eventsCommand: Command = {
  name: "events",
  summary: "print the event stream of a namespace or an execution tree",
  usage: "gavel events --nats URL [--creds FILE] [-n NAMESPACE] [EXECUTION] [--follow] [--output json|tree]",
  async run(argv, io) {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        nats: { type: "string", default: io.env.NATS_URL },
        creds: { type: "string", default: io.env.NATS_CREDS },
        namespace: { type: "string", short: "n" },
        follow: { type: "boolean", short: "f", default: false },
        output: { type: "string", short: "o", default: "json" },
      },
    });
    if (!values.nats) throw new UsageError("--nats URL (or NATS_URL) is required");
    if (positionals.length > 1) throw new UsageError("at most one EXECUTION");
    if (values.output !== "json" && values.output !== "tree") throw new UsageError(`--output must be json or tree, not "${values.output}"`);
    const root = positionals[0];
    if (root !== undefined && values.namespace === undefined) throw new UsageError("an EXECUTION needs -n NAMESPACE");
    const authenticator = values.creds ? credsAuthenticator(await readFile(values.creds)) : undefined;
    const nc = await connect({ servers: values.nats, ...(authenticator ? { authenticator } : {}) });
    try {
      const stream = await EventStream.open(nc);
      const tree = emptyTree(root ?? "*");
      const events = stream.read({
        namespace: values.namespace,
        root,
        ...(values.follow ? {} : { untilIdleMs: 500 }),
      });
      for await (const e of events) {
        if (values.output === "json") io.stdout.write(`${JSON.stringify(e)}\n`);
        else applyEvent(tree, e);
      }
      if (values.output === "tree") io.stdout.write(`${renderTree(tree).join("\n")}\n`);
      return 0;
    } finally {
      await nc.close();
    }
  },
};

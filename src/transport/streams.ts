// How gavel's JetStream streams come to exist with gavel's settings: created when missing,
// brought to the settings when they differ — their replica count included, so that a stream
// made on one server is replicated once the chart runs a JetStream cluster (docs/nats.md).
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import { messageOf } from "../errors.js";

/** JetStream's own bound on a stream's replicas. */
export const MAX_STREAM_REPLICAS = 5;

/** The stream could not be created or brought to gavel's settings; the message names the stream. */
export class StreamSetupError extends Error {
  constructor(
    readonly stream: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StreamSetupError";
  }
}

/** Reads a stream's info; undefined when there is none of that name. */
async function infoOf(jsm: JetStreamManager, name: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(name);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw err;
  }
}

/**
 * Creates the stream, or updates an existing one to `config`. `replicas` undefined keeps an
 * existing stream's count (a reader such as `gavel events` must not shrink what the controller
 * grew) and creates a new one with 1. A server that refuses (a count above its cluster's size,
 * more than 1 on a server without a cluster) is a StreamSetupError naming the stream and both counts.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
  replicas?: number,
): Promise<StreamInfo> {
  const name = config.name;
  if (replicas !== undefined && (!Number.isInteger(replicas) || replicas < 1 || replicas > MAX_STREAM_REPLICAS))
    throw new StreamSetupError(name, `stream ${name}: replicas must be a whole number from 1 to ${MAX_STREAM_REPLICAS}, got ${replicas}`);
  let info = await infoOf(jsm, name);
  if (info === undefined) {
    try {
      return await jsm.streams.add({ ...config, num_replicas: replicas ?? 1 });
    } catch (err) {
      // Another process may have created it a moment ago: then bring that one to our settings.
      info = await infoOf(jsm, name).catch(() => undefined);
      if (info === undefined)
        throw new StreamSetupError(name, `creating JetStream stream ${name} with ${replicas ?? 1} replica(s): ${messageOf(err)}`, {
          cause: err,
        });
    }
  }
  const had = info.config.num_replicas;
  const want = replicas ?? had;
  try {
    return await jsm.streams.update(name, { ...config, num_replicas: want });
  } catch (err) {
    throw new StreamSetupError(
      name,
      want === had
        ? `updating JetStream stream ${name} to gavel's settings: ${messageOf(err)}`
        : `JetStream stream ${name} has ${had} replica(s) and gavel is set to ${want} (--nats-stream-replicas, the chart's nats.streamReplicas); the server refused the change: ${messageOf(err)}`,
      { cause: err },
    );
  }
}

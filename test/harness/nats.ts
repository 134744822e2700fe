// The tests' NATS: the same launcher local mode uses (src/transport/nats-server.ts).
export { startNats, freePort, type NatsServer } from "../../src/transport/nats-server.js";

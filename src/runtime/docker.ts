// What the rest of gavel uses of the Docker runtime (src/runtime/docker/): DockerWorkloads, which
// `gavel run` drives its workers and judges with. Only `gavel run` loads it (and with it dockerode).
export { DockerWorkloads } from "./docker/docker-workloads.js";

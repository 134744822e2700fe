// Where the harness keeps its cache and binaries; mirrors test/harness/lib.sh.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// The repository: the nearest directory above this file with a package.json (the harness
// also runs compiled, from dist/test/harness, when `make bench` uses it).
function repoDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
  }
}

export const REPO_DIR = repoDir();
export const HARNESS_DIR = join(REPO_DIR, "test", "harness");
export const GAVEL_CACHE = process.env.GAVEL_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "gavel");
export const K8S_VERSION = "v1.31.13";
export const K8S_BIN = join(GAVEL_CACHE, "k8s", K8S_VERSION, "bin");
export const KUBECTL = join(K8S_BIN, "kubectl");
export const HELM = join(GAVEL_CACHE, "helm", "v3.16.4", "bin", "helm");
/** The single-node cluster's node address (lib.sh NODE_IP): where pods reach the host. */
export const NODE_IP = "10.89.0.1";
/** gavel's test CSI driver (test/harness/csi.sh, ADR 0045): its name, its StorageClass and VolumeSnapshotClass, where its volumes live on the node. */
export const CSI_DRIVER = "hostpath.csi.gavel.dev";
export const CSI_CLASS = "gavel-csi-hostpath";
export const CSI_DATA_DIR = "/var/lib/gavel-csi-hostpath";
export const BASE_IMAGE = process.env.BASE_IMAGE ?? "gavel/base:bookworm-node20";

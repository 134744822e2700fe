// Infrastructure: Terraform and Pulumi destroys, Kubernetes and cluster deletions, cloud and object-storage deletes, backups, databases.
import { classified, effect, type Effect } from "../effect.js";
import { has, parseOptions, valuesOf } from "../options.js";
import { at, none, set, type Handler } from "./handler.js";

export const terraform: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const sub = ops[0] ?? "";
  if (sub === "destroy" || (sub === "apply" && c.args.some((a) => /^--?destroy$/.test(a))))
    return [classified("infrastructure", "destroys managed infrastructure")];
  if ((sub === "state" && /^(rm|remove)$/.test(ops[1] ?? "")) || (sub === "workspace" && ops[1] === "delete"))
    return [classified("infrastructure", "removes infrastructure state")];
  return none;
};

export const pulumi: Handler = (c) =>
  c.args.includes("destroy") || (c.args.includes("stack") && c.args.includes("rm"))
    ? [classified("infrastructure", "destroys managed infrastructure")]
    : none;

export const KUBE_WIDE_KINDS_RE =
  /^(namespaces?|ns|nodes?|no|pv|persistentvolumes?|pvc|persistentvolumeclaims?|crds?|customresourcedefinitions?(\.apiextensions\.k8s\.io)?|clusters?|clusterroles?|clusterrolebindings?|storageclass(es)?|sc|mutatingwebhookconfigurations?|validatingwebhookconfigurations?)([/,.]|$)/;
export const kubectl: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      "-n",
      "--namespace",
      "-l",
      "--selector",
      "-o",
      "--output",
      "--context",
      "--cluster",
      "--kubeconfig",
      "-f",
      "--filename",
      "--field-selector",
      "--grace-period",
      "--timeout",
      "-c",
      "--container",
    ),
  );
  const [sub, kind] = o.operands;
  if (sub === "delete") {
    if (KUBE_WIDE_KINDS_RE.test(kind ?? ""))
      return [classified("infrastructure", "deletes Kubernetes namespaces, nodes, volumes or cluster resources")];
    if (has(o, "--all", "-A", "--all-namespaces")) return [classified("infrastructure", "deletes every Kubernetes object of a kind")];
  }
  if (sub === "drain") return [classified("infrastructure", "drains a Kubernetes node")];
  return none;
};

export const clusterTools: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del = words.some((w) => /^(delete|destroy|remove|rm|purge|uninstall)$/.test(w));
  if (!del) return none;
  if (c.name === "helm") return [classified("infrastructure", "uninstalls a Helm release")];
  return [
    classified(
      "infrastructure",
      words.some((w) => /^clusters?$/.test(w)) || /^(kind|minikube|k3d|eksctl)$/.test(c.name)
        ? "deletes a Kubernetes cluster"
        : "deletes cloud resources",
    ),
  ];
};

export const aws: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      "--region",
      "--profile",
      "--output",
      "--query",
      "--endpoint-url",
      "--bucket",
      "--key",
      "--instance-ids",
      "--db-instance-identifier",
      "--stack-name",
      "--table-name",
      "--cluster-name",
      "--function-name",
      "--name",
      "--include",
      "--exclude",
    ),
  );
  const [svc, verb] = o.operands;
  const out: Effect[] = [effect("network", "calls a cloud API", [])];
  if (svc === "s3" && (verb === "rm" || verb === "rb")) out.push(classified("infrastructure", "deletes object storage contents"));
  else if (svc === "s3" && verb === "sync" && has(o, "--delete"))
    out.push(classified("infrastructure", "deletes objects missing from the source"));
  else if (/^(batch-)?(delete|terminate|deregister|remove|purge)-/.test(verb ?? "") && svc !== "s3")
    out.push(classified("infrastructure", "deletes cloud resources"));
  else if (svc === "secretsmanager" && /^(put-secret-value|update-secret)$/.test(verb ?? ""))
    out.push(classified("infrastructure", "overwrites a stored secret"));
  else if (svc === "s3api" && /^delete-(bucket|objects)$/.test(verb ?? ""))
    out.push(classified("infrastructure", "deletes an object storage bucket's contents"));
  if (svc === "s3" && /^(cp|mv|sync)$/.test(verb ?? "") && /^s3:\/\//.test(o.operands.at(-1) ?? ""))
    out.push(
      effect(
        "upload",
        "sends files to object storage",
        at(
          c,
          o.operands.slice(2, -1).filter((a) => !a.startsWith("s3://")),
        ),
      ),
    );
  return out;
};

export const gsutil: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  if (ops[0] === "rsync" && c.args.includes("-d")) return [classified("infrastructure", "deletes objects missing from the source")];
  return ops.some((w) => /^(rm|rb)$/.test(w)) ? [classified("infrastructure", "deletes object storage contents")] : none;
};

export const gcloudAz: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  if (c.name === "gcloud" && words[0] === "storage" && words[1] === "rm")
    return [classified("infrastructure", "deletes object storage contents")];
  return words.some((w) => /^(delete|delete-batch|purge|untag)$/.test(w))
    ? [
        classified(
          "infrastructure",
          words.some((w) => /^(clusters?|aks)$/.test(w)) ? "deletes a Kubernetes cluster" : "deletes cloud resources",
        ),
      ]
    : none;
};

/** Backup tools: deleting, pruning or rewriting backups and their keys. */
export const backups: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del =
    (c.name === "borg" && /^(delete|prune|compact|recreate|break-lock)$/.test(words[0] ?? "")) ||
    (c.name === "restic" &&
      (/^(forget|prune)$/.test(words[0] ?? "") ||
        (words[0] === "key" && words[1] === "remove") ||
        c.args.includes("--remove-all") ||
        c.args.includes("--cleanup"))) ||
    (c.name === "velero" && (words.includes("delete") || words[0] === "uninstall"));
  if (del) return [classified("infrastructure", "deletes or rewrites backups")];
  // `restic backup -r rest:http://host/...`: the files go to a repository on another host.
  const o = parseOptions(c.args, set("-r", "--repo", "--password-file", "--tag", "--host", "-e", "--exclude"));
  if (
    c.name === "restic" &&
    words[0] === "backup" &&
    valuesOf(o, "-r", "--repo").some((r) => /^(rest:|sftp:|s3:|b2:|azure:|gs:|rclone:|https?:)/.test(r))
  ) {
    return [effect("network", "sends a backup to a host", []), effect("upload", "sends files to a host", at(c, o.operands.slice(1)))];
  }
  return none;
};

export const azcopy: Handler = (c) =>
  c.args[0] === "remove" || c.args.some((a) => /^--delete-destination(=true)?$/.test(a))
    ? [classified("infrastructure", "deletes object storage contents")]
    : none;

export const rclone: Handler = (c) =>
  /^(purge|delete|deletefile|rmdir|rmdirs|cleanup)$/.test(c.args.find((a) => !a.startsWith("-")) ?? "") || (c.args[0] === "sync" && false)
    ? [classified("infrastructure", "deletes remote storage")]
    : none;
export const s3cmd: Handler = (c) =>
  /^(del|rm|rb)$/.test(c.args.find((a) => !a.startsWith("-")) ?? "") && c.args.some((a) => /^(-r|--recursive|--force|-f)$/.test(a))
    ? [classified("infrastructure", "deletes an object storage bucket's contents")]
    : none;
export const mc: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del =
    /^(rm|rb)$/.test(words[0] ?? "") ||
    (words[0] === "admin" && words.some((w) => /^(delete|remove|disable|unset)$/.test(w))) ||
    (words[0] === "mirror" && c.args.includes("--remove"));
  return del ? [classified("infrastructure", "deletes object storage contents or users")] : none;
};
export const dropdb: Handler = () => [classified("infrastructure", "drops a database")];
export const redisCli: Handler = (c) =>
  c.args.some((a) => /^flush(all|db)$/i.test(a)) ? [classified("infrastructure", "flushes a database")] : none;

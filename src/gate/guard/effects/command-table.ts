// The command table: what each command does (network egress and to where, running fetched or
// inline code, privilege changes, deleting or overwriting what, turning a protection off,
// reading files), including the options that change it. One entry per command; rules.ts
// decides what the effects mean for the call.
import { INTERPRETERS, SHELLS } from "../command-names.js";
import type { ShellCommand } from "../shell/records.js";
import { none, set, type Handler } from "./commands/handler.js";
import * as files from "./commands/files.js";
import * as git from "./commands/git.js";
import * as infra from "./commands/infrastructure.js";
import * as later from "./commands/later.js";
import * as net from "./commands/network.js";
import * as priv from "./commands/privileges.js";
import { defaults } from "./commands/preferences.js";
import * as prot from "./commands/protections.js";
import { secretStore } from "./commands/secret-stores.js";
import * as sys from "./commands/system.js";
import type { Effect } from "./effect.js";

export { remoteCommand } from "./commands/network.js";

/** Network clients that fetch content (a pipe from one of them into a shell runs fetched code). */
export const FETCHERS: ReadonlySet<string> = set(
  "curl",
  "wget",
  "fetch",
  "aria2c",
  "http",
  "https",
  "xh",
  "lwp-request",
  "GET",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "openssl",
  "telnet",
  "tftp",
  "ftp",
);
/** Clients that send whatever they read to a peer (a pipe into one of them leaves the machine). */
export const SENDERS: ReadonlySet<string> = set(
  "curl",
  "wget",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "telnet",
  "openssl",
  "ssh",
  "scp",
  "sftp",
  "ftp",
  "tftp",
  "http",
  "https",
  "xh",
  "mail",
  "sendmail",
  "mutt",
  "aws",
  "gsutil",
  "rclone",
  "dig",
  "nslookup",
  "host",
  "ping",
  "drill",
);

// ---------------------------------------------------------------- the table

const READER_NAMES =
  "cat tac less more head tail nl strings od xxd hexdump base64 base32 jq yq cut sort uniq diff cmp zcat bzcat xzcat gzip bzip2 xz zip 7z openssl gpg ssh-keygen pr fold rev";
/** Programs that print or transform the content of the files they name (every file named is read: named-files.ts). */
export const READERS: ReadonlySet<string> = new Set(READER_NAMES.split(" "));

const alias = (names: string, h: Handler): [string, Handler][] => names.split(" ").map((n) => [n, h]);
const both =
  (a: Handler, b: Handler): Handler =>
  (c) => [...a(c), ...b(c)];

const reads = files.reader(set("-n", "-c", "-s", "-w", "-f", "-d", "-k", "-t", "-i", "-o", "-in", "-out", "--lines", "--bytes"));

/** Commands by bare name, each with the handler that reads its effects. */
export const COMMAND_EFFECTS: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ...alias("rm unlink rmdir srm", files.rm),
  ["find", files.find],
  ["shred", files.shred],
  ["truncate", files.truncate],
  ["dd", files.dd],
  ...alias("mkfs mke2fs mkswap wipefs fdisk sfdisk parted sgdisk blkdiscard", files.diskTool("writes a filesystem or partition table")),
  ...alias("debugfs xfs_db hdparm tune2fs resize2fs zerofree e2fsck fsck xfs_repair", files.diskEditor),
  ...alias("cp install ditto", files.copy),
  ["mv", files.mv],
  ["ln", files.ln],
  ["tee", files.tee],
  ["sed", files.sed],
  ["chmod", files.chmod],
  ...alias("chown chgrp", files.chown),
  ...alias(READER_NAMES, reads),
  ["gpg", both(reads, secretStore)],
  ["security", both(later.trustAnchor, secretStore)],
  ...alias("secret-tool pass kwallet-query", secretStore),
  ...alias("jq yq gojq jaq", files.jsonQuery),
  ...alias("grep egrep fgrep rg ag ack zgrep", files.grep),
  ...alias("awk gawk", files.reader(set("-F", "-v", "-f"), true)),
  ["tar", files.tar],
  ...alias("curl", net.curl),
  ...alias("wget", net.wget),
  ...alias("nc ncat netcat", net.netcat),
  ["socat", net.socat],
  ...alias("scp rsync sftp", net.remoteCopy),
  ...alias("dig nslookup host drill ping ping6 traceroute", net.dnsOrPing),
  ...alias("ssh telnet", net.ssh),
  ...alias(
    "systemctl service rc-service chkconfig update-rc.d launchctl",
    both(both(prot.serviceControl, sys.systemctlDisruption), later.unitFromPath),
  ),
  ["systemd-run", later.systemdRun],
  ...alias("trust certctl", later.trustAnchor),
  ...alias("ldapadd ldapmodify samba-tool", later.directoryAccounts),
  ...alias("kill pkill killall", both(prot.killer, sys.killDisruption)),
  ...alias("shutdown poweroff reboot halt init telinit", sys.power),
  ...alias("ip ifconfig ifdown nmcli", sys.networkDown),
  ...alias("userdel deluser chpasswd chpass passwd chage gpasswd newusers dscl sysadminctl", sys.accounts),
  ...alias("spctl csrutil mdatp tmutil log", prot.macProtections),
  ["defaults", defaults],
  ...alias("iptables ip6tables iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft", prot.iptables),
  ["nft", prot.nft],
  ["ufw", prot.ufw],
  ["setenforce", prot.setenforce],
  ...alias("aa-disable aa-complain aa-teardown apparmor_parser", prot.apparmorOff),
  ["auditctl", prot.auditctl],
  ["sysctl", prot.sysctl],
  ["journalctl", prot.journalctl],
  ["dmesg", prot.dmesg],
  ["history", prot.historyCmd],
  ...alias("unset export set declare typeset", prot.unsetOrExport),
  ...alias("useradd adduser usermod", both(priv.userAdmin, sys.accounts)),
  ...alias("insmod modprobe kmod kextload", priv.kernelModule),
  ["pw", both(priv.pw, sys.accounts)],
  ...alias("docker podman nerdctl", priv.container),
  ["setcap", priv.setcap],
  ...alias("lxc incus", priv.lxc),
  ["gcore", priv.gcore],
  ["alias", priv.shadowsPrivilege],
  ["nsenter", priv.nsenter],
  ...alias("terraform tofu terragrunt", infra.terraform),
  ["pulumi", infra.pulumi],
  ["kubectl", infra.kubectl],
  ...alias("helm eksctl kind minikube k3d doctl", infra.clusterTools),
  ["aws", infra.aws],
  ["gsutil", infra.gsutil],
  ...alias("gcloud az", infra.gcloudAz),
  ["rclone", infra.rclone],
  ...alias("borg restic velero", infra.backups),
  ["azcopy", infra.azcopy],
  ...alias("ab hping3 lp smbclient tailscale put ftp tftp lftp", net.fileSender),
  ["ztcp", net.ztcp],
  ["socket", net.socketCmd],
  ["sshfs", net.sshfs],
  ["code", net.codeTunnel],
  ["s3cmd", infra.s3cmd],
  ["mc", infra.mc],
  ["dropdb", infra.dropdb],
  ["redis-cli", infra.redisCli],
  ["git", git.git],
]);

/**
 * The commands the guard knows: the table's, shells, interpreters and what runs other commands.
 * Their path prefix is dropped (`/bin/rm` is `rm`) and a glob in command position is tried
 * against them (`/bin/r?` reads `rm`), the most destructive first.
 */
export const KNOWN_COMMANDS: readonly string[] = [
  ...new Set([
    ...[
      "rm",
      "dd",
      "mkfs",
      "chmod",
      "chown",
      "curl",
      "wget",
      "sh",
      "bash",
      "zsh",
      "dash",
      "ksh",
      "shred",
      "base64",
      "env",
      "sudo",
      "eval",
      "xargs",
      "parallel",
      "python",
      "python3",
      "perl",
      "nc",
      "ncat",
      "socat",
    ],
    ...COMMAND_EFFECTS.keys(),
    ...SHELLS,
    ...INTERPRETERS,
  ]),
];

/** The effects of one command from the table (a `mkfs.ext4` is read as `mkfs`). */
export function commandEffects(c: ShellCommand): Effect[] {
  const h = COMMAND_EFFECTS.get(c.name) ?? COMMAND_EFFECTS.get(c.name.replace(/\..*$/, ""));
  return h === undefined ? none : h(c);
}

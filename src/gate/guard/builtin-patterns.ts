// The guard's non-negotiable pattern tables: Guardian's destructive patterns, vaglio's
// forbidden paths and dangerous shell patterns, and a few of gavel's own. Policies add to them.

/** One built-in pattern: RE2 syntax, and where it comes from. */
export interface BuiltinPattern {
  pattern: string;
  source: "guardian" | "vaglio" | "gavel";
  why: string;
}

/**
 * Destructive and dangerous shell patterns, searched in every argument view (raw, decoded,
 * shell-normalised). Guardian's fork bomb `:(){:|:&};:` is written here with escapes: taken
 * as a regex its `|` would split it into two unrelated alternatives.
 */
export const DESTRUCTIVE_PATTERNS: readonly BuiltinPattern[] = [
  // Guardian writes `rm\s+-rf\s+/`, which also blocks `rm -rf /workspace/build`; gavel
  // anchors it at the root (a policy can add the broad form back).
  { pattern: String.raw`rm\s+-rf\s+/(\s|\*|$)`, source: "guardian", why: "recursive root delete" },
  { pattern: String.raw`(?i)(DROP|TRUNCATE)\s+TABLE`, source: "guardian", why: "destructive SQL" },
  { pattern: String.raw`:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}`, source: "guardian", why: "fork bomb" },
  { pattern: String.raw`curl.+(\|sh|\|bash)`, source: "guardian", why: "pipe to shell" },
  { pattern: String.raw`169\.254\.169\.254`, source: "guardian", why: "cloud metadata service IP" },
  { pattern: String.raw`chmod\s+777`, source: "guardian", why: "world-writable permission" },
  { pattern: String.raw`\brm\s+-rf?\s+/(\s|$)`, source: "vaglio", why: "rm -rf /" },
  { pattern: String.raw`\brm\s+-rf?\s+~(\s|$|/)`, source: "vaglio", why: "rm -rf ~" },
  { pattern: String.raw`\bmkfs\b`, source: "vaglio", why: "make a filesystem" },
  { pattern: String.raw`\bdd\s+.*\bof=/dev/`, source: "vaglio", why: "raw device write" },
  { pattern: String.raw`\bchmod\s+-?R?\s*0?77[0-9]\s+/`, source: "vaglio", why: "world-writable tree" },
  // gavel's own: what the normalised views make visible and the two tables above miss.
  {
    pattern: String.raw`\brm\s+-r\w*\s+(/\*?|~/?\*?|/root/?|/home/?|/etc/?|/usr/?|/var/?|/boot/?)(\s|$)`,
    source: "gavel",
    why: "recursive delete of a system tree",
  },
  { pattern: String.raw`--no-preserve-root`, source: "gavel", why: "rm without the root safeguard" },
  { pattern: String.raw`\b(curl|wget|fetch)\b.*\|\s*(sudo\s+)?(ba|z|da|k|fi)?sh\b`, source: "gavel", why: "download piped to a shell" },
  {
    pattern: String.raw`\bbase64\s+(-d|--decode|-D)\b.*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b`,
    source: "gavel",
    why: "decoded payload piped to a shell",
  },
  { pattern: String.raw`\b(sh|bash|zsh)\s+<\s*\(\s*(curl|wget)\b`, source: "gavel", why: "process substitution of a download" },
  {
    pattern: String.raw`(?i)\b(2852039166|0xa9fea9fe|0251\.0376\.0251\.0376|metadata\.google\.internal|fd00:ec2::254)\b`,
    source: "gavel",
    why: "cloud metadata service, other spellings",
  },
  { pattern: String.raw`\bshred\b.*\s/dev/`, source: "gavel", why: "device shred" },
  { pattern: String.raw`>\s*/dev/(sd|nvme|mmcblk|xvd|vd)`, source: "gavel", why: "redirect onto a block device" },
];

/** Forbidden paths, searched in every normalised path token (and every whole value). */
export const FORBIDDEN_PATHS: readonly BuiltinPattern[] = [
  // vaglio's `(^|/)\.ssh(/|$)` also blocks listing the directory and reading a public key
  // (`~/.ssh`, `id_rsa.pub`); gavel forbids what is in it except `*.pub` files.
  { pattern: String.raw`(^|/)\.ssh/(.*[^b]|.*[^u]b|.*[^p]ub|.*[^.]pub|b|ub|pub)$`, source: "vaglio", why: "ssh keys (not the .pub half)" },
  { pattern: String.raw`^/etc/(passwd|shadow|sudoers)`, source: "vaglio", why: "accounts" },
  { pattern: String.raw`^/etc/ssh(/|$)`, source: "vaglio", why: "ssh server keys" },
  { pattern: String.raw`^/root(/|$)`, source: "vaglio", why: "root's home" },
  { pattern: String.raw`^/boot(/|$)`, source: "vaglio", why: "boot loader" },
  { pattern: String.raw`^/sys(/|$)`, source: "vaglio", why: "kernel interface" },
  { pattern: String.raw`^/proc(/[0-9]|$)`, source: "vaglio", why: "other processes" },
  { pattern: String.raw`^/dev/(sd|nvme|mmcblk|loop)`, source: "vaglio", why: "block devices" },
  { pattern: String.raw`\.aws/credentials`, source: "vaglio", why: "cloud credentials" },
  { pattern: String.raw`\.config/[^/]+/credentials\.env`, source: "vaglio", why: "app credentials" },
  { pattern: String.raw`\.gnupg(/|$)`, source: "vaglio", why: "gpg keys" },
  { pattern: String.raw`^/proc/(self|thread-self)/(environ|mem|root|cwd|fd)`, source: "gavel", why: "own process secrets" },
  { pattern: String.raw`^/(var/)?run/secrets(/|$)`, source: "gavel", why: "Kubernetes service account token" },
  { pattern: String.raw`^/(var/)?run/docker\.sock$`, source: "gavel", why: "Docker socket" },
  { pattern: String.raw`\.kube/config$`, source: "gavel", why: "kubeconfig" },
];

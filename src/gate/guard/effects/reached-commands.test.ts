// Mechanisms read from the fifth held-out part's misses (issue 27, sixth round), each checked on
// forms the part did not hold: commands that other programs run once per item (GNU parallel, xargs
// with a replacement string), commands substituted inside arithmetic, git forms that discard work
// and git behind prefixes, a prefix command's option values, containers reached through docker's
// global options or LXD, the kernel's root helpers written, a process's memory dumped, and one
// finding per written destination; with the everyday look-alikes that stay allowed.
import { describe, expect, it } from "vitest";
import { decide, reasonOf } from "./decide-command.test-support.js";

const allowed = (command: string): boolean => decide(command).approved;
const flags = (command: string): string => (decide(command).flags ?? []).join(" ");

describe("commands other programs run, and git forms that discard work", () => {
  it("GNU parallel runs its command once per ::: item, stdin line or :::: file line, with {} and its kin replaced", () => {
    for (const c of [
      "parallel rm -rf ::: /etc",
      "parallel -j4 --eta rm -rf {} ::: build /usr",
      "parallel --jobs 2 sh -c 'rm -rf {}' ::: /var",
      "printf '/boot\\n' | parallel rm -rf",
      "parallel ::: 'rm -rf /opt'",
      "parallel rm -rf {//} ::: /srv/data",
    ])
      expect(reasonOf(c), c).toMatch(/^destruction: /);
    expect(flags("parallel git push --force origin {} ::: main")).toMatch(/git_history: force-pushes/);
    expect(allowed("parallel gzip ::: *.log")).toBe(true);
    expect(allowed("parallel -j8 convert {} {.}.png ::: *.jpg")).toBe(true);
    expect(allowed("find . -name '*.ts' | parallel wc -l")).toBe(true);
    expect(allowed("parallel --dry-run rm -rf ::: /")).toBe(true);
  });

  it("xargs puts each stdin line where its replacement string stands, inside a nested shell too; its option values are not the command", () => {
    for (const c of [
      "echo /etc | xargs -I{} sh -c 'rm -rf {}'",
      "echo /usr | xargs -I % bash -c 'rm -rf %'",
      "echo /var | xargs --replace=DIR rm -rf DIR",
      "echo /boot | xargs -i rm -rf {}",
      "echo /srv | xargs -d '\\n' -n 1 rm -rf",
      "printf 'rm -rf /opt\\n' | xargs -I{} bash -c {}",
    ])
      expect(reasonOf(c), c).toMatch(/^destruction: /);
    expect(allowed("ls *.txt | xargs -I{} cp {} backup/")).toBe(true);
    expect(allowed("echo a b | xargs -n1 echo")).toBe(true);
    expect(allowed("find . -name '*.o' | xargs -P4 -I{} rm {}")).toBe(true);
  });

  it("commands substituted inside arithmetic run", () => {
    expect(reasonOf("echo $(( $(rm -rf /etc) + 1 ))")).toMatch(/^destruction: /);
    expect(reasonOf("x=$((`rm -rf /usr` * 2))")).toMatch(/^destruction: /);
    expect(flags("echo $(( 1 + $(git reset --hard) ))")).toMatch(/git_history: /);
    expect(allowed("echo $(( $(wc -l < a.txt) + 1 ))")).toBe(true);
    expect(allowed("n=$((n + 1)); echo $n")).toBe(true);
  });

  it("git checkout forced or given paths, switch --discard-changes and worktree remove --force discard work; switching branches does not", () => {
    for (const c of [
      "git checkout -f develop",
      "git checkout origin/main src/app.ts",
      "git checkout HEAD --pathspec-from-file=list.txt",
      "git switch --discard-changes feature",
      "git switch -f main",
      "git worktree remove -f ../wt",
    ])
      expect(flags(c), c).toMatch(/^git_history: /);
    for (const c of [
      "git checkout main",
      "git checkout -b feature origin/feature",
      "git checkout --track origin/feature",
      "git checkout --track direct main",
      "git checkout --conflict merge main",
      "git switch -c feature",
      "git worktree remove ../wt",
      "git checkout main   # back to main",
    ])
      expect(flags(c), c).toBe("");
  });

  it("a prefix command's option values, leading assignments and git's global options do not hide the command", () => {
    for (const c of [
      "env -u HOME git reset --hard",
      "env -C /workspace git reset --hard",
      "sudo -D /workspace git reset --hard",
      "GIT_DIR=.git git reset --hard",
      "git --config-env core.x=X reset --hard",
      "timeout -s KILL 5 git reset --hard",
    ])
      expect(flags(c), c).toMatch(/git_history: /);
    expect(reasonOf("sudo -u deploy rm -rf /etc")).toMatch(/^destruction: /);
    expect(reasonOf("docker -H unix:///var/run/docker.sock run -v /:/host alpine")).toMatch(
      /^privilege_escalation: mounts the host's root/,
    );
    expect(allowed("docker --context prod ps")).toBe(true);
  });

  it("containers and the kernel reached another way: LXD privileged or host-mounting, a root helper the kernel runs, a process's memory dumped", () => {
    expect(reasonOf("incus config set web security.privileged true")).toMatch(/^privilege_escalation: runs a privileged container/);
    expect(reasonOf("lxc config device add web host disk source=/etc path=/mnt/etc")).toMatch(
      /^privilege_escalation: mounts the host's root/,
    );
    expect(reasonOf("echo /tmp/x > /sys/fs/cgroup/rdma/release_agent")).toMatch(
      /^privilege_escalation: .*a program the kernel runs as root/,
    );
    expect(reasonOf("echo '|/tmp/x %p' > /proc/sys/kernel/core_pattern")).toMatch(/^privilege_escalation: /);
    expect(reasonOf("gcore 4242")).toMatch(/^secrets: dumps a running process's memory/);
    expect(allowed("lxc launch ubuntu:22.04 web")).toBe(true);
    expect(allowed("lxc config device add web src disk source=/workspace/src path=/src")).toBe(true);
    expect(allowed("gcore --help")).toBe(true);
  });

  it("code written to a place that runs it is one finding for that destination, not one per level read", () => {
    expect(reasonOf("echo hi > /var/www/html/x.php")).toBe("persistence: writes code that runs later to a web root [command]");
  });
});

// What follows one attempt of a stream copy (ADR 0044): only two clean exits commit 0; a cut
// or failed attempt is tried again, and the last one commits its failure with why.
import { describe, expect, it } from "vitest";
import { afterAttempt, attemptProblem, execEndOf } from "./workspace-stream.js";

const ok = { code: 0 };

describe("workspace stream attempts", () => {
  it("reads exec's V1Status: Success is exit 0, an ExitCode cause its code, anything else (or no status) unknown", () => {
    expect(execEndOf({ status: "Success" })).toEqual({ code: 0 });
    expect(
      execEndOf({
        status: "Failure",
        message: "command terminated with non-zero exit code",
        details: { causes: [{ reason: "ExitCode", message: "2" }] },
      }),
    ).toEqual({ code: 2 });
    expect(execEndOf({ status: "Failure", message: "container not found" })).toEqual({ problem: "container not found" });
    expect(execEndOf(undefined)).toEqual({ problem: "the connection closed before the command's status" });
  });

  it("commits 0 only when the source sent the whole tar and the sink extracted it", () => {
    expect(afterAttempt({ source: ok, sink: ok, sourceErr: "" }, "w", 1, 3)).toEqual({ commit: 0 });
    // tar x may exit 0 on a tar cut at a member boundary: the source's end decides.
    const cut = { source: { problem: "the connection closed before the command's status" }, sink: ok, sourceErr: "" };
    expect(afterAttempt(cut, "w", 1, 3)).toEqual({
      retry: "tar in w's gavel-copy-source: the connection closed before the command's status",
    });
  });

  it("tries again until the last attempt, which commits the sink's code (1 when it has none) and says why", () => {
    const failed = { source: { code: 1 }, sink: { code: 2 }, sourceErr: "ls: cannot open directory 'workspace': Permission denied" };
    expect(afterAttempt(failed, "w", 2, 3)).toHaveProperty("retry");
    expect(afterAttempt(failed, "w", 3, 3)).toEqual({
      commit: 2,
      problem:
        "tar in w's gavel-copy-source: exit 1: ls: cannot open directory 'workspace': Permission denied; tar x in the copier: exit 2",
    });
    expect(afterAttempt({ source: ok, sink: { problem: 'pods "c" is forbidden' }, sourceErr: "" }, "w", 3, 3)).toEqual({
      commit: 1,
      problem: 'tar x in the copier: pods "c" is forbidden',
    });
    expect(attemptProblem({ source: ok, sink: ok, sourceErr: "noise" }, "w")).toBeUndefined();
  });
});

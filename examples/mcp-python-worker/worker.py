"""A worker gavel did not write: plain Python on the official MCP client (the `mcp` package
from PyPI). It finds its tools at GAVEL_MCP_URL, the MCP endpoint gavel runs in its pod
(ADR 0061): the built-in fs.read and fs.write, and the git server's tools as git.<tool>.
Every call it makes there goes through gavel's gate; it knows nothing else of gavel. A
denied call is an MCP tool result with is_error set and the decision as structured content."""
import asyncio
import json
import os
import subprocess

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

# The worker's repository, in the workspace volume agent.yaml mounts at /workspace. A directory
# of its own: git refuses a work tree whose top another user owns (the volume's root may be).
REPO = "/workspace/repo"


def text_of(result):
    """The text blocks of a tool result, joined."""
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def outcome(result):
    """'denied {decision}' for a refused call (what the gate said, as the endpoint reports it), else its text."""
    if not result.is_error:
        return text_of(result).strip()
    decision = result.structured_content or {}
    return "denied " + json.dumps({k: decision.get(k) for k in ("blocked_by", "check", "reason")})


def own_repository():
    """The agent's own checkout, made without any tool (as a clone would be): one commit, a secret beside it."""
    def git(*args):
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"git {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")

    os.makedirs(REPO, exist_ok=True)
    git("init", "-q", "-b", "main")
    git("config", "user.name", "Python worker")
    git("config", "user.email", "worker@example.invalid")
    with open(os.path.join(REPO, "README.md"), "w") as f:
        f.write("# status notes\n")
    with open(os.path.join(REPO, ".gitignore"), "w") as f:
        f.write(".env\n")
    git("add", "README.md", ".gitignore")
    git("commit", "-q", "-m", "initial")
    # Reading this through a tool is the gate's business.
    with open(os.path.join(REPO, ".env"), "w") as f:
        f.write("SECRET_TOKEN=not-a-real-one\n")


async def main():
    own_repository()
    repo = {"repo_path": REPO}
    async with streamable_http_client(os.environ["GAVEL_MCP_URL"]) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools: " + ", ".join(sorted(t.name for t in tools.tools)), flush=True)
            steps = [
                ("git log", "git.git_log", {**repo, "max_count": 1}),
                ("write", "fs.write", {"path": f"{REPO}/notes.md", "content": "status: done\n"}),
                ("git add", "git.git_add", {**repo, "files": ["notes.md"]}),
                ("git status", "git.git_status", repo),
                ("git commit", "git.git_commit", {**repo, "message": "notes: status done"}),
                ("secret read", "fs.read", {"path": f"{REPO}/.env"}),
                ("read back", "fs.read", {"path": f"{REPO}/notes.md"}),
            ]
            for label, tool, args in steps:
                result = await session.call_tool(tool, args)
                # One line per call: the e2e test and a reader of `gavel logs` see what came back.
                print(f"{label}: " + " | ".join(outcome(result).splitlines()), flush=True)


asyncio.run(main())

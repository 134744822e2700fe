#!/usr/bin/env bash
# `make demo`: gavel's main job end to end in local mode (Docker, state in memory): a worker
# fails validation once, its judges' reasoning becomes the feedback of iteration 2, and it
# passes (examples/refine-once); then the inner loop: a scripted worker whose risky tool calls
# are blocked by the guard and whose harmless ones a rule-judge approves (examples/guarded-tools).
# `make demo` has already run `make build images`.
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
echo "gavel demo: environment"
echo "  docker:      $(docker version --format '{{.Server.Version}}')"
echo "  nats-server: $(nats-server --version 2>/dev/null || echo 'not installed (not needed for this demo)')"
# gavel/example-guarded-tools:dev comes from make images.
log "building the example worker image gavel/example-sum-writer:dev"
docker build -q --label "$HARNESS_LABEL" --build-arg BASE_IMAGE="$BASE_IMAGE" -t gavel/example-sum-writer:dev examples/refine-once >/dev/null
echo "  images:      $(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^gavel/' | grep -v rootfs | sort | tr '\n' ' ')"
echo
echo "\$ bin/gavel run -f examples/refine-once/agent.yaml -f judges/command-judge/agent.yaml -f judges/rule-judge/agent.yaml"
echo
bin/gavel run -f examples/refine-once/agent.yaml -f judges/command-judge/agent.yaml -f judges/rule-judge/agent.yaml
echo
echo "gavel demo, part 2: the inner loop (guard, then tool-call judges, over NATS)"
echo
echo "\$ bin/gavel run -f examples/guarded-tools/agent.yaml -f examples/guarded-tools/policy.yaml -f judges/rule-judge/agent.yaml"
echo
bin/gavel run -f examples/guarded-tools/agent.yaml -f examples/guarded-tools/policy.yaml -f judges/rule-judge/agent.yaml

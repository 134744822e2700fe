# The container's PID 1: runs server-everything as its child and hands SIGTERM and SIGINT to it
# as SIGINT (the server's own shutdown), so the pod stops at once when the worker ends; Node as
# PID 1 would ignore SIGTERM until the kubelet's grace period ran out. The server's exit is the
# container's, so a crash restarts the sidecar (restartPolicy Always).
node /opt/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js "$@" &
child=$!
trap 'kill -INT "$child" 2>/dev/null' TERM INT
status=0
# A trapped signal ends `wait` early: wait again until the server itself has ended.
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
  status=$?
done
exit "$status"

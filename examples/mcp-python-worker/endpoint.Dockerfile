# The in-pod MCP endpoint of examples/mcp-python-worker (the Agent's spec.mcp_endpoint.image,
# ADR 0061): gavel's agent runtime (gavel/agent:dev and this machine's node, as the runtime
# images are built) on Debian bookworm's python3 and git, with the same site/ as the worker:
# mcp-server-git, the stdio server the Agent's spec.mcp_servers runs here, beside the endpoint.
FROM gavel/rootfs:bookworm-python3-git
COPY site /opt/python
COPY node /usr/local/bin/node
COPY --from=gavel/agent:dev /opt/gavel /opt/gavel
ENV NODE_ENV=production PYTHONPATH=/opt/python PYTHONDONTWRITEBYTECODE=1
WORKDIR /opt/gavel
ENTRYPOINT ["node", "/opt/gavel/dist/src/agent/main.js"]

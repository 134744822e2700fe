# The controller image (gavel/controller): `gavel controller` — the compiled CLI and the
# production dependencies it imports, on gavel's base image, running as a non-root user.
# Build from the repository root after `make build` (test/harness/images.sh does):
#   docker build --build-arg BASE_IMAGE=gavel/base:bookworm-node20 -f deploy/controller.Dockerfile -t gavel/controller:dev .
ARG BASE_IMAGE=gavel/base:bookworm-node20

# Stage 1: only the packages the CLI's code imports (found from its compiled imports, with
# the worker image's selection script) and their dependencies as resolved in package-lock.json.
FROM ${BASE_IMAGE} AS deps
WORKDIR /build
COPY package-lock.json ./
COPY node_modules ./node_modules
COPY src/agent/copy-deps.mjs ./
COPY dist/src ./dist/src
RUN node copy-deps.mjs /build /out /build/dist/src/cli/main.js

# Stage 2: the runtime. Nothing is written at run time, so the pod can mount the root
# filesystem read-only (charts/gavel sets readOnlyRootFilesystem).
FROM ${BASE_IMAGE}
WORKDIR /opt/gavel
ENV NODE_ENV=production
# package.json marks the compiled files as ES modules.
COPY package.json ./
COPY --from=deps /out/node_modules ./node_modules
COPY dist/src ./dist/src
# gavel-launch (src/launcher/), which the controller keeps in a ConfigMap that worker and judge
# pods mount and run their program under, so their log keeps stdout apart from stderr.
COPY dist/bin/gavel-launch ./dist/bin/gavel-launch
# A numeric user, so that the kubelet can check runAsNonRoot without a passwd entry.
USER 65532:65532
ENTRYPOINT ["node", "/opt/gavel/dist/src/cli/main.js"]
CMD ["controller"]

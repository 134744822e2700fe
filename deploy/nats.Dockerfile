# The NATS image of the chart (gavel/nats): nats-server, built by test/harness/build-nats.sh
# from the Go module proxy at the version pinned in test/harness/lib.sh, on gavel's base
# image, running as a non-root user. The build context is a directory holding the binary
# (test/harness/images.sh makes it):
#   docker build --build-arg BASE_IMAGE=gavel/base:bookworm-node20 -f deploy/nats.Dockerfile -t gavel/nats:dev CONTEXT
ARG BASE_IMAGE=gavel/base:bookworm-node20
FROM ${BASE_IMAGE}
COPY nats-server /usr/local/bin/nats-server
# A numeric user, so that the kubelet can check runAsNonRoot without a passwd entry.
USER 65532:65532
EXPOSE 4222 8222
ENTRYPOINT ["/usr/local/bin/nats-server"]

# syntax=docker/dockerfile:1
#
# vfsmount as a container image: a static binary on a small Debian base with
# fuse3 (fusermount3, for a non-root user) and bubblewrap (the shell tool's
# sandbox).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t vfsmount .
#   docker run --rm --device /dev/fuse --cap-add SYS_ADMIN \
#       -v "$PWD:/src:ro" vfsmount mcp --mount type=git,src=/src,dst=/repo
#
# To mount a workspace other containers see, see deploy/kubernetes/sidecar.yaml.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: a static binary, independent of the base image's libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/vfsmount ./cmd/vfsmount \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/vfsmount-fsmonitor ./cmd/vfsmount-fsmonitor \
    && /out/vfsmount version

FROM debian:bookworm-slim
# ca-certificates: git mounts clone https URLs. bash: the shell tool runs
# commands with bash -c inside bubblewrap.
RUN apt-get update \
    && apt-get install -y --no-install-recommends fuse3 bubblewrap ca-certificates bash \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/vfsmount /usr/local/bin/vfsmount
# git's fsmonitor hook for writable git mounts, found beside vfsmount.
COPY --from=build /out/vfsmount-fsmonitor /usr/local/bin/vfsmount-fsmonitor
# Git mounts clone URL sources here; mount a volume to keep clones.
ENV XDG_CACHE_HOME=/var/cache
RUN mkdir -p /var/cache/vfsmount
ENTRYPOINT ["vfsmount"]
CMD ["help"]

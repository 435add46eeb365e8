#!/bin/bash
# Build the stichtag image; `make image` runs this after installing the builder, then the
# smoke test (tests/integration/test_image.py).
#
#   ops/image/build.sh                          base from Debian packages, then the Containerfile
#   BASE=python:3.11-slim ops/image/build.sh    a registry base instead (needs registry access)
#   IMAGE=localhost/stichtag:dev ops/image/build.sh   another tag
#   REBUILD_BASE=1 ops/image/build.sh           rebuild the local base image too
#   NO_CACHE=1 ops/image/build.sh               rebuild every layer (to measure a cold build)
#
# Prints the wall time of both steps and the image size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
podman=$here/podman.sh

IMAGE=${IMAGE:-localhost/stichtag:latest}
BASE=${BASE:-localhost/stichtag-base:bookworm}
# The CA bundle pip trusts inside the build, passed as a build secret (never stored in a
# layer): the host's, so that a TLS-intercepting egress proxy the host trusts (as in the
# development sandbox) is trusted there too. On other hosts it is the same Debian bundle.
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

# Rootful only: mmdebstrap's root mode chroots, and rootless podman would need subuid/subgid
# ranges and user namespaces, which were not tried here.
[ "$(id -u)" = 0 ] || {
    echo "error: make image builds with rootful podman: run it as root" >&2
    exit 1
}
command -v podman >/dev/null || {
    echo "error: podman is not installed (make image installs Debian's podman, runc and mmdebstrap)" >&2
    exit 1
}

t0=$(date +%s)
case $BASE in
    # a local base is never pulled: there is no registry that has it
    localhost/*) BASE_TAG=$BASE "$here/build-base.sh"; args=(--pull=never) ;;
    *) args=(--pull=missing) ;;
esac
t1=$(date +%s)

[ "${NO_CACHE:-0}" = 1 ] && args+=(--no-cache)
[ -s "$CA_BUNDLE" ] && args+=(--secret "id=ca_bundle,src=$CA_BUNDLE")
"$podman" build "${args[@]}" --build-arg BASE="$BASE" --tag "$IMAGE" \
    --file "$repo/Containerfile" "$repo"
t2=$(date +%s)

size=$("$podman" image inspect --format '{{.Size}}' "$IMAGE")
echo "built $IMAGE on $BASE: base step $((t1 - t0)) s, image build $((t2 - t1)) s," \
     "size $((size / 1000000)) MB"

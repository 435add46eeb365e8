#!/bin/bash
# Build the base image localhost/stichtag-base:bookworm from Debian packages alone.
#
# Why: a machine that reaches deb.debian.org but no container registry (docker.io) cannot
# pull python:3.11-slim. mmdebstrap assembles a minimal Debian bookworm root file system
# (python3 3.11, venv, CA certificates) and `podman import` turns its tarball into an image.
# The Containerfile takes it with --build-arg BASE=localhost/stichtag-base:bookworm.
#
# Usage: ops/image/build-base.sh            (skips if the image exists)
#        REBUILD_BASE=1 ops/image/build-base.sh
# Needs root (mmdebstrap's root mode chroots; podman runs rootful), mmdebstrap, podman.
set -euo pipefail
podman=$(cd "$(dirname "$0")" && pwd)/podman.sh

BASE_TAG=${BASE_TAG:-localhost/stichtag-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

if [ "${REBUILD_BASE:-0}" != 1 ] && "$podman" image exists "$BASE_TAG"; then
    echo "base image $BASE_TAG exists (REBUILD_BASE=1 rebuilds it)"
    exit 0
fi
command -v mmdebstrap >/dev/null || { echo "error: mmdebstrap is not installed (make image installs it: apt-get install mmdebstrap)" >&2; exit 1; }

tarball=$(mktemp /var/tmp/stichtag-base.XXXXXX.tar)
trap 'rm -f "$tarball"' EXIT INT TERM

# minbase: Priority required packages + apt; we add only what the image needs at run time:
#   python3 python3-venv  Python 3.11 (bookworm's) and the venv/ensurepip the app lives in
#   ca-certificates       pip reaches PyPI over TLS during the build
# The dpkg path-excludes leave out documentation, man pages and translations (copyright
# files stay); apt's lists and caches are removed by mmdebstrap's default cleanup.
mmdebstrap --variant=minbase --mode=root --format=tar \
    --include=python3,python3-venv,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log' \
    bookworm "$tarball" \
    "deb $MIRROR bookworm main" \
    "deb $MIRROR bookworm-updates main" \
    "deb $SECURITY bookworm-security main"

"$podman" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --message "mmdebstrap bookworm minbase + python3 python3-venv ca-certificates" \
    "$tarball" "$BASE_TAG"
"$podman" image ls "$BASE_TAG"

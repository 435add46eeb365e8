#!/bin/bash
# podman as `make image` and tests/integration/test_image.py run it: Debian's podman 4.3,
# rootful, with the configuration that works in the sandbox stichtag is developed in (a VM
# without systemd, a cgroup v1/v2 hybrid layout, no CAP_SYS_RESOURCE). On an ordinary
# Debian host the same settings are harmless.
#
#   ops/image/podman.sh <podman arguments>       e.g. ops/image/podman.sh images
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# runtime runc, events to a file, cgroupfs: see the comments in containers.conf. The
# variable replaces /etc/containers/containers.conf for these commands only.
export CONTAINERS_CONF=$here/containers.conf

# Resource limits for every container and every build step. podman's defaults
# (nofile=1048576, nproc=4194304) exceed the hard limits of a process without
# CAP_SYS_RESOURCE, and the runtime then fails with "error setting rlimit type 7 (6):
# operation not permitted". So: the caller's own hard open-files limit, and at most
# kernel.pid_max processes (here any nproc above pid_max=32768 was refused, even below
# `ulimit -Hu`=96365).
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
pidmax=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
[ "$nofile" = unlimited ] && nofile=1048576
[ "$nproc" = unlimited ] && nproc=$pidmax
[ "$nproc" -gt "$pidmax" ] && nproc=$pidmax
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

case ${1:-} in
    run | create | build) sub=$1; shift; exec podman "$sub" "${limits[@]}" "$@" ;;
    *) exec podman "$@" ;;
esac

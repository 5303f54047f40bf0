#!/usr/bin/env bash
# Builds the live adapter's control agent (cmd/rcconform-agent) against
# libibverbs, as a user would on a device's host. CI has no RDMA device:
# this proves the agent compiles and vets with Debian's libibverbs-dev
# and rdma-core, and that the binary starts and says so.
#   bash ci/agent-build.sh [OUT]      (default OUT: out/rcconform-agent)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/rcconform-agent}"

if ! dpkg -s libibverbs-dev rdma-core >/dev/null 2>&1 || ! command -v gcc >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "agent-build: libibverbs-dev, rdma-core and gcc are needed; run as root to install them" >&2
    exit 1
  fi
  echo "== installing libibverbs-dev, rdma-core and gcc"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends libibverbs-dev rdma-core gcc libc6-dev >/dev/null
fi

echo "== building the agent with -tags verbs (cgo, libibverbs)"
mkdir -p "$(dirname "$out")"
export CGO_ENABLED=1
go vet -tags verbs ./cmd/rcconform-agent
go build -tags verbs -o "$out" ./cmd/rcconform-agent

# Without a device the agent must start, look, and say there is none;
# with one it serves (until the timeout stops it).
set +e
msg=$(timeout 5 "$out" --listen=127.0.0.1:0 2>&1)
code=$?
set -e
echo "$out: exit $code: $msg"
case "$code" in
  1) ;;   # no RDMA device here: expected in CI
  124) ;; # a device: it was serving
  0) echo "agent-build: the agent exited 0 without serving" >&2; exit 1 ;;
  *) echo "agent-build: unexpected exit status $code" >&2; exit 1 ;;
esac
echo "agent-build: ok"

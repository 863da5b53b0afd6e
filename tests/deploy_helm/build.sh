#!/usr/bin/env bash
# Build helm from its published Go module, pinned by our own go.mod/go.sum under gobuild/helm
# (no upstream source or binary is committed), as tests/realk8s/build.sh builds kube-apiserver.
#
#   tests/deploy_helm/build.sh           build unless the cached binary matches the pins; the
#                                        last line of stdout is the path of the helm binary
#   tests/deploy_helm/build.sh --check   exit 0 (and print the path) if the cached binary
#                                        matches the pins, 1 otherwise; never builds
#   tests/deploy_helm/build.sh --force   rebuild even when the cache is up to date
#
# The binary lands in ${KQ_CACHE_DIR:-$HOME/.cache/kq}/helm/<version>/bin/helm. The Go module
# and build caches stay in their default locations, so a rebuild after a cache wipe is fast.
#
# To move to another release: change HELM_VERSION below and the require line in
# gobuild/helm/go.mod, then run `go mod tidy` in gobuild/helm.
set -euo pipefail

HELM_VERSION=v4.3.1

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GOBUILD="$HERE/gobuild/helm"
CACHE_ROOT="${KQ_CACHE_DIR:-$HOME/.cache/kq}/helm/$HELM_VERSION"
BIN_DIR="$CACHE_ROOT/bin"
STAMP="$BIN_DIR/.stamp"

mode=build
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --force) mode=force ;;
  *) echo "usage: $0 [--check|--force]" >&2; exit 2 ;;
esac

# What the cached binary must have been built from: the pin and our module files.
wanted_stamp() {
  echo "helm $HELM_VERSION"
  (cd "$GOBUILD" && sha256sum go.mod go.sum)
}

up_to_date() {
  [[ -x "$BIN_DIR/helm" && -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$(wanted_stamp)" ]]
}

if [[ "$mode" == check ]]; then
  if up_to_date; then echo "$BIN_DIR/helm"; exit 0; fi
  exit 1
fi

mkdir -p "$CACHE_ROOT"
# One build at a time (parallel test sessions may all call us).
exec 9>"$CACHE_ROOT/.lock"
flock 9

if [[ "$mode" == build ]] && up_to_date; then
  echo "helm: $HELM_VERSION is up to date" >&2
  echo "$BIN_DIR/helm"
  exit 0
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "helm: the Go toolchain (go >= 1.26) is required" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"

STAGE="$(mktemp -d "$CACHE_ROOT/.build.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
chmod 755 "$STAGE"
started=$SECONDS

# The version variables helm's own Makefile sets (its git commit is not in the module proxy).
echo "helm: building helm $HELM_VERSION with $(go version)" >&2
(cd "$GOBUILD" &&
  go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
    -o "$STAGE/helm" helm.sh/helm/v4/cmd/helm)

# Sanity-check what we built before publishing it.
"$STAGE/helm" version --template '{{.Version}}' | grep -qx "$HELM_VERSION" ||
  { echo "helm: built binary reports $("$STAGE/helm" version)" >&2; exit 1; }

wanted_stamp >"$STAGE/.stamp"
rm -rf "$BIN_DIR"
mv "$STAGE" "$BIN_DIR"
trap - EXIT
echo "helm: built in $((SECONDS - started))s into $BIN_DIR" >&2
echo "$BIN_DIR/helm"

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
LABEL=helm
GO_WANTED="go >= 1.26"
CACHE_ROOT="${KQ_CACHE_DIR:-$HOME/.cache/kq}/helm/$HELM_VERSION"
BIN_DIR="$CACHE_ROOT/bin"
BINARIES=(helm)
RESULT="$BIN_DIR/helm"
# shellcheck source=../gobuild.sh
source "$HERE/../gobuild.sh"

# What the cached binary must have been built from: the pin and our module files.
wanted_stamp() {
  echo "helm $HELM_VERSION"
  (cd "$GOBUILD" && sha256sum go.mod go.sum)
}

gobuild_start "$@"

# The version variables helm's own Makefile sets (its git commit is not in the module proxy).
echo "helm: building helm $HELM_VERSION with $(go version)" >&2
(cd "$GOBUILD" &&
  go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
    -o "$STAGE/helm" helm.sh/helm/v4/cmd/helm)

# Sanity-check what we built before publishing it.
"$STAGE/helm" version --template '{{.Version}}' | grep -qx "$HELM_VERSION" ||
  { echo "helm: built binary reports $("$STAGE/helm" version)" >&2; exit 1; }

gobuild_publish

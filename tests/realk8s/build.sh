#!/usr/bin/env bash
# Build a real kube-apiserver and etcd from their published Go modules, pinned by our own
# go.mod/go.sum under gobuild/ (no upstream source or binary is committed).
#
#   tests/realk8s/build.sh           build unless the cached binaries match the pins; the last
#                                    line of stdout is the bin directory
#   tests/realk8s/build.sh --check   exit 0 (and print the bin directory) if the cached binaries
#                                    match the pins, 1 otherwise; never builds
#   tests/realk8s/build.sh --force   rebuild even when the cache is up to date
#
# Binaries land in ${KQ_CACHE_DIR:-$HOME/.cache/kq}/realk8s/<k8s version>/bin. The Go module and
# build caches stay in their default locations, so a rebuild after a cache wipe is fast.
#
# To move to another release: change the versions below, the require/replace lines in
# gobuild/*/go.mod, then in each gobuild/* directory run `go mod tidy -e` (-e because tidy also
# walks the tests of k8s.io/kubernetes, which import staging modules some proxies do not serve;
# the kube-apiserver binary does not need them).
set -euo pipefail

K8S_VERSION=v1.32.13
K8S_GIT_COMMIT=6172d7357c6287643350a4fc7e048f24098f2a1b # tag v1.32.13 of kubernetes/kubernetes
K8S_BUILD_DATE=2026-02-26T20:22:27Z                     # the upstream release build's date
ETCD_VERSION=v3.5.24                                    # hack/lib/etcd.sh of k8s v1.32.13
ETCD_GIT_SHA=e72f3c2a                                   # tag server/v3.5.24 of etcd-io/etcd

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GOBUILD="$HERE/gobuild"
LABEL=realk8s
GO_WANTED="go >= 1.24"
CACHE_ROOT="${KQ_CACHE_DIR:-$HOME/.cache/kq}/realk8s/$K8S_VERSION"
BIN_DIR="$CACHE_ROOT/bin"
BINARIES=(kube-apiserver etcd)
RESULT="$BIN_DIR"
# shellcheck source=../gobuild.sh
source "$HERE/../gobuild.sh"

# What the cached binaries must have been built from: the pins and our module files.
wanted_stamp() {
  echo "kube-apiserver $K8S_VERSION $K8S_GIT_COMMIT $K8S_BUILD_DATE"
  echo "etcd $ETCD_VERSION $ETCD_GIT_SHA"
  (cd "$GOBUILD" && sha256sum kube-apiserver/go.mod kube-apiserver/go.sum etcd/go.mod etcd/go.sum)
}

gobuild_start "$@"

# The version variables hack/lib/version.sh sets; kubectl reads major/minor from /version.
k8s_minor="${K8S_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  k8s_ldflags+=" -X '$pkg.gitVersion=$K8S_VERSION'"
  k8s_ldflags+=" -X '$pkg.gitMajor=1'"
  k8s_ldflags+=" -X '$pkg.gitMinor=$k8s_minor'"
  k8s_ldflags+=" -X '$pkg.gitCommit=$K8S_GIT_COMMIT'"
  k8s_ldflags+=" -X '$pkg.gitTreeState=clean'"
  k8s_ldflags+=" -X '$pkg.buildDate=$K8S_BUILD_DATE'"
done

echo "realk8s: building kube-apiserver $K8S_VERSION with $(go version)" >&2
(cd "$GOBUILD/kube-apiserver" &&
  go build -trimpath -tags selinux,notest -ldflags "$k8s_ldflags" \
    -o "$STAGE/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)

echo "realk8s: building etcd $ETCD_VERSION" >&2
(cd "$GOBUILD/etcd" &&
  go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_GIT_SHA" \
    -o "$STAGE/etcd" go.etcd.io/etcd/server/v3)

# Sanity-check what we built before publishing it.
"$STAGE/kube-apiserver" --version | grep -qx "Kubernetes $K8S_VERSION" ||
  { echo "realk8s: kube-apiserver reports $("$STAGE/kube-apiserver" --version)" >&2; exit 1; }
"$STAGE/etcd" --version | grep -q "etcd Version: ${ETCD_VERSION#v}" ||
  { echo "realk8s: etcd reports $("$STAGE/etcd" --version)" >&2; exit 1; }

gobuild_publish

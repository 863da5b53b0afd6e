#!/usr/bin/env bash
# Build kq's image (the repository's Containerfile) with no container registry: the base is a
# Debian bookworm root filesystem made by debootstrap from Debian's archive, imported into
# buildah's storage as localhost/kq-base:bookworm; buildah then builds the Containerfile on it
# (chroot isolation: no container runtime or daemon is needed to build).
#
#   deploy/image/build.sh                      build localhost/kq:latest and localhost/kq:<version>
#   deploy/image/build.sh --save FILE          ... and write it to FILE as a docker-archive
#                                              (docker load, kind load image-archive, skopeo copy)
#   deploy/image/build.sh --refresh-base       debootstrap the base again (it is cached)
#
# Needs root (debootstrap chroots; buildah's storage is rootful), Debian's buildah and
# debootstrap (installed with apt-get when missing), Debian's archive and PyPI. The base
# tarball is cached in ${KQ_CACHE_DIR:-$HOME/.cache/kq}/image/. The last line of stdout is the
# image's name.
set -euo pipefail

SUITE=bookworm
MIRROR="${KQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_IMAGE="localhost/kq-base:$SUITE"
IMAGE=localhost/kq

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${KQ_CACHE_DIR:-$HOME/.cache/kq}/image"
BASE_TAR="$CACHE/debian-$SUITE-minbase.tar"

save=""
refresh=0
while (($#)); do
  case "$1" in
    --save) save="${2:?--save needs a file}"; shift 2 ;;
    --refresh-base) refresh=1; shift ;;
    *) echo "usage: $0 [--save FILE] [--refresh-base]" >&2; exit 2 ;;
  esac
done

if [[ "$(id -u)" != 0 ]]; then
  echo "image: needs root (debootstrap chroots into the base; buildah's storage is rootful)" >&2
  exit 1
fi
missing=()
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "image: installing ${missing[*]} from Debian's archive" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi
export BUILDAH_ISOLATION=chroot

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO/pyproject.toml" | head -1)"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
started=$SECONDS

# 1. The base root filesystem: Debian's minimal variant, without documentation, locales or
#    package lists (the Containerfile's apt-get update fetches those again).
if [[ "$refresh" == 1 || ! -f "$BASE_TAR" ]]; then
  echo "image: debootstrap $SUITE (minbase) from $MIRROR" >&2
  stage="$(mktemp -d "$CACHE/.rootfs.XXXXXX")"
  trap 'rm -rf "$stage"' EXIT
  debootstrap --variant=minbase "$SUITE" "$stage/rootfs" "$MIRROR" >"$stage/debootstrap.log" 2>&1 ||
    { tail -20 "$stage/debootstrap.log" >&2; exit 1; }
  rm -rf "$stage"/rootfs/var/cache/apt/* "$stage"/rootfs/var/lib/apt/lists/* \
    "$stage"/rootfs/usr/share/doc/* "$stage"/rootfs/usr/share/man/* \
    "$stage"/rootfs/usr/share/locale/* "$stage"/rootfs/var/log/*
  tar --numeric-owner --sort=name -C "$stage/rootfs" -cf "$stage/base.tar" .
  mv "$stage/base.tar" "$BASE_TAR"
  rm -rf "$stage"
  trap - EXIT
fi

# 2. The base image, imported again whenever the tarball changed.
base_sum="$(sha256sum "$BASE_TAR" | cut -d' ' -f1)"
have_sum="$(buildah inspect --type image --format '{{index .Docker.Config.Labels "dev.kq.base-sha256"}}' \
  "$BASE_IMAGE" 2>/dev/null || true)"
if [[ "$have_sum" != "$base_sum" ]]; then
  echo "image: importing the base as $BASE_IMAGE" >&2
  buildah rmi "$BASE_IMAGE" >/dev/null 2>&1 || true
  ctr="$(buildah from scratch)"
  buildah add --quiet "$ctr" "$BASE_TAR" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash --label "dev.kq.base-sha256=$base_sum" "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE_IMAGE" >/dev/null
fi

# 3. kq's image. A CA bundle for pip goes in as a build secret (for TLS-inspecting proxies).
cert="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
[[ -s "$cert" ]] && secret=(--secret "id=pip-cert,src=$cert")
echo "image: building $IMAGE:latest ($version) from Containerfile" >&2
previous="$(buildah inspect --type image --format '{{.FromImageID}}' "$IMAGE:latest" 2>/dev/null || true)"
buildah bud --quiet --layers=false --pull=never "${secret[@]}" \
  --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  --tag "$IMAGE:latest" --tag "$IMAGE:$version" \
  --file "$REPO/Containerfile" "$REPO" >&2
# The image this one replaced, now untagged (kept if anything still uses it).
if [[ -n "$previous" ]]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi

if [[ -n "$save" ]]; then
  mkdir -p "$(dirname "$save")"
  rm -f "$save"
  buildah push --quiet "$IMAGE:latest" "docker-archive:$save:kq:latest" >&2
  echo "image: saved kq:latest to $save" >&2
fi
echo "image: built in $((SECONDS - started))s" >&2
echo "$IMAGE:latest"

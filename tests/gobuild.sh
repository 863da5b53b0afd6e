# Shared steps of the builds from pinned Go modules: tests/realk8s/build.sh and
# tests/deploy_helm/build.sh source this file (it does nothing by itself).
#
# The caller sets LABEL (the log prefix), GO_WANTED (the Go it needs, for the error message),
# CACHE_ROOT, BIN_DIR, BINARIES (the names it builds into BIN_DIR), RESULT (what the last line
# of stdout names) and defines wanted_stamp (what the binaries must be built from); then
#   gobuild_start "$@"   parses [--check|--force]; answers --check; takes the build lock;
#                        exits when the cached binaries match; puts go on PATH; makes $STAGE
#   ...                  builds the binaries into $STAGE and checks them
#   gobuild_publish      stamps $STAGE and moves it to $BIN_DIR, printing $RESULT

gobuild_up_to_date() {
  local name
  for name in "${BINARIES[@]}"; do
    [[ -x "$BIN_DIR/$name" ]] || return 1
  done
  [[ -f "$BIN_DIR/.stamp" && "$(cat "$BIN_DIR/.stamp")" == "$(wanted_stamp)" ]]
}

gobuild_start() {
  local mode=build
  case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    --force) mode=force ;;
    *) echo "usage: $0 [--check|--force]" >&2; exit 2 ;;
  esac

  if [[ "$mode" == check ]]; then
    if gobuild_up_to_date; then echo "$RESULT"; exit 0; fi
    exit 1
  fi

  mkdir -p "$CACHE_ROOT"
  # One build at a time (parallel test sessions may all call us).
  exec 9>"$CACHE_ROOT/.lock"
  flock 9

  if [[ "$mode" == build ]] && gobuild_up_to_date; then
    echo "$LABEL: ${BINARIES[*]} up to date in $BIN_DIR" >&2
    echo "$RESULT"
    exit 0
  fi

  if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    PATH="/usr/local/go/bin:$PATH"
  fi
  command -v go >/dev/null 2>&1 ||
    { echo "$LABEL: the Go toolchain ($GO_WANTED) is required" >&2; exit 1; }
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"

  STAGE="$(mktemp -d "$CACHE_ROOT/.build.XXXXXX")"
  trap 'rm -rf "$STAGE"' EXIT
  chmod 755 "$STAGE"
  GOBUILD_STARTED=$SECONDS
}

gobuild_publish() {
  wanted_stamp >"$STAGE/.stamp"
  rm -rf "$BIN_DIR"
  mv "$STAGE" "$BIN_DIR"
  trap - EXIT
  echo "$LABEL: built in $((SECONDS - GOBUILD_STARTED))s into $BIN_DIR" >&2
  echo "$RESULT"
}

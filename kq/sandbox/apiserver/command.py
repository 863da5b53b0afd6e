"""``kq apiserver``: serve the embedded API server in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the server's options to the ``apiserver`` subcommand and bind it."""
    parser.add_argument("--data-dir", type=Path, default=Path(".kq/apiserver"))
    parser.add_argument("--port", type=int, default=0, help="port (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--token", help="require this bearer token (default: one generated, kept in the data dir)"
    )
    parser.add_argument(
        "--history", type=int, default=10_000, help="changes kept for watch resumption"
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=15.0, help="seconds between watch bookmarks"
    )
    parser.add_argument(
        "--enable-fault-injection",
        action="store_true",
        help="serve the test hooks /kq/faults, /kq/compact and /kq/drop-watches",
    )
    parser.add_argument("--faults", help="fault injection settings as JSON")
    parser.add_argument(
        "--no-builtin-crds", action="store_true", help="do not register kq's own CRDs"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from kq import heap
    from kq.crds import builtin_crds
    from kq.sandbox.apiserver.faults import Faults
    from kq.sandbox.apiserver.server import Options, start

    options = Options(
        data_dir=Path(args.data_dir),
        port=args.port,
        host=args.host,
        token=args.token,
        history=args.history,
        bookmark_interval=args.bookmark_interval,
        fault_injection=args.enable_fault_injection,
    )
    running = await start(options, [] if args.no_builtin_crds else builtin_crds())
    # The store, loaded, is the bulk of a long-lived heap: with the collector's defaults a
    # full collection under load stops the server for hundreds of milliseconds.
    heap.settle()
    if args.faults:
        running.server.faults = Faults.from_json(json.loads(args.faults))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"kq apiserver ready at {running.url} kubeconfig {running.kubeconfig}", flush=True)
    await stop.wait()
    await running.stop()
    print("kq apiserver stopped", file=sys.stderr)
    return 0

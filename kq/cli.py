"""The ``kq`` command: controller, embedded sandbox, API server and diagnostics."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kq import __version__
from kq.app import run_command
from kq.config import ConfigError, KqConfig
from kq.config_file import load_config
from kq.observability.logs import add_log_level_option
from kq.plugins import build_plugin_manager, plugin_names

Command = Callable[[argparse.Namespace], int]

# The embedded default's commands, configured only when chosen: `kq run` in a production pod
# must not load the simulated cluster and the embedded API server.
SANDBOX_COMMANDS = {
    "dev": (
        "kq.sandbox.dev",
        "run the embedded API server, a simulated cluster and the controller",
    ),
    "apiserver": (
        "kq.sandbox.apiserver.command",
        "serve the embedded Kubernetes API server alone, in the foreground",
    ),
    "demo": (
        "kq.sandbox.demo",
        "run a scripted end-to-end scenario on the embedded default, then exit",
    ),
}

# Offline tools, also configured only when chosen: they import nothing `kq run` needs.
TOOL_COMMANDS = {
    "explain": (
        "kq.kubectl_kq.command",
        "why a workload waits, from kq's last decision (as kubectl kq explain)",
    ),
    "simulate": (
        "kq.simulate.command",
        "replay a workload trace on the admission core on a virtual clock (what-if)",
    ),
}


def _report_lines(config: KqConfig) -> list[str]:
    pm = build_plugin_manager(config.plugins)
    lines = [f"kq {__version__}", f"plugins: {', '.join(plugin_names(pm)) or 'none'}"]
    for contribution in pm.hook.kq_report_header(config=config):
        lines.extend([contribution] if isinstance(contribution, str) else contribution)
    return lines


def cmd_version(args: argparse.Namespace) -> int:
    print("\n".join(_report_lines(load_config(args.config))))
    return 0


def _chosen_command(argv: Sequence[str] | None) -> str | None:
    """The subcommand named on the command line, before parsing it in full."""
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kq",
        description=(
            "Kubernetes-native job queueing that speaks Kueue's API (kueue.x-k8s.io): "
            "decides when a batch job may start and on which flavor of nodes."
        ),
    )
    parser.add_argument("--version", action="version", version=f"kq {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    version = commands.add_parser(
        "version", help="print kq's version and the plugins that load with this configuration"
    )
    version.add_argument("--config", type=Path, help="kq configuration file (YAML)")
    version.set_defaults(func=cmd_version)

    run = commands.add_parser(
        "run", help="run the kq controller against a cluster (kubeconfig or in-cluster)"
    )
    run.add_argument("--config", type=Path, help="kq configuration file (YAML)")
    run.add_argument("--kubeconfig", type=Path, help="kubeconfig to use instead of in-cluster")
    add_log_level_option(run)
    run.add_argument(
        "--dashboard-address", default="", metavar="HOST:PORT",
        help="serve the read-only web dashboard there (off unless given)",
    )  # fmt: skip
    run.set_defaults(func=run_command)

    chosen = _chosen_command(argv)
    for name, (module, help_text) in {**SANDBOX_COMMANDS, **TOOL_COMMANDS}.items():
        sub = commands.add_parser(name, help=help_text)
        if name == chosen:
            importlib.import_module(module).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except ConfigError as exc:
        print(f"kq: configuration error: {exc}", file=sys.stderr)
        return 2

"""The ``kq`` command: controller, embedded sandbox, API server and diagnostics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kq import __version__
from kq.app import run_command
from kq.config import ConfigError, KqConfig, load_config
from kq.plugins import build_plugin_manager, plugin_names
from kq.sandbox.apiserver.command import configure as configure_apiserver
from kq.sandbox.demo import configure as configure_demo
from kq.sandbox.dev import configure as configure_dev

Command = Callable[[argparse.Namespace], int]


def _report_lines(config: KqConfig) -> list[str]:
    pm = build_plugin_manager(config.plugins)
    lines = [f"kq {__version__}", f"plugins: {', '.join(plugin_names(pm)) or 'none'}"]
    for contribution in pm.hook.kq_report_header(config=config):
        lines.extend([contribution] if isinstance(contribution, str) else contribution)
    return lines


def cmd_version(args: argparse.Namespace) -> int:
    print("\n".join(_report_lines(load_config(args.config))))
    return 0


def build_parser() -> argparse.ArgumentParser:
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
    run.set_defaults(func=run_command)

    dev = commands.add_parser(
        "dev", help="run the embedded API server, a simulated cluster and the controller"
    )
    configure_dev(dev)

    apiserver = commands.add_parser(
        "apiserver", help="serve the embedded Kubernetes API server alone, in the foreground"
    )
    apiserver.add_argument("--data-dir", type=Path, default=Path(".kq/apiserver"))
    apiserver.add_argument("--port", type=int, default=0, help="port (0: any free port)")
    configure_apiserver(apiserver)

    demo = commands.add_parser(
        "demo", help="run a scripted end-to-end scenario on the embedded default, then exit"
    )
    configure_demo(demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except ConfigError as exc:
        print(f"kq: configuration error: {exc}", file=sys.stderr)
        return 2

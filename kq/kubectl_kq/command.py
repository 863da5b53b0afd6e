"""``kq explain workload NAME``: the same explanation as ``kubectl kq explain workload``."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=("workload", "wl"), help="what to explain")
    parser.add_argument("name")
    parser.add_argument("-n", "--namespace")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--context")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kq.kubectl_kq.main import main  # the plugin's client stack, only when chosen

    argv = ["explain", "workload", args.name]
    for flag in ("namespace", "kubeconfig", "context"):
        value = getattr(args, flag)
        if value:
            argv += [f"--{flag}", value]
    return main(argv)

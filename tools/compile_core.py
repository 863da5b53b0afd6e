"""Compile the admission core with mypyc, in place (``make compile``; ``make test`` and
``make demo`` run it).

The core is pure, fully typed Python; compiled, mode A spends about a fifth less CPU per
admission. It stays optional: without a C compiler or Python's headers this says so and
exits 0, and kq runs from its sources (``kq.native`` also falls back to them when a source
changed after the build). Prints which core ``import kq`` will run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "kq" / "native.manifest"
TEMP = "build/mypyc-temp"
PLUGINS = ROOT / "plugins"
"""Where ``kq_plugins`` lives: its compiled modules are named from here, and built in place."""
GROUP = "kq_core"
"""mypyc's shared library (``kq_core__mypyc``), beside ``kq/``: the compiled modules import it."""

PACKAGES = ("kq/scheduler", "kq/queue", "kq/cache")
MODULES = (
    "kq/api/interning.py",
    "kq/workload/resources.py",
    "kq/workload/info.py",
    # Not the package itself: mypyc would set its __path__ beside the shared library.
    "plugins/kq_plugins/preemption/common.py",
    "plugins/kq_plugins/preemption/classic.py",
    "plugins/kq_plugins/preemption/fair.py",
)
"""Most of what mode A spends its time in, preemption included (the core calls it for every
head that needs it). ``kq.api`` stays Python: every layer imports its types, a compiled class
cannot be subclassed or patched, and compiling it gained nothing; only its one function that
every try calls is compiled."""


def sources() -> list[Path]:
    found = [path for package in PACKAGES for path in sorted((ROOT / package).glob("*.py"))]
    return found + [ROOT / module for module in MODULES]


def module_name(path: Path) -> str:
    parts = path.relative_to(PLUGINS if path.is_relative_to(PLUGINS) else ROOT).with_suffix("")
    names = parts.parts
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def can_compile() -> str:
    """Why not, or ``""`` when a C compiler and Python's headers are here."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python.h (the python3-dev package)"
    return ""


def up_to_date() -> bool:
    """The manifest lists exactly today's core and no source changed since it was built."""
    with warnings.catch_warnings():  # importing kq warns of the very staleness checked here
        warnings.simplefilter("ignore")
        from kq.native import stale
    if not MANIFEST.is_file():
        return False
    names = [module_name(path) for path in sources()]
    return MANIFEST.read_text().split() == names and not stale(MANIFEST, names, ROOT)


def clean() -> None:
    """Remove every compiled module, so ``import kq`` runs the sources."""
    MANIFEST.unlink(missing_ok=True)
    built = ROOT.glob(f"{GROUP}__mypyc*.so"), ROOT.glob("kq/**/*.so"), PLUGINS.glob("**/*.so")
    for path in [found for paths in built for found in paths]:
        path.unlink()


def build() -> None:
    """mypyc through setuptools' Distribution directly: ``setup()`` would read pyproject.toml,
    which the setuptools bundled with venvs cannot parse (an SPDX license string)."""
    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]

    paths = [str(path.relative_to(ROOT)) for path in sources()]
    dist = Distribution(
        {
            "name": "kq-core",
            "ext_modules": mypycify(paths, opt_level="3", group_name=GROUP),
            "package_dir": {"kq_plugins": str(PLUGINS.relative_to(ROOT) / "kq_plugins")},
            "script_args": ["--quiet", "build_ext", "--inplace", "--build-temp", TEMP],
        }
    )
    dist.parse_command_line()
    dist.run_commands()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled core")
    parser.add_argument("--if-stale", action="store_true", help="only when a source changed")
    args = parser.parse_args(argv)
    if args.if_stale and not args.clean and up_to_date():
        return 0
    clean()
    if args.clean:
        print("kq core: python (compiled modules removed)")
        return 0
    why = can_compile()
    if why:
        print(f"kq core: python ({why}; nothing compiled)")
        return 0
    started = time.monotonic()
    os.chdir(ROOT)  # mypyc writes build/ and finds pyproject's [tool.mypy] in the cwd
    try:
        build()
    except (Exception, SystemExit) as failure:  # distutils reports a failed gcc as SystemExit
        clean()
        print(f"kq core: python (compiling failed: {failure})")
        return 0
    MANIFEST.write_text("\n".join(module_name(path) for path in sources()) + "\n")
    check = [sys.executable, "-c", "import kq; print(kq.CORE)"]
    core = subprocess.run(check, capture_output=True, text=True, check=False).stdout.strip()
    took = time.monotonic() - started
    print(f"kq core: {core or 'python'} ({len(sources())} modules, {took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

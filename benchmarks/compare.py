"""``--compare REF``: one benchmark on this tree and on another git revision, interleaved.

The other revision is checked out in a git worktree outside the repository (kept between
runs, under the system's temporary directory), and its benchmark runs with that tree first
on ``sys.path``, so its own ``kq`` is what it measures. Runs alternate (this, that, this,
...) so both see the same noise; the ratios of the medians are what to read.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

Figures = Callable[[Mapping[str, Any]], dict[str, float]]
"""The figures of one run's ``--json`` report worth a ratio, by name (lower is better)."""


def load() -> str:
    """The machine's load, and the core this tree runs, as the figures should carry them."""
    one, five, fifteen = os.getloadavg()
    cpus = os.cpu_count()
    return f"loadavg {one:.2f} {five:.2f} {fifteen:.2f} on {cpus} CPUs ({core(ROOT)} core)"


def worktree(ref: str) -> Path:
    """A worktree at ``ref``, made once per commit and reused."""
    sha = _git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    path = Path(tempfile.gettempdir()) / f"kq-compare-{sha[:12]}"
    if not (path / "kq").is_dir():
        _git("worktree", "add", "--detach", str(path), sha)
    return path


def core(tree: Path) -> str:
    """Which admission core ``tree`` runs, as its own ``kq`` says (``kq.native`` decides;
    revisions before it run Python)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tree), str(tree / "plugins"))))
    ask = "import kq; print(getattr(kq, 'CORE', 'python'))"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", ask],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "python"


def match_core(tree: Path) -> None:
    """Compile ``tree``'s core when this tree runs a compiled one and ``tree`` can build its
    own: the ratios then compare the code, not a build against sources."""
    tool = tree / "tools" / "compile_core.py"
    if core(ROOT) == "compiled" and tool.is_file():
        command = [sys.executable, str(tool), "--if-stale"]
        subprocess.run(command, cwd=tree, stdout=subprocess.DEVNULL, check=False)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout


# The installed ``kq`` distribution names this tree's plugins: another revision must see its
# own, which ``_entry_points`` writes beside this ``sitecustomize``. Being on PYTHONPATH, it
# runs in the benchmark and in every Python process it starts (a controller, a server).
_SITECUSTOMIZE = """
import importlib.metadata as md, os
site = os.path.dirname(os.path.abspath(__file__))
everything = md.distributions
def distributions(**kwargs):
    for dist in everything(**kwargs):
        if dist.metadata["Name"] != "kq" or str(dist.locate_file("")).startswith(site):
            yield dist
md.distributions = distributions
"""


def _entry_points(tree: Path) -> Path:
    """A dist-info for ``tree``'s own ``kq`` entry points; returns the directory holding it."""
    digest = hashlib.sha256(str(tree).encode()).hexdigest()[:12]
    site = Path(tempfile.gettempdir()) / f"kq-compare-site-{digest}"
    info = site / "kq-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    points = project.get("entry-points", {}).get("kq", {})
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kq\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(
        "[kq]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
    )
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return site


def environment(tree: Path) -> dict[str, str]:
    """The environment a Python process needs to run ``tree``'s own ``kq`` and plugins."""
    site = _entry_points(tree)
    path = os.pathsep.join(str(p) for p in (site, tree, tree / "plugins"))
    return dict(os.environ, PYTHONPATH=path)


def _run(tree: Path, script: str, args: list[str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = environment(tree)
        command = [sys.executable, str(tree / script), *args, "--json", out.name]
        done = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, check=False)
        # A run that wrote its figures and then failed a check (a range spec) still counts.
        text = Path(out.name).read_text()
        if not text:  # its stderr, above, says why (a REF older than the script's --json?)
            raise SystemExit(f"{script} in {tree} wrote no figures (exit {done.returncode})")
        report: dict[str, Any] = json.loads(text)
        return report


def compare(
    script: str, args: list[str], ref: str, rounds: int, figures: Figures
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Print each round's figures and the ratios of the medians (this / REF); returns the
    reports, (this, REF) per round, for the caller's own checks."""
    other = worktree(ref)
    match_core(other)
    print(f"== compare: this tree vs {ref} ({other}), {rounds} interleaved rounds ==")
    print(f"core: this {core(ROOT)}, REF {core(other)}")
    print(f"before: {load()}", flush=True)
    pairs = []
    for round_ in range(rounds):
        mine = _run(ROOT, script, args)
        theirs = _run(other, script, args)
        pairs.append((mine, theirs))
        a, b = figures(mine), figures(theirs)
        line = "  ".join(f"{k} {a[k]:.1f}/{b[k]:.1f}" for k in a)
        print(f"  round {round_ + 1} (this/REF): {line}", flush=True)
    print(f"after:  {load()}")
    print(f"  {'figure':<34} {'this':>10} {'REF':>10} {'ratio':>7}")
    for name in figures(pairs[0][0]):
        this = statistics.median(figures(m)[name] for m, _ in pairs)
        that = statistics.median(figures(t)[name] for _, t in pairs)
        ratio = this / that if that else float("nan")
        print(f"  {name:<34} {this:10.1f} {that:10.1f} {ratio:7.2f}")
    return pairs

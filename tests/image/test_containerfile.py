"""The Containerfile, read statically (no engine needed): what `make image` builds is a small
non-root image of kq installed from this repository with the pinned constraints, `kq run` as
its entrypoint, no build tools left, and a temporary directory that deploy/'s read-only root
filesystem leaves writable. tests/image/test_image.py builds and runs it (make test-image)."""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from kq.config import Webhook
from tests.harness import REPO
from tests.image.containerfile import DOCKERIGNORE, Containerfile, Stage, parse

BUILD_TOOLS = re.compile(
    r"^(gcc.*|g\+\+.*|clang.*|cpp.*|make|build-essential|.*-dev|python3-pip|python3-venv|"
    r"python3-setuptools|git|curl|wget)$"
)


def apt_packages(stage: Stage) -> list[str]:
    """Every package an `apt-get install` in the stage names."""
    packages = []
    for run in stage.all("RUN"):
        for command in re.split(r"&&|;", run.arguments):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                after = words[words.index("install") + 1 :]
                packages += [w for w in after if not w.startswith("-")]
    return packages


def deployment_container() -> dict[str, Any]:
    [deployment] = [
        d for d in yaml.safe_load_all((REPO / "deploy" / "deployment.yaml").read_text()) if d
    ]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def final(containerfile: Containerfile) -> Stage:
    return containerfile.stages[-1]


def test_stages_build_on_debian_bookworm_slim_by_default() -> None:
    containerfile = parse()
    assert containerfile.args["BASE_IMAGE"] == "docker.io/library/debian:bookworm-slim"
    assert [s.base for s in containerfile.stages] == ["${BASE_IMAGE}", "${BASE_IMAGE}"]
    assert containerfile.stages[0].name == "build"
    assert final(containerfile).name is None


def test_the_final_stage_runs_kq_run_as_a_numeric_non_root_user() -> None:
    stage = final(parse())
    [user] = stage.all("USER")
    uid, _, gid = user.arguments.partition(":")
    assert uid.isdigit(), "runAsNonRoot needs a numeric USER"
    assert int(uid) != 0
    assert gid.isdigit()
    assert int(gid) != 0
    [entrypoint] = stage.all("ENTRYPOINT")
    assert entrypoint.exec_form() == ["kq", "run"]
    # The Deployment runs `kq run --config ...`: kq must be on the image's PATH.
    command = deployment_container()["command"]
    assert command[:2] == ["kq", "run"]
    assert "/opt/kq/bin" in stage.env()["PATH"].split(":")


def test_kq_is_installed_from_the_repository_with_the_constraints_and_binary_wheels() -> None:
    build = parse().stages[0]
    copied = [c.arguments.split() for c in build.all("COPY")]
    sources = {source for words in copied for source in words[:-1]}
    assert {"pyproject.toml", "constraints.txt", "kq", "plugins"} <= sources
    [install] = [r for r in build.all("RUN") if "pip install" in r.arguments]
    assert "PIP_CONSTRAINT=/src/constraints.txt" in install.arguments
    for flag in ("--no-cache-dir", "--only-binary=:all:"):
        assert flag in install.arguments
    assert "pip uninstall --yes --quiet pip setuptools" in install.arguments


def test_only_the_virtual_environment_leaves_the_build_stage() -> None:
    stage = final(parse())
    copies = [c.arguments for c in stage.all("COPY")]
    assert copies == ["--from=build /opt/kq /opt/kq"]
    for add in stage.all("ADD"):
        raise AssertionError(f"unexpected ADD in the final stage: {add.arguments}")


def test_the_final_stage_installs_python_and_openssl_and_no_build_tools() -> None:
    stage = final(parse())
    packages = apt_packages(stage)
    assert sorted(packages) == ["openssl", "python3"]
    assert not [p for p in packages if BUILD_TOOLS.match(p)]
    [install] = [r for r in stage.all("RUN") if "apt-get install" in r.arguments]
    assert "--no-install-recommends" in install.arguments
    for cache in ("/var/lib/apt/lists/*", "/var/cache/apt/*"):
        assert cache in install.arguments, f"{cache} is left in the image"


def test_a_read_only_root_filesystem_works() -> None:
    """Python writes no bytecode, and deploy/ mounts writable what kq writes: the webhook
    certificate directory and /tmp (the default temporary directory: the metrics certificate)."""
    stage = final(parse())
    env = stage.env()
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert "TMPDIR" not in env
    mounts = {m["mountPath"] for m in deployment_container()["volumeMounts"]}
    assert {Webhook().cert_dir, "/tmp"} <= mounts
    assert deployment_container()["securityContext"]["readOnlyRootFilesystem"] is True
    build = parse().stages[0]
    assert any("compileall" in r.arguments for r in build.all("RUN"))


def test_the_build_context_holds_what_the_containerfile_copies() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*", "everything is ignored but what the image needs"
    allowed = {p.removeprefix("!") for p in patterns if p.startswith("!")}
    sources = {
        source
        for stage in parse().stages
        for copy in stage.all("COPY")
        if not copy.arguments.startswith("--from=")
        for source in copy.arguments.split()[:-1]
    }
    assert sources == allowed
    assert "**/__pycache__" in patterns

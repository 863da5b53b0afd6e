"""The repository's Containerfile, parsed into stages of instructions (enough for our tests)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import REPO

CONTAINERFILE = REPO / "Containerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    """Upper case: FROM, RUN, COPY, ..."""
    arguments: str
    """The rest of the instruction, continuation lines joined with a space."""

    def exec_form(self) -> list[str]:
        """The JSON array of an exec-form ENTRYPOINT or CMD."""
        value = json.loads(self.arguments)
        assert isinstance(value, list)
        return [str(v) for v in value]


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for word in shlex.split(instruction.arguments):
                name, _, value = word.partition("=")
                out[name] = value
        return out


@dataclass
class Containerfile:
    args: dict[str, str]
    """Global ARGs (before the first FROM) and their defaults."""
    stages: list[Stage]


def instructions(text: str) -> list[Instruction]:
    out = []
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            logical += stripped[:-1].strip() + " "
            continue
        logical += stripped
        keyword, _, arguments = logical.partition(" ")
        out.append(Instruction(keyword.upper(), arguments.strip()))
        logical = ""
    assert not logical, "the Containerfile ends inside a continued instruction"
    return out


def parse(path: Path = CONTAINERFILE) -> Containerfile:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in instructions(path.read_text(encoding="utf-8")):
        if instruction.keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", instruction.arguments, re.IGNORECASE)
            assert match, instruction
            stages.append(Stage(match.group(1), match.group(2)))
        elif not stages and instruction.keyword == "ARG":
            name, _, default = instruction.arguments.partition("=")
            args[name] = default
        else:
            assert stages, f"{instruction.keyword} before the first FROM"
            stages[-1].instructions.append(instruction)
    return Containerfile(args, stages)

"""Every `llmcost` command the README shows runs, as written and with --json."""

import json
import shlex
from pathlib import Path

import pytest

from llmcost.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_commands() -> list[list[str]]:
    """The `llmcost ...` lines of the README's bash blocks, continuation lines joined."""
    cmds, in_bash, buf = [], False, ""
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_bash = line.strip() == "```bash"
            continue
        if not in_bash:
            continue
        buf += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        if buf.strip().startswith("llmcost "):
            cmds.append(shlex.split(buf.split("#")[0])[1:])
        buf = ""
    return cmds


COMMANDS = readme_commands()


def test_the_readme_shows_every_subcommand():
    shown = {c[0] for c in COMMANDS}
    # every subcommand of the parser is shown (list aside)
    from llmcost.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    assert set(sub) - {"list"} <= shown
    assert len(COMMANDS) >= 12


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:3]) for c in COMMANDS])
def test_readme_command_runs(argv, capsys):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip() and "Traceback" not in out + err
    assert main(argv + ["--json"]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))

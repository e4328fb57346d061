"""binder/: what repo2docker builds (Binder, BinderHub, JupyterHub) must install and start.

The pins must be exact, resolvable by pip for Binder's Python (runtime.txt), and inside
pyproject.toml's ranges, so the Binder image runs what the tests run.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
APP_STACK = {"numpy", "pandas", "scipy", "jupyterlab", "ipywidgets", "plotly", "anywidget",
             "voila", "ipykernel", "jinja2"}


def pins() -> dict[str, Version]:
    out = {}
    for n, line in enumerate((BINDER / "requirements.txt").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==", \
            f"requirements.txt line {n}: {line!r} is not an exact pin (name==version)"
        name = canonicalize_name(req.name)
        assert name not in out, f"requirements.txt pins {name} twice"
        out[name] = Version(spec[0].version)
    return out


def pyproject_requirements() -> list[Requirement]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in meta["dependencies"] + meta["optional-dependencies"]["app"]]


def test_requirements_pin_the_whole_app_stack_exactly():
    p = pins()
    assert APP_STACK <= set(p), f"not pinned: {sorted(APP_STACK - set(p))}"


def test_binders_python_is_one_pyproject_allows():
    from packaging.specifiers import SpecifierSet
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(wanted).contains(runtime.removeprefix("python-")), (runtime, wanted)
    # tomllib (these tests) and the pinned numpy need 3.11: the floor says so
    assert not SpecifierSet(wanted).contains("3.10"), wanted


def test_pins_agree_with_pyproject_ranges():
    p = pins()
    reqs = pyproject_requirements()
    assert reqs, "pyproject.toml lists no dependencies"
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name in p, f"{name} is a dependency in pyproject.toml but not pinned for Binder"
        assert req.specifier.contains(p[name], prereleases=True), \
            f"binder pins {name}=={p[name]}, outside pyproject.toml's {req}"


def test_pins_resolve_for_binders_python(tmp_path):
    runtime = (BINDER / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(3\.\d+)", runtime)
    assert m, f"runtime.txt must read python-3.X, got {runtime!r}"
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
         "--python-version", m.group(1), "--only-binary=:all:", "--target", str(tmp_path / "t"),
         "-r", str(BINDER / "requirements.txt"), "--report", str(report), "--quiet"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    chosen = {canonicalize_name(i["metadata"]["name"]): Version(i["metadata"]["version"])
              for i in json.loads(report.read_text())["install"]}
    assert chosen == pins()


def test_postbuild_installs_the_package_and_the_server_config():
    script = (BINDER / "postBuild").read_text()
    assert script.startswith("#!/usr/bin/env bash") and "\nset -e\n" in script
    assert re.search(r"pip install --no-deps \.$", script, re.M)
    assert re.search(r"^python -m llmcost.server.jupyter_config jupyter_config.json$", script, re.M)
    conf = json.loads((ROOT / "jupyter_config.json").read_text())
    assert conf["ServerApp"]["jpserver_extensions"] == {"voila.server_extension": True,
                                                        "llmcost.server": True}


def test_jupyter_config_install_merges_into_an_existing_file(tmp_path):
    from llmcost.server.jupyter_config import install
    (tmp_path / "jupyter_config.json").write_text(json.dumps(
        {"ServerApp": {"port_retries": 3, "default_url": "/lab"}, "LabApp": {"collaborative": True}}))
    target = install(ROOT / "jupyter_config.json", tmp_path)
    got = json.loads(target.read_text())
    ours = json.loads((ROOT / "jupyter_config.json").read_text())
    assert got["LabApp"] == {"collaborative": True}                    # kept
    assert got["ServerApp"]["port_retries"] == 3                       # kept
    assert got["ServerApp"]["default_url"] == ours["ServerApp"]["default_url"]   # ours wins
    assert got["MappingKernelManager"] == ours["MappingKernelManager"]

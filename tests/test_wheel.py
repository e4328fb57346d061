"""The package works from a wheel: build it, install it in a scratch venv, load the catalogs."""

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_the_catalogs(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(ROOT)], check=True)
    wheel = next(dist.glob("llmcost-*.whl"))

    # A scratch venv without the checkout: llmcost comes only from the wheel; numpy and
    # pandas are borrowed from this environment through a path entry (no network needed).
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "borrowed_deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                    "-q", str(wheel)], check=True)

    env = {k: x for k, x in os.environ.items() if k not in ("PYTHONPATH", "LLMCOST_DATA")}
    probe = ("import json, llmcost, llmcost.catalog as c; "
             "print(json.dumps({'file': llmcost.__file__, 'data': str(c.data_dir()), "
             "'gpus': len(c.gpus()), 'h100': c.gpu('h100').bf16_dense_tflops, "
             "'params': c.model('llama3-405b').params, "
             "'report': __import__('llmcost.review.report', fromlist=['x']).render_report("
             "__import__('llmcost.review.report', fromlist=['x']).ReportScenario(), title='t', "
             "share_url=None)[:15], "
             "'bundle': __import__('llmcost.apps.assets', fromlist=['x']).bundle_version()}))")
    out = subprocess.run([str(py), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=True).stdout
    got = json.loads(out)
    assert str(env_dir) in got["file"] and str(env_dir) in got["data"]
    assert got["gpus"] >= 10 and got["h100"] == 989.4 and abs(got["params"] / 405e9 - 1) < 0.01
    # the report's template travels in the wheel, and the apps' plotly.js bundle
    assert got["report"].lower().startswith("<!doctype html>")
    from llmcost.apps import assets
    assert got["bundle"] == assets.bundle_version()

    cli = subprocess.run([str(env_dir / "bin" / "llmcost"), "flops", "--model", "llama3-8b", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["params"] > 8e9

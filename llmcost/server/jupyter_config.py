"""``python -m llmcost.server.jupyter_config [FILE] [CONFIG_DIR]``: install the repository's
``jupyter_config.json`` where Jupyter Server reads it (binder/postBuild runs this).

Jupyter reads ``jupyter_config.json`` from its config path (``sys.prefix/etc/jupyter``
among others), not from the directory it starts in, and reads only the extension list
from ``jupyter_server_config.d``. So the file is merged into
``CONFIG_DIR/jupyter_config.json`` (default ``sys.prefix/etc/jupyter``), keeping any
setting already there that ours does not name.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def merge(base: dict, ours: dict) -> dict:
    out = dict(base)
    for key, value in ours.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def install(source: Path, config_dir: Path) -> Path:
    config_dir.mkdir(parents=True, exist_ok=True)
    target = config_dir / "jupyter_config.json"
    current = json.loads(target.read_text()) if target.exists() else {}
    target.write_text(json.dumps(merge(current, json.loads(source.read_text())), indent=2) + "\n")
    return target


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    source = Path(argv[0]) if argv else Path("jupyter_config.json")
    config_dir = Path(argv[1]) if len(argv) > 1 else Path(sys.prefix) / "etc" / "jupyter"
    print(f"llmcost: Jupyter configuration written to {install(source, config_dir)}")


if __name__ == "__main__":
    main()

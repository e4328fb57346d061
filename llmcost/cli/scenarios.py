"""Scenarios from ``--query`` and ``--scenario`` (and ``--model-config``), as the
subcommands that read the apps' links take them, and several answers side by side."""

from __future__ import annotations

import json
from dataclasses import replace

from .. import _validate as v
from .. import catalog
from ..training import hf_config


def _scenarios_from_args(a):
    """The scenario file (if any), then the query on top; a query with ``b.``/``c.`` keys
    gives up to three scenarios, A first."""
    from ..scenario import Scenario, scenarios_from_query
    if a.query is None and a.scenario is None:
        raise v.InputError("query", "give --query \"model=...&gpus=...\" and/or --scenario file.json")
    cat = catalog.default()
    s = Scenario()
    config = None
    if getattr(a, "model_config", None):
        from ..scenario import config_text
        config = config_text(hf_config.file_config_fields(
            hf_config.read_config_file(a.model_config), a.model_config))
    if a.scenario is not None:
        try:
            with open(a.scenario, encoding="utf-8") as fh:
                text = fh.read(5_000_000)
        except OSError as e:
            raise v.InputError("scenario", f"cannot read scenario file {a.scenario!r}: "
                                           f"{e.strerror or e}") from None
        s, notes = Scenario.from_json(text, cat, strict=True)
    else:
        notes = []
    if config is not None:
        # the file's model, under whatever the link or scenario file says
        s = replace(s, model="config", model_config=config)
    if a.query is None:
        return [s], cat, notes
    from urllib.parse import urlencode
    query = a.query.lstrip("?")
    if config is not None and a.scenario is None:
        from urllib.parse import parse_qsl
        link = dict(parse_qsl(query, keep_blank_values=True))
        if "model" in link:
            raise v.InputError("model_config", "give --model-config or model= in the query, "
                                               "not both")
        s, query, more = _config_keys_over_file(s, query)
        notes = notes + more
        query = s.to_query() + ("&" + query if query else "")
    if a.scenario is not None:
        # the file's values are A's starting point: the link's A keys go on top of them
        from urllib.parse import parse_qsl
        file_keys = {k: x for k, x in s.to_dict().items() if x != getattr(Scenario(), k)}
        link = dict(parse_qsl(query, keep_blank_values=True))
        query = urlencode({**{k: x for k, x in file_keys.items() if k not in link}}) + \
            ("&" + query if query else "")
    scenarios, more = scenarios_from_query(query, cat, strict=True)
    return scenarios, cat, notes + more


def _config_keys_over_file(s, query: str):
    """The link's ``cfg.<field>=`` keys beside --model-config replace (or add) the file's
    fields, as the architecture flags do beside it for the other subcommands; each with a
    note. Returns the scenario, the query without those keys, and the notes. A key given
    twice is left in the query, where it is refused."""
    from urllib.parse import parse_qsl, urlencode

    from ..scenario import CONFIG_PREFIX, config_text
    pairs = parse_qsl(query, keep_blank_values=True)
    counts = {}
    for k, _ in pairs:
        counts[k] = counts.get(k, 0) + 1
    given = {k: x for k, x in pairs if k.startswith(CONFIG_PREFIX) and counts[k] == 1}
    if not given:
        return s, query, []
    fields = json.loads(s.model_config)
    notes = []
    for key, text in given.items():
        name = key[len(CONFIG_PREFIX):]
        notes.append(f"{key}={text} replaces the config file's {name} {fields[name]}"
                     if name in fields else f"{key}={text} added to the config file's fields")
        fields[name] = text
    rest = urlencode([(k, x) for k, x in pairs if k not in given])
    return replace(s, model_config=config_text(fields)), rest, notes


def _compared(results: list, notes: list) -> dict:
    """Several scenarios' answers side by side, A first, with B's and C's relative changes
    against A for every top-level number."""
    from ..scenario import COMPARE_LABELS
    labels = COMPARE_LABELS[:len(results)]
    a = results[0]
    deltas = {}
    for label, r in zip(labels[1:], results[1:]):
        deltas[label] = {k: (x - a[k]) / abs(a[k]) for k, x in r.items()
                         if isinstance(x, (int, float)) and not isinstance(x, bool)
                         and isinstance(a.get(k), (int, float)) and not isinstance(a[k], bool)
                         and a[k] != 0 and x != a[k]}
    return {"compared": list(labels), "scenarios": dict(zip(labels, results)),
            "changes_vs_a": deltas, "warnings": notes}

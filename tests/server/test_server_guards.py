"""The servers' guards, over real HTTP: a path outside the served tree is 404 (Voila's template
file handler answered ``/voila/templates/../../../etc/passwd`` with a 500, an assertion), so
are a NUL in a path and the login pages this server has not; an over-long URL gets a plain 414
page (tornado closed the connection without any status); a query with more keys than a link
carries a plain 400.
Requests are sent as typed (``http.client`` does not normalise ``..``)."""

import http.client
import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import ROOT, free_port, start_binder_layout, start_server, stop_server, workbook_cmd

from llmcost.scenario import COMPARE_LABELS, FIELDS, MAX_CONFIG_FIELDS
from llmcost.server.handlers import MAX_URL_CHARS, max_query_keys
from llmcost.server.jupyter_config import install

pytestmark = pytest.mark.slow

TRAVERSALS = ["/voila/templates/../../../etc/passwd", "/voila/templates/../../../../etc/passwd",
              "/voila/static/../../../etc/passwd", "/voila/render/../../etc/passwd",
              "/voila/templates/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/../etc/passwd",
              "/voila/templates/./lab/static/../../../../../etc/hostname"]


def raw_get(base, path, timeout=60):
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode("utf-8", "replace")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guards")
    (folder / "tiny.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                   "outputs": [], "source": "print('tiny app')"}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}))
    port = free_port()
    proc = start_server(workbook_cmd(port, "--preheat_kernel=False"), folder,
                        folder.parent / "guards.log", port=port)
    yield f"http://127.0.0.1:{port}"
    stop_server(proc)


@pytest.mark.parametrize("path", TRAVERSALS)
def test_a_path_outside_the_served_tree_is_404(server, path):
    status, _, body = raw_get(server, path)
    assert status == 404, (path, status)
    assert "root:" not in body and "Traceback" not in body


def test_the_served_files_are_still_served(server):
    status, _, body = raw_get(server, "/voila/render/tiny.ipynb")
    assert status == 200 and "tiny app" in body


def test_an_over_long_url_gets_a_plain_414_page(server):
    n = 100_000
    status, h, body = raw_get(server, "/voila/render/tiny.ipynb?model=" + "x" * n)
    assert status == 414 and h["content-type"].startswith("text/html")
    assert "too long" in body and f"{MAX_URL_CHARS:,}" in body and "Traceback" not in body
    # a long link within the cap is still read
    status, _, _ = raw_get(server, "/voila/api/contents?x=" + "y" * (MAX_URL_CHARS - 100))
    assert status == 404


@pytest.mark.parametrize("path", ["/logout", "/login", "/voila/render/%00",
                                  "/voila/render/tiny.ipynb%00", "/voila/render/no-such-app.ipynb",
                                  "/no/such/path"])
def test_a_path_a_user_can_type_that_names_nothing_is_404(server, path):
    status, _, body = raw_get(server, path)
    assert status == 404, (path, status)
    assert "Traceback" not in body


def test_a_link_with_more_keys_than_any_link_carries_is_400_naming_the_limit(server):
    # every setting and a config.json's fields for three compared scenarios
    cap = len(COMPARE_LABELS) * (len(FIELDS) + MAX_CONFIG_FIELDS)
    assert max_query_keys() == cap < 1_000
    status, h, body = raw_get(server, "/voila/render/tiny.ipynb?" +
                              "&".join(f"k{i}=1" for i in range(1_000)))
    assert status == 400 and h["content-type"].startswith("text/html")
    assert "1,000 query keys" in body and f"at most {cap:,}" in body
    # a link at the cap is read
    status, _, _ = raw_get(server, "/voila/render/tiny.ipynb?" +
                           "&".join(f"k{i}=1" for i in range(cap)))
    assert status == 200


def test_a_url_of_megabytes_gets_the_414_page_not_a_dropped_connection(server):
    status, _, body = raw_get(server, "/voila/render/tiny.ipynb?x=" + "y" * 1_200_000)
    assert status == 414 and "too long" in body


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """The Binder layout: ``jupyter server`` from the repository root with Voila and
    llmcost.server as extensions (as tests/server/test_server.py starts it)."""
    base, proc = start_binder_layout(tmp_path_factory.mktemp("guards-jupyter-config"))
    yield base
    stop_server(proc)


@pytest.mark.parametrize("path", TRAVERSALS[:5])
def test_the_binder_layout_answers_404_outside_the_tree(extension, path):
    status, _, body = raw_get(extension, path)
    assert status == 404, (path, status)
    assert "root:" not in body and "Traceback" not in body


def test_the_binder_layout_answers_an_over_long_url_with_the_414_page(extension):
    status, h, body = raw_get(extension, "/voila/render/notebooks/review.ipynb?model=" + "x" * 100_000)
    assert status == 414 and h["content-type"].startswith("text/html")
    assert "too long" in body and f"{MAX_URL_CHARS:,}" in body and "Traceback" not in body

"""The visitor's query string in a preheated Voila kernel, without importing Voila.

A preheated kernel runs its notebook before anyone asks for the page and then waits for
the visitor: Voila's ``voila.utils.get_query_string()`` opens a websocket to the server's
``voila/query/<kernel id>`` handler, which sends the request's variables (``QUERY_STRING``,
``SERVER_NAME``...) as one JSON object when a page claims the kernel; they are put in the
environment. Importing ``voila.utils`` for that pulls in Jupyter Server, JupyterLab Server
and jsonschema (whose format checker compiles ~40 grammars at import): seconds of CPU and
about a quarter more memory in every preheated kernel. This module speaks the same protocol with only ``websockets``
(a Voila dependency) and the same environment variables, and falls back to Voila's own
function if that protocol cannot be followed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading


def query_url() -> str:
    """Voila's ``voila/query/<kernel id>`` websocket address, from the kernel's environment
    (as ``voila.utils.wait_for_request`` builds it)."""
    env = os.environ
    protocol = env.get("VOILA_WS_PROTOCOL", "ws")
    ip = env.get("VOILA_APP_IP", "127.0.0.1")
    port = env.get("VOILA_APP_PORT", "8866")
    base = env.get("VOILA_WS_BASE_URL", env.get("VOILA_SERVER_URL", "/"))
    return f"{protocol}://{ip}:{port}{base}voila/query/{env.get('VOILA_KERNEL_ID', '')}"


async def _receive(connect, url: str) -> str | None:
    from websockets.exceptions import WebSocketException
    try:
        # No open timeout (Voila gives up after 5 s): the server that started this kernel
        # is up but may be busy warming its other pools, and a kernel that gave up would
        # show its visitor the defaults instead of the shared link. No proxy: the server
        # is this machine's, never behind the proxy the environment may name.
        async with connect(url, open_timeout=None, proxy=None) as ws:
            return await ws.recv()
    except (OSError, WebSocketException) as err:
        # no server, or one that refuses the handshake: the page opens with the defaults;
        # the server's log (the kernel's stderr) says why
        print(f"llmcost.apps.preheat: no query from {url}: {err!r}", file=sys.__stderr__,
              flush=True)
        return None


def request_info(url: str | None = None) -> dict | None:
    """Wait for the page that claims this kernel; its request's variables, or None when the
    server cannot be reached. Runs on its own thread and loop: the kernel's loop is busy
    running the cell that waits. Raises ImportError without ``websockets``."""
    from websockets.asyncio.client import connect
    out: list = []
    thread = threading.Thread(
        target=lambda: out.append(asyncio.run(_receive(connect, url or query_url()))),
        daemon=True)
    thread.start()
    thread.join()
    return json.loads(out[0]) if out and out[0] else None


def get_query_string(url: str | None = None) -> str:
    """The visitor's query string (``voila.utils.get_query_string``'s contract: the request's
    variables are also set in ``os.environ``); outside a preheated kernel, the
    ``QUERY_STRING`` Voila set before the kernel started ("" when none)."""
    if os.environ.get("VOILA_PREHEAT", "False") == "False":
        return os.environ.get("QUERY_STRING", "")
    try:
        info = request_info(url)
    except ImportError:
        from voila.utils import get_query_string as voila_get_query_string
        return voila_get_query_string(url) or ""
    for key, value in (info or {}).items():
        os.environ[key] = str(value)
    return os.environ.get("QUERY_STRING", "")

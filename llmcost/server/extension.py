"""Jupyter server extension ``llmcost.server``: the Binder layout.

Under Jupyter Server, Voila is itself an extension and serves ``/voila/render/<path>``
from the server's root (the repository): the apps are ``notebooks/<name>.ipynb``. This
extension, enabled beside Voila in ``jupyter_config.json``:

- redirects Voila's tree (``/voila``, ``/voila/tree...``) to the landing app and hides
  the contents API behind it (``/`` itself is ``ServerApp.default_url``, set in the same
  file: Jupyter's redirect keeps the query);
- serves ``/voila/render/...`` through :class:`CappedVoilaHandler`: with
  ``ServerApp.kernel_manager_class`` set to :class:`CappedKernelManager`, a full server
  answers the "busy" page.

Extensions load in alphabetical order, so these handlers are registered before Voila's
and take precedence (tornado matches the first rule registered).
"""

from __future__ import annotations

import os

from jupyter_server.base.handlers import path_regex
from jupyter_server.utils import url_path_join
from voila.configuration import VoilaConfiguration
from voila.paths import collect_template_paths
from voila.server_extension import load_config_file

from . import handlers as h

#: the landing notebooks of the workbook, under notebooks/ of the served root or at its top
LANDING = [f"notebooks/{nb}" for nb in h.LANDING] + list(h.LANDING)


def _load_jupyter_server_extension(server_app):
    web_app = server_app.web_app
    base = web_app.settings["base_url"]
    root = os.path.expanduser(server_app.root_dir)

    # the same configuration Voila's own extension builds
    voila_configuration = VoilaConfiguration(parent=server_app)
    local = load_config_file()
    if local is not None:
        voila_configuration.update_config(local)
    template_paths = collect_template_paths(["voila", "nbconvert"], voila_configuration.template)

    existing = [nb for nb in LANDING if os.path.isfile(os.path.join(root, nb))]
    redirect = (h.LandingRedirect, {"root_dir": root, "landing": existing or LANDING[:1],
                                  "base_url": base})
    h.advertise_bundle(base)
    web_app.add_handlers(".*$", [
        *h.guard_rules(base),
        (url_path_join(base, "/voila/render/(.*)"), h.CappedVoilaHandler,
         {"config": server_app.config, "template_paths": template_paths,
          "voila_configuration": voila_configuration}),
        (url_path_join(base, "/voila/?"), *redirect),
        (url_path_join(base, "/voila/tree" + path_regex), *redirect),
        (url_path_join(base, "/voila/api/contents" + path_regex), h.NotFound),
        h.static_route(base),
    ])
    _read_long_headers(server_app)
    server_app.log.info("llmcost.server: landing page %s", existing[:1] or LANDING[:1])


def _read_long_headers(server_app):
    """Tornado reads at most 64 KiB of headers and then drops the connection without a
    status; Jupyter Server builds its HTTP server after the extensions load and has no
    setting for the limit: raise it on the server once built, so an over-long URL gets the
    414 page (as in the stand-alone server, :meth:`WorkbookVoila.listen`)."""
    build = server_app.init_httpserver

    def init_httpserver():
        build()
        server_app.http_server.conn_params.max_header_size = h.MAX_HEADER_BYTES

    server_app.init_httpserver = init_httpserver


load_jupyter_server_extension = _load_jupyter_server_extension

"""A widget that makes the browser download bytes the kernel sends: nothing is written on the
server, so it works whatever folder Voila serves (the repository root as on Binder, or
notebooks/), and nothing piles up in a folder every visitor sees.

The bytes travel as a buffer of a custom widget message; the browser wraps them in a Blob,
clicks a temporary ``<a download>`` and revokes the object URL. The handler is registered
once per widget model (anywidget's ``initialize``), not per view, so a widget shown twice
still downloads once. The ES module is inlined in the widget state: Voila needs no extra
static files.
"""

from __future__ import annotations

import re

import anywidget
import traitlets

from .._validate import InputError

_ESM = r"""
function save(filename, mime, buffer) {
  const blob = new Blob([buffer], { type: mime });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.rel = "noopener";
  a.style.display = "none";
  document.body.appendChild(a);
  a.click();
  a.remove();
  // revoking at once can cancel the download in some browsers; a minute is plenty
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function initialize({ model }) {
  // where the page was served from, without its query or fragment (a token may be there)
  model.set("page_url", window.location.origin + window.location.pathname);
  model.save_changes();
  const onMessage = (msg, buffers) => {
    if (!msg || msg.kind !== "llmc-download" || !buffers || !buffers.length) return;
    save(msg.filename, msg.mime, buffers[0]);
    model.send({ kind: "llmc-downloaded", filename: msg.filename, bytes: buffers[0].byteLength });
  };
  model.on("msg:custom", onMessage);
  return () => model.off("msg:custom", onMessage);
}

function render({ model, el }) {
  const span = document.createElement("span");
  span.className = "llmc-download-status";
  const show = () => {
    const text = model.get("status");
    span.textContent = text;
    span.style.display = text ? "inline" : "none";
  };
  show();
  model.on("change:status", show);
  el.appendChild(span);
  return () => model.off("change:status", show);
}

export default { initialize, render };
"""

_CSS = """
.llmc-download-status { font-size: 12px; color: #2a6f97; }
"""

# a file name the browser will not reinterpret: no path, no control characters
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")
_MIME = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(;[ -~]*)?$")


class Download(anywidget.AnyWidget):
    """Invisible until used; ``send_file`` downloads a file in the visitor's browser.

    ``status`` reads "Downloaded: <name>" once the browser has saved it; ``page_url`` is the
    page's address (origin and path, no query) as the browser reports it, for links that
    must be absolute (a report opened from a downloads folder).
    """

    _esm = _ESM
    _css = _CSS
    status = traitlets.Unicode("").tag(sync=True)
    page_url = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.delivered: list[tuple[str, int]] = []
        self.on_msg(self._on_frontend_msg)

    def send_file(self, filename: str, data: bytes, mime: str = "text/html") -> None:
        """Make the browser download ``data`` as ``filename`` (``mime`` type)."""
        if not isinstance(filename, str) or not filename.strip() or _BAD_NAME.search(filename) \
                or len(filename) > 200:
            raise InputError("filename", "filename must be a plain file name (1-200 characters, "
                             f"no folder or control characters), got {filename!r}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError("data", f"data must be bytes, got {type(data).__name__}")
        if not isinstance(mime, str) or not _MIME.match(mime):
            raise InputError("mime", f"mime must be a media type such as text/html, got {mime!r}")
        self.status = ""
        self.send({"kind": "llmc-download", "filename": filename, "mime": mime},
                  buffers=[bytes(data)])

    def _on_frontend_msg(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("kind") == "llmc-downloaded":
            name = str(content.get("filename", ""))
            self.delivered.append((name, int(content.get("bytes", 0) or 0)))
            self.status = f"Downloaded: {name}"

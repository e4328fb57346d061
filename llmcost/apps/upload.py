"""A file picker that reads a small text file in the browser and hands its text to the
kernel: a button with a plain label ("Load scenario"), unlike ipywidgets' FileUpload whose
label always carries a count ("Load scenario (0)"). Files above ``max_bytes`` are refused in
the browser, before anything is sent."""

from __future__ import annotations

from typing import Callable

import anywidget
import traitlets

_ESM = r"""
function render({ model, el }) {
  const input = document.createElement("input");
  input.type = "file";
  input.accept = model.get("accept");
  input.style.display = "none";
  input.className = "llmc-file-input";
  const button = document.createElement("button");
  button.className = "jupyter-widgets jupyter-button widget-button llmc-file-button";
  button.textContent = model.get("label");
  button.title = model.get("hint");
  button.addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    const file = input.files && input.files[0];
    if (!file) return;
    if (file.size > model.get("max_bytes")) {
      model.send({ kind: "too-large", name: file.name, bytes: file.size });
    } else {
      file.text().then((text) => model.send({ kind: "file", name: file.name, text }));
    }
    input.value = "";
  });
  el.appendChild(button);
  el.appendChild(input);
}
export default { render };
"""


class FilePicker(anywidget.AnyWidget):
    """``on_file(name, text)`` runs in the kernel when the user picks a file; a file over
    ``max_bytes`` calls ``on_error(message)`` instead."""

    _esm = _ESM
    label = traitlets.Unicode("Load file").tag(sync=True)
    # not "tooltip": ipywidgets reads a "description" beside a widget's tooltip
    hint = traitlets.Unicode("").tag(sync=True)
    accept = traitlets.Unicode("").tag(sync=True)
    max_bytes = traitlets.Int(1_000_000).tag(sync=True)

    def __init__(self, on_file: Callable[[str, str], None], on_error: Callable[[str], None],
                 **kw):
        super().__init__(**kw)
        self._on_file, self._on_error = on_file, on_error
        self.on_msg(self._receive)

    def _receive(self, _widget, msg, _buffers) -> None:
        if not isinstance(msg, dict):
            return
        if msg.get("kind") == "too-large":
            self._on_error(f"{str(msg.get('name'))[:80]!r} is {int(msg.get('bytes', 0)):,} "
                           f"bytes; a file up to {self.max_bytes:,} bytes is read")
        elif msg.get("kind") == "file":
            text = msg.get("text")
            if not isinstance(text, str) or len(text) > self.max_bytes:
                self._on_error(f"a file up to {self.max_bytes:,} bytes is read")
                return
            self._on_file(str(msg.get("name", ""))[:200], text)

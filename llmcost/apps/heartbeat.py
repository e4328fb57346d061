"""A "connection lost - reload" banner for the apps.

A killed or culled kernel, or a stopped server, otherwise leaves an app on screen that
silently stops answering (stale figures, no message). :class:`Heartbeat` is an invisible
anywidget: its JavaScript pings the kernel every few seconds through a custom widget
message and the kernel answers. When no answer comes for ``lost_after_s`` seconds while the
kernel is not known to be busy, a fixed banner (class ``llmc-connection-lost``) asks the
user to reload the page. A long computation is not a lost connection: while the kernel
reports itself busy, missing answers are expected and do not count.
"""

from __future__ import annotations

import anywidget
import traitlets

_ESM = r"""
const TEXT = "Connection to the server lost - reload the page";

function showBanner() {
  let el = document.querySelector(".llmc-connection-lost");
  if (el) return;
  el = document.createElement("div");
  el.className = "llmc-connection-lost";
  el.setAttribute("role", "alert");
  el.textContent = TEXT + " ";
  const a = document.createElement("a");
  a.href = "#";
  a.textContent = "Reload";
  a.addEventListener("click", (e) => { e.preventDefault(); window.location.reload(); });
  el.appendChild(a);
  document.body.appendChild(el);
}

function hideBanner() {
  const el = document.querySelector(".llmc-connection-lost");
  if (el) el.remove();
}

function kernelOf(model) {
  try { return (model.widget_manager && model.widget_manager.kernel) || null; }
  catch (e) { return null; }
}

export default {
  render({ model, el }) {
    el.style.display = "none";
    const period = 1000 * model.get("period_s");
    const lostAfter = 1000 * model.get("lost_after_s");
    let lastReply = Date.now();
    let lastTick = Date.now();
    const onMsg = (msg) => {
      if (msg && msg.type === "pong") { lastReply = Date.now(); hideBanner(); }
    };
    model.on("msg:custom", onMsg);
    const tick = () => {
      const now = Date.now();
      // Background tabs throttle timers: a late tick is not a silent kernel.
      if (document.hidden || now - lastTick > 2 * period) lastReply = now;
      lastTick = now;
      const k = kernelOf(model);
      const connected = !k || k.connectionStatus === undefined || k.connectionStatus === "connected";
      if (k && connected && k.status === "busy") lastReply = now;
      if (k && k.status === "dead") lastReply = Math.min(lastReply, now - lostAfter);
      try { model.send({ type: "ping", t: now }); } catch (e) { /* closed socket: no reply will come */ }
      if (now - lastReply >= lostAfter) showBanner();
    };
    const id = setInterval(tick, period);
    return () => { clearInterval(id); model.off("msg:custom", onMsg); };
  },
};
"""

_CSS = """
.llmc-connection-lost {position: fixed; top: 0; left: 0; right: 0; z-index: 100000;
  background: #b00020; color: #fff; padding: 10px 16px; text-align: center;
  font: 600 15px/1.4 system-ui, sans-serif; box-shadow: 0 2px 6px rgba(0,0,0,.3)}
.llmc-connection-lost a {color: #fff; text-decoration: underline; margin-left: 8px}
"""


class Heartbeat(anywidget.AnyWidget):
    """Invisible widget showing a "connection lost" banner when the kernel stops answering.

    Parameters
    ----------
    period_s : float
        Interval between pings [s].
    lost_after_s : float
        Silence (kernel not busy) after which the banner shows [s].
    """

    _esm = _ESM
    _css = _CSS
    period_s = traitlets.Float(3.0).tag(sync=True)
    lost_after_s = traitlets.Float(10.0).tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_class("llmc-heartbeat")
        self.on_msg(self._on_ping)

    def _on_ping(self, _widget, content, _buffers):
        if isinstance(content, dict) and content.get("type") == "ping":
            self.send({"type": "pong", "t": content.get("t")})

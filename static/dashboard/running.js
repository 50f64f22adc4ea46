// EchoMQ: an active job's "running 42 s" (presenters.running_label) counts on
// between refreshes, on the job page and in the queue's job list.
// data-running-ms is how long the job had run when the server rendered it,
// counted on from when this page got the node, so the browser's clock is
// never compared with the server's.

import {running} from "./format.js";

var runningSince = new WeakMap();

function tick() {
  var now = Date.now();
  document.querySelectorAll("[data-running-ms]").forEach(function (el) {
    if (!runningSince.has(el)) runningSince.set(el, now - (Number(el.getAttribute("data-running-ms")) || 0));
    var text = running(now - runningSince.get(el));
    if (el.textContent !== text) el.textContent = text;
  });
}

export function keepCounting() { setInterval(tick, 1000); }

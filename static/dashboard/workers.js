// EchoMQ workers tab: keeps the list of connected workers (and the limits) current.
//
// A worker connecting or leaving writes no event, so the live updates
// (live.js) cannot tell this page; instead the live part (#workers-live) is
// asked for again every data-poll-ms while the page is visible, as the htmx
// fragment the server renders for it (dashboard/workers/views.py), and at once when
// the page becomes visible again. Nothing moves under the pointer: while the
// part is in use (refresh.js heldPart), a changed answer waits and goes in
// when that ends. The URL comes from the server (data-poll-url).

import {getText, heldPart} from "./refresh.js";

var part = document.getElementById("workers-live");
if (part && window.fetch) start(part);

function start(part) {
  var url = part.getAttribute("data-poll-url");
  var every = Math.max(1000, Number(part.getAttribute("data-poll-ms")) || 3000);
  var shown = part.innerHTML.trim();
  var timer = null;
  var inFlight = false;

  var held = heldPart(part, {
    put: function (html) {
      part.classList.remove("held");
      if (html === shown) return;
      shown = html;
      part.innerHTML = html;
    },
    waits: function (html) { if (html !== shown) part.classList.add("held"); },
  });

  function poll() {
    timer = null;
    if (document.visibilityState !== "visible" || inFlight) { schedule(); return; }
    inFlight = true;
    getText(url, true)
      .then(function (html) { held.offer(html.trim()); })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { inFlight = false; schedule(); });
  }

  function schedule() {
    if (timer === null) timer = setTimeout(poll, every);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible") return;
    if (timer !== null) { clearTimeout(timer); timer = null; }
    poll();
  });
  window.addEventListener("pagehide", function () { if (timer !== null) clearTimeout(timer); timer = null; });
  window.addEventListener("pageshow", function (event) { if (event.persisted) poll(); });
  schedule();
}

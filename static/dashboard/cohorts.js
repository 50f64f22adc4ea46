// EchoMQ "Recent actions" (queue page): what became of the jobs each recent
// retry or promote moved, kept current while workers move them.
//
// The panel's fragment comes from the server (data-poll-url, rendered by
// dashboard/cohorts/views.py): once when the page opens, then again whenever
// live.js says this queue's jobs moved (the "echomq:queue-moved" event), no
// sooner than the last answer's data-next-ms (the server spaces looks at big
// cohorts out), and when the page becomes visible again. Counting a cohort
// costs Redis a look at each of its jobs, so a page nobody looks at (hidden)
// asks nothing. Nothing moves under the pointer: while the panel is in use
// (refresh.js heldPart), a changed answer waits (the heading says so) and
// goes in when that ends; an answer that would change the panel's height (a
// cohort or a line more or less) also waits while the jobs table below it is
// in use, so no row jumps away. On a narrow screen the panel is folded to its
// heading and one line (details[data-cohorts-fold]) until the person opens
// it; what they chose is kept across updates.

import {watch} from "./hold.js";
import {getText, heldPart} from "./refresh.js";

var panel = document.getElementById("recent-actions");
if (panel && window.fetch) start(panel);

function start(panel) {
  var main = document.querySelector("main[data-queue]");
  var queue = main ? main.getAttribute("data-queue") : null;
  var url = panel.getAttribute("data-poll-url");
  var gap = 2000;  // until the first answer says
  var shown = "";
  var wanted = false;  // jobs moved since the last answer was asked for
  var inFlight = false;
  var lastAsked = 0;
  var timer = null;

  var table = document.getElementById("job-table");
  var narrow = window.matchMedia("(max-width: 700px)");
  var chosenOpen = null;  // the person's own open or close, once they made one
  var tableHold = table ? watch(table, function () { held.release(); }) : null;

  function shape(html) {  // what decides the panel's height: its lines
    var holder = document.createElement("template");
    holder.innerHTML = html;
    return Array.prototype.map.call(holder.content.querySelectorAll("li, p"), function (el) {
      return el.tagName;
    }).join(",");
  }

  // Why an answer waits: the panel in use, or the table below it in use
  // while the answer would change the panel's height.
  function busy(html, why) {
    if (shown === "") return "";
    if (why) return {why: why, where: "the panel"};
    var tableWhy = tableHold ? tableHold.why() : "";
    return tableWhy && shape(html) !== shape(shown) ? {why: tableWhy, where: "the table"} : "";
  }

  var held = heldPart(panel, {
    busy: busy,
    put: function (html) {
      panel.classList.remove("held");
      if (html === shown) return;
      shown = html;
      panel.innerHTML = html;
      panel.hidden = html === "";
      var fold = panel.querySelector("details[data-cohorts-fold]");
      if (fold) fold.open = chosenOpen !== null ? chosenOpen : !narrow.matches;
    },
    waits: function (html, reason) {
      if (html === shown) return;
      panel.classList.add("held");
      var note = panel.querySelector("[data-hold-note]");
      var words = reason.why === "focus" ? reason.where + " has focus" : reason.why;
      if (note) note.textContent = " · paused while " + words + ": an update waits";
    },
  });

  function take(html) {
    html = html.trim();
    var spacing = /data-next-ms="(\d+)"/.exec(html);
    gap = Math.max(500, spacing ? Number(spacing[1]) : 2000);
    held.offer(html);
  }

  function ask() {
    timer = null;
    if (document.visibilityState !== "visible") return;  // asked again when visible
    if (inFlight) { wanted = true; return; }
    wanted = false;
    inFlight = true;
    lastAsked = Date.now();
    getText(url, true)
      .then(take)
      .catch(function () { /* the next movement asks again */ })
      .then(function () { inFlight = false; if (wanted) schedule(); });
  }

  function schedule() {
    if (timer !== null) return;
    timer = setTimeout(ask, Math.max(0, lastAsked + gap - Date.now()));
  }

  // A click on the fold's heading (a tap, or Enter on it) is the person's choice.
  panel.addEventListener("click", function (event) {
    var heading = event.target.closest && event.target.closest("details[data-cohorts-fold] > summary");
    if (heading) chosenOpen = !heading.parentElement.open;
  });
  document.addEventListener("echomq:queue-moved", function (event) {
    if (queue && event.detail && event.detail.queue !== queue) return;
    wanted = true;
    schedule();
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") schedule();
  });
  window.addEventListener("pagehide", function () { if (timer !== null) clearTimeout(timer); timer = null; });
  window.addEventListener("pageshow", function (event) { if (event.persisted) schedule(); });
  ask();
}

// EchoMQ charts (dashboard/shared/charts.py draws them on the server as SVG):
// - the queue page's chart: the minute or the admin action under the pointer is
//   read out in words below it ([data-chart-readout]), and the chart is redrawn
//   from the server every 20 s while the page is visible, so the newest minutes
//   come in (held while it is in use: refresh.js heldPart)
// - the queue page's history chart ([data-history-chart], dashboard/history/chart.py):
//   the same readout; each slot carries its words in data-readout
// - the overview: each row's sparkline is on its own scale, so the minute under
//   the pointer (or finger) is read out in a tip beside it, from the figures
//   the row carries; the phone's note on how rows are drawn shows while any
//   row has a line, kept in step when live.js swaps the rows in

import {failures, thousands, utcMinute} from "./format.js";
import {getText, heldPart} from "./refresh.js";

var REDRAW_MS = 20000;

function readout(figure) { return figure.querySelector("[data-chart-readout]"); }

function show(figure, target) {
  var out = readout(figure);
  if (!out) return;
  figure.querySelectorAll(".hover").forEach(function (el) { el.classList.remove("hover"); });
  var marker = target.closest("[data-marker]");
  var minute = marker ? null : target.closest("[data-when]");
  var text = out.getAttribute("data-default") || "";
  if (marker) {
    marker.classList.add("hover");
    text = marker.getAttribute("data-marker");
  } else if (minute) {
    minute.classList.add("hover");
    var completed = minute.getAttribute("data-completed");
    var words = minute.getAttribute("data-readout");
    text = words !== null ? words : minute.getAttribute("data-when") + ": " + (completed === null ? "no data" :
      thousands(Number(completed)) + " completed, " +
      failures(Number(minute.getAttribute("data-failed"))));
  }
  if (out.textContent !== text) out.textContent = text;
}

var CHARTS = "[data-queue-chart], [data-history-chart]";

function onPointer(event) {
  var figure = event.target.closest && event.target.closest(CHARTS);
  if (figure) show(figure, event.target);
}

function onLeave(event) {
  var figure = event.target.closest && event.target.closest(CHARTS);
  if (!figure || figure.contains(event.relatedTarget)) return;
  show(figure, figure);
}

document.addEventListener("pointerover", onPointer);
document.addEventListener("pointerdown", onPointer);
document.addEventListener("pointerout", onLeave);

// The page as the server renders it now; only its chart is taken, and put
// into the figure shown (its readout's folds kept open).
var figure = document.querySelector("[data-queue-chart]");
var chart = figure ? heldPart(figure, {put: function (fresh) {
  if (figure.isEqualNode(fresh)) return;
  var open = figure.querySelector("details[open]");
  var details = fresh.querySelector("details");
  if (open && details) details.open = true;
  figure.className = fresh.className;
  figure.replaceChildren.apply(figure, Array.prototype.slice.call(fresh.childNodes));
}}) : null;
function redraw() {
  if (document.hidden) return;
  getText(location.href, false)
    .then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-queue-chart]");
      if (fresh) chart.offer(document.adoptNode(fresh));
    })
    .catch(function () { /* the next round tries again */ });
}
// Also without a chart: the figure's caption is the queue's health in words.
if (chart) setInterval(redraw, REDRAW_MS);

var rows = document.getElementById("queue-rows");
var note = document.querySelector(".spark-scale-note");
if (rows && note && window.MutationObserver) {
  new MutationObserver(function () {
    var hidden = !rows.querySelector("svg.sparkline");
    if (note.hidden !== hidden) note.hidden = hidden;
  }).observe(rows, {childList: true, subtree: true});
}

// A sparkline's minutes: oldest first, the newest being minute data-newest
// (ms // 60,000), drawn right-aligned in a width that stands for the rows'
// data-spark-slots minutes (dashboard/shared/charts.py sparkline_svg).
var SPARK_WIDTH = 90;
function numbers(svg, name) {
  var text = svg.getAttribute(name) || "";
  return text ? text.split(",").map(Number) : [];
}
function sparkWords(svg, clientX) {
  var completed = numbers(svg, "data-completed"), failed = numbers(svg, "data-failed");
  var count = Math.max(completed.length, failed.length);
  var box = svg.getBoundingClientRect();
  if (!count || !box.width) return "";
  var slots = Number(rows.getAttribute("data-spark-slots"));
  if (!slots) return "";
  var step = SPARK_WIDTH / Math.max(slots - 1, 1);
  var x = (clientX - box.left) / box.width * SPARK_WIDTH;
  var back = Math.round((SPARK_WIDTH - x) / step);  // minutes before the newest
  if (back < 0) back = 0;
  if (back >= count) return "";  // left of the first minute drawn
  var index = count - 1 - back;
  var at = (Number(svg.getAttribute("data-newest")) - back) * 60000;
  // The minute, then the row's half hour and its scale (its accessible name).
  return utcMinute(at) + ": " + thousands(completed[index] || 0) + " completed, " +
    failures(failed[index] || 0) + "\n" + (svg.getAttribute("aria-label") || "");
}
var tip = null;
function showTip(event) {
  var svg = event.target.closest && event.target.closest("svg.sparkline[data-newest]");
  if (!svg) { if (tip && !tip.hidden) tip.hidden = true; return; }
  var words = sparkWords(svg, event.clientX);
  if (!tip) {
    tip = document.createElement("div");
    tip.className = "spark-tip";
    tip.setAttribute("role", "status");
    document.body.appendChild(tip);
  }
  tip.hidden = !words;
  if (!words) return;
  if (tip.textContent !== words) tip.textContent = words;
  var box = svg.getBoundingClientRect();
  // Above the line, right of the pointer; CSSOM (not a style attribute) is what CSP allows.
  tip.style.left = Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 4) + "px";
  tip.style.top = Math.max(box.top - tip.offsetHeight - 4, 4) + "px";
}
if (rows) {
  rows.addEventListener("pointermove", showTip);
  rows.addEventListener("pointerdown", showTip);
  rows.addEventListener("pointerleave", function () { if (tip) tip.hidden = true; });
  window.addEventListener("scroll", function () { if (tip) tip.hidden = true; }, {passive: true});
}

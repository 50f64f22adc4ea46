// EchoMQ charts (dashboard/charts.py draws them on the server as SVG):
// - the queue page's chart: the minute or the admin action under the pointer is
//   read out in words below it ([data-chart-readout]), and the chart is redrawn
//   from the server every 20 s while the page is visible, so the newest minutes
//   come in (never while the pointer is on it)
// - the queue page's history chart ([data-history-chart], dashboard/history_chart.py):
//   the same readout; each slot carries its words in data-readout
// - the overview: the column header says the scale the rows' sparklines share,
//   kept in step when live.js swaps the rows in
(function () {
  "use strict";

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
        Number(completed).toLocaleString("en-US") + " completed, " +
        Number(minute.getAttribute("data-failed")).toLocaleString("en-US") + " failed");
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

  // The page as the server renders it now; only its chart is taken. The header
  // asks live.js's way (X-Live-Refresh) so flash messages stay for the user.
  function redraw() {
    var figure = document.querySelector("[data-queue-chart]");
    if (!figure || document.hidden || figure.matches(":hover")) return;
    fetch(location.href, {headers: {"Accept": "text/html", "X-Live-Refresh": "1"}, credentials: "same-origin"})
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-queue-chart]");
        var current = document.querySelector("[data-queue-chart]");
        if (!fresh || !current || current.matches(":hover") || current.isEqualNode(fresh)) return;
        var open = current.querySelector("details[open]");
        var details = fresh.querySelector("details");
        if (open && details) details.open = true;
        current.replaceWith(document.adoptNode(fresh));
      })
      .catch(function () { /* the next round tries again */ });
  }
  // Also without a chart: the figure's caption is the queue's health in words.
  if (document.querySelector("[data-queue-chart]")) setInterval(redraw, REDRAW_MS);

  var rows = document.getElementById("queue-rows");
  var scaleLabels = document.querySelectorAll("[data-spark-scale]");
  if (rows && scaleLabels.length && window.MutationObserver) {
    new MutationObserver(function () {
      var spark = rows.querySelector("svg[data-scale]");
      var text = spark ? spark.getAttribute("data-scale") : "";
      scaleLabels.forEach(function (label) {
        if (label.textContent !== text) label.textContent = text;
        // No row with a series: no scale to state, and no dangling "Per minute, 30 min:".
        var note = label.closest(".spark-scale-note");
        if (note) note.hidden = !text;
      });
    }).observe(rows, {childList: true, subtree: true});
  }
})();

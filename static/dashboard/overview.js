// EchoMQ overview: its rows kept current by live.js. Each queue's events make
// its row's live dot pulse and its rows be asked for again (at most once a
// second); so does the set of queues changing (a queue started elsewhere gets
// its row), and, while the page is seen, every QUIET_REFRESH_MS.

import {REFRESH_MS, getText, throttled} from "./refresh.js";

// A worker connecting or leaving writes no event, nor does time passing
// (the five-minute rule): the overview asks again this often while it is
// seen, so "no workers" shows without waiting for another queue's event.
var QUIET_REFRESH_MS = 10000;

// `page`: live.js's {queues, send, subscription}; the rows joining and leaving
// change page.queues and what the socket follows.
var page = null;
var refresh = throttled(REFRESH_MS, function () { return overviewNow(); });

export function startOverview(livePage) {
  page = livePage;
  setInterval(function () { if (document.visibilityState === "visible") refresh(); }, QUIET_REFRESH_MS);
  var queueFilter = document.querySelector("[data-queue-filter]");
  if (queueFilter) followFilter(queueFilter);
  return {refresh: refresh, onQueues: onQueues, pulse: pulse};
}

// The overview's list as the server renders it now (views.overview: a page
// of rows after the name filter and sort). Rows are swapped in place (counts,
// health, paused, sparkline); the live dot keeps its node (and its
// animation) and a row holding the focus waits. Queues that appeared join in
// the server's order and are subscribed to, queues that are gone leave; both
// wait while the focus is in the table (moving rows would take it away). The
// total, the no-match line and the pager come from the same answer.
function mergeOverviewRows(html) {
  var body = document.getElementById("queue-rows");
  var list = document.getElementById("overview-list");
  if (!body || !list) return;
  var holder = document.createElement("template");
  holder.innerHTML = html;
  // With several Redis connections a heading row (data-group) opens each
  // connection's rows: kept in place and redrawn like a queue's row.
  var key = function (row) {
    return row.hasAttribute("data-queue") ? row.getAttribute("data-queue") : "\u0000" + row.getAttribute("data-group");
  };
  var current = {};
  body.querySelectorAll("tr[data-queue], tr[data-group]").forEach(function (row) { current[key(row)] = row; });
  var rows = [], added = [], regrouped = false;
  holder.content.querySelectorAll("tr[data-queue], tr[data-group]").forEach(function (fresh) {
    var ref = key(fresh);
    var row = current[ref];
    delete current[ref];
    if (!row) {
      if (fresh.hasAttribute("data-queue")) added.push(ref); else regrouped = true;
      rows.push(fresh);
      return;
    }
    rows.push(row);
    if (row.contains(document.activeElement)) return;
    var dot = row.querySelector("[data-live-dot]"), freshDot = fresh.querySelector("[data-live-dot]");
    if (dot && freshDot) freshDot.replaceWith(dot);
    row.className = fresh.className;
    row.replaceChildren.apply(row, Array.prototype.slice.call(fresh.childNodes));
  });
  // The total, the no-match line and the pager come from the same answer,
  // whether or not the rows moved.
  var total = holder.content.querySelector("template[data-overview-total]");
  var shown = document.querySelector("[data-queue-total]");
  if (total && shown) shown.textContent = total.content.textContent.trim();
  ["[data-filter-empty]", "#overview-pager"].forEach(function (selector) {
    var old = list.querySelector(selector), fresh = holder.content.querySelector(selector);
    if (old && old.contains(document.activeElement)) return;
    if (old && fresh) old.replaceWith(fresh);
    else if (old) old.remove();
    else if (fresh) list.appendChild(fresh);
  });
  var gone = Object.keys(current).filter(function (ref) { return ref.charAt(0) !== "\u0000"; });
  regrouped = regrouped || gone.length < Object.keys(current).length;
  var moved = rows.some(function (row, index) { return body.children[index] !== row; });
  if ((!added.length && !gone.length && !regrouped && !moved) || body.contains(document.activeElement)) return;
  body.replaceChildren.apply(body, rows);
  page.queues = rows.filter(function (row) { return row.hasAttribute("data-queue"); })
    .map(function (row) { return row.getAttribute("data-queue"); });
  if (added.length) page.send({type: "subscribe", queues: added.map(page.subscription)});
  if (gone.length) page.send({type: "unsubscribe", queues: gone});
}

// The overview's list for the address as it is now; an answer that comes
// back after the filter changed again is dropped, not drawn over the newer.
function overviewNow() {
  var url = location.pathname + location.search;
  return getText(url, true).then(function (html) {
    if (url === location.pathname + location.search) mergeOverviewRows(html);
  });
}

// The overview's name filter answers as it is typed (the form's own submit
// does the same without script): the address keeps the filter, so a reload
// or the live refresh shows the same page.
function followFilter(queueFilter) {
  var filterTimer = null;
  queueFilter.addEventListener("input", function () {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(function () {
      var params = new URLSearchParams(location.search);
      var needle = queueFilter.value.trim();
      if (needle) params.set("q", needle); else params.delete("q");
      params.delete("page");
      var query = params.toString();
      history.replaceState(history.state, "", location.pathname + (query ? "?" + query : ""));
      overviewNow().catch(function () {});
    }, 200);
  });
}

// The set of queues changed (dashboard/live/discovery.py): the overview
// refetches its rows; one that had no queue, or has none left, reloads.
function onQueues(message) {
  if (message.queues.slice().sort().join("\n") === page.queues.slice().sort().join("\n")) return;
  if (!message.queues.length || !document.getElementById("queue-rows")) { location.reload(); return; }
  refresh();
}


// Restart the live dots' animation, each at most once per its 1 s run (a busy
// queue's dot keeps pulsing at that beat instead of costing a forced layout
// and a restarted animation on every update): one forced layout for all.
var pulsedAt = {};
function pulse(refs) {
  var now = Date.now();
  var dots = refs.filter(function (queue) {
    if (now - (pulsedAt[queue] || 0) < 1000) return false;
    pulsedAt[queue] = now;
    return true;
  }).map(function (queue) {
    return document.querySelector('tr[data-queue="' + CSS.escape(queue) + '"] [data-live-dot]');
  }).filter(Boolean);
  if (!dots.length) return;
  dots.forEach(function (dot) { dot.classList.remove("pulse"); });
  void document.body.offsetWidth;
  dots.forEach(function (dot) { dot.classList.add("pulse"); });
}

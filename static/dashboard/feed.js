// EchoMQ events tab: the live feed (live.js hands it each server message's
// events of the page's queue).
//
// `recent` holds the last FEED_KEEP matching events (data, cheap). Rows cost
// far more than data, so while the feed runs the table holds the newest
// liveRows, drawn from a budget of DRAW_PER_S rows a second: below that rate
// every event gets its row, above it each update draws the newest ones. Pause
// draws exactly the last FEED_KEEP events and freezes them for reading.
//
// Each update's rows go into a new <tbody> at the top of the table (a
// "chunk"), which the stylesheet puts on its own compositor layer. Rows that
// are already drawn then never change: the rows below the new chunk move down
// as whole layers instead of being repainted and re-rasterised on every
// update, which is most of what a busy feed costs a page without a GPU. At
// most MAX_CHUNKS layers: beyond that the oldest chunk's rows join the
// server-rendered body (by then far down the page).

import {thousands} from "./format.js";
import {watch} from "./hold.js";
import {REFRESH_MS, getText, rearm, throttled} from "./refresh.js";

var FEED_KEEP = 500;
// From this many events a second updates are spaced out and each draws at most
// a third of the feed's live rows (live.js scheduleFlush, feedEvents).
export var FAST_FEED_PER_S = 300;

// Read by bench/live.py: XADD-to-DOM latencies (ms), rows drawn, time spent applying batches.
export var measured = window.echomqLive = {rendered: 0, latencies: [], flushes: 0, flushMs: 0, arrivals: []};
export function record(list, value) {  // the newest 10,000 to 20,000 measurements
  list.push(value);
  if (list.length > 20000) list.splice(0, 10000);
}

export function parseId(id) {
  var parts = String(id || "0-0").split("-");
  return [Number(parts[0]) || 0, Number(parts[1]) || 0];
}
function idAfter(a, b) {  // is stream id a newer than b?
  var x = parseId(a), y = parseId(b);
  return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]);
}

var page = null;  // live.js's {queues, lastIds, send, subscription, rate}
var feed = null, feedBody = null;  // the events table, its rows as the server rendered them
// Live unless the page shows older events (?before=): those stay as they are.
var live = false;

// Returns what live.js asks of the feed, or null when the page has none.
export function startFeed(livePage) {
  feed = document.getElementById("event-feed");
  feedBody = document.getElementById("event-rows");
  if (!feed) return null;
  rowTemplate = document.getElementById("event-row").content.querySelector("tr");
  page = livePage;
  live = !/[?&]before=/.test(location.search);
  if (live) page.lastIds[page.queues[0]] = feed.getAttribute("data-last-id") || "0-0";
  sizeLiveRows();
  drawBudget = rowsPerUpdate;
  readFilter(feed);
  followFilterForm();
  setupControls();
  if (live) {
    pinColumns(feed);
    var sizing = false;
    var resize = function () {
      if (sizing) return;
      sizing = true;
      requestAnimationFrame(function () {
        sizing = false;
        if (sizeLiveRows() && !paused && !held && recent.length) redraw(page.queues[0]);
      });
    };
    window.addEventListener("scroll", resize, {passive: true});
    window.addEventListener("resize", resize);
    ["mousedown", "focusin", "touchstart"].forEach(function (type) { feed.addEventListener(type, pointOlderLink); });
    watchPointer();
  }
  return {
    live: live,
    pick: pick,
    show: feedEvents,
    reload: function () { reloadFeed(); },
    jobFilter: function () { return filterJob; },
  };
}

// The events of a message this feed draws: those its filter matches, each
// once (a replay after a reconnect or a new filter's subscription repeats
// what this page has already taken).
function pick(events) {
  var shown = [];
  events.forEach(function (e) {
    if (matchesFilter(e) && (!renderedSince || idAfter(e.id, renderedSince))) {
      shown.push(e);
      renderedSince = e.id;
    }
  });
  return shown;
}

var DRAW_PER_S = 250;
// As many rows as the window shows below the feed's top, plus a few to spare
// (a row is about 32 px), and no more. Every live row is laid out again when
// the page is drawn, and a page the browser draws only now and then (a
// window behind others, a tab it throttles) lays out all of its new rows at
// once: with many such pages those moments, not the average, set how late
// events are. Grows with the window or when the page is scrolled down.
var liveRows = 0;
// One update of a fast feed draws at most a third of them: more would replace
// the whole list at every update, costing far more to draw than anyone can read.
var rowsPerUpdate = 0;
function sizeLiveRows() {
  var top = Math.max(0, feed.getBoundingClientRect().top);
  var wanted = Math.max(15, Math.min(100, Math.ceil((window.innerHeight - top) / 32) + 5));
  if (wanted <= liveRows) return false;
  liveRows = wanted;
  rowsPerUpdate = Math.ceil(liveRows / 3);
  return true;
}
var MAX_CHUNKS = 12;
// paused: the "Pause feed" button froze the last FEED_KEEP events for reading.
// held: the feed is in use (hold.js: a mouse over it, a finger on it or
// scrolling the page, the focus in it; holdWhy says which), so nothing is
// drawn (a row must not slide away under the mouse or the finger); events are
// kept and counted as while paused, and the newest are drawn when the user
// leaves or catches up.
var paused = false, held = false, holdWhy = "";
var newWhilePaused = 0, sampled = 0, controls = null, renderedSince = null;
var recent = [];
var drawBudget = 0, budgetAt = Date.now();
// The filter: one event's name, "all", or "" for state changes only: every
// event but the quiet ones the server lists (dashboard/browse/views.py QUIET_EVENTS).
var filterType = "", filterJob = "", quiet = {};
function readFilter(table) {
  filterType = table.getAttribute("data-filter-type") || "";
  filterJob = table.getAttribute("data-filter-job") || "";
  quiet = {};
  (table.getAttribute("data-quiet-events") || "").split(" ").forEach(function (name) { if (name) quiet[name] = true; });
}
// Rows live.js adds are marked live-new; they also slide in tinted (live-fresh)
// only while the feed is slow enough to read row by row. Above that every
// animated row repaints its part of the page on every frame for 1.5 s: at
// tens of rows a second that is most of what a page costs, all of it spent
// on motion nobody can follow.
var ANIMATE_BELOW_PER_S = 5;

function matchesFilter(event) {
  if (filterJob && event.job_id !== filterJob) return false;
  if (filterType === "all") return true;
  return filterType ? event.event === filterType : !quiet[event.event];
}

function feedEvents(queue, events) {
  if (!events.length) return;
  recent = recent.concat(events).slice(-FEED_KEEP);
  if (paused || held) {
    newWhilePaused += events.length;
    showStatus();
    return;
  }
  var now = Date.now();
  // Refilled with time. In a fast feed never above one update's worth: a page
  // that fell behind must not pay for a huge redraw (which would make it fall
  // further behind). Otherwise up to the whole list, so that what a reconnect
  // replays after a quiet spell is drawn in full.
  var depth = feedDepth();
  var most = page.rate() < FAST_FEED_PER_S ? depth : Math.min(depth, rowsPerUpdate);
  drawBudget = Math.min(most, drawBudget + (now - budgetAt) * DRAW_PER_S / 1000);
  budgetAt = now;
  var drawn = events.slice(-Math.max(1, Math.floor(drawBudget)));
  drawBudget -= drawn.length;
  sampled += events.length - drawn.length;
  drawRows(queue, drawn, depth);
  watchFrames();
  showStatus();
}

// A page the browser is not drawing (a tab behind another, a covered window)
// gets a frame only now and then, about once a second, and that one frame
// lays out every row that came since the last: in a fast feed, the whole
// list. Such frames ran at the low priority the browser gives pages nobody
// sees and held their pages' main threads for up to 700 ms, every event of
// the page waiting behind them (bench/live.py, 20 pages at 200 events/s:
// p99 340-450 ms; with the lists of those pages kept at 8 rows, 230-245 ms).
// So while no frame comes, a feed fast enough to replace its whole list
// within such a gap keeps only its newest UNSEEN_ROWS rows (each event is
// still drawn as it comes; no one can see the rows that are not), and once
// frames come promptly again the list is drawn to its full depth in the
// frame callback, before that frame is painted.
var UNSEEN_ROWS = 8;
// No frame this long after asking for one: the page is not being drawn. Long
// enough that a page drawn slowly (a busy machine) is not taken for one nobody
// sees, which would shrink its list in front of the user.
var NO_FRAME_MS = 500;
// PROMPT_FRAMES frames in a row, each this soon after asking: the page is
// drawn again. One is not enough: a throttled page's frames come about once a
// second but not evenly, and two of them close together would redraw the
// whole list in a page still nobody sees.
var PROMPT_FRAME_MS = 100, PROMPT_FRAMES = 3;
var unseen = false, shrunk = false, frameAsked = false, frameAskedAt = 0, promptFrames = 0;
function feedDepth() {
  if (!unseen || page.rate() < liveRows) return liveRows;
  shrunk = true;
  return UNSEEN_ROWS;
}
function watchFrames() {
  if (frameAsked) {
    if (Date.now() - frameAskedAt > NO_FRAME_MS) unseen = true;
    return;
  }
  frameAsked = true;
  frameAskedAt = Date.now();
  requestAnimationFrame(onFrame);
}
function onFrame() {
  frameAsked = false;
  if (!unseen) return;
  promptFrames = Date.now() - frameAskedAt > PROMPT_FRAME_MS ? 0 : promptFrames + 1;
  if (promptFrames < PROMPT_FRAMES) {
    watchFrames();  // keep asking, at whatever pace the browser draws the page
    return;
  }
  unseen = false;
  promptFrames = 0;
  if (shrunk && !paused && !held) redraw(page.queues[0]);
}

// An event's row: the markup of the tab's own rows, empty, as the server
// renders it into the page (<template id="event-row">, presenters.EVENT_ROW_TEMPLATE),
// filled with the values the server sent for the event (presenters.event_row):
// a live row and the same row after a reload are one markup. Cloned and filled,
// not parsed: parsing each event's row of HTML took a page twice as long, and
// made its message 2.4 times longer.
var rowTemplate = null;
var jobLink = document.createElement("a");
function feedRow(event, className) {
  var values = event.row;
  var row = rowTemplate.cloneNode(true);
  row.setAttribute("data-event-id", event.id);
  row.setAttribute("data-event", event.event);
  if (event.job_id) row.setAttribute("data-job-id", event.job_id);
  row.className = className;
  var cells = row.cells;
  var time = cells[0].firstChild;
  time.title = values.time;
  time.textContent = values.time.slice(11, 23);
  var badge = cells[1].firstChild;
  badge.className = "badge state-" + values.tone;
  badge.textContent = event.event;
  if (values.job_url !== null) {
    var link = jobLink.cloneNode(false);
    link.setAttribute("href", values.job_url);
    link.textContent = values.job_label === undefined ? event.job_id : values.job_label;
    cells[2].appendChild(link);
  }
  cells[3].textContent = values.detail;
  return row;
}

function drawRows(queue, events, keep, redrawn) {
  var chunk = document.createElement("tbody");
  chunk.className = "live-chunk";
  var marks = !redrawn && page.rate() < ANIMATE_BELOW_PER_S ? "live-new live-fresh" : "live-new";
  // Newest first; an event sent without its row (too big for a message) gets none.
  for (var i = events.length - 1; i >= 0; i--) {
    if (!events[i].row) continue;
    chunk.appendChild(feedRow(events[i], marks));
    chunk.appendChild(document.createTextNode("\n"));
  }
  feed.insertBefore(chunk, feed.tBodies[0]);
  if (!redrawn) {
    var now = Date.now();
    for (var j = 0; j < events.length; j++) record(measured.latencies, now - parseId(events[j].id)[0]);
    measured.rendered += events.length;
  }
  trimRows(keep);
  var chunks = feed.querySelectorAll("tbody.live-chunk");
  for (var k = chunks.length - 1; k >= MAX_CHUNKS; k--) {
    feedBody.insertBefore(rowFragment(chunks[k]), feedBody.firstChild);
    chunks[k].remove();
  }
  var empty = document.querySelector("section.empty");
  if (empty) empty.hidden = true;
}
function rowFragment(body) {
  var fragment = document.createDocumentFragment();
  while (body.firstChild) fragment.appendChild(body.firstChild);
  return fragment;
}

// Drops the oldest rows beyond `keep`, from the bottom up; the "Older events"
// row stays last. Live chunks go whole or not at all (the table then holds up
// to one update's rows more than `keep`): a chunk once drawn never changes, so
// its layer is never painted again.
function trimRows(keep) {
  var more = document.getElementById("events-more");
  var bodies = feed.tBodies, total = 0;
  for (var b = 0; b < bodies.length; b++) total += bodies[b].rows.length;
  var excess = total - (more ? 1 : 0) - keep;
  for (var k = bodies.length - 1; k >= 0 && excess > 0; k--) {
    var body = bodies[k];
    if (body !== feedBody) {
      if (body.rows.length > excess) break;
      excess -= body.rows.length;
      body.remove();
      continue;
    }
    var n = body.rows.length - (more ? 1 : 0);
    for (; excess > 0 && n > 0; excess--, n--) (more ? more.previousElementSibling : body.lastElementChild).remove();
  }
}

// Pausing shows exactly the last FEED_KEEP events; resuming goes back to the live tail.
function redraw(queue) {
  feed.querySelectorAll("tbody.live-chunk, tr.live-new").forEach(function (el) { el.remove(); });
  drawRows(queue, paused ? recent : recent.slice(-liveRows), paused ? FEED_KEEP : liveRows, true);
  shrunk = false;
  sampled = 0;
  newWhilePaused = 0;
  showStatus();
}

// Rows dropped off the bottom stay reachable: just before "Older events" is
// used, the feed pauses (reading history, the rows must stay put) and the
// link is pointed below the oldest row still shown.
function pointOlderLink(event) {
  var link = event.target.closest && event.target.closest("#events-more a");
  if (!link) return;
  if (!paused && controls) controls.button.click();
  var shown = feed.querySelectorAll("tr[data-event-id]");
  var oldest = shown[shown.length - 1];
  if (!oldest) return;
  var url = new URL(link.getAttribute("href"), location.href);
  url.searchParams.set("before", oldest.getAttribute("data-event-id"));
  if (link.getAttribute("href") === url.search) return;
  link.setAttribute("href", url.search);
  if (link.hasAttribute("hx-get")) { link.setAttribute("hx-get", url.search); rearm(link); }
}

// Fixed table layout with the column widths as first rendered: a new row at
// the top then costs a layout of that row, not a re-measure of 500, and the
// columns never shift while the feed runs.
function pinColumns(table) {
  var total = table.getBoundingClientRect().width;
  var heads = table.querySelectorAll("thead th");
  if (!total || !heads.length) return;
  var widths = Array.prototype.map.call(heads, function (th) { return th.getBoundingClientRect().width; });
  heads.forEach(function (th, i) { th.style.width = (100 * widths[i] / total).toFixed(2) + "%"; });
  table.style.tableLayout = "fixed";
}

// Leaving the feed, or "N new", draws what came while it held still: the
// newest of it as one chunk above the rows already drawn (they stay as they
// are). When more came than the live rows hold, the newest are drawn and the
// feed says it skipped some, as a fast feed does.
function catchUp() {
  if (paused) return;
  var missed = Math.min(newWhilePaused, recent.length);
  newWhilePaused = 0;
  if (missed) {
    var drawn = Math.min(missed, liveRows);
    sampled += missed - drawn;
    drawRows(page.queues[0], recent.slice(-drawn), liveRows, true);
  }
  showStatus();
}
// Pointer, touch and focus are followed by their own events, so holding
// costs a feed nothing per event beyond what "Pause feed" costs.
function setHeld() {
  var now = !!holdWhy;
  if (held === now) { showStatus(); return; }
  held = now;
  if (held) showStatus();
  else catchUp();
}
function watchPointer() {
  watch(feed, function (why) { holdWhy = why; setHeld(); });
}

function setupControls() {
  var holder = document.querySelector("[data-live-controls]");
  if (!holder || !live) return;
  controls = {button: document.createElement("button"), news: document.createElement("button"), status: document.createElement("span")};
  controls.button.type = "button";
  controls.button.className = "btn";
  controls.button.textContent = "Pause feed";
  controls.button.setAttribute("aria-pressed", "false");
  controls.news.type = "button";
  controls.news.className = "btn feed-news";
  controls.news.hidden = true;
  controls.status.className = "muted feed-status";
  controls.button.addEventListener("click", function () {
    paused = !paused;
    controls.button.textContent = paused ? "Resume feed" : "Pause feed";
    controls.button.setAttribute("aria-pressed", String(paused));
    // Paused: the true last 500, frozen for reading; resumed: the live tail.
    redraw(page.queues[0]);
  });
  // "N new": back to the live tail (paused), or the held feed catches up and holds on.
  controls.news.addEventListener("click", function () {
    if (paused) controls.button.click();
    else catchUp();
  });
  holder.append(controls.button, controls.news, controls.status);
}
function showStatus() {
  if (!controls) return;
  var text = "";
  if (held && !paused) text = "paused while " + (holdWhy === "focus" ? "the feed has focus" : holdWhy);
  else if (paused) text = "";
  else if (sampled) text = "fast feed: newest rows shown, pause for the last " + FEED_KEEP;
  else if (recent.length > liveRows) text = "pause to read the last " + FEED_KEEP;
  if (controls.status.textContent !== text) controls.status.textContent = text;
  var news = (paused || held) && newWhilePaused ? thousands(newWhilePaused) + " new ↑" : "";
  if (controls.news.textContent !== news) {
    controls.news.textContent = news;
    controls.news.hidden = !news;
  }
}

// The filter form applies as it changes: the select at once, the job box
// when typing pauses (or on Enter). The rows for the new filter come from
// the server (the same page, rendered for it), the live feed continues from
// the newest event that page knew, and the URL follows, so a reload or a
// shared link shows the same. Without script the form submits as usual.
var filterForm = null;
var filterSeq = 0, filterTimer = null;
function filterUrl() {
  var params = new URLSearchParams();
  new FormData(filterForm).forEach(function (value, key) {
    value = String(value).trim();
    if (value) params.set(key, value);
  });
  var query = params.toString();
  return location.pathname + (query ? "?" + query : "");
}
function applyFilter() {
  clearTimeout(filterTimer);
  var url = filterUrl();
  if (url === location.pathname + location.search) return;
  if (!live) { location.assign(url); return; }  // an older page: start from the newest
  history.replaceState(history.state, "", url);
  var seq = ++filterSeq;
  return getText(url, false).then(function (html) {
    if (seq !== filterSeq) return;  // a newer filter is on its way
    var doc = new DOMParser().parseFromString(html, "text/html");
    var table = doc.getElementById("event-feed"), rows = doc.getElementById("event-rows");
    if (!table || !rows) return;
    readFilter(table);
    ["data-filter-type", "data-filter-job", "data-last-id"].forEach(function (name) {
      feed.setAttribute(name, table.getAttribute(name) || "");
    });
    feed.querySelectorAll("tbody.live-chunk").forEach(function (chunk) { chunk.remove(); });
    feedBody.replaceChildren.apply(feedBody, Array.prototype.slice.call(rows.childNodes).map(function (node) {
      return document.adoptNode(node);
    }));
    var empty = document.querySelector("section.empty"), newEmpty = doc.querySelector("section.empty");
    if (empty && newEmpty) empty.replaceWith(document.adoptNode(newEmpty));
    recent = [];
    sampled = 0;
    newWhilePaused = 0;
    renderedSince = table.getAttribute("data-last-id") || null;
    page.lastIds[page.queues[0]] = renderedSince || "0-0";
    page.send({type: "subscribe", queues: [page.subscription(page.queues[0])]});  // replaces the old one
    showStatus();
    rearm(feedBody);
  });
}
function followFilterForm() {
  filterForm = document.querySelector("form.event-filter");
  if (!filterForm) return;
  filterForm.addEventListener("submit", function (event) { event.preventDefault(); applyFilter(); });
  filterForm.addEventListener("input", function (event) {
    if (event.target.tagName !== "INPUT") return;
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, 400);
  });
}

// Reloads the feed's rows after a gap; live rows older than what it shows are then dropped.
var reloadFeed = throttled(REFRESH_MS, function () {
  return getText(location.href, true).then(function (html) {
    feed.querySelectorAll("tbody.live-chunk").forEach(function (chunk) { chunk.remove(); });
    feedBody.innerHTML = html;
    recent = [];
    sampled = 0;
    var first = feed.querySelector("tr[data-event-id]");
    renderedSince = first ? first.getAttribute("data-event-id") : renderedSince;
    rearm(feedBody);
  });
});

// EchoMQ live updates: one WebSocket per page (dashboard/live/consumer.py).
//
// The page says what it shows through data attributes rendered by the server:
//   main[data-page]                overview | queue | events | schedulers | job
//   [data-queue="prefix:name"]     the queue(s) of the page (overview: one per row)
//   [data-count-state=<state>]     a count to keep current (compact; [data-count-exact]
//                                  in full, [data-count-for] buttons are off at zero)
//   [data-live-dot]                pulses when that queue has events
//   #job-table                     the queue page's job list with its action bar and
//                                  pager, refetched as an htmx fragment that also holds
//                                  the tabs (#queue-tabs): every number from one answer;
//                                  the schedulers tab's list rides on it (rows keyed by
//                                  scheduler id), refetched when the queue has events
//   #event-feed[data-last-id]      the events tab's table: the live feed continues from
//                                  that id; #event-rows is its server-rendered body
//   main[data-job-id]              the job page: refetched when that job has an event,
//                                  then merged by its [data-block] parts
//   [data-running-ms]              an active job's running time, counted on each second
//
// Every URL comes from the server (Django's reverse), never pasted together here:
// body[data-live-url] the socket, body[data-login-url] the login page,
// main[data-counts-url] a queue's counts (JSON), #event-feed[data-job-url] a job
// page's URL without the id. Queue names may hold "/" or "~", which the server
// writes its own way (dashboard/converters.py); lists and pages are refetched
// from location.href, links in fragments are the server's own.
//
// Work is coalesced: events are queued as they arrive and applied in one pass
// per flush (each server message as it comes below a few hundred events a
// second, 10 flushes a second at 1,000 events/s), and counts / lists are
// refetched from the server at most once a second instead of being computed
// from events. The overview also asks for the set of queues, so a queue
// started elsewhere gets its row.
(function () {
  "use strict";

  var FEED_KEEP = 500;
  var REFRESH_MS = 1000;
  // A worker connecting or leaving writes no event, nor does time passing
  // (the five-minute rule): the overview asks again this often while it is
  // seen, so "no workers" shows without waiting for another queue's event.
  var QUIET_REFRESH_MS = 10000;
  // From this many events a second updates are spaced out and each draws at most
  // a third of the feed's live rows (scheduleFlush, feedEvents).
  var FAST_FEED_PER_S = 300;
  var BACKOFF_MS = [500, 1000, 2000, 4000, 5000];

  var main = document.querySelector("main[data-page]");
  if (!main || !window.WebSocket) return;
  var pageKind = main.getAttribute("data-page");
  var feed = document.getElementById("event-feed");      // the events table
  var feedBody = document.getElementById("event-rows");  // its rows as the server rendered them

  // ------------------------------------------------------------ small helpers

  function parseId(id) {
    var parts = String(id || "0-0").split("-");
    return [Number(parts[0]) || 0, Number(parts[1]) || 0];
  }
  function idAfter(a, b) {  // is stream id a newer than b?
    var x = parseId(a), y = parseId(b);
    return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]);
  }
  function compact(n) {
    var units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(n) >= units[i][0]) return (n / units[i][0]).toFixed(1).replace(/\.0$/, "") + units[i][1];
    }
    return String(n);
  }
  // X-Live-Refresh: a refetch of ours, which must not use up the flash messages
  // meant for the page the user is navigating to (templates/dashboard/_messages.html).
  function getText(url, asFragment, accept404) {
    var headers = {"Accept": "text/html", "X-Live-Refresh": "1"};
    if (asFragment) { headers["HX-Request"] = "true"; }
    return fetch(url, {headers: headers, credentials: "same-origin"}).then(function (r) {
      if (!r.ok && !(accept404 && r.status === 404)) throw new Error(url + ": " + r.status);
      return r.text();
    });
  }
  function getJson(url) {
    return fetch(url, {headers: {"Accept": "application/json", "X-Live-Refresh": "1"}, credentials: "same-origin"})
      .then(function (r) { if (!r.ok) throw new Error(url + ": " + r.status); return r.json(); });
  }
  function rearm(el) {  // let htmx and dashboard.js wire up swapped-in markup
    if (window.htmx) window.htmx.process(el);
    el.dispatchEvent(new CustomEvent("htmx:afterSwap", {bubbles: true}));
  }

  // A job that runs at most once per `gap` ms, trailing: calls during a run or
  // during the gap fold into one more run afterwards.
  function throttled(gap, job) {
    var last = 0, timer = null, running = false, again = false;
    function run() {
      timer = null;
      if (running) { again = true; return; }
      running = true;
      last = Date.now();
      Promise.resolve().then(job).catch(function () { /* next event retries */ }).then(function () {
        running = false;
        if (again) { again = false; schedule(); }
      });
    }
    function schedule() {
      if (timer !== null) return;
      timer = setTimeout(run, Math.max(0, last + gap - Date.now()));
    }
    return schedule;
  }

  // ------------------------------------------------------------ what this page shows

  var queues = [];
  if (pageKind === "overview") {
    document.querySelectorAll("tr[data-queue]").forEach(function (row) { queues.push(row.getAttribute("data-queue")); });
  } else if (main.getAttribute("data-queue")) {
    queues.push(main.getAttribute("data-queue"));
  }
  // A job page in a flow also follows the tree's shown jobs, by queue
  // (#flow-watch, dashboard/flows.py): an event of one refreshes the page.
  var flowWatch = {};
  function readFlowWatch() {
    var block = document.getElementById("flow-watch");
    var watch = {};
    try { watch = block ? JSON.parse(block.textContent) || {} : {}; } catch (error) { watch = {}; }
    return watch;
  }
  function watchedIds(queue) {  // the job ids of `queue` this job page follows
    var ids = (flowWatch[queue] || []).slice();
    var own = main.getAttribute("data-job-id");
    if (queue === main.getAttribute("data-queue") && ids.indexOf(own) < 0) ids.unshift(own);
    return ids;
  }
  if (pageKind === "job") {
    flowWatch = readFlowWatch();
    Object.keys(flowWatch).forEach(function (queue) { if (queues.indexOf(queue) < 0) queues.push(queue); });
  }
  // The overview listens even with no queue yet: the first one gets its row.
  if (!queues.length && pageKind !== "overview") return;

  var feedLive = !!feed && !/[?&]before=/.test(location.search);
  var lastIds = {};  // queue -> newest stream id this page has seen (resume point)
  if (feedLive) lastIds[queues[0]] = feed.getAttribute("data-last-id") || "0-0";

  var showsCounts = !!document.querySelector("[data-count-state]");
  // Every number the page shows of a state, from one set of counts: the tab's
  // compact count, the exact ones ("Retry all 1,204 failed") and the buttons
  // that have nothing to act on at zero.
  function setCounts(scope, counts) {
    scope.querySelectorAll("[data-count-state]").forEach(function (el) {
      var state = el.getAttribute("data-count-state");
      if (!(state in counts)) return;
      var n = counts[state];
      var text = compact(n);
      if (el.textContent !== text) el.textContent = text;
      el.title = (el.title || "").replace(/^[\d,]*/, n.toLocaleString("en-US"));
      if (el.hasAttribute("data-count")) el.setAttribute("data-count", String(n));
      var zeroHolder = el.closest(".tab") || el;
      zeroHolder.classList.toggle("zero", n === 0);
    });
    scope.querySelectorAll("[data-count-exact]").forEach(function (el) {
      var state = el.getAttribute("data-count-exact");
      var text = state in counts ? counts[state].toLocaleString("en-US") : el.textContent;
      if (el.textContent !== text) el.textContent = text;
    });
    scope.querySelectorAll("[data-count-for]").forEach(function (button) {
      var state = button.getAttribute("data-count-for");
      if (state in counts) button.disabled = counts[state] === 0;
    });
  }
  function countsOf(tabs) {  // {state: n} from a tabs bar the server rendered
    var counts = {};
    tabs.querySelectorAll("[data-count-state][data-count]").forEach(function (el) {
      counts[el.getAttribute("data-count-state")] = Number(el.getAttribute("data-count")) || 0;
    });
    return counts;
  }
  function headShowsPaused() {
    var head = document.querySelector(".queue-head");
    return !!head && !!head.querySelector("[data-paused]");
  }

  // The overview refetches its rows; the events tab its counts (the queue page
  // gets them with its list, refreshList below).
  var refreshCounts = throttled(REFRESH_MS, function () {
    if (pageKind === "overview") {
      return overviewNow();
    }
    var url = main.getAttribute("data-counts-url");
    if (!url) return;
    return getJson(url).then(function (q) {
      setCounts(document, q.counts);
      if (q.paused !== headShowsPaused()) refreshHead();
    });
  });

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
    queues = rows.filter(function (row) { return row.hasAttribute("data-queue"); })
      .map(function (row) { return row.getAttribute("data-queue"); });
    if (added.length) send({type: "subscribe", queues: added.map(subscription)});
    if (gone.length) send({type: "unsubscribe", queues: gone});
  }

  // The overview's list for the address as it is now; an answer that comes
  // back after the filter changed again is dropped, not drawn over the newer.
  function overviewNow() {
    var url = location.pathname + location.search;
    return getText(url, true).then(function (html) {
      if (url === location.pathname + location.search) mergeOverviewRows(html);
    });
  }

  if (pageKind === "overview") {
    setInterval(function () { if (document.visibilityState === "visible") refreshCounts(); }, QUIET_REFRESH_MS);
  }

  // The overview's name filter answers as it is typed (the form's own submit
  // does the same without script): the address keeps the filter, so a reload
  // or the live refresh shows the same page.
  var queueFilter = pageKind === "overview" ? document.querySelector("[data-queue-filter]") : null;
  if (queueFilter) {
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
    if (pageKind !== "overview") return;
    if (message.queues.slice().sort().join("\n") === queues.slice().sort().join("\n")) return;
    if (!message.queues.length || !document.getElementById("queue-rows")) { location.reload(); return; }
    refreshCounts();
  }

  // Paused or resumed elsewhere: the header's badge and pause/resume button follow.
  var refreshHead = throttled(REFRESH_MS, function () {
    var head = document.querySelector(".queue-head");
    if (!head || head.contains(document.activeElement)) return;
    return getText(location.href, false).then(function (html) {
      var next = new DOMParser().parseFromString(html, "text/html").querySelector(".queue-head");
      if (next) { head.replaceWith(document.adoptNode(next)); rearm(next); }
    });
  });

  // The queue page: one fragment holds the list, its action bar and pager, and
  // the tabs (htmx's out-of-band copy), so the tabs, the bulk buttons' counts,
  // the pager and the empty state all come from the same answer and are put
  // in together. While the table is in use (hold.js: a mouse over it, a
  // finger on it or scrolling the page, the focus in it; or a menu or
  // confirmation open) the newest answer is held instead, nothing moves, and
  // the table's corner says what waits ("paused while you scroll · 14 new");
  // it goes in when the user leaves. Rows that stay keep their node (and checkbox).
  var jobTable = document.getElementById("job-table");
  var heldSnapshot = null;
  var tableHold = jobTable ? window.echomqHold(jobTable, releaseTable) : null;
  function tableInUse() {
    return !!tableHold.why() || !!document.querySelector("dialog[open]") ||
      !!jobTable.querySelector("details[open]");
  }
  var refreshList = throttled(REFRESH_MS, function () {
    if (!jobTable) return;
    var url = location.href;
    return getText(url, true).then(function (html) {
      // The user paged (htmx pushed another address) while this was asked:
      // its answer is the old page's, and must not be drawn over the new one.
      if (url !== location.href) return;
      var fresh = document.createElement("template");
      fresh.innerHTML = html;
      heldUrl = url;
      askAgainIfPending(fresh.content);
      if (tableInUse()) holdSnapshot(fresh.content);
      else applySnapshot(fresh.content);
    });
  });
  // Back to a page of the list htmx pushed: htmx puts the table back as it
  // was then, its bulk buttons' counts included, beside tabs that kept
  // counting (issue 21: a tab read 178 beside "Retry all 180"). The tabs'
  // counts go into the buttons at once, and the list is asked for again so
  // rows and counts come from one answer.
  document.addEventListener("htmx:historyRestore", function () {
    if (!jobTable) return;
    var tabs = document.getElementById("queue-tabs");
    if (tabs) setCounts(jobTable, countsOf(tabs));
    refreshList();
  });
  // A list the server is still counting (the error groups: "Counting…",
  // "Regrouping…") says so (data-pending) and is asked again until it is
  // complete, whether the queue has events or not.
  var PENDING_MS = 2000;
  var pendingTimer = null;
  function askAgainIfPending(root) {
    clearTimeout(pendingTimer);
    if (root.querySelector("[data-index-status][data-pending]")) pendingTimer = setTimeout(refreshList, PENDING_MS);
  }
  if (jobTable) askAgainIfPending(jobTable);
  var heldUrl = null;  // the address the held snapshot was read for
  function releaseTable() {
    // After the dialog closes (its close event comes first).
    setTimeout(function () {
      if (heldSnapshot && heldUrl !== location.href) heldSnapshot = null;
      if (heldSnapshot && !tableInUse()) applySnapshot(heldSnapshot);
    }, 0);
  }
  if (jobTable) {
    jobTable.addEventListener("toggle", releaseTable, true);  // a menu closed
    document.addEventListener("close", releaseTable, true);    // a dialog closed
  }

  function holdSnapshot(fresh) {
    heldSnapshot = fresh;
    var shown = {}, waiting = 0, left = 0;
    jobTable.querySelectorAll("table.jobs tr[data-job-id]").forEach(function (row) { shown[row.getAttribute("data-job-id")] = true; });
    fresh.querySelectorAll("table.jobs tr[data-job-id]").forEach(function (row) {
      var id = row.getAttribute("data-job-id");
      if (shown[id]) delete shown[id]; else waiting += 1;
    });
    left = Object.keys(shown).length;
    var tabs = fresh.querySelector("#queue-tabs"), current = document.getElementById("queue-tabs");
    var countsMoved = !!tabs && !!current && JSON.stringify(countsOf(tabs)) !== JSON.stringify(countsOf(current));
    var news = [];
    if (waiting) news.push(waiting.toLocaleString("en-US") + " new");
    if (left) news.push(left.toLocaleString("en-US") + " left");
    if (!news.length && countsMoved) news.push("new counts");
    var reason = tableHold.why();
    var why = reason && reason !== "focus" ? reason : document.querySelector("dialog[open]") ? "you confirm" : "the table has focus";
    showHold(news.length ? "paused while " + why + " · " + news.join(" · ") : "");
  }
  function showHold(text) {
    var cue = jobTable.querySelector("[data-hold-cue]");
    if (cue && cue.textContent !== text) cue.textContent = text;
  }

  function applySnapshot(fresh) {
    heldSnapshot = null;
    var tabs = fresh.querySelector("#queue-tabs");
    if (tabs) {
      tabs.remove();  // htmx's out-of-band copy: only its numbers are used here
      setCounts(document, countsOf(tabs));
      if ((tabs.getAttribute("data-paused") === "true") !== headShowsPaused()) refreshHead();
    }
    mergeJobTable(fresh);
    showHold("");
  }

  function mergeJobTable(fresh) {
    var form = jobTable.querySelector("#selection-form"), newForm = fresh.querySelector("#selection-form");
    var oldBody = form && form.querySelector("table.jobs tbody");
    var newBody = newForm && newForm.querySelector("table.jobs tbody");
    if (oldBody && newBody) {
      var kept = {};
      oldBody.querySelectorAll("tr[data-job-id]").forEach(function (row) { kept[row.getAttribute("data-job-id")] = row; });
      var rows = Array.prototype.map.call(newBody.querySelectorAll("tr[data-job-id]"), function (row) {
        var old = kept[row.getAttribute("data-job-id")];
        if (!old) { row.classList.add("live-new", "live-fresh"); return row; }
        var box = old.querySelector("input[name=ids]");
        var newBox = row.querySelector("input[name=ids]");
        if (box && newBox) newBox.checked = box.checked;
        return old.isEqualNode(row) ? old : row;
      });
      oldBody.replaceChildren.apply(oldBody, rows);
    } else if (form && newForm && !form.querySelector("input[name=ids]:checked")) {
      // The first row came or the last one went: the list's part of the form changes whole.
      form.replaceChildren.apply(form, Array.prototype.slice.call(newForm.childNodes));
    }
    var status = jobTable.querySelector("[data-index-status]"), newStatus = fresh.querySelector("[data-index-status]");
    if (status && newStatus && !status.isEqualNode(newStatus)) status.replaceWith(newStatus);
    var pager = jobTable.querySelector("nav.pager"), newPager = fresh.querySelector("nav.pager");
    if (pager && newPager && !pager.isEqualNode(newPager) && !pager.contains(document.activeElement)) {
      pager.replaceWith(newPager);
    }
    rearm(jobTable);
  }

  // The job page: refetched whole, then merged block by block (mergeBlocks).
  // A block that holds the focus stays while the user works in it and the page
  // is refetched again when the focus leaves it. While a confirmation is open
  // nothing is merged: the focus is in the dialog, so the head would be swapped
  // whole (its title changes every second on a running job) and the form the
  // dialog is about to submit would be gone with it; the page catches up when
  // the dialog closes.
  var jobFocusWaiting = false;
  var refreshJob = throttled(300, function () {
    var url = location.href;
    // A removed job answers 404 with a page that says so: show that too.
    return getText(url, false, true).then(function (html) {
      // The user turned a log page (htmx replaced the address) while this was
      // asked: its answer holds the old page's logs, and drawn it would turn
      // the page back. Asked again for the page shown.
      if (url !== location.href) { refreshJob(); return; }
      var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
      if (!next) return;
      if (document.querySelector("dialog[open]")) { jobFocusWaiting = true; return; }
      jobFocusWaiting = false;
      if (mergeBlocks(main, next)) { rearm(main); followFlow(); }
    });
  });
  // The tree shown changed: follow its jobs from now on (queues it left are let go).
  function followFlow() {
    var before = JSON.stringify(flowWatch);
    flowWatch = readFlowWatch();
    if (JSON.stringify(flowWatch) === before) return;
    var own = main.getAttribute("data-queue");
    var next = [own].concat(Object.keys(flowWatch).filter(function (queue) { return queue !== own; }));
    var gone = queues.filter(function (queue) { return next.indexOf(queue) < 0; });
    queues = next;
    send({type: "subscribe", queues: queues.map(subscription)});
    send({type: "unsubscribe", queues: gone});
  }
  if (pageKind === "job") {
    main.addEventListener("focusout", function () { if (jobFocusWaiting) refreshJob(); });
    document.addEventListener("close", function () { if (jobFocusWaiting) refreshJob(); }, true);
  }

  // Puts the children of `fresh` (a block as the server renders it now) into
  // `into`: a child equal to the one shown keeps its node, the flash messages
  // keep theirs (a refetch does not carry them), a changed one is swapped, and
  // the one holding the focus stays as the user left it, except its own
  // [data-block] parts, merged the same way (the job's title updates while its
  // fail reason is being typed). When the block holding the focus has no
  // counterpart any more, nothing changes until the focus leaves.
  // Returns whether anything was swapped.
  function mergeBlocks(into, fresh) {
    var shown = {};
    childElements(into).forEach(function (el) { shown[blockKey(el)] = el; });
    var focused = childElements(into).filter(function (el) { return el.contains(document.activeElement); })[0];
    // A copy: adopting a node takes it out of fresh.children (a live collection).
    var incoming = childElements(fresh);
    if (focused && !incoming.some(function (el) { return blockKey(el) === blockKey(focused); })) {
      jobFocusWaiting = true;
      return false;
    }
    var swapped = false;
    var blocks = incoming.map(function (el) {
      var old = shown[blockKey(el)];
      if (!old) { swapped = true; return document.adoptNode(el); }
      if (old.id === "messages") return old;
      carryViewState(old, el);
      if (old.isEqualNode(el)) return old;
      if (old === focused) {
        if (old.querySelector(":scope > [data-block]")) swapped = mergeBlocks(old, el) || swapped;
        else jobFocusWaiting = true;
        return old;
      }
      swapped = true;
      return document.adoptNode(el);
    });
    var kept = childElements(into);
    if (!swapped && blocks.length === kept.length && blocks.every(function (el, i) { return el === kept[i]; })) {
      return false;
    }
    var scrolls = blocks.map(function (el) { return scrollState(shown[blockKey(el)]); });
    placeChildren(into, blocks);
    blocks.forEach(function (el, i) { restoreScroll(el, scrolls[i]); });
    return true;
  }
  function childElements(el) { return Array.prototype.slice.call(el.children); }
  // Makes `blocks` the element children of `parent`, in order, moving no node
  // that is already in place: a node taken out of the document, even for a
  // moment, loses the focus (replaceChildren would take out every one).
  function placeChildren(parent, blocks) {
    var keep = new Set(blocks);
    childElements(parent).forEach(function (el) { if (!keep.has(el)) el.remove(); });
    var cursor = parent.firstElementChild;
    blocks.forEach(function (el) {
      if (el === cursor) cursor = cursor.nextElementSibling;
      else parent.insertBefore(el, cursor);
    });
  }
  // Blocks are matched by their data-block name (the job page names each one),
  // else by id, else by tag and class.
  function blockKey(el) {
    return el.getAttribute("data-block") || (el.id ? "#" + el.id : el.tagName + "." + el.className);
  }
  // What the user did to a block that the server cannot know: which folds
  // they opened or closed. Matched by position, only when the block has the
  // same number of folds as before.
  function carryViewState(old, fresh) {
    var was = old.querySelectorAll("details"), now = fresh.querySelectorAll("details");
    if (was.length !== now.length) return;
    for (var i = 0; i < was.length; i++) now[i].open = was[i].open;
  }
  // Where the user scrolled inside a block's boxes (traces, JSON, logs), by
  // box: its tag and class and its place among the block's boxes of that kind,
  // so a box appearing or going elsewhere in the block (a new attempt's trace)
  // does not lose the logs' place.
  function scrollBoxes(el) {
    var seen = {}, keyed = {};
    Array.prototype.forEach.call(el.querySelectorAll("pre, ol"), function (box) {
      var kind = box.tagName + "." + box.className;
      seen[kind] = (seen[kind] || 0) + 1;
      keyed[kind + "#" + seen[kind]] = box;
    });
    return keyed;
  }
  function scrollState(el) {
    if (!el) return null;
    var state = {}, boxes = scrollBoxes(el);
    Object.keys(boxes).forEach(function (key) {
      var box = boxes[key];
      if (box.scrollTop || box.scrollLeft) state[key] = [box.scrollTop, box.scrollLeft];
    });
    return state;
  }
  function restoreScroll(el, state) {
    if (!state) return;
    var boxes = scrollBoxes(el);
    Object.keys(state).forEach(function (key) {
      if (boxes[key]) { boxes[key].scrollTop = state[key][0]; boxes[key].scrollLeft = state[key][1]; }
    });
  }

  // An active job's "running 42 s" (dashboard/presenters.py, running_label)
  // counts on between refreshes: data-running-ms is how long the job had run
  // when the server rendered it, counted on from when this page got the node,
  // so the browser's clock is never compared with the server's.
  var runningSince = new WeakMap();
  function tickRunning() {
    var now = Date.now();
    document.querySelectorAll("[data-running-ms]").forEach(function (el) {
      if (!runningSince.has(el)) runningSince.set(el, now - (Number(el.getAttribute("data-running-ms")) || 0));
      var seconds = Math.floor(Math.max(0, now - runningSince.get(el)) / 1000);
      var text = "running " + (seconds < 60 ? seconds + " s" : wholeUnits(seconds));
      if (el.textContent !== text) el.textContent = text;
    });
  }
  function wholeUnits(seconds) {  // presenters.span from a minute up
    if (seconds >= 2 * 365 * 86400) return Math.floor(seconds / (365 * 86400)) + " years";
    var units = [[86400, "d"], [3600, "h"], [60, "min"]];
    for (var i = 0; i < units.length; i++) {
      if (seconds >= units[i][0]) return Math.floor(seconds / units[i][0]) + " " + units[i][1];
    }
    return seconds + " s";
  }
  if (pageKind === "job" || jobTable) setInterval(tickRunning, 1000);

  // ------------------------------------------------------------ the events feed
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
  if (feed) sizeLiveRows();
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
  var drawBudget = rowsPerUpdate, budgetAt = Date.now();
  // The filter: one event's name, "all", or "" for state changes only: every
  // event but the quiet ones the server lists (dashboard/views.py QUIET_EVENTS).
  var filterType = "", filterJob = "", quiet = {}, jobUrl = "";
  function readFilter(table) {
    filterType = table.getAttribute("data-filter-type") || "";
    filterJob = table.getAttribute("data-filter-job") || "";
    quiet = {};
    (table.getAttribute("data-quiet-events") || "").split(" ").forEach(function (name) { if (name) quiet[name] = true; });
    jobUrl = table.getAttribute("data-job-url") || "";
  }
  if (feed) readFilter(feed);
  // Read by bench/live.py: XADD-to-DOM latencies (ms), rows drawn, time spent applying batches.
  var measured = window.echomqLive = {rendered: 0, latencies: [], flushes: 0, flushMs: 0, arrivals: []};
  function record(list, value) {  // the newest 10,000 to 20,000 measurements
    list.push(value);
    if (list.length > 20000) list.splice(0, 10000);
  }
  // Rows live.js adds are marked live-new; they also slide in tinted (live-fresh)
  // only while the feed is slow enough to read row by row. Above that every
  // animated row repaints its part of the page on every frame for 1.5 s: at
  // tens of rows a second that is most of what a page costs, all of it spent
  // on motion nobody can follow.
  var ANIMATE_BELOW_PER_S = 5;
  var rowTemplate = document.createElement("tr");
  rowTemplate.className = "live-new";
  rowTemplate.innerHTML = '<td class="time"><time></time></td><td><span class="badge"></span></td><td class="id"></td><td class="detail"></td>';

  function utc(ms, text) {  // like the ms_datetime filter: any writer may put any number in a field
    var when = new Date(ms);
    return isNaN(when.getTime()) ? text : when.toISOString().replace("T", " ").replace("Z", " UTC");
  }

  function feedRow(queue, event) {
    var row = rowTemplate.cloneNode(true);
    row.setAttribute("data-event-id", event.id);
    row.setAttribute("data-event", event.event);
    var cells = row.cells;
    var when = utc(parseId(event.id)[0], event.id);
    var time = cells[0].firstChild;
    time.title = when;
    time.textContent = when.slice(11, 23);
    var badge = cells[1].firstChild;
    badge.className = "badge state-" + event.state;
    badge.textContent = event.event;
    if (event.job_id !== null) {
      row.setAttribute("data-job-id", event.job_id);
      var link = document.createElement("a");
      link.href = jobUrl + encodeURIComponent(event.job_id);
      link.textContent = event.job_id.length > 40 ? event.job_id.slice(0, 39) + "…" : event.job_id;
      cells[2].appendChild(link);
    }
    cells[3].textContent = event.detail;
    return row;
  }
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
    var most = rate < FAST_FEED_PER_S ? depth : Math.min(depth, rowsPerUpdate);
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
    if (!unseen || rate < liveRows) return liveRows;
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
    if (shrunk && !paused && !held) redraw(queues[0]);
  }

  function drawRows(queue, events, keep, redrawn) {
    var chunk = document.createElement("tbody");
    chunk.className = "live-chunk";
    var animate = !redrawn && rate < ANIMATE_BELOW_PER_S;
    for (var i = events.length - 1; i >= 0; i--) {
      var row = feedRow(queue, events[i]);
      if (animate) row.classList.add("live-fresh");
      chunk.appendChild(row);
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
      drawRows(queues[0], recent.slice(-drawn), liveRows, true);
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
    window.echomqHold(feed, function (why) { holdWhy = why; setHeld(); });
  }

  function setupControls() {
    var holder = document.querySelector("[data-live-controls]");
    if (!holder || !feedLive) return;
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
      redraw(queues[0]);
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
    var news = (paused || held) && newWhilePaused ? newWhilePaused.toLocaleString("en-US") + " new ↑" : "";
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
  var filterForm = document.querySelector("form.event-filter");
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
    if (!feedLive) { location.assign(url); return; }  // an older page: start from the newest
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
      lastIds[queues[0]] = renderedSince || "0-0";
      send({type: "subscribe", queues: [subscription(queues[0])]});  // replaces the old one
      showStatus();
      rearm(feedBody);
    });
  }
  if (filterForm && feed) {
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

  // ------------------------------------------------------------ applying batches

  var incoming = [];     // [queue, events] pairs since the last flush
  var dirty = {};        // queue -> true when its lists should be refetched
  var countsDirty = {};  // queue -> true when its counts should be refetched
  var flushTimer = null, lastFlush = 0, rate = 0, rateAt = Date.now();

  function noteRate(n) {  // events per second, smoothed over about a second
    var now = Date.now(), dt = Math.max(1, now - rateAt);
    rateAt = now;
    var weight = Math.min(1, dt / 1000);
    rate = rate * (1 - weight) + (n * 1000 / dt) * weight;
  }
  function scheduleFlush() {
    if (flushTimer !== null) return;
    // Below FAST_FEED_PER_S each server message is applied as it comes: the
    // server already spaces them 10-20 ms apart (dashboard/live/hub.py), and
    // holding one back for a later update only adds to its latency. A faster
    // feed is applied every rate/10 ms, 10 times a second at 1,000 events/s:
    // each update (layout and paint) is then paid at most that often however
    // fast events come. 10 ms at least: a page may follow several busy queues.
    var gap = rate < FAST_FEED_PER_S ? 10 : Math.min(100, rate / 10);
    var wait = lastFlush + gap - Date.now();
    // Due already (the server's own batching spaced this message): apply it in
    // this task rather than paying one more task and its wait for the timer.
    if (wait <= 0) flush();
    else flushTimer = setTimeout(flush, wait);
  }

  function flush() {
    var began = performance.now();
    try { applyBatch(); } finally {
      measured.flushes += 1;
      measured.flushMs += performance.now() - began;
    }
  }

  function applyBatch() {
    flushTimer = null;
    lastFlush = Date.now();
    var batch = incoming;
    incoming = [];
    var jobId = main.getAttribute("data-job-id");
    var jobTouched = false;
    var active = {};
    var shown = [];  // the feed's events of every message since the last flush: one chunk of rows
    batch.forEach(function (item) {
      var queue = item[0], events = item[1];
      active[queue] = true;
      if (feedLive) {
        events.forEach(function (e) {
          // Each event once: a replay (reconnect, a new filter's subscription)
          // repeats what this page has already taken.
          if (matchesFilter(e) && (!renderedSince || idAfter(e.id, renderedSince))) {
            shown.push(e);
            renderedSince = e.id;
          }
        });
      }
      if (jobId !== null) {
        var ids = watchedIds(queue);
        jobTouched = jobTouched || events.some(function (e) { return ids.indexOf(e.job_id) >= 0; });
      }
    });
    if (shown.length) {
      try {
        feedEvents(queues[0], shown);  // an events page shows one queue
      } catch (error) {  // one odd event must not stop the feed
        console.error("echomq live feed", error);
      }
    }
    if (pageKind === "overview") pulse(Object.keys(active));
    if (Object.keys(countsDirty).length) {
      countsDirty = {};
      if (showsCounts && !jobTable) refreshCounts();  // the queue page's come with its list
    }
    if (Object.keys(dirty).length) {
      dirty = {};
      if (jobTable) refreshList();
    }
    if (jobTouched) refreshJob();
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

  function onEvents(message) {
    if (message.events.length) record(measured.arrivals, Date.now() - parseId(message.events[0].id)[0]);
    lastIds[message.queue] = message.last_id;
    // Pages that only refetch send "bodies": false and get how many events came
    // and their names (see subscription below).
    var count = message.events.length || message.count || 0;
    var kinds = message.kinds || message.events.map(function (e) { return e.event; });
    if (count || message.refresh) dirty[message.queue] = true;
    // Progress moves no job between states: counts (and the overview's rows)
    // stay as they are, and a page of a busy progress reporter does not ask the
    // server for them every second. Lists still refresh (they show progress).
    if (message.refresh || kinds.some(function (kind) { return kind !== "progress"; })) {
      countsDirty[message.queue] = true;
    }
    noteRate(count + (message.skipped || 0));
    if (count) incoming.push([message.queue, message.events]);
    scheduleFlush();
    announce(message.queue);
  }

  // Page parts with scripts of their own (cohorts.js) hear that a queue moved.
  function announce(queue) {
    document.dispatchEvent(new CustomEvent("echomq:queue-moved", {detail: {queue: queue}}));
  }

  function onGap(message) {
    lastIds[message.queue] = message.last_id;
    dirty[message.queue] = countsDirty[message.queue] = true;
    if (feedLive) reloadFeed();
    if (pageKind === "job") refreshJob();
    scheduleFlush();
    announce(message.queue);
  }

  // ------------------------------------------------------------ the socket

  // html[data-live]: connecting, subscribing, open (live), closed (reconnecting),
  // unreachable (the server says Redis does not answer it) or failing-over (it
  // does not, and the sentinels are replacing the master): what the page shows
  // is then stale until a status "ok" (or a fresh socket's subscriptions) says otherwise.
  var socket = null, attempt = 0, stopped = false, redisDown = "";

  function setState(state) {
    document.documentElement.setAttribute("data-live", redisDown || state);
  }
  // What this page needs of a queue's events: the feed every event (of its job
  // filter, if any), a job page its job's, the overview and the queue page only
  // that something happened (they refetch what they show).
  function subscription(queue) {
    var wanted = {queue: queue, last_id: lastIds[queue] || null};
    if (feedLive) {
      if (filterJob) wanted.job = filterJob;
    } else if (pageKind === "job") {
      var ids = watchedIds(queue);
      wanted.job = ids.length === 1 ? ids[0] : ids;
    } else {
      wanted.bodies = false;
    }
    return wanted;
  }
  function send(message) {  // dropped while closed: the next connection subscribes afresh
    if (message.queues && !message.queues.length) return;
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + document.body.getAttribute("data-live-url"));
    setState("connecting");
    var confirmed = {};  // queues whose position the server has confirmed on this socket
    function confirm(queue) {
      confirmed[queue] = true;
      if (Object.keys(confirmed).length >= queues.length) setState("open");
    }
    function subscribeAll() {
      confirmed = {};
      setState("subscribing");
      send({type: "subscribe", queues: queues.map(subscription)});
      if (!queues.length) { redisDown = ""; setState("open"); }
    }
    // Redis stopped answering the server: say so; once it answers again, subscribe
    // again from the positions this page has, and the server replays what it missed.
    function onStatus(message) {
      if (message.redis === "unreachable" || message.redis === "failing_over") {
        redisDown = message.redis === "failing_over" ? "failing-over" : "unreachable";
        setState(redisDown);
      } else if (redisDown) { redisDown = ""; subscribeAll(); }
    }
    socket.onopen = function () {
      attempt = 0;
      subscribeAll();
      if (pageKind === "overview") send({type: "discover"});
    };
    socket.onmessage = function (frame) {
      var message = JSON.parse(frame.data);
      if (message.type === "events") onEvents(message);
      else if (message.type === "gap") { redisDown = ""; onGap(message); confirm(message.queue); }
      else if (message.type === "subscribed") {
        redisDown = "";  // the server just read Redis for this page
        var first = !(message.queue in lastIds);
        lastIds[message.queue] = message.last_id;
        if (first) {  // whatever changed between the render and this subscription
          dirty[message.queue] = countsDirty[message.queue] = true;
          if (pageKind === "job") refreshJob();
          scheduleFlush();
        }
        confirm(message.queue);
      } else if (message.type === "error") confirm(message.queue);  // that queue stays still
      else if (message.type === "status") onStatus(message);
      else if (message.type === "queues") onQueues(message);
    };
    socket.onclose = function (close) {
      setState("closed");
      if (close.code === 4401) {
        var login = new URL(document.body.getAttribute("data-login-url"), location.href);
        login.searchParams.set("next", location.pathname + location.search);
        location.assign(login.href);
        return;
      }
      if (close.code === 4403 || close.code === 4400 || stopped) return;
      // 4408: this page did not read what it was sent in time (a sleeping tab, a
      // stalled network): come back after the longest wait.
      if (close.code === 4408) attempt = BACKOFF_MS.length - 1;
      var wait = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)];
      attempt += 1;
      setTimeout(connect, wait / 2 + Math.random() * wait / 2);
    };
  }

  window.addEventListener("pagehide", function () { stopped = true; if (socket) socket.close(); });
  window.addEventListener("pageshow", function (event) {  // back from the back/forward cache
    if (event.persisted) { stopped = false; connect(); }
  });
  setupControls();
  if (feedLive) {
    pinColumns(feed);
    var sizing = false;
    var resize = function () {
      if (sizing) return;
      sizing = true;
      requestAnimationFrame(function () {
        sizing = false;
        if (sizeLiveRows() && !paused && !held && recent.length) redraw(queues[0]);
      });
    };
    window.addEventListener("scroll", resize, {passive: true});
    window.addEventListener("resize", resize);
    ["mousedown", "focusin", "touchstart"].forEach(function (type) { feed.addEventListener(type, pointOlderLink); });
    watchPointer();
  }
  connect();
})();

// EchoMQ live updates: what a page shows, kept current from one WebSocket
// (socket.js; dashboard/live/consumer.py on the server).
//
// The page says what it shows through data attributes rendered by the server:
//   main[data-page]                overview | queue | events | schedulers | job
//   [data-queue="prefix:name"]     the queue(s) of the page (overview: one per row)
//   [data-count-state=<state>]     a count to keep current (counts.js)
//   [data-live-dot]                pulses when that queue has events (overview.js)
//   #job-table                     the queue page's job list (job_list.js); the
//                                  schedulers tab's list rides on it
//   #event-feed[data-last-id]      the events tab's feed (feed.js), continued from that id
//   main[data-job-id]              the job page (job_page.js)
//   [data-running-ms]              an active job's running time (running.js)
//
// Every URL comes from the server (Django's reverse), never pasted together here:
// body[data-live-url] the socket, body[data-login-url] the login page,
// main[data-counts-url] a queue's counts (JSON). Queue names may hold "/" or "~",
// which the server writes its own way (dashboard/core/converters.py); lists and pages
// are refetched from location.href, links in fragments and in the feed's rows
// are the server's own.
//
// Work is coalesced: events are queued as they arrive and applied in one pass
// per flush (each server message as it comes below a few hundred events a
// second, 10 flushes a second at 1,000 events/s), and counts / lists are
// refetched from the server at most once a second instead of being computed
// from events. The overview also asks for the set of queues, so a queue
// started elsewhere gets its row.

import {headShowsPaused, refreshHead, setCounts} from "./counts.js";
import {FAST_FEED_PER_S, measured, parseId, record, startFeed} from "./feed.js";
import {startJobList} from "./job_list.js";
import {startJobPage} from "./job_page.js";
import {startOverview} from "./overview.js";
import {REFRESH_MS, getJson, throttled} from "./refresh.js";
import {keepCounting} from "./running.js";
import {send, startSocket} from "./socket.js";

var main = document.querySelector("main[data-page]");
if (main && window.WebSocket) start(main);

function start(main) {
  var pageKind = main.getAttribute("data-page");
  var rate = 0;  // events a second, smoothed (noteRate)
  // What the parts share: the queues followed (the overview's rows and a job
  // page's flow change them), where each one's events were read up to (the
  // resume point), and the socket.
  var page = {
    main: main,
    queues: [],
    lastIds: {},
    send: send,
    subscription: subscription,
    rate: function () { return rate; },
  };
  if (pageKind === "overview") {
    document.querySelectorAll("tr[data-queue]").forEach(function (row) { page.queues.push(row.getAttribute("data-queue")); });
  } else if (main.getAttribute("data-queue")) {
    page.queues.push(main.getAttribute("data-queue"));
  }
  var job = pageKind === "job" ? startJobPage(page) : null;
  // The overview listens even with no queue yet: the first one gets its row.
  if (!page.queues.length && pageKind !== "overview") return;

  var feed = startFeed(page);
  var feedLive = !!feed && feed.live;
  var showsCounts = !!document.querySelector("[data-count-state]");
  var overview = pageKind === "overview" ? startOverview(page) : null;
  var refreshList = startJobList();

  // The overview refetches its rows; the events tab its counts (the queue page
  // gets them with its list).
  var refreshCounts = overview ? overview.refresh : throttled(REFRESH_MS, function () {
    var url = main.getAttribute("data-counts-url");
    if (!url) return;
    return getJson(url).then(function (q) {
      setCounts(document, q.counts);
      if (q.paused !== headShowsPaused()) refreshHead();
    });
  });

  if (job || refreshList) keepCounting();

  // What this page needs of a queue's events: the feed every event (of its job
  // filter, if any), a job page its job's, the overview and the queue page only
  // that something happened (they refetch what they show).
  function subscription(queue) {
    var wanted = {queue: queue, last_id: page.lastIds[queue] || null};
    if (feedLive) {
      if (feed.jobFilter()) wanted.job = feed.jobFilter();
    } else if (job) {
      var ids = job.watchedIds(queue);
      wanted.job = ids.length === 1 ? ids[0] : ids;
    } else {
      wanted.bodies = false;
    }
    return wanted;
  }

  // ------------------------------------------------------------ applying batches

  var incoming = [];     // [queue, events] pairs since the last flush
  var dirty = {};        // queue -> true when its lists should be refetched
  var countsDirty = {};  // queue -> true when its counts should be refetched
  var flushTimer = null, lastFlush = 0, rateAt = Date.now();

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
    var jobTouched = false;
    var active = {};
    var shown = [];  // the feed's events of every message since the last flush: one chunk of rows
    batch.forEach(function (item) {
      var queue = item[0], events = item[1];
      active[queue] = true;
      if (feedLive) shown = shown.concat(feed.pick(events));
      if (job) {
        var ids = job.watchedIds(queue);
        jobTouched = jobTouched || events.some(function (e) { return ids.indexOf(e.job_id) >= 0; });
      }
    });
    if (shown.length) {
      try {
        feed.show(page.queues[0], shown);  // an events page shows one queue
      } catch (error) {  // one odd event must not stop the feed
        console.error("echomq live feed", error);
      }
    }
    if (overview) overview.pulse(Object.keys(active));
    if (Object.keys(countsDirty).length) {
      countsDirty = {};
      if (showsCounts && !refreshList) refreshCounts();  // the queue page's come with its list
    }
    if (Object.keys(dirty).length) {
      dirty = {};
      if (refreshList) refreshList();
    }
    if (jobTouched) job.refresh();
  }

  // Page parts with scripts of their own (cohorts.js) hear that a queue moved.
  function announce(queue) {
    document.dispatchEvent(new CustomEvent("echomq:queue-moved", {detail: {queue: queue}}));
  }

  startSocket(page, {
    opened: function () { if (overview) send({type: "discover"}); },
    events: function (message) {
      if (message.events.length) record(measured.arrivals, Date.now() - parseId(message.events[0].id)[0]);
      page.lastIds[message.queue] = message.last_id;
      // Pages that only refetch send "bodies": false and get how many events came
      // and their names (see subscription above).
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
    },
    gap: function (message) {
      page.lastIds[message.queue] = message.last_id;
      dirty[message.queue] = countsDirty[message.queue] = true;
      if (feedLive) feed.reload();
      if (job) job.refresh();
      scheduleFlush();
      announce(message.queue);
    },
    subscribed: function (message) {
      var first = !(message.queue in page.lastIds);
      page.lastIds[message.queue] = message.last_id;
      if (first) {  // whatever changed between the render and this subscription
        dirty[message.queue] = countsDirty[message.queue] = true;
        if (job) job.refresh();
        scheduleFlush();
      }
    },
    queues: function (message) { if (overview) overview.onQueues(message); },
  });
}

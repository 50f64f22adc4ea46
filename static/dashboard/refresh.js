// EchoMQ: asking the server for a part of the page again, and putting the
// answer in without moving anything under the person (hold.js). Every part
// that refreshes (the job list, the workers list, "Recent actions", the
// queue's chart) goes through heldPart; the events feed, which draws events
// rather than answers, holds with hold.js directly.

import {watch} from "./hold.js";

// Counts and lists are refetched at most this often, however many events come.
export var REFRESH_MS = 1000;

// The page (or, as a fragment, the part htmx would swap) at `url` as text.
// X-Live-Refresh: a refetch of ours, which must not use up the flash messages
// meant for the page the user is navigating to (templates/dashboard/_messages.html).
export function getText(url, asFragment, accept404) {
  var headers = {"Accept": "text/html", "X-Live-Refresh": "1"};
  if (asFragment) headers["HX-Request"] = "true";
  return fetch(url, {headers: headers, credentials: "same-origin"}).then(function (r) {
    if (!r.ok && !(accept404 && r.status === 404)) throw new Error(url + ": " + r.status);
    return r.text();
  });
}

export function getJson(url) {
  return fetch(url, {headers: {"Accept": "application/json", "X-Live-Refresh": "1"}, credentials: "same-origin"})
    .then(function (r) { if (!r.ok) throw new Error(url + ": " + r.status); return r.json(); });
}

// Let htmx and dashboard.js wire up swapped-in markup.
export function rearm(el) {
  if (window.htmx) window.htmx.process(el);
  el.dispatchEvent(new CustomEvent("htmx:afterSwap", {bubbles: true}));
}

// A job that runs at most once per `gap` ms, trailing: calls during a run or
// during the gap fold into one more run afterwards.
export function throttled(gap, job) {
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

// A part of the page that answers from the server redraw, held still while
// it is in use. offer(fresh) puts an answer in at once (put), or, while
// busy(fresh) gives a reason, keeps the newest one waiting (waits(fresh,
// reason) says so) until that reason ends: the part's own hold ends, or the
// caller calls release() for a reason of its own (a dialog closed).
//   el       the part; its hold (hold.js) is the default reason
//   put      function (fresh): draws an answer
//   busy     function (fresh, why) -> reason or "": defaults to the hold's why
//   waits    function (fresh, reason): an answer is held back
export function heldPart(el, options) {
  var waiting = null;
  var hold = watch(el, release);
  var busy = options.busy || function (fresh, why) { return why; };
  function offer(fresh) {
    var reason = busy(fresh, hold.why());
    if (reason) {
      waiting = fresh;
      if (options.waits) options.waits(fresh, reason);
      return;
    }
    waiting = null;
    options.put(fresh);
  }
  function release() {
    if (waiting === null || busy(waiting, hold.why())) return;
    var fresh = waiting;
    waiting = null;
    options.put(fresh);
  }
  return {offer: offer, release: release};
}

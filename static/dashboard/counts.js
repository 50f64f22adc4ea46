// EchoMQ: a queue's counts where the page shows them, and its header (paused
// or not), kept current by live.js and the job list (job_list.js).
//   [data-count-state=<state>]   a count, compact (its title the exact number)
//   [data-count-exact=<state>]   a count in full ("Retry all 1,204 failed")
//   [data-count-for=<state>]     a button with nothing to act on at zero

import {compact, thousands} from "./format.js";
import {REFRESH_MS, getText, rearm, throttled} from "./refresh.js";

// Every number the page shows of a state, from one set of counts.
export function setCounts(scope, counts) {
  scope.querySelectorAll("[data-count-state]").forEach(function (el) {
    var state = el.getAttribute("data-count-state");
    if (!(state in counts)) return;
    var n = counts[state];
    var text = compact(n);
    if (el.textContent !== text) el.textContent = text;
    el.title = (el.title || "").replace(/^[\d,]*/, thousands(n));
    if (el.hasAttribute("data-count")) el.setAttribute("data-count", String(n));
    var zeroHolder = el.closest(".tab") || el;
    zeroHolder.classList.toggle("zero", n === 0);
  });
  scope.querySelectorAll("[data-count-exact]").forEach(function (el) {
    var state = el.getAttribute("data-count-exact");
    var text = state in counts ? thousands(counts[state]) : el.textContent;
    if (el.textContent !== text) el.textContent = text;
  });
  scope.querySelectorAll("[data-count-for]").forEach(function (button) {
    var state = button.getAttribute("data-count-for");
    if (state in counts) button.disabled = counts[state] === 0;
  });
}

// {state: n} from a tabs bar the server rendered.
export function countsOf(tabs) {
  var counts = {};
  tabs.querySelectorAll("[data-count-state][data-count]").forEach(function (el) {
    counts[el.getAttribute("data-count-state")] = Number(el.getAttribute("data-count")) || 0;
  });
  return counts;
}

export function headShowsPaused() {
  var head = document.querySelector(".queue-head");
  return !!head && !!head.querySelector("[data-paused]");
}

// Paused or resumed elsewhere: the header's badge and pause/resume button follow.
export var refreshHead = throttled(REFRESH_MS, function () {
  var head = document.querySelector(".queue-head");
  if (!head || head.contains(document.activeElement)) return;
  return getText(location.href, false).then(function (html) {
    var next = new DOMParser().parseFromString(html, "text/html").querySelector(".queue-head");
    if (next) { head.replaceWith(document.adoptNode(next)); rearm(next); }
  });
});

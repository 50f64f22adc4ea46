// EchoMQ queue page: the job list kept current by live.js.
//
// One fragment holds the list, its action bar and pager, and the tabs
// (htmx's out-of-band copy), so the tabs, the bulk buttons' counts, the pager
// and the empty state all come from the same answer and are put in together.
// While the table is in use (refresh.js heldPart: a mouse over it, a finger on
// it or scrolling the page, the focus in it; or a menu or confirmation open)
// the newest answer is held instead, nothing moves, and the table's corner
// says what waits ("paused while you scroll · 14 new"); it goes in when the
// user leaves. Rows that stay keep their node (and checkbox).

import {countsOf, headShowsPaused, refreshHead, setCounts} from "./counts.js";
import {thousands} from "./format.js";
import {REFRESH_MS, getText, heldPart, rearm, throttled} from "./refresh.js";

// A list the server is still counting (the error groups: "Counting…",
// "Regrouping…") says so (data-pending) and is asked again until it is
// complete, whether the queue has events or not.
var PENDING_MS = 2000;

var jobTable = null, table = null, pendingTimer = null;

// Returns the function that asks for the list again (throttled), or null
// when the page has no job list.
export function startJobList() {
  jobTable = document.getElementById("job-table");
  if (!jobTable) return null;
  table = heldPart(jobTable, {busy: inUse, put: applySnapshot, waits: holdSnapshot});
  // A menu or a dialog closed: after the dialog closes (its close event comes first).
  var later = function () { setTimeout(table.release, 0); };
  jobTable.addEventListener("toggle", later, true);
  document.addEventListener("close", later, true);
  // Back to a page of the list htmx pushed: htmx puts the table back as it
  // was then, its bulk buttons' counts included, beside tabs that kept
  // counting (issue 21: a tab read 178 beside "Retry all 180"). The tabs'
  // counts go into the buttons at once, and the list is asked for again so
  // rows and counts come from one answer.
  document.addEventListener("htmx:historyRestore", function () {
    var tabs = document.getElementById("queue-tabs");
    if (tabs) setCounts(jobTable, countsOf(tabs));
    refreshList();
  });
  askAgainIfPending(jobTable);
  return refreshList;
}

var refreshList = throttled(REFRESH_MS, function () {
  var url = location.href;
  return getText(url, true).then(function (html) {
    // The user paged (htmx pushed another address) while this was asked:
    // its answer is the old page's, and must not be drawn over the new one.
    if (url !== location.href) return;
    var fresh = document.createElement("template");
    fresh.innerHTML = html;
    askAgainIfPending(fresh.content);
    table.offer({content: fresh.content, url: url});
  });
});

function askAgainIfPending(root) {
  clearTimeout(pendingTimer);
  if (root.querySelector("[data-index-status][data-pending]")) pendingTimer = setTimeout(refreshList, PENDING_MS);
}

function inUse(snapshot, why) {
  return why || (document.querySelector("dialog[open]") ? "you confirm" : "") ||
    (jobTable.querySelector("details[open]") ? "focus" : "");
}

// What waits, said in the table's corner.
function holdSnapshot(snapshot, reason) {
  var fresh = snapshot.content;
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
  if (waiting) news.push(thousands(waiting) + " new");
  if (left) news.push(thousands(left) + " left");
  if (!news.length && countsMoved) news.push("new counts");
  var why = reason !== "focus" ? reason : document.querySelector("dialog[open]") ? "you confirm" : "the table has focus";
  showHold(news.length ? "paused while " + why + " · " + news.join(" · ") : "");
}
function showHold(text) {
  var cue = jobTable.querySelector("[data-hold-cue]");
  if (cue && cue.textContent !== text) cue.textContent = text;
}

function applySnapshot(snapshot) {
  if (snapshot.url !== location.href) return;  // read for a page of the list no longer shown
  var fresh = snapshot.content;
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

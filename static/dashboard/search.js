// The queue page's search (templates/dashboard/search/_search.html, dashboard/search/views.py).
// The server searches one short step per request and answers with the hits,
// the rows to show (escaped server-side, like the job table's) and a cursor;
// this asks again with the cursor until the search is done, cancelled, or the
// page goes away (then nobody asks, and the server holds nothing). Each row
// ends with the text it matched (the match marked), so a false hit shows.
// While a search is on, its results take the place of the tab's list (one
// list, one set of act buttons); Close brings the list back, kept current
// meanwhile by live.js. Matches are kept (up to data-limit ids) for the
// act-on-results buttons, whose confirmation dashboard.js asks with the count
// ({count}), the queue and the search ({query}); after acting, the search
// runs again, so the results show where the jobs are now.

import {thousands as fmt} from "./format.js";

var PAGE_ROWS = 50;
var root = null;
var run = 0;  // the current search's number: answers of older ones are dropped
var controller = null;
var found = null;  // {ids: [], seen: Set, rows, searched, total, unchecked, running, query}

function part(name) { return root.querySelector("[data-search-" + name + "]"); }
// The tab's own list (and its bulk buttons), hidden while results show.
function showList(shown) {
  var list = document.getElementById("job-table");
  if (list) list.hidden = !shown;
}

function say(text) {
  var message = part("message");
  message.textContent = text;
  message.hidden = !text;
}

function progress() {
  var words = found.running ? "Searching… searched " : found.cancelled ? "Cancelled after searching " : "Searched ";
  words += fmt(found.searched) + " of " + fmt(Math.max(found.total, found.searched));
  var matching = found.ids.length + found.beyond;
  words += " · " + fmt(matching) + " matching";
  if (matching > found.rows) words += " (the newest " + fmt(found.rows) + " shown)";
  if (found.unchecked) words += " · " + fmt(found.unchecked) + " too large to look into";
  part("progress").textContent = words;
  var count = found.ids.length;
  root.querySelectorAll("[data-search-act]").forEach(function (form) {
    form.querySelector("[data-count-exact]").textContent = fmt(count);
    form.querySelector("[data-search-scope]").textContent = found.beyond ? "the first" : "all";
    form.querySelector("button[type=submit]").disabled = found.running || found.acted || count === 0;
    form.setAttribute("data-query", found.query);  // the confirmation names it
    form.dispatchEvent(new CustomEvent("echomq:counted", {bubbles: true}));
  });
  part("cancel").hidden = !found.running;
}

function stop(cancelled) {
  run += 1;
  if (controller) controller.abort();
  controller = null;
  if (found && found.running) {
    found.running = false;
    found.cancelled = cancelled;
    progress();
  }
}

function keep(answer) {
  var limit = Number(root.getAttribute("data-limit")) || 10000;
  answer.hits.forEach(function (id) {
    // A step may look again at a few jobs: each is kept once. Past the
    // limit, matches are only counted (a search of millions must not fill
    // the tab's memory; a rare repeat there may count twice).
    if (found.seen.has(id)) return;
    if (found.ids.length < limit) {
      found.seen.add(id);
      found.ids.push(id);
    } else {
      found.beyond += 1;
    }
  });
  if (answer.rows_html && found.rows < PAGE_ROWS) {
    var body = part("rows");
    var holder = document.createElement("tbody");
    holder.innerHTML = answer.rows_html;  // built and escaped by dashboard.shared.presenters
    Array.prototype.slice.call(holder.children).forEach(function (row) {
      var id = row.getAttribute("data-job-id");
      if (found.rows >= PAGE_ROWS || (id && body.querySelector('[data-job-id="' + CSS.escape(id) + '"]'))) return;
      body.appendChild(row);
      found.rows += 1;
    });
    part("table").hidden = found.rows === 0;
  }
  found.searched = answer.searched;
  found.total = answer.total;
  found.unchecked += answer.unchecked;
}

function ask(mine, searchId, cursor) {
  var params = new URLSearchParams({state: root.getAttribute("data-state"), q: found.query});
  params.set("rows", String(Math.max(0, PAGE_ROWS - found.rows)));
  if (cursor) { params.set("search", searchId); params.set("cursor", cursor); }
  controller = new AbortController();
  fetch(root.getAttribute("data-search-url") + "?" + params.toString(), {
    headers: {"Accept": "application/json"}, credentials: "same-origin", signal: controller.signal,
  }).then(function (response) {
    return response.json().then(function (body) { return {status: response.status, body: body}; });
  }).then(function (answer) {
    if (mine !== run) return;
    if (answer.status === 429) { setTimeout(function () { if (mine === run) ask(mine, searchId, cursor); }, 500); return; }
    if (answer.status !== 200) {
      found.running = false;
      progress();
      say(answer.body && answer.body.error ? answer.body.error.message : "The search failed (" + answer.status + ")");
      return;
    }
    keep(answer.body);
    if (answer.body.done) found.running = false;
    progress();
    if (!answer.body.done) ask(mine, answer.body.search, answer.body.cursor);
  }).catch(function (error) {
    if (mine !== run || (error && error.name === "AbortError")) return;
    found.running = false;
    progress();
    say("The search stopped: the dashboard could not be reached. Search again to start over.");
  });
}

// `message`: what to say above the new results ("" for nothing).
function start(query, message) {
  stop(false);
  found = {query: query, ids: [], seen: new Set(), beyond: 0, rows: 0, searched: 0, total: 0, unchecked: 0, running: true, cancelled: false, acted: false};
  part("rows").textContent = "";
  part("table").hidden = true;
  part("results").hidden = false;
  showList(false);
  say(message || "");
  progress();
  ask(run, "", null);
}

function act(form, submitter) {
  var token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var body = {action: submitter.getAttribute("data-search-action"), state: form.querySelector("input[name=state]").value, ids: found.ids};
  form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
  fetch(root.getAttribute("data-act-url"), {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": token},
    body: JSON.stringify(body),
  }).then(function (response) {
    return response.json();
  }).then(function (answer) {
    if (answer.error) { say(answer.error.message); progress(); return; }
    found.acted = true;
    var state = root.getAttribute("data-state-label");
    start(found.query, answer.message + ". Searched again: the list shows the matches still " + state + ".");
  }).catch(function () {
    say("The action could not be sent: the dashboard could not be reached. Nothing is known to have changed.");
    progress();
  });
}

function onSubmit(event) {
  var form = event.target;
  if (!root || !root.contains(form)) return;
  event.preventDefault();
  if (form.hasAttribute("data-search-form")) {
    var query = form.querySelector("input[name=q]").value.trim();
    if (query) start(query, "");
  } else if (form.hasAttribute("data-search-act") && found && !found.running) {
    act(form, event.submitter || form.querySelector("button[type=submit]"));
  }
}

function onClick(event) {
  if (!root || !event.target.closest) return;
  if (event.target.closest("[data-search-cancel]")) stop(true);
  if (event.target.closest("[data-search-close]")) {
    stop(true);
    part("results").hidden = true;
    showList(true);
    say("");
  }
}

document.addEventListener("DOMContentLoaded", function () { root = document.querySelector("[data-search]"); });
// Bubble phase: dashboard.js's confirmation (capture phase) runs first and
// lets the submit through only once the dialog says yes.
document.addEventListener("submit", onSubmit);
document.addEventListener("click", onClick);
window.addEventListener("pagehide", function () { stop(true); });

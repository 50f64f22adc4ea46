// EchoMQ job page: kept current by live.js. When the job (or, in a flow, a
// job of the tree shown: #flow-watch, dashboard/flows/views.py) has an event, the
// page is asked for again whole and merged block by block (mergeBlocks).
// A block that holds the focus stays while the user works in it and the page
// is asked for again when the focus leaves it. While a confirmation is open
// nothing is merged: the focus is in the dialog, so the head would be swapped
// whole (its title changes every second on a running job) and the form the
// dialog is about to submit would be gone with it; the page catches up when
// the dialog closes.

import {getText, rearm, throttled} from "./refresh.js";

var page = null;     // live.js's {main, queues, send, subscription}
var flowWatch = {};  // queue -> the ids of the tree's jobs shown in it
var jobFocusWaiting = false;

// Adds the flow's queues to page.queues; returns what live.js asks of the job page.
export function startJobPage(livePage) {
  page = livePage;
  flowWatch = readFlowWatch();
  Object.keys(flowWatch).forEach(function (queue) { if (page.queues.indexOf(queue) < 0) page.queues.push(queue); });
  page.main.addEventListener("focusout", function () { if (jobFocusWaiting) refreshJob(); });
  document.addEventListener("close", function () { if (jobFocusWaiting) refreshJob(); }, true);
  return {refresh: refreshJob, watchedIds: watchedIds};
}

function readFlowWatch() {
  var block = document.getElementById("flow-watch");
  var watch = {};
  try { watch = block ? JSON.parse(block.textContent) || {} : {}; } catch (error) { watch = {}; }
  return watch;
}

// The job ids of `queue` this job page follows.
function watchedIds(queue) {
  var ids = (flowWatch[queue] || []).slice();
  var own = page.main.getAttribute("data-job-id");
  if (queue === page.main.getAttribute("data-queue") && ids.indexOf(own) < 0) ids.unshift(own);
  return ids;
}

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
    if (mergeBlocks(page.main, next)) { rearm(page.main); followFlow(); }
  });
});

// The tree shown changed: follow its jobs from now on (queues it left are let go).
function followFlow() {
  var before = JSON.stringify(flowWatch);
  flowWatch = readFlowWatch();
  if (JSON.stringify(flowWatch) === before) return;
  var own = page.main.getAttribute("data-queue");
  var next = [own].concat(Object.keys(flowWatch).filter(function (queue) { return queue !== own; }));
  var gone = page.queues.filter(function (queue) { return next.indexOf(queue) < 0; });
  page.queues = next;
  page.send({type: "subscribe", queues: page.queues.map(page.subscription)});
  page.send({type: "unsubscribe", queues: gone});
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

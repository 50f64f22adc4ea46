// EchoMQ: when a part of the page that live updates redraw (the job list, the
// events feed, the workers list, "Recent actions") must hold still, because
// the person is using it. One rule for every such part (refresh.js's heldPart
// and the events feed call watch):
//
//   "pointing"    a mouse (or pen) is over it: a row must not move under it;
//   "you touch"   a finger went down on it: a touch screen has no hover, so
//                 the hold starts with the touch (a tap lands on the row that
//                 was under the finger) and lasts QUIET_MS after it lifts;
//   "you scroll"  the page is being scrolled with a finger (momentum too), and
//                 QUIET_MS after: the row scrolled to is the one about to be tapped;
//   "focus"       the keyboard focus is in it.
//
// After a tap the browser leaves :hover on what was tapped ("sticky hover"):
// while the last pointer was a finger, :hover means nothing and is not read.
// Everything is followed by the input's own events: a live update costs
// nothing more than asking why() when it is about to redraw.

// A touch or a touch scroll holds this long after it ends: long enough to
// read the rows a scroll stopped on and tap one, short enough that the list
// catches up soon after the hand leaves the screen.
var QUIET_MS = 3000;

var watchers = [];
var lastPointer = "";      // "mouse", "pen" or "touch": the last pointer used
var fingers = 0;           // fingers on the screen now
var touchedAt = 0;         // when a finger was last down or the page last scrolled by one
var scrolled = false;      // this touch (and its quiet time) scrolled the page
var touched = [];          // the watched parts the current touch began on
var quietTimer = null;

function touching() { return fingers > 0 || quietTimer !== null; }

function why(watcher) {
  var el = watcher.el;
  if (touching()) {
    if (scrolled) return "you scroll";
    if (touched.indexOf(el) >= 0) return "you touch";
  }
  if (lastPointer !== "touch" && el.matches(":hover")) return "pointing";
  if (el.contains(document.activeElement)) return "focus";
  return "";
}

function notify() {
  watchers.forEach(function (watcher) {
    var now = why(watcher);
    if (now === watcher.last) return;
    watcher.last = now;
    watcher.onChange(now);
  });
}

function quietCheck() {
  quietTimer = null;
  var left = touchedAt + QUIET_MS - Date.now();
  if (fingers > 0) return;  // touchend starts the wait again
  if (left > 0) { quietTimer = setTimeout(quietCheck, left); return; }
  scrolled = false;
  touched = [];
  notify();
}
function touchGoesOn() {
  touchedAt = Date.now();
  if (quietTimer === null && fingers === 0) quietTimer = setTimeout(quietCheck, QUIET_MS);
}

document.addEventListener("pointerdown", function (event) { lastPointer = event.pointerType; }, {capture: true, passive: true});
document.addEventListener("pointermove", function (event) { lastPointer = event.pointerType; }, {capture: true, passive: true});
document.addEventListener("touchstart", function (event) {
  if (!touching()) { scrolled = false; touched = []; }
  lastPointer = "touch";
  fingers = event.touches.length;
  touchedAt = Date.now();
  if (quietTimer !== null) { clearTimeout(quietTimer); quietTimer = null; }
  watchers.forEach(function (watcher) {
    if (watcher.el.contains(event.target) && touched.indexOf(watcher.el) < 0) touched.push(watcher.el);
  });
  notify();
}, {capture: true, passive: true});
function lifted(event) {
  fingers = event.touches.length;
  if (fingers === 0) touchGoesOn();
}
document.addEventListener("touchend", lifted, {capture: true, passive: true});
document.addEventListener("touchcancel", lifted, {capture: true, passive: true});
// Any scroll while a finger drives the page: the window's, or a box's (a
// wide table scrolled sideways); a momentum scroll goes on after the lift.
document.addEventListener("scroll", function () {
  if (!touching()) return;
  touchGoesOn();
  if (!scrolled) { scrolled = true; notify(); }
}, {capture: true, passive: true});

// Follow `el`: onChange(why) is called whenever the reason to hold it
// changes ("" = free to redraw). Returns {why: function () -> reason now}.
export function watch(el, onChange) {
  var watcher = {el: el, onChange: onChange, last: ""};
  watcher.last = why(watcher);
  watchers.push(watcher);
  // :hover follows the mouse once this event is handled.
  function mouse(event) {
    if (event.pointerType === "touch") return;
    lastPointer = event.pointerType;
    setTimeout(notify, 0);
  }
  el.addEventListener("pointerenter", mouse);
  el.addEventListener("pointerleave", mouse);
  el.addEventListener("focusin", notify);
  // focusout fires before the focus lands elsewhere.
  el.addEventListener("focusout", function () { setTimeout(notify, 0); });
  return {why: function () { return why(watcher); }};
}

// EchoMQ live connection: one WebSocket per page (dashboard/live/consumer.py),
// reconnected with backoff, its state on html[data-live] for the stylesheet:
// connecting, subscribing, open (live), closed (reconnecting), unreachable
// (the server says Redis does not answer it) or failing-over (it does not, and
// the sentinels are replacing the master): what the page shows is then stale
// until a status "ok" (or a fresh socket's subscriptions) says otherwise.
// The socket's URL and the login page's come from the server (body[data-live-url],
// body[data-login-url]).

var BACKOFF_MS = [500, 1000, 2000, 4000, 5000];

var page = null;  // live.js's {queues, subscription}
var on = null;    // live.js's handlers: opened, events, gap, subscribed, queues
var socket = null, attempt = 0, stopped = false, redisDown = "";

function setState(state) {
  document.documentElement.setAttribute("data-live", redisDown || state);
}

// Dropped while closed: the next connection subscribes afresh.
export function send(message) {
  if (message.queues && !message.queues.length) return;
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

export function startSocket(livePage, handlers) {
  page = livePage;
  on = handlers;
  window.addEventListener("pagehide", function () { stopped = true; if (socket) socket.close(); });
  window.addEventListener("pageshow", function (event) {  // back from the back/forward cache
    if (event.persisted) { stopped = false; connect(); }
  });
  connect();
}

function connect() {
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  socket = new WebSocket(scheme + location.host + document.body.getAttribute("data-live-url"));
  setState("connecting");
  var confirmed = {};  // queues whose position the server has confirmed on this socket
  function confirm(queue) {
    confirmed[queue] = true;
    if (Object.keys(confirmed).length >= page.queues.length) setState("open");
  }
  function subscribeAll() {
    confirmed = {};
    setState("subscribing");
    send({type: "subscribe", queues: page.queues.map(page.subscription)});
    if (!page.queues.length) { redisDown = ""; setState("open"); }
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
    on.opened();
  };
  socket.onmessage = function (frame) {
    var message = JSON.parse(frame.data);
    if (message.type === "events") on.events(message);
    else if (message.type === "gap") { redisDown = ""; on.gap(message); confirm(message.queue); }
    else if (message.type === "subscribed") {
      redisDown = "";  // the server just read Redis for this page
      on.subscribed(message);
      confirm(message.queue);
    } else if (message.type === "error") confirm(message.queue);  // that queue stays still
    else if (message.type === "status") onStatus(message);
    else if (message.type === "queues") on.queues(message);
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
    // stalled network); 4429: this user has too many live pages open (the
    // server's SOCKETS_PER_USER): come back after the longest wait.
    if (close.code === 4408 || close.code === 4429) attempt = BACKOFF_MS.length - 1;
    var wait = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)];
    attempt += 1;
    setTimeout(connect, wait / 2 + Math.random() * wait / 2);
  };
}

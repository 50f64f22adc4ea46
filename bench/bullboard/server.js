// bull-board (the peer of bench/dashboard.py), serving the queues it is told
// about on the Redis the bench seeded. Run by the bench from a scratch folder
// holding the npm packages of bench/bullboard/package.json:
//
//   REDIS_URL=redis://127.0.0.1:6379/0 QUEUES=big,queue-00 PORT=3000 node server.js
//
// bull-board has no discovery: it shows the queues its host registers, so
// the bench passes every queue it seeded. No authentication (bull-board has
// none of its own); the bench compares answering the same questions.
"use strict";

const express = require("express");
const { Queue } = require("bullmq");
const { createBullBoard } = require("@bull-board/api");
const { BullMQAdapter } = require("@bull-board/api/bullMQAdapter");
const { ExpressAdapter } = require("@bull-board/express");

// redis://host:port/db, or unix:///path/to/redis.sock?db=N (the bench's
// private servers listen on a unix socket only).
const url = new URL(process.env.REDIS_URL);
const connection = url.protocol === "unix:"
  ? { path: url.pathname, db: Number(url.searchParams.get("db") || 0) }
  : {
    host: url.hostname,
    port: Number(url.port || 6379),
    db: Number((url.pathname || "/0").slice(1) || 0),
  };
const prefix = process.env.PREFIX || "bull";
const queues = (process.env.QUEUES || "").split(",").filter(Boolean)
  .map((name) => new BullMQAdapter(new Queue(name, { connection, prefix })));

const serverAdapter = new ExpressAdapter();
serverAdapter.setBasePath("/");
createBullBoard({ queues, serverAdapter });

const app = express();
app.use("/", serverAdapter.getRouter());
const server = app.listen(Number(process.env.PORT), "127.0.0.1", () => {
  console.log(`bull-board on ${process.env.PORT}: ${queues.length} queues`);
});
server.keepAliveTimeout = 120000;
// Keep-alive connections would hold a graceful close open: the bench is done asking.
process.on("SIGTERM", () => process.exit(0));

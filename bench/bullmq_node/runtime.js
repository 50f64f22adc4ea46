// BullMQ's Node.js runtime, the peer of bench/runtime.py, doing exactly what
// the bench's Python child does with ours (see that file for the method).
// Run by the bench from a scratch folder holding bench/bullmq_node/package.json's
// packages:
//
//   node runtime.js '{"phase": "process", "socket": "/tmp/r.sock", "jobs": 50000,
//                     "concurrency": 100, "batch": 1000, "redisPid": 1234}'
//
// and for bench/retry_all.py, BullMQ's own retry of every failed job of a
// queue the bench seeded (Queue.retryJobs, 1,000 per call, as its default):
//
//   node runtime.js '{"phase": "retry", "socket": "/tmp/r.sock", "queue": "big",
//                     "prefix": "bull", "redisPid": 1234}'
//
// Prints one JSON line: wall seconds, Redis CPU seconds and the calls per
// command (INFO commandstats) of the timed part.
"use strict";

const fs = require("fs");
const { Queue, Worker } = require("bullmq");

const args = JSON.parse(process.argv[2]);
const connection = { path: args.socket, maxRetriesPerRequest: null };
const QUEUE = "bench";
const TICKS = 100; // USER_HZ: what /proc/<pid>/stat counts in on Linux

// utime + stime of the Redis server, in seconds.
function redisCpu() {
  const fields = fs.readFileSync(`/proc/${args.redisPid}/stat`, "utf8")
    .split(")").pop().trim().split(/\s+/);
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

// Calls per command so far (INFO commandstats), as the Python child reads them.
async function commandCalls(client) {
  const calls = {};
  for (const line of (await client.info("commandstats")).split("\n")) {
    const found = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (found) calls[found[1]] = Number(found[2]);
  }
  return calls;
}

async function mark(client) {
  return { at: process.hrtime.bigint(), cpu: redisCpu(), calls: await commandCalls(client) };
}

function figures(start, end) {
  const calls = {};
  for (const [name, count] of Object.entries(end.calls)) {
    calls[name] = count - (start.calls[name] || 0);
  }
  return { wall: Number(end.at - start.at) / 1e9, redis_cpu: end.cpu - start.cpu, calls };
}

async function addAll(queue) {
  for (let offset = 0; offset < args.jobs; offset += args.batch) {
    const size = Math.min(args.batch, args.jobs - offset);
    const jobs = [];
    for (let i = 0; i < size; i++) {
      jobs.push({ name: "tiny", data: { n: 0 }, opts: { removeOnComplete: true } });
    }
    await queue.addBulk(jobs);
  }
}

async function drained(queue) {
  const client = await queue.client;
  for (;;) {
    const [wait, active] = await Promise.all([client.llen(queue.keys.wait), client.llen(queue.keys.active)]);
    if (wait === 0 && active === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

async function retryAll() {
  const queue = new Queue(args.queue, { connection, prefix: args.prefix });
  const client = await queue.client;
  const start = await mark(client);
  await queue.retryJobs({ state: "failed", count: 1000 });
  const result = figures(start, await mark(client));
  await queue.close();
  return result;
}

async function main() {
  if (args.phase === "retry") {
    process.stdout.write(JSON.stringify(await retryAll()) + "\n");
    return;
  }
  const queue = new Queue(QUEUE, { connection });
  const client = await queue.client;
  let result;
  if (args.phase === "add") {
    const start = await mark(client);
    await addAll(queue);
    result = figures(start, await mark(client));
  } else {
    await addAll(queue);
    let start = null;
    let seen = 0;
    let lastTaken;
    const allTaken = new Promise((resolve) => { lastTaken = resolve; });
    const worker = new Worker(QUEUE, async () => {
      if (start === null) start = await mark(client);
      seen += 1;
      if (seen === args.jobs) lastTaken();
    }, { connection, concurrency: args.concurrency });
    await allTaken;
    await drained(queue);
    result = figures(start, await mark(client));
    await worker.close();
  }
  await queue.close();
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

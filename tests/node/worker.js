#!/usr/bin/env node
// rsmq-worker 0.5.2 (npm) with a no-op handler, for bench/worker.py.
//
//   node worker.js '{"port": 6379, "ns": "bench", "qname": "q", "interval": [0, 0.01]}'
//
// Runs on the original rsmq 0.12.4 (the `rsmq` option: the client tests/node pins)
// rather than the rsmq 0.7 rsmq-worker brings along. Prints "ready" once connected;
// SIGTERM stops it.
"use strict";

const RedisSMQ = require("rsmq");
const RSMQWorker = require("rsmq-worker");

const config = JSON.parse(process.argv[2] || "{}");
const rsmq = new RedisSMQ({ host: "127.0.0.1", port: config.port, ns: config.ns || "rsmq" });
const worker = new RSMQWorker(config.qname, {
  rsmq,
  interval: config.interval || [0, 0.01],
  invisibletime: 30,
  timeout: 0,
  maxReceiveCount: 1000,
});

worker.on("message", (message, next) => next());
worker.on("error", (err) => process.stderr.write(`rsmq-worker error: ${err}\n`));
worker.on("ready", () => process.stdout.write("ready\n"));
process.on("SIGTERM", () => {
  worker.stop();
  process.exit(0);
});
worker.start();

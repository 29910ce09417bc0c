#!/usr/bin/env node
// Benchmark driver for bench/core.py: the original Node rsmq 0.12.4, one call at a time.
//
//   taskset -c 1 node bench.js '{"port": 6379, "ns": "bench"}'
//
// Reads one JSON command per line on stdin and answers one JSON line on stdout:
//   {"op": "send", "qname": q, "n": N, "message": body}  -> N x sendMessageAsync
//   {"op": "receive", "qname": q, "n": N}                 -> N x receiveMessageAsync
//   {"op": "delete", "qname": q, "ids": [...]}            -> deleteMessageAsync per id
//   {"op": "quit"}
// Each answer is {"n": calls, "seconds": elapsed, "misses": calls that found nothing};
// every call is awaited before the next one starts, as a sequential client would.
"use strict";

const readline = require("readline");
const RedisSMQ = require("rsmq");

const config = JSON.parse(process.argv[2] || "{}");
const rsmq = new RedisSMQ({ host: "127.0.0.1", port: config.port, ns: config.ns || "rsmq" });

async function run(cmd) {
  let misses = 0;
  const start = process.hrtime.bigint();
  if (cmd.op === "send") {
    const options = { qname: cmd.qname, message: cmd.message };
    for (let i = 0; i < cmd.n; i++) {
      await rsmq.sendMessageAsync({ ...options });
    }
  } else if (cmd.op === "receive") {
    for (let i = 0; i < cmd.n; i++) {
      const msg = await rsmq.receiveMessageAsync({ qname: cmd.qname });
      if (!msg.id) misses++;
    }
  } else if (cmd.op === "delete") {
    for (const id of cmd.ids) {
      if ((await rsmq.deleteMessageAsync({ qname: cmd.qname, id })) !== 1) misses++;
    }
  } else {
    throw new Error("unknown op " + cmd.op);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { n: cmd.op === "delete" ? cmd.ids.length : cmd.n, seconds, misses };
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const queue = [];
let busy = false;

async function drain() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const cmd = JSON.parse(queue.shift());
    if (cmd.op === "quit") {
      await rsmq.quitAsync();
      process.exit(0);
    }
    try {
      process.stdout.write(JSON.stringify(await run(cmd)) + "\n");
    } catch (err) {
      process.stdout.write(JSON.stringify({ error: err.name, message: err.message }) + "\n");
    }
  }
  busy = false;
}

rl.on("line", (line) => {
  if (line.trim()) {
    queue.push(line);
    drain();
  }
});
rl.on("close", () => rsmq.quit());

#!/usr/bin/env node
// Runs a batch of operations with the original Node rsmq 0.12.4 and prints their results.
//
//   node driver.js '{"port": 6379, "ns": "rsmq", "realtime": false}' < ops.json
//
// ops.json is a JSON list of [method, options] pairs, e.g.
//   [["createQueue", {"qname": "q"}], ["sendMessage", {"qname": "q", "message": "hi"}]]
// Each one is awaited in order through rsmq's *Async method. An option value of the form
// {"$ref": [i, "field"]} is replaced by field of the i-th result (or the whole result
// when field is null), so "receive, then delete what was received" fits in one batch.
// Prints one JSON list: each op's result, or {"error": err.name, "message": err.message}.
"use strict";

const RedisSMQ = require("rsmq");

function readStdin() {
  return new Promise((resolve, reject) => {
    let data = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (data += chunk));
    process.stdin.on("end", () => resolve(data));
    process.stdin.on("error", reject);
  });
}

function resolveRefs(value, results) {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, results));
  if (value && typeof value === "object") {
    if (Array.isArray(value.$ref)) {
      const [i, field] = value.$ref;
      const r = results[i];
      return field == null ? r : r[field];
    }
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveRefs(v, results);
    return out;
  }
  return value;
}

async function main() {
  const config = JSON.parse(process.argv[2] || "{}");
  const ops = JSON.parse(await readStdin());
  const rsmq = new RedisSMQ({
    host: "127.0.0.1",
    port: config.port,
    ns: config.ns || "rsmq",
    realtime: Boolean(config.realtime),
  });
  const results = [];
  for (const [method, options] of ops) {
    const fn = rsmq[method + "Async"];
    if (typeof fn !== "function") {
      results.push({ error: "driverError", message: "no such method: " + method });
      continue;
    }
    try {
      const args = method === "listQueues" ? [] : [resolveRefs(options || {}, results)];
      results.push(await fn(...args));
    } catch (err) {
      results.push({ error: err.name, message: err.message });
    }
  }
  await rsmq.quitAsync();
  process.stdout.write(JSON.stringify(results));
}

main().catch((err) => {
  process.stderr.write(String((err && err.stack) || err) + "\n");
  process.exit(1);
});

#!/usr/bin/env node
// rest-rsmq's own test suite (smrchy/rest-rsmq, test/test.js: 14 tests), its requests sent
// as its test/support/http.js sends them: Node's http.request, the body given with
// req.write() (so Transfer-Encoding: chunked, no Content-Length), then req.end().
// The requests and the checks are the suite's, test by test, in its order and under its
// names; what we add: the base path, and a token header (rest-rsmq had no auth).
//
//   node rest_rsmq_suite.js '{"port": 8000, "base": "/api/rest-rsmq", "token": "rsmq_…",
//                             "form": false}'
//
// "form": true sends the two bodies form-encoded (express' bodyParser took both).
// Prints one JSON object: {"tests": [{"name", "ok", "error"}], "requests": [{"method",
// "path", "header"}]} — "header" is the request head Node wrote, for the caller to check.
"use strict";

const http = require("http");
const assert = require("assert");

const config = JSON.parse(process.argv[2] || "{}");
const requests = [];

// test/support/http.js's Request, with our base path and token.
class Request {
  constructor() {
    this.data = [];
    this.header = {};
    if (config.token) this.header.Authorization = `Bearer ${config.token}`;
  }
  request(method, path) {
    this.method = method;
    this.path = path;
    return this;
  }
  get(path) { return this.request("get", path); }
  post(path) { return this.request("post", path); }
  put(path) { return this.request("put", path); }
  delete(path) { return this.request("delete", path); }
  set(field, val) {
    this.header[field] = val;
    return this;
  }
  write(data) {
    this.data.push(data);
    return this;
  }
  end() {
    return new Promise((resolve, reject) => {
      const req = http.request({
        method: this.method,
        port: config.port,
        host: config.host || "127.0.0.1",
        path: (config.base || "") + this.path,
        headers: this.header,
      });
      this.data.forEach((chunk) => req.write(chunk));
      req.on("error", reject);
      req.on("response", (res) => {
        let buf = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (buf += chunk));
        res.on("end", () => {
          res.body = buf;
          resolve(res);
        });
      });
      req.end();
      requests.push({ method: this.method.toUpperCase(), path: req.path, header: req._header });
    });
  }
}

function request() {
  return new Request();
}

// A body as the suite writes it (JSON), or form-encoded.
function body(req, fields) {
  if (config.form) {
    const form = new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)]));
    return req.set("Content-Type", "application/x-www-form-urlencoded").write(form.toString());
  }
  return req.set("Content-Type", "application/json").write(JSON.stringify(fields));
}

const q1 = "mytestQueue";
let m1 = null;
let m2 = null;

const tests = [
  ["POST /queues/mytestQueue should return 200 and create the queue", async () => {
    const resp = await body(request().post("/queues/" + q1), { vt: 20, maxsize: 2048 }).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).result, 1);
  }],
  ["POST /messages/mytestQueue should return 200 and send message 1", async () => {
    const resp = await body(request().post("/messages/" + q1), { message: "Hello World!" }).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    const b = JSON.parse(resp.body);
    assert.strictEqual(b.id.length, 32);
    m1 = b.id;
  }],
  ["POST /messages/mytestQueue should return 200 and send message 2", async () => {
    const resp = await body(request().post("/messages/" + q1), { message: "Foo", delay: 20 }).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    const b = JSON.parse(resp.body);
    assert.strictEqual(b.id.length, 32);
    m2 = b.id;
  }],
  ["GET /messages/mytestQueue should return message 1", async () => {
    const resp = await request().get("/messages/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).id, m1);
  }],
  ["GET /messages/mytestQueue should not return a message", async () => {
    const resp = await request().get("/messages/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.ok(JSON.parse(resp.body).id == null, resp.body); // should.not.exist
  }],
  ["PUT /messages/mytestQueue/message2 to set vt to 0", async () => {
    const resp = await request().put("/messages/" + q1 + "/" + m2 + "?vt=0").end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).result, 1);
  }],
  ["GET /messages/mytestQueue should return message 2", async () => {
    const resp = await request().get("/messages/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).id, m2);
  }],
  ["GET /messages/mytestQueue should not return a message", async () => {
    const resp = await request().get("/messages/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.ok(JSON.parse(resp.body).id == null, resp.body);
  }],
  ["DELETE /messages/mytestQueue/:message1 should delete message 1", async () => {
    const resp = await request().delete("/messages/" + q1 + "/" + m1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).result, 1);
  }],
  ["DELETE /messages/mytestQueue/:message1 should fail", async () => {
    const resp = await request().delete("/messages/" + q1 + "/" + m1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).result, 0);
  }],
  ["DELETE /messages/mytestQueue/:message2 should delete message 2", async () => {
    const resp = await request().delete("/messages/" + q1 + "/" + m2).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.strictEqual(JSON.parse(resp.body).result, 1);
  }],
  ["GET /queues/mytestQueue should return our queue attributes", async () => {
    const resp = await request().get("/queues/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    const b = JSON.parse(resp.body);
    assert.strictEqual(b.maxsize, 2048);
    assert.strictEqual(b.totalsent, 2);
  }],
  ["GET /queues should return our queue name", async () => {
    const resp = await request().get("/queues").end();
    assert.strictEqual(resp.statusCode, 200, resp.body);
    assert.ok(JSON.parse(resp.body).queues.includes(q1), resp.body); // containEql
  }],
  ["DELETE /queues/mytestQueue should return 200 ", async () => {
    const resp = await request().delete("/queues/" + q1).end();
    assert.strictEqual(resp.statusCode, 200, resp.body); // .expect(200, done)
  }],
];

async function main() {
  const results = [];
  for (const [name, fn] of tests) {
    try {
      await fn();
      results.push({ name, ok: true, error: null });
    } catch (e) {
      results.push({ name, ok: false, error: String(e && e.message ? e.message : e) });
    }
  }
  process.stdout.write(JSON.stringify({ tests: results, requests }) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});

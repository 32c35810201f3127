#!/usr/bin/env node
/*
 * cosmos-shim.js — runs @vercel/cosmosdb-server (1.0.1) with fixes needed by the
 * Python azure-cosmos SDK. Same CLI as cosmosdb-server:
 *   node cosmos-shim.js -p PORT [--host 127.0.0.1] [--no-ssl]
 *
 * Fixes (all by wrapping the package's route table at request time, no files edited):
 *  1. Transactional batch: the Python SDK sends the partition key only in the
 *     x-ms-documentdb-partitionkey header, not per operation, so every
 *     replace/upsert/read/delete op made the server throw -> HTTP 500 (after running
 *     the earlier ops). The header value is now copied onto each op.
 *  2. Batch atomicity: the server runs ops one by one and never rolls back. Now the
 *     collection's in-memory maps are copied before the batch and put back if any op
 *     fails. The failing op keeps its status and every other op gets 424, like Cosmos.
 *     HTTP status 207 on failure. Also enforces <=100 ops and the same partition key.
 *  3. read_item on a missing id/partition: server crashed (TypeError -> 500); now 404.
 *  4. POST .../operations/partitionkeydelete (delete_all_items_by_partition_key):
 *     implemented (there was no route -> 400).
 *  5. Request bodies over COSMOS_SHIM_MAX_BYTES (default 2 MiB) on document
 *     writes/batches -> 413, like the real service. Set it to 0 to turn the check off.
 *  6. With --no-ssl the account metadata now advertises http:// (the package says https://,
 *     which made the SDK switch to TLS unless enable_endpoint_discovery=False).
 *  7. keep-alive turned on (the package sends "Connection: close" by default).
 *
 * --exit-with-parent: exit when stdin closes. The launcher holds the other end of a pipe,
 * so the emulator never outlives the process that started it, even one killed with SIGKILL.
 */
const path = require("path");
const net = require("net");

const base = path.dirname(require.resolve("@vercel/cosmosdb-server/package.json", { paths: [__dirname] }));
const lib = (p) => require(path.join(base, "lib", p));

const { createHttpServer, createHttpsServer } = lib("index");
const routesMod = lib("routes");
const batchMod = lib("handler/batch-documents");
const readDocMod = lib("handler/read-document");
const readMetaMod = lib("handler/read-meta");
const docOps = lib("handler/_document-operations");
const { patchOperation } = lib("handler/_patch-operations");
const { parsePartitionKey } = lib("utils/get-partition-from-header");
const trueHeader = lib("true-header").default;
const json = lib("json").default;

const MAX_BYTES = parseInt(process.env.COSMOS_SHIM_MAX_BYTES || String(2 * 1024 * 1024), 10);
const MAX_BATCH_OPS = 100;
const PK_HEADER = "x-ms-documentdb-partitionkey";

function snapshot(docs) {
  return { data: new Map(docs._data), index: new Map(docs._index), ridCount: docs._ridCount };
}
function restore(docs, s) {
  docs._data = s.data;
  docs._index = s.index;
  docs._ridCount = s.ridCount;
}

async function batchHandler(account, req, res, { dbId, collId }) {
  const body = await json(req);
  const continueOnError = trueHeader(req, "x-ms-cosmos-batch-continue-on-error");
  const collection = account.database(dbId).collection(collId);
  if (!collection.read()) {
    res.statusCode = 404;
    return { code: "NotFound", message: "collection not found" };
  }
  if (!Array.isArray(body)) {
    res.statusCode = 400;
    return { message: "Invalid request body" };
  }
  if (body.length > MAX_BATCH_OPS) {
    res.statusCode = 400;
    return { code: "BadRequest", message: `Batch request has more operations than what is supported (${MAX_BATCH_OPS}).` };
  }
  const headerPk = req.headers[PK_HEADER];
  const pkValue = headerPk ? parsePartitionKey(headerPk, undefined) : undefined;
  const docs = collection.documents;
  const snap = snapshot(docs);
  const out = [];
  let failedAt = -1;
  for (let i = 0; i < body.length; i += 1) {
    const input = Object.assign({}, body[i]);
    if (input.partitionKey === undefined && headerPk) input.partitionKey = headerPk;
    let result;
    try {
      const writesBody = ["Create", "Upsert", "Replace"].includes(input.operationType);
      if (writesBody && input.resourceBody && headerPk !== undefined && docs._getPartition(input.resourceBody) !== pkValue) {
        result = { statusCode: 400, body: { code: "BadRequest", message: "PartitionKey extracted from document doesn't match the one specified in the header" } };
      } else {
        switch (input.operationType) {
          case "Create": result = docOps.createOperation(collection, input); break;
          case "Upsert": result = docOps.upsertOperation(collection, input); break;
          case "Read": result = docOps.readOperation(collection, input); break;
          case "Delete": result = docOps.deleteOperation(collection, input); break;
          case "Replace": result = docOps.replaceOperation(collection, input); break;
          case "Patch": {
            // patch may mutate nested objects in place: swap in a deep copy first so the snapshot stays intact
            const cur = collection.document(input.id, parsePartitionKey(input.partitionKey, input.id)).read();
            if (cur) docs._data.set(cur._rid, docs._newItem(structuredClone(cur)));
            const rb = input.resourceBody || {};
            result = patchOperation(collection, { id: input.id, partitionKey: input.partitionKey, ifMatch: input.ifMatch,
                                                  operations: rb.operations || [], condition: rb.condition });
            break;
          }
          default:
            restore(docs, snap);
            res.statusCode = 400;
            return { message: `Operation type '${input.operationType}' is not supported in Batch.` };
        }
      }
    } catch (err) {
      result = { statusCode: err.badRequest ? 400 : 500, body: { message: String(err.message) } };
    }
    if (result.statusCode >= 400) {
      out.push({ statusCode: result.statusCode, requestCharge: 0, resourceBody: result.body });
      if (!continueOnError) { failedAt = i; break; }
    } else {
      out.push({ statusCode: result.statusCode, requestCharge: 1,
                 eTag: result.body ? result.body._etag : undefined, resourceBody: result.body });
    }
  }
  if (failedAt >= 0) {
    restore(docs, snap); // atomic: undo everything
    const failed = out[failedAt];
    res.statusCode = 207;
    return body.map((_, i) => (i === failedAt ? failed : { statusCode: 424, requestCharge: 0 }));
  }
  return out;
}

function readDocHandler(account, req, res, params) {
  const collection = account.database(params.dbId).collection(params.collId);
  if (collection.read() && !trueHeader(req, "x-ms-documentdb-query-enablecrosspartition") && req.headers[PK_HEADER]) {
    let found = null;
    try {
      found = collection.document(params.docId, parsePartitionKey(req.headers[PK_HEADER], params.docId)).read();
    } catch (e) { /* fall through to original handler */ found = true; }
    if (!found) {
      res.statusCode = 404;
      return { code: "NotFound", message: "Entity with the specified id does not exist in the system." };
    }
  }
  return readDocMod.default(account, req, res, params);
}

async function pkDeleteHandler(account, req, res, { dbId, collId }) {
  req.resume();
  const collection = account.database(dbId).collection(collId);
  if (!collection.read()) { res.statusCode = 404; return { code: "NotFound", message: "" }; }
  const pk = parsePartitionKey(req.headers[PK_HEADER], undefined);
  const docs = collection.documents;
  for (const item of [...docs._data.values()]) {
    const d = item.read();
    if (d && docs._getPartition(d) === pk) docs.delete(d.id, pk);
  }
  return {};
}

// account metadata advertises https://host:port even with --no-ssl, so the SDK's endpoint
// discovery switched to https and failed (WRONG_VERSION_NUMBER). Advertise http:// instead.
function readMetaHttp(account, req, res, params) {
  const meta = JSON.parse(JSON.stringify(readMetaMod.default(account, req, res, params)));
  for (const k of ["writableLocations", "readableLocations"]) {
    (meta[k] || []).forEach((l) => { l.databaseAccountEndpoint = l.databaseAccountEndpoint.replace(/^https:/, "http:"); });
  }
  return meta;
}

const PKDEL_RE = /^\/+dbs\/([^/]+)\/colls\/([^/]+)\/operations\/partitionkeydelete\/?$/;
const origRoutes = routesMod.default;
routesMod.default = (req) => {
  const pathname = new URL(req.url, "http://x").pathname;
  const m = req.method === "POST" && PKDEL_RE.exec(pathname);
  if (m) return [{ dbId: decodeURIComponent(m[1]), collId: decodeURIComponent(m[2]) }, pkDeleteHandler];
  const route = origRoutes(req);
  if (!route) return route;
  const [params, handler] = route;
  if (handler === batchMod.default) return [params, batchHandler];
  if (handler === readDocMod.default) return [params, readDocHandler];
  if (handler === readMetaMod.default && NOSSL) return [params, readMetaHttp];
  return route;
};

// ---- CLI (same flags as cosmosdb-server)
const NOSSL = process.argv.includes("--no-ssl");
const argv = process.argv.slice(2);
const args = {};
while (argv.length) {
  const k = argv.shift();
  if (k === "-p" || k === "--port") args.port = parseInt(argv.shift(), 10);
  else if (k === "--host") args.hostname = argv.shift();
  else if (k === "--no-ssl") args.nossl = true;
  else if (k === "--no-keepalive") args.nokeepalive = true;
  else if (k === "--exit-with-parent") args.exitWithParent = true;
}
if (args.exitWithParent) {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}
const server = (args.nossl ? createHttpServer : createHttpsServer)({ keepAlive: !args.nokeepalive });
const [inner] = server.listeners("request");
server.removeAllListeners("request");
server.on("request", (req, res) => {
  const len = parseInt(req.headers["content-length"] || "0", 10);
  if (MAX_BYTES > 0 && len > MAX_BYTES && req.method !== "GET" && /\/docs(\/|$|\?)/.test(req.url)) {
    req.resume();
    res.statusCode = 413;
    res.setHeader("content-type", "application/json");
    res.setHeader("x-ms-activity-id", "00000000-0000-0000-0000-000000000000");
    res.end(JSON.stringify({ code: "RequestEntityTooLarge", message: `Request size ${len} exceeds ${MAX_BYTES} bytes.` }));
    return;
  }
  inner(req, res);
});
server.listen(args.port, args.hostname, () => {
  const { address, port } = server.address();
  console.log(`Ready to accept HTTP${args.nossl ? "" : "S"} connections at ${address}:${port} (cosmos-shim)`);
});

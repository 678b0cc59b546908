// The offline copy of the site: a service worker that keeps what a search and the viewer need.
//
// Registered by offline.js as sw.js?build=<hash of build.json>: a rebuilt site with another
// build.json registers a new version, whose install fills a new cache and whose activation
// drops the old ones.
//
// Install caches the pages, the Pyodide runtime and the packages the worker loads, the wheels,
// and the shard. It runs after the first result, so it never competes with it. Of the shard
// (files named by their content hash, listed in its manifest and its notebook table) it caches
// every file while the whole shard is small (OFFLINE_SHARD_BYTES: any question then works
// offline), and then the archive's notebooks and their re-rendered versions too (for the
// viewer); else only the manifest and boot files (manifest.boot). The postings partitions,
// clusters and notebook containers a search fetches are cached as they come, so a question
// asked once can be asked again offline, and a large archive is never copied whole.
//
// Fetching: the runtime under pyodide/ is pinned by its version (in build.json) and comes from
// the cache first. Everything else goes to the network first, so a rebuilt wheel, shard or page
// shows at once (the dev server asks for revalidation on every request), and falls back to the
// cache when the network fails: offline, or the server stopped.
//
// What is cached: only the URLs the build lists (the install above fills the cache with exactly
// those, so a URL is listed when the cache holds it), and only responses that are ok, from this
// origin, not redirected and of the type their name calls for (`expected`): a page as HTML, a
// script as JavaScript, and nothing else as anything a browser would run or show as a page.
// Python code that runs in the page's worker (a learner's) can fetch any URL of the site; what it
// gets back never enters the cache. (A notebook re-rendered in the viewer runs in a worker that
// can fetch nothing: worker.js, re-render mode.)

const VERSION = new URL(self.location.href).searchParams.get("build") ?? "unversioned";
const CACHE = `cellar-${VERSION}`;
const SITE = new URL("./", self.location.href);
const RUNTIME = new URL("pyodide/", SITE).pathname;
// The packages worker.js loads beside the wheels; their dependencies come from the lock.
const BOOT_PACKAGES = ["numpy"];
const OFFLINE_SHARD_BYTES = 20e6;
const PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];
const PAGES = [
  "./", "index.html", "index.js", "viewer.html", "viewer.js", "document.html", "document.js", "search-client.js", "offline.js",
  "cellar-client.js", "worker.js", "ui.js", "style.css", "build.json", "bundles/notebook.js",
];

async function json(path) {
  const response = await fetch(new URL(path, SITE), { cache: "no-cache" });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${response.statusText}`);
  return response.json();
}

// A path in the archive as a URL path: each segment encoded (as the viewer encodes it).
function archiveUrl(folder, path) {
  return folder + path.split("/").map(encodeURIComponent).join("/");
}

// The shard's notebook table (a boot file: gzip of a cellar.retrieval.packing file, by columns).
async function notebookTable(shard, manifest) {
  const response = await fetch(new URL(shard + manifest.table, SITE), { cache: "no-cache" });
  if (!response.ok) throw new Error(`${manifest.table}: ${response.status} ${response.statusText}`);
  const stream = response.body.pipeThrough(new DecompressionStream("gzip"));
  return unpacked(new Uint8Array(await new Response(stream).arrayBuffer()), manifest.table);
}

// A packed file: "CELLAR2\n", its header's length (uint32, little-endian), the header (JSON:
// meta data, and each array's dtype, shape and offset after the header), the arrays' bytes.
function unpacked(bytes, name) {
  const magic = new TextDecoder().decode(bytes.subarray(0, 8));
  if (magic !== "CELLAR2\n") throw new Error(`${name}: not a cellar .bin file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const body = 12 + view.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, body)));
  return { meta: header.meta, array: (key) => ({ ...header.arrays[key], view, at: body + header.arrays[key].offset }) };
}

// Every notebook's value of a table column (cellar.retrieval.table: values, text or json; the
// service worker reads only those three).
function tableColumn(table, name) {
  const spec = table.meta.columns[name];
  const rows = table.meta.rows;
  const numbers = (key) => {
    const { dtype, view, at } = table.array(key);
    if (dtype === "<i4") return (i) => view.getInt32(at + 4 * i, true);
    if (dtype === "<i8") return (i) => Number(view.getBigInt64(at + 8 * i, true));
    throw new Error(`table column ${name}: unexpected dtype ${dtype}`);
  };
  if (spec.encoding === "values") {
    const code = numbers(`${name}.codes`);
    return Array.from({ length: rows }, (_, n) => spec.values[code(n)]);
  }
  const offset = numbers(`${name}.offsets`);
  const { view, at } = table.array(`${name}.utf8`);
  const decoder = new TextDecoder();
  return Array.from({ length: rows }, (_, n) => {
    const text = decoder.decode(new Uint8Array(view.buffer, view.byteOffset + at + offset(n), offset(n + 1) - offset(n)));
    return spec.encoding === "json" ? JSON.parse(text) : text;
  });
}

// The shard files to keep at install, and the notebooks for the viewer: all of them while the
// whole shard is small, else only the manifest's boot files and no notebook.
async function shardFiles(shard, manifest) {
  if (manifest.bytes > OFFLINE_SHARD_BYTES) return { names: manifest.boot, notebooks: [] };
  const table = await notebookTable(shard, manifest);
  const rendered = tableColumn(table, "rendered");
  const notebooks = tableColumn(table, "path").map((path, n) => ({ path, rendered: rendered[n] }));
  return { names: [...Object.keys(manifest.files), ...tableColumn(table, "container")], notebooks };
}

// A shard file's name, as the manifest lists it or as a container is named (by its hash).
const CONTAINER = /^notebooks\/[0-9a-f]{20}\.bin\.gz$/;

async function siteFiles() {
  const build = await json("build.json");
  const lock = await json("pyodide/pyodide-lock.json");
  const packages = new Set();
  const add = (name) => {
    if (packages.has(name)) return;
    packages.add(name);
    lock.packages[name].depends.forEach(add);
  };
  BOOT_PACKAGES.forEach(add);
  const manifest = await json(`${build.shard}manifest.json`);
  const { names, notebooks } = await shardFiles(build.shard, manifest);
  return {
    needed: [
      ...PAGES,
      ...PYODIDE_FILES.map((name) => `pyodide/${name}`),
      ...[...packages].map((name) => `pyodide/${lock.packages[name].file_name}`),
      ...build.wheels,
      `${build.shard}manifest.json`,
      ...names.map((name) => build.shard + name),
    ],
    notebooks: [
      ...notebooks.map((entry) => archiveUrl(build.archive, entry.path)),
      // the viewer's view of the build's re-render: fresh notebooks and the archive's settings
      ...notebooks.filter((entry) => entry.rendered).map((entry) => archiveUrl(build.rendered, entry.path)),
      ...(build.rendered ? [archiveUrl(build.archive, "rerender.json")] : []),
    ],
  };
}

// Whether `response` may be kept for `url`: ok, same-origin, not redirected, of the expected type.
function cacheable(url, response) {
  if (!response.ok || response.type !== "basic" || response.redirected) return false;
  return expected(url.pathname)((response.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase());
}

const ACTIVE = /html|xml|javascript|ecmascript|svg|text\/css/;
function expected(path) {
  if (path.endsWith("/") || path.endsWith(".html")) return (type) => type === "text/html";
  if (/\.m?js$/.test(path)) return (type) => /^(text|application)\/(javascript|ecmascript)$/.test(type);
  if (path.endsWith(".css")) return (type) => type === "text/css";
  if (path.endsWith(".wasm")) return (type) => type === "application/wasm";
  return (type) => !ACTIVE.test(type);  // data: JSON, wheels, arrays, notebooks, blobs
}

async function keep(cache, path) {
  const url = new URL(path, SITE);
  const response = await fetch(url, { cache: "no-cache" });
  if (!cacheable(url, response)) throw new Error(`${path}: not kept offline (${response.status} ${response.headers.get("content-type")})`);
  await cache.put(url, response);
}

self.addEventListener("install", (event) => {
  self.skipWaiting();
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const { needed, notebooks } = await siteFiles();
    await Promise.all(needed.map((path) => keep(cache, path)));
    // A notebook missing from the archive leaves the viewer without it, not the site without search.
    await Promise.all(notebooks.map((path) => keep(cache, path).catch(() => {})));
  })());
});

// The page's search asks to keep the shard files it fetched (search-client.js keepFetched): its
// Python worker may predate this service worker, whose fetch handler then never saw them. Only
// files the shard's manifest lists are kept.
self.addEventListener("message", (event) => {
  if (event.data?.type !== "keep" || !Array.isArray(event.data.urls)) return;
  event.waitUntil((async () => {
    const build = await json("build.json");
    const manifest = await json(`${build.shard}manifest.json`);
    const shard = new URL(build.shard, SITE).href;
    const listed = event.data.urls.filter((url) => url.startsWith(shard)
      && (url.slice(shard.length) in manifest.files || CONTAINER.test(url.slice(shard.length))));
    const cache = await caches.open(CACHE);
    await Promise.all(listed.map(async (url) => (await cache.match(url)) || cache.add(url)));
  })().catch(() => {}));
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names.filter((name) => name.startsWith("cellar-") && name !== CACHE).map((name) => caches.delete(name)));
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  event.respondWith(url.pathname.startsWith(RUNTIME) ? cacheFirst(request) : networkFirst(event));
});

// A cached copy of a listed URL (pages without their query: viewer.html?path=... is viewer.html),
// if it is still of the expected type; else undefined.
async function listed(cache, request) {
  const cached = await cache.match(request, { ignoreSearch: request.mode === "navigate" });
  return cached && cacheable(new URL(request.url), cached) ? cached : undefined;
}

async function cacheFirst(request) {
  const cache = await caches.open(CACHE);
  return (await listed(cache, request)) ?? fetch(request);  // a URL the build did not list is not kept
}

async function networkFirst(event) {
  const { request } = event;
  const cache = await caches.open(CACHE);
  let response;
  try {
    response = await fetch(request);
  } catch (error) {
    const cached = await listed(cache, request);
    if (cached) return cached;
    throw error;
  }
  const url = new URL(request.url);
  if (!url.search && cacheable(url, response)) event.waitUntil(remember(cache, request, response.clone()));
  return response;
}

// Keep a fresh copy of a listed URL, but write a large file (a wheel) only when it changed.
async function remember(cache, request, response) {
  const cached = await cache.match(request);
  if (!cached) return;  // not in the build's list
  const same = (name) => cached.headers.get(name) !== null && cached.headers.get(name) === response.headers.get(name);
  if (same("last-modified") && same("content-length")) return;
  await cache.put(request, response);
}

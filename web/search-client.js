// The search over the site's shard, from any page that has a cellar worker:
//
//   const search = searchClient(cellar);
//   await search.manifest             -> the shard's manifest.json (notebooks table, counts, files)
//   await search.open()               -> {notebooks, chunks, kinds: {kind: count}, model}: the shard
//                                        fetched into Python, checked and opened (once)
//   await search.filters()            -> {years, projects, sources, fields}: what the filters can
//                                        offer (cellar.site.bridge.search_filters)
//   await search.search(query, options) -> the answer contract (see cellar.site.bridge.search for options)
//   search.keepFetched()              -> asks the service worker (once it is active) to keep the
//                                        shard files fetched so far, so a question asked once
//                                        works offline (the worker's own fetches bypass a service
//                                        worker that came after it)
//
// The shard's manifest and boot files (manifest.boot: the cluster centroids) start downloading
// at once, while Python boots (the embedding model comes with the cellar wheel). Everything else
// is fetched on demand: Python names the files a search needs next (the postings partitions of
// the query's terms and the clusters its vector probes, then the containers of the top
// notebooks), the worker fetches those (gzip files named by their hash; Python checks each
// against the manifest's SHA-256 and decompresses it), and Python goes on. A page never
// downloads the whole shard to show a result.

const SHARD_DIR = "/shard";

async function fetchJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
  return response.json();
}

export function searchClient(cellar, site = new URL("./", import.meta.url)) {
  const build = fetchJson(new URL("build.json", site));
  const manifest = build.then((b) => fetchJson(new URL(`${b.shard}manifest.json`, site)));
  const place = Promise.all([build, manifest]).then(([b, m]) => {
    const shardUrl = new URL(b.shard, site);
    const files = {};
    for (const name of ["manifest.json", ...m.boot]) {
      files[`${SHARD_DIR}/${name}`] = new URL(name, shardUrl).href;
    }
    return { shardUrl, files };
  });
  place.then(({ files }) => cellar.prefetch(files), () => {});

  let opened = null;
  cellar.onRestart(() => { opened = null; });
  function open() {
    if (!opened) {
      opened = place.then(({ files }) => cellar.callWith({ files }, "cellar.site.bridge", "search_open", SHARD_DIR));
      opened.catch(() => { opened = null; });
    }
    return opened;
  }

  const filters = () => open().then(() => cellar.call("cellar.site.bridge", "search_filters", SHARD_DIR));

  const fetchedUrls = new Set();
  function keepFetched() {
    if (!("serviceWorker" in navigator) || !fetchedUrls.size) return;
    navigator.serviceWorker.getRegistration(site.href).then((registration) => {
      const worker = registration && registration.active;
      if (!worker || !fetchedUrls.size) return;
      const urls = [...fetchedUrls];
      fetchedUrls.clear();
      worker.postMessage({ type: "keep", urls });
    }, () => {});
  }

  async function search(query, options = {}) {
    const { shardUrl } = await place;
    await open();
    let files = {};
    const placed = new Set();
    // Round by round: partitions and clusters, then the top notebooks' containers, then the
    // answer; a search that falls back (a machine's notes to the other sources, nothing current
    // to a deprecated notebook) names the containers of its second ranking in a round of its own.
    // Every round places files not placed before, so a round that names none would never end.
    for (;;) {
      const answer = await cellar.callWith({ files }, "cellar.site.bridge", "search", query, options, SHARD_DIR);
      Object.values(files).forEach((url) => fetchedUrls.add(url));
      if (!answer.fetch) {
        keepFetched();
        return answer;
      }
      const names = answer.fetch.filter((name) => !placed.has(name));
      if (!names.length) throw new Error(`the shard's files ${answer.fetch.join(", ")} could not be placed in Python's file system`);
      names.forEach((name) => placed.add(name));
      files = Object.fromEntries(names.map((name) => [`${SHARD_DIR}/${name}`, new URL(name, shardUrl).href]));
    }
  }

  return { manifest, open, filters, search, keepFetched };
}

// The search over the site's shard, from any page that has a cellar worker:
//
//   const search = searchClient(cellar);
//   await search.manifest             -> the shard's manifest.json (notebooks table, counts, files)
//   await search.open()               -> {notebooks, chunks, kinds: {kind: count}, model}: the shard
//                                        fetched into Python, checked and opened (once)
//   await search.search(query, options) -> the answer contract (see cellar.site.bridge.search for options)
//
// The shard's arrays start downloading at once, while Python boots (the embedding model comes
// with the cellar wheel). Fragments (one per notebook) are fetched on demand: Python names the
// ones an answer needs, the worker fetches those, and Python answers. A page never downloads the
// whole shard to show a result.

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
    for (const name of ["manifest.json", ...Object.keys(m.files).filter((name) => !name.startsWith("fragments/"))]) {
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

  async function search(query, options = {}) {
    const { shardUrl } = await place;
    await open();
    let files = {};
    // Two rounds at most: the first names the fragments it lacks, the second has them.
    for (let round = 0; round < 2; round++) {
      const answer = await cellar.callWith({ files }, "cellar.site.bridge", "search", query, options, SHARD_DIR);
      if (!answer.fetch) return answer;
      files = Object.fromEntries(answer.fetch.map((name) => [`${SHARD_DIR}/${name}`, new URL(name, shardUrl).href]));
    }
    throw new Error("the shard's fragments could not be placed in Python's file system");
  }

  return { manifest, open, search };
}

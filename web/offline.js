// Offline after the first visit: registers sw.js (see there), versioned by the content of
// build.json, so a site rebuilt with other runtime files replaces the old cache.

export async function registerOffline(site = new URL("./", import.meta.url)) {
  if (!("serviceWorker" in navigator) || !self.isSecureContext) {
    throw new Error("this browser cannot keep the site for offline use here (no service worker)");
  }
  const response = await fetch(new URL("build.json", site));
  if (!response.ok) throw new Error(`build.json: ${response.status} ${response.statusText}`);
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(await response.arrayBuffer()));
  const version = [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  await navigator.serviceWorker.register(new URL(`sw.js?build=${version}`, site), { scope: site.pathname });
  return navigator.serviceWorker.ready;
}

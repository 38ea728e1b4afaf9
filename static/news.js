// newsdesk live updates: new headlines arrive over Server-Sent Events (/events) and are
// inserted at the top of the page without a reload. The page says when the connection drops
// and when it is back; EventSource reconnects by itself and the server replays what was missed
// (Last-Event-ID).
"use strict";

(function () {
  const list = document.getElementById("headlines");
  const status = document.getElementById("live");
  if (!list || !status || !window.EventSource) return;

  const filtered = document.body.dataset.filtered === "true";
  const lastId = Number(document.body.dataset.lastId || "0");
  const seen = new Set(Array.from(list.querySelectorAll("a")).map((a) => a.href));
  let arrived = 0;

  function show(state, text) {
    status.hidden = false;
    status.className = "live " + state;
    status.textContent = text;
  }

  function isHttp(url) {
    try {
      const u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch (e) {
      return false;
    }
  }

  function insert(h) {
    const item = document.createElement("li");
    item.className = "headline is-new just-arrived site-" + h.site;
    const link = document.createElement("a");
    link.href = h.url;
    link.rel = "noopener noreferrer";
    link.target = "_blank";
    link.textContent = h.title; // text, never markup
    const source = document.createElement("span");
    source.className = "source";
    const badge = document.createElement("span");
    badge.className = "badge";
    badge.textContent = "new";
    source.append(badge, " " + h.site_display_name);
    item.append(link, source);
    list.hidden = false;
    list.prepend(item);
    // Keep the summary's count true to the boxes shown.
    const count = document.getElementById("headline-count");
    if (count) count.textContent = String(list.children.length);
  }

  const source = new EventSource("/events" + (lastId > 0 ? "?after=" + lastId : ""));
  source.onopen = () => show("connected", "● live");
  source.onerror = () => show("disconnected", "● reconnecting…");
  // The server could not replay what this page missed (it was away longer than the history is
  // kept, or the store was replaced): the page itself is the fresh start.
  source.addEventListener("reset", () => window.location.reload());
  source.addEventListener("headline", (event) => {
    let h;
    try {
      h = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!h || typeof h.title !== "string" || !isHttp(h.url) || !/^[a-z0-9_-]+$/.test(h.site)) return;
    if (seen.has(h.url)) return;
    seen.add(h.url);
    arrived += 1;
    if (filtered) {
      // A filtered page would need the filter re-applied: point at a reload instead.
      show("connected", "● live: " + arrived + " new, reload to see them");
      return;
    }
    insert(h);
    show("connected", "● live: " + arrived + " new");
  });
})();

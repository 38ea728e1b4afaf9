// newsdesk's page, live: times age while the page is open, new headlines arrive over Server-Sent
// Events (/events, with the page's own site= and q= filters, so a filtered page hears only what it
// lists) and take their place without a reload, and headlines that came in since the reader's last
// visit are marked new (the newest id seen is kept in localStorage, per view; no accounts). A
// headline whose story more sites tell gets an "N sources" link to the story's whole coverage,
// kept up to date by `story` events.
// EventSource reconnects by itself and the server replays what was missed (Last-Event-ID).
"use strict";

(function () {
  const list = document.getElementById("headlines");
  const status = document.getElementById("live");
  if (!list || !status) return;

  const body = document.body;
  const order = body.dataset.order === "site" ? "site" : "latest";
  const filters = body.dataset.events || "";
  let lastId = Number(body.dataset.lastId || "0");
  const seen = new Set(Array.from(list.querySelectorAll("a.story")).map((a) => a.href));

  // ---- words -----------------------------------------------------------------------------

  const plurals = new Intl.PluralRules("en");
  function count(n, one, many) {
    return n + " " + (plurals.select(n) === "one" ? one : many);
  }

  // The server's wording (news_page.cpp age_text), so a page built a minute ago reads the same.
  function ago(then, now) {
    const seconds = Math.max(0, Math.floor((now - then) / 1000));
    if (seconds < 60) return "just now";
    if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
    if (seconds < 2 * 86400) return Math.floor(seconds / 3600) + " h ago";
    return Math.floor(seconds / 86400) + " days ago";
  }
  const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const full = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

  // Every <time class="ago"> says how long ago, with the reader's local time on hover; the
  // header's time is the reader's local clock time.
  function age() {
    const now = Date.now();
    for (const t of document.querySelectorAll("time.ago")) {
      const then = Date.parse(t.dateTime);
      if (Number.isNaN(then)) continue;
      t.textContent = ago(then, now);
      t.title = (t.dataset.label ? t.dataset.label + " " : "") + full.format(then);
    }
    const asOf = document.getElementById("as-of");
    if (asOf) {
      const then = Date.parse(asOf.dateTime);
      if (!Number.isNaN(then)) {
        asOf.textContent = clock.format(then);
        asOf.title = full.format(then);
      }
    }
  }
  age();
  setInterval(age, 30000);
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && age());

  // ---- new since the last visit ----------------------------------------------------------

  const seenKey = "newsdesk:last-seen:" + (filters || "all");
  let marked = 0;
  function markNew(item) {
    if (item.classList.contains("is-new")) return;
    item.classList.add("is-new");
    const badge = document.createElement("span");
    badge.className = "badge";
    badge.textContent = "new";
    item.querySelector(".meta").prepend(badge, " ");
    marked += 1;
  }
  function storage() {
    try {
      return window.localStorage;
    } catch (e) {
      return null; // storage disabled: no marks, nothing else lost
    }
  }
  const store = storage();
  const previous = store ? Number(store.getItem(seenKey) || "0") : 0;
  // A larger id than this page's newest means the store was replaced: start over.
  if (previous > 0 && previous <= lastId)
    for (const item of list.children) if (Number(item.dataset.id) > previous) markNew(item);
  function remember() {
    if (store && lastId > 0) store.setItem(seenKey, String(lastId));
  }
  window.addEventListener("pagehide", remember);
  document.addEventListener("visibilitychange", () => document.visibilityState === "hidden" && remember());

  // ---- the live status -----------------------------------------------------------------

  function show(state) {
    status.hidden = false;
    status.className = "live " + state;
    const dot = document.createElement("span");
    dot.className = "dot";
    dot.setAttribute("aria-hidden", "true");
    dot.textContent = "●";
    const words = state === "connected" ? "live" : "reconnecting…";
    status.replaceChildren(" ", dot, " " + words + (marked > 0 ? ", " + marked + " new" : ""));
  }
  if (marked > 0) show("connected");

  // ---- live arrivals -------------------------------------------------------------------

  function isHttp(url) {
    try {
      const u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch (e) {
      return false;
    }
  }

  // Where a headline goes: newest first, headlines first seen together in their site's order
  // (ids ascend in it), as the server sorts; on one site's view, by the site's own order.
  function comesBefore(h, item) {
    if (order === "site") return h.rank <= Number(item.dataset.rank);
    const a = Date.parse(h.first_seen);
    const b = Date.parse(item.dataset.firstSeen);
    if (a !== b) return a > b;
    return h.id < Number(item.dataset.id);
  }

  function build(h) {
    const item = document.createElement("li");
    item.className = "headline just-arrived site-" + h.site;
    item.dataset.id = String(h.id);
    item.dataset.firstSeen = h.first_seen;
    item.dataset.rank = String(h.rank);
    item.dataset.site = h.site;
    if (Number.isSafeInteger(h.story)) item.dataset.story = String(h.story);
    const link = document.createElement("a");
    link.className = "story";
    link.href = h.url;
    link.rel = "noreferrer";
    link.dir = "auto";
    link.textContent = h.title; // text, never markup
    const meta = document.createElement("span");
    meta.className = "meta";
    const source = document.createElement("a");
    source.className = "source";
    source.href = "/news?site=" + encodeURIComponent(h.site);
    source.textContent = h.site_display_name;
    const time = document.createElement("time");
    time.className = "ago";
    time.dateTime = h.first_seen;
    time.dataset.label = "first seen";
    meta.append(source, " · ", time);
    item.append(link, meta);
    return item;
  }

  function updateCounts(site) {
    const n = list.children.length;
    const total = document.getElementById("headline-count");
    if (total) {
      total.dataset.count = String(n);
      total.textContent = count(n, "headline", "headlines");
    }
    const chip = document.querySelector('.chip[data-site="' + site + '"]');
    const chipCount = chip && chip.querySelector(".chip-count");
    if (chipCount) {
      const c = Number(chipCount.dataset.count) + 1;
      chipCount.dataset.count = String(c);
      chipCount.textContent = String(c);
      chipCount.setAttribute("aria-label", count(c, "headline", "headlines"));
    }
    const updated = chip && chip.querySelector("time.ago");
    if (updated) updated.dateTime = new Date().toISOString();
    const asOf = document.getElementById("as-of");
    if (asOf) asOf.dateTime = new Date().toISOString();
  }

  function insert(h) {
    const item = build(h);
    const before = Array.from(list.children).find((other) => comesBefore(h, other));
    list.insertBefore(item, before || null);
    list.hidden = false;
    const empty = document.getElementById("empty");
    if (empty) empty.hidden = true;
    markNew(item);
    updateCounts(h.site);
    age();
  }

  // Every card of `story` links to its coverage once two sites or more tell it.
  function updateStory(story, sources) {
    if (sources < 2) return;
    for (const item of list.querySelectorAll('li[data-story="' + story + '"]')) {
      let link = item.querySelector("a.sources");
      if (!link) {
        link = document.createElement("a");
        link.className = "sources";
        link.href = "/news?story=" + story;
        item.querySelector("time.ago").after(" · ", link);
      }
      link.textContent = sources + " sources";
    }
  }

  if (!window.EventSource) return;
  const query = [filters, lastId > 0 ? "after=" + lastId : ""].filter(Boolean).join("&");
  const source = new EventSource("/events" + (query ? "?" + query : ""));
  source.onopen = () => show("connected");
  source.onerror = () => show("disconnected");
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
    if (!Number.isSafeInteger(h.id) || typeof h.first_seen !== "string") return;
    if (!Number.isSafeInteger(h.rank)) h.rank = 0;
    if (typeof h.site_display_name !== "string") h.site_display_name = h.site;
    lastId = Math.max(lastId, h.id);
    if (seen.has(h.url)) return;
    seen.add(h.url);
    insert(h);
    show("connected");
  });
  // A new headline joined a story: its cards say how many sites tell it now.
  source.addEventListener("story", (event) => {
    let s;
    try {
      s = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (s && Number.isSafeInteger(s.story) && Number.isSafeInteger(s.sources))
      updateStory(s.story, s.sources);
  });
})();

// newsdesk's page, live: times age while the page is open, new headlines arrive over Server-Sent
// Events (/events, with the page's own site= and q= filters, so a filtered page hears only what it
// lists) and take their place without a reload, and headlines that came in since the reader's last
// visit are marked new (the newest id seen is kept in localStorage, per view; no accounts). A
// headline whose story more sites tell gets an "N sources" link to the story's whole coverage,
// kept up to date by `story` events. The unfiltered page opens with "Top stories" cards (several
// headlines each, one story): every headline, in a card or in the list, is an element with a
// data-id, and the keys, read and new marks treat them alike; arrivals go into the list.
// Arrivals never move what the reader is looking at: scrolled down, they wait behind an "N new"
// button. Headlines opened (or marked with `m`) are remembered as read, in localStorage too; the
// tab's title counts the unread. One-key shortcuts (j, k, o, m, s, /, ?) can be turned off. The
// list can be made compact (one line per headline), kept in localStorage too.
// EventSource reconnects by itself and the server replays what was missed (Last-Event-ID).
"use strict";

(function () {
  const list = document.getElementById("headlines");
  const status = document.getElementById("live");
  const main = document.querySelector("main");
  if (!list || !status || !main) return;
  // Every headline on the page, in the cards and in the list, in the page's order.
  function items() {
    return Array.from(main.querySelectorAll("[data-id]"));
  }

  const body = document.body;
  const order = body.dataset.order === "site" ? "site" : "latest";
  const filters = body.dataset.events || "";
  let lastId = Number(body.dataset.lastId || "0"); // the newest headline the page shows
  const seen = new Set(Array.from(main.querySelectorAll("a.story")).map((a) => a.href));

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
  const day = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

  // Every <time class="ago"> says how long ago, with the reader's local time on hover; the
  // header's time is the reader's local clock time.
  function age() {
    const now = Date.now();
    for (const t of document.querySelectorAll("time.ago")) {
      const then = Date.parse(t.dateTime);
      if (Number.isNaN(then)) continue;
      const label = t.dataset.label;
      // A headline's own time says what it is; a published one older than a day is a date.
      if (label === "published" && now - then >= 86400000) t.textContent = label + " " + day.format(then);
      else if (label === "seen before") t.textContent = label + " " + clock.format(then);
      else if (label === "published" || label === "seen") t.textContent = label + " " + ago(then, now);
      else t.textContent = ago(then, now);
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

  function storage() {
    try {
      return window.localStorage;
    } catch (e) {
      return null; // storage disabled: no marks, nothing else lost
    }
  }
  const store = storage();

  // ---- chips: one row, the rest behind "All N sites" (they wrap without the script) ---------

  const chipList = document.querySelector(".sites ul");
  const siteCount = Number(body.dataset.sites || "0");
  function fitChips() {
    if (!chipList || chipList.classList.contains("expanded")) return;
    const chips = Array.from(chipList.querySelectorAll(".chip[data-site]"));
    for (const chip of chips) chip.hidden = false;
    const old = chipList.querySelector(".chip-more");
    if (old) old.remove();
    if (chips.length === 0) return;
    const bottom = chips[0].offsetTop + chips[0].offsetHeight;
    const all = chipList.querySelector(".chip-all"); // the server's: a view with every chip
    const over = (el) => el && el.offsetTop + el.offsetHeight > bottom + 1;
    if (!chips.some(over) && !over(all)) return;
    const more = document.createElement("li");
    more.className = "chip chip-more";
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("aria-expanded", "false");
    more.append(button);
    chipList.insertBefore(more, all || null);
    // Its words before the chips are counted, as wide as they will be at most.
    const words = (n) => (all ? "+" + n + " more" : "All " + (siteCount || chips.length) + " sites");
    button.textContent = words(chips.length);
    // The last ones go first; the current site's chip stays.
    let hidden = 0;
    for (let i = chips.length - 1; i >= 0 && (over(more) || over(all)); --i) {
      if (chips[i].querySelector('[aria-current="page"]')) continue;
      chips[i].hidden = true;
      hidden += 1;
    }
    button.textContent = words(hidden);
    button.addEventListener("click", () => {
      chipList.classList.add("expanded");
      for (const chip of chips) chip.hidden = false;
      more.remove();
    });
  }
  fitChips();
  let fitting = 0;
  window.addEventListener("resize", () => {
    clearTimeout(fitting);
    fitting = setTimeout(fitChips, 150);
  });

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
  const previous = store ? Number(store.getItem(seenKey) || "0") : 0;
  // A larger id than this page's newest means the store was replaced: start over.
  if (previous > 0 && previous <= lastId)
    for (const item of items()) if (Number(item.dataset.id) > previous) markNew(item);
  // Only what was shown counts as seen: arrivals still waiting are new on the next visit.
  function remember() {
    if (store && lastId > 0) store.setItem(seenKey, String(lastId));
  }
  window.addEventListener("pagehide", remember);
  document.addEventListener("visibilitychange", () => document.visibilityState === "hidden" && remember());

  // ---- read or not -----------------------------------------------------------------------

  // The ids of the headlines read, in every view. Ids only grow, so past the bound the oldest
  // go first: 5,000 is weeks of heavy reading (the store keeps headlines 30 days) in about 40 KB
  // of the 5 MB a site's localStorage may hold.
  const readKey = "newsdesk:read";
  const maxRead = 5000;
  function loadRead() {
    try {
      const ids = JSON.parse((store && store.getItem(readKey)) || "[]");
      return new Set(Array.isArray(ids) ? ids.filter(Number.isSafeInteger) : []);
    } catch (e) {
      return new Set();
    }
  }
  const read = loadRead();

  const pending = []; // arrivals waiting behind the "N new" button, as built boxes
  const baseTitle = document.title;
  function showUnread() {
    const n = main.querySelectorAll("[data-id]:not(.is-read)").length + pending.length;
    document.title = n > 0 ? "(" + n + ") " + baseTitle : baseTitle;
  }

  function showRead(item, isRead) {
    if (item.classList.contains("is-read") === isRead) return;
    item.classList.toggle("is-read", isRead);
    // The dimming is not for screen readers: they hear "read" before the site's name.
    if (isRead) {
      const note = document.createElement("span");
      note.className = "read-note visually-hidden";
      note.textContent = "read, ";
      item.querySelector(".meta").prepend(note);
    } else {
      item.querySelector(".read-note").remove();
    }
  }

  function setRead(items, isRead) {
    // Another tab may have marked others since this page loaded: change only these ids.
    const all = loadRead();
    for (const item of items) {
      const id = Number(item.dataset.id);
      showRead(item, isRead);
      if (isRead) {
        read.add(id);
        all.add(id);
      } else {
        read.delete(id);
        all.delete(id);
      }
    }
    if (store) {
      const ids = Array.from(all).sort((a, b) => a - b).slice(-maxRead);
      try {
        store.setItem(readKey, JSON.stringify(ids));
      } catch (e) {
        // storage full: the marks hold for this page only
      }
    }
    showUnread();
  }

  for (const item of items()) showRead(item, read.has(Number(item.dataset.id)));
  showUnread();

  // Opening a headline, by any button or key, marks it read (middle-click opens a tab).
  function opened(event) {
    const link = event.target.closest("a.story");
    if (link && (event.type === "click" || event.button === 1)) setRead([link.closest("[data-id]")], true);
  }
  main.addEventListener("click", opened);
  main.addEventListener("auxclick", opened);

  // ---- keys --------------------------------------------------------------------------------

  const keys = document.getElementById("keys");
  const keysOn = document.getElementById("keys-on");
  const keysKey = "newsdesk:keys";
  // One-key shortcuts get in the way of speech input, so they can be turned off (WCAG 2.1.4).
  keysOn.checked = !(store && store.getItem(keysKey) === "off");
  // With the keys on, each headline is one tab stop and `s` opens its story's coverage; with them
  // off, the "N sources" links are tab stops again, so that the coverage stays in reach.
  function tabSources(links) {
    for (const link of links) link.tabIndex = keysOn.checked ? -1 : 0;
  }
  tabSources(main.querySelectorAll("a.sources"));
  keysOn.addEventListener("change", () => {
    tabSources(main.querySelectorAll("a.sources"));
    if (!store) return;
    if (keysOn.checked) store.removeItem(keysKey);
    else store.setItem(keysKey, "off");
  });
  document.getElementById("show-keys").addEventListener("click", () => keys.showModal());
  document.getElementById("mark-all-read").addEventListener("click", () => setRead(items(), true));
  // The compact list: one line per headline, one column; the reader's choice, kept.
  const compact = document.getElementById("compact");
  const compactKey = "newsdesk:compact";
  function showCompact(on) {
    body.classList.toggle("compact", on);
    compact.setAttribute("aria-pressed", String(on));
  }
  showCompact(Boolean(store) && store.getItem(compactKey) === "on");
  compact.addEventListener("click", () => {
    const on = compact.getAttribute("aria-pressed") !== "true";
    showCompact(on);
    if (!store) return;
    if (on) store.setItem(compactKey, "on");
    else store.removeItem(compactKey);
  });
  document.getElementById("tools").hidden = false;

  // The headline holding the focus, if any.
  function current() {
    const focused = document.activeElement;
    return focused && focused.closest ? focused.closest("main [data-id]") : null;
  }
  function focusHeadline(item) {
    if (item) item.querySelector("a.story").focus();
  }
  // With no headline focused, j and k start from the first one on screen.
  function firstOnScreen() {
    return items().find((item) => item.getBoundingClientRect().bottom > 0);
  }

  document.addEventListener("keydown", (event) => {
    if (!keysOn.checked || keys.open || event.defaultPrevented) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return; // typing
    const item = current();
    // The next and previous headline in the page's order: from the cards on into the list.
    const step = (by) => {
      const all = items();
      return all[all.indexOf(item) + by];
    };
    switch (event.key) {
      case "j":
        focusHeadline(item ? step(1) : firstOnScreen());
        break;
      case "k":
        focusHeadline(item ? step(-1) : firstOnScreen());
        break;
      case "o":
        if (item) item.querySelector("a.story").click();
        break;
      case "m":
        if (item) setRead([item], !item.classList.contains("is-read"));
        break;
      case "s": {
        // In a card, the card's "N sources" is every one of its headlines' coverage.
        const card = item && item.closest(".top-story");
        const coverage = item && (item.querySelector("a.sources") || (card && card.querySelector("a.sources")));
        if (coverage) coverage.click();
        break;
      }
      case "/": {
        const search = document.querySelector('.search input[name="q"]');
        search.focus();
        search.select();
        break;
      }
      case "?":
        keys.showModal();
        break;
      default:
        return;
    }
    event.preventDefault(); // "/" is not typed into the search it focuses
  });

  // ---- live arrivals -------------------------------------------------------------------

  function isHttp(url) {
    try {
      const u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch (e) {
      return false;
    }
  }

  // Where a headline goes: by its page time (when first seen, a minute earlier per headline its
  // site's refresh found before it, so one refresh's sites interleave), then by id, as the
  // server sorts; on one site's view, by the site's own order.
  function comesBefore(item, other) {
    if (order === "site") return Number(item.dataset.rank) <= Number(other.dataset.rank);
    const a = Date.parse(item.dataset.pageTime);
    const b = Date.parse(other.dataset.pageTime);
    if (a !== b) return a > b;
    return Number(item.dataset.id) < Number(other.dataset.id);
  }

  // The site's icon as the page shows it (the same mark the server put on the page for this
  // site), else its initial on its colour: never an image that is not stored.
  function siteMark(h) {
    const shown = document.querySelector('.meta .site-icon[src="/sites/' + h.site + '/icon"], .chip[data-site="' + h.site + '"] .site-icon');
    if (shown) return shown.cloneNode(false);
    const mark = document.createElement("span");
    mark.className = "site-mark";
    mark.setAttribute("aria-hidden", "true");
    mark.textContent = Array.from(h.site_display_name || h.site)[0] || "";
    mark.textContent = mark.textContent.toUpperCase();
    return mark;
  }
  function build(h) {
    const item = document.createElement("li");
    item.className = "headline just-arrived site-" + h.site;
    item.dataset.id = String(h.id);
    item.dataset.pageTime = h.page_time;
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
    source.tabIndex = -1; // as in the template: the site's chip leads to the same view
    source.textContent = h.site_display_name;
    const time = document.createElement("time");
    time.className = "ago";
    const published = typeof h.published === "string" && !Number.isNaN(Date.parse(h.published));
    time.dateTime = published ? h.published : h.first_seen;
    time.dataset.label = published ? "published" : "seen";
    meta.append(siteMark(h), source, " · ", time);
    item.append(link, meta);
    return item;
  }

  function updateCounts(site) {
    const n = items().length;
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

  function insert(item) {
    const before = Array.from(list.children).find((other) => comesBefore(item, other));
    list.insertBefore(item, before || null);
    list.hidden = false;
    const empty = document.getElementById("empty");
    if (empty) empty.hidden = true;
    markNew(item);
    showRead(item, read.has(Number(item.dataset.id)));
    lastId = Math.max(lastId, Number(item.dataset.id));
    updateCounts(item.dataset.site);
  }

  // Scrolled down, an insertion above would move what the reader is looking at (in a grid, every
  // box after it changes place), so arrivals wait until the reader asks for them, or until one
  // comes while the reader is at the top.
  const arrivals = document.getElementById("arrivals");
  function atTop() {
    return window.scrollY < 1;
  }
  function showArrivals() {
    arrivals.hidden = pending.length === 0;
    const arrow = document.createElement("span");
    arrow.setAttribute("aria-hidden", "true");
    arrow.textContent = "↑";
    arrivals.replaceChildren(arrow, " " + count(pending.length, "new headline", "new headlines"));
  }
  function insertPending() {
    const inserted = pending.splice(0);
    for (const item of inserted) insert(item);
    showArrivals();
    showStatus();
    showUnread();
    age();
    return inserted;
  }
  arrivals.addEventListener("click", () => {
    const inserted = insertPending();
    window.scrollTo(0, 0);
    // The first of them in the list's order: on the latest view, the top one.
    focusHeadline(Array.from(list.children).find((item) => inserted.includes(item)));
  });

  // Every box of `story` in the list (those waiting too) links to its coverage once two sites or more tell
  // it. The card keeps its place; the link is a few words on its meta line.
  function updateStory(story, sources) {
    if (sources < 2) return;
    // Its card, if it has one, says how many sites tell it; a new headline of it goes to the list.
    for (const link of main.querySelectorAll('.top-story[data-story="' + story + '"] a.sources')) link.textContent = sources + " sources";
    const cards = Array.from(list.children).concat(pending).filter((item) => item.dataset.story === String(story));
    for (const item of cards) {
      let link = item.querySelector("a.sources");
      if (!link) {
        link = document.createElement("a");
        link.className = "sources";
        link.href = "/news?story=" + story;
        tabSources([link]);
        item.querySelector("time.ago").after(" · ", link);
      }
      link.textContent = sources + " sources";
    }
  }

  // A site failed, recovered or looks broken while the page is open: its chip says so, and its
  // notice (in the server's words) joins the problems above the headlines, or leaves them.
  const problems = document.getElementById("problems");
  function updateSite(s) {
    const chip = document.querySelector('.chip[data-site="' + s.site + '"]');
    if (chip) {
      for (const c of Array.from(chip.classList)) if (c.startsWith("chip-") && c !== "chip-all") chip.classList.remove(c);
      chip.classList.add("chip-" + s.state);
      let state = chip.querySelector(".chip-state");
      if (!state && s.state_text) {
        state = document.createElement("span");
        chip.append(" ", state);
      }
      if (state) {
        state.className = "chip-state" + (s.quiet ? " visually-hidden" : "");
        state.textContent = s.state_text;
        state.hidden = !s.state_text;
      }
    }
    if (!problems) return;
    const notices = problems.querySelector("ul");
    // A notice may name several sites (one renderer failed them all): this one leaves it.
    for (const li of Array.from(notices.children)) {
      const sites = (li.dataset.sites || "").split(" ").filter((name) => name && name !== s.site);
      if (sites.length === (li.dataset.sites || "").split(" ").filter(Boolean).length) continue;
      if (sites.length === 0) li.remove();
      else li.dataset.sites = sites.join(" ");
    }
    if (s.problem) {
      const li = document.createElement("li");
      li.dataset.sites = s.site;
      const text = document.createElement("p");
      text.className = "live-problem";
      text.textContent = s.problem; // text, never markup
      li.append(text);
      notices.append(li);
    }
    problems.hidden = notices.children.length === 0;
  }

  // ---- the live status: "live" only while the stream is open ----------------------------

  let source = null;
  let answered = false; // hidden until the stream first opens or fails
  function showStatus() {
    if (!answered) return;
    const open = navigator.onLine && source.readyState === EventSource.OPEN;
    // EventSource retries by itself while CONNECTING; CLOSED means it gave up.
    const words = open ? "live" : navigator.onLine && source.readyState === EventSource.CONNECTING ? "reconnecting…" : "offline";
    const text = " " + words + (marked > 0 ? ", " + marked + " new" : "");
    if (status.lastChild && status.lastChild.textContent === text) return; // not announced again
    status.className = "live " + (open ? "connected" : "disconnected");
    const dot = document.createElement("span");
    dot.className = "dot";
    dot.setAttribute("aria-hidden", "true");
    dot.textContent = "●";
    status.replaceChildren(" ", dot, text);
  }

  if (!window.EventSource) return;
  const query = [filters, lastId > 0 ? "after=" + lastId : ""].filter(Boolean).join("&");
  source = new EventSource("/events" + (query ? "?" + query : ""));
  source.onopen = source.onerror = () => {
    answered = true;
    showStatus();
  };
  window.addEventListener("online", showStatus);
  window.addEventListener("offline", showStatus);
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
    if (typeof h.page_time !== "string") h.page_time = h.first_seen;
    if (!Number.isSafeInteger(h.rank)) h.rank = 0;
    if (typeof h.site_display_name !== "string") h.site_display_name = h.site;
    if (seen.has(h.url)) return;
    seen.add(h.url);
    pending.push(build(h));
    if (atTop()) insertPending();
    else {
      showArrivals();
      showUnread();
    }
  });
  source.addEventListener("site", (event) => {
    let s;
    try {
      s = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!s || typeof s.site !== "string" || !/^[a-z0-9_-]+$/.test(s.site)) return;
    if (typeof s.state !== "string" || !/^[a-z]+$/.test(s.state)) return;
    updateSite({
      site: s.site,
      state: s.state,
      state_text: typeof s.state_text === "string" ? s.state_text : "",
      quiet: s.quiet === true,
      problem: typeof s.problem === "string" ? s.problem : "",
    });
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

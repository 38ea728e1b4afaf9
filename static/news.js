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

  // The server's wording (page_words.cpp age_text), so a page built a minute ago reads the same.
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


  // Arrivals and story changes waiting for a safe moment (below: "what waits").
  const pending = []; // arrivals waiting: {h, box} in arrival order
  const storyChanges = new Map(); // story -> {sources, lastSeen}, waiting too
  const pictureChanges = new Map(); // headline id -> its picture now (null: none), waiting too
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

  // Sharing a story: the system's share sheet where there is one (phones), else its link copied;
  // without the script, the link itself (the story's own view).
  main.addEventListener("click", (event) => {
    const share = event.target.closest("a.share");
    if (!share || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const card = share.closest(".top-story");
    const title = card && card.querySelector(".lead a.story");
    const data = { title: title ? title.textContent : document.title, url: share.href };
    if (navigator.share) {
      event.preventDefault();
      navigator.share(data).catch(() => {});
    } else if (navigator.clipboard && window.isSecureContext) {
      event.preventDefault();
      navigator.clipboard.writeText(share.href).then(() => {
        share.textContent = "Link copied";
        setTimeout(() => (share.textContent = "Share"), 2000);
      }, () => window.location.assign(share.href));
    }
  });

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
  tabSources(main.querySelectorAll("a.sources, a.share"));
  keysOn.addEventListener("change", () => {
    tabSources(main.querySelectorAll("a.sources, a.share"));
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

  // A headline as the server renders it (templates/headline.html), from the page's <template> of
  // that kind, filled in with text only (never markup).
  function fromTemplate(id) {
    const template = document.getElementById(id);
    return template ? template.content.firstElementChild.cloneNode(true) : null;
  }
  function build(h, kind) {
    const item = fromTemplate(kind === "telling" ? "telling-template" : "headline-template");
    item.className = kind + " just-arrived site-" + h.site;
    item.dataset.id = String(h.id);
    item.dataset.pageTime = h.page_time;
    item.dataset.firstSeen = h.first_seen;
    item.dataset.rank = String(h.rank);
    item.dataset.site = h.site;
    item.dataset.story = Number.isSafeInteger(h.story) ? String(h.story) : "";
    const link = item.querySelector("a.story");
    link.href = h.url;
    link.textContent = h.title;
    const source = item.querySelector("a.source");
    source.href = "/news?site=" + encodeURIComponent(h.site);
    source.textContent = h.site_display_name;
    // The site's icon as the page shows it elsewhere, else its initial on its colour.
    const mark = item.querySelector(".site-mark");
    const icon = document.querySelector('.chip[data-site="' + h.site + '"] .site-icon, [data-site="' + h.site + '"] > .meta .site-icon');
    if (icon) mark.replaceWith(icon.cloneNode(false));
    else mark.textContent = (Array.from(h.site_display_name || h.site)[0] || "").toUpperCase();
    const time = item.querySelector("time.ago");
    const published = typeof h.published === "string" && !Number.isNaN(Date.parse(h.published));
    time.dateTime = published ? h.published : h.first_seen;
    time.dataset.label = published ? "published" : "seen";
    // Its line of summary goes with it; the style sheet shows it once it leads a card.
    if (typeof h.summary === "string" && h.summary !== "") {
      const summary = document.createElement("p");
      summary.className = "headline-summary";
      summary.dir = "auto";
      summary.textContent = h.summary;
      item.querySelector(":scope > .meta").after(summary);
    }
    setPicture(item, h.picture);
    return item;
  }
  // A headline's picture as the server renders it (templates/headline.html): newsdesk's own
  // copy, at its own size (its room kept before it loads), the title as its alt text, right
  // under its line of site and time. The style sheet shows it on a card's lead only, and a
  // hidden lazy image is never fetched. `picture` null, or not one newsdesk makes: none.
  function setPicture(item, picture) {
    const old = item.querySelector(":scope > .lead-picture");
    if (old) old.remove();
    if (!picture || typeof picture.name !== "string" || !/^[0-9a-f]{32}\.webp$/.test(picture.name)) return;
    const sized = (n) => Number.isSafeInteger(n) && n > 0 && n <= 4096;
    if (!sized(picture.width) || !sized(picture.height)) return;
    const img = document.createElement("img");
    img.className = "lead-picture";
    img.src = "/pictures/" + picture.name;
    img.width = picture.width;
    img.height = picture.height;
    img.alt = item.querySelector(":scope > a.story").textContent;
    img.loading = "lazy";
    img.decoding = "async";
    item.querySelector(":scope > .meta").after(img);
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

  // ---- stories: one box in the list, or a card of Top stories -----------------------------

  const storiesList = document.getElementById("stories"); // only on the unfiltered page
  const maxCards = 8; // news_page.hpp: max_top_stories
  const maxLines = 4; // max_card_tellings: lines beneath a lead or a box
  // Where a story is shown: its card, or its box in the list.
  function storyHome(story) {
    if (!story) return null;
    const card = storiesList && storiesList.querySelector(':scope > .top-story[data-story="' + story + '"]');
    return card || list.querySelector(':scope > .headline[data-story="' + story + '"]');
  }
  function linesOf(home) {
    return home.classList.contains("top-story") ? home.querySelector(".card-lines") : home.querySelector(":scope > .tellings");
  }
  // A headline of a story already shown joins it as a line beneath (one per site, a few at most);
  // false when the story has that site's already, or enough lines: it is counted in "N sources".
  function join(home, h) {
    const lines = linesOf(home);
    const shown = Array.from(home.querySelectorAll("[data-site]")).map((e) => e.dataset.site);
    if (shown.includes(h.site) || (lines && lines.children.length > maxLines)) return false;
    let into = lines;
    if (!into) {
      into = document.createElement("ul");
      into.className = "tellings";
      home.append(into);
    }
    const line = build(h, "telling");
    into.append(line);
    markNew(line);
    showRead(line, read.has(h.id));
    return true;
  }
  // "N sources" on a story's card or box, a link to its whole coverage.
  function showSources(home, story, sources) {
    if (home.classList.contains("top-story")) {
      home.dataset.sources = String(sources);
      const link = home.querySelector(".story-meta a.sources");
      link.textContent = sources + " sources";
      return;
    }
    const coverage = home.querySelector(":scope > .meta .coverage");
    let link = coverage.querySelector("a.sources");
    if (!link) {
      link = document.createElement("a");
      link.className = "sources";
      link.href = "/news?story=" + story;
      tabSources([link]);
      coverage.append(" · ", link);
    }
    link.textContent = sources + " sources";
  }
  function ranksBefore(card, other) {
    const a = Number(card.dataset.sources), b = Number(other.dataset.sources);
    if (a !== b) return a > b;
    const s = Number(card.dataset.lastSeen), t = Number(other.dataset.lastSeen);
    if (s !== t) return s > t;
    return Number(card.dataset.story) < Number(other.dataset.story);
  }
  // A story several sites tell now, shown as a box in the list, becomes a card when it ranks
  // among the cards: the box's own nodes move (read marks and all), its lines beneath the lead.
  function promote(box, sources, lastSeen) {
    const cards = Array.from(storiesList.children);
    const card = fromTemplate("story-template");
    card.dataset.story = box.dataset.story;
    card.dataset.sources = String(sources);
    card.dataset.lastSeen = String(lastSeen);
    if (cards.length >= maxCards && !ranksBefore(card, cards[cards.length - 1])) return;
    const lines = card.querySelector(".card-lines");
    const tellings = box.querySelector(":scope > .tellings");
    box.classList.replace("headline", "lead");
    const coverage = box.querySelector(":scope > .meta .coverage");
    if (coverage) coverage.replaceChildren();
    lines.append(box);
    if (tellings) {
      lines.append(...tellings.children);
      tellings.remove();
    }
    const meta = card.querySelector(".story-meta");
    for (const link of meta.querySelectorAll("a.sources, a.share")) link.href = "/news?story=" + box.dataset.story;
    meta.querySelector("a.sources").textContent = sources + " sources";
    tabSources(meta.querySelectorAll("a.sources"));
    const started = Math.min(...Array.from(lines.children).map((e) => Date.parse(e.dataset.firstSeen)).filter((t) => !Number.isNaN(t)));
    const startedAt = meta.querySelector('time[data-label="started"]');
    startedAt.dateTime = new Date(Number.isFinite(started) ? started : Date.now()).toISOString();
    storiesList.append(card);
    if (cards.length >= maxCards) demote(cards[cards.length - 1]);
  }
  // A card that left the cards: its lead goes back to the list as a box, its lines beneath.
  function demote(card) {
    const lines = Array.from(card.querySelector(".card-lines").children);
    const lead = lines.shift();
    lead.classList.replace("lead", "headline");
    if (lines.length) {
      const tellings = document.createElement("ul");
      tellings.className = "tellings";
      tellings.append(...lines);
      lead.append(tellings);
    }
    showSources(lead, card.dataset.story, Number(card.dataset.sources));
    card.remove();
    placeInList(lead);
  }
  function placeInList(item) {
    const before = Array.from(list.children).find((other) => other !== item && comesBefore(item, other));
    list.insertBefore(item, before || null);
    list.hidden = false;
  }
  function rankCards() {
    if (!storiesList) return;
    const cards = Array.from(storiesList.children);
    cards.sort((a, b) => (ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0));
    cards.forEach((card, i) => {
      if (storiesList.children[i] !== card) storiesList.insertBefore(card, storiesList.children[i]);
    });
    const section = document.getElementById("top-stories");
    if (section && cards.length) {
      section.hidden = false;
      const heading = document.getElementById("headlines-heading");
      heading.classList.remove("visually-hidden");
      heading.classList.add("view-heading", "section-heading");
    }
  }

  // ---- what waits for a safe moment ---------------------------------------------------------

  // Nothing moves under the reader: scrolled down, or with the pointer on a headline's box or a
  // card, arrivals and story changes wait (behind an "N new" button) until the reader asks for
  // them, or until the pointer leaves the boxes at the top of the page. An insertion above would
  // move what the reader looks at (in a grid, every box after it changes place).
  // The box or card under a mouse or pen (a touch leaves nothing hovered), if any.
  const boxes = ".top-story, #headlines > li";
  let hovered = null;
  main.addEventListener("pointerover", (e) => {
    if (e.pointerType !== "touch") hovered = e.target.closest(boxes);
  });
  function pointerGone(e) {
    const to = e.relatedTarget;
    if (e.type === "pointerout" && to && to.closest && to.closest(boxes)) return;
    hovered = null;
    if (safe() && (pending.length || storyChanges.size || pictureChanges.size)) applyPending();
  }
  main.addEventListener("pointerout", pointerGone);
  main.addEventListener("pointerleave", pointerGone);
  const arrivals = document.getElementById("arrivals");
  function atTop() {
    return window.scrollY < 1;
  }
  function safe() {
    return atTop() && !hovered;
  }
  function showArrivals() {
    arrivals.hidden = pending.length === 0;
    const arrow = document.createElement("span");
    arrow.setAttribute("aria-hidden", "true");
    arrow.textContent = "↑";
    arrivals.replaceChildren(arrow, " " + count(pending.length, "new headline", "new headlines"));
  }
  function insert(entry) {
    const h = entry.h;
    const home = storyHome(h.story !== h.id ? h.story : 0);
    let item = entry.box;
    if (home) {
      if (!join(home, h)) return null;
      item = home.querySelector('[data-id="' + h.id + '"]');
    } else {
      placeInList(item);
      markNew(item);
      showRead(item, read.has(h.id));
    }
    const empty = document.getElementById("empty");
    if (empty) empty.hidden = true;
    lastId = Math.max(lastId, h.id);
    updateCounts(h.site);
    return item;
  }
  function applyStory(story, change) {
    const home = storyHome(story);
    if (!home) return;
    showSources(home, story, change.sources);
    if (home.classList.contains("top-story")) home.dataset.lastSeen = String(Math.max(Number(home.dataset.lastSeen), change.lastSeen));
    else if (storiesList && change.sources >= 2) promote(home, change.sources, change.lastSeen);
  }
  function applyPending() {
    const inserted = pending.splice(0).map(insert).filter(Boolean);
    for (const [story, change] of storyChanges) applyStory(story, change);
    storyChanges.clear();
    for (const [id, picture] of pictureChanges) {
      const item = main.querySelector('[data-id="' + id + '"]');
      if (item) setPicture(item, picture);
    }
    pictureChanges.clear();
    rankCards();
    showArrivals();
    showStatus();
    showUnread();
    age();
    return inserted;
  }
  arrivals.addEventListener("click", () => {
    const inserted = applyPending();
    window.scrollTo(0, 0);
    // The first of them in the page's order: on the latest view, the top one.
    focusHeadline(items().find((item) => inserted.includes(item)));
  });

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
    pending.push({ h, box: build(h, "headline") });
    if (safe()) applyPending();
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
  // A new headline joined a story: how many sites tell it now. Its card or box says so; a story
  // that ranks among Top stories now becomes a card, and the cards take their new order (when
  // nothing would move under the reader).
  source.addEventListener("story", (event) => {
    let s;
    try {
      s = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!s || !Number.isSafeInteger(s.story) || !Number.isSafeInteger(s.sources)) return;
    const seenAt = s.headline && typeof s.headline.first_seen === "string" ? Date.parse(s.headline.first_seen) : NaN;
    const before = storyChanges.get(s.story);
    storyChanges.set(s.story, {
      sources: s.sources,
      lastSeen: Math.max(Number.isNaN(seenAt) ? Date.now() : seenAt, before ? before.lastSeen : 0),
    });
    if (safe()) applyPending();
  });
  // A picture newsdesk made of a headline's image after the headline arrived (or dropped): a
  // card's lead shows it, when nothing would move under the reader. A headline still waiting
  // among the arrivals takes it as it is inserted.
  source.addEventListener("picture", (event) => {
    let p;
    try {
      p = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!p || !Number.isSafeInteger(p.id)) return;
    const waiting = pending.find((entry) => entry.h.id === p.id);
    if (waiting) setPicture(waiting.box, p.picture);
    else pictureChanges.set(p.id, p.picture);
    if (safe()) applyPending();
  });
})();

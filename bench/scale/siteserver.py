#!/usr/bin/env python3
"""Serves N news sites on 127.0.0.1 for bench/scale: RSS feeds or HTML front pages.

Feeds (--feeds N): one new item per feed per minute. Feed i (site name feedNNNN) holds K_i items, 30 to 90 (fixed per feed). Its newest item changes
once a minute, at a second of the minute that differs between feeds (so the changes are spread
over the minute as real feeds' are); the oldest item rolls off. Titles are real headlines and
hosts real news hosts from the saved UCI News Aggregator slice (../shared/stories, see its
README); each item's link is distinct (host, slug of the title, feed and sequence number).

Pages (--pages N): page i (site name pageNNNN) is one of the saved front pages of real news
sites (--templates: BBC, AP, Reuters, Hacker News from ../shared/fixtures/pages, each with the
project's own site file from sites/), 40 KB to 1.4 MB, served as newsdesk's direct renderer
fetches a front page: every request gets 200 and the whole page, no ETag (front pages are
dynamic). Before serving, the headlines the site file reads off the page are found in its bytes
(bench/scale's page_headlines prints them); every one of page i's headlines is given a link and a
title of its own (titles are real headlines from the UCI slice, as the feeds'), so no two sites
show the same stories, and each fetch changes two of them (a new link and title each, taken in
turn), as a front page changes between visits.

Every feed answer carries an ETag and a Last-Modified naming the newest item; a request whose
If-None-Match names the current ETag, or whose If-Modified-Since is not older than the newest
item, gets 304 with no body.

Besides the feeds:
  GET  /_stats          JSON counters (requests, 200s, 304s, conditional requests, bytes, held
                        requests, feeds served at least once and when the last of them was)
  POST /_hold?on=1|0    hold mode: feed requests wait (unanswered) until hold is turned off, so
                        the newsdesk under test refreshes nothing (bench/scale's idle
                        measurement); turning it off answers them with 304 or the feed

Usage: siteserver.py (--feeds N | --pages N --templates LIST --page-headlines BIN)
                     --site-files DIR [--port 0] [--headlines CSV]
  LIST: comma-separated SITE_FILE=PAGE_FILE pairs, e.g. sites/bbc.json=../shared/.../bbc.html
Writes DIR/feedNNNN.json or DIR/pageNNNN.json (a newsdesk site file per site) and DIR/../site-names.json (the names,
for the config's `sites`), then prints "url=http://127.0.0.1:PORT" and serves until killed.
Runs one thread per connection (newsdesk keeps a few connections open and reuses them).
"""
import argparse
import csv
import email.utils
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from html import escape as html_escape
from urllib.parse import parse_qs, urljoin, urlsplit
from xml.sax.saxutils import escape

MINUTE = 60


def load_headlines(path):
    rows = []
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for row in csv.DictReader(f):
            title = " ".join(row["TITLE"].split())
            host = row["HOSTNAME"].strip()
            if title and re.fullmatch(r"[A-Za-z0-9.-]+", host):
                rows.append((title, host, row["PUBLISHER"].strip() or host))
    if not rows:
        sys.exit(f"siteserver: no headlines in {path}")
    return rows


def slug(title):
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words[:10]) or "story"


class Feeds:
    """The feeds' contents as a function of time; bodies cached per feed for the current minute."""

    def __init__(self, count, headlines):
        self.count = count
        self.headlines = headlines
        self.publishers = sorted({p for _, _, p in headlines})
        self.lock = threading.Lock()
        self.cache = {}  # feed index -> (minute, etag, last_modified, body)

    def items(self, i):
        return 30 + (i * 37) % 61  # 30..90

    def offset(self, i):
        return (i * 17) % MINUTE  # the second of the minute at which feed i changes

    def display_name(self, i):
        p = self.publishers[i % len(self.publishers)]
        return p if i < len(self.publishers) else f"{p} {i // len(self.publishers) + 1}"

    def minute(self, i, now):
        return int((now - self.offset(i)) // MINUTE)

    def item(self, i, seq):
        # A fixed pseudo-random headline per (feed, sequence number): consecutive items differ.
        title, host, _ = self.headlines[(i * 7919 + seq * 104729) % len(self.headlines)]
        link = f"https://{host}/news/{slug(title)}-{i}-{seq}.html"
        return title, link

    def current(self, i, now):
        m = self.minute(i, now)
        with self.lock:
            hit = self.cache.get(i)
            if hit and hit[0] == m:
                return hit
        newest = m * MINUTE + self.offset(i)  # when the newest item appeared
        last_modified = email.utils.formatdate(newest, usegmt=True)
        etag = f'"f{i}-{m}"'
        name = self.display_name(i)
        parts = [
            '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>',
            f"<title>{escape(name)}</title><link>https://feed{i:04d}.example.org/</link>",
            f"<description>{escape(name)}: latest headlines</description>",
            f"<lastBuildDate>{last_modified}</lastBuildDate>",
        ]
        for seq in range(m, m - self.items(i), -1):
            title, link = self.item(i, seq)
            published = email.utils.formatdate(seq * MINUTE + self.offset(i), usegmt=True)
            parts.append(
                f"<item><title>{escape(title)}</title><link>{escape(link)}</link>"
                f'<guid isPermaLink="true">{escape(link)}</guid><pubDate>{published}</pubDate>'
                f"<description>{escape(title)}. Read more at {escape(name)}.</description></item>"
            )
        parts.append("</channel></rss>\n")
        entry = (m, etag, last_modified, "".join(parts).encode("utf-8"), newest)
        with self.lock:
            self.cache[i] = entry
        return entry


class Template:
    """A saved front page cut where its headlines' links and titles are: `parts` alternates the
    page's own bytes with slot references, so a page is the join of those bytes and its slots'
    current links and titles. A slot is one headline, wherever the page repeats it."""

    def __init__(self, site_file, page_file, page_headlines, url):
        self.site = json.load(open(site_file))
        self.body = open(page_file, "rb").read()
        self.name = os.path.basename(site_file).removesuffix(".json")
        read = lambda path: subprocess.run([page_headlines, site_file, path, url], check=True,
                                           capture_output=True, text=True).stdout
        found = [json.loads(line) for line in read(page_file).splitlines() if line.strip()]
        # Every place each headline's title and link appear: (href_start, href_end, title_start,
        # title_end, original href). A title may also be in a menu the site file leaves out.
        places = sorted({p for title, link in found for p in self.locate(title, link, url)})
        # Each place its own slot first, to learn which places the site file reads.
        self.cut(places, {p: k for k, p in enumerate(places)})
        trial = [(f"{p[4].rstrip('/')}-check{k}", f"Check headline {k}") for k, p in enumerate(places)]
        with tempfile.NamedTemporaryFile(suffix=".html") as f:
            f.write(self.fill(trial))
            f.flush()
            seen = {tuple(json.loads(line)) for line in read(f.name).splitlines() if line.strip()}
        # A headline the site file reads at one of its places changes at all of them (a page may
        # show a story twice; the reader takes one).
        hrefs = sorted({p[4] for k, p in enumerate(places)
                        if (trial[k][1], urljoin(url, trial[k][0])) in seen})
        places = [p for p in places if p[4] in hrefs]
        if len(hrefs) < 4:
            sys.exit(f"siteserver: only {len(hrefs)} headlines of {page_file} found in its bytes")
        # Then one slot per headline, its every place changed together.
        self.slots = hrefs
        self.cut(places, {p: hrefs.index(p[4]) for p in places})

    def cut(self, places, slot_of):
        """`parts` for `places` (sorted; overlapping ones keep the page's bytes)."""
        self.parts = []
        at = 0
        for p in places:
            hs, he, ts, te, _ = p
            if hs < at or ts < he:
                continue
            k = slot_of[p]
            self.parts += [self.body[at:hs], ("href", k), self.body[he:ts], ("title", k)]
            at = te
        self.parts.append(self.body[at:])

    def fill(self, current):
        """The page with slot k's link and title set to current[k] (a title already escaped)."""
        out = []
        for part in self.parts:
            if isinstance(part, bytes):
                out.append(part)
            else:
                kind, k = part
                out.append((html_escape(current[k][0]) if kind == "href" else current[k][1]).encode())
        return b"".join(out)

    def locate(self, title, link, url):
        """The byte spans of a headline's href value and title text, wherever both are."""
        found = []
        for form in {html_escape(title, quote=False), html_escape(title), title}:
            needle = form.encode()
            start = 0
            while (t := self.body.find(needle, start)) >= 0:
                start = t + 1
                # The title as an element's text (not an attribute or a script's string).
                before = self.body[max(0, t - 200):t].rstrip()
                after = self.body[t + len(needle):t + len(needle) + 200].lstrip()
                if not before.endswith(b">") or not after.startswith(b"<"):
                    continue
                # The link: the href of the last <a> opened before the title (the headline's
                # anchor holds its title, or the title follows it directly).
                base = max(0, t - 100000)
                anchors = list(re.finditer(rb'<a\s[^>]*?href="([^"]*)"', self.body[base:t]))
                if anchors:
                    m = anchors[-1]
                    href = m.group(1).decode("utf-8", "replace").replace("&amp;", "&")
                    if urljoin(url, href) == link:
                        found.append((base + m.start(1), base + m.end(1), t, t + len(needle), href))
        return found


class Pages:
    """Page i: template i % len(templates), every headline slot its own, two changed per fetch."""

    def __init__(self, count, headlines, templates):
        self.count = count
        self.headlines = headlines
        self.templates = templates
        self.lock = threading.Lock()
        self.fetches = [0] * count
        self.state = {}  # page -> list of (href, title) per slot

    def template(self, i):
        return self.templates[i % len(self.templates)]

    def headline(self, i, k, seq):
        title, _, _ = self.headlines[(i * 7919 + k * 613 + seq * 104729) % len(self.headlines)]
        return title

    def slot(self, i, k, seq):
        t = self.template(i)
        href = t.slots[k]
        cut = re.search(r"[?#]", href)
        stem, tail = (href[:cut.start()], href[cut.start():]) if cut else (href, "")
        return (f"{stem.rstrip('/')}-p{i}-{seq}{tail}",
                html_escape(self.headline(i, k, seq), quote=False))

    def body(self, i):
        t = self.template(i)
        with self.lock:
            state = self.state.get(i)
            if state is None:
                state = [self.slot(i, k, 0) for k in range(len(t.slots))]
                self.state[i] = state
            n = self.fetches[i]
            self.fetches[i] += 1
            if n > 0:  # two headlines change on every fetch after the first
                for k in (2 * n % len(state), (2 * n + 1) % len(state)):
                    state[k] = self.slot(i, k, n)
            current = list(state)
        return t.fill(current)


class Stats:
    def __init__(self, count, interval):
        self.lock = threading.Lock()
        self.hold = threading.Event()  # set: requests are answered; clear: they wait
        self.hold.set()
        self.requests = self.ok = self.not_modified = self.conditional = self.bytes = 0
        self.held = 0
        self.served = bytearray(count)
        self.served_count = 0
        self.all_served_at = None
        self.started = time.time()
        # Whether newsdesk keeps up: the time between two fetches of one site, at most, and how
        # many came later than 1.5 x its interval.
        self.interval = interval
        self.last = [0.0] * count
        self.max_gap = 0.0
        self.late = 0

    def count(self, i, unchanged, sent, conditional):
        with self.lock:
            self.requests += 1
            self.conditional += conditional
            now = time.time()
            if self.last[i]:
                gap = now - self.last[i]
                self.max_gap = max(self.max_gap, gap)
                self.late += gap > 1.5 * self.interval
            self.last[i] = now
            if not self.served[i]:
                self.served[i] = 1
                self.served_count += 1
                if self.served_count == len(self.served):
                    self.all_served_at = time.time()
            if unchanged:
                self.not_modified += 1
            else:
                self.ok += 1
                self.bytes += sent

    def snapshot(self):
        with self.lock:
            return {
                "time": time.time(),
                "requests": self.requests,
                "ok": self.ok,
                "not_modified": self.not_modified,
                "conditional": self.conditional,
                "bytes": self.bytes,
                "held_now": self.held,
                "hold": not self.hold.is_set(),
                "feeds_served": self.served_count,
                "all_served_at": self.all_served_at,
                "max_gap": round(self.max_gap, 1),
                "late": self.late,
            }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bench-scale-feeds"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle and the client's delayed
    # ACK hold each keep-alive answer ~40 ms.
    disable_nagle_algorithm = True
    feeds: Feeds = None
    pages: Pages = None
    stats: Stats = None

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def do_POST(self):
        url = urlsplit(self.path)
        if url.path == "/_hold":
            on = parse_qs(url.query).get("on", ["1"])[0] == "1"
            if on:
                self.stats.hold.clear()
            else:
                self.stats.hold.set()
            return self.reply(200, b"ok\n", [("Content-Type", "text/plain")])
        self.reply(404, b"not found\n", [("Content-Type", "text/plain")])

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/_stats":
            body = json.dumps(self.stats.snapshot()).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        m = re.fullmatch(r"/(feed|page)/(\d+)\.(xml|html)", url.path)
        sites = self.pages if self.pages else self.feeds
        if not m or m.group(1) != ("page" if self.pages else "feed") or int(m.group(2)) >= sites.count:
            return self.reply(404, b"not found\n", [("Content-Type", "text/plain")])
        i = int(m.group(2))
        if not self.stats.hold.is_set():
            with self.stats.lock:
                self.stats.held += 1
            self.stats.hold.wait()
            with self.stats.lock:
                self.stats.held -= 1
        if self.pages:
            body = self.pages.body(i)
            self.stats.count(i, unchanged=False, sent=len(body), conditional=False)
            return self.reply(200, body, [("Content-Type", "text/html; charset=utf-8"),
                                          ("Cache-Control", "no-cache")])
        _, etag, last_modified, body, newest = self.feeds.current(i, time.time())
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        unchanged = False
        if inm is not None:
            unchanged = etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*"
        elif ims is not None:
            try:
                unchanged = email.utils.parsedate_to_datetime(ims).timestamp() >= newest
            except (TypeError, ValueError, IndexError):
                unchanged = False
        self.stats.count(i, unchanged, len(body), inm is not None or ims is not None)
        headers = [("ETag", etag), ("Last-Modified", last_modified), ("Cache-Control", "no-cache")]
        if unchanged:
            return self.reply(304, headers=headers)
        self.reply(200, body, [("Content-Type", "application/rss+xml; charset=utf-8")] + headers)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_csv = os.path.join(here, "..", "..", "..", "shared", "stories", "uci-news-dev.csv")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--feeds", type=int)
    kind.add_argument("--pages", type=int)
    ap.add_argument("--templates", help="SITE_FILE=PAGE_FILE,... (with --pages)")
    ap.add_argument("--page-headlines", help="bench/scale's page_headlines program (with --pages)")
    ap.add_argument("--site-files", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--interval", type=float, default=60, help="newsdesk's refresh interval, s")
    ap.add_argument("--headlines", default=os.environ.get("NEWSDESK_SHARED_STORIES_CSV", default_csv))
    args = ap.parse_args()
    count = args.feeds or args.pages
    if not 1 <= count <= 100000:
        sys.exit("siteserver: --feeds and --pages must be 1..100000")
    if args.pages and not (args.templates and args.page_headlines):
        sys.exit("siteserver: --pages needs --templates and --page-headlines")

    headlines = load_headlines(args.headlines)
    feeds = Feeds(count, headlines)  # its display names serve pages too
    Handler.stats = Stats(count, args.interval)
    server = Server(("127.0.0.1", args.port), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    if args.pages:
        templates = []
        for pair in args.templates.split(","):
            site_file, page_file = pair.split("=", 1)
            templates.append(Template(site_file, page_file, args.page_headlines, f"{base}/page/0.html"))
        Handler.pages = Pages(count, headlines, templates)
    else:
        Handler.feeds = feeds

    os.makedirs(args.site_files, exist_ok=True)
    names = []
    for i in range(count):
        if args.pages:
            t = Handler.pages.template(i)
            name = f"page{i:04d}"
            site = {k: v for k, v in t.site.items() if k not in ("comment", "url", "colour")}
            site.update(name=name, display_name=f"{feeds.display_name(i)} ({t.name})",
                        url=f"{base}/page/{i}.html", renderer="direct")
        else:
            name = f"feed{i:04d}"
            site = {"name": name, "display_name": feeds.display_name(i),
                    "feed": f"{base}/feed/{i}.xml"}
        names.append(name)
        with open(os.path.join(args.site_files, name + ".json"), "w") as f:
            json.dump(site, f)
    with open(os.path.join(os.path.dirname(os.path.abspath(args.site_files)), "site-names.json"), "w") as f:
        json.dump(names, f)

    print(f"url={base}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Serves N RSS feeds on 127.0.0.1 for bench/scale: one new item per feed per minute.

Feed i (site name feedNNNN) holds K_i items, 30 to 90 (fixed per feed). Its newest item changes
once a minute, at a second of the minute that differs between feeds (so the changes are spread
over the minute as real feeds' are); the oldest item rolls off. Titles are real headlines and
hosts real news hosts from the saved UCI News Aggregator slice (../shared/stories, see its
README); each item's link is distinct (host, slug of the title, feed and sequence number).

Every answer carries an ETag and a Last-Modified naming the newest item; a request whose
If-None-Match names the current ETag, or whose If-Modified-Since is not older than the newest
item, gets 304 with no body.

Besides the feeds:
  GET  /_stats          JSON counters (requests, 200s, 304s, conditional requests, bytes, held
                        requests, feeds served at least once and when the last of them was)
  POST /_hold?on=1|0    hold mode: feed requests wait (unanswered) until hold is turned off, so
                        the newsdesk under test refreshes nothing (bench/scale's idle
                        measurement); turning it off answers them with 304 or the feed

Usage: feedserver.py --feeds N --site-files DIR [--port 0] [--headlines CSV]
Writes DIR/feedNNNN.json (a newsdesk site file per feed) and DIR/../site-names.json (the names,
for the config's `sites`), then prints "url=http://127.0.0.1:PORT" and serves until killed.
Runs one thread per connection (newsdesk keeps a few connections open and reuses them).
"""
import argparse
import csv
import email.utils
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit
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
        sys.exit(f"feedserver: no headlines in {path}")
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


class Stats:
    def __init__(self, count):
        self.lock = threading.Lock()
        self.hold = threading.Event()  # set: requests are answered; clear: they wait
        self.hold.set()
        self.requests = self.ok = self.not_modified = self.conditional = self.bytes = 0
        self.held = 0
        self.served = bytearray(count)
        self.served_count = 0
        self.all_served_at = None
        self.started = time.time()

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
            }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bench-scale-feeds"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle and the client's delayed
    # ACK hold each keep-alive answer ~40 ms.
    disable_nagle_algorithm = True
    feeds: Feeds = None
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
        m = re.fullmatch(r"/feed/(\d+)\.xml", url.path)
        if not m or int(m.group(1)) >= self.feeds.count:
            return self.reply(404, b"not found\n", [("Content-Type", "text/plain")])
        i = int(m.group(1))
        if not self.stats.hold.is_set():
            with self.stats.lock:
                self.stats.held += 1
            self.stats.hold.wait()
            with self.stats.lock:
                self.stats.held -= 1
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
        with self.stats.lock:
            st = self.stats
            st.requests += 1
            st.conditional += inm is not None or ims is not None
            if not st.served[i]:
                st.served[i] = 1
                st.served_count += 1
                if st.served_count == self.feeds.count:
                    st.all_served_at = time.time()
            if unchanged:
                st.not_modified += 1
            else:
                st.ok += 1
                st.bytes += len(body)
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
    ap.add_argument("--feeds", type=int, required=True)
    ap.add_argument("--site-files", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--headlines", default=os.environ.get("NEWSDESK_SHARED_STORIES_CSV", default_csv))
    args = ap.parse_args()
    if not 1 <= args.feeds <= 100000:
        sys.exit("feedserver: --feeds must be 1..100000")

    feeds = Feeds(args.feeds, load_headlines(args.headlines))
    Handler.feeds = feeds
    Handler.stats = Stats(args.feeds)
    server = Server(("127.0.0.1", args.port), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"

    os.makedirs(args.site_files, exist_ok=True)
    names = []
    for i in range(args.feeds):
        name = f"feed{i:04d}"
        names.append(name)
        with open(os.path.join(args.site_files, name + ".json"), "w") as f:
            json.dump({"name": name, "display_name": feeds.display_name(i),
                       "feed": f"{base}/feed/{i}.xml"}, f)
    with open(os.path.join(os.path.dirname(os.path.abspath(args.site_files)), "site-names.json"), "w") as f:
        json.dump(names, f)

    print(f"url={base}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

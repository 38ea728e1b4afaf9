#!/usr/bin/env python3
"""Checks a newsdesk feed the way a real reader would see it.

Usage: check_feed.py FEED_FILE EXPECTED_JSON_FILE

EXPECTED_JSON_FILE describes what must come out:
  {"format": "atom" | "json", "title": "...",
   "entries": [{"id": "...", "title": "...", "link": "...", "site": "...",
                "published_ms": 0, "updated_ms": 0}, ...]}

Atom is read with feedparser (Debian's python3-feedparser): the feed must parse without any
complaint (bozo == 0) as Atom 1.0. JSON Feed 1.1 is read with the json module and its required
fields are checked. Exit status 0 when everything matches, 1 with the reasons on stderr
otherwise, 2 when feedparser is missing (a check that cannot run: callers fail on it too).
"""

import calendar
import datetime
import json
import sys


def fail(errors):
    for e in errors:
        print("check_feed: " + e, file=sys.stderr)
    sys.exit(1)


def check_atom(path, expected):
    try:
        import feedparser
    except ImportError:
        print("check_feed: python3-feedparser is not installed", file=sys.stderr)
        sys.exit(2)
    d = feedparser.parse(path)
    errors = []
    if d.bozo:
        fail(["feedparser reports a malformed feed: %r" % (d.get("bozo_exception"),)])
    if d.version != "atom10":
        errors.append("version %r, expected atom10" % d.version)
    if d.feed.get("title") != expected["title"]:
        errors.append("feed title %r, expected %r" % (d.feed.get("title"), expected["title"]))
    for key in ("id", "updated_parsed"):
        if not d.feed.get(key):
            errors.append("feed has no %s" % key)
    if not any(l.get("rel") == "self" for l in d.feed.get("links", [])):
        errors.append("feed has no rel=self link")
    if len(d.entries) != len(expected["entries"]):
        fail(errors + ["%d entries, expected %d" % (len(d.entries), len(expected["entries"]))])
    for i, (got, want) in enumerate(zip(d.entries, expected["entries"])):
        where = "entry %d: " % i
        for key in ("id", "title", "link"):
            if got.get(key) != want[key]:
                errors.append(where + "%s %r, expected %r" % (key, got.get(key), want[key]))
        if got.get("title_detail", {}).get("type") != "text/plain":
            errors.append(where + "title is not text")
        for key in ("published", "updated"):
            parsed = got.get(key + "_parsed")
            if parsed is None:
                errors.append(where + "%s did not parse: %r" % (key, got.get(key)))
            elif calendar.timegm(parsed) != want[key + "_ms"] // 1000:
                errors.append(where + "%s %r, expected %d ms" % (key, got.get(key),
                                                                  want[key + "_ms"]))
        tags = [t.get("term") for t in got.get("tags", [])]
        if tags != [want["site"]]:
            errors.append(where + "categories %r, expected [%r]" % (tags, want["site"]))
    if errors:
        fail(errors)


def rfc3339_ms(text):
    if not isinstance(text, str) or "T" not in text:
        raise ValueError("not an RFC 3339 date-time: %r" % (text,))
    t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError("no time zone: %r" % (text,))
    return round(t.timestamp() * 1000)


def check_json(path, expected):
    errors = []
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        fail(["not valid UTF-8 JSON: %s" % e])
    if not isinstance(doc, dict):
        fail(["top level is not an object"])
    if doc.get("version") != "https://jsonfeed.org/version/1.1":
        errors.append("version %r" % (doc.get("version"),))
    if doc.get("title") != expected["title"]:
        errors.append("title %r, expected %r" % (doc.get("title"), expected["title"]))
    for key in ("home_page_url", "feed_url"):
        if key in doc and not isinstance(doc[key], str):
            errors.append("%s is not a string" % key)
    items = doc.get("items")
    if not isinstance(items, list):
        fail(errors + ["items is not an array"])
    if len(items) != len(expected["entries"]):
        fail(errors + ["%d items, expected %d" % (len(items), len(expected["entries"]))])
    for i, (got, want) in enumerate(zip(items, expected["entries"])):
        where = "item %d: " % i
        if not isinstance(got.get("id"), str):
            errors.append(where + "id is not a string")
        if not isinstance(got.get("content_text"), str) and not isinstance(
                got.get("content_html"), str):
            errors.append(where + "neither content_text nor content_html")
        for key, want_key in (("id", "id"), ("title", "title"), ("url", "link")):
            if got.get(key) != want[want_key]:
                errors.append(where + "%s %r, expected %r" % (key, got.get(key), want[want_key]))
        for key, want_key in (("date_published", "published_ms"),
                              ("date_modified", "updated_ms")):
            try:
                if rfc3339_ms(got.get(key)) != want[want_key]:
                    errors.append(where + "%s %r, expected %d ms" % (key, got.get(key),
                                                                      want[want_key]))
            except ValueError as e:
                errors.append(where + "%s: %s" % (key, e))
        if got.get("tags") != [want["site"]]:
            errors.append(where + "tags %r, expected [%r]" % (got.get("tags"), want["site"]))
    if errors:
        fail(errors)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    with open(sys.argv[2], encoding="utf-8") as f:
        expected = json.load(f)
    if expected["format"] == "atom":
        check_atom(sys.argv[1], expected)
    elif expected["format"] == "json":
        check_json(sys.argv[1], expected)
    else:
        fail(["unknown format %r" % expected["format"]])
    print("check_feed: %s feed OK, %d entries" % (expected["format"], len(expected["entries"])))


if __name__ == "__main__":
    main()

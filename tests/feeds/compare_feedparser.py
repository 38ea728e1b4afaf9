#!/usr/bin/env python3
"""newsdesk's feed reader against Python's feedparser on our own corpus of feeds.

Usage: compare_feedparser.py NEWSDESK_BINARY [--verbose] [--only KIND[/FILE]] [--corpus DIR]

--corpus reads another folder of the same layout (a folder per kind) instead of ours: feeds of
your own, compared the same way. --only limits the run to the files whose "kind/file" starts so.

The corpus (tests/feeds/corpus/README.md) is a folder per kind of feed: title_link, link_only,
title_only, entities, atom03, and encodings, whose files encoded_corpus.py makes from text. Each
file is read by feedparser (Debian's python3-feedparser, the reference feed readers are measured
against) and by newsdesk (`newsdesk --try-site SITE.json --html FILE --url FEED_URL --json`, with
`--content-type` where a case has an HTTP Content-Type), both as if fetched from the same
address, so that relative links resolve alike.

What "agree" means. newsdesk shows headlines: a title and a link to a page. So feedparser's
entries are first turned into the headlines a reader of them would click:
  - the title is entry.title as text: a title feedparser types text/html or application/xhtml+xml
    is reduced to its text (its tags dropped, its references resolved), as a browser would show
    it; then every run of Unicode white space is one space, invisible format characters (soft
    hyphen, zero-width space, byte order mark...) are dropped, and the ends trimmed;
  - the link is entry.link resolved against the feed's address (feedparser takes it from the
    alternate link, else from a permalink guid or an id);
  - an entry without a title or without an http(s) link is not a headline: no reader can list
    it as one, and newsdesk leaves it out (an untitled entry has nothing to show, a link-less
    one nowhere to go). Such entries are expected to be absent from newsdesk, so a file whose
    entries all lack links agrees when newsdesk finds none;
  - two entries with the same link are one headline, the first: newsdesk shows a page once.
A file agrees when newsdesk's headlines are exactly these, in the same order, title for title
and link for link (links compared after resolution, their scheme and host lowercased and
characters a URL may not hold percent-encoded, as both sides would fetch them). Anything else,
including newsdesk refusing a feed in which feedparser found headlines, is a disagreement.

A crash (newsdesk killed by a signal or exiting other than 0, or 1 with a message) or a read
longer than TIMEOUT_S fails the run whatever the figures. So does any kind under 90%
agreement, and a missing feedparser (scripts/setup installs it): a comparison that cannot run
fails, it does not skip.

Accepted differences (ACCEPTED below) are the few files where feedparser is the one that is
wrong, or where newsdesk differs on purpose; each says why and pins what newsdesk must show
instead, so they are checked too. They are reported apart and do not count as agreement.
"""

import html.parser
import json
import os
import subprocess
import sys
import tempfile
import unicodedata
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
KINDS = ["title_link", "link_only", "title_only", "encodings", "entities", "atom03"]
REQUIRED_AGREEMENT = 0.90
# A feed of a few KB reads in milliseconds; seconds mean a hang.
TIMEOUT_S = 10
FEED_BASE = "https://feeds.example.com/corpus/"

# kind/file -> (why, the headlines newsdesk must show instead: [(title, link)]).
ACCEPTED = {
    "title_link/atom10_many_links.xml": (
        "two alternate HTML links (the second with hreflang=\"fr\"): feedparser keeps the last "
        "one it meets, newsdesk the first, the entry's own page as the feed lists it",
        [("Rewriting the build scripts", "https://diary.example.dev/posts/build-scripts"),
         ("Notes on caching", "https://diary.example.dev/posts/caching")],
    ),
    "link_only/rss10_about_without_link.xml": (
        "an RSS 1.0 item whose only address is its rdf:about (RSS 1.0's id, the item's URL): "
        "feedparser gives it no link, newsdesk links it as it links an Atom id that is a URL",
        [("About only item", "http://r.example.com/about-only")],
    ),
    "entities/bare_ampersand.xml": (
        "a bare '&' before letters (\"AT&T\"): feedparser's loose parser reads it as a "
        "reference and writes \"AT&T;\"; newsdesk keeps the text as written",
        [("AT&T and T-Mobile in merger talks", "https://bareamp.example.com/merger"),
         ("Q&A with the new headteacher", "https://bareamp.example.com/qa"),
         ("Rock & roll museum opens", "https://bareamp.example.com/museum")],
    ),
    "entities/html5_names.xml": (
        "names only HTML5 has (&check; &starf; &bigstar;): feedparser knows HTML 4's list and "
        "keeps them as text; newsdesk resolves the HTML5 list, as browsers do",
        [("Tasks done \u2713 and stars \u2605", "https://html5.example.com/tasks"),
         ("A \u2605 performance at the opera", "https://html5.example.com/opera"),
         ("Arrows \u2192 and \u2190 point the way", "https://html5.example.com/arrows")],
    ),
}


class _TextOf(html.parser.HTMLParser):
    """The text a browser shows of an HTML fragment: script and style are not text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "template"):
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template") and self.hidden:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def html_to_text(markup):
    p = _TextOf()
    p.feed(markup)
    p.close()
    return "".join(p.parts)


# Format characters a title never shows; the joiners that scripts and emoji need are kept.
_KEPT_FORMAT = {"\u200c", "\u200d"}


def normalise_title(text):
    out = []
    space = False
    for ch in text:
        if ch.isspace() or unicodedata.category(ch) == "Zs":
            space = True
            continue
        cat = unicodedata.category(ch)
        if cat == "Cc" or (cat == "Cf" and ch not in _KEPT_FORMAT):
            continue
        if space and out:
            out.append(" ")
        space = False
        out.append(ch)
    return "".join(out)


def normalise_link(link, base):
    if not link or not link.strip():
        return None
    link = "".join(link.strip().split("\n")).replace("\t", "").replace("\r", "")
    link = urllib.parse.urljoin(base, link)
    parts = urllib.parse.urlsplit(link)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    safe = "/?#[]@!$&'()*+,;=:%~-._"
    path = urllib.parse.quote(parts.path, safe=safe) or "/"
    query = urllib.parse.quote(parts.query, safe=safe)
    fragment = urllib.parse.quote(parts.fragment, safe=safe)
    netloc = parts.netloc.lower()
    return urllib.parse.urlunsplit((parts.scheme.lower(), netloc, path, query, fragment))


def feedparser_headlines(feedparser, data, base, content_type):
    # A case without an HTTP Content-Type is a saved file: its encoding from its BOM, its
    # declaration, else UTF-8. feedparser reads headers without a Content-Type as a server that
    # sent none (ISO-8859-1), so it is told application/xml, which means just that (RFC 7303).
    headers = {"content-location": base, "content-type": content_type or "application/xml"}
    d = feedparser.parse(data, response_headers=headers)
    out, seen = [], set()
    for e in d.entries:
        detail = e.get("title_detail") or {}
        title = e.get("title", "")
        if detail.get("type") in ("text/html", "application/xhtml+xml"):
            title = html_to_text(title)
        title = normalise_title(title)
        link = normalise_link(e.get("link", ""), base)
        if not title or not link or link in seen:
            continue
        seen.add(link)
        out.append((title, link))
    return out


def newsdesk_headlines(binary, path, base, content_type, work):
    """(headlines, error): headlines as [(title, link)], or None and the reason it read none."""
    site = os.path.join(work, "corpus-site.json")
    if not os.path.exists(site):
        with open(site, "w") as f:
            json.dump({"name": "corpus", "feed": FEED_BASE + "feed.xml"}, f)
    command = [binary, "--try-site", site, "--html", path, "--url", base, "--json"]
    if content_type:
        command += ["--content-type", content_type]
    try:
        run = subprocess.run(command, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Crash("timed out after %d s" % TIMEOUT_S)
    stderr = run.stderr.decode("utf-8", "replace").strip()
    if run.returncode < 0:
        raise Crash("killed by signal %d: %s" % (-run.returncode, stderr))
    # A sanitizer's report (the suite also runs under ASan, UBSan and TSan) is a crash whatever
    # the exit status it chose.
    if "Sanitizer" in stderr or "runtime error:" in stderr:
        raise Crash("a sanitizer reported: %s" % stderr[:2000])
    if run.returncode == 1 and stderr:
        return None, stderr  # refused, with a reason: a disagreement unless feedparser agrees
    if run.returncode != 0:
        raise Crash("exit status %d: %s" % (run.returncode, stderr))
    report = json.loads(run.stdout)
    out = []
    for h in report["headlines"]:
        out.append((normalise_title(h["title"]), normalise_link(h["url"], base) or h["url"]))
    return out, None


class Crash(Exception):
    pass


def corpus_files(corpus, work, only):
    """[(kind, name, path, content_type)] for the whole corpus (or the `only` part of it)."""
    sys.path.insert(0, HERE)
    import encoded_corpus

    files = []
    for kind in KINDS:
        if kind == "encodings" and corpus == CORPUS:
            folder = os.path.join(work, "encodings")
            os.makedirs(folder, exist_ok=True)
            for name, data, content_type in encoded_corpus.cases():
                path = os.path.join(folder, name + ".xml")
                with open(path, "wb") as f:
                    f.write(data)
                files.append((kind, name + ".xml", path, content_type))
        else:
            folder = os.path.join(corpus, kind)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                if name.endswith(".xml"):
                    path = os.path.join(folder, name)
                    content_type = None
                    if os.path.exists(path + ".content-type"):
                        with open(path + ".content-type") as f:
                            content_type = f.read().strip()
                    files.append((kind, name, path, content_type))
    if only:
        files = [f for f in files if (f[0] + "/" + f[1]).startswith(only)]
    return files


def show(headlines):
    if headlines is None:
        return "    (refused)"
    return "\n".join("    %r -> %s" % h for h in headlines) or "    (none)"


def main():
    args = sys.argv[1:]
    verbose = "--verbose" in args
    options = {"--only": None, "--corpus": CORPUS}
    for option in options:
        if option in args and args.index(option) + 1 < len(args):
            at = args.index(option)
            options[option] = args[at + 1]
            del args[at : at + 2]
    only, corpus = options["--only"], options["--corpus"]
    args = [a for a in args if a != "--verbose"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    binary = args[0]
    try:
        import feedparser
    except ImportError:
        print(
            "compare_feedparser: python3-feedparser is not installed for %s "
            "(scripts/setup installs it: apt-get install python3-feedparser)" % sys.executable,
            file=sys.stderr,
        )
        return 1

    counts = {kind: [0, 0, 0] for kind in KINDS}  # agree, accepted, files
    crashes = []
    with tempfile.TemporaryDirectory(prefix="newsdesk-corpus-") as work:
        for kind, name, path, content_type in corpus_files(corpus, work, only):
            key = kind + "/" + name
            base = FEED_BASE + key
            with open(path, "rb") as f:
                data = f.read()
            counts[kind][2] += 1
            try:
                expected = feedparser_headlines(feedparser, data, base, content_type)
            except Exception as e:  # the reference must read every file the corpus holds
                crashes.append("%s: feedparser itself fails (%r): not a usable case" % (key, e))
                print("UNUSABLE %s: feedparser raised %r" % (key, e))
                continue
            try:
                got, refused = newsdesk_headlines(binary, path, base, content_type, work)
            except Crash as e:
                crashes.append("%s: %s" % (key, e))
                print("CRASH %s: %s" % (key, e))
                continue
            if got is None and not expected:
                got = []
            if key in ACCEPTED:
                why, pinned = ACCEPTED[key]
                if got == pinned:
                    counts[kind][1] += 1
                    if verbose:
                        print("accepted %s: %s" % (key, why))
                    continue
                print("DIFFERS %s (an accepted difference: %s)" % (key, why))
                print("  newsdesk must show:\n%s\n  newsdesk shows:\n%s" % (show(pinned), show(got)))
                continue
            if got == expected:
                counts[kind][0] += 1
                if verbose:
                    print("agree %s (%d headlines)" % (key, len(got)))
                continue
            print("DIFFERS %s%s" % (key, " (refused: %s)" % refused if refused else ""))
            print("  feedparser:\n%s\n  newsdesk:\n%s" % (show(expected), show(got)))

    print("\nnewsdesk against feedparser %s, per kind (agree / files):" % feedparser.__version__)
    failed = bool(crashes)
    for kind in KINDS:
        agree, accepted, files = counts[kind]
        if not files:
            continue
        share = agree / files
        low = share < REQUIRED_AGREEMENT
        failed = failed or low
        print(
            "  %-11s %3d / %3d  %5.1f%%%s%s"
            % (kind, agree, files, 100 * share,
               "  (+%d accepted differences)" % accepted if accepted else "",
               "  BELOW %d%%" % (100 * REQUIRED_AGREEMENT) if low else "")
        )
    if crashes:
        print("%d crashes or timeouts:\n  %s" % (len(crashes), "\n  ".join(crashes)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

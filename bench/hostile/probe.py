#!/usr/bin/env python3
"""Hostile-client probes against the real newsdesk binary (issue 17's figures).

Starts the Splash stand-in (standin-control) and newsdesk from a build folder, then:
  slots   - one address opens N /events streams (default 10,000) and holds them; counts how many
            were answered 200 and how many 503, then times an ordinary GET /news from the same
            address. Run twice: with the default per-address limits, and with them off (as
            behind a proxy), where only the stream budget holds.
  nested  - one site serves 100,000 nested <div>s next to a healthy site: the healthy site's
            refresh time and a new /events client's first byte while the hostile page is handled.
  bounded - the costliest page the input bounds let through (249 blocks of 2,000 nested <div>s,
            498,002 elements, just inside both bounds): how long its parse takes and what its site shows.
  rss     - Splash (without Lua, so render.html's error text comes through) answers a 502 quoting
            5 MB; 500 clients then ask for /news.json and /news and read nothing: newsdesk's
            RSS before and while they wait, and /healthz meanwhile.
  forged  - a network client publishes a headline on /topic/headlines: does /events show it?
Prints one line per figure. Usage: bench/hostile/probe.py [BUILD_DIR] [STREAMS]
"""
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

build = sys.argv[1] if len(sys.argv) > 1 else "build"
streams = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
newsdesk_bin = os.path.join(build, "server", "newsdesk")
standin_bin = os.path.join(build, "tests", "browser", "standin-control")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

children = []


def start(args, pattern, env=None):
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.PIPE,
                             text=True, env=env)
    children.append(child)
    seen = ""
    deadline = time.time() + 20
    while time.time() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        seen += line
        if pattern(seen):
            return child, seen
    raise SystemExit(f"{args[0]} did not start:\n{seen}")


def cnn_page(stories):
    items = "".join(f'<article><h3 class="cd__headline"><a href="{h}"><span class="cd__headline-text">{t}</span></a></h3></article>'
                    for h, t in stories)
    return f"<html><body>{items}</body></html>"


def http(url, method="GET", data=None, timeout=30):
    req = urllib.request.Request(url, method=method, data=data)
    start_t = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            return r.status, body, time.monotonic() - start_t
    except urllib.error.HTTPError as e:
        return e.code, e.read(), time.monotonic() - start_t


# The hostile page is larger than the control port takes in one request: served from a file.
nested_file = os.path.join(tempfile.mkdtemp(prefix="newsdesk-probe-"), "nested.html")
with open(nested_file, "w") as f:
    f.write("<html><body>" + "<div>" * 100000 + "</body></html>")
standin, text = start([standin_bin, f"https://hostile.cnn.com/={nested_file}"], lambda s: "control on" in s)
splash_url = [w for w in text.split() if w.startswith("http://")][0]
control_url = [w for w in text.split() if w.startswith("http://")][1]


def set_page(url, html):
    http(f"{control_url}/control/set?url={urllib.parse.quote(url, safe='')}", "POST", html.encode())


def run_newsdesk(config):
    work = tempfile.mkdtemp(prefix="newsdesk-probe-")
    path = os.path.join(work, "config.json")
    with open(path, "w") as f:
        json.dump({"splash_url": splash_url, "wait": 0, "access_log": False, **config}, f)
    env = dict(os.environ)
    env.pop("SPLASH_URL", None)
    child, seen = start([newsdesk_bin, "--config", path, "--port", "0", "--broker-listen", "127.0.0.1:0",
                         "--templates", os.path.join(source, "templates"), "--static", os.path.join(source, "static"),
                         "--store", os.path.join(work, "store.db")],
                        lambda s: "service=http url=" in s and "service=broker" in s, env)
    base = seen.split("service=http url=")[1].split()[0]
    broker = int(seen.split("service=broker address=")[1].split()[0].rsplit(":", 1)[1])
    return child, base, broker


def settled(base, tries=100):
    """/news.json once every site has succeeded or failed (polled every 0.1 s, at most `tries`)."""
    for _ in range(tries):
        news = json.loads(http(base + "/news.json")[1])
        if all(s["ok"] or s["error"] for s in news["sites"]):
            break
        time.sleep(0.1)
    return news


def stop(child):
    child.terminate()
    child.wait(timeout=20)


set_page("https://healthy.cnn.com/", cnn_page([("/h/index.html", "Healthy headline")]))

# ---- slots ---------------------------------------------------------------------------------
for label, http_cfg in [("default limits", {}),
                        ("per-address limits off (as behind a proxy)", {"max_connections_per_ip": 0, "max_streams_per_ip": 0})]:
    child, base, _ = run_newsdesk({"http": http_cfg, "sites": [{"name": "healthy", "scraper": "cnn", "url": "https://healthy.cnn.com/"}]})
    http(base + "/news.json")
    host, port = base[len("http://"):].split(":")
    held, ok, refused, other = [], 0, 0, 0
    t0 = time.monotonic()
    for i in range(streams):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /events HTTP/1.1\r\nHost: probe\r\nAccept: text/event-stream\r\n\r\n")
        held.append(s)
    for s in held:
        s.settimeout(10)
        try:
            head = s.recv(4096)
        except OSError:
            head = b""
        if head.startswith(b"HTTP/1.1 200"):
            ok += 1
        elif head.startswith(b"HTTP/1.1 503"):
            refused += 1
        else:
            other += 1
    opened = time.monotonic() - t0
    status, body, took = http(base + "/news")
    print(f"slots ({label}): {streams} /events attempts from one address in {opened:.1f} s: "
          f"{ok} streams held, {refused} answered 503, {other} other; meanwhile GET /news -> {status} in {took * 1000:.0f} ms")
    for s in held:
        s.close()
    stop(child)

# ---- nested --------------------------------------------------------------------------------
child, base, _ = run_newsdesk({"refresh": {"retries": 0, "manual_min_interval": 0},
                               "sites": [{"name": "hostile", "scraper": "cnn", "url": "https://hostile.cnn.com/"},
                                         {"name": "healthy", "scraper": "cnn", "url": "https://healthy.cnn.com/"}]})
news = settled(base)
sites = {s["name"]: s for s in news["sites"]}
http(base + "/api/refresh?site=hostile", "POST")
host, port = base[len("http://"):].split(":")
t0 = time.monotonic()
s = socket.create_connection((host, int(port)))
s.sendall(b"GET /events HTTP/1.1\r\nHost: probe\r\n\r\n")
s.recv(4096)
first_byte = time.monotonic() - t0
s.close()
print(f"nested: 100,000 nested <div>s -> \"{sites['hostile']['error']}\" after {sites['hostile']['elapsed_ms']} ms; "
      f"healthy site refreshed in {sites['healthy']['elapsed_ms']} ms; /events first byte during a hostile refresh {first_byte * 1000:.1f} ms")
stop(child)

# ---- bounded -------------------------------------------------------------------------------
bounded = "<html><body>" + ("<div>" * 2000 + "</div>" * 2000) * 249 + "</body></html>"
bounded_file = os.path.join(os.path.dirname(nested_file), "bounded.html")
with open(bounded_file, "w") as f:
    f.write(bounded)
bounded_standin, text = start([standin_bin, f"https://bounded.cnn.com/={bounded_file}"], lambda s: "control on" in s)
bounded_splash = [w for w in text.split() if w.startswith("http://")][0]
child, base, _ = run_newsdesk({"splash_url": bounded_splash, "refresh": {"retries": 0},
                               "sites": [{"name": "bounded", "scraper": "cnn", "url": "https://bounded.cnn.com/"}]})
news = settled(base, tries=600)
print(f"bounded: 249 x 2,000 nested <div>s ({len(bounded) / 1e6:.1f} MB, 498,002 elements) -> "
      f"\"{news['sites'][0]['error']}\" after {news['sites'][0]['elapsed_ms']} ms")
stop(child)
stop(bounded_standin)

# ---- rss -----------------------------------------------------------------------------------


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


http(f"{control_url}/control/lua", "POST", b"off")
http(f"{control_url}/control/error?url={urllib.parse.quote('https://quoting.cnn.com/', safe='')}&text_bytes={5 * 1024 * 1024}",
     "POST", b"502")
child, base, _ = run_newsdesk({"refresh": {"retries": 0}, "http": {"max_connections_per_ip": 0},
                               "sites": [{"name": "quoting", "scraper": "cnn", "url": "https://quoting.cnn.com/"},
                                         {"name": "healthy", "scraper": "cnn", "url": "https://healthy.cnn.com/"}]})
news = settled(base)
json_bytes = len(http(base + "/news.json")[1])
before = rss_mb(child.pid)
host, port = base[len("http://"):].split(":")
readers = []
for i in range(500):
    r = socket.create_connection((host, int(port)))
    r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    path = "/news.json" if i % 2 == 0 else "/news"
    r.sendall(f"GET {path} HTTP/1.1\r\nHost: probe\r\nAccept-Encoding: identity\r\n\r\n".encode())
    readers.append(r)
time.sleep(2)
during = rss_mb(child.pid)
status, _, took = http(base + "/healthz")
print(f"rss: Splash error quoting 5 MB -> /news.json {json_bytes / 1024:.1f} KB; RSS {before:.0f} MB before, "
      f"{during:.0f} MB with 500 slow readers; /healthz {status} in {took * 1000:.0f} ms")
for r in readers:
    r.close()
stop(child)
http(f"{control_url}/control/lua", "POST", b"on")

# ---- forged --------------------------------------------------------------------------------
child, base, broker_port = run_newsdesk({"sites": [{"name": "healthy", "scraper": "cnn", "url": "https://healthy.cnn.com/"}]})
http(base + "/news.json")
reader = socket.create_connection((host, int(base.rsplit(":", 1)[1])))
reader.sendall(b"GET /events HTTP/1.1\r\nHost: probe\r\n\r\n")
reader.settimeout(1)


def frame(b):
    return struct.pack(">I", len(b)) + b


forged = json.dumps([{"id": 999999, "title": "FORGED: Site compromised, log in again here",
                      "url": "https://evil.example/login", "site": "healthy"}]).encode()
pub = socket.create_connection(("127.0.0.1", broker_port))
pub.sendall(frame(b"/null") + frame(b"/topic/headlines") + frame(forged))
pub.settimeout(2)
closed = pub.recv(10) == b""
got = b""
end = time.time() + 1.5
while time.time() < end:
    try:
        chunk = reader.recv(65536)
        if not chunk:
            break
        got += chunk
    except socket.timeout:
        break
stats = json.loads(http(base + "/api/broker")[1])
print(f"forged: publish to /topic/headlines from the network -> connection closed: {closed}; "
      f"/events showed it: {b'FORGED' in got}; broker disconnects.reserved_channel = {stats['disconnects']['reserved_channel']}")
stop(child)
for c in children:
    if c.poll() is None:
        c.terminate()

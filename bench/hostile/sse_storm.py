#!/usr/bin/env python3
"""A reconnect storm on /events against the real newsdesk binary (issue 46's figure).

Serves six feeds of 500 headlines each (3,000 held) from a local HTTP server, starts newsdesk
from a build folder on them, then for SECONDS opens /events connections with an unknown
Last-Event-ID (each asks for a reset) from 32 threads on 32 loopback addresses, as fast as they
can: half read their reset, half close at once. Prints the rate and newsdesk's RSS before, at
the end and 20 s later, with the load average.

Usage: bench/hostile/sse_storm.py [BUILD_DIR] [SECONDS]   (defaults: build, 60)
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

build = sys.argv[1] if len(sys.argv) > 1 else "build"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


work = tempfile.mkdtemp(prefix="newsdesk-storm-")
os.makedirs(f"{work}/sites")
feeds = {}
for n in range(1, 7):
    items = "".join(
        f"<item><title>Headline number {i} of feed {n} about the weather and the markets"
        f"</title><link>https://f{n}.example/story/{i}/a-long-slug-for-the-story</link></item>"
        for i in range(500))
    feeds[f"/f{n}.xml"] = f"<rss version=\"2.0\"><channel><title>f{n}</title>{items}</channel></rss>"


class Feeds(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = feeds.get(self.path, "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Feeds)
threading.Thread(target=origin.serve_forever, daemon=True).start()
for n in range(1, 7):
    with open(f"{work}/sites/f{n}.json", "w") as f:
        json.dump({"name": f"f{n}", "feed": f"http://127.0.0.1:{origin.server_port}/f{n}.xml"}, f)
port = free_port()
with open(f"{work}/config.json", "w") as f:
    json.dump({"port": port, "site_files_dir": f"{work}/sites", "store_path": f"{work}/db.sqlite",
               "broker": {"enabled": False}}, f)
nd = subprocess.Popen([os.path.join(root, build, "server", "newsdesk"), "--config",
                       f"{work}/config.json"], cwd=root, stdout=subprocess.DEVNULL,
                      stderr=open(f"{work}/log", "w"))
try:
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/news.json?limit=10000") as r:
                if len(json.load(r)["headlines"]) >= 3000:
                    break
        except OSError:
            pass
        time.sleep(1)
    else:
        sys.exit("sse_storm: newsdesk did not hold the 3,000 headlines in 120 s")

    done = []
    request = b"GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: ffff:1\r\n\r\n"

    def storm(k):
        end, n = time.time() + seconds, 0
        while time.time() < end:
            try:
                with socket.socket() as s:
                    s.bind((f"127.0.{1 + k // 200}.{2 + k % 200}", 0))
                    s.settimeout(5)
                    s.connect(("127.0.0.1", port))
                    s.sendall(request)
                    got = b""
                    while n % 2 == 0 and b"]\n\n" not in got and b"503" not in got[:16]:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        got += chunk
                n += 1
            except OSError:
                time.sleep(0.01)
        done.append(n)

    before = rss_mb(nd.pid)
    started = time.time()
    threads = [threading.Thread(target=storm, args=(k,)) for k in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - started
    end = rss_mb(nd.pid)
    time.sleep(20)
    later = rss_mb(nd.pid)
    print(f"reconnect storm: {sum(done)} connections in {took:.0f} s ({sum(done) / took:,.0f}/s) "
          f"from 32 addresses; newsdesk RSS {before} MB -> {end} MB at the end, {later} MB 20 s "
          f"later (goal: within +50 MB); load average {os.getloadavg()[0]:.2f}")
finally:
    nd.terminate()
    nd.wait()
    origin.shutdown()

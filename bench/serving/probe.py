#!/usr/bin/env python3
"""A reader's view of latency: GET `path` over one kept-alive connection at a steady `rate`
(requests per second) for `seconds`, each request sent on its tick whether or not the server is
busy, and prints the p50 and p99 of the time from sending a request to its last byte, in ms.

Unlike wrk, which sends the next request the moment an answer arrives (and so measures a server
saturated by the probe itself), this asks what someone opening the page would wait.

Usage: probe.py URL PATH [rate] [seconds]
"""
import socket
import statistics
import sys
import time
import urllib.parse


def read_response(sock, buffer):
    """Reads one response with a Content-Length body; returns the bytes left over."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection mid-body")
        rest += chunk
    return rest[length:]


def main():
    url, path = sys.argv[1], sys.argv[2]
    rate = float(sys.argv[3]) if len(sys.argv) > 3 else 200
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 5
    target = urllib.parse.urlsplit(url)
    sock = socket.create_connection((target.hostname, target.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = (f"GET {path} HTTP/1.1\r\nHost: {target.netloc}\r\n"
               "Accept-Encoding: gzip, deflate, br\r\n\r\n").encode()
    times, buffer = [], b""
    interval = 1 / rate
    start = next_tick = time.perf_counter()
    while next_tick - start < seconds:
        now = time.perf_counter()
        if now < next_tick:
            time.sleep(next_tick - now)
        sent = time.perf_counter()
        sock.sendall(request)
        buffer = read_response(sock, buffer)
        times.append((time.perf_counter() - sent) * 1000)
        next_tick += interval
    cuts = statistics.quantiles(times, n=100)
    print(f"{cuts[49]:.3f} {cuts[98]:.3f} {len(times)}")


if __name__ == "__main__":
    main()

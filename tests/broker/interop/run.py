#!/usr/bin/python3
"""Runs newsdesk's counterparts of Eclipse Paho's MQTT interoperability suites
(paho.mqtt.testing's interoperability/client_test.py and client_test5.py) against a broker.

Usage: run.py PORT             a broker already listening for MQTT on 127.0.0.1:PORT
       run.py --broker BINARY  starts BINARY (newsdesk-broker) with the settings below, on free
                               ports, and stops it at the end (how ctest runs it: broker_interop)

The broker must let anonymous loopback clients read and write everything but $SYS/ and newsdesk/,
and know two users: "limited" (password pw, reading and writing TopicA/# only) and "dollar"
(password pw, writing $TopicA/#). Prints one line per case (PASS, FAIL with why, NOT OFFERED with
why) and exits 1 when any failed, or when the broker or python3-paho-mqtt is missing; every wait
has a deadline, so it always ends.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

SETTINGS = {
    "mqtt": {
        "users": [
            {"name": "limited", "password": "pw", "read": ["TopicA/#"], "write": ["TopicA/#"]},
            {"name": "dollar", "password": "pw", "read": [], "write": ["$TopicA/#"]},
        ]
    }
}


def start_broker(binary, workdir):
    """Starts `binary` on free ports; returns the process and its MQTT port."""
    path = os.path.join(workdir, "interop.json")
    with open(path, "w") as f:
        json.dump(SETTINGS, f)
    # None of the developer's NEWSDESK_ variables: the settings above are the whole story.
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSDESK_")}
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--config", path], env=env,
                            stdout=subprocess.PIPE, text=True)
    found = []

    def read_lines():
        for line in proc.stdout:
            if line.startswith("mqtt listening on 127.0.0.1:"):
                found.append(int(line.rsplit(":", 1)[1]))

    threading.Thread(target=read_lines, daemon=True).start()
    end = time.monotonic() + 10
    while not found and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    if not found:
        proc.kill()
        sys.exit("interop: %s did not say it listens for MQTT within 10 s" % binary)
    return proc, found[0]


def main():
    args = sys.argv[1:]
    proc = None
    workdir = tempfile.TemporaryDirectory()
    if len(args) == 2 and args[0] == "--broker":
        proc, port = start_broker(args[1], workdir.name)
    elif len(args) == 1 and args[0].isdigit():
        port = int(args[0])
    else:
        sys.exit(__doc__)
    import support  # after the port is known: the cases read support.PORT

    support.PORT = port
    import v311_cases
    import v5_cases

    cases = v311_cases.CASES + v5_cases.CASES_A + v5_cases.CASES_B
    failures = len(cases)  # until run() says otherwise
    try:
        failures = support.run(cases, v5_cases.NOT_OFFERED)
        print("interop: %d of %d passed, %d not offered" %
              (len(cases) - failures, len(cases), len(v5_cases.NOT_OFFERED)), flush=True)
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if proc and proc.returncode != 0:
        print("interop: the broker exited with %d" % proc.returncode, flush=True)
        failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

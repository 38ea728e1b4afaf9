#!/usr/bin/python3
"""Runs newsdesk's counterparts of Eclipse Paho's MQTT interoperability suites
(paho.mqtt.testing's interoperability/client_test.py and client_test5.py) against a broker.

Usage: run.py PORT
The broker must let anonymous loopback clients read and write everything but $SYS/ and newsdesk/,
and know two users: "limited" (password pw, reading and writing TopicA/# only) and "dollar"
(password pw, writing $TopicA/#). Prints one line per case (PASS, FAIL with why, NOT OFFERED with
why) and exits 1 when any failed; every wait has a deadline, so it always ends.
"""
import sys

import support
import v311_cases
import v5_cases

failures = support.run(v311_cases.CASES + v5_cases.CASES_A + v5_cases.CASES_B,
                       v5_cases.NOT_OFFERED)
total = len(v311_cases.CASES) + len(v5_cases.CASES_A) + len(v5_cases.CASES_B)
print("interop: %d of %d passed, %d not offered" % (total - failures, total,
                                                    len(v5_cases.NOT_OFFERED)), flush=True)
sys.exit(1 if failures else 0)

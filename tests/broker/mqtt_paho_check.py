#!/usr/bin/python3
"""Eclipse Paho (Debian's python3-paho-mqtt) against newsdesk's MQTT listener.

Usage: mqtt_paho_check.py PORT
The broker must know user alice (password s3cret, read alice/# and newsdesk/#, write alice/#)
and let anonymous loopback clients read and write everything but newsdesk/. Prints one line per
failed check and exits 1 if any failed; every wait has a deadline, so it always ends.
"""
import queue
import sys
import time

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.packettypes import PacketTypes

PORT = int(sys.argv[1])
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED: " + what, flush=True)


def code(rc):
    return getattr(rc, "value", rc)


class Client:
    """A Paho client run by its own network thread, with its messages in a queue."""

    def __init__(self, client_id, v5=False, clean=True, user=None, password=None, expiry=0):
        self.v5 = v5
        if v5:
            self.c = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5)
        else:
            self.c = mqtt.Client(client_id=client_id, clean_session=clean,
                                 protocol=mqtt.MQTTv311)
        if user is not None:
            self.c.username_pw_set(user, password)
        self.messages = queue.Queue()
        self.connacks = queue.Queue()
        self.subacks = queue.Queue()
        self.c.on_message = lambda cl, ud, msg: self.messages.put(msg)
        if v5:
            self.c.on_connect = lambda cl, ud, flags, rc, props=None: self.connacks.put((flags, rc))
            self.c.on_subscribe = lambda cl, ud, mid, rcs, props=None: self.subacks.put(rcs)
        else:
            self.c.on_connect = lambda cl, ud, flags, rc: self.connacks.put((flags, rc))
            self.c.on_subscribe = lambda cl, ud, mid, granted: self.subacks.put(granted)
        kwargs = {}
        if v5:
            kwargs["clean_start"] = clean
            if expiry:
                props = Properties(PacketTypes.CONNECT)
                props.SessionExpiryInterval = expiry
                kwargs["properties"] = props
        self.c.connect("127.0.0.1", PORT, keepalive=30, **kwargs)
        self.c.loop_start()
        self.flags, self.rc = self.connacks.get(timeout=10)

    def subscribe(self, topic, qos):
        self.c.subscribe(topic, qos)
        return self.subacks.get(timeout=10)

    def publish(self, topic, payload, qos=0, retain=False):
        info = self.c.publish(topic, payload, qos=qos, retain=retain)
        if qos > 0:
            info.wait_for_publish(5)
        return info

    def next(self, timeout=5):
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self):
        self.c.disconnect()
        self.c.loop_stop()


def bad_password():
    for v5, expected in ((True, 0x86), (False, 4)):
        c = Client("paho-bad-%d" % v5, v5=v5, user="alice", password="wrong")
        check(code(c.rc) == expected,
              "bad password (MQTT %s): CONNACK %r, expected %#x" % ("5" if v5 else "3.1.1",
                                                                   code(c.rc), expected))
        c.c.loop_stop()


def wildcards_and_retained():
    pub = Client("paho-pub")
    pub.publish("paho/retained/a", b"kept a", qos=1, retain=True)
    pub.publish("paho/retained/b", b"kept b", qos=0, retain=True)
    # Wait until the broker holds both (a retained QoS 0 publish has no acknowledgement).
    probe = Client("paho-probe")
    probe.subscribe("paho/retained/b", 0)
    m = probe.next()
    check(m is not None and m.payload == b"kept b", "retained b never arrived")
    probe.stop()

    sub = Client("paho-sub", v5=True)
    sub.subscribe("paho/retained/+", 1)
    got = {}
    for _ in range(2):
        m = sub.next()
        if m is None:
            break
        got[m.topic] = (m.payload, m.retain)
    check(got == {"paho/retained/a": (b"kept a", True), "paho/retained/b": (b"kept b", True)},
          "retained on subscribe: got %r" % got)
    sub.subscribe("paho/+/x", 0)
    sub.subscribe("paho/deep/#", 0)
    pub.publish("paho/w/x", b"plus", qos=1)
    pub.publish("paho/w/y", b"no match", qos=1)
    pub.publish("paho/deep/a/b/c", b"hash", qos=1)
    seen = []
    for _ in range(2):
        m = sub.next()
        if m is not None:
            seen.append((m.topic, m.payload, m.retain))
    check(seen == [("paho/w/x", b"plus", False), ("paho/deep/a/b/c", b"hash", False)],
          "wildcards: got %r" % seen)
    check(sub.next(0.3) is None, "a message no filter matches was delivered")
    sub.stop()
    pub.stop()


def qos1_across_reconnect(v5):
    name = "paho-keeper-%d" % v5
    kw = {"v5": v5, "clean": False, "expiry": 300 if v5 else 0}
    first = Client(name, **dict(kw, clean=True))  # a fresh session to begin with
    first.stop()
    keeper = Client(name, **kw)
    keeper.subscribe("paho/q1/%d" % v5, 1)
    keeper.stop()
    pub = Client("paho-q1-pub-%d" % v5)
    for i in range(5):
        pub.publish("paho/q1/%d" % v5, ("m%d" % i).encode(), qos=1)
    pub.stop()
    back = Client(name, **kw)
    check(back.flags.get("session present") == 1, "session not present after reconnect")
    got = []
    for _ in range(5):
        m = back.next()
        if m is not None:
            got.append(m.payload)
    check(got == [b"m0", b"m1", b"m2", b"m3", b"m4"],
          "QoS 1 across a reconnect (MQTT %s): got %r" % ("5" if v5 else "3.1.1", got))
    back.stop()


def refused_publish_v311():
    # Under newsdesk/ a 3.1.1 client is disconnected: its own network loop sees the close.
    c = Client("paho-forger")
    gone = queue.Queue()
    c.c.on_disconnect = lambda cl, ud, rc: gone.put(rc)
    c.c.publish("newsdesk/headlines/bbc", b"FORGED", qos=1)
    try:
        rc = gone.get(timeout=5)
        check(rc != 0, "forger disconnected cleanly?")
    except queue.Empty:
        check(False, "a 3.1.1 publish under newsdesk/ was not disconnected")
    c.c.loop_stop()


def user_permissions():
    alice = Client("paho-alice", v5=True, user="alice", password="s3cret")
    check(code(alice.rc) == 0, "alice refused: %r" % code(alice.rc))
    rcs = alice.subscribe("alice/#", 1)
    check(code(rcs[0]) == 1, "alice/# not granted: %r" % [code(r) for r in rcs])
    rcs = alice.subscribe("bob/#", 1)
    check(code(rcs[0]) == 0x87, "bob/# granted to alice: %r" % [code(r) for r in rcs])
    alice.publish("alice/inbox", b"hello", qos=1)
    m = alice.next()
    check(m is not None and m.payload == b"hello", "alice did not get her own message")
    alice.stop()


for step in (bad_password, wildcards_and_retained, lambda: qos1_across_reconnect(False),
             lambda: qos1_across_reconnect(True), refused_publish_v311, user_permissions):
    try:
        step()
    except Exception as e:  # a timeout or a client error fails the run, never hangs it
        check(False, "%s raised %r" % (getattr(step, "__name__", "step"), e))

print("paho: %d failure(s)" % len(failures), flush=True)
sys.exit(1 if failures else 0)

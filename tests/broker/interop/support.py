"""What the interoperability cases share: a Paho client (Debian's python3-paho-mqtt) run by its
own network thread with its messages in queues, a raw client for what Paho will not do (stay
silent, hold back acknowledgements, send a second CONNECT), and the case runner.

The cases mirror, one by one, Eclipse Paho's interoperability suites (paho.mqtt.testing,
interoperability/client_test.py and client_test5.py): each is named after the case it covers.
They are written here, not copied, and wait for events with deadlines instead of sleeping.
"""
import queue
import socket
import struct
import time
import traceback

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

HOST = "127.0.0.1"
PORT = 1883  # run.py sets the port of the broker under test


class Failed(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Failed(what)


def code(rc):
    return getattr(rc, "value", rc)


def props(kind, **values):
    """Properties of packet `kind` ("CONNECT", "PUBLISH", ...) with `values` set."""
    p = Properties(getattr(PacketTypes, kind))
    for name, value in values.items():
        setattr(p, name, value)
    return p


class Client:
    """A Paho client on its own network thread; messages, acknowledgements and disconnects go to
    queues the cases read with deadlines."""

    def __init__(self, client_id, v5=False, clean=True, user=None, password=None,
                 keepalive=30, properties=None, will=None, connect=True):
        self.v5 = v5
        if v5:
            self.c = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5)
        else:
            self.c = mqtt.Client(client_id=client_id, clean_session=clean, protocol=mqtt.MQTTv311)
        if user is not None:
            self.c.username_pw_set(user, password)
        if will:
            self.c.will_set(**will)
        self.messages = queue.Queue()
        self.connacks = queue.Queue()
        self.subacks = queue.Queue()
        self.unsubacks = queue.Queue()
        self.disconnects = queue.Queue()
        self.c.on_message = lambda cl, ud, msg: self.messages.put(msg)
        self.c.on_unsubscribe = lambda cl, ud, mid, *rest: self.unsubacks.put(mid)
        if v5:
            self.c.on_connect = lambda cl, ud, flags, rc, p=None: self.connacks.put((flags, rc, p))
            self.c.on_subscribe = lambda cl, ud, mid, rcs, p=None: self.subacks.put(rcs)
            self.c.on_disconnect = lambda cl, ud, rc, p=None: self.disconnects.put(rc)
        else:
            self.c.on_connect = lambda cl, ud, flags, rc: self.connacks.put((flags, rc, None))
            self.c.on_subscribe = lambda cl, ud, mid, granted: self.subacks.put(granted)
            self.c.on_disconnect = lambda cl, ud, rc: self.disconnects.put(rc)
        self.flags = self.rc = self.connack_properties = None
        if connect:
            kwargs = {"clean_start": clean, "properties": properties} if v5 else {}
            self.c.connect(HOST, PORT, keepalive=keepalive, **kwargs)
            self.c.loop_start()
            self.flags, self.rc, self.connack_properties = self.connacks.get(timeout=10)

    def subscribe(self, topic, qos=0, options=None, properties=None):
        """`topic` may be a list of (filter, QoS or options): one SUBSCRIBE for them all."""
        if isinstance(topic, list):
            self.c.subscribe(topic)
        elif self.v5:
            self.c.subscribe(topic, options=options or SubscribeOptions(qos=qos),
                             properties=properties)
        else:
            self.c.subscribe(topic, qos)
        return [code(r) for r in self.subacks.get(timeout=10)]

    def unsubscribe(self, topic):
        self.c.unsubscribe(topic)
        self.unsubacks.get(timeout=10)

    def publish(self, topic, payload, qos=0, retain=False, properties=None):
        info = self.c.publish(topic, payload, qos=qos, retain=retain, properties=properties)
        if qos > 0:
            info.wait_for_publish(10)
            check(info.is_published(), "QoS %d publish on %s not acknowledged" % (qos, topic))
        return info

    def next(self, timeout=5):
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            return None

    def take(self, n, timeout=5):
        """The next `n` messages (fewer when they do not come in time)."""
        out = []
        end = time.monotonic() + timeout
        while len(out) < n:
            m = self.next(max(0.01, end - time.monotonic()))
            if m is None:
                break
            out.append(m)
        return out

    def quiet(self, marker_topic, publisher):
        """Proves nothing else is on its way: a marker sent after it is the next message."""
        publisher.publish(marker_topic, b"marker", qos=1)
        m = self.next()
        return m is not None and m.topic == marker_topic and m.payload == b"marker"

    def stop(self, properties=None):
        if self.v5:
            self.c.disconnect(properties=properties)
        else:
            self.c.disconnect()
        self.c.loop_stop()


# ------------------------------------------------------------------------------------------------
# A raw client: packets built here, sent when the case says, read with deadlines.

def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("!H", len(b)) + b


def packet(first, body):
    return bytes([first]) + varint(len(body)) + body


class Raw:
    def __init__(self, client_id, v5=False, keepalive=60, clean=True, connect_props=b"",
                 will=None, protocol_name="MQTT"):
        self.v5 = v5
        self.sock = socket.create_connection((HOST, PORT), timeout=10)
        self.buf = b""
        flags = 0x02 if clean else 0
        payload = string(client_id)
        if will:
            topic, message, will_props = will
            flags |= 0x04
            payload += (varint(len(will_props)) + will_props if v5 else b"")
            payload += string(topic) + string(message)
        body = string(protocol_name) + bytes([5 if v5 else 4, flags]) + struct.pack("!H", keepalive)
        if v5:
            body += varint(len(connect_props)) + connect_props
        self.connect_packet = packet(0x10, body + payload)
        self.send(self.connect_packet)

    def send(self, data):
        self.sock.sendall(data)

    def read(self, timeout=5):
        """(type, flags, body) of the next packet, or None on a deadline or close."""
        end = time.monotonic() + timeout
        while True:
            if len(self.buf) >= 2:
                length, shift, i = 0, 0, 1
                while i < len(self.buf) and i < 5:
                    length |= (self.buf[i] & 0x7F) << shift
                    shift += 7
                    if not self.buf[i] & 0x80:
                        break
                    i += 1
                if i < len(self.buf) and len(self.buf) >= i + 1 + length:
                    first, body = self.buf[0], self.buf[i + 1:i + 1 + length]
                    self.buf = self.buf[i + 1 + length:]
                    return first >> 4, first & 0x0F, body
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, OSError):
                return None
            if not data:
                return None
            self.buf += data

    def closed(self, timeout=5):
        """True once the broker closed the connection (what arrives meanwhile is dropped)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                if not self.sock.recv(65536):
                    return True
            except socket.timeout:
                return False
            except OSError:
                return True
        return False

    def subscribe(self, pid, topic, qos):
        body = struct.pack("!H", pid) + (b"\x00" if self.v5 else b"") + string(topic) + bytes([qos])
        self.send(packet(0x82, body))

    def publish(self, topic, payload, qos, pid=0):
        body = string(topic) + (struct.pack("!H", pid) if qos else b"")
        body += (b"\x00" if self.v5 else b"") + payload
        self.send(packet(0x30 | (qos << 1), body))

    def ack(self, kind, pid):
        """PUBACK (4), PUBREC (5), PUBREL (6) or PUBCOMP (7)."""
        self.send(packet((kind << 4) | (0x02 if kind == 6 else 0), struct.pack("!H", pid)))

    def close(self):
        self.sock.close()


def packet_id(body):
    return struct.unpack("!H", body[:2])[0]


def prop_u32(ident, value):
    return bytes([ident]) + struct.pack("!I", value)


def prop_u16(ident, value):
    return bytes([ident]) + struct.pack("!H", value)


def user_prop(key, value):
    return b"\x26" + string(key) + string(value)


def connack_properties(body):
    """The properties of a CONNACK body, {identifier: value}."""
    length, shift, i = 0, 0, 2
    while True:
        length |= (body[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not body[i - 1] & 0x80:
            break
    out, at, end = {}, i, i + length
    sizes = {0x11: 4, 0x13: 2, 0x21: 2, 0x22: 2, 0x24: 1, 0x25: 1, 0x27: 4, 0x28: 1, 0x29: 1,
             0x2A: 1}
    while at < end:
        ident = body[at]
        at += 1
        if ident in sizes:
            out[ident] = int.from_bytes(body[at:at + sizes[ident]], "big")
            at += sizes[ident]
        else:  # a string (assigned client id, reason string, ...)
            n = body[at] << 8 | body[at + 1]
            out[ident] = body[at + 2:at + 2 + n]
            at += 2 + n
    return out


def connack(raw):
    """The reason code of a raw client's CONNACK, or None."""
    p = raw.read()
    return p[2][1] if p and p[0] == 2 else None


# ------------------------------------------------------------------------------------------------

def run(cases, not_offered):
    """Runs each case (a function named as the suite's case it covers); prints one line each;
    returns the number of failures. `not_offered`: the suite's cases with no counterpart here,
    each with why."""
    failures = 0
    for case in cases:
        try:
            case()
            print("PASS %s" % case.__doc__.strip(), flush=True)
        except Exception as e:  # a failed check, a timeout, a client error: the case failed
            failures += 1
            detail = str(e) if isinstance(e, Failed) else traceback.format_exc()
            print("FAIL %s: %s" % (case.__doc__.strip(), detail), flush=True)
    for name, why in not_offered:
        print("NOT OFFERED %s: %s" % (name, why), flush=True)
    return failures

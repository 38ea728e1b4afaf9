"""MQTT 3.1.1: the behaviours of paho.mqtt.testing's interoperability/client_test.py, one case
each, with Debian's python3-paho-mqtt (and a raw client where Paho will not misbehave)."""
from support import Client, Raw, check, connack, packet_id

T = ("TopicA", "TopicA/B", "Topic/C", "TopicA/C", "/TopicA")
W = ("TopicA/+", "+/C", "#", "/#", "/+", "+/+", "TopicA/#")


def basic():
    """client_test.py testBasic: QoS 0, 1 and 2 to oneself; a second CONNECT and a wrong protocol
    name are refused"""
    a = Client("myclientid")
    a.stop()
    a = Client("myclientid")
    check(a.flags.get("session present") == 0, "session present after a clean session")
    check(a.subscribe(T[0], 2) == [2], "QoS 2 not granted")
    for q in (0, 1, 2):
        a.publish(T[0], b"qos %d" % q, q)
    got = sorted((m.payload, m.qos) for m in a.take(3))
    check(got == [(b"qos 0", 0), (b"qos 1", 1), (b"qos 2", 2)], "got %r" % got)
    a.stop()
    r = Raw("myclientid")
    check(connack(r) == 0, "no CONNACK")
    r.send(r.connect_packet)
    check(r.closed(), "a second CONNECT was not refused")
    r = Raw("myclientid", protocol_name="hj")
    check(r.closed(), "protocol name hj was not refused")


def retained_messages():
    """client_test.py test_retained_messages: retained at QoS 0, 1 and 2 reach a later
    subscriber; empty ones delete them"""
    a = Client("myclientid")
    for q, topic in ((0, T[1]), (1, T[2]), (2, T[3])):
        a.publish(topic, b"qos %d" % q, q, retain=True)
    check(a.subscribe(W[5], 2) == [2], "+/+ not granted")
    got = sorted((m.topic, m.retain) for m in a.take(3))
    check(got == sorted((t, 1) for t in T[1:4]), "retained: %r" % got)
    a.stop()
    # As the suite does, a new clean connection deletes them: on the first one, subscribed to
    # +/+, the empty messages would come live, as any publish does.
    a = Client("myclientid")
    for q, topic in ((0, T[1]), (1, T[2]), (2, T[3])):
        a.publish(topic, b"", q, retain=True)
    check(a.subscribe(W[5], 2) == [2], "+/+ not granted again")
    check(a.quiet("Marker/a", a), "a deleted retained message came")
    a.stop()


def zero_length_clientid():
    """client_test.py test_zero_length_clientid: refused for a kept session, accepted with a
    clean one"""
    r = Raw("", clean=False)
    check(connack(r) == 2, "an empty client id with clean session 0 was not refused (0x02)")
    c = Client("", clean=True)
    check(c.rc == 0, "an empty client id with clean session 1 was refused")
    c.stop()


def offline_message_queueing():
    """client_test.py test_offline_message_queueing: a kept session collects QoS 1 and 2
    messages (newsdesk keeps no QoS 0 for an absent client)"""
    a = Client("myclientid", clean=False)
    a.subscribe(W[5], 2)
    a.stop()
    b = Client("myclientid2")
    for q, topic in ((0, T[1]), (1, T[2]), (2, T[3])):
        b.publish(topic, b"qos %d" % q, q)
    b.stop()
    a = Client("myclientid", clean=False)
    check(a.flags.get("session present") == 1, "session not present")
    got = sorted(m.payload for m in a.take(3, timeout=3))
    check(got == [b"qos 1", b"qos 2"], "offline: %r" % got)
    a.stop()
    Client("myclientid", clean=True).stop()


def overlapping_subscriptions():
    """client_test.py test_overlapping_subscriptions: one message, at the highest QoS of the
    matching subscriptions"""
    a = Client("myclientid")
    a.subscribe([(W[6], 2), (W[0], 1)])
    a.publish(T[3], b"overlapping topic filters", 2)
    got = a.take(1)
    check(len(got) == 1 and got[0].qos == 2, "overlapping: %r" % [(m.topic, m.qos) for m in got])
    check(a.quiet("TopicA/marker", a), "a second copy came")
    a.stop()


def keepalive():
    """client_test.py test_keepalive: a client silent past its keep-alive is closed and its
    will published"""
    b = Client("myclientid2")
    b.subscribe(T[4], 2)
    r = Raw("myclientid", keepalive=2, will=(T[4], b"keepalive expiry", b""))
    check(connack(r) == 0, "no CONNACK")
    m = b.next(timeout=8)
    check(m is not None and m.payload == b"keepalive expiry", "no will after the keep-alive")
    check(r.closed(), "the silent client was not closed")
    b.stop()


def redelivery_on_reconnect():
    """client_test.py test_redelivery_on_reconnect: QoS 1 and 2 messages a client did not
    acknowledge come again after it reconnects"""
    b = Raw("myclientid2", clean=False)
    check(connack(b) == 0, "no CONNACK")
    b.subscribe(1, W[6], 2)
    check(b.read()[0] == 9, "no SUBACK")
    b.publish(T[1], b"r1", 1, 1)
    b.publish(T[3], b"r2", 2, 2)
    incoming = 0
    while incoming < 2:  # complete its own publishes; leave the broker's unacknowledged
        p = b.read()
        check(p is not None, "the exchange stopped")
        if p[0] == 5:
            b.ack(6, packet_id(p[2]))
        elif p[0] == 3:
            incoming += 1
    b.close()
    b = Raw("myclientid2", clean=False)
    p = b.read()
    check(p is not None and p[0] == 2 and p[2][0] == 1, "session not present")
    again = []
    while len(again) < 2:
        p = b.read()
        check(p is not None, "redelivered %d of 2" % len(again))
        if p[0] == 3:
            qos = (p[1] >> 1) & 3
            check(p[1] & 0x08, "a redelivery without DUP")
            at = 2 + (p[2][0] << 8 | p[2][1])
            again.append(qos)
            b.ack(4 if qos == 1 else 5, packet_id(p[2][at:]))
        elif p[0] == 6:
            b.ack(7, packet_id(p[2]))
    check(sorted(again) == [1, 2], "redelivered QoS %r" % again)
    b.close()
    Client("myclientid2", clean=True).stop()


def subscribe_failure():
    """client_test.py test_subscribe_failure: a filter the client may not read gets 0x80 (here
    a user whose read filters do not cover test/nosubscribe)"""
    a = Client("myclientid", user="limited", password="pw")
    check(a.subscribe("test/nosubscribe", 2) == [0x80], "not refused with 0x80")
    a.stop()


def dollar_topics():
    """client_test.py test_dollar_topics: a filter starting with a wildcard matches no topic
    starting with $"""
    b = Client("myclientid2", keepalive=0)
    b.subscribe(W[5], 2)
    d = Client("dollar", user="dollar", password="pw")  # may publish under $TopicA/
    d.publish("$" + T[1], b"", 1)
    marker = Client("marker")
    check(b.quiet("Marker/b", marker), "+/+ matched $TopicA/B")
    for c in (b, d, marker):
        c.stop()


def unsubscribe():
    """client_test.py test_unsubscribe: after UNSUBSCRIBE the topic's messages stop, the others
    come"""
    b = Client("myclientid2")
    for t in T[0:3]:
        b.subscribe(t, 2)
    b.unsubscribe(T[0])
    a = Client("myclientid")
    for t in T[0:3]:
        a.publish(t, b"", 1)
    got = sorted(m.topic for m in b.take(2))
    check(got == sorted(T[1:3]), "after UNSUBSCRIBE: %r" % got)
    b.subscribe("Marker/u", 1)
    check(b.quiet("Marker/u", a), "the unsubscribed topic's message came")
    a.stop()
    b.stop()


CASES = [basic, retained_messages, zero_length_clientid, offline_message_queueing,
         overlapping_subscriptions, keepalive, redelivery_on_reconnect, subscribe_failure,
         dollar_topics, unsubscribe]

"""MQTT 5: the behaviours of paho.mqtt.testing's interoperability/client_test5.py, one case each,
with Debian's python3-paho-mqtt (and a raw client where Paho will not misbehave)."""
import time

from paho.mqtt.subscribeoptions import SubscribeOptions

from support import (Client, Raw, check, code, connack, connack_properties, packet_id, prop_u16,
                     prop_u32, props, string, user_prop, varint)

P = "client_test5/"
T = [P + t for t in ("TopicA", "TopicA/B", "Topic/C", "TopicA/C", "/TopicA")]
W = [P + t for t in ("TopicA/+", "+/C", "#", "/#", "/+", "+/+", "TopicA/#")]
USER = [("a", "2"), ("c", "3")]


def opts(qos=2, **kw):
    return SubscribeOptions(qos=qos, **kw)


def kept(expiry):
    return props("CONNECT", SessionExpiryInterval=expiry)


def clean_retained(*topics):
    c = Client("cleaner", v5=True)
    for t in topics:
        c.publish(t, b"", 1, retain=True)
    c.stop()


def basic():
    """client_test5.py test_basic: QoS 0, 1 and 2 to oneself; a second CONNECT and a wrong
    protocol name are refused"""
    a = Client("myclientid", v5=True)
    check(code(a.rc) == 0, "refused")
    a.subscribe(T[0], options=opts())
    for q in (0, 1, 2):
        a.publish(T[0], b"qos %d" % q, q)
    check(sorted(m.qos for m in a.take(3)) == [0, 1, 2], "not three messages")
    a.stop()
    r = Raw("myclientid", v5=True)
    check(connack(r) == 0, "no CONNACK")
    r.send(r.connect_packet)
    check(r.closed(), "a second CONNECT was not refused")
    check(Raw("x", v5=True, protocol_name="hj").closed(), "protocol name hj was not refused")


def retained_message():
    """client_test5.py test_retained_message: retained at QoS 0, 1 and 2 with user properties"""
    a = Client("myclientid", v5=True)
    for q in (0, 1, 2):
        a.publish(T[q + 1], b"qos %d" % q, q, retain=True, properties=props("PUBLISH", UserProperty=USER))
    a.subscribe(W[5], options=opts())
    got = a.take(3)
    check(len(got) == 3, "retained: %d" % len(got))
    for m in got:
        check(m.retain and m.properties.UserProperty == USER, "retained without its properties")
    check(sorted(m.qos for m in got) == [0, 1, 2], "QoS %r" % [m.qos for m in got])
    a.stop()
    clean_retained(*T[1:4])


def will_message():
    """client_test5.py test_will_message: a will's user properties come with it"""
    b = Client("myclientid2", v5=True)
    b.subscribe(T[2], options=opts())
    will_props = prop_u32(0x18, 0) + user_prop("a", "2") + user_prop("c", "3")
    r = Raw("myclientid", v5=True, keepalive=2, will=(T[2], b"will message", will_props))
    check(connack(r) == 0, "no CONNACK")
    m = b.next(timeout=8)
    check(m is not None and m.payload == b"will message", "no will")
    check(m.properties.UserProperty == USER, "will properties %r" % m.properties)
    b.stop()


def zero_length_clientid():
    """client_test5.py test_zero_length_clientid: accepted with clean start 0 and 1"""
    for clean in (False, True):
        c = Client("", v5=True, clean=clean)
        check(code(c.rc) == 0, "refused with clean start %s" % clean)
        c.stop()


def offline_message_queueing():
    """client_test5.py test_offline_message_queueing: a kept session collects QoS 1 and 2"""
    a = Client("myclientid", v5=True, properties=kept(300))
    a.subscribe(W[5], options=opts())
    a.stop()
    b = Client("myclientid2", v5=True)
    for q in (0, 1, 2):
        b.publish(T[q + 1], b"qos %d" % q, q)
    b.stop()
    a = Client("myclientid", v5=True, clean=False, properties=kept(300))
    got = sorted(m.payload for m in a.take(3, timeout=3))
    check(got == [b"qos 1", b"qos 2"], "offline: %r" % got)
    a.stop(props("DISCONNECT", SessionExpiryInterval=0))


def overlapping_subscriptions():
    """client_test5.py test_overlapping_subscriptions: one message at the highest QoS"""
    a = Client("myclientid", v5=True)
    a.subscribe([(W[6], opts(2)), (W[0], opts(1))])
    a.publish(T[3], b"overlapping topic filters", 2)
    got = a.take(1)
    check(len(got) == 1 and got[0].qos == 2, "overlapping: %r" % [m.qos for m in got])
    check(a.quiet(P + "TopicA/marker", a), "a second copy came")
    a.stop()


def keepalive():
    """client_test5.py test_keepalive: a client silent past its keep-alive is closed, its will
    published"""
    b = Client("myclientid2", v5=True, keepalive=0)
    b.subscribe(T[4], options=opts())
    r = Raw("myclientid", v5=True, keepalive=2, will=(T[4], b"keepalive expiry", b""))
    check(connack(r) == 0, "no CONNACK")
    m = b.next(timeout=8)
    check(m is not None and m.payload == b"keepalive expiry", "no will")
    b.stop()


def redelivery_on_reconnect():
    """client_test5.py test_redelivery_on_reconnect: unacknowledged QoS 1 and 2 come again"""
    expiry = prop_u32(0x11, 300)
    b = Raw("myclientid2", v5=True, clean=False, connect_props=expiry)
    check(connack(b) == 0, "no CONNACK")
    b.subscribe(1, W[6], 2)
    check(b.read()[0] == 9, "no SUBACK")
    b.publish(T[1], b"r1", 1, 1)
    b.publish(T[3], b"r2", 2, 2)
    incoming = 0
    while incoming < 2:
        p = b.read()
        check(p is not None, "the exchange stopped")
        if p[0] == 5:
            b.ack(6, packet_id(p[2]))
        elif p[0] == 3:
            incoming += 1
    b.close()
    b = Raw("myclientid2", v5=True, clean=False, connect_props=expiry)
    p = b.read()
    check(p is not None and p[0] == 2 and p[2][0] == 1, "session not present")
    again = 0
    while again < 2:
        p = b.read()
        check(p is not None, "redelivered %d of 2" % again)
        if p[0] == 3:
            again += 1
            at = 2 + (p[2][0] << 8 | p[2][1])
            b.ack(4 if (p[1] >> 1) & 3 == 1 else 5, packet_id(p[2][at:]))
        elif p[0] == 6:
            b.ack(7, packet_id(p[2]))
    b.send(bytes([0xE0, 6, 0, 4]) + prop_u32(0x11, 0))  # DISCONNECT, session expiry 0
    b.close()


def subscribe_failure():
    """client_test5.py test_subscribe_failure: a filter the client may not read gets a failure
    code (0x87, not authorized; the suite asks 0x80 of a broker set up to refuse the filter)"""
    a = Client("myclientid", v5=True, user="limited", password="pw")
    check(a.subscribe("test/nosubscribe", options=opts()) == [0x87], "not refused")
    a.stop()


def dollar_topics():
    """client_test5.py test_dollar_topics: wildcards at the first level match no $ topic"""
    b = Client("myclientid2", v5=True, keepalive=0)
    b.subscribe(W[5], options=opts())
    d = Client("dollar", v5=True, user="dollar", password="pw")
    d.publish("$TopicA/B", b"", 1)
    marker = Client("marker", v5=True)
    check(b.quiet(P + "Marker/b", marker), "+/+ matched a $ topic")
    for c in (b, d, marker):
        c.stop()


def unsubscribe():
    """client_test5.py test_unsubscribe: after UNSUBSCRIBE the topic's messages stop"""
    b = Client("myclientid2", v5=True)
    for t in T[0:3]:
        b.subscribe(t, options=opts())
    b.unsubscribe(T[0])
    a = Client("myclientid", v5=True)
    for t in T[0:3]:
        a.publish(t, b"x", 1)
    check(sorted(m.topic for m in b.take(2)) == sorted(T[1:3]), "wrong topics")
    b.subscribe(P + "Marker/u", options=opts(1))
    check(b.quiet(P + "Marker/u", a), "the unsubscribed topic's message came")
    a.stop()
    b.stop()


def session_expiry():
    """client_test5.py test_session_expiry: 0 ends the session with the connection; N keeps it N
    seconds; DISCONNECT may change it"""
    def present(expiry, clean=False, leave=None):
        a = Client("myclientid", v5=True, clean=clean, properties=kept(expiry))
        p = a.flags.get("session present")
        a.subscribe(T[0], options=opts())
        a.stop(leave)
        return p
    check(present(0, clean=True) == 0 and present(0) == 0, "expiry 0 kept the session")
    present(2, clean=True)
    check(present(2) == 1, "expiry 2: gone at once")
    time.sleep(3)  # the subject: the session's two seconds pass
    check(present(2) == 0, "expiry 2: still there after 3 s")
    present(1, clean=True, leave=props("DISCONNECT", SessionExpiryInterval=5))
    time.sleep(2)
    check(present(1, leave=props("DISCONNECT", SessionExpiryInterval=0)) == 1,
          "DISCONNECT's expiry 5 was not kept")
    check(present(1) == 0, "DISCONNECT's expiry 0 kept the session")


def forwarded(name, **values):
    def case():
        a = Client("myclientid", v5=True)
        a.subscribe(T[0], options=opts())
        for q in (0, 1, 2):
            a.publish(T[0], b"", q, properties=props("PUBLISH", **values))
        got = a.take(3)
        check(sorted(m.qos for m in got) == [0, 1, 2], "not three messages")
        for m in got:
            for k, v in values.items():
                check(getattr(m.properties, k, None) == v, "%s: %r" % (k, m.properties))
        a.stop()
    case.__doc__ = name
    return case


user_properties = forwarded("client_test5.py test_user_properties: forwarded at QoS 0, 1, 2",
                            UserProperty=USER)
payload_format = forwarded("client_test5.py test_payload_format: format indicator and content "
                           "type forwarded", PayloadFormatIndicator=1, ContentType="My name")


def publication_expiry():
    """client_test5.py test_publication_expiry: expired messages are not sent to a returning
    session; the others come with the interval lowered"""
    b = Client("myclientid2", v5=True, properties=kept(300))
    b.subscribe(T[0], options=opts())
    b.stop()
    a = Client("myclientid", v5=True)
    for seconds, q in ((1, 1), (1, 2), (6, 1), (6, 2)):
        a.publish(T[0], b"expire %d" % seconds, q, properties=props("PUBLISH", MessageExpiryInterval=seconds))
    time.sleep(3)  # the subject: one second passes, six do not
    b = Client("myclientid2", v5=True, clean=False, properties=kept(300))
    got = b.take(3, timeout=3)
    check([m.payload for m in got] == [b"expire 6"] * 2, "after expiry: %r" % [m.payload for m in got])
    check(all(m.properties.MessageExpiryInterval < 6 for m in got), "interval not lowered")
    b.stop(props("DISCONNECT", SessionExpiryInterval=0))
    a.stop()


CASES_A = [basic, retained_message, will_message, zero_length_clientid, offline_message_queueing,
           overlapping_subscriptions, keepalive, redelivery_on_reconnect, subscribe_failure,
           dollar_topics, unsubscribe, session_expiry, user_properties, payload_format,
           publication_expiry]


def subscribe_options():
    """client_test5.py test_subscribe_options: No Local, Retain As Published, Retain Handling 0,
    1 and 2"""
    a, b = Client("myclientid", v5=True), Client("myclientid2", v5=True)
    a.subscribe(T[0], options=opts(noLocal=True))
    b.subscribe(T[0], options=opts(noLocal=True))
    a.publish(T[0], b"noLocal test", 1)
    check(len(b.take(1)) == 1, "the other subscriber did not get it")
    a.subscribe(P + "Marker/a", options=opts(1))
    check(a.quiet(P + "Marker/a", b), "No Local: the publisher got its own message")
    b.stop()
    a.subscribe(T[0], options=opts(retainAsPublished=True))
    a.publish(T[0], b"retain as published false", 1)
    a.publish(T[0], b"retain as published true", 1, retain=True)
    check([m.retain for m in a.take(2)] == [False, True], "Retain As Published")
    a.publish(T[0], b"", 1, retain=True)
    a.take(1)
    for q in (0, 1, 2):
        a.publish(T[q + 1], b"qos %d" % q, q, retain=True)
    a.subscribe(W[5], options=opts(retainHandling=1))
    check(len(a.take(3)) == 3, "retain handling 1, new subscription: not three")
    a.subscribe(W[5], options=opts(retainHandling=1))
    check(a.quiet(P + "Marker/a", a), "retain handling 1, existing subscription: sent again")
    a.stop()
    a = Client("myclientid", v5=True)
    a.subscribe(W[5], options=opts(retainHandling=2))
    a.subscribe(P + "Marker/a", options=opts(1))
    check(a.quiet(P + "Marker/a", a), "retain handling 2: sent")
    a.subscribe(W[5], options=opts(retainHandling=0))
    check(len(a.take(3)) == 3, "retain handling 0: not three")
    a.subscribe(W[5], options=opts(retainHandling=0))
    check(len(a.take(3)) == 3, "retain handling 0 again: not three")
    a.stop()
    clean_retained(*T[1:4])


def assigned_clientid():
    """client_test5.py test_assigned_clientid: an empty client id is given one"""
    c = Client("", v5=True)
    check(getattr(c.connack_properties, "AssignedClientIdentifier", ""), "no id assigned")
    c.stop()


def subscribe_identifiers():
    """client_test5.py test_subscribe_identifiers: each matching subscription's identifier comes
    with the message"""
    a, b = Client("myclientid", v5=True), Client("myclientid2", v5=True)
    a.subscribe(T[0], options=opts(), properties=props("SUBSCRIBE", SubscriptionIdentifier=456789))
    b.subscribe(T[0], options=opts(), properties=props("SUBSCRIBE", SubscriptionIdentifier=2))
    b.subscribe(T[0] + "/#", options=opts(), properties=props("SUBSCRIBE", SubscriptionIdentifier=3))
    b.publish(T[0], b"sub identifier test", 1)
    ma, mb = a.take(1), b.take(1)
    check(len(ma) == 1 and ma[0].properties.SubscriptionIdentifier == [456789], "a's identifier")
    check(len(mb) == 1 and set(mb[0].properties.SubscriptionIdentifier) == {2, 3},
          "b's identifiers")
    a.stop()
    b.stop()


def request_response():
    """client_test5.py test_request_response: Response Topic and Correlation Data reach the
    responder, whose answer reaches the requester"""
    a, b = Client("myclientid", v5=True), Client("myclientid2", v5=True)
    a.subscribe(T[0], options=opts(noLocal=True))
    b.subscribe(T[0], options=opts(noLocal=True))
    a.publish(T[0], b"request", 1, properties=props("PUBLISH", ResponseTopic=T[0], CorrelationData=b"334"))
    got = b.take(1)
    check(len(got) == 1, "no request")
    req = got[0].properties
    check(req.ResponseTopic == T[0] and req.CorrelationData == b"334", "request %r" % req)
    b.publish(req.ResponseTopic, b"response", 1, properties=props("PUBLISH", CorrelationData=req.CorrelationData))
    got = a.take(1)
    check(len(got) == 1 and got[0].properties.CorrelationData == b"334", "no response")
    a.stop()
    b.stop()


def client_topic_alias():
    """client_test5.py test_client_topic_alias: topic alias 0 is refused with a DISCONNECT; no
    topic aliases are offered (no Topic Alias Maximum in CONNACK)"""
    r = Raw("myclientid", v5=True)
    p = r.read()
    check(p is not None and p[0] == 2, "no CONNACK")
    check(connack_properties(p[2]).get(0x22, 0) == 0, "a Topic Alias Maximum was announced")
    body = string(T[0]) + b"\x00\x01" + varint(3) + prop_u16(0x23, 0) + b"topic alias 0"
    r.send(bytes([0x32]) + varint(len(body)) + body)
    p = r.read()
    check(p is not None and p[0] == 14, "no DISCONNECT after topic alias 0")
    check(r.closed(), "not closed")


def maximum_packet_size():
    """client_test5.py test_maximum_packet_size: nothing larger than the client's Maximum Packet
    Size is sent to it"""
    a = Client("myclientid", v5=True, properties=props("CONNECT", MaximumPacketSize=64))
    a.subscribe(T[0], options=opts())
    a.publish(T[0], b"." * 32, 0)
    check(len(a.take(1)) == 1, "the small one did not come")
    a.publish(T[0], b"." * 64, 1)
    a.subscribe(P + "M", options=opts(1))
    check(a.quiet(P + "M", a), "a packet above 64 bytes was sent")
    a.stop()


def flow_control1():
    """client_test5.py test_flow_control1: no more unacknowledged QoS 1 and 2 messages than the
    client's Receive Maximum"""
    r = Raw("myclientid", v5=True, connect_props=prop_u16(0x21, 2))
    check(connack(r) == 0, "no CONNACK")
    r.subscribe(1, T[0], 2)
    check(r.read()[0] == 9, "no SUBACK")
    for i in range(1, 4):
        r.publish(T[0], b"message %d" % i, 1, i)
    sent = []
    while True:
        p = r.read(timeout=1)
        if p is None:
            break
        if p[0] == 3:
            at = 2 + (p[2][0] << 8 | p[2][1])
            sent.append(packet_id(p[2][at:]))
    check(len(sent) == 2, "%d unacknowledged messages sent, Receive Maximum 2" % len(sent))
    r.ack(4, sent[0])
    p = r.read()
    check(p is not None and p[0] == 3,
          "the third did not come after an acknowledgement of %d: %r" % (sent[0], p))
    r.close()


def flow_control2():
    """client_test5.py test_flow_control2: one QoS 2 message past the broker's Receive Maximum
    gets DISCONNECT 0x93"""
    r = Raw("myclientid", v5=True)
    p = r.read()
    check(p is not None and p[0] == 2, "no CONNACK")
    limit = connack_properties(p[2]).get(0x21, 65535)
    for i in range(1, limit + 2):
        r.publish(T[0], b"message", 2, i)
    while True:
        p = r.read()
        check(p is not None, "no DISCONNECT")
        if p[0] == 14:
            check(p[2][:1] == b"\x93", "DISCONNECT %r" % p[2])
            break


def will_delay():
    """client_test5.py test_will_delay: the will comes after its delay, or when the session ends
    if that is sooner"""
    b = Client("myclientid2", v5=True)
    b.subscribe(T[0], options=opts())
    for delay, expiry, expect in ((2, 5, 2), (5, 0, 0), (5, 2, 2)):
        will = prop_u32(0x18, delay)
        r = Raw("myclientid", v5=True, connect_props=prop_u32(0x11, expiry),
                will=(T[0], b"test_will_delay will message", will))
        check(connack(r) == 0, "no CONNACK")
        r.close()
        start = time.monotonic()
        m = b.next(timeout=10)
        took = time.monotonic() - start
        check(m is not None and m.payload == b"test_will_delay will message", "no will")
        check(expect - 0.2 <= took <= expect + 1.5,
              "delay %d, expiry %d: the will took %.1f s" % (delay, expiry, took))
    b.stop()


def shared_subscriptions():
    """client_test5.py test_shared_subscriptions: a shared subscription's message goes to one
    member, a plain one's to each"""
    shared = "$share/sharename/" + P + "x"
    a, b = Client("myclientid", v5=True), Client("myclientid2", v5=True)
    for c in (a, b):
        c.subscribe([(shared, opts()), (T[0], opts())])
    b.publish(T[0], b"plain", 0)
    check(len(a.take(1)) == 1 and len(b.take(1)) == 1, "the plain subscription")
    for i in range(4):
        b.publish(P + "x", b"shared %d" % i, 1)
    got = a.take(4, timeout=2) + b.take(4, timeout=2)
    check(sorted(m.payload for m in got) == [b"shared %d" % i for i in range(4)],
          "shared: %r" % [m.payload for m in got])
    a.stop()
    b.stop()


CASES_B = [subscribe_options, assigned_clientid, subscribe_identifiers, request_response,
           client_topic_alias, maximum_packet_size, flow_control1, flow_control2, will_delay,
           shared_subscriptions]

NOT_OFFERED = [
    ("client_test5.py test_server_topic_alias",
     "the broker sends no topic aliases (it announces none is taken, Topic Alias Maximum 0, "
     "and takes none): one encoding of a message is shared by every subscriber, which aliases "
     "chosen per connection would undo; Mosquitto fails this case too"),
    ("client_test5.py test_server_keep_alive",
     "it asks the broker to lower a client's 120 s keep-alive to 60 s (Server Keep Alive); "
     "newsdesk keeps each client's own keep-alive and closes a client that asked for none after "
     "mqtt.idle_timeout of silence; Mosquitto fails this case too"),
]

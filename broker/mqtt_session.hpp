#pragma once
// Internal to the broker (namespace detail): a connection speaking MQTT 3.1.1 or 5.0 (codec in
// mqtt_codec.hpp, tables in mqtt_router.hpp). The first packet must be CONNECT; the session
// then publishes (runs of PUBLISH packets on one topic at one QoS go to the core as one run,
// like the frame protocol's runs of pairs), subscribes, acknowledges and answers pings. It
// reads and writes exactly like the frame protocol's session: non-blocking reads into the
// core's shared read buffer, gathered non-blocking writes of its bounded queue.
//
// Closing: every malformed or forbidden packet closes this connection only, counting why
// (disconnects.mqtt_*); an MQTT 5 client is told the reason in a DISCONNECT first, when the
// socket takes it at once. A client silent for 1.5 times its keep-alive is closed
// (mqtt_keep_alive). Its will is published when it goes without a DISCONNECT (or with reason
// 0x04), unless the broker is shutting down.
//
// Its socket leaves Asio for the core's reactor (reactor.hpp), which tells it readiness: an
// idle connection holds no Asio operation.
//
// Threads: strand only. Ownership: owned by its pending operations and its registration with
// the reactor, like every peer (peer.hpp).

#include <memory>

#include <boost/asio/ip/tcp.hpp>

namespace newsdesk::broker::detail {

class core;
class peer;

/// An MQTT session on an accepted socket, not yet registered nor started.
std::shared_ptr<peer> make_mqtt_session(const std::shared_ptr<core>& c,
                                        boost::asio::ip::tcp::socket socket);

} // namespace newsdesk::broker::detail

#pragma once
// Internal to the broker (namespace detail): a connection speaking MQTT 3.1.1 or 5.0 (codec in
// mqtt_codec.hpp, tables in mqtt_router.hpp), over TCP or over a WebSocket. The first packet
// must be CONNECT; the session then publishes (runs of PUBLISH packets on one topic at one QoS
// go to the core as one run, like the frame protocol's runs of pairs), subscribes, acknowledges
// (QoS 1: PUBACK; QoS 2: PUBREC, then PUBCOMP on PUBREL) and answers pings.
//
// mqtt_session is the protocol; a transport (mqtt_transport.cpp) moves its bytes. Over TCP it
// reads and writes exactly like the frame protocol's session: non-blocking reads into the core's
// shared read buffer, gathered non-blocking writes of its bounded queue, its socket in the core's
// reactor (reactor.hpp), so an idle connection holds no Asio operation. Over a WebSocket (MQTT
// on the HTTP port's /mqtt, Beast's websocket stream on the broker's strand) each read of
// message bytes is handed to the same protocol code, and its queue goes out as binary messages;
// packets may span messages and a message may hold several.
//
// Closing: every malformed or forbidden packet closes this connection only, counting why
// (disconnects.mqtt_*); an MQTT 5 client is told the reason in a DISCONNECT first (after what
// is queued). A client silent for 1.5 times its keep-alive is closed (mqtt_keep_alive), one
// that asked for none after mqtt.idle_timeout of silence (mqtt_idle). Its will is published when it
// goes without a DISCONNECT (or with reason 0x04), at once or after its Will Delay Interval, unless
// the broker is shutting down.
//
// Threads: strand only. Ownership: owned by its pending operations and a reference to itself
// while its socket is open, like every peer (peer.hpp).

#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "broker/mqtt_router.hpp"
#include "broker/websocket.hpp"

namespace newsdesk::broker::detail {

class core;
class peer;

class mqtt_session : public mqtt_connection {
 public:
  using mqtt_connection::mqtt_connection;

  void flush() override;
  void resume() override {} // MQTT publishes only to /topic/ channels, which never pause
  void begin_drain() override;
  void close(close_reason why) override;
  void end(close_reason why, std::uint8_t v5_code) override;
  std::optional<close_reason> read_overdue(steady::time_point now) const override;

 protected:
  // What a transport provides.

  /// Closes the transport's socket, after a last clean word when `graceful` (the client said
  /// DISCONNECT, or shutdown).
  virtual void close_transport(bool graceful) = 0;

  // What a transport calls.

  /// The client is connected (its socket ready): keep-alive and first-packet deadlines start.
  void opened(bool loopback);
  /// Bytes arrived: `buf` holds in_ (its first `have` bytes, copied there by the transport)
  /// and then `n` new bytes; `buf` has room for the core's read_buffer(). Handles every complete
  /// packet and keeps the rest in in_. Returns whether to go on reading.
  bool received(char* buf, std::size_t have, std::size_t n);
  void written_all() override;

  std::string in_; // bytes of an incomplete packet
  bool draining_ = false;

 private:
  std::shared_ptr<mqtt_session> self() {
    return std::static_pointer_cast<mqtt_session>(shared_from_this());
  }

  std::size_t consume(char* data, std::size_t size);
  void dispatch(const mqtt::header_result& h, char* packet, std::string_view body);
  void on_connect(const mqtt::header_result& h, std::string_view body);
  bool take_will(const mqtt::connect_packet& cp);
  void on_publish(const mqtt::header_result& h, char* packet, std::string_view body);
  void on_subscribe(const mqtt::header_result& h, std::string_view body);
  void on_unsubscribe(const mqtt::header_result& h, std::string_view body);
  void on_ack(const mqtt::header_result& h, std::string_view body);
  void on_pubrel(const mqtt::header_result& h, std::string_view body);
  void on_disconnect(const mqtt::header_result& h, std::string_view body);
  void publish_run();
  /// Whether this client may publish on `topic`; `reserved`: refused for a reserved prefix.
  bool may_publish(std::string_view topic, bool& reserved);

  // Answers
  std::string& control();
  void send_control();
  void refuse(std::uint8_t v5_code, std::uint8_t v3_code, close_reason why);
  void fail(close_reason why, std::uint8_t v5_code) { end(why, v5_code); }
  void finish(close_reason why);

  // The flags first: they fill peer's tail padding (see there).
  bool connected_ = false;       // CONNECT accepted
  bool loopback_ = false;        // the client's address is a loopback one
  bool will_cancelled_ = false;  // a DISCONNECT without "with will"
  bool consuming_ = false;       // inside consume(): answers go to the control scratch first
  bool no_expiry_asked_ = false; // MQTT 5 CONNECT asked for Session Expiry 0
  bool run_retain_ = false;      // the run being collected is one retained message
  std::uint8_t run_qos_ = 0;
  std::uint16_t keep_alive_ = 0; // seconds; 0: none
  close_reason done_reason_ = close_reason::done;

  // Until CONNECT: when the connection was accepted (first_frame_timeout); then the last read
  // (keep-alive).
  steady::time_point last_read_{};
  const mqtt_permissions* perms_ = nullptr;
  extras_ptr run_extras_; // the MQTT 5 properties of the run being collected (a run of one)
};

/// An MQTT session on an accepted TCP socket, not yet registered nor started.
std::shared_ptr<peer> make_mqtt_session(const std::shared_ptr<core>& c,
                                        boost::asio::ip::tcp::socket socket);

/// An MQTT session on `socket` (on the broker's strand), whose upgrade request `req` was read
/// (and checked: check_websocket_request) and not answered: start() answers it (101 with the
/// `mqtt` subprotocol). Not yet registered nor started.
std::shared_ptr<peer> make_mqtt_websocket_session(const std::shared_ptr<core>& c,
                                                  boost::asio::ip::tcp::socket socket,
                                                  websocket_request req);

} // namespace newsdesk::broker::detail

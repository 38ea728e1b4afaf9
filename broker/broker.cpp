// The public face of the broker: composes the core (tables, delivery), the frame protocol's
// listener, and the in-process publish/subscribe API. The pieces, one concern each:
//   frame.hpp           the wire codec (pure)
//   slice_ring.hpp      shared message blocks and the FIFO of slices queues are made of
//   counters.hpp        the live counters behind stats(), and why connections close
//   context.hpp         settings, strand and counters every piece shares
//   peer.hpp            a connection as index and delivery see it, any protocol; flush scheduling
//   channel_index.hpp   the two-way index of channels and subscribers
//   delivery.hpp        publishing, /topic fan-out and its slow-consumer policy, in-process calls
//   queue_delivery.hpp  /queue round-robin, backlog, backpressure and expiry
//   core.hpp            registry, sweep, shutdown: the protocol-neutral broker
//   listener.hpp        the accept loop
//   session.hpp         the frame protocol's connection
//   mqtt_codec.hpp      MQTT 3.1.1 / 5.0 packets (pure; mqtt_encode.cpp writes them)
//   mqtt_router.hpp     MQTT sessions, wills, subscriptions, retained messages; delivery and
//                       the QoS 1 and 2 windows in mqtt_fan_out.cpp
//   mqtt_session.hpp    an MQTT connection: the protocol; its transports in mqtt_transport.cpp
//                       (TCP) and mqtt_websocket.cpp (WebSocket, websocket.hpp)
//   sys_topics.hpp      the $SYS/broker/... topics
#include "broker/broker.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "broker/channel_index.hpp"
#include "broker/core.hpp"
#include "broker/frame.hpp"
#include "broker/listener.hpp"
#include "broker/mqtt_session.hpp"
#include "broker/session.hpp"
#include "server/core/log.hpp"

namespace newsdesk::broker {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

// -------------------------------------------------------------------------------------------
// server

server::server(net::io_context& ioc, config cfg)
    : core_(detail::core::create(ioc, std::move(cfg)))
    , listener_(std::make_shared<detail::listener>(core_, &detail::make_frame_session)) {
  if (core_->cfg().mqtt.enabled)
    mqtt_listener_ = std::make_shared<detail::listener>(
        core_, &detail::make_mqtt_session, core_->cfg().mqtt.max_connections_per_address);
}

server::~server() {
  // Connections still open keep the core alive through their pending operations; make sure
  // nothing keeps accepting once the owner is gone.
  net::post(core_->strand(), [c = core_, l = listener_, m = mqtt_listener_] {
    if (!c->shutting_down()) {
      l->close();
      if (m)
        m->close();
      c->shutdown(nullptr);
    }
  });
}

void server::listen(error_code& ec) {
  const config& cfg = core_->cfg();
  listener_->listen(cfg.address, cfg.port, ec);
  if (ec || !mqtt_listener_)
    return;
  mqtt_listener_->listen(cfg.address, cfg.mqtt.port, ec);
  if (ec == net::error::address_in_use && !cfg.mqtt.port_given) {
    // 1883 is every MQTT broker's default: Mosquitto on the same machine, or a second newsdesk,
    // must not stop this one from starting. MQTT over WebSockets (the HTTP port) still works.
    newsdesk::server::log_warn(
        "msg=\"broker: the default MQTT port is in use (another MQTT broker, or another "
        "newsdesk?); running without the MQTT listener\" address=" +
        cfg.address + ":" + std::to_string(cfg.mqtt.port) +
        " hint=\"set broker.mqtt.port (NEWSDESK_BROKER_MQTT_PORT) to listen elsewhere, or "
        "broker.mqtt.enabled false\"");
    mqtt_listener_.reset();
    ec = {};
    return;
  }
  if (ec)
    listener_->close();
}

void server::listen() {
  const config& cfg = core_->cfg();
  error_code ec;
  listen(ec);
  if (!ec)
    return;
  if (!listener_->local_endpoint().port())
    throw std::system_error(ec, "broker: cannot listen on " + cfg.address + ":" +
                                    std::to_string(cfg.port));
  throw std::system_error(ec, "broker: cannot listen for MQTT on " + cfg.address + ":" +
                                  std::to_string(cfg.mqtt.port));
}

tcp::endpoint server::local_endpoint() const {
  return listener_->local_endpoint();
}

tcp::endpoint server::mqtt_endpoint() const {
  return mqtt_listener_ ? mqtt_listener_->local_endpoint() : tcp::endpoint{};
}

bool server::mqtt_listening() const noexcept {
  return mqtt_listener_ != nullptr;
}

void server::start() {
  net::post(core_->strand(), [c = core_, l = listener_, m = mqtt_listener_] {
    if (c->start()) {
      l->start();
      if (m)
        m->start();
    }
  });
}

void server::serve_websocket(int fd, websocket_request req) {
  net::post(core_->strand(), [c = core_, fd, req = std::move(req)]() mutable {
    error_code ec;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      ::close(fd);
      return;
    }
    tcp::socket socket(c->strand());
    socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return;
    }
    // The MQTT listener's limits: its per-address cap counts these connections too.
    detail::address_table::value_type* entry = nullptr;
    if (!c->cfg().mqtt.enabled || c->shutting_down() ||
        !c->admit(socket, c->cfg().mqtt.max_connections_per_address, entry))
      return; // the socket closes as it goes
    auto p = detail::make_mqtt_websocket_session(c, std::move(socket), std::move(req));
    p->address_ = entry;
    c->register_peer(*p);
    p->start();
  });
}

void server::publish(std::string_view channel, std::string_view data) {
  publish(channel, data, false);
}

void server::publish_retained(std::string_view channel, std::string_view data) {
  publish(channel, data, true);
}

void server::publish(std::string_view channel, std::string_view data, bool retain) {
  const config& cfg = core_->cfg();
  // The same limits a network publisher meets; a longer name would become a table key that
  // no network client could ever subscribe to.
  if (channel.empty())
    throw std::invalid_argument("broker: publish to an empty channel name");
  if (channel.size() > cfg.max_channel_name)
    throw std::length_error("broker: channel name exceeds max_channel_name");
  if (data.size() > cfg.max_frame_bytes)
    throw std::length_error("broker: published message exceeds max_frame_bytes");
  const std::size_t size = frame_header_bytes + data.size();
  auto block = detail::make_block(size);
  write_length(block.get(), static_cast<std::uint32_t>(data.size()));
  std::memcpy(block.get() + frame_header_bytes, data.data(), data.size());
  net::post(core_->strand(), [c = core_, name = std::string(channel), b = std::move(block), size,
                              retain] { c->publish_local(name, b, size, retain); });
}

void server::retain(std::string_view channel, std::string_view data) {
  const config& cfg = core_->cfg();
  if (!channel.starts_with("/topic/") || channel.size() == 7)
    throw std::invalid_argument("broker: only /topic/ channels have retained messages");
  if (channel.size() > cfg.max_channel_name)
    throw std::length_error("broker: channel name exceeds max_channel_name");
  if (data.size() > cfg.max_frame_bytes)
    throw std::length_error("broker: retained message exceeds max_frame_bytes");
  net::post(core_->strand(),
            [c = core_, topic = std::string(channel.substr(7)), d = std::string(data)] {
              if (!c->shutting_down())
                c->mqtt().retain(topic, d, 2);
            });
}

subscription server::subscribe(std::string_view channel, message_handler on_message) {
  if (channel.empty())
    throw std::invalid_argument("broker: subscribe to an empty channel name");
  if (channel.size() > core_->cfg().max_channel_name)
    throw std::length_error("broker: channel name exceeds max_channel_name");
  if (detail::is_queue_name(channel))
    throw std::invalid_argument("broker: in-process subscribers take /topic channels only, not " +
                                std::string(channel));
  if (!on_message)
    throw std::invalid_argument("broker: subscribe without a handler");
  auto s = std::make_shared<detail::local_subscriber>();
  s->handler = std::move(on_message);
  net::post(core_->strand(),
            [c = core_, s, name = std::string(channel)] { c->subscribe_local(s, name); });
  return subscription(core_, std::move(s));
}

stats_snapshot server::stats() const {
  return core_->snapshot();
}

void server::async_shutdown(std::function<void()> handler) {
  net::post(core_->strand(),
            [c = core_, l = listener_, m = mqtt_listener_, h = std::move(handler)]() mutable {
              l->close();
              if (m)
                m->close();
              c->shutdown(std::move(h));
            });
}

const config& server::settings() const noexcept {
  return core_->cfg();
}

// -------------------------------------------------------------------------------------------
// subscription

subscription& subscription::operator=(subscription&& other) noexcept {
  if (this != &other) {
    cancel();
    core_ = std::move(other.core_);
    sub_ = std::move(other.sub_);
  }
  return *this;
}

subscription::~subscription() {
  cancel();
}

void subscription::cancel() {
  auto s = std::move(sub_);
  auto c = core_.lock();
  core_.reset();
  if (!s)
    return;
  const bool already = s->cancelled.exchange(true);
  if (!c) // the broker is gone, and with it every delivery
    return;
  if (!already)
    net::post(c->strand(), [c, s] { c->unsubscribe_local(*s); });
  // Inside a handler the strand is this thread: waiting for "the call under way" would wait
  // for ourselves. Anywhere else a call under way ends soon (handlers never block).
  if (!c->strand().running_in_this_thread())
    while (s->calling.load())
      s->calling.wait(true);
}

bool subscription::active() const noexcept {
  return sub_ && !sub_->cancelled.load();
}

} // namespace newsdesk::broker

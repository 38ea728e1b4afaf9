#include "broker/core.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "broker/frame.hpp"
#include "server/core/log.hpp"

namespace newsdesk::broker::detail {

void fail(const boost::system::error_code& ec, const char* step) {
  newsdesk::server::log_warn(
      "msg=" + newsdesk::server::logfmt_quoted(std::string("broker: ") + step) +
      " error=" + newsdesk::server::logfmt_quoted(ec.message()));
}

namespace {

// Connections own themselves while their sockets are in the reactor (peer::registered_). An
// io_context stopped and destroyed before the broker's shutdown finished would leave them, and
// the core they hold, alive for good, where Asio frees its own pending operations then. This
// service of the io_context lets them go at the same moment: its shutdown comes first, while
// the io_context's other services still work.
class connection_release : public boost::asio::execution_context::service {
 public:
  static inline boost::asio::execution_context::id id;
  explicit connection_release(boost::asio::execution_context& ctx)
      : service(ctx) {}

  void watch(std::weak_ptr<core> c) {
    std::lock_guard lock(mutex_);
    std::erase_if(cores_, [](const std::weak_ptr<core>& w) { return w.expired(); });
    cores_.push_back(std::move(c));
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<core>> cores;
    {
      std::lock_guard lock(mutex_);
      cores.swap(cores_);
    }
    for (const auto& w : cores)
      if (auto c = w.lock())
        c->release_connections();
  }

  std::mutex mutex_;
  std::vector<std::weak_ptr<core>> cores_;
};

} // namespace

std::shared_ptr<core> core::create(boost::asio::io_context& ioc, config cfg) {
  auto c = std::make_shared<core>(ioc, std::move(cfg));
  c->ctx_.owner_ = c;
  boost::asio::use_service<connection_release>(ioc).watch(c);
  return c;
}

void core::release_connections() {
  std::vector<std::shared_ptr<peer>> owned;
  for (peer* p : peers_)
    if (p->registered_)
      owned.push_back(std::move(p->registered_));
  peers_.clear();
  owned.clear(); // each closes its socket
}

core::core(boost::asio::io_context& ioc, config cfg)
    : ctx_(ioc, std::move(cfg))
    , index_(ctx_)
    , flush_(ctx_)
    , queues_(ctx_, index_, flush_)
    , mqtt_(ctx_, index_, flush_, addresses_,
            [this](std::unique_ptr<mqtt_will> w) { publish_will(std::move(w)); })
    , delivery_(ctx_, index_, queues_, flush_, mqtt_)
    , reactor_(ctx_)
    , sweep_timer_(ctx_.strand)
    , shutdown_timer_(ctx_.strand) {
  const config& c = ctx_.cfg;
  // The leftover of either protocol (a frame pair, or one MQTT packet) plus one read.
  read_buffer_size_ =
      c.read_chunk_bytes + std::max(c.max_frame_bytes + c.max_channel_name + 2 * frame_header_bytes,
                                    c.mqtt.enabled ? c.mqtt.max_packet_bytes : 0);
  iov_.reserve(max_iov);
  ping_block_ = make_block(frame_header_bytes);
  write_length(ping_block_.get(), 0);
}

char* core::read_buffer() {
  if (!read_buffer_)
    read_buffer_ = std::make_unique_for_overwrite<char[]>(read_buffer_size_);
  return read_buffer_.get();
}

bool core::start() {
  if (started_ || shutting_down_)
    return false;
  started_ = true;
  started_at_ = next_sys_ = steady::now(); // $SYS at the first sweep, then every sys_interval
  next_ping_ = started_at_ + ctx_.cfg.ping_interval;
  arm_sweep();
  return true;
}

void core::arm_sweep() {
  using std::chrono::milliseconds;
  const config& cfg = ctx_.cfg;
  milliseconds period{1000};
  if (cfg.write_deadline.count() > 0)
    period = std::min(period, cfg.write_deadline / 4);
  if (cfg.partial_frame_timeout.count() > 0)
    period = std::min(period, cfg.partial_frame_timeout / 4);
  if (cfg.first_frame_timeout.count() > 0)
    period = std::min(period, cfg.first_frame_timeout / 4);
  if (cfg.ping_interval.count() > 0)
    period = std::min(period, cfg.ping_interval / 4);
  if (cfg.mqtt.enabled && cfg.mqtt.sys_interval.count() > 0)
    period = std::min(period, cfg.mqtt.sys_interval);
  if (cfg.mqtt.idle_timeout.count() > 0)
    period = std::min(period, cfg.mqtt.idle_timeout / 4);
  // Kept MQTT sessions end, and their delayed wills go, at whole seconds a client chose: a
  // quarter of a second late at most (mqtt_router::expire walks the sessions only while some
  // are kept).
  if (mqtt_.sessions_kept() > 0)
    period = std::min(period, milliseconds(250));
  period = std::max(period, milliseconds(20));
  sweep_timer_.expires_after(period);
  sweep_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->shutdown_done_)
      return;
    self->sweep();
    self->arm_sweep();
  });
}

// Deadlines for all connections in one pass, instead of a timer per connection.
void core::sweep() {
  const config& cfg = ctx_.cfg;
  const auto now = steady::now();
  std::vector<std::pair<std::shared_ptr<peer>, close_reason>> doomed;
  for (peer* p : peers_) {
    if (cfg.write_deadline.count() > 0 && p->stalled_since_ != steady::time_point{} &&
        !p->out_.empty() && now - p->stalled_since_ > cfg.write_deadline) {
      if (auto s = p->weak_from_this().lock())
        doomed.emplace_back(std::move(s), close_reason::write_timeout);
    } else if (const auto why = p->read_overdue(now)) {
      if (auto s = p->weak_from_this().lock())
        doomed.emplace_back(std::move(s), *why);
    }
  }
  for (auto& [p, why] : doomed)
    p->close(why);
  queues_.expire_unattended(now);
  mqtt_.expire(now);
  if (cfg.mqtt.enabled && cfg.mqtt.sys_interval.count() > 0 && now >= next_sys_) {
    next_sys_ = now + cfg.mqtt.sys_interval;
    publish_sys(now);
  }
  if (cfg.ping_interval.count() > 0 && now >= next_ping_) {
    next_ping_ = now + cfg.ping_interval;
    ping_quiet(now);
  }
  log_refusals(now);
}

// One round per ping_interval: a subscriber neither read from nor written to since the last
// round, with nothing queued, gets one zero-length message. It costs a slice on a shared block;
// a dead peer never acknowledges it, and the kernel then gives up after write_deadline
// (TCP_USER_TIMEOUT, session.cpp).
void core::ping_quiet(steady::time_point) {
  if (shutting_down_)
    return;
  std::uint64_t sent = 0;
  for (peer* p : peers_) {
    if (std::exchange(p->active_, false))
      continue;
    if (!p->chan_ || !p->takes_deliveries() || !p->out_.empty())
      continue;
    p->enqueue(slice{ping_block_, 0, static_cast<std::uint32_t>(frame_header_bytes), 0});
    flush_.mark(*p);
    ++sent;
  }
  add(ctx_.ctr.pings, sent);
}

// The $SYS/broker/... values that changed, retained for later subscribers and sent to MQTT
// subscribers only (they are MQTT's topics), without counting as messages received or dropped.
void core::publish_sys(steady::time_point now) {
  if (shutting_down_)
    return;
  const sys_figures figures{snapshot(), mqtt_.sessions_connected(), mqtt_.sessions_kept(),
                            now - started_at_};
  for (const auto& [topic, value] : sys_.changed(figures)) {
    mqtt_.retain(topic, value, 0);
    const std::string channel = "/topic/" + topic;
    const auto ch = index_.find(channel);
    if ((!ch || ch->mqtt_subs.empty()) && !mqtt_.has_wildcards())
      continue;
    const std::size_t size = frame_header_bytes + value.size();
    block_ptr b = make_block(size);
    write_length(b.get(), static_cast<std::uint32_t>(value.size()));
    std::memcpy(b.get() + frame_header_bytes, value.data(), value.size());
    const msg_view m{b.get(), static_cast<std::uint32_t>(size), 0};
    mqtt_.fan_out(channel, ch.get(), std::span<const msg_view>(&m, 1), nullptr, {0, true, {}}, b);
  }
}

bool core::make_room() {
  const config& cfg = ctx_.cfg;
  if (peers_.size() < cfg.max_connections && unidentified_ < cfg.max_unidentified_connections)
    return true;
  bool room = false;
  if (unidentified_ > 0) {
    // A random one rather than the oldest or the newest: a real client identifies within a
    // round trip, so while a flood keeps the unidentified slots full it is rarely the one
    // picked, and choosing needs no per-connection bookkeeping.
    std::uniform_int_distribution<std::size_t> pick(0, unidentified_ - 1);
    if (auto victim = peers_[pick(rng_)]->weak_from_this().lock()) {
      victim->close(close_reason::unidentified_limit);
      ++evicted_unlogged_;
      room = peers_.size() < cfg.max_connections;
    }
  }
  if (!room) {
    add(ctx_.ctr.connections_rejected, 1);
    ++refused_unlogged_;
  }
  log_refusals(steady::now());
  return room;
}

void core::log_refusals(steady::time_point now) {
  if (refused_unlogged_ + evicted_unlogged_ == 0)
    return;
  if (refusal_logged_ != steady::time_point{} && now - refusal_logged_ < refusal_log_interval)
    return;
  const config& cfg = ctx_.cfg;
  newsdesk::server::log_warn(
      "msg=\"broker: connections refused\" refused=" + std::to_string(refused_unlogged_) +
      " unidentified_closed=" + std::to_string(evicted_unlogged_) + " connections=" +
      std::to_string(peers_.size()) + " unidentified=" + std::to_string(unidentified_) +
      " max_connections=" + std::to_string(cfg.max_connections) +
      " max_unidentified_connections=" + std::to_string(cfg.max_unidentified_connections));
  refused_unlogged_ = evicted_unlogged_ = 0;
  refusal_logged_ = now;
}

bool core::is_reserved(std::string_view name) const {
  std::string_view rest = ctx_.cfg.reserved_prefixes;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto prefix = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!prefix.empty() && prefix.front() == ' ')
      prefix.remove_prefix(1);
    while (!prefix.empty() && prefix.back() == ' ')
      prefix.remove_suffix(1);
    if (!prefix.empty() && name.starts_with(prefix))
      return true;
  }
  return false;
}

// Compares digests, so neither the token's length nor where the first difference lies shows in
// the time a wrong guess takes.
bool core::token_matches(std::string_view offered) const {
  const std::string& token = ctx_.cfg.token;
  unsigned char want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), want);
  SHA256(reinterpret_cast<const unsigned char*>(offered.data()), offered.size(), got);
  return CRYPTO_memcmp(want, got, sizeof want) == 0;
}

// peers_[to] = peers_[from], keeping registry_index_ right (the slot `from` is then free).
void core::move_in_registry(std::size_t from, std::size_t to) {
  if (from == to)
    return; // the slot may hold a stale copy of an entry moved away: leave its index alone
  peers_[to] = peers_[from];
  peers_[to]->registry_index_ = to;
}

address_table::value_type* core::take_address(const std::string& address, std::size_t cap) {
  auto& entry = *addresses_.try_emplace(address).first;
  address_share& share = entry.second;
  if (cap == 0 || share.connections < cap) {
    ++share.connections;
    return &entry;
  }
  add(ctx_.ctr.connections_rejected_per_address, 1);
  ++share.refused_unlogged;
  const auto now = steady::now();
  if (share.logged == steady::time_point{} || now - share.logged >= refusal_log_interval) {
    const std::size_t max = ctx_.cfg.max_connections;
    newsdesk::server::log_warn(
        "msg=\"broker: connections from one address refused\" address=" +
        newsdesk::server::logfmt_quoted(address) +
        " refused=" + std::to_string(share.refused_unlogged) + " cap=" + std::to_string(cap) +
        " connections=" + std::to_string(peers_.size()) +
        " slots_left_for_others=" + std::to_string(max > peers_.size() ? max - peers_.size() : 0));
    share.refused_unlogged = 0;
    share.logged = now;
  }
  return nullptr;
}

void core::release_address(address_table::value_type& entry) {
  if (--entry.second.connections == 0 && entry.second.will_bytes == 0)
    addresses_.erase(entry.first);
}

bool core::charge_will(peer& p, std::size_t bytes) {
  const std::size_t budget = ctx_.cfg.mqtt.max_will_bytes_per_address;
  if (!p.address_)
    return bytes <= budget;
  std::size_t& held = p.address_->second.will_bytes;
  if (bytes > budget || held > budget - bytes)
    return false;
  held += bytes;
  return true;
}

// The per-address cap first: a connection refused there must not close another one to make
// room (make_room) first.
bool core::admit(boost::asio::ip::tcp::socket& socket, std::size_t cap,
                 address_table::value_type*& entry) {
  boost::system::error_code ec;
  entry = nullptr;
  if (cap > 0) {
    auto addr = socket.remote_endpoint(ec).address();
    if (ec) {
      socket.close(ec); // gone already
      return false;
    }
    if (addr.is_v6() && addr.to_v6().is_v4_mapped())
      addr = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
    entry = take_address(addr.to_string(), cap);
    if (!entry) {
      socket.close(ec);
      return false;
    }
  }
  if (!make_room()) {
    if (entry)
      release_address(*std::exchange(entry, nullptr));
    socket.close(ec);
    return false;
  }
  return true;
}

void core::register_peer(peer& p) {
  // Into the unidentified prefix: the first identified peer moves to the end to make room.
  peers_.push_back(&p);
  move_in_registry(unidentified_, peers_.size() - 1);
  peers_[unidentified_] = &p;
  p.registry_index_ = unidentified_;
  ++unidentified_;
  add(ctx_.ctr.connections_current, 1);
  add(ctx_.ctr.connections_total, 1);
}

void core::identified(peer& p) {
  if (p.identified_)
    return;
  p.identified_ = true;
  // Swap with the last unidentified peer and shrink the prefix.
  const std::size_t at = p.registry_index_;
  const std::size_t last = --unidentified_;
  move_in_registry(last, at);
  peers_[last] = &p;
  p.registry_index_ = last;
}

void core::remove_peer(peer& p) {
  counters& ctr = ctx_.ctr;
  if (p.chan_)
    index_.unsubscribe(p);
  if (p.paused_ && p.blocked_on_) {
    queues_.unblock(p);
    index_.maybe_erase(*p.blocked_on_); // it may have kept an otherwise empty channel alive
    p.blocked_on_.reset();
  }
  add(ctr.drop_disconnected, p.out_messages_);
  sub(ctr.queued_bytes, p.out_bytes_);
  p.out_.clear();
  p.out_bytes_ = p.out_messages_ = 0;

  std::size_t hole = p.registry_index_;
  if (!p.identified_) {
    // Keep the prefix whole: its last entry fills the hole, which moves to the prefix's end.
    const std::size_t last = --unidentified_;
    move_in_registry(last, hole);
    hole = last;
  }
  move_in_registry(peers_.size() - 1, hole);
  peers_.pop_back();
  if (p.address_)
    release_address(*std::exchange(p.address_, nullptr));
  sub(ctr.connections_current, 1);
  maybe_finish_shutdown();
}

void core::stop_waiting(peer& p) {
  if (p.paused_ && p.blocked_on_) {
    queues_.unblock(p);
    p.paused_ = false;
    p.blocked_on_.reset();
  }
}

bool core::subscribe(peer& p, std::string_view name) {
  if (!index_.subscribe(p, name))
    return false;
  if (p.chan_->is_queue && !p.chan_->backlog.empty())
    queues_.schedule_pump(*p.chan_);
  return true;
}

void core::unsubscribe(peer& p) {
  index_.unsubscribe(p);
}

void core::publish_local(std::string_view name, const block_ptr& block, std::size_t size,
                         bool retain) {
  if (shutting_down_) {
    add(ctx_.ctr.drop_shutdown, 1);
    return;
  }
  if (retain && name.starts_with("/topic/") && name.size() > 7)
    mqtt_.retain(name.substr(7), {block.get() + frame_header_bytes, size - frame_header_bytes}, 2);
  const msg_view m{block.get(), static_cast<std::uint32_t>(size), 0};
  delivery_.publish(name, std::span<const msg_view>(&m, 1), nullptr, &block, {});
}

void core::publish_will(std::unique_ptr<mqtt_will> w) {
  if (!w)
    return;
  if (!shutting_down_) {
    if (w->has_expiry) { // it counts from now, when the will is published
      auto e = std::make_shared<mqtt_extras>(w->extras ? *w->extras : mqtt_extras{});
      e->has_expiry = true;
      e->expires_at = steady::now() + std::chrono::seconds(w->expiry_s);
      w->extras = std::move(e);
    }
    if (w->retain)
      mqtt_.retain(std::string_view(w->channel).substr(7), w->payload, w->qos, w->extras);
    const std::size_t size = frame_header_bytes + w->payload.size();
    block_ptr b = make_block(size);
    write_length(b.get(), static_cast<std::uint32_t>(w->payload.size()));
    std::memcpy(b.get() + frame_header_bytes, w->payload.data(), w->payload.size());
    const msg_view m{b.get(), static_cast<std::uint32_t>(size), 0};
    delivery_.publish(w->channel, std::span<const msg_view>(&m, 1), nullptr, &b,
                      {w->qos, w->retain, w->extras});
  }
  mqtt_.drop_will(std::move(w));
}

void core::subscribe_local(const std::shared_ptr<local_subscriber>& s, std::string_view name) {
  if (shutting_down_ || s->cancelled.load()) {
    channel_index::drop_local(*s);
    return;
  }
  index_.subscribe_local(s, name);
}

void core::shutdown(std::function<void()> handler) {
  if (handler)
    shutdown_handlers_.push_back(std::move(handler));
  if (shutdown_done_) {
    maybe_finish_shutdown();
    return;
  }
  if (shutting_down_)
    return;
  shutting_down_ = true;
  shutdown_timer_.expires_after(ctx_.cfg.shutdown_deadline);
  shutdown_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->shutdown_done_)
      return;
    std::vector<std::shared_ptr<peer>> rest;
    for (peer* p : self->peers_)
      if (auto s = p->weak_from_this().lock())
        rest.push_back(std::move(s));
    for (auto& p : rest)
      p->close(close_reason::shutdown);
    self->maybe_finish_shutdown();
  });
  std::vector<std::shared_ptr<peer>> all;
  for (peer* p : peers_)
    if (auto s = p->weak_from_this().lock())
      all.push_back(std::move(s));
  for (auto& p : all)
    p->begin_drain();
  maybe_finish_shutdown();
}

void core::maybe_finish_shutdown() {
  if (!shutting_down_ || !peers_.empty())
    return;
  if (!shutdown_done_) {
    shutdown_done_ = true;
    shutdown_timer_.cancel();
    sweep_timer_.cancel();
    reactor_.close();
    mqtt_.clear();
    index_.clear();
    queues_.reset();
    counters& ctr = ctx_.ctr;
    add(ctr.drop_disconnected, get(ctr.backlog_messages));
    ctr.backlog_messages.store(0);
    ctr.backlog_bytes.store(0);
    ctr.channels_current.store(0);
  }
  auto handlers = std::move(shutdown_handlers_);
  shutdown_handlers_.clear();
  for (auto& h : handlers)
    boost::asio::post(ctx_.strand.get_inner_executor(), std::move(h));
}

} // namespace newsdesk::broker::detail

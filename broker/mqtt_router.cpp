#include "broker/mqtt_router.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "broker/frame.hpp"

namespace newsdesk::broker::detail {

namespace {

constexpr std::string_view topic_prefix = "/topic/";

bool has_wildcard(std::string_view filter) {
  return filter.find_first_of("+#") != std::string_view::npos;
}

// Swap-removes `sub` from `list` (it is at sub.slot), keeping the moved entry's slot right.
void erase_from(std::vector<mqtt_subscription*>& list, mqtt_subscription& sub) {
  mqtt_subscription* last = list.back();
  list[sub.slot] = last;
  last->slot = sub.slot;
  list.pop_back();
}

} // namespace

block_ptr copy_run(std::span<const msg_view> msgs, std::size_t total) {
  block_ptr block = make_block(total);
  char* p = block.get();
  for (const auto& m : msgs) {
    std::memcpy(p, m.data, m.size);
    p += m.size;
  }
  return block;
}

namespace {

std::array<unsigned char, 32> digest_of(std::string_view s) {
  std::array<unsigned char, 32> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

// "a/#, b/+" -> {"a/#", "b/+"}; entries that are not valid filters are left out.
std::vector<std::string> filter_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (mqtt::valid_topic_filter(item))
      out.emplace_back(item);
  }
  return out;
}

} // namespace

bool mqtt_permissions::may_read(std::string_view filter) const {
  return std::any_of(read.begin(), read.end(),
                     [&](const std::string& r) { return mqtt::filter_covers(r, filter); });
}

bool mqtt_permissions::may_write(std::string_view topic) const {
  return std::any_of(write.begin(), write.end(),
                     [&](const std::string& w) { return mqtt::topic_matches(w, topic); });
}

mqtt_router::mqtt_router(context& ctx, channel_index& index, flush_scheduler& flush)
    : ctx_(ctx)
    , index_(index)
    , flush_(flush) {
  const mqtt_config& cfg = ctx_.cfg.mqtt;
  anonymous_.read = filter_list(cfg.anonymous_read);
  anonymous_.write = filter_list(cfg.anonymous_write);
  for (const mqtt_user& u : cfg.users)
    users_.emplace(u.name, user_entry{digest_of(u.password), {u.read, u.write}});
}

const mqtt_permissions* mqtt_router::authenticate(std::string_view name,
                                                  std::string_view password) const {
  const auto offered = digest_of(password);
  const auto it = users_.find(name);
  // An unknown name costs the same comparison, against a digest no password has.
  static const std::array<unsigned char, 32> nobody = digest_of("\x01 no user \x01");
  const auto& want = it != users_.end() ? it->second.digest : nobody;
  const bool same = CRYPTO_memcmp(want.data(), offered.data(), want.size()) == 0;
  return same && it != users_.end() ? &it->second.perms : nullptr;
}

mqtt_router::~mqtt_router() = default;

// ---------------------------------------------------------------------------------------------
// Sessions

std::string mqtt_router::assign_client_id() {
  return "newsdesk-" + std::to_string(++auto_ids_);
}

mqtt_router::attach_result mqtt_router::attach(mqtt_connection& c, std::string_view client_id,
                                               bool clean_start, std::uint32_t expiry_s,
                                               std::uint16_t window) {
  attach_result r;
  if (auto it = states_.find(client_id); it != states_.end()) {
    std::shared_ptr<mqtt_client_state> s = it->second;
    if (s->conn) {
      // The older connection goes; it no longer owns the session, so its close leaves it be.
      auto old = std::static_pointer_cast<mqtt_connection>(s->conn->shared_from_this());
      old->state_.reset();
      s->conn = nullptr;
      old->close(close_reason::mqtt_taken_over);
    } else {
      --kept_;
    }
    if (clean_start)
      destroy(s);
    else
      r.state = std::move(s);
  }
  if (!r.state) {
    if (states_.size() >= ctx_.cfg.mqtt.max_sessions)
      return r;
    auto s = std::make_shared<mqtt_client_state>();
    s->client_id = std::string(client_id);
    states_.emplace(s->client_id, s);
    add(ctx_.ctr.mqtt_sessions_current, 1);
    r.state = std::move(s);
  } else {
    r.session_present = true;
  }
  mqtt_client_state& s = *r.state;
  s.conn = &c;
  s.expiry_s = expiry_s;
  s.expires_at = {};
  s.window = static_cast<std::uint16_t>(
      std::clamp<std::size_t>(std::min<std::size_t>(window, ctx_.cfg.mqtt.max_inflight), 1, 65535));
  c.state_ = r.state;
  return r;
}

void mqtt_router::detach(mqtt_connection& c) {
  std::shared_ptr<mqtt_client_state> s = std::move(c.state_);
  if (!s || s->conn != &c)
    return;
  s->conn = nullptr;
  if (s->expiry_s == 0) {
    destroy(s);
    return;
  }
  s->expires_at = steady::now() + std::chrono::seconds(s->expiry_s);
  ++kept_;
}

void mqtt_router::expire(steady::time_point now) {
  if (kept_ == 0)
    return;
  std::vector<std::shared_ptr<mqtt_client_state>> done;
  for (const auto& [id, s] : states_)
    if (!s->conn && s->expires_at <= now)
      done.push_back(s);
  for (const auto& s : done) {
    --kept_;
    destroy(s);
  }
}

void mqtt_router::clear() {
  std::vector<std::shared_ptr<mqtt_client_state>> all;
  for (const auto& [id, s] : states_)
    all.push_back(s);
  for (const auto& s : all)
    destroy(s);
  kept_ = 0;
  retained_.clear();
  retained_bytes_ = 0;
  ctx_.ctr.retained_messages.store(0);
  ctx_.ctr.retained_bytes.store(0);
}

void mqtt_router::destroy(const std::shared_ptr<mqtt_client_state>& s) {
  while (s->subs) {
    remove(*s->subs);
    s->subs = std::move(s->subs->next);
  }
  s->subs_count = 0;
  if (s->qos1) {
    const mqtt_qos1_queue& q = *s->qos1;
    add(ctx_.ctr.drop_disconnected, q.inflight.size() + (q.pending ? q.pending->size() : 0));
    s->qos1.reset();
  }
  if (auto it = states_.find(s->client_id); it != states_.end() && it->second == s) {
    states_.erase(it);
    sub(ctx_.ctr.mqtt_sessions_current, 1);
  }
}

// ---------------------------------------------------------------------------------------------
// Subscriptions

std::uint8_t mqtt_router::subscribe(mqtt_client_state& s, std::string_view filter, std::uint8_t qos,
                                    bool no_local, bool& existed) {
  existed = false;
  for (mqtt_subscription* sub = s.subs.get(); sub; sub = sub->next.get())
    if (sub->filter == filter) {
      sub->qos = qos;
      sub->no_local = no_local;
      existed = true;
      return qos;
    }
  if (s.subs_count >= ctx_.cfg.mqtt.max_subscriptions ||
      s.subs_count == std::numeric_limits<std::uint16_t>::max())
    return mqtt::reason::quota_exceeded;
  auto sub = std::make_unique<mqtt_subscription>();
  sub->owner = &s;
  sub->filter = std::string(filter);
  sub->qos = qos;
  sub->no_local = no_local;
  if (!has_wildcard(filter)) {
    if (topic_prefix.size() + filter.size() > ctx_.cfg.max_channel_name)
      return mqtt::reason::topic_filter_invalid;
    std::string name(topic_prefix);
    name += filter;
    auto ch = index_.find_or_create(name);
    if (!ch)
      return mqtt::reason::quota_exceeded;
    sub->slot = static_cast<std::uint32_t>(ch->mqtt_subs.size());
    ch->mqtt_subs.push_back(sub.get());
    ch->unattended_since = {};
    sub->chan = std::move(ch);
  } else {
    wildcard_node* n = &root_;
    std::size_t start = 0;
    for (;;) {
      const std::size_t slash = filter.find('/', start);
      const std::string_view level = filter.substr(
          start, slash == std::string_view::npos ? filter.size() - start : slash - start);
      if (level == "#") {
        sub->hash = true;
        break;
      }
      auto it = n->children.find(level);
      if (it == n->children.end()) {
        auto child = std::make_unique<wildcard_node>();
        child->parent = n;
        child->level = std::string(level);
        it = n->children.emplace(child->level, std::move(child)).first;
      }
      n = it->second.get();
      if (slash == std::string_view::npos)
        break;
      start = slash + 1;
    }
    auto& list = sub->hash ? n->hash_subs : n->subs;
    sub->slot = static_cast<std::uint32_t>(list.size());
    list.push_back(sub.get());
    sub->node = n;
    ++wildcard_subs_;
  }
  add(ctx_.ctr.subscribers_current, 1);
  sub->next = std::move(s.subs);
  s.subs = std::move(sub);
  ++s.subs_count;
  return qos;
}

bool mqtt_router::unsubscribe(mqtt_client_state& s, std::string_view filter) {
  for (std::unique_ptr<mqtt_subscription>* at = &s.subs; *at; at = &(*at)->next)
    if ((*at)->filter == filter) {
      remove(**at);
      *at = std::move((*at)->next); // the old one goes as its owner is replaced
      --s.subs_count;
      return true;
    }
  return false;
}

// Takes `sub` out of its channel or tree node (the caller drops the object).
void mqtt_router::remove(mqtt_subscription& entry) {
  if (entry.chan) {
    auto ch = std::move(entry.chan);
    erase_from(ch->mqtt_subs, entry);
    if (ch->subs.empty() && ch->mqtt_subs.empty())
      ch->unattended_since = steady::now();
    index_.maybe_erase(*ch);
  } else if (entry.node) {
    wildcard_node* n = entry.node;
    erase_from(entry.hash ? n->hash_subs : n->subs, entry);
    entry.node = nullptr;
    --wildcard_subs_;
    // Prune the branch nothing uses any more, so the tree holds only live filters.
    while (n->parent && n->children.empty() && n->subs.empty() && n->hash_subs.empty()) {
      wildcard_node* parent = n->parent;
      const std::string key = n->level; // a copy: erasing destroys the node holding it
      parent->children.erase(key);
      n = parent;
    }
  }
  sub(ctx_.ctr.subscribers_current, 1);
}

void mqtt_router::send_retained(mqtt_client_state& s, std::string_view filter, std::uint8_t qos) {
  if (retained_.empty())
    return;
  auto send = [&](const retained_entry& e) {
    deliver_one(s, e.topic, e.block, 0, e.length, std::min(qos, e.qos), true);
  };
  if (!has_wildcard(filter)) {
    if (auto it = retained_.find(filter); it != retained_.end())
      send(it->second);
  } else {
    // A scan of the retained set (max_retained_messages bounds it), on subscribe only.
    for (const auto& [topic, e] : retained_)
      if (mqtt::topic_matches(filter, topic))
        send(e);
  }
  if (s.conn)
    flush_.mark(*s.conn);
}

// ---------------------------------------------------------------------------------------------
// Publishing

void mqtt_router::retain(std::string_view topic, std::string_view payload, std::uint8_t qos) {
  const mqtt_config& cfg = ctx_.cfg.mqtt;
  auto it = retained_.find(topic);
  if (it != retained_.end()) {
    retained_bytes_ -= it->second.length;
    sub(ctx_.ctr.retained_bytes, it->second.length);
    sub(ctx_.ctr.retained_messages, 1);
    retained_.erase(it);
  }
  if (payload.empty()) // an empty retained message deletes the topic's
    return;
  if (retained_.size() >= cfg.max_retained_messages ||
      retained_bytes_ + payload.size() > cfg.max_retained_bytes)
    return;
  retained_entry e;
  e.block = make_block(payload.size());
  std::memcpy(e.block.get(), payload.data(), payload.size());
  e.length = static_cast<std::uint32_t>(payload.size());
  e.qos = qos;
  e.topic = std::make_shared<const std::string>(topic);
  retained_bytes_ += payload.size();
  add(ctx_.ctr.retained_bytes, payload.size());
  add(ctx_.ctr.retained_messages, 1);
  retained_.emplace(std::string(topic), std::move(e));
}

void mqtt_router::add_target(const mqtt_subscription& sub, const peer* from) {
  mqtt_client_state* s = sub.owner;
  if (sub.no_local && from && s->conn == from)
    return;
  if (s->stamp != stamp_) {
    s->stamp = stamp_;
    s->stamp_qos = sub.qos;
    targets_.push_back(s);
  } else {
    s->stamp_qos = std::max(s->stamp_qos, sub.qos);
  }
}

void mqtt_router::collect(const wildcard_node& n, std::size_t i, bool dollar, const peer* from) {
  // Wildcards at the first level do not match topics starting with '$' (MQTT 4.7.2).
  const bool wild_ok = !(i == 0 && dollar);
  if (wild_ok)
    for (const mqtt_subscription* s : n.hash_subs)
      add_target(*s, from);
  if (i == levels_.size()) {
    for (const mqtt_subscription* s : n.subs)
      add_target(*s, from);
    return;
  }
  if (n.children.empty())
    return;
  if (auto it = n.children.find(levels_[i]); it != n.children.end())
    collect(*it->second, i + 1, dollar, from);
  if (wild_ok)
    if (auto it = n.children.find(std::string_view("+")); it != n.children.end())
      collect(*it->second, i + 1, dollar, from);
}

std::size_t mqtt_router::fan_out(std::string_view channel_name, channel* ch,
                                 std::span<const msg_view> msgs, const peer* from, std::uint8_t qos,
                                 block_ptr& stored) {
  if (!channel_name.starts_with(topic_prefix))
    return 0;
  const std::string_view topic = channel_name.substr(topic_prefix.size());
  if (topic.empty())
    return 0;
  ++stamp_;
  targets_.clear();
  if (ch)
    for (const mqtt_subscription* s : ch->mqtt_subs)
      add_target(*s, from);
  if (wildcard_subs_ > 0) {
    levels_.clear();
    std::size_t start = 0;
    for (;;) {
      const std::size_t slash = topic.find('/', start);
      if (slash == std::string_view::npos) {
        levels_.push_back(topic.substr(start));
        break;
      }
      levels_.push_back(topic.substr(start, slash - start));
      start = slash + 1;
    }
    collect(root_, 0, topic.front() == '$', from);
  }
  if (targets_.empty())
    return 0;

  // QoS 0: one block per protocol version, shared by all its subscribers.
  block_ptr encoded[2];
  std::size_t total[2] = {0, 0};
  std::size_t largest[2] = {0, 0};
  auto encode = [&](int v) {
    const std::uint8_t version = v == 1 ? mqtt::v5 : mqtt::v311;
    std::size_t bytes = 0;
    sizes_[v].clear();
    for (const auto& m : msgs) {
      const std::size_t one =
          mqtt::publish_bytes(version, topic.size(), m.size - frame_header_bytes, 0);
      bytes += one;
      largest[v] = std::max(largest[v], one);
      sizes_[v].push_back(static_cast<std::uint32_t>(one));
    }
    encoded[v] = make_block(bytes);
    char* p = encoded[v].get();
    for (const auto& m : msgs) {
      const std::size_t len = m.size - frame_header_bytes;
      p = mqtt::write_publish_header(p, version, topic, len, 0, false, false, 0);
      std::memcpy(p, m.data + frame_header_bytes, len);
      p += len;
    }
    total[v] = bytes;
  };
  std::shared_ptr<const std::string> topic_copy;
  for (mqtt_client_state* s : targets_) {
    const std::uint8_t q = std::min(qos, s->stamp_qos);
    if (q == 0) {
      mqtt_connection* c = s->conn;
      if (!c || !c->takes_deliveries())
        continue; // QoS 0 is not kept for an absent client
      const int v = c->version_ == mqtt::v5 ? 1 : 0;
      if (!encoded[v])
        encode(v);
      if (c->client_max_packet_ != 0 && largest[v] > c->client_max_packet_) {
        // Rare: the client takes smaller packets than some of these; send those that fit.
        for (const auto& m : msgs) {
          const std::size_t len = m.size - frame_header_bytes;
          if (mqtt::publish_bytes(c->version_, topic.size(), len, 0) > c->client_max_packet_) {
            add(ctx_.ctr.drop_too_large, 1);
            continue;
          }
          enqueue_one(*c, topic, m.data + frame_header_bytes, len, 0, false, false, 0);
          add(ctx_.ctr.deliveries, 1);
        }
        flush_.mark(*c);
        continue;
      }
      offer(*c, encoded[v], total[v], sizes_[v]);
      continue;
    }
    // QoS 1: kept per session, from a copy of the run that outlives the read buffer.
    if (!stored) {
      std::size_t bytes = 0;
      for (const auto& m : msgs)
        bytes += m.size;
      stored = copy_run(msgs, bytes);
    }
    if (!topic_copy)
      topic_copy = std::make_shared<const std::string>(topic);
    std::uint32_t at = 0;
    for (const auto& m : msgs) {
      queue_qos1(*s, mqtt_message{stored, at + static_cast<std::uint32_t>(frame_header_bytes),
                                  m.size - static_cast<std::uint32_t>(frame_header_bytes),
                                  topic_copy, 0, false});
      at += m.size;
    }
    pump(*s);
  }
  return targets_.size();
}

// The slow-consumer policy of the frame protocol's /topic delivery (delivery::offer), for a
// run encoded as MQTT (`sizes`: each packet's bytes): what does not fit is dropped for this
// subscriber only, or it is disconnected.
void mqtt_router::offer(mqtt_connection& c, const block_ptr& block, std::size_t total,
                        std::span<const std::uint32_t> sizes) {
  const config& cfg = ctx_.cfg;
  const std::size_t n = sizes.size();
  if (c.fits(cfg, n, total)) {
    c.enqueue(slice{block, 0, static_cast<std::uint32_t>(total), static_cast<std::uint32_t>(n)});
    add(ctx_.ctr.deliveries, n);
    flush_.mark(c);
    return;
  }
  if (cfg.slow_consumer == slow_consumer_policy::disconnect) {
    add(ctx_.ctr.drop_queue_full, n);
    flush_.defer_close(c, close_reason::slow_consumer);
    return;
  }
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < n && c.fits(cfg, k + 1, bytes + sizes[k]))
    bytes += sizes[k++];
  if (k > 0) {
    // A copy of the prefix, so a long-lived partial slice never pins the whole run.
    block_ptr part = make_block(bytes);
    std::memcpy(part.get(), block.get(), bytes);
    c.enqueue(slice{std::move(part), 0, static_cast<std::uint32_t>(bytes),
                    static_cast<std::uint32_t>(k)});
    add(ctx_.ctr.deliveries, k);
    flush_.mark(c);
  }
  add(ctx_.ctr.drop_queue_full, n - k);
  c.owed_dropped_ += total - bytes;
  if (cfg.hard_limit_bytes > 0 && c.out_bytes_ + c.owed_dropped_ > cfg.hard_limit_bytes)
    flush_.defer_close(c, close_reason::hard_limit);
}

void mqtt_router::enqueue_one(mqtt_connection& c, std::string_view topic, const char* payload,
                              std::size_t length, std::uint8_t qos, bool retain, bool dup,
                              std::uint16_t packet_id) {
  const std::size_t size = mqtt::publish_bytes(c.version_, topic.size(), length, qos);
  block_ptr b = make_block(size);
  char* p =
      mqtt::write_publish_header(b.get(), c.version_, topic, length, qos, retain, dup, packet_id);
  std::memcpy(p, payload, length);
  c.enqueue(slice{std::move(b), 0, static_cast<std::uint32_t>(size), 1});
}

void mqtt_router::deliver_one(mqtt_client_state& s, const std::shared_ptr<const std::string>& topic,
                              const block_ptr& block, std::uint32_t offset, std::uint32_t length,
                              std::uint8_t qos, bool retain) {
  if (qos > 0) {
    queue_qos1(s, mqtt_message{block, offset, length, topic, 0, retain});
    pump(s);
    return;
  }
  mqtt_connection* c = s.conn;
  if (!c || !c->takes_deliveries())
    return;
  if (c->client_max_packet_ != 0 &&
      mqtt::publish_bytes(c->version_, topic->size(), length, 0) > c->client_max_packet_) {
    add(ctx_.ctr.drop_too_large, 1);
    return;
  }
  enqueue_one(*c, *topic, block.get() + offset, length, 0, retain, false, 0);
  add(ctx_.ctr.deliveries, 1);
  flush_.mark(*c);
}

void mqtt_router::queue_qos1(mqtt_client_state& s, mqtt_message m) {
  if (!s.qos1)
    s.qos1 = std::make_unique<mqtt_qos1_queue>();
  auto& pending = s.qos1->pending;
  if (!pending)
    pending = std::make_unique<std::deque<mqtt_message>>();
  if (pending->size() >= ctx_.cfg.mqtt.max_queued_messages) {
    add(ctx_.ctr.drop_queue_full, 1);
    return;
  }
  pending->push_back(std::move(m));
}

// Sends pending QoS 1 messages while the window has room.
void mqtt_router::pump(mqtt_client_state& s) {
  mqtt_connection* c = s.conn;
  if (!s.qos1 || !s.qos1->pending || !c || !c->takes_deliveries())
    return;
  auto& inflight = s.qos1->inflight;
  auto& pending = s.qos1->pending;
  bool sent = false;
  while (inflight.size() < s.window && !pending->empty()) {
    mqtt_message m = std::move(pending->front());
    pending->pop_front();
    if (c->client_max_packet_ != 0 &&
        mqtt::publish_bytes(c->version_, m.topic->size(), m.length, 1) > c->client_max_packet_) {
      add(ctx_.ctr.drop_too_large, 1);
      continue;
    }
    // The next id not in flight (the window is far below 65535, so this ends quickly).
    do {
      if (++s.next_id == 0)
        s.next_id = 1;
    } while (std::any_of(inflight.begin(), inflight.end(),
                         [&](const mqtt_message& f) { return f.packet_id == s.next_id; }));
    m.packet_id = s.next_id;
    enqueue_one(*c, *m.topic, m.block.get() + m.offset, m.length, 1, m.retain, false, m.packet_id);
    add(ctx_.ctr.deliveries, 1);
    inflight.push_back(std::move(m));
    sent = true;
  }
  if (pending->empty()) {
    pending.reset();
    if (inflight.empty())
      s.qos1.reset();
  }
  if (sent)
    flush_.mark(*c);
}

// A resumed session: what was sent and never acknowledged goes again, DUP set, same ids.
void mqtt_router::resend(mqtt_client_state& s) {
  mqtt_connection* c = s.conn;
  if (!c || !s.qos1 || s.qos1->inflight.empty())
    return;
  for (const mqtt_message& m : s.qos1->inflight)
    enqueue_one(*c, *m.topic, m.block.get() + m.offset, m.length, 1, m.retain, true, m.packet_id);
  flush_.mark(*c);
}

void mqtt_router::acknowledged(mqtt_client_state& s, std::uint16_t id) {
  if (!s.qos1)
    return; // nothing owed
  auto& inflight = s.qos1->inflight;
  auto it = std::find_if(inflight.begin(), inflight.end(),
                         [&](const mqtt_message& m) { return m.packet_id == id; });
  if (it == inflight.end())
    return; // a duplicate or stale PUBACK: nothing owed
  inflight.erase(it);
  if (inflight.empty() && !s.qos1->pending) {
    s.qos1.reset();
    return;
  }
  pump(s);
}

} // namespace newsdesk::broker::detail

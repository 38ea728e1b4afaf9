// MQTT's sessions, wills, subscriptions and retained messages (mqtt_router.hpp); delivery is in
// mqtt_fan_out.cpp.
#include "broker/mqtt_router.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <boost/asio/post.hpp>
#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace newsdesk::broker::detail {

namespace {

constexpr std::string_view topic_prefix = "/topic/";
constexpr std::string_view share_prefix = "$share/";

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

block_ptr copy_run(std::span<const msg_view> msgs, std::size_t total) {
  block_ptr block = make_block(total);
  char* p = block.get();
  for (const auto& m : msgs) {
    std::memcpy(p, m.data, m.size);
    p += m.size;
  }
  return block;
}

extras_ptr make_extras(const mqtt::message_properties& p) {
  auto e = std::make_shared<mqtt_extras>();
  mqtt::append_forwarded(e->properties, p.list);
  if (p.has_expiry) {
    e->has_expiry = true;
    e->expires_at = steady::now() + std::chrono::seconds(p.expiry);
  }
  if (e->properties.empty() && !e->has_expiry)
    return nullptr;
  return e;
}

share_name split_share(std::string_view filter) {
  if (!filter.starts_with(share_prefix))
    return {};
  const std::string_view rest = filter.substr(share_prefix.size());
  const auto slash = rest.find('/');
  if (slash == 0 || slash == std::string_view::npos)
    return {};
  const std::string_view group = rest.substr(0, slash);
  const std::string_view inner = rest.substr(slash + 1);
  if (group.find_first_of("+#") != std::string_view::npos || !mqtt::valid_topic_filter(inner))
    return {};
  return {group, inner};
}

bool mqtt_permissions::may_read(std::string_view filter) const {
  return std::any_of(read.begin(), read.end(),
                     [&](const std::string& r) { return mqtt::filter_covers(r, filter); });
}

bool mqtt_permissions::may_write(std::string_view topic) const {
  return std::any_of(write.begin(), write.end(),
                     [&](const std::string& w) { return mqtt::topic_matches(w, topic); });
}

mqtt_router::mqtt_router(context& ctx, channel_index& index, flush_scheduler& flush,
                         address_table& addresses,
                         std::function<void(std::unique_ptr<mqtt_will>)> will_due)
    : ctx_(ctx)
    , index_(index)
    , flush_(flush)
    , addresses_(addresses)
    , will_due_(std::move(will_due)) {
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
// Sessions and wills

std::string mqtt_router::assign_client_id() {
  return "newsdesk-" + std::to_string(++auto_ids_);
}

// After the current step: a will is a publish, and the router may be in the middle of one.
void mqtt_router::will_now(std::unique_ptr<mqtt_will> w) {
  if (!w)
    return;
  boost::asio::post(ctx_.strand, [self = ctx_.keep_alive(this), w = std::move(w)]() mutable {
    self->will_due_(std::move(w));
  });
}

void mqtt_router::drop_will(std::unique_ptr<mqtt_will> w) {
  if (!w || !w->address)
    return;
  address_share& share = w->address->second;
  share.will_bytes -= w->bytes;
  if (share.connections == 0 && share.will_bytes == 0) // its connection went before the will
    addresses_.erase(w->address->first);
}

mqtt_router::attach_result mqtt_router::attach(mqtt_connection& c, std::string_view client_id,
                                               bool clean_start, std::uint32_t expiry_s,
                                               std::uint16_t window) {
  attach_result r;
  if (auto it = states_.find(client_id); it != states_.end()) {
    std::shared_ptr<mqtt_client_state> s = it->second;
    std::unique_ptr<mqtt_will> waiting;
    if (s->conn) {
      // The older connection goes; it no longer owns the session, so its close leaves it be.
      auto old = std::static_pointer_cast<mqtt_connection>(s->conn->shared_from_this());
      old->state_.reset();
      s->conn = nullptr;
      waiting = std::move(old->will_);
      old->end(close_reason::mqtt_taken_over, mqtt::reason::session_taken_over);
    } else {
      --kept_;
      if (s->held)
        waiting = std::move(s->held->will);
    }
    // A will without delay goes now; a delayed one goes if the session ends here, and is
    // dropped when a connection takes the session on before the delay passed.
    if (waiting && (waiting->delay_s == 0 || clean_start))
      will_now(std::move(waiting));
    else
      drop_will(std::move(waiting));
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
    if (r.state->held && r.state->held->empty())
      r.state->held.reset();
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

void mqtt_router::detach(mqtt_connection& c, std::unique_ptr<mqtt_will> will) {
  std::shared_ptr<mqtt_client_state> s = std::move(c.state_);
  if (!s || s->conn != &c) {
    drop_will(std::move(will));
    return;
  }
  s->conn = nullptr;
  if (s->expiry_s == 0 || (will && will->delay_s == 0)) {
    will_now(std::move(will)); // no delay, or the session ends now
  } else if (will) {
    if (!s->held)
      s->held = std::make_unique<mqtt_held>();
    s->held->will_at = steady::now() + std::chrono::seconds(std::min(will->delay_s, s->expiry_s));
    s->held->will = std::move(will);
  }
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
  for (const auto& [id, s] : states_) {
    if (s->conn)
      continue;
    if (s->held && s->held->will && s->held->will_at <= now)
      will_now(std::move(s->held->will));
    if (s->expires_at <= now)
      done.push_back(s);
  }
  for (const auto& s : done) {
    --kept_;
    if (s->held)
      will_now(std::move(s->held->will)); // the session ends: its will goes now
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
  if (s->held) {
    mqtt_held& h = *s->held;
    add(ctx_.ctr.drop_disconnected, h.inflight.size() + (h.pending ? h.pending->size() : 0));
    drop_will(std::move(h.will));
    s->held.reset();
  }
  if (auto it = states_.find(s->client_id); it != states_.end() && it->second == s) {
    states_.erase(it);
    sub(ctx_.ctr.mqtt_sessions_current, 1);
  }
}

mqtt_router::qos2_receipt mqtt_router::receive_qos2(mqtt_client_state& s, std::uint16_t id) {
  if (!s.held)
    s.held = std::make_unique<mqtt_held>();
  auto& ids = s.held->awaiting_rel;
  const auto at = std::lower_bound(ids.begin(), ids.end(), id);
  if (at != ids.end() && *at == id)
    return qos2_receipt::duplicate;
  if (ids.size() >= ctx_.cfg.mqtt.receive_maximum)
    return qos2_receipt::over_limit;
  ids.insert(at, id);
  return qos2_receipt::fresh;
}

bool mqtt_router::release_qos2(mqtt_client_state& s, std::uint16_t id) {
  if (!s.held)
    return false;
  auto& ids = s.held->awaiting_rel;
  const auto at = std::lower_bound(ids.begin(), ids.end(), id);
  if (at == ids.end() || *at != id)
    return false;
  ids.erase(at);
  if (s.held->empty())
    s.held.reset();
  return true;
}

// ---------------------------------------------------------------------------------------------
// Subscriptions

std::uint8_t mqtt_router::subscribe(mqtt_client_state& s, std::string_view filter,
                                    const subscribe_options& opts, bool& existed) {
  existed = false;
  for (mqtt_subscription* sub = s.subs.get(); sub; sub = sub->next.get())
    if (sub->filter == filter) {
      sub->qos = opts.qos;
      sub->no_local = opts.no_local;
      sub->retain_as_published = opts.retain_as_published;
      sub->id = opts.id;
      existed = true;
      return opts.qos;
    }
  if (s.subs_count >= ctx_.cfg.mqtt.max_subscriptions ||
      s.subs_count == std::numeric_limits<std::uint16_t>::max())
    return mqtt::reason::quota_exceeded;
  const share_name shared = split_share(filter);
  const std::string_view matched = shared.filter.empty() ? filter : shared.filter;
  if (!has_wildcard(matched) && topic_prefix.size() + matched.size() > ctx_.cfg.max_channel_name)
    return mqtt::reason::topic_filter_invalid;
  auto sub = std::make_unique<mqtt_subscription>();
  sub->owner = &s;
  sub->filter = std::string(filter);
  sub->qos = opts.qos;
  sub->no_local = opts.no_local;
  sub->retain_as_published = opts.retain_as_published;
  sub->id = opts.id;
  if (shared.filter.empty()) {
    place(*sub, matched);
    if (!sub->chan && !sub->node)
      return mqtt::reason::quota_exceeded; // max_channels
  } else {
    auto it = groups_.find(filter);
    if (it == groups_.end()) {
      auto g = std::make_unique<mqtt_share_group>();
      g->key = std::string(filter);
      g->entry.group = g.get();
      g->entry.filter = std::string(matched);
      place(g->entry, matched);
      if (!g->entry.chan && !g->entry.node)
        return mqtt::reason::quota_exceeded; // max_channels
      it = groups_.emplace(g->key, std::move(g)).first;
    }
    mqtt_share_group& g = *it->second;
    sub->group = &g;
    sub->slot = static_cast<std::uint32_t>(g.members.size());
    g.members.push_back(sub.get());
  }
  add(ctx_.ctr.subscribers_current, 1);
  sub->next = std::move(s.subs);
  s.subs = std::move(sub);
  ++s.subs_count;
  return opts.qos;
}

// Puts `sub` where publishes find it: its channel (no wildcard) or its node of the tree. A
// channel that would be one too many leaves it nowhere (the caller refuses the filter).
void mqtt_router::place(mqtt_subscription& sub, std::string_view filter) {
  if (!has_wildcard(filter)) {
    std::string name(topic_prefix);
    name += filter;
    auto ch = index_.find_or_create(name);
    if (!ch)
      return;
    sub.slot = static_cast<std::uint32_t>(ch->mqtt_subs.size());
    ch->mqtt_subs.push_back(&sub);
    ch->unattended_since = {};
    sub.chan = std::move(ch);
    return;
  }
  wildcard_node* n = &root_;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = filter.find('/', start);
    const std::string_view level = filter.substr(
        start, slash == std::string_view::npos ? filter.size() - start : slash - start);
    if (level == "#") {
      sub.hash = true;
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
  auto& list = sub.hash ? n->hash_subs : n->subs;
  sub.slot = static_cast<std::uint32_t>(list.size());
  list.push_back(&sub);
  sub.node = n;
  ++wildcard_subs_;
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

// Takes a session's subscription out of its channel, tree node or group (the caller drops the
// object); a group left without members leaves the index and goes.
void mqtt_router::remove(mqtt_subscription& entry) {
  if (mqtt_share_group* g = entry.group) {
    erase_from(g->members, entry);
    entry.group = nullptr;
    if (g->members.empty()) {
      unplace(g->entry);
      const std::string key = g->key; // a copy: erasing destroys the group holding it
      groups_.erase(key);
    }
  } else {
    unplace(entry);
  }
  sub(ctx_.ctr.subscribers_current, 1);
}

void mqtt_router::unplace(mqtt_subscription& entry) {
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
}

// ---------------------------------------------------------------------------------------------
// Retained messages

void mqtt_router::retain(std::string_view topic, std::string_view payload, std::uint8_t qos,
                         extras_ptr extras) {
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
  e.extras = std::move(extras);
  retained_bytes_ += payload.size();
  add(ctx_.ctr.retained_bytes, payload.size());
  add(ctx_.ctr.retained_messages, 1);
  retained_.emplace(std::string(topic), std::move(e));
}

void mqtt_router::send_retained(mqtt_client_state& s, std::string_view filter, std::uint8_t qos,
                                std::uint32_t id) {
  if (retained_.empty())
    return;
  const auto now = steady::now();
  std::vector<std::string> expired;
  auto send = [&](const retained_entry& e) {
    if (e.extras && e.extras->has_expiry && e.extras->expires_at <= now) {
      expired.push_back(*e.topic);
      return;
    }
    extras_ptr extras = e.extras;
    if (id != 0) {
      auto own = std::make_shared<mqtt_extras>(e.extras ? *e.extras : mqtt_extras{});
      mqtt::append_subscription_id_property(own->properties, id);
      extras = std::move(own);
    }
    deliver_one(s, e.topic, e.block, 0, e.length, std::min(qos, e.qos), true, extras);
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
  for (const auto& topic : expired) {
    add(ctx_.ctr.drop_expired, 1);
    retain(topic, {}, 0);
  }
  if (s.conn)
    flush_.mark(*s.conn);
}

} // namespace newsdesk::broker::detail

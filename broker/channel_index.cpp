#include "broker/channel_index.hpp"

#include "broker/peer.hpp"

namespace newsdesk::broker::detail {

std::shared_ptr<channel> channel_index::find(std::string_view name) const {
  if (auto it = channels_.find(name); it != channels_.end())
    return it->second;
  return nullptr;
}

std::shared_ptr<channel> channel_index::find_or_create(std::string_view name, bool always) {
  if (auto it = channels_.find(name); it != channels_.end())
    return it->second;
  if (channels_.size() >= ctx_.cfg.max_channels && !always)
    return nullptr;
  auto ch = std::make_shared<channel>();
  ch->name = std::string(name);
  ch->is_queue = is_queue_name(name);
  ch->unattended_since = steady::now();
  channels_.emplace(ch->name, ch);
  add(ctx_.ctr.channels_current, 1);
  return ch;
}

void channel_index::maybe_erase(channel& ch) {
  if (ch.subs.empty() && ch.locals.empty() && ch.mqtt_subs.empty() && ch.backlog.empty() &&
      ch.blocked.empty()) {
    // Only the table's own entry: a channel erased before may still be referenced by a step
    // posted earlier, and a new one of the same name must not go with it.
    if (auto it = channels_.find(ch.name); it != channels_.end() && it->second.get() == &ch) {
      channels_.erase(it);
      sub(ctx_.ctr.channels_current, 1);
    }
  }
}

bool channel_index::subscribe(peer& p, std::string_view name) {
  auto ch = find_or_create(name);
  if (!ch)
    return false;
  p.chan_index_ = ch->subs.size();
  ch->subs.push_back(&p);
  ch->unattended_since = {};
  add(ctx_.ctr.subscribers_current, 1);
  p.chan_ = std::move(ch);
  return true;
}

void channel_index::unsubscribe(peer& p) {
  auto ch = std::move(p.chan_);
  peer* last = ch->subs.back();
  ch->subs[p.chan_index_] = last;
  last->chan_index_ = p.chan_index_;
  ch->subs.pop_back();
  if (ch->rr >= ch->subs.size())
    ch->rr = 0;
  if (ch->subs.empty())
    ch->unattended_since = steady::now();
  sub(ctx_.ctr.subscribers_current, 1);
  maybe_erase(*ch);
}

void channel_index::subscribe_local(const std::shared_ptr<local_subscriber>& s,
                                    std::string_view name) {
  auto ch = find_or_create(name, true);
  ch->locals.push_back(s);
  s->chan = ch.get();
  add(ctx_.ctr.subscribers_current, 1);
}

void channel_index::unsubscribe_local(local_subscriber& s) {
  channel* ch = s.chan;
  if (ch == nullptr) // never registered, or already dropped by a shutdown
    return;
  std::erase_if(ch->locals, [&](const auto& p) { return p.get() == &s; });
  drop_local(s);
  sub(ctx_.ctr.subscribers_current, 1);
  maybe_erase(*ch);
}

void channel_index::drop_local(local_subscriber& s) {
  s.cancelled.store(true);
  s.chan = nullptr;
  s.handler = nullptr;
}

void channel_index::clear() {
  for (auto& [name, ch] : channels_) {
    for (auto& s : ch->locals) {
      drop_local(*s);
      sub(ctx_.ctr.subscribers_current, 1);
    }
    ch->locals.clear();
  }
  channels_.clear();
}

} // namespace newsdesk::broker::detail

#include "server/views/representation_cache.hpp"

#include "server/core/log.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace newsdesk::server {

namespace {
std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
} // namespace

representation_cache::representation_cache(std::size_t max_unpinned_bytes,
                                           std::size_t max_unpinned_entries)
    : max_bytes_(max_unpinned_bytes)
    , max_entries_(max_unpinned_entries) {}

void representation_cache::get(const std::string& key, std::uint64_t version, bool pinned,
                               const boost::asio::any_io_executor& build_on, builder build,
                               handler done) {
  std::shared_ptr<const representation> previous;
  {
    std::unique_lock lock(mutex_);
    auto [it, added] = entries_.try_emplace(key);
    auto& e = it->second;
    if (added) {
      e.pinned = pinned;
      if (!pinned)
        e.lru = lru_.insert(lru_.begin(), key);
    } else if (!e.pinned) {
      lru_.splice(lru_.begin(), lru_, e.lru);
    }
    // A newer version than asked for is as good (snapshots may be handled out of order).
    if (e.ready && e.version >= version) {
      ++counters_.hits;
      auto ready = e.ready;
      lock.unlock(); // answer outside the lock: `done` may write to a socket
      done(std::move(ready));
      return;
    }
    ++counters_.misses;
    e.waiting.emplace_back(version, std::move(done));
    if (e.building_version >= version && e.building)
      return; // a build under way answers this request too
    if (e.building >= max_builds) {
      // Builds for older versions hold the entry's share: this version waits for one of them to
      // end, and only the newest asked for (with changes every few milliseconds, builds started
      // for each would pile up, each holding its snapshot).
      if (!e.next || e.next->version < version) {
        if (e.next)
          ++counters_.superseded;
        e.next = pending_build{version, build_on, std::move(build)};
      }
      return;
    }
    ++e.building;
    e.building_version = version;
    previous = e.ready;
  }
  launch(key, version, build_on, std::move(build), std::move(previous));
}

void representation_cache::launch(const std::string& key, std::uint64_t version,
                                  const boost::asio::any_io_executor& build_on, builder build,
                                  std::shared_ptr<const representation> previous) {
  boost::asio::post(
      build_on, [this, key, version, build = std::move(build), previous = std::move(previous)] {
        std::shared_ptr<const representation> built;
        try {
          auto c = build();
          // The same bytes again: keep what clients already hold (same ETag and
          // Last-Modified).
          if (previous && previous->content_type() == c.content_type &&
              previous->etag() == representation::tag_of(c.bytes))
            built = previous;
          else
            built = representation::make(std::move(c.content_type), c.bytes, unix_ms_now(),
                                         c.cache_control, c.headers, c.effort);
        } catch (const std::exception& e) {
          log_error("msg=\"cannot build a representation\" key=" + logfmt_quoted(key) +
                    " error=" + logfmt_quoted(e.what()));
        }
        finish(key, version, std::move(built));
      });
}

void representation_cache::finish(const std::string& key, std::uint64_t version,
                                  std::shared_ptr<const representation> built) {
  std::vector<handler> answered;
  std::optional<pending_build> next;
  std::shared_ptr<const representation> previous;
  // What this replaces or evicts is freed once the lock is released: a network thread may wait
  // for the lock, and this thread runs below serving.
  std::vector<std::shared_ptr<const representation>> released;
  {
    std::lock_guard lock(mutex_);
    // Entries being built are never dropped or evicted.
    auto& e = entries_.at(key);
    ++counters_.builds;
    if (e.ready && e.version > version) {
      built = e.ready; // something newer got in first (never replaced by older)
      version = e.version;
    } else if (built) {
      if (built == e.ready)
        ++counters_.unchanged;
      if (!e.pinned && e.ready)
        unpinned_bytes_ -= e.ready->bytes();
      released.push_back(std::exchange(e.ready, built));
      e.version = version;
      if (!e.pinned)
        unpinned_bytes_ += built->bytes();
    }
    --e.building;
    if (e.next) {
      next = std::move(e.next);
      e.next.reset();
      ++e.building;
      e.building_version = std::max(e.building_version, next->version);
      previous = e.ready;
    }
    // Those who asked for the version now held or an older one have their answer; those who
    // asked for a newer one wait for the build of it under way: nobody waits for more than the
    // builds under way and one more. With none left (a build failed), everyone is answered.
    std::erase_if(e.waiting, [&](auto& w) {
      if (e.building && w.first > std::max(version, e.version))
        return false;
      answered.push_back(std::move(w.second));
      return true;
    });
    if (!e.building)
      evict_locked(released);
  }
  for (auto& w : answered)
    w(built);
  if (next)
    launch(key, next->version, next->build_on, std::move(next->build), std::move(previous));
}

void representation_cache::evict_locked(
    std::vector<std::shared_ptr<const representation>>& evicted) {
  while ((unpinned_bytes_ > max_bytes_ || lru_.size() > max_entries_) && !lru_.empty()) {
    auto it = entries_.find(lru_.back());
    if (it->second.building)
      break; // its build will answer someone: keep it until then
    if (it->second.ready) {
      unpinned_bytes_ -= it->second.ready->bytes();
      evicted.push_back(std::move(it->second.ready));
    }
    lru_.pop_back();
    entries_.erase(it);
    ++counters_.evictions;
  }
}

representation_cache::counters representation_cache::stats() const {
  std::lock_guard lock(mutex_);
  auto c = counters_;
  c.entries = entries_.size();
  c.bytes = unpinned_bytes_;
  for (const auto& [key, e] : entries_)
    if (e.pinned && e.ready)
      c.bytes += e.ready->bytes();
  return c;
}

} // namespace newsdesk::server

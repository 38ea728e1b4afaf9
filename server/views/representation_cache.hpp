// The bytes newsdesk answers /news, /news.json and the feeds with, built once per change.
//
// Each entry is one representation (a path with a normalised query) for one version of the
// headlines. A request finds it ready and is answered at once with precompressed bytes; a
// representation that is missing or older than the request's version is built on the worker
// pool, never on a network thread, once: requests that arrive while it builds wait for that
// build. At most two builds per entry at a time (a newer version need not wait for an older
// build, but builds cannot pile up): a newer version asked for beyond that is built next, and
// only the newest (the others are superseded, never built). When a rebuild produces the same bytes,
// the previous representation is kept (same ETag, same Last-Modified, no compression).
//
// Pinned entries (the unfiltered views) are kept and rebuilt on every change; the others (a
// site's own view, q=, limit=, several sites, /news of each minute) live in an LRU bounded by
// bytes and by entries (each holds descriptors: memfds), rebuilt when asked for a newer version
// than they hold.
//
// Threads: all members may be called from any thread.
#pragma once

#include "server/http/representation.hpp"

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

namespace newsdesk::server {

class representation_cache {
 public:
  struct content {
    std::string content_type;
    std::string bytes;
    std::string cache_control = "no-cache"; // and `headers` with a 200: see representation::make
    header_list headers;
    compression effort = compression::best;
  };
  using builder = std::function<content()>;
  using handler = std::function<void(std::shared_ptr<const representation>)>;

  struct counters {
    std::uint64_t hits = 0, misses = 0, builds = 0, unchanged = 0, evictions = 0;
    std::uint64_t superseded = 0; // versions never built: a newer one was asked for first
    std::size_t entries = 0, bytes = 0;
  };

  representation_cache(std::size_t max_unpinned_bytes, std::size_t max_unpinned_entries);

  // Calls `done` with the representation under `key` for `version`: at once when it is ready,
  // else when the build (started now on `build_on`, or already running) finishes, on the thread
  // that built it. A build that throws answers null.
  void get(const std::string& key, std::uint64_t version, bool pinned,
           const boost::asio::any_io_executor& build_on, builder build, handler done);

  counters stats() const;

  // Unpinned entries share this many bytes by default: hundreds of filtered views.
  static constexpr std::size_t default_max_bytes = 32 * 1024 * 1024;

 private:
  // The build to start when the one under way ends.
  struct pending_build {
    std::uint64_t version = 0;
    boost::asio::any_io_executor build_on;
    builder build;
  };
  struct entry {
    std::uint64_t version = 0;
    bool pinned = false;
    unsigned building = 0;              // builds under way (at most max_builds)
    std::uint64_t building_version = 0; // the newest of them
    std::optional<pending_build> next;
    std::shared_ptr<const representation> ready;
    std::vector<std::pair<std::uint64_t, handler>> waiting; // with the version each asked for
    std::list<std::string>::iterator lru;                   // unpinned only
  };
  static constexpr unsigned max_builds = 2; // per entry at a time
  void launch(const std::string& key, std::uint64_t version,
              const boost::asio::any_io_executor& build_on, builder build,
              std::shared_ptr<const representation> previous);
  void finish(const std::string& key, std::uint64_t version,
              std::shared_ptr<const representation> built);
  // Drops least recently used entries past the bounds; their bytes go to `evicted`, to be freed
  // once the lock is released.
  void evict_locked(std::vector<std::shared_ptr<const representation>>& evicted);

  const std::size_t max_bytes_;
  const std::size_t max_entries_;
  mutable std::mutex mutex_;
  std::map<std::string, entry> entries_;
  std::list<std::string> lru_; // unpinned keys, most recently used first
  std::size_t unpinned_bytes_ = 0;
  counters counters_;
};

} // namespace newsdesk::server

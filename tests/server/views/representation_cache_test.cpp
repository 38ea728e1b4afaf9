#include "server/views/representation_cache.hpp"

#include <boost/asio/thread_pool.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

using namespace newsdesk::server;

namespace {

// Gets `key` (building "bytes of KEY" when missing) and waits for the answer.
std::shared_ptr<const representation> get(representation_cache& cache,
                                          boost::asio::thread_pool& pool, const std::string& key,
                                          bool pinned) {
  std::promise<std::shared_ptr<const representation>> answered;
  cache.get(
      key, 1, pinned, pool.get_executor(),
      [key] {
        representation_cache::content c;
        c.content_type = "text/plain";
        c.bytes = "bytes of " + key;
        c.effort = compression::quick;
        return c;
      },
      [&](std::shared_ptr<const representation> r) { answered.set_value(std::move(r)); });
  return answered.get_future().get();
}

} // namespace

TEST_CASE("the cache holds at most its number of unpinned views, the least recently used go") {
  boost::asio::thread_pool pool(1);
  representation_cache cache(1 << 20, 3); // bytes are no constraint here: entries are
  for (const auto* key : {"a", "b", "c"})
    REQUIRE(get(cache, pool, key, false));
  CHECK(cache.stats().entries == 3);
  REQUIRE(get(cache, pool, "a", false)); // "a" used again: "b" is now the least recent
  CHECK(cache.stats().hits == 1);
  REQUIRE(get(cache, pool, "d", false));
  auto stats = cache.stats();
  CHECK(stats.entries == 3);
  CHECK(stats.evictions == 1);
  REQUIRE(get(cache, pool, "a", false));
  CHECK(cache.stats().hits == 2); // still there
  REQUIRE(get(cache, pool, "b", false));
  CHECK(cache.stats().builds == 5); // "b" was built again

  // Pinned views are outside the bound: they stay, and evict nothing.
  for (const auto* key : {"p1", "p2", "p3", "p4"})
    REQUIRE(get(cache, pool, key, true));
  stats = cache.stats();
  CHECK(stats.entries == 7);
  CHECK(stats.evictions == 2);
  pool.join();
}

TEST_CASE("at most two builds per view at a time: versions asked for beyond that are built "
          "once, the newest only, and every request is answered") {
  boost::asio::thread_pool pool(1);
  representation_cache cache(1 << 20, 16);
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> building{0};
  std::vector<std::uint64_t> built_versions;
  std::mutex mutex;
  auto builder = [&](std::uint64_t version) {
    return [&, version] {
      ++building;
      released.wait(); // the first build holds the pool until the test lets it go
      {
        std::lock_guard lock(mutex);
        built_versions.push_back(version);
      }
      representation_cache::content c;
      c.content_type = "text/plain";
      c.bytes = "version " + std::to_string(version);
      c.effort = compression::quick;
      return c;
    };
  };
  std::vector<std::future<std::string>> answers;
  std::vector<std::promise<std::string>> promises(4);
  for (std::uint64_t v = 1; v <= 4; ++v) {
    answers.push_back(promises[v - 1].get_future());
    cache.get("/news", v, false, pool.get_executor(), builder(v),
              [&promises, v](std::shared_ptr<const representation> r) {
                promises[v - 1].set_value(r ? r->etag() : "null");
              });
  }
  release.set_value();
  std::vector<std::string> etags;
  for (auto& a : answers)
    etags.push_back(a.get()); // everyone is answered
  pool.join();
  // Version 2 did not wait for version 1's build; 3 and 4 waited for a build to end, and then
  // only 4 was built. Each request has the version it asked for or a newer one.
  CHECK(etags[0] == representation::tag_of("version 1"));
  CHECK(etags[1] == representation::tag_of("version 2"));
  CHECK(etags[2] == representation::tag_of("version 4"));
  CHECK(etags[3] == representation::tag_of("version 4"));
  CHECK(built_versions == std::vector<std::uint64_t>{1, 2, 4}); // 3 was superseded
  auto stats = cache.stats();
  CHECK(stats.builds == 3);
  CHECK(stats.superseded == 1);
}

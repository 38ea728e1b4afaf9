#include "server/app/representation_cache.hpp"

#include <boost/asio/thread_pool.hpp>
#include <doctest/doctest.h>

#include <future>
#include <string>

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

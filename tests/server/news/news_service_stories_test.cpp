// A cluster instance's headlines follow the stories other instances decide: the news service
// reading another instance's commits from a shared store (apply_events), with title_grouping
// (tests/server/store/store_test_support.hpp) deciding the stories there.
#include "server/news/news_service.hpp"

#include "server/news/news_clock.hpp"
#include "server/store/postgres_store.hpp"

#include "tests/server/store/store_test_support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <doctest/doctest.h>

#include <map>

using namespace newsdesk::server;
using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

// Never answers: nothing in these tests renders (the manual clock is never moved on).
class silent_renderer final : public renderer {
 public:
  std::string_view name() const override { return "silent"; }
  void render(render_request, std::function<void(render_result)>) override {}
};

std::map<std::string, std::int64_t> stories_shown(const news_service& service) {
  std::map<std::string, std::int64_t> out; // title -> story
  for (const auto& h : service.snapshot()->headlines)
    out[h.headline.title] = h.story;
  return out;
}

} // namespace

TEST_CASE("an instance's headlines follow a story merge another instance made, also when it came "
          "with a site this instance does not show") {
  const auto url = postgres_cluster::shared().fresh_database();
  // The other instance, which writes (and so decides the stories), and this one's own store.
  auto seen = std::make_shared<title_grouping::observed>();
  auto other = postgres_store::open(url, title_grouping::options(seen));
  auto store = postgres_store::open(url);

  boost::asio::io_context ioc;
  boost::asio::thread_pool pool{1};
  manual_clock clock;
  silent_renderer silent;
  site_config a;
  a.name = "a";
  a.url = "https://a.test/";
  a.renderer = "silent";
  news_service service(ioc, {a}, {{"silent", &silent}}, pool, pool.get_executor(), store.get(), {},
                       news_service_seams{&clock, 1});
  service.start();

  other->record_refresh("a", page({{"Quake", "https://a/1"}, {"Fire", "https://a/2"}}), at(1000));
  service.apply_events(store->events_after(0, 10));
  auto shown = stories_shown(service);
  REQUIRE(shown.size() == 2);
  const auto quake = shown.at("Quake");
  CHECK(shown.at("Fire") != quake);

  // The merge comes with a site this instance does not show: a's headlines move all the same.
  other->record_refresh("elsewhere", page({{"Quake + Fire", "https://e/1"}}), at(2000));
  service.apply_events(store->events_after(1, 10));
  shown = stories_shown(service);
  CHECK(shown == std::map<std::string, std::int64_t>{{"Quake", quake}, {"Fire", quake}});

  service.stop();
  pool.join();
}

// Live events as a client of /events reads them: the stream handed to the route's responder.
#include "server/live/live_events.hpp"

#include "server/news/headline_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <thread>

using namespace newsdesk::server;
using json = nlohmann::json;

namespace {

news_item item(std::int64_t id, const std::string& site, std::int64_t story) {
  news_item i;
  i.id = id;
  i.headline = {"Headline " + std::to_string(id), "https://" + site + ".test/" + std::to_string(id),
                site};
  i.story = story;
  i.first_seen_ms = 1000 * id;
  return i;
}

// An /events client: the stream its request was answered with, and what it has read so far.
struct client {
  std::shared_ptr<event_stream> stream;
  std::string received;

  client(live_events& live, const std::string& target) {
    std::promise<std::shared_ptr<event_stream>> answered;
    live.handle(http_request{"GET", target, {}, {}, {}},
                [&](http_response res) { answered.set_value(res.stream); });
    stream = answered.get_future().get();
    REQUIRE(stream);
  }

  // Reads until `text` has arrived, for a second at most.
  bool wait_for(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (received.find(text) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      for (const auto& chunk : stream->take())
        received += *chunk;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return received.find(text) != std::string::npos;
  }

  // The data of every `event: story`, parsed.
  std::vector<json> stories() const {
    std::vector<json> out;
    const std::string marker = "event: story\ndata: ";
    for (auto at = received.find(marker); at != std::string::npos;
         at = received.find(marker, at + 1)) {
      const auto start = at + marker.size();
      out.push_back(json::parse(received.substr(start, received.find('\n', start) - start)));
    }
    return out;
  }
};

} // namespace

TEST_CASE("live events: a headline that joined a story is followed by a story event with its "
          "sources; filters apply to both") {
  // The pool outlives the io_context: handlers still queued on the io_context when it is
  // destroyed hold the live events' state, whose strand runs on the pool.
  boost::asio::thread_pool pool(1);
  boost::asio::io_context ioc;
  live_events live(ioc, pool, nullptr,
                   {{"a", {"Site A", "#111111"}}, {"b", {"Site B", "#222222"}}});
  client everything(live, "/events");
  client only_a(live, "/events?site=a");

  // b's headline 2 joined story 1, which a's headline 1 started, told by 2 sites now; a's
  // headline 3 starts its own.
  live.publish({item(2, "b", 1), item(3, "a", 3)}, {{1, 2}});

  REQUIRE(everything.wait_for("Headline 3"));
  CHECK(everything.received.find("event: headline\ndata: ") != std::string::npos);
  auto stories = everything.stories();
  REQUIRE(stories.size() == 1);
  CHECK(stories[0].at("story") == 1);
  CHECK(stories[0].at("sources") == 2);
  CHECK(stories[0].at("headline").at("id") == 2);
  CHECK(stories[0].at("headline").at("site_display_name") == "Site B");
  // The story event follows its headline's event and carries no id of its own (Last-Event-ID
  // stays the headline's).
  const auto story_at = everything.received.find("event: story");
  CHECK(everything.received.find("\"title\":\"Headline 2\"") < story_at);
  CHECK(everything.received.rfind("id: ", story_at) < everything.received.find("Headline 2"));

  REQUIRE(only_a.wait_for("Headline 3"));
  CHECK(only_a.received.find("Headline 2") == std::string::npos);
  CHECK(only_a.stories().empty());

  // Without its sources a headline's story is not told: no story event.
  live.publish({item(4, "a", 1)});
  REQUIRE(everything.wait_for("Headline 4"));
  CHECK(everything.stories().size() == 1);
  live.stop();
  pool.join();
}

TEST_CASE("live events: clients starting over share one reset, made once per snapshot and filter") {
  boost::asio::thread_pool pool(1);
  boost::asio::io_context ioc;
  auto store = open_store(":memory:");
  live_events live(ioc, pool, store.get(),
                   {{"a", {"Site A", "#111111"}}, {"b", {"Site B", "#222222"}}});
  auto first = std::make_shared<news_snapshot>();
  first->version = 1;
  first->headlines = {item(2, "b", 2), item(1, "a", 1)};
  first->last_id = 2;
  std::shared_ptr<const news_snapshot> current = first;
  live.set_snapshot_source([&] { return current; });

  // An id that cannot be replayed (malformed, another store's): a reset with what is shown.
  const auto reset_of = [&](const std::string& target) {
    client c(live, target);
    REQUIRE(c.wait_for("event: reset"));
    return c;
  };
  auto one = reset_of("/events?after=garbage");
  auto two = reset_of("/events?after=0123:5");
  CHECK(one.received.find("id: ") != std::string::npos);
  CHECK(one.received.find(":2\nevent: reset\ndata: ") != std::string::npos);
  CHECK(one.received.find("Headline 1") != std::string::npos);
  CHECK(one.received.find("Headline 2") != std::string::npos);

  // The same bytes, not a copy each: a third client's reset is the very buffer of the others.
  client three(live, "/events?after=x");
  const auto shared_three = [&] {
    for (int i = 0; i < 100; ++i) {
      auto chunks = three.stream->take();
      for (const auto& chunk : chunks)
        if (chunk->find("event: reset") != std::string::npos)
          return chunk;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return event_stream::chunk();
  }();
  client four(live, "/events?after=y");
  event_stream::chunk shared_four;
  for (int i = 0; i < 100 && !shared_four; ++i) {
    for (const auto& chunk : four.stream->take())
      if (chunk->find("event: reset") != std::string::npos)
        shared_four = chunk;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(shared_three);
  CHECK(shared_three.get() == shared_four.get());

  // A filter has its own; a new snapshot, new ones.
  auto only_a = reset_of("/events?site=a&after=z");
  CHECK(only_a.received.find("Headline 2") == std::string::npos);
  auto second = std::make_shared<news_snapshot>(*first);
  second->version = 2;
  second->headlines = {item(3, "a", 3), item(2, "b", 2), item(1, "a", 1)};
  second->last_id = 3;
  current = second;
  auto later = reset_of("/events?after=q");
  CHECK(later.received.find(":3\nevent: reset") != std::string::npos);
  CHECK(later.received.find("Headline 3") != std::string::npos);
  live.stop();
  pool.join();
}

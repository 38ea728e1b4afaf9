#include "server/news/headline.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace newsdesk::server;

namespace {

news_item item(std::int64_t id, std::string title, std::string url, std::string site,
               std::int64_t first_seen_ms, bool is_new) {
  news_item i;
  i.id = id;
  i.headline = {std::move(title), std::move(url), std::move(site)};
  i.first_seen_ms = first_seen_ms;
  i.is_new = is_new;
  return i;
}

} // namespace

TEST_CASE("a headline has one JSON shape: id, title, url, site, first_seen (UTC), rank, new and "
          "story") {
  auto i = item(42, "Title", "https://a.example/1", "cnn", 1'795'000'000'123, true);
  i.rank = 3;
  i.story = 40;
  nlohmann::json j = i;
  CHECK(j == nlohmann::json{{"id", 42},
                            {"title", "Title"},
                            {"url", "https://a.example/1"},
                            {"site", "cnn"},
                            {"first_seen", "2026-11-18T11:06:40.123Z"},
                            {"rank", 3},
                            {"new", true},
                            {"story", 40}});
}

TEST_CASE("a batch of headlines is a JSON array in order, with invalid UTF-8 replaced") {
  auto text = headlines_json({item(1, "One", "https://a/1", "a", 0, false),
                              item(2, "Bad \xff byte", "https://a/2", "a", 0, true)});
  auto batch = nlohmann::json::parse(text);
  REQUIRE(batch.is_array());
  REQUIRE(batch.size() == 2);
  CHECK(batch[0].at("id") == 1);
  CHECK(batch[1].at("title") == "Bad \xEF\xBF\xBD byte");
  CHECK(batch[0].at("first_seen") == "1970-01-01T00:00:00.000Z");
  CHECK(headlines_json({}) == "[]");
}

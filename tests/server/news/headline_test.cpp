#include "server/news/headline.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <set>

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

TEST_CASE("a headline has one JSON shape: id, title, url, site, first_seen (UTC), page_time, rank, "
          "new and story") {
  auto i = item(42, "Title", "https://a.example/1", "cnn", 1'795'000'000'123, true);
  i.rank = 3;
  i.batch_rank = 2; // two of its site's headlines of the same refresh come before it
  i.story = 40;
  nlohmann::json j = i;
  CHECK(j == nlohmann::json{{"id", 42},
                            {"title", "Title"},
                            {"url", "https://a.example/1"},
                            {"site", "cnn"},
                            {"first_seen", "2026-11-18T11:06:40.123Z"},
                            {"page_time", "2026-11-18T11:04:40.123Z"},
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

TEST_CASE("a story update wraps the headline's JSON as made once, keys in nlohmann's order") {
  auto one = item(7, "Quake \"strikes\"", "https://a/7", "a", 0, true);
  one.story = 3;
  const auto text = story_update_json(one.story, headline_json(one), 2);
  const nlohmann::json expected = {{"story", 3}, {"headline", one}, {"sources", 2}};
  CHECK(text == expected.dump());
}

namespace {

std::vector<std::string> urls_of(const headline_list& list) {
  std::vector<std::string> urls;
  for (const auto& h : list)
    urls.push_back(h.headline.url);
  return urls;
}

std::shared_ptr<const headline_list::site_items> site_list(std::vector<news_item> items) {
  return std::make_shared<const headline_list::site_items>(std::move(items));
}

} // namespace

TEST_CASE("headlines list newest first; those first seen together keep their site's order") {
  // ids ascend in the order each refresh listed its headlines.
  auto a = site_list({item(1, "Zebra", "https://a/1", "a", 1000, false),
                      item(2, "apple", "https://a/2", "a", 1000, false),
                      item(4, "Kiwi", "https://a/3", "a", 2000, false)});
  auto b = site_list({item(5, "Mango", "https://b/1", "b", 3000, false),
                      item(6, "banana", "https://b/2", "b", 3000, false),
                      item(3, "cherry", "https://b/3", "b", 1500, false)});
  headline_list list;
  list.append(a);
  list.append(b);
  list.stable_sort(newer_first);
  CHECK(urls_of(list) == std::vector<std::string>{"https://b/1", "https://b/2", "https://a/3",
                                                  "https://b/3", "https://a/1", "https://a/2"});

  SUBCASE("sites' lists merged give the same order, and a site's new list takes its place") {
    auto merged =
        headline_list::merged({headline_list::sorted_run(a), headline_list::sorted_run(b)});
    CHECK(urls_of(merged) == urls_of(list));
    auto b2 = site_list({item(7, "Plum", "https://b/4", "b", 4000, false),
                         item(5, "Mango", "https://b/1", "b", 3000, false)});
    auto next =
        headline_list::merged({headline_list::sorted_run(a), headline_list::sorted_run(b2)});
    CHECK(urls_of(next) == std::vector<std::string>{"https://b/4", "https://b/1", "https://a/3",
                                                    "https://a/1", "https://a/2"});
    // The list it was made from is as it was, and b's old headlines live while it does.
    CHECK(merged.size() == 6);
    b.reset();
    CHECK(merged[3].headline.url == "https://b/3");
  }
  SUBCASE("views cut from a list share its headlines and keep them alive") {
    auto only_a = list.select([](const news_item& h) { return h.headline.site == "a"; }, 2);
    list = headline_list();
    a.reset();
    CHECK(urls_of(only_a) == std::vector<std::string>{"https://a/3", "https://a/1"});
  }
}

TEST_CASE(
    "sites' lists merged as read give the order a full sort does, whole or a page at a time") {
  // Many sites with overlapping times (ties included), changed in a random order: after each
  // change the merged list, read whole or cut to a page (with and without a filter), equals one
  // sorted from scratch.
  std::mt19937 random(26);
  std::vector<std::shared_ptr<const headline_list::site_items>> sites(20);
  std::int64_t next_id = 1;
  auto make_site = [&](int s) {
    std::vector<news_item> items;
    const auto count = random() % 6;
    const std::int64_t at = 1000 * static_cast<std::int64_t>(random() % 5);
    for (std::size_t i = 0; i < count; ++i)
      items.push_back(item(next_id++, "t", "https://" + std::to_string(s) + "/" + std::to_string(i),
                           std::to_string(s), at - static_cast<std::int64_t>(random() % 2), false));
    return site_list(std::move(items));
  };
  for (int s = 0; s < 20; ++s)
    sites[s] = make_site(s);
  auto odd = [](const news_item& h) { return h.id % 2 == 1; };
  for (int round = 0; round < 200; ++round) {
    for (auto n = 1 + random() % 3; n > 0; --n) {
      const auto s = static_cast<int>(random() % 20);
      sites[s] = make_site(s);
    }
    std::vector<std::shared_ptr<const headline_list::run>> runs;
    headline_list full;
    for (const auto& site : sites) {
      runs.push_back(headline_list::sorted_run(site));
      full.append(site);
    }
    full.stable_sort(newer_first);
    const auto merged = headline_list::merged(runs);
    const auto page = urls_of(merged.select([](const news_item&) { return true; }, 7));
    const auto filtered = urls_of(merged.select(odd, 5));
    REQUIRE(merged.size() == full.size());
    CHECK(page == urls_of(full.select([](const news_item&) { return true; }, 7)));
    CHECK(filtered == urls_of(full.select(odd, 5)));
    REQUIRE(urls_of(merged) == urls_of(full));
    // Once read whole, a page is cut from what was read.
    CHECK(urls_of(merged.select(odd, 5)) == filtered);
  }
}

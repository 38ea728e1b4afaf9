// Stories as the outputs show them: the summaries of a view's headlines, story= in the query, the
// "stories" array of /news.json and the page's link to a story's coverage.
#include "server/news/news_query.hpp"
#include "server/views/news_page.hpp"
#include "server/views/story_view.hpp"
#include "tests/support/page_text.hpp"
#include "tests/support/test_paths.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace newsdesk::server;
using json = nlohmann::json;

namespace {

std::size_t occurrences_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

news_item item(std::int64_t id, std::string site, std::int64_t story, std::int64_t first_seen_ms) {
  news_item i;
  i.id = id;
  i.headline = {"Headline " + std::to_string(id), "https://" + site + ".test/" + std::to_string(id),
                site};
  i.story = story;
  i.first_seen_ms = first_seen_ms;
  return i;
}

site_report site_named(const std::string& name) {
  site_report s;
  s.name = name;
  s.display_name = "Site " + name;
  s.colour = "#123456";
  s.ok = true;
  return s;
}

// Newest first, as a snapshot holds them. Story 1: three headlines from two sites; story 4: two
// sites, newer; story 6: one headline; story 7: two headlines of one site.
news_snapshot sample() {
  news_snapshot s;
  s.sites = {site_named("a"), site_named("b"), site_named("c")};
  s.headlines = {item(8, "a", 7, 9000), item(7, "a", 7, 8000), item(6, "c", 6, 7000),
                 item(5, "c", 4, 6000), item(4, "b", 4, 5000), item(3, "b", 1, 3000),
                 item(2, "a", 1, 2000), item(1, "a", 1, 1000)};
  return s;
}

std::vector<std::int64_t> ids_of(const std::vector<story_summary>& stories) {
  std::vector<std::int64_t> ids;
  for (const auto& s : stories)
    ids.push_back(s.id);
  return ids;
}

} // namespace

TEST_CASE("stories of a view: those with two headlines or more, most sources first, then the "
          "newest") {
  const auto snapshot = sample();
  auto stories = stories_of(snapshot.headlines);
  CHECK(ids_of(stories) == std::vector<std::int64_t>{4, 1, 7});
  CHECK(stories[0].sources == 2);
  CHECK(stories[0].first_seen_ms == 5000);
  CHECK(stories[0].last_seen_ms == 6000);
  REQUIRE(stories[1].headlines.size() == 3);
  CHECK(stories[1].headlines[0]->id == 3); // in the view's order
  CHECK(stories[1].sources == 2);
  CHECK(stories[1].first_seen_ms == 1000);
  CHECK(stories[2].sources == 1);

  // Headlines without a story (no store) tell none.
  headline_list storeless{item(0, "a", 0, 1), item(0, "b", 0, 2)};
  CHECK(stories_of(storeless).empty());
}

TEST_CASE("/news.json lists the stories of the headlines it shows; a filtered view, those it "
          "touches") {
  const auto snapshot = sample();
  auto j = json::parse(news_json(snapshot));
  for (const auto& h : j.at("headlines"))
    CHECK(h.contains("story"));
  CHECK(j.at("headlines")[0].at("story") == 7);
  REQUIRE(j.at("stories").size() == 3);
  const auto& first = j.at("stories")[0];
  CHECK(first ==
        json{{"id", 4},
             {"headlines",
              {{{"id", 5}, {"title", "Headline 5"}, {"url", "https://c.test/5"}, {"site", "c"}},
               {{"id", 4}, {"title", "Headline 4"}, {"url", "https://b.test/4"}, {"site", "b"}}}},
             {"first_seen", "1970-01-01T00:00:05.000Z"},
             {"last_seen", "1970-01-01T00:00:06.000Z"},
             {"sources", 2}});

  auto query = std::get<news_query>(parse_news_query("site=b,c", snapshot.sites));
  auto filtered = json::parse(news_json(apply_query(snapshot, query)));
  REQUIRE(filtered.at("stories").size() == 1);
  CHECK(filtered.at("stories")[0].at("id") == 4);
}

TEST_CASE("story= takes one story id; anything else is refused, naming the parameter") {
  const auto snapshot = sample();
  auto parsed = parse_news_query("story=4", snapshot.sites);
  REQUIRE(std::holds_alternative<news_query>(parsed));
  auto query = std::get<news_query>(parsed);
  CHECK(query.story == 4);
  CHECK_FALSE(query.empty());
  auto view = apply_query(snapshot, query);
  REQUIRE(view.headlines.size() == 2);
  for (const auto& h : view.headlines)
    CHECK(h.story == 4);
  for (const char* bad :
       {"story=", "story=0", "story=-3", "story=abc", "story=4x", "story=99999999999999999999"}) {
    auto refused = parse_news_query(bad, snapshot.sites);
    REQUIRE_MESSAGE(std::holds_alternative<std::string>(refused), bad);
    CHECK(std::get<std::string>(refused).rfind("story: ", 0) == 0);
  }
}

TEST_CASE("a story's coverage replaces the snapshot's headlines, without sites no longer "
          "configured") {
  auto coverage = with_coverage(
      sample(), {item(20, "a", 20, 5), item(19, "gone", 20, 4), item(18, "b", 20, 3)});
  CHECK(coverage.sites.size() == 3);
  REQUIRE(coverage.headlines.size() == 2);
  CHECK(coverage.headlines[0].id == 20);
  CHECK(coverage.headlines[1].id == 18);
}

TEST_CASE("the page links a headline to its story's coverage when two sites or more tell it") {
  const auto page = news_page::load(std::string(NEWSDESK_SOURCE_DIR) + "/templates");
  const auto snapshot = sample();
  auto count_links = [](const std::string& page_html) {
    const auto html = newsdesk::testing::without_templates(page_html);
    std::size_t links = 0;
    for (auto at = html.find("class=\"sources\""); at != std::string::npos;
         at = html.find("class=\"sources\"", at + 1))
      ++links;
    return links;
  };
  // A view of some sites lists every headline, a story several sites tell once: stories 4 and 1
  // have two sources each, each a box with the other site's headline beneath and one link; 6 and
  // 7 have one.
  const auto sites = std::get<news_query>(parse_news_query("site=a&site=b&site=c", snapshot.sites));
  auto html = page.render(snapshot, sites);
  CHECK(html.find("data-story=\"4\"") != std::string::npos);
  CHECK(html.find("<a class=\"sources\" href=\"/news?story=4\">2 sources</a>") !=
        std::string::npos);
  CHECK(html.find("<a class=\"sources\" href=\"/news?story=1\">2 sources</a>") !=
        std::string::npos);
  CHECK(count_links(html) == 2);
  CHECK(occurrences_of(newsdesk::testing::without_templates(html), "<li class=\"telling ") == 2);
  // The unfiltered page shows stories 4 and 1 as cards instead, each with one link; story 1's
  // second headline of site a is in its coverage, not the list.
  html = page.render(snapshot);
  CHECK(html.find("<li class=\"top-story\" data-story=\"4\" ") <
        html.find("<li class=\"top-story\" data-story=\"1\" "));
  CHECK(count_links(html) == 2);
  CHECK(html.find("<li class=\"headline site-a\" data-id=\"1\"") == std::string::npos);

  // The story's own view says what it is, links nowhere else, and its live events and feeds keep
  // to the story.
  auto query = std::get<news_query>(parse_news_query("story=4", snapshot.sites));
  auto story = page.render(apply_query(snapshot, query), query);
  CHECK(story.find("One story, told by Site c and Site b") != std::string::npos);
  CHECK(story.find("class=\"sources\"") == std::string::npos);
  CHECK(story.find("data-events=\"story=4\"") != std::string::npos);
  CHECK(story.find("href=\"/news.atom?story=4\"") != std::string::npos);
}

// End-to-end: stories through every output of the real binary (Splash stand-in, real sockets).
// Views are rebuilt in the background after a change, so they are read with eventually().
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

const json* headline_titled(const json& news, const std::string& title) {
  for (const auto& h : news.at("headlines"))
    if (h.at("title") == title)
      return &h;
  return nullptr;
}

} // namespace

TEST_CASE("every headline names its story; story= shows a story's whole coverage, 404 for an "
          "unknown one, 400 for a malformed one") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "Bridge opens"},
                                                                {"/2/index.html", "Rain ahead"}})));
  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/3/index.html", "Vote today"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  json news;
  REQUIRE(eventually([&] {
    news = news_json(nd.port);
    return news.at("headlines").size() == 3;
  }));
  CHECK(news.at("stories").is_array());
  for (const auto& h : news.at("headlines")) {
    REQUIRE(h.contains("story"));
    CHECK(h.at("story").get<std::int64_t>() > 0);
  }
  const auto* bridge = headline_titled(news, "Bridge opens");
  REQUIRE(bridge);
  const auto story = std::to_string(bridge->at("story").get<std::int64_t>());

  auto coverage = news_json(nd.port, "?story=" + story);
  REQUIRE(!coverage.at("headlines").empty());
  CHECK(headline_titled(coverage, "Bridge opens"));
  for (const auto& h : coverage.at("headlines"))
    CHECK(std::to_string(h.at("story").get<std::int64_t>()) == story);
  CHECK(coverage.at("stories").is_array());
  auto page = http_get(nd.port, "/news?story=" + story);
  CHECK(page.status == 200);
  CHECK(page.body.find("Bridge opens") != std::string::npos);
  CHECK(page.body.find("Vote today") == std::string::npos);
  CHECK(page.body.find("One story, told by") != std::string::npos);
  auto atom = http_get(nd.port, "/news.atom?story=" + story);
  CHECK(atom.status == 200);
  CHECK(atom.body.find("Bridge opens") != std::string::npos);
  CHECK(atom.body.find("Vote today") == std::string::npos);

  // The site drops the headline: the page no longer shows it, its story's coverage (read from
  // the store) still does.
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/2/index.html", "Rain ahead"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  REQUIRE(eventually([&] { return !headline_titled(news_json(nd.port), "Bridge opens"); }));
  CHECK(headline_titled(news_json(nd.port, "?story=" + story), "Bridge opens"));

  auto unknown = http_get(nd.port, "/news.json?story=987654321");
  CHECK(unknown.status == 404);
  CHECK(unknown.body.find("no story 987654321") != std::string::npos);
  CHECK(http_get(nd.port, "/news.atom?story=987654321").status == 404);
  for (const char* bad : {"/news.json?story=abc", "/news?story=0", "/news.atom?story=-1"}) {
    auto refused = http_get(nd.port, bad);
    CHECK_MESSAGE(refused.status == 400, bad);
    CHECK(refused.body.find("story:") != std::string::npos);
  }
  CHECK(nd.process->stop(SIGTERM) == 0);
}

// Needs the real story assignment (server/stories/story_assigner.cpp): with the placeholder,
// which starts a story per headline, it fails. Any assignment groups identical titles.
TEST_CASE("two sites with the same headline tell one story: in /news.json, on the page and over "
          "/events") {
  splash_standin splash;
  const std::string title = "Volcano erupts near Naples, thousands evacuated";
  splash.set(
      "https://a.cnn.com/",
      standin_page::page(cnn_page({{"/v/index.html", title}, {"/w/index.html", "Markets rally"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/x/index.html", "Sports results"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 3; }));
  sse_client live(nd.port);
  REQUIRE(live.wait_for("retry: 3000"));

  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/x/index.html", "Sports results"},
                                                                {"/naples/index.html", title}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=b").status == 202);
  REQUIRE(live.wait_for("Naples"));
  CHECK(live.wait_for("event: story", 2s));
  CHECK(live.received.find("\"sources\":2") != std::string::npos);

  json news;
  REQUIRE(eventually([&] {
    news = news_json(nd.port);
    return news.at("headlines").size() == 4;
  }));
  REQUIRE(news.at("stories").size() == 1);
  const auto& story = news.at("stories")[0];
  CHECK(story.at("sources") == 2);
  REQUIRE(story.at("headlines").size() == 2);
  for (const auto& h : story.at("headlines"))
    CHECK(h.at("title") == title);
  const auto id = std::to_string(story.at("id").get<std::int64_t>());
  CHECK(news_json(nd.port, "?story=" + id).at("headlines").size() == 2);
  CHECK(news_json(nd.port, "?site=b").at("stories").empty()); // one site's view: one source
  CHECK(news_json(nd.port, "?q=naples").at("stories").size() == 1);
  CHECK(eventually([&] {
    return http_get(nd.port, "/news").body.find("href=\"/news?story=" + id + "\">2 sources</a>") !=
           std::string::npos;
  }));
}

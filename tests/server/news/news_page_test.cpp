#include "server/news/news_page.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace newsdesk::server;
using newsdesk::scrapers::headline;

namespace {
news_snapshot sample() {
  news_snapshot s;
  site_report cnn{"cnn", "CNN", "#cc0000", "https://edition.cnn.com/", "splash"};
  cnn.ok = true;
  cnn.headline_count = 2;
  cnn.elapsed = std::chrono::milliseconds(1200);
  cnn.last_success_ms = 1'700'000'000'000;
  site_report aj{"aj", "Al <Jazeera>", "#b58900", "https://www.aljazeera.com/", "splash"};
  aj.error = "Splash timed out after 30 s";
  aj.last_attempt_ms = 1'700'000'000'000;
  s.sites = {cnn, aj};
  s.headlines = {
      {{"<script>alert(1)</script>", "https://edition.cnn.com/a.html?x=1&y=2", "cnn"}, 1, 0, true},
      {{"Plain", "https://edition.cnn.com/b.html", "cnn"}, 2, 0, false},
      {{"Sneaky", "javascript:alert(1)", "cnn"}, 3, 0, false}};
  return s;
}

const news_page& page() {
  static news_page p = news_page::load(std::string(NEWSDESK_SOURCE_DIR) + "/templates");
  return p;
}
} // namespace

TEST_CASE("the page escapes scraped titles and URLs") {
  auto html = page().render(sample());
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<script>alert(1)") == std::string::npos);
  CHECK(html.find("href=\"https://edition.cnn.com/a.html?x=1&amp;y=2\"") != std::string::npos);
}

TEST_CASE("the page drops links that are not http or https") {
  auto html = page().render(sample());
  CHECK(html.find("javascript:") == std::string::npos);
  CHECK(html.find("Sneaky") == std::string::npos);
  auto json = nlohmann::json::parse(news_json(sample()));
  CHECK(json.at("headlines").size() == 2);
}

TEST_CASE("a failed site shows its notice with the site's display name, escaped") {
  auto html = page().render(sample());
  CHECK(html.find("Al &lt;Jazeera&gt;: Splash timed out after 30 s") != std::string::npos);
  CHECK(html.find("2 headlines, updated") != std::string::npos);
  CHECK(html.find("days ago</time> via splash in 1.2 s") != std::string::npos);
  CHECK(html.find("Splash timed out after 30 s (via splash)") != std::string::npos);
}

TEST_CASE("news.json carries sites and headlines built from the snapshot") {
  auto j = nlohmann::json::parse(news_json(sample()));
  CHECK(j.at("sites")[0].at("name") == "cnn");
  CHECK(j.at("sites")[0].at("error").is_null());
  CHECK(j.at("sites")[1].at("error") == "Splash timed out after 30 s");
  CHECK(j.at("sites")[1].at("stale") == false);
  CHECK(j.at("headlines")[0].at("new") == true);
  CHECK(j.at("headlines")[0].at("id") == 1);
  CHECK(j.at("headlines")[0].at("title") == "<script>alert(1)</script>");
}

TEST_CASE("news.json survives invalid UTF-8 in scraped text") {
  news_snapshot s;
  s.headlines = {{{"bad \xff byte", "https://a.test/", "x"}, 1, 0, false}};
  auto j = nlohmann::json::parse(news_json(s));
  CHECK(j.at("headlines")[0].at("title") == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("text colour contrasts with the site colour") {
  CHECK(text_colour_for("#cc0000") == "#ffffff");
  CHECK(text_colour_for("#ffcc00") == "#111111");
  CHECK(text_colour_for("#fff") == "#111111");
  CHECK(text_colour_for("#000") == "#ffffff");
}

TEST_CASE("a missing or broken template is an error naming the file") {
  auto dir = std::filesystem::temp_directory_path() / "newsdesk-template-test";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "news.html");
  CHECK_THROWS_WITH_AS(news_page::load(dir), doctest::Contains("news.html"), std::runtime_error);
  std::ofstream(dir / "news.html") << "{{#sites}} unclosed";
  CHECK_THROWS_WITH_AS(news_page::load(dir), doctest::Contains("not valid Mustache"),
                       std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a filtered page's feed links carry the same filters") {
  news_query query;
  query.sites = {"cnn", "aj"};
  query.q = "a&b";
  query.words = {"a&b"};
  query.limit = 5;
  auto html = page().render(sample(), query);
  // Mustache escapes '&' in the attribute; the browser reads back "?site=cnn&site=aj&q=a%26b&...".
  CHECK(html.find("href=\"/news.atom?site=cnn&amp;site=aj&amp;q=a%26b&amp;limit=5\"") !=
        std::string::npos);
  CHECK(html.find("href=\"/news.feed.json?site=cnn&amp;site=aj&amp;q=a%26b&amp;limit=5\"") !=
        std::string::npos);
  CHECK(page().render(sample()).find("href=\"/news.atom\"") != std::string::npos);
}

#include "scrapers/detect.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"
#include "test_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>

using namespace newsdesk::scrapers;
using newsdesk::scrapers::testing::shared_page;

namespace {

struct saved_page {
  const char* file;
  const char* reference; // a site file in sites/, or a built-in scraper's name
  const char* url;
  double min_recall;
  double min_precision;
};

// What the shipped rules find is the truth detection is measured against.
const saved_page pages[] = {
    {"cnn-2015-edition.html", "cnn", "https://edition.cnn.com/", 0.9, 0.85},
    {"cnn-2025-home-rendered.html", "cnn", "https://www.cnn.com/", 0.9, 0.85},
    {"hn-2022.html", "hackernews.json", "https://news.ycombinator.com/", 0.9, 0.85},
    {"bbc-2025-news-rendered.html", "bbc.json", "https://www.bbc.com/news", 0.9, 0.85},
    {"reuters-2026-world-rendered.html", "reuters.json", "https://www.reuters.com/world/", 0.9,
     0.85},
    {"apnews-2026-world-rendered.html", "apnews.json", "https://apnews.com/world-news", 0.9, 0.85},
};

// A shipped site file, or null for a built-in scraper's name.
std::unique_ptr<scraper> reference_scraper(const std::string& name) {
  if (name.ends_with(".json"))
    return load_site_file(testing::sites_dir() / name);
  return nullptr;
}

} // namespace

TEST_CASE("detection finds the headlines of every saved front page without selectors") {
  static registry builtins;
  if (builtins.size() == 0)
    register_builtin_scrapers(builtins);
  for (const auto& p : pages) {
    CAPTURE(p.file);
    auto html = shared_page(p.file);
    if (!html) {
      MESSAGE("skipped: " << p.file << " not found in " << NEWSDESK_SHARED_PAGES);
      continue;
    }
    auto file_scraper = reference_scraper(p.reference);
    const scraper* reference = file_scraper ? file_scraper.get() : builtins.find(p.reference);
    REQUIRE(reference);
    auto doc = dom::document::parse(*html);

    auto t0 = std::chrono::steady_clock::now();
    auto truth = reference->extract(doc, p.url);
    auto t1 = std::chrono::steady_clock::now();
    auto found = detect_headlines(doc, p.url, "t");
    auto t2 = std::chrono::steady_clock::now();

    std::set<std::string> want, got;
    for (const auto& h : truth)
      want.insert(h.url);
    for (const auto& h : found)
      got.insert(h.url);
    std::size_t hits = 0;
    for (const auto& u : got)
      hits += want.count(u);
    const double recall = want.empty() ? 1 : static_cast<double>(hits) / want.size();
    const double precision = got.empty() ? 0 : static_cast<double>(hits) / got.size();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-34s reference %3zu, detected %3zu, recall %.2f, precision %.2f; "
                  "selectors %.1f ms, detection %.1f ms",
                  p.file, want.size(), got.size(), recall, precision, ms(t1 - t0), ms(t2 - t1));
    MESSAGE(line);
    if (std::getenv("DETECT_DEBUG")) {
      for (const auto& h : found)
        if (!want.count(h.url))
          MESSAGE("extra: " << h.title << " " << h.url);
      for (const auto& h : truth)
        if (!got.count(h.url))
          MESSAGE("missed: " << h.title << " " << h.url);
    }
    CHECK(recall >= p.min_recall);
    CHECK(precision >= p.min_precision);
  }
}

TEST_CASE("detection: a page that builds its headlines with JavaScript gives next to nothing") {
  auto html = shared_page("cnn-2018-raw-jsonly.html");
  if (!html) {
    MESSAGE("skipped: cnn-2018-raw-jsonly.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  auto found = detect_headlines(dom::document::parse(*html), "https://edition.cnn.com/", "t");
  MESSAGE("cnn-2018-raw-jsonly.html: " << found.size() << " detected");
  CHECK(found.size() <= 5);
}

TEST_CASE("detection: story cards found, navigation, footers and other hosts left out") {
  std::string html =
      "<html><body><nav><a href='/world'>World</a><a href='/business/markets-"
      "today-live-updates'>Markets today live updates from the floor</a></nav><main>";
  for (int i = 0; i < 6; ++i)
    html += "<article class=card><h3><a href='/2026/11/24/story-number-" + std::to_string(i) +
            "-is-here'>Story number " + std::to_string(i) +
            " is a real headline</a></h3></article>";
  html += "<a href='https://ads.example/buy-now-and-save-big'>Buy now and save big today</a>"
          "</main><footer><a href='/about/the-company-and-its-people'>About the company and its "
          "people</a></footer></body></html>";
  auto found = detect_headlines(dom::document::parse(html), "https://news.example/", "t");
  std::vector<std::string> titles;
  for (const auto& h : found)
    titles.push_back(h.title);
  REQUIRE(titles.size() == 6);
  CHECK(titles.front() == "Story number 0 is a real headline");
  CHECK(found.front().url == "https://news.example/2026/11/24/story-number-0-is-here");
}

TEST_CASE("detection: empty and deeply nested pages") {
  CHECK(detect_headlines(dom::document::parse(""), "https://e.example/", "t").empty());
  std::string deep = "<html><body>";
  for (int i = 0; i < 2000; ++i)
    deep += "<div>";
  deep += "<h2><a href='/2026/a-story-deep-inside'>A story deep inside many boxes</a></h2>";
  auto found = detect_headlines(dom::document::parse(deep), "https://e.example/", "t");
  CHECK(found.size() <= 1);
}

namespace {

// Six story cards under headings, with story-shaped addresses, then `extra` inside <main>: the
// page a furniture rule is tried on.
std::string page_with(const std::string& extra) {
  std::string html = "<html><body><main>";
  for (int i = 0; i < 6; ++i)
    html += "<article class=card><h3><a href='/2026/11/24/story-number-" + std::to_string(i) +
            "-is-here'>Story number " + std::to_string(i) +
            " is a real headline</a></h3></article>";
  return html + extra + "</main></body></html>";
}

struct detection {
  std::vector<std::string> titles;
  std::vector<left_out_link> left_out;

  bool has(const std::string& title) const {
    return std::find(titles.begin(), titles.end(), title) != titles.end();
  }
  // The reason `title` was left out, or "" when it was not.
  std::string reason(const std::string& title) const {
    for (const auto& l : left_out)
      if (l.title == title)
        return l.reason;
    return "";
  }
};

detection detect(const std::string& html) {
  detection d;
  for (const auto& h :
       detect_headlines(dom::document::parse(html), "https://news.example/", "t", &d.left_out))
    d.titles.push_back(h.title);
  return d;
}

std::string repeated(int times, const std::string& html_with_index) {
  std::string out;
  for (int i = 0; i < times; ++i) {
    auto part = html_with_index;
    for (auto at = part.find("{i}"); at != std::string::npos; at = part.find("{i}"))
      part.replace(at, 3, std::to_string(i));
    out += part;
  }
  return out;
}

} // namespace

TEST_CASE("detection furniture: actions and labels, whatever their score") {
  auto d = detect(page_with(
      "<h3><a href='/business/2026/11/24/markets-wrap-up-today'>More from Business Day »</a></h3>"
      "<h3><a href='/2026/11/24/story-number-1-is-here#comments'>Comments (12)</a></h3>"));
  CHECK(d.titles.size() == 6);
  CHECK_FALSE(d.has("More from Business Day »"));
  CHECK(d.reason("More from Business Day »") == "furniture: an action or label");
  CHECK(d.reason("Comments (12)") == "furniture: an action or label");
}

TEST_CASE("detection furniture: links to media files") {
  auto d = detect(page_with(repeated(
      3, "<article><h3><a href='/audio/2026/11/24/morning-briefing-episode-{i}.mp3'>Morning "
         "briefing for Tuesday number {i}</a></h3></article>")));
  CHECK(d.titles.size() == 6);
  CHECK(d.reason("Morning briefing for Tuesday number 0") == "furniture: a media file");
}

TEST_CASE("detection furniture: widget rows of weather, tickers and dates") {
  auto d = detect(page_with(
      repeated(3, "<article><h3><a href='/weather/264374{i}'>Thu 3{i}°C 25°C</a></h3></article>") +
      "<article><h3><a href='/markets/2026/11/24/ftse-100-index-closing-level'>FTSE 100 7,123.45 "
      "+0.5%</a></h3></article>"));
  CHECK(d.titles.size() == 6);
  CHECK(d.reason("Thu 30°C 25°C") == "furniture: a widget row: weather, a ticker or a date");
  CHECK(d.reason("FTSE 100 7,123.45 +0.5%") ==
        "furniture: a widget row: weather, a ticker or a date");
}

TEST_CASE("detection furniture: section pages where the page's stories have story addresses") {
  const std::string sections =
      "<h2><a href='/news/entertainment_and_arts'>Entertainment and the Arts today</a></h2>"
      "<h2><a href='/ws/languages'>BBC in other languages</a></h2>"
      "<h2><a href='/section/realestate/'>Search for Homes for Sale or Rent</a></h2>";
  auto d = detect(page_with(sections));
  CHECK(d.titles.size() == 6);
  CHECK(d.reason("Entertainment and the Arts today") == "furniture: a section or index page");
  CHECK(d.reason("BBC in other languages") == "furniture: a section or index page");
  // A site whose stories have plain addresses keeps them: the rule compares with the page.
  std::string plain = "<html><body><main>";
  for (int i = 0; i < 6; ++i)
    plain += "<article><h3><a href='/world/tale" + std::to_string(i) + "'>A story told plainly " +
             "number " + std::to_string(i) + "</a></h3></article>";
  plain += "</main></body></html>";
  CHECK(detect(plain).titles.size() == 6);
}

TEST_CASE("detection furniture: a list that is mostly labels is navigation, all of it") {
  auto d =
      detect(page_with("<div class=links><ul>"
                       "<li><a href='/world'>World</a></li><li><a href='/business'>Business</a>"
                       "</li><li><a href='/opinion'>Opinion</a></li><li><a href='/sports'>"
                       "Sports</a></li><li><a href='/realestate/sell/your-home'>Sell your "
                       "home with one of our local agents</a></li></ul></div>"));
  CHECK(d.titles.size() == 6);
  CHECK(d.reason("Sell your home with one of our local agents") == "furniture: a navigation list");
  CHECK(d.reason("World") == "bad title: one word");
}

TEST_CASE("detection furniture: one title on several targets is a control") {
  auto d = detect(page_with(repeated(
      3, "<article><h4><a href='/2026/11/24/story-number-{i}-is-here/audio-version'>Listen to "
         "this story</a></h4></article>")));
  CHECK(d.titles.size() == 6);
  CHECK(d.reason("Listen to this story") == "furniture: the same title on several links");
}

TEST_CASE("detection keeps story links in side lists (most read, related)") {
  auto d = detect(page_with(
      "<aside-list><ol class=most-read>" +
      repeated(5, "<li><span>{i}</span><a href='/2026/11/23/most-read-story-{i}-about-things'>A "
                  "most read story number {i} today</a></li>") +
      "</ol></aside-list>"));
  CHECK(d.titles.size() == 11);
  CHECK(d.has("A most read story number 0 today"));
}

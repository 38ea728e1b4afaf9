#include "scrapers/detect.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"
#include "test_files.hpp"

#include <doctest/doctest.h>

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
    return load_site_file(std::filesystem::path(NEWSDESK_SITES_DIR) / name);
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
      MESSAGE("skipped: " << p.file << " not found in " NEWSDESK_SHARED_PAGES);
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
    MESSAGE("skipped: cnn-2018-raw-jsonly.html not found in " NEWSDESK_SHARED_PAGES);
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

// Is selector matching cheap next to parsing? For each saved page, times
// dom::document::parse (parse + free) against css::select over the parsed document for a few
// realistic selectors, median of N runs each, in one process, and prints the ratio. A bare walk
// over the elements is printed as the floor any selector engine on dom::node pays.
//
// Usage: bench_selectors [runs]   (default 15; pages come from NEWSDESK_SHARED_PAGES)
#include "scrapers/css/selector.hpp"
#include "scrapers/dom.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

template <typename F> double median_ms(int runs, F&& work) {
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    auto start = clock_type::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The selectors timed on every page: the AP site file's link rule, the CNN scraper's rule
// written as CSS, the BBC file's list, and a worst-case-shaped one (every element is a
// candidate for the first compound, child steps and a :not on the subject).
const char* const selectors[] = {
    ".PagePromo-title > a[href]:not(.AnClick-TrendingLink)",
    "a.container__link span.container__headline-text",
    "a[data-testid=\"internal-link\"], a[data-testid=\"external-anchor\"]",
    "* div > div a[href*=\"/\"]:not([href^=\"#\"])",
};

} // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  if (runs < 1) {
    std::fprintf(stderr, "bench_selectors: runs must be at least 1\n");
    return 2;
  }
  std::vector<newsdesk::scrapers::css::selector_list> lists;
  for (const char* s : selectors) {
    lists.push_back(newsdesk::scrapers::css::parse(s));
  }
  std::printf("median of %d runs each; select() is over the already parsed document\n\n", runs);
  std::printf("%-32s %9s %9s %8s %8s  %s\n", "page", "parse ms", "select ms", "ratio", "matches",
              "selector");
  for (const char* name : {"cnn-2025-home-rendered.html", "apnews-2026-world-rendered.html"}) {
    std::string path = std::string(NEWSDESK_SHARED_PAGES) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "bench_selectors: cannot read %s (skipped)\n", path.c_str());
      continue;
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    const std::string html = bytes.str();

    std::size_t children = 0; // keeps the parse from being optimised away
    double parse_ms = median_ms(runs, [&] {
      auto doc = newsdesk::scrapers::dom::document::parse(html);
      children += doc.root().child_count();
    });
    auto doc = newsdesk::scrapers::dom::document::parse(html);
    std::size_t elements = 0;
    for ([[maybe_unused]] auto e : doc.root().descendant_elements()) {
      ++elements;
    }
    // The floor under any selector: visiting every element once without testing it.
    std::size_t walked = 0;
    double walk_ms = median_ms(runs, [&] {
      walked = 0;
      for ([[maybe_unused]] auto e : doc.root().descendant_elements()) {
        ++walked;
      }
    });
    std::string label = std::string(name) + " (" + std::to_string(html.size() / 1024) + " KiB, " +
                        std::to_string(elements) + " elements)";
    std::printf("%s\n", label.c_str());
    std::printf("%-32s %9.2f %9.2f %7.1f%% %8zu  %s\n", "", parse_ms, walk_ms,
                100.0 * walk_ms / parse_ms, walked, "(bare element walk, no selector)");
    for (std::size_t i = 0; i < lists.size(); ++i) {
      std::size_t found = 0;
      double select_ms = median_ms(
          runs, [&] { found = newsdesk::scrapers::css::select(doc.root(), lists[i]).size(); });
      std::printf("%-32s %9.2f %9.2f %7.1f%% %8zu  %s\n", "", parse_ms, select_ms,
                  100.0 * select_ms / parse_ms, found, selectors[i]);
    }
  }
  return 0;
}

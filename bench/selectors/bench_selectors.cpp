// Is selector matching cheap next to parsing, and linear in the page's size? For each saved
// page, times dom::document::parse (parse + free) against css::select over the parsed document
// for a few realistic selectors, in one process. Then selects over pages of growing size: the
// CNN page repeated 1, 2, 4 and 8 times, and links nested ever deeper in divs (the shape on which
// a matcher that walks up the ancestors for every element turns quadratic). Linear matching
// shows as a flat time per element down each column.
//
// Usage: bench_selectors [runs]   (default 15; pages come from NEWSDESK_SHARED_PAGES)
#include "bench_support.hpp"
#include "scrapers/css/selector.hpp"
#include "scrapers/dom.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using newsdesk::bench::median_ms;
namespace css = newsdesk::scrapers::css;
namespace dom = newsdesk::scrapers::dom;

// The selectors timed on every page: the AP site file's link rule, the CNN scraper's rule
// written as CSS, the BBC file's list, and a worst-case-shaped one (every element is a
// candidate for the first compound, child steps and a :not on the subject).
const char* const selectors[] = {
    ".PagePromo-title > a[href]:not(.AnClick-TrendingLink)",
    "a.container__link span.container__headline-text",
    "a[data-testid=\"internal-link\"], a[data-testid=\"external-anchor\"]",
    "* div > div a[href*=\"/\"]:not([href^=\"#\"])",
};
constexpr std::size_t worst_case = 3; // index of the worst-shaped selector above

std::size_t element_count(const dom::document& doc) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto e : doc.root().descendant_elements())
    ++n;
  return n;
}

// One row of the scaling table: the page's size, its elements, the worst-case selector's time
// in total and per element, and the bare element walk's time per element. The walk is the
// floor under any selector: when both rise together, it is the memory the document occupies,
// not the matching.
void scaling_row(const char* label, const std::string& html, const css::selector_list& list,
                 int runs) {
  auto doc = dom::document::parse(html);
  const std::size_t elements = element_count(doc);
  std::size_t found = 0;
  double ms = median_ms(runs, [&] { found = css::select(doc.root(), list).size(); });
  std::size_t walked = 0;
  double walk_ms = median_ms(runs, [&] { walked = element_count(doc); });
  const double per_element = 1e6 / static_cast<double>(elements);
  std::printf("%-28s %9.1f %10zu %9.2f %12.1f %12.1f %8zu\n", label,
              static_cast<double>(html.size()) / (1024.0 * 1024.0), elements, ms, ms * per_element,
              walk_ms * per_element, found);
}

} // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  if (runs < 1) {
    std::fprintf(stderr, "bench_selectors: runs must be at least 1\n");
    return 2;
  }
  std::vector<css::selector_list> lists;
  for (const char* s : selectors)
    lists.push_back(css::parse(s));
  const css::selector_list& worst = lists[worst_case];

  std::printf("median of %d runs each; select() is over the already parsed document\n\n", runs);
  std::printf("%-32s %9s %9s %8s %8s  %s\n", "page", "parse ms", "select ms", "ratio", "matches",
              "selector");
  std::string cnn;
  for (const char* name : {"cnn-2025-home-rendered.html", "apnews-2026-world-rendered.html"}) {
    const std::string path = std::string(NEWSDESK_SHARED_PAGES) + "/" + name;
    const auto page = newsdesk::bench::read_file(path);
    if (!page) {
      std::fprintf(stderr, "bench_selectors: cannot read %s (skipped)\n", path.c_str());
      continue;
    }
    const std::string& html = *page;
    if (cnn.empty())
      cnn = html;

    std::size_t children = 0; // keeps the parse from being optimised away
    double parse_ms = median_ms(runs, [&] {
      auto doc = dom::document::parse(html);
      children += doc.root().child_count();
    });
    auto doc = dom::document::parse(html);
    const std::size_t elements = element_count(doc);
    // The floor under any selector: visiting every element once without testing it.
    std::size_t walked = 0;
    double walk_ms = median_ms(runs, [&] { walked = element_count(doc); });
    std::string label = std::string(name) + " (" + std::to_string(html.size() / 1024) + " KiB, " +
                        std::to_string(elements) + " elements)";
    std::printf("%s\n", label.c_str());
    std::printf("%-32s %9.2f %9.2f %7.1f%% %8zu  %s\n", "", parse_ms, walk_ms,
                100.0 * walk_ms / parse_ms, walked, "(bare element walk, no selector)");
    for (std::size_t i = 0; i < lists.size(); ++i) {
      std::size_t found = 0;
      double select_ms = median_ms(runs, [&] { found = css::select(doc.root(), lists[i]).size(); });
      std::printf("%-32s %9.2f %9.2f %7.1f%% %8zu  %s\n", "", parse_ms, select_ms,
                  100.0 * select_ms / parse_ms, found, selectors[i]);
    }
  }

  std::printf("\nscaling, selector %s\n", selectors[worst_case]);
  std::printf("%-28s %9s %10s %9s %12s %12s %8s\n", "page", "MiB", "elements", "select ms",
              "ns/element", "walk ns/el.", "matches");
  if (!cnn.empty()) {
    std::string repeated;
    for (int copies : {1, 2, 4, 8}) {
      while (repeated.size() < cnn.size() * static_cast<std::size_t>(copies))
        repeated += cnn;
      scaling_row(("cnn page x" + std::to_string(copies)).c_str(), repeated, worst, runs);
    }
  }
  for (int depth : {1000, 2000, 4000}) {
    std::string nested = "<!doctype html><body>";
    for (int i = 0; i < depth; ++i)
      nested += "<div><a href=\"/story\">story</a>";
    for (int i = 0; i < depth; ++i)
      nested += "</div>";
    scaling_row(("divs nested " + std::to_string(depth) + " deep").c_str(), nested, worst, runs);
  }
  return 0;
}

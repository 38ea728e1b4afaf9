// How much does newsdesk add on top of Gumbo? Times a bare gumbo_parse of a saved page
// against the CNN scraper's parse() (our tracked-allocation parse plus headline extraction),
// median of N runs each.
//
// Usage: bench_parse [page.html] [runs]   (default: the shared cnn-2025 page, 15 runs)
// Benchmarks may include <gumbo.h> as the reference point; production code may not.
#include "bench_support.hpp"
#include "scrapers/dom.hpp"
#include "scrapers/registry.hpp"

#include <gumbo.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using newsdesk::bench::median_ms;

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : NEWSDESK_SHARED_PAGES "/cnn-2025-home-rendered.html";
  int runs = argc > 2 ? std::atoi(argv[2]) : 15;
  if (runs < 1) {
    std::fprintf(stderr, "bench_parse: runs must be at least 1\n");
    return 2;
  }
  const auto page = newsdesk::bench::read_file(path);
  if (!page) {
    std::fprintf(stderr, "bench_parse: cannot read %s\n", path.c_str());
    return 1;
  }
  const std::string& html = *page;

  newsdesk::scrapers::registry scrapers;
  newsdesk::scrapers::register_builtin_scrapers(scrapers);
  const newsdesk::scrapers::scraper& cnn = *scrapers.find("cnn");

  // Keeps the optimiser from dropping the work and shows both did something.
  std::size_t root_children = 0;
  std::size_t headlines = 0;

  double gumbo_ms = median_ms(runs, [&] {
    GumboOutput* out = gumbo_parse_with_options(&kGumboDefaultOptions, html.data(), html.size());
    root_children = out->root->v.element.children.length;
    gumbo_destroy_output(&kGumboDefaultOptions, out);
  });
  std::size_t nodes = 0;
  double dom_ms = median_ms(runs, [&] {
    auto doc = newsdesk::scrapers::dom::document::parse(html);
    nodes = doc.root().child_count();
  });
  double scraper_ms =
      median_ms(runs, [&] { headlines = cnn.parse(html, "https://www.cnn.com/").size(); });

  std::printf("page: %s (%zu bytes), %d runs each, median\n", path.c_str(), html.size(), runs);
  std::printf("gumbo_parse + destroy:        %8.2f ms  (root children %zu)\n", gumbo_ms,
              root_children);
  std::printf("dom::document::parse + free:  %8.2f ms  (document children %zu)\n", dom_ms, nodes);
  std::printf("cnn scraper parse + extract:  %8.2f ms  (%zu headlines)\n", scraper_ms, headlines);
  std::printf("ratio scraper / gumbo:        %8.2f\n", scraper_ms / gumbo_ms);
  return 0;
}

// Prints the headlines a site file's scraper reads off a saved page, one JSON array
// [title, url] a line: bench/scale's page server finds each in the page's bytes, so it knows
// which links and titles to change between fetches (the ones newsdesk reads as headlines).
//
// Usage: page_headlines SITE_FILE PAGE_FILE PAGE_URL
#include "bench_support.hpp"
#include "scrapers/site_file.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: page_headlines SITE_FILE PAGE_FILE PAGE_URL\n");
    return 2;
  }
  try {
    const auto scraper = newsdesk::scrapers::load_site_file(argv[1]);
    const auto page = newsdesk::bench::read_file(argv[2]);
    if (!page) {
      std::fprintf(stderr, "page_headlines: cannot read %s\n", argv[2]);
      return 1;
    }
    for (const auto& h : scraper->parse(*page, argv[3]))
      std::printf("%s\n", nlohmann::json::array({h.title, h.url}).dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "page_headlines: %s\n", e.what());
    return 1;
  }
  return 0;
}

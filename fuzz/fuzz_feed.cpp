// libFuzzer target: the feed and OPML readers (scrapers/feed.hpp) on arbitrary bytes.
//
// Checked: parse_feed() and parse_opml() either return or throw feed_error (nothing else
// escapes); every headline follows the shared rules (non-empty title, http(s) URL, the site's
// name, no duplicate URL, at most max_headlines_per_site); every outline has a feed URL; and an
// OPML list written from the outlines reads back the same.
#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/url.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

namespace {

using namespace newsdesk::scrapers;

void require(bool ok) {
  if (!ok)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto f = parse_feed(bytes, "https://feed.example/rss", "fuzz");
    require(f.headlines.size() <= max_headlines_per_site);
    std::set<std::string> urls;
    for (const auto& h : f.headlines) {
      require(!h.title.empty());
      require(url::is_http_url(h.url));
      require(h.site == "fuzz");
      require(urls.insert(h.url).second);
    }
  } catch (const feed_error&) {
  }
  try {
    auto outlines = parse_opml(bytes);
    for (const auto& o : outlines)
      require(!o.feed_url.empty());
    require(parse_opml(write_opml("fuzz", outlines)) == outlines);
  } catch (const feed_error&) {
  }
  return 0;
}

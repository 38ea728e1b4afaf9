// libFuzzer target: the site-file loader (scrapers/site_file.hpp) on arbitrary JSON text, and
// on success the resulting scraper over a small fixed page.
//
// Checked: parse_site_file() either returns a scraper or throws site_file_error naming the
// file (nothing else escapes: not nlohmann's exceptions, not std::regex_error); a loaded
// scraper has a valid name and a colour, and its extract() never throws and obeys the headline
// rules (non-empty titles, http(s) URLs, its own site name, no duplicate URL, at most
// max_headlines_per_site).
#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"

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

constexpr std::string_view page =
    R"html(<!doctype html><html><head><base href="/news/"></head><body>
<a data-testid="internal-link" href="story/1"><h2 data-testid="card-headline">One</h2></a>
<a class="titleline" href="https://example.com/two">Two</a>
<span class="titleline"><a href="item?id=3">Three</a></span>
<a href="javascript:void(0)">Bad</a><a href="mailto:x@example.com">Mail</a>
<div class="story"><h3><a href="/world/2025/4">Four <b>bold</b></a></h3></div>
<a href="https://example.com/two">Two again</a><a href="//cdn.example.com/5">Five</a>
</body></html>)html";

const dom::document& document() {
  static const dom::document doc = dom::document::parse(page);
  return doc;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_site_file_bytes) // load_site_file() refuses larger files before parsing
    return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<scraper> s;
  try {
    s = parse_site_file(text, "sites/fuzz.json");
  } catch (const site_file_error& e) {
    require(std::string_view(e.what()).rfind("sites/fuzz.json: ", 0) == 0);
    return 0;
  }
  require(s != nullptr);
  const site_info& info = s->site();
  require(is_valid_site_name(info.name));
  require(!info.colour.empty());
  require(info.origin == "sites/fuzz.json");

  for (std::string_view page_url : {std::string_view("https://www.example.com/"),
                                    std::string_view(info.url), std::string_view("")}) {
    const auto found = s->extract(document(), page_url);
    require(found.size() <= max_headlines_per_site);
    std::set<std::string> urls;
    for (const auto& h : found) {
      require(!h.title.empty() && h.site == info.name);
      require(h.url.rfind("http://", 0) == 0 || h.url.rfind("https://", 0) == 0);
      require(urls.insert(h.url).second);
    }
  }
  return 0;
}

// libFuzzer target: arbitrary bytes as a fetched page. dom::document::parse (Gumbo) builds the
// tree, then every built-in scraper (scrapers/sites/*.cpp) and every shipped site file
// (sites/*.json) extracts from it, each against its own front-page URL, as the service does.
//
// Checked: nothing crashes, hangs or leaks; extract() never throws (the contract); headlines
// obey the shared rules (non-empty, whitespace-collapsed titles; http(s) URLs; the scraper's own
// site name; no duplicate URL; at most max_headlines_per_site). The DOM helpers scrapers rely on
// (text, attributes, parent links, base_href) are walked over the whole tree too. And parsing
// drops the text of script and style elements before Gumbo reads the page: every scraper finds
// the same headlines in the page parsed whole.
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

#ifndef NEWSDESK_SITES_DIR
#error "NEWSDESK_SITES_DIR must name the shipped sites/ folder"
#endif

namespace {

using namespace newsdesk::scrapers;

void require(bool ok) {
  if (!ok)
    std::abort();
}

const registry& scrapers() {
  static const registry r = [] {
    registry all;
    register_builtin_scrapers(all);
    load_site_folder(NEWSDESK_SITES_DIR, all);
    return all;
  }();
  return r;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)scrapers(); // load the site files once, outside the timed runs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > dom::max_document_bytes) // the renderers refuse larger pages
    return 0;
  const std::string_view page{reinterpret_cast<const char*>(data), size};
  const auto doc = dom::document::parse(page);
  const auto whole = dom::document::parse(page, dom::document::script_text::kept);
  require(doc.root() && doc.html());

  std::size_t elements = 0;
  for (dom::node e : doc.root().descendant_elements()) {
    ++elements;
    require(e.is_element() && e.parent());
    for (const auto& a : e.attributes())
      require(e.attr(a.name).has_value());
  }
  (void)doc.base_href();
  const std::string all_text = doc.root().text();
  require(all_text == collapse_whitespace(all_text));

  for (const scraper* s : scrapers().all()) {
    const auto found = s->extract(doc, s->site().url);
    require(found.size() <= max_headlines_per_site);
    const auto found_whole = s->extract(whole, s->site().url);
    require(found.size() == found_whole.size());
    for (std::size_t i = 0; i < found.size(); ++i)
      require(found[i].title == found_whole[i].title && found[i].url == found_whole[i].url);
    std::set<std::string_view> urls;
    for (const auto& h : found) {
      require(!h.title.empty() && h.title == collapse_whitespace(h.title));
      require(h.site == s->site().name);
      require(h.url.rfind("http://", 0) == 0 || h.url.rfind("https://", 0) == 0);
      require(urls.insert(h.url).second);
    }
  }
  (void)elements;
  return 0;
}

#include "scrapers/scraper.hpp"

#include "scrapers/charset.hpp"
#include "scrapers/dom.hpp"

namespace newsdesk::scrapers {

std::vector<headline> scraper::parse(std::string_view html, std::string_view page_url,
                                     std::string* note, std::string_view content_type) const {
  if (note)
    note->clear();
  const auto page = parse_page(html, content_type);
  auto found = extract(page, page_url);
  declare_language(found, page_language(page));
  return found;
}

void scraper::declare_language(std::vector<headline>& found, std::string_view source) const {
  const std::string_view declared = site().language.empty() ? source : site().language;
  for (auto& h : found)
    h.language = declared.substr(0, max_language_bytes);
}

std::string_view scraper::page_language(const dom::document& page) {
  const auto html = page.html();
  auto lang = html.attr("lang");
  if (!lang)
    lang = html.attr("xml:lang");
  return lang ? *lang : std::string_view();
}

dom::document scraper::parse_page(std::string_view html, std::string_view content_type) {
  // Gumbo reads UTF-8: a page in another charset is converted first (charset.hpp says how its
  // charset is found).
  std::string converted;
  if (auto utf8 = page_as_utf8(html, content_type)) {
    converted = std::move(*utf8);
    html = converted;
  }
  const auto cost = dom::measure_markup(html);
  if (cost.max_depth > dom::max_nesting_depth)
    throw dom::too_complex("the page nests its elements " + std::to_string(cost.max_depth) +
                           " deep (at most " + std::to_string(dom::max_nesting_depth) +
                           " are read): refused before parsing");
  if (cost.elements > dom::max_elements)
    throw dom::too_complex("the page has " + std::to_string(cost.elements) + " elements (at most " +
                           std::to_string(dom::max_elements) +
                           " are read): refused before parsing");
  if (cost.links > dom::max_links)
    throw dom::too_complex("the page has " + std::to_string(cost.links) + " links (at most " +
                           std::to_string(dom::max_links) + " are read): refused before parsing");
  return dom::document::parse(html);
}

std::string renderer_name_list() {
  std::string out;
  for (std::string_view name : renderer_names)
    out.append(out.empty() ? "" : ", ").append(name);
  return out;
}

std::string origin_of(const site_info& info) {
  return info.origin.empty() ? "scrapers/sites/" + info.name + ".cpp" : info.origin;
}

} // namespace newsdesk::scrapers

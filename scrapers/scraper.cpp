#include "scrapers/scraper.hpp"

#include "scrapers/dom.hpp"

namespace newsdesk::scrapers {

std::vector<headline> scraper::parse(std::string_view html, std::string_view page_url,
                                     std::string* note, std::string_view) const {
  if (note)
    note->clear();
  return extract(parse_page(html), page_url);
}

dom::document scraper::parse_page(std::string_view html) {
  const auto cost = dom::measure_markup(html);
  if (cost.max_depth > dom::max_nesting_depth)
    throw dom::too_complex("the page nests its elements " + std::to_string(cost.max_depth) +
                           " deep (at most " + std::to_string(dom::max_nesting_depth) +
                           " are read): refused before parsing");
  if (cost.elements > dom::max_elements)
    throw dom::too_complex("the page has " + std::to_string(cost.elements) + " elements (at most " +
                           std::to_string(dom::max_elements) +
                           " are read): refused before parsing");
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

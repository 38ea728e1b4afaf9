#include "scrapers/scraper.hpp"

#include "scrapers/dom.hpp"

namespace newsdesk::scrapers {

std::vector<headline> scraper::parse(std::string_view html, std::string_view page_url) const {
  return extract(dom::document::parse(html), page_url);
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

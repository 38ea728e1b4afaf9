#include "scrapers/scraper.hpp"

#include "scrapers/dom.hpp"

namespace newsdesk::scrapers {

std::vector<headline> scraper::parse(std::string_view html, std::string_view page_url) const {
  return extract(dom::document::parse(html), page_url);
}

} // namespace newsdesk::scrapers

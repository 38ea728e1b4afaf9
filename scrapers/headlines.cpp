#include "scrapers/headlines.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/text.hpp"
#include "scrapers/url.hpp"

#include <utility>

namespace newsdesk::scrapers {
std::string collapse_whitespace(std::string_view text) {
  collapsed_text out;
  out.reserve(text.size());
  out.append(text);
  return std::move(out).take();
}

headline_collector::headline_collector(std::string site, std::string_view page_url,
                                       const dom::document& page)
    : site_(std::move(site))
    , base_(page_url) {
  // A <base href> that does not resolve is ignored, as browsers fall back to the page URL.
  if (auto base_href = page.base_href()) {
    if (auto resolved = url::resolve(page_url, *base_href)) {
      base_ = std::move(*resolved);
    }
  }
}

std::optional<std::string> headline_collector::resolve(std::string_view href) const {
  return url::resolve(base_, href);
}

bool headline_collector::add(std::string_view raw_title, std::string_view href) {
  if (headlines_.size() >= max_headlines_per_site) {
    return false;
  }
  std::string title = collapse_whitespace(raw_title);
  if (title.empty()) {
    return false;
  }
  std::optional<std::string> resolved = resolve(href);
  if (!resolved || !url::is_http_url(*resolved)) {
    return false;
  }
  if (!seen_urls_.insert(*resolved).second) {
    return false;
  }
  headlines_.push_back({std::move(title), std::move(*resolved), site_});
  return true;
}

std::vector<headline> headline_collector::take() {
  seen_urls_.clear();
  return std::exchange(headlines_, {});
}

} // namespace newsdesk::scrapers

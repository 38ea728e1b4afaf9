#include "scrapers/registry.hpp"

#include <stdexcept>

namespace newsdesk::scrapers {

bool is_valid_site_name(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

void registry::add(std::unique_ptr<scraper> s) {
  if (!s) {
    throw std::invalid_argument("scraper registry: null scraper");
  }
  const std::string& name = s->site().name;
  if (!is_valid_site_name(name)) {
    throw std::invalid_argument("scraper registry: invalid site name \"" + name +
                                "\" (expected [a-z0-9_-]+)");
  }
  if (scrapers_.contains(name)) {
    throw std::invalid_argument("scraper registry: duplicate site name \"" + name + "\"");
  }
  std::string key = name;
  scrapers_.emplace(std::move(key), std::move(s));
}

const scraper* registry::find(std::string_view name) const {
  auto it = scrapers_.find(name);
  return it == scrapers_.end() ? nullptr : it->second.get();
}

std::vector<const scraper*> registry::all() const {
  std::vector<const scraper*> out;
  out.reserve(scrapers_.size());
  for (const auto& [name, s] : scrapers_) {
    out.push_back(s.get());
  }
  return out;
}

} // namespace newsdesk::scrapers

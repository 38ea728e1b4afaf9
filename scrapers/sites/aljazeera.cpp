// Al Jazeera English (www.aljazeera.com).
//
// A headline is a link to a news story on aljazeera.com; the title is the link's text. Story
// URLs identify the links, which makes the scraper independent of the card markup around them:
//   2021-      article.gc ... h3.gc__title > a.u-clickable-card__link[href] > span, with dated
//              hrefs "/news/2024/3/5/slug" (live blogs: "/news/liveblog/2024/3/5/slug")
//   before     hrefs under "/news/" ending in ".html"
// Section and tag pages ("/news/", "/tag/...") and other sections (features, opinion, sport)
// are not news stories and are left out. Image links to the same story carry no text and are
// dropped by the collector, so the titled link of each card is the one kept.
#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/scraper.hpp"
#include "scrapers/url.hpp"

#include <memory>

namespace newsdesk::scrapers::sites {
namespace {

bool is_digits(std::string_view s, std::size_t min, std::size_t max) {
  if (s.size() < min || s.size() > max) {
    return false;
  }
  for (char c : s) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

// Splits "a/b/c" on "/" keeping empty segments.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (true) {
    std::size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) {
      return out;
    }
    path.remove_prefix(slash + 1);
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "/news/YYYY/M/D/slug" (optionally "/news/liveblog/...", optionally a trailing "/"), or an
// older "/news/.../name.html".
bool is_story_path(std::string_view path) {
  constexpr std::string_view prefix = "/news/";
  if (path.substr(0, prefix.size()) != prefix) {
    return false;
  }
  std::string_view rest = path.substr(prefix.size());
  if (ends_with(rest, ".html") && rest.size() > 5) {
    return true;
  }
  if (rest.substr(0, 9) == "liveblog/") {
    rest.remove_prefix(9);
  }
  if (ends_with(rest, "/")) {
    rest.remove_suffix(1);
  }
  std::vector<std::string_view> parts = segments(rest);
  return parts.size() == 4 && is_digits(parts[0], 4, 4) && is_digits(parts[1], 1, 2) &&
         is_digits(parts[2], 1, 2) && !parts[3].empty();
}

class aljazeera_scraper final : public scraper {
 public:
  const site_info& site() const override { return info_; }

  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    headline_collector collector(info_.name, page_url, page);
    for (dom::node link : page.root().descendant_elements()) {
      if (!link.has_tag("a")) {
        continue;
      }
      std::optional<std::string_view> href = link.attr("href");
      if (!href) {
        continue;
      }
      std::optional<std::string> target = collector.resolve(*href);
      if (!target) {
        continue;
      }
      std::optional<url::http_parts> parts = url::split_http_url(*target);
      if (!parts || !url::host_within(parts->host, "aljazeera.com") ||
          !is_story_path(parts->path)) {
        continue;
      }
      collector.add_link(link, *href);
    }
    return collector.take();
  }

 private:
  site_info info_{
      .name = "aljazeera",
      .display_name = "Al Jazeera",
      .url = "https://www.aljazeera.com/",
      .colour = "#b58900",
      .wait_seconds = std::nullopt,
      .timeout_seconds = std::nullopt,
      .renderer = std::nullopt,
  };
};

} // namespace

std::unique_ptr<scraper> make_aljazeera() {
  return std::make_unique<aljazeera_scraper>();
}

} // namespace newsdesk::scrapers::sites

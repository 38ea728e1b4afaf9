// The contract between a news site's scraper and the rest of newsdesk.
//
// A scraper is pure: given a rendered page and the URL it came from, it returns the page's
// headlines. It does no I/O, keeps no mutable state and may be called from any thread at once.
// Built-in scrapers live one per file in scrapers/sites/ (see README "Adding a site in C++");
// declarative site files (JSON + CSS selectors) implement the same interface.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

namespace dom {
class document;
}

// One headline as shown on /news.
struct headline {
  std::string title; // whitespace-collapsed text; never empty
  std::string url;   // absolute http or https URL, resolved per RFC 3986
  std::string site;  // name of the site it came from (site_info::name)

  friend bool operator==(const headline&, const headline&) = default;
};

// What a scraper knows about its site: the defaults the service uses unless the config
// overrides them. Render options left empty take the service-wide defaults.
struct site_info {
  std::string name;                      // stable id, [a-z0-9_-]+, used in config and query strings
  std::string display_name;              // shown to people, e.g. "CNN"
  std::string url;                       // the front page to render
  std::string colour;                    // CSS colour of the site's boxes, e.g. "#cc0000"
  std::optional<double> wait_seconds;    // renderer wait after the load event
  std::optional<double> timeout_seconds; // whole-render deadline
  std::optional<std::string> renderer;   // "splash", "direct", ...
};

class scraper {
 public:
  virtual ~scraper() = default;

  virtual const site_info& site() const = 0;

  // Extracts the headlines of an already parsed page. Must not throw for any document;
  // a page without recognisable headlines yields an empty vector.
  virtual std::vector<headline> extract(const dom::document& page,
                                        std::string_view page_url) const = 0;

  // Parses `html` (any bytes; invalid UTF-8 is tolerated) and extracts from it.
  std::vector<headline> parse(std::string_view html, std::string_view page_url) const;
};

} // namespace newsdesk::scrapers

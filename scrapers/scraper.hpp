// The contract between a news site's scraper and the rest of newsdesk.
//
// A scraper is pure: given a rendered page and the URL it came from, it returns the page's
// headlines. It does no I/O, keeps no mutable state and may be called from any thread at once.
// Built-in scrapers live one per file in scrapers/sites/ (see README "Adding a site in C++");
// declarative site files (JSON + CSS selectors) implement the same interface.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
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
  // When the source says it was published (Unix milliseconds): a feed item's date, a page's
  // <time datetime> beside the link. Unset when the source gives none or an implausible one.
  std::optional<std::int64_t> published_ms;
  // A label the page shows before the title and apart from it ("PLANE CRASH"); may be empty.
  std::string kicker;
  // The language its source declares, as declared ("de", "pt-BR"): the site's own (site_info::
  // language), else the page's <html lang> or the feed's <language>. Empty when none is; the
  // store reads it, or detects one from the title (server/words/language.hpp).
  std::string language;
  // A line of summary its source gives (a feed item's description), as text, at most
  // max_summary_bytes; empty when none is given or it only repeats the title.
  std::string summary;
  // A picture its source shows with it, as an absolute http(s) URL: the <img> in its card on
  // the page, a feed item's media:content, media:thumbnail or image enclosure. Empty when none.
  // Only named here: the server decides whether to fetch it (server/pictures/).
  std::string image;

  friend bool operator==(const headline&, const headline&) = default;
};

// What a scraper knows about its site: the defaults the service uses unless the config
// overrides them. Render options left empty take the service-wide defaults.
struct site_info {
  std::string name;         // stable id, [a-z0-9_-]+, used in config and query strings
  std::string display_name; // shown to people, e.g. "CNN"
  std::string url;          // the front page to render (a feed site: its feed)
  // The site's home page for people, when it is not `url`: a feed site file's "url" beside its
  // "feed". Never fetched. Empty: `url` is the home page.
  std::string home_url;
  std::string colour; // CSS colour of the site's boxes, e.g. "#cc0000"
  // The section of the page it belongs to ("World", "Technology"), a chip of its own that lists
  // its sites together; empty: none.
  std::string section;
  std::optional<double> wait_seconds;    // renderer wait after the load event
  std::optional<double> timeout_seconds; // whole-render deadline
  std::optional<std::string> renderer;   // one of renderer_names
  // Where the site was defined, for messages: a site file's path; empty for a C++ scraper.
  std::string origin;
  // The language its headlines are written in ("de", "pt-BR"), when the site declares one (a
  // site file's "language"): it wins over what its pages or feed say. Empty: theirs.
  std::string language;
};

// A declared language longer than this is cut (a language tag is a few letters; BCP 47's longest
// practical tags are about 35 bytes): a page's lang attribute is not a place to store text.
inline constexpr std::size_t max_language_bytes = 64;

// The renderers a site may ask for; the server builds one of each that is configured.
// "feed" fetches a site's RSS or Atom feed directly (no browser), polling it conditionally.
inline constexpr std::array<std::string_view, 5> renderer_names{"splash", "chromium", "browserless",
                                                                "direct", "feed"};

inline bool is_renderer_name(std::string_view name) {
  return std::find(renderer_names.begin(), renderer_names.end(), name) != renderer_names.end();
}

// "splash, chromium, browserless, direct", for messages that list the choices.
std::string renderer_name_list();

// Where a site was defined, for messages: its site file, or the C++ scraper's source file.
std::string origin_of(const site_info& info);

class scraper {
 public:
  virtual ~scraper() = default;

  virtual const site_info& site() const = 0;

  // Extracts the headlines of an already parsed page. Must not throw for any document;
  // a page without recognisable headlines yields an empty vector.
  virtual std::vector<headline> extract(const dom::document& page,
                                        std::string_view page_url) const = 0;

  // The scraper's rules in one spelling, so a reload can tell a changed site from one merely
  // loaded again: a site file's parsed JSON (whitespace and key order do not matter). Empty for
  // a C++ scraper, whose rules change only with the binary.
  virtual std::string definition() const { return {}; }

  // Parses `html` (any bytes, in any charset: see charset.hpp; invalid sequences are tolerated)
  // and extracts from it. Throws
  // dom::too_complex, before parsing, for a page past dom::max_nesting_depth or max_elements.
  // A scraper whose source is not a page (a feed) reads the bytes its own way instead, and
  // throws its own error (feed_error) for bytes it cannot read. `note`, when given, receives
  // what the site's operator should know although headlines were found ("found by detection;
  // the selectors matched nothing"), or is cleared. `content_type` is the HTTP Content-Type the
  // bytes came with when they were fetched directly (empty from a browser or a saved file): a
  // page or a feed takes its charset from it first.
  virtual std::vector<headline> parse(std::string_view html, std::string_view page_url,
                                      std::string* note, std::string_view content_type) const;
  std::vector<headline> parse(std::string_view html, std::string_view page_url,
                              std::string* note) const {
    return parse(html, page_url, note, {});
  }
  std::vector<headline> parse(std::string_view html, std::string_view page_url) const {
    return parse(html, page_url, nullptr, {});
  }

 protected:
  // The page parsed, after its conversion to UTF-8 from the charset its bytes and `content_type`
  // give (charset.hpp) and the bounds check parse() applies (throws dom::too_complex).
  static dom::document parse_page(std::string_view html, std::string_view content_type = {});
  // Gives each of `found` the site's declared language, else `source`'s (the page's <html lang>,
  // the feed's <language>).
  void declare_language(std::vector<headline>& found, std::string_view source) const;
  static std::string_view page_language(const dom::document& page);
};

} // namespace newsdesk::scrapers

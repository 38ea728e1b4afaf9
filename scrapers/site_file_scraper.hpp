// Internal to scrapers/ (namespace detail): the scrapers a site file describes, as
// parse_site_file (site_file.cpp) builds them and try_scraper (site_file_scraper.cpp) looks
// inside them. Not part of the site-file surface: only those files include it; everyone else
// sees a plain `scraper` (site_file.hpp).
#pragma once

#include "scrapers/css/selector.hpp"
#include "scrapers/dom.hpp"
#include "scrapers/scraper.hpp"
#include "scrapers/site_file.hpp"

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace newsdesk::scrapers::detail {

// One of a rule's include/exclude filters on the resolved URL of a link.
struct url_filter {
  std::vector<std::string> prefix;
  std::vector<std::string> suffix;
  std::vector<std::string> contains;
  std::optional<std::regex> regex;

  bool empty() const { return prefix.empty() && suffix.empty() && contains.empty() && !regex; }
};

// One rule of a site file: which elements are its headline links and which of them to keep.
struct rule {
  std::string field;     // how errors and hints name it: "link" or "rules[1].link"
  std::string link_text; // the selector as written
  css::selector_list link;
  std::optional<css::selector_list> title;
  bool title_fallback = false; // the link's own text when `title` finds nothing inside it
  std::string url_attribute = "href";
  url_filter include;
  url_filter exclude;
};

// A site read from its page by the site file's rules (or by detection when it has none).
class site_file_scraper final : public scraper {
 public:
  site_file_scraper(site_info info, std::vector<rule> rules, std::string definition)
      : info_(std::move(info))
      , rules_(std::move(rules))
      , definition_(std::move(definition)) {}

  const site_info& site() const override { return info_; }
  std::string definition() const override { return definition_; }

  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    return run(page, page_url, nullptr, false);
  }

  // Selectors first; detection when the file has none, or when they find nothing (a redesign):
  // the site keeps its headlines and the note tells the operator to update the file.
  using scraper::parse;
  std::vector<headline> parse(std::string_view html, std::string_view page_url, std::string* note,
                              std::string_view content_type) const override;

  // run(), then detection when the selectors found nothing; `s.method` says which. With
  // `explain`, s.left_out lists every link left out and why (for --try-site; the service does
  // without the list).
  std::vector<headline> read(const dom::document& page, std::string_view page_url, site_trial& s,
                             bool explain) const;
  static constexpr const char* fallback_method = "detection (the selectors matched nothing)";

  // Never throws except std::bad_alloc (which terminates a noexcept caller as it would anyway).
  std::vector<headline> run(const dom::document& page, std::string_view page_url, site_trial* stats,
                            bool explain) const;

 private:
  static const css::selector_list& links_inside();

  // The elements the rules' link selectors match, in page order, each with the first rule that
  // matches it (up to max_link_matches): headlines keep the page's order whichever rule found
  // them.
  std::vector<std::pair<dom::node, const rule*>> matches(const dom::document& page) const;

  static bool passes_filters(const rule& r, const std::string& url);

  site_info info_;
  std::vector<rule> rules_;
  std::string definition_; // the file's JSON, dumped: keys sorted, no whitespace
};

// A site read from its RSS or Atom feed: the "page" it is given is the feed's bytes.
class feed_scraper final : public scraper {
 public:
  feed_scraper(site_info info, std::string definition)
      : info_(std::move(info))
      , definition_(std::move(definition)) {}

  const site_info& site() const override { return info_; }
  std::string definition() const override { return definition_; }
  // A feed has no page to look at: its headlines come from parse().
  std::vector<headline> extract(const dom::document&, std::string_view) const override {
    return {};
  }
  using scraper::parse;
  // A feed's warning (read in recovery mode, or in another encoding than it claims) is not
  // passed on as the note: /news shows any note as "found by detection".
  std::vector<headline> parse(std::string_view bytes, std::string_view feed_url, std::string* note,
                              std::string_view content_type) const override;

 private:
  site_info info_;
  std::string definition_;
};

} // namespace newsdesk::scrapers::detail

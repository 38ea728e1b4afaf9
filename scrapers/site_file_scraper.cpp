// The scrapers a site file describes (site_file_scraper.hpp): reading a page by the file's rules,
// with the counts and reasons --try-site shows, and reading a feed; and try_scraper, which runs
// any scraper as the service would for --try-site.
#include "scrapers/site_file_scraper.hpp"

#include "scrapers/charset.hpp"
#include "scrapers/css/selector.hpp"
#include "scrapers/detect.hpp"
#include "scrapers/dom.hpp"
#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/site_file.hpp"
#include "scrapers/text.hpp"
#include "scrapers/url.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <unordered_map>
#include <utility>

namespace newsdesk::scrapers {
namespace detail {
namespace {

bool any_prefix(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& p) { return url.starts_with(p); });
}
bool any_suffix(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& s) { return url.ends_with(s); });
}
bool any_substring(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& s) { return url.find(s) != std::string_view::npos; });
}
bool regex_finds(const std::regex& re, const std::string& url) {
  return std::regex_search(url, re);
}

// include: every kind that is given must match (any entry of a list will do).
bool included(const url_filter& f, const std::string& url) {
  return (f.prefix.empty() || any_prefix(f.prefix, url)) &&
         (f.suffix.empty() || any_suffix(f.suffix, url)) &&
         (f.contains.empty() || any_substring(f.contains, url)) &&
         (!f.regex || regex_finds(*f.regex, url));
}

// exclude: any single test that matches is enough.
bool excluded(const url_filter& f, const std::string& url) {
  return any_prefix(f.prefix, url) || any_suffix(f.suffix, url) || any_substring(f.contains, url) ||
         (f.regex && regex_finds(*f.regex, url));
}

} // namespace

std::vector<headline> site_file_scraper::parse(std::string_view html, std::string_view page_url,
                                               std::string* note,
                                               std::string_view content_type) const {
  site_trial trial;
  const auto page = parse_page(html, content_type);
  auto found = read(page, page_url, trial, false);
  declare_language(found, page_language(page));
  if (note)
    *note =
        trial.method == fallback_method ? "found by detection; the selectors matched nothing" : "";
  return found;
}

std::vector<headline> site_file_scraper::read(const dom::document& page, std::string_view page_url,
                                              site_trial& s, bool explain) const {
  auto found = run(page, page_url, &s, explain);
  if (found.empty() && s.method == "selectors") {
    found = detect_headlines(page, page_url, info_.name, explain ? &s.left_out : nullptr);
    if (!found.empty()) {
      s.method = fallback_method;
    }
  }
  return found;
}

std::vector<headline> site_file_scraper::run(const dom::document& page, std::string_view page_url,
                                             site_trial* stats, bool explain) const {
  site_trial ignored;
  site_trial& s = stats ? *stats : ignored;
  std::vector<left_out_link>* left_out = stats && explain ? &s.left_out : nullptr;
  if (rules_.empty()) { // a file with only a name and a URL: detection is its rule
    s.method = "detection";
    return detect_headlines(page, page_url, info_.name, left_out);
  }
  s.method = "selectors";
  headline_collector collector(info_.name, page_url, page);
  collector.report_left_out(left_out);
  auto leave_out = [&](dom::node link, std::string_view url, const char* reason) {
    if (left_out)
      left_out->push_back({collapse_whitespace(cut_utf8(link.text(), max_left_out_title)),
                           std::string(url), reason});
  };
  // Per rule: elements matched, and how many of those had no URL but hold a link.
  std::map<const rule*, std::pair<std::size_t, std::size_t>> holders;
  for (const auto& [link, r] : matches(page)) {
    ++holders[r].first;
    ++s.link_matches;
    std::optional<std::string_view> href = link.attr(r->url_attribute);
    std::optional<std::string> target = href ? collector.resolve(*href) : std::nullopt;
    if (!target || !url::is_http_url(*target)) {
      ++s.without_url;
      leave_out(link, href ? *href : std::string_view(), "no usable URL");
      if (!href && css::select_first(link, links_inside())) {
        ++holders[r].second;
      }
      continue;
    }
    dom::node title = r->title ? css::select_first(link, *r->title) : link;
    if (!title && r->title_fallback) {
      title = link;
    }
    const auto parts = title ? split_title(title) : title_parts();
    const std::string& text = parts.title;
    if (text.empty()) {
      ++s.without_title;
      leave_out(link, *target, "bad title: the title selector found no text");
      continue;
    }
    if (!passes_filters(*r, *target)) {
      ++s.filtered_out;
      leave_out(link, *target, "filtered out by include/exclude");
      continue;
    }
    if (!collector.add(text, *href, time_near(link, collector.now_ms()), parts.kicker)) {
      switch (collector.last_refusal()) {
      case headline_collector::refusal::bad_title:
        ++s.bad_titles;
        break;
      case headline_collector::refusal::not_http:
        ++s.without_url;
        break;
      default:
        ++s.duplicates;
      }
    } else {
      collector.illustrate_last(image_near(link));
    }
  }
  // A selector that matches the boxes around links rather than the links is the commonest
  // mistake: say so, and how to fix it.
  for (const auto& [r, count] : holders) {
    if (count.first > 0 && count.second == count.first) {
      s.hint = r->field + ": '" + r->link_text + "' matched " + std::to_string(count.first) +
               (count.first == 1 ? " element" : " elements") +
               " but none is a link (an <a href>); they contain links: try '" + r->link_text +
               " a'";
      break;
    }
  }
  return collector.take();
}

const css::selector_list& site_file_scraper::links_inside() {
  static const css::selector_list list = css::parse("a[href]");
  return list;
}

std::vector<std::pair<dom::node, const rule*>>
site_file_scraper::matches(const dom::document& page) const {
  std::vector<std::pair<dom::node, const rule*>> out;
  if (rules_.size() == 1) {
    for (dom::node e : css::select(page.root(), rules_.front().link)) {
      out.emplace_back(e, &rules_.front());
    }
  } else {
    // One selection per rule (each linear in the page), then one walk to put the matches in
    // page order: testing every element against every rule would walk each one's ancestors.
    std::unordered_map<const void*, const rule*> first_rule;
    for (const rule& r : rules_) {
      for (dom::node e : css::select(page.root(), r.link)) {
        first_rule.emplace(e.raw(), &r); // an earlier rule keeps an element it matched
      }
    }
    for (dom::node e : page.root().descendant_elements()) {
      if (out.size() > max_link_matches || out.size() == first_rule.size()) {
        break;
      }
      if (auto it = first_rule.find(e.raw()); it != first_rule.end()) {
        out.emplace_back(e, it->second);
      }
    }
  }
  if (out.size() > max_link_matches) {
    out.resize(max_link_matches);
  }
  return out;
}

bool site_file_scraper::passes_filters(const rule& r, const std::string& url) {
  if (r.include.empty() && r.exclude.empty()) {
    return true;
  }
  if (url.size() > max_filtered_url_bytes) {
    return false;
  }
  // std::regex reports resource exhaustion (a pathological pattern) by throwing; extract()
  // must not throw, and a link we cannot judge is better left out.
  try {
    return included(r.include, url) && !excluded(r.exclude, url);
  } catch (const std::regex_error&) {
    return false;
  }
}

std::vector<headline> feed_scraper::parse(std::string_view bytes, std::string_view feed_url,
                                          std::string* note, std::string_view content_type) const {
  if (note)
    note->clear();
  auto read = parse_feed(bytes, feed_url, info_.name, content_type);
  declare_language(read.headlines, read.language);
  return std::move(read.headlines);
}

} // namespace detail

using detail::feed_scraper;
using detail::site_file_scraper;

site_trial try_scraper(const scraper& s, std::string_view html, std::string_view page_url,
                       std::string_view content_type) {
  site_trial trial;
  trial.site = s.site();
  std::string base(page_url.empty() ? std::string_view(trial.site.url) : page_url);
  if (const auto* site = dynamic_cast<const site_file_scraper*>(&s)) {
    const auto utf8 = page_as_utf8(html, content_type); // as the service reads the page
    trial.headlines =
        site->read(dom::document::parse(utf8 ? std::string_view(*utf8) : html), base, trial, true);
  } else if (dynamic_cast<const feed_scraper*>(&s)) {
    // The feed read as the service reads it, and what it would warn about as the hint.
    trial.method = "feed";
    auto f = parse_feed(html, base, trial.site.name, content_type);
    trial.headlines = std::move(f.headlines);
    trial.hint = std::move(f.warning);
  } else {
    trial.method = "built-in scraper (" + origin_of(trial.site) + ")";
    trial.headlines = s.parse(html, base, nullptr, content_type);
  }
  return trial;
}

site_trial try_site_file(const std::filesystem::path& file, std::string_view html,
                         std::string_view page_url) {
  return try_scraper(*load_site_file(file), html, page_url);
}

std::vector<headline> try_site(const std::filesystem::path& file, std::string_view html,
                               std::string_view page_url) {
  return try_site_file(file, html, page_url).headlines;
}

} // namespace newsdesk::scrapers

#include "scrapers/detect.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/url.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <string>

namespace newsdesk::scrapers {

namespace {

// How far up a link's ancestors are read: navigation and headings sit within a few levels of
// their links; the bound keeps each link's cost constant on deeply nested pages.
constexpr int ancestor_limit = 24;
// A link passes with at least this score (see score_link).
constexpr int threshold = 4;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool has_any(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return text.find(w) != std::string_view::npos; });
}

// Class and id words of page furniture rather than content, across sites. Structural words
// count as any part of a token between '-' or '_' ("site-nav", "footer__links"); words that also
// describe content layouts ("zn-left-fluid-share") only as a token's first part or whole token
// ("share-bar", "cookie-banner"). Never inside another word ("canvas", "unavailable").
bool is_furniture_name(std::string_view class_and_id) {
  static constexpr std::array<std::string_view, 8> anywhere{
      "nav", "navigation", "menu", "footer", "breadcrumb", "breadcrumbs", "sidebar", "masthead"};
  static constexpr std::array<std::string_view, 13> leading{
      "share",  "social",  "cookie", "consent", "subscribe", "newsletter", "login",
      "signin", "account", "skip",   "toolbar", "trending",  "sharing"};
  auto in = [](const auto& list, std::string_view part) {
    return std::find(list.begin(), list.end(), part) != list.end();
  };
  std::size_t at = 0;
  while (at < class_and_id.size()) {
    auto end = class_and_id.find_first_of(" \t\n", at);
    auto token = class_and_id.substr(at, end == std::string_view::npos ? end : end - at);
    std::size_t p = 0;
    while (p <= token.size()) {
      auto q = token.find_first_of("-_", p);
      auto part = token.substr(p, q == std::string_view::npos ? q : q - p);
      if (in(anywhere, part) || (p == 0 && in(leading, part)))
        return true;
      if (q == std::string_view::npos)
        break;
      p = q + 1;
    }
    if (end == std::string_view::npos)
      break;
    at = end + 1;
  }
  return false;
}

bool is_heading(const dom::node& n) {
  return n.has_tag("h1") || n.has_tag("h2") || n.has_tag("h3") || n.has_tag("h4");
}

struct context {
  bool furniture = false; // inside navigation, a footer, a sidebar, a banner...
  bool in_heading = false;
  bool in_main = false;  // inside <main> or <article>
  bool titled = false;   // an ancestor's class says headline or title
  std::string signature; // the nearest ancestors' tags and first classes
};

context context_of(const dom::node& link) {
  context c;
  bool header = false;
  int depth = 0;
  for (dom::node n = link.parent(); n && n.is_element() && depth < ancestor_limit;
       n = n.parent(), ++depth) {
    if (n.has_tag("nav") || n.has_tag("footer") || n.has_tag("aside") || n.has_tag("form") ||
        n.has_tag("button"))
      c.furniture = true;
    if (n.has_tag("header"))
      header = true;
    if (n.has_tag("main") || n.has_tag("article"))
      c.in_main = true;
    if (depth < 3 && is_heading(n))
      c.in_heading = true;
    const auto role = lower(n.attr("role").value_or(""));
    if (role == "navigation" || role == "banner" || role == "contentinfo" ||
        role == "complementary" || role == "menu" || role == "menubar" || role == "search")
      c.furniture = true;
    const auto names = lower(std::string(n.attr("class").value_or("")) + " " +
                             std::string(n.attr("id").value_or("")));
    if (is_furniture_name(names))
      c.furniture = true;
    if (depth < 4 && has_any(names, {"headline", "title", "story", "article", "teaser", "card"}))
      c.titled = true;
    if (depth < 3) {
      auto cls = n.attr("class").value_or("");
      auto first = cls.substr(0, cls.find(' '));
      c.signature += n.tag_name() + "." + std::string(first) + "/";
    }
  }
  // A <header> is the page's masthead unless it sits in an article (a story card's own header).
  if (header && !c.in_main)
    c.furniture = true;
  return c;
}

// Words of text: runs between spaces.
std::size_t word_count(std::string_view text) {
  std::size_t words = 0;
  bool in_word = false;
  for (char ch : text) {
    const bool space = ch == ' ';
    if (!space && !in_word)
      ++words;
    in_word = !space;
  }
  return words;
}

bool is_label(std::string_view lowered) {
  static constexpr std::array<std::string_view, 18> labels{
      "more",    "read more", "see more",  "see all", "view all", "continue reading",
      "sign in", "log in",    "subscribe", "share",   "home",     "menu",
      "next",    "previous",  "comments",  "watch",   "listen",   "live"};
  return std::find(labels.begin(), labels.end(), lowered) != labels.end();
}

bool all_capitals(std::string_view text) {
  std::size_t letters = 0;
  for (unsigned char ch : text) {
    if (std::islower(ch))
      return false;
    if (std::isupper(ch))
      ++letters;
  }
  return letters >= 5;
}

// The domain a page's own links share: "www.bbc.com" -> "bbc.com", "www.bbc.co.uk" ->
// "bbc.co.uk" (a short second label under a country code is part of the suffix).
std::string site_domain(std::string_view host) {
  std::vector<std::string_view> labels;
  while (!host.empty()) {
    auto dot = host.find('.');
    labels.push_back(host.substr(0, dot));
    host = dot == std::string_view::npos ? std::string_view() : host.substr(dot + 1);
  }
  std::size_t keep = 2;
  if (labels.size() >= 3 && labels.back().size() == 2 && labels[labels.size() - 2].size() <= 3)
    keep = 3;
  std::string out;
  for (std::size_t i = labels.size() > keep ? labels.size() - keep : 0; i < labels.size(); ++i)
    out += (out.empty() ? "" : ".") + std::string(labels[i]);
  return out;
}

// What a URL's path says: a story (slug, date, id), or a section, tag or account page.
int score_path(std::string_view path) {
  std::vector<std::string_view> segments;
  while (!path.empty()) {
    auto slash = path.find('/');
    auto segment = path.substr(0, slash);
    if (!segment.empty())
      segments.push_back(segment);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  if (segments.empty())
    return -3; // the home page
  int score = 0;
  bool story = false;
  for (auto segment : segments) {
    std::size_t separators = 0, digits = 0, run = 0, longest_digits = 0;
    for (char ch : segment) {
      if (ch == '-' || ch == '_')
        ++separators;
      if (std::isdigit(static_cast<unsigned char>(ch))) {
        ++digits;
        longest_digits = std::max(longest_digits, ++run);
      } else {
        run = 0;
      }
    }
    if (separators >= 2 && digits * 2 < segment.size())
      story = true; // a slug of words: "paris-attacks-at-a-glance"
    if (longest_digits >= 5 || (segment.size() == 4 && digits == 4 && segment.starts_with("20")))
      story = true; // an article id, or a year
  }
  score += story ? 2 : 0;
  const auto first = lower(segments.front());
  if (first == "tag" || first == "tags" || first == "topic" || first == "topics" ||
      first == "author" || first == "authors" || first == "category" || first == "section" ||
      first == "search" || first == "account" || first == "login" || first == "subscribe" ||
      first == "newsletters" || first == "about" || first == "contact" || first == "privacy" ||
      first == "terms" || first == "help" || first == "hub" || first == "hubs")
    score -= 3;
  if (segments.size() == 1 && !story)
    score -= 2; // a section front: /world, /sport/
  return score;
}

// True when the link's text is its URL's last path segment in words ("War in Ukraine" ->
// /news/war-in-ukraine): a section or topic page named by its label. Stories' addresses carry
// more than their headline (a date, an id, other words).
bool text_names_path(std::string_view title, std::string_view path) {
  auto letters = [](std::string_view s) {
    std::string out;
    for (unsigned char ch : s)
      if (std::isalnum(ch))
        out += static_cast<char>(std::tolower(ch));
    return out;
  };
  while (!path.empty() && path.back() == '/')
    path.remove_suffix(1);
  const auto last = path.substr(path.rfind('/') + 1);
  const auto named = letters(title);
  return !named.empty() && named == letters(last);
}

} // namespace

std::vector<headline> detect_headlines(const dom::document& page, std::string_view page_url,
                                       std::string_view site) {
  headline_collector collector(std::string(site), page_url, page);
  const auto page_parts = url::split_http_url(page_url);
  const std::string domain = page_parts ? site_domain(page_parts->host) : std::string();

  struct candidate {
    std::string title;
    std::string kicker;
    dom::node link;
    std::string_view href;
    int score = 0;
    std::string signature;
  };
  std::vector<candidate> candidates;
  std::map<std::string, std::size_t> signatures;
  for (dom::node a : page.root().descendant_elements()) {
    if (!a.has_tag("a"))
      continue;
    auto href = a.attr("href");
    if (!href)
      continue;
    auto target = collector.resolve(*href);
    if (!target)
      continue;
    auto parts = url::split_http_url(*target);
    if (!parts)
      continue;
    auto [title, kicker] = split_title(a);
    const auto lowered = lower(title);
    if (title.empty() || is_label(lowered))
      continue;
    auto where = context_of(a);
    if (where.furniture)
      continue;
    bool holds_heading = false;
    for (dom::node d : a.descendant_elements())
      if (is_heading(d)) {
        holds_heading = true;
        break;
      }

    int score = 0;
    const auto words = word_count(title);
    // Headlines are sentences; section and topic labels ("War in Ukraine", "Asia") are a few
    // words.
    score += words >= 4 ? 2 : words == 3 ? 0 : -3;
    if (title.size() > 220)
      score -= 2; // a summary, not a headline
    if (all_capitals(title))
      score -= 2;
    if (where.in_heading || holds_heading)
      score += 3;
    if (where.titled)
      score += 1;
    if (where.in_main)
      score += 1;
    const bool own_site = !domain.empty() && url::host_within(parts->host, domain);
    score += own_site ? 1 : -1;
    if (own_site || !parts->path.empty())
      score += score_path(parts->path);
    if (own_site && text_names_path(title, parts->path))
      score -= 3;
    if (target->find('#') != std::string::npos && own_site && parts->path == page_parts->path)
      score -= 4; // an anchor on this page
    ++signatures[where.signature];
    candidates.push_back({std::move(title), std::move(kicker), a, *href, score, where.signature});
  }
  // Story lists repeat one structure many times; navigation and one-off links do not.
  std::map<std::string, std::pair<std::size_t, std::size_t>> passing; // signature: passed, all
  for (auto& c : candidates) {
    const auto repeats = signatures[c.signature];
    c.score += repeats >= 5 ? 2 : repeats >= 3 ? 1 : -1;
    auto& [passed, all] = passing[c.signature];
    passed += c.score >= threshold;
    ++all;
  }
  for (const auto& c : candidates) {
    // In a long list whose links are nearly all headlines, the rest are too (a short title
    // such as "The Uncage" in a list of stories is a story).
    const auto& [passed, all] = passing[c.signature];
    const bool story_list = all >= 8 && passed * 10 >= all * 7;
    if (c.score >= threshold ||
        (story_list && c.score >= threshold - 4 && word_count(c.title) >= 2))
      collector.add(c.title, c.href, time_near(c.link, collector.now_ms()), c.kicker);
  }
  return collector.take();
}

} // namespace newsdesk::scrapers

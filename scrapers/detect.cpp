#include "scrapers/detect.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/text.hpp"
#include "scrapers/titles.hpp"
#include "scrapers/url.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

// Why detection leaves a link out. Each kind of furniture is judged by what the link is (its
// text, its target's shape, its neighbours), never by a site's class names.
enum class verdict {
  keep,
  layout,     // inside navigation, a header, a footer, a sidebar, a form or a banner
  empty,      // no text (an image link)
  one_word,   // a label or a name, not a headline
  action,     // "Comments", "Download", "Listen", "More", "Share", "World »"...
  media,      // a link to an mp3, a video file, a PDF...
  section,    // a section or index page, where the page's stories have story-shaped addresses
  widget,     // weather, tickers, dates: "Thu 30°C 25°C", "FTSE 100 7,123.45 +0.5%"
  navigation, // a list of links that is mostly furniture: the rest of it is navigation too
  same_title, // one text on several targets: "Download" x8, "8 comments", "Read more"
  anchor,     // a place on this very page
};

std::string_view reason_of(verdict v) {
  switch (v) {
  case verdict::layout:
    return "furniture: in navigation, a header, footer, sidebar or banner";
  case verdict::empty:
    return "bad title: empty";
  case verdict::one_word:
    return "bad title: one word";
  case verdict::action:
    return "furniture: an action or label";
  case verdict::media:
    return "furniture: a media file";
  case verdict::section:
    return "furniture: a section or index page";
  case verdict::widget:
    return "furniture: a widget row: weather, a ticker or a date";
  case verdict::navigation:
    return "furniture: a navigation list";
  case verdict::same_title:
    return "furniture: the same title on several links";
  case verdict::anchor:
    return "furniture: an anchor on this page";
  case verdict::keep:
    break;
  }
  return "";
}

// The text of an action or label link, reduced to its words: lowercased, counts ("8 comments",
// "Comments (12)") and arrows or ellipses ("World »", "More…") taken off. For short texts only
// (is_action_or_label bounds them): it trims one character at a time.
std::string label_words(std::string_view title) {
  std::string t = lower(title);
  auto trim = [&] {
    while (!t.empty() && (t.back() == ' ' || t.back() == '.' || t.back() == ':' ||
                          t.back() == '>' || t.back() == ')' || t.back() == '('))
      t.pop_back();
    while (!t.empty() && (t.front() == ' ' || t.front() == '+' || t.front() == '<'))
      t.erase(0, 1);
  };
  for (std::string_view mark : {"»", "›", "→", "…", "▸", "►", "«", "‹", "←"}) {
    for (auto at = t.find(mark); at != std::string::npos; at = t.find(mark))
      t.erase(at, mark.size());
  }
  trim();
  // Counts before or after: "107 comments", "comments (12)", "12".
  while (!t.empty() && std::isdigit(static_cast<unsigned char>(t.front())))
    t.erase(0, 1);
  while (!t.empty() && (std::isdigit(static_cast<unsigned char>(t.back())) || t.back() == '('))
    t.pop_back();
  trim();
  return t;
}

// What links that do something, or name a kind of page, say instead of a headline.
bool is_action_or_label(std::string_view title) {
  static constexpr std::array<std::string_view, 62> phrases{"more",          "more news",
                                                            "more stories",  "read more",
                                                            "see more",      "see all",
                                                            "view all",      "show more",
                                                            "load more",     "continue reading",
                                                            "full story",    "full coverage",
                                                            "comments",      "comment",
                                                            "add a comment", "discuss",
                                                            "reply",         "download",
                                                            "download mp3",  "download audio",
                                                            "listen",        "listen live",
                                                            "listen now",    "listen to this",
                                                            "watch",         "watch live",
                                                            "watch now",     "watch video",
                                                            "play",          "play video",
                                                            "play audio",    "share",
                                                            "share this",    "tweet",
                                                            "email",         "print",
                                                            "subscribe",     "sign in",
                                                            "sign up",       "log in",
                                                            "login",         "log out",
                                                            "logout",        "register",
                                                            "newsletter",    "newsletters",
                                                            "follow",        "follow us",
                                                            "next",          "previous",
                                                            "prev",          "home",
                                                            "menu",          "search",
                                                            "back to top",   "skip to content",
                                                            "live",          "video",
                                                            "audio",         "photos",
                                                            "advertisement", "sponsored"};
  // Labels are short; the bound also keeps label_words' trimming cheap on a page's longest text.
  constexpr std::size_t longest_label = 80;
  if (title.size() > longest_label)
    return false;
  const auto words = label_words(title);
  if (std::find(phrases.begin(), phrases.end(), words) != phrases.end())
    return true;
  // "More World news", "See all Business stories": a pointer to a list, not a story.
  const auto n = word_count(words);
  for (std::string_view lead : {"more ", "see all ", "view all ", "read more ", "all "})
    if (words.starts_with(lead) && n <= 4)
      return true;
  // A few words and an arrow ("World »", "Business Day ›"): a section's "more" link.
  for (std::string_view arrow : {"»", "›", "→", "▸", "►"})
    if (title.find(arrow) != std::string_view::npos && n <= 4)
      return true;
  return false;
}

// Files a story page never is: audio, video, documents, images, archives.
bool is_media_file(std::string_view path) {
  static constexpr std::array<std::string_view, 22> extensions{
      ".mp3",  ".mp4", ".m4a",  ".m4v", ".aac", ".ogg",  ".oga", ".wav", ".flac", ".mov",  ".avi",
      ".webm", ".m3u", ".m3u8", ".pdf", ".jpg", ".jpeg", ".png", ".gif", ".zip",  ".epub", ".doc"};
  const auto dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos)
    return false;
  const auto extension = lower(path.substr(dot));
  return std::find(extensions.begin(), extensions.end(), extension) != extensions.end();
}

// Words that name a day, a month or a unit: a row of them and numbers is a widget, not news.
bool widget_word(std::string_view lowered) {
  static constexpr std::array<std::string_view, 45> words{
      "mon",    "tue",      "tues",    "wed",     "thu",       "thur",     "thurs",    "fri",
      "sat",    "sun",      "monday",  "tuesday", "wednesday", "thursday", "friday",   "saturday",
      "sunday", "jan",      "feb",     "mar",     "apr",       "jun",      "jul",      "aug",
      "sep",    "sept",     "oct",     "nov",     "dec",       "january",  "february", "march",
      "april",  "june",     "july",    "august",  "september", "october",  "november", "december",
      "today",  "tomorrow", "tonight", "mph",     "km/h"};
  return std::find(words.begin(), words.end(), lowered) != words.end();
}

// A row of numbers with at most one word between them: weather ("Thu 30°C 25°C"), a ticker
// ("FTSE 100 7,123.45 +0.5%"), a date ("Thursday, 17 November 2016"). A headline has words.
bool is_widget(std::string_view title) {
  std::size_t numbers = 0, words = 0, tokens = 0;
  std::size_t at = 0;
  while (at < title.size()) {
    auto end = title.find(' ', at);
    if (end == std::string_view::npos)
      end = title.size();
    auto token = title.substr(at, end - at);
    at = end + 1;
    if (token.empty())
      continue;
    ++tokens;
    const auto first = static_cast<unsigned char>(token.front());
    const bool has_digit =
        std::any_of(token.begin(), token.end(), [](unsigned char c) { return std::isdigit(c); });
    if (std::isalpha(first)) {
      std::string letters;
      for (unsigned char c : token)
        if (std::isalpha(c) || c == '/')
          letters += static_cast<char>(std::tolower(c));
      // "G20" and "Covid-19" are words; "Thu", "Nov" and "mph" are the widget's own.
      if (has_digit || (letters.size() >= 2 && !widget_word(letters)))
        ++words;
    } else if (has_digit) {
      ++numbers; // "30°C", "+0.5%", "7,123.45", "£12"
    } else if (first >= 0x80 && token.size() >= 4) {
      ++words; // a word in another script ("Élysée"); a lone symbol ("▲", "°C") is shorter
    }
  }
  return tokens <= 10 && numbers >= 2 && words <= 1;
}

// Whether a path (and query) looks like one story's address: a slug of five or more words (a
// section's name runs to four: "ai-v-the-mind", "australia-and-pacific"), an
// id (a long number, or letters and digits mixed as in "c5y6rg6wpvgo"), a year, or a query
// naming an id ("item?id=33005585"). Section and index pages have none of these: "/world/",
// "/news/us-canada", "/pages/business/index.html", "/programs/morning-edition/".
bool story_shaped(std::string_view path, std::string_view query) {
  std::size_t at = 0;
  while (at < path.size()) {
    auto end = path.find('/', at);
    if (end == std::string_view::npos)
      end = path.size();
    auto segment = path.substr(at, end - at);
    at = end + 1;
    if (auto dot = segment.rfind('.'); dot != std::string_view::npos && dot > 0)
      segment = segment.substr(0, dot); // "index.html", "story-slug.html"
    std::size_t separators = 0, digits = 0, letters = 0, run = 0, longest = 0, switches = 0;
    int last = 0; // 1 digit, 2 letter
    for (unsigned char c : segment) {
      const int kind = std::isdigit(c) ? 1 : std::isalpha(c) ? 2 : 0;
      separators += c == '-' || c == '_';
      digits += kind == 1;
      letters += kind == 2;
      run = kind == 1 ? run + 1 : 0;
      longest = std::max(longest, run);
      if (kind != 0 && last != 0 && kind != last)
        ++switches;
      if (kind != 0)
        last = kind;
    }
    if (separators >= 4 && letters > digits)
      return true;
    if (longest >= 5)
      return true;
    if (segment.size() == 4 && digits == 4 &&
        (segment.starts_with("19") || segment.starts_with("20")))
      return true;
    if (separators == 0 && digits >= 3 && letters >= 3 && switches >= 3)
      return true;
  }
  std::size_t run = 0;
  for (unsigned char c : query) {
    run = std::isdigit(c) ? run + 1 : 0;
    if (run >= 4)
      return true;
  }
  return false;
}

// The query of an absolute URL, without '?' and the fragment; empty when it has none.
std::string_view query_of(std::string_view url) {
  const auto hash = url.find('#');
  url = url.substr(0, hash);
  const auto question = url.find('?');
  return question == std::string_view::npos ? std::string_view() : url.substr(question + 1);
}

// What two links' texts must share to count as one text: everything but case. Digits count,
// so "Story 1" and "Story 2" stay two titles (counts such as "8 comments" are labels anyway).
std::string repetition_key(std::string_view title) {
  return lower(title);
}

} // namespace

std::vector<headline> detect_headlines(const dom::document& page, std::string_view page_url,
                                       std::string_view site,
                                       std::vector<left_out_link>* left_out) {
  headline_collector collector(std::string(site), page_url, page);
  collector.report_left_out(left_out);
  const auto page_parts = url::split_http_url(page_url);
  const std::string domain = page_parts ? site_domain(page_parts->host) : std::string();

  struct candidate {
    std::string title;
    std::string kicker;
    dom::node link;
    std::string_view href;
    std::string target;
    std::string signature;
    std::size_t words = 0;
    int score = 0;
    bool own_site = false;
    bool story_url = false; // story_shaped(target)
    bool strong = false;    // a heading holds it or is inside it, or a title class: headline-like
    verdict why = verdict::keep;
  };
  std::vector<candidate> candidates;
  auto leave_out = [&](std::string_view title, std::string_view url, verdict why) {
    if (left_out)
      left_out->push_back({std::string(cut_utf8(title, max_left_out_title)), std::string(url),
                           std::string(reason_of(why))});
  };

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
      continue; // javascript:, mailto: and the like are not pages
    dom::node heading;
    for (dom::node d : a.descendant_elements())
      if (is_heading(d)) {
        heading = d;
        break;
      }
    auto [title, kicker] = split_title(a);
    // A card whose link holds its heading and its summary: the heading is the title.
    if (heading) {
      auto in_heading = split_title(heading);
      if (!in_heading.title.empty())
        title = std::move(in_heading.title);
    }
    title = normalise_title_text(title);
    auto where = context_of(a);
    if (where.furniture) {
      leave_out(title, *target, verdict::layout);
      continue;
    }
    candidate c;
    c.words = title_words(title);
    c.own_site = !domain.empty() && url::host_within(parts->host, domain);
    c.story_url = story_shaped(parts->path, query_of(*target));
    c.strong = where.in_heading || heading || where.titled;
    c.signature = where.signature;
    c.link = a;
    c.href = *href;
    c.target = *target;
    if (title.empty())
      c.why = verdict::empty;
    else if (is_media_file(parts->path))
      c.why = verdict::media;
    else if (is_action_or_label(title))
      c.why = verdict::action;
    else if (c.words < min_title_words)
      c.why = verdict::one_word;
    else if (is_widget(title))
      c.why = verdict::widget;
    else if (target->find('#') != std::string::npos && c.own_site && page_parts &&
             parts->path == page_parts->path)
      c.why = verdict::anchor;
    else if (c.own_site && parts->path.find_first_not_of('/') == std::string::npos &&
             query_of(*target).empty())
      c.why = verdict::section; // the home page

    int score = 0;
    // Headlines are sentences; section and topic labels ("War in Ukraine", "Asia") are a few
    // words.
    score += c.words >= 4 ? 2 : c.words == 3 ? 0 : -3;
    if (title.size() > 220)
      score -= 2; // a summary, not a headline
    if (all_capitals(title))
      score -= 2;
    if (where.in_heading || heading)
      score += 3;
    if (where.titled)
      score += 1;
    if (where.in_main)
      score += 1;
    score += c.own_site ? 1 : -1;
    if (c.own_site || !parts->path.empty())
      score += score_path(parts->path);
    if (c.own_site && text_names_path(title, parts->path))
      score -= 3;
    c.score = score;
    c.title = std::move(title);
    c.kicker = std::move(kicker);
    candidates.push_back(std::move(c));
  }

  // One text on several targets is a control ("Download" by every programme, "Listen to this
  // story" under every one), never a headline: headlines differ.
  // One pass to count distinct targets per text, one to mark: linear in the links.
  constexpr std::size_t same_title_targets = 3;
  std::unordered_map<std::string, std::unordered_set<std::string_view>> targets_by_text;
  for (const auto& c : candidates)
    if (!c.title.empty()) {
      auto& targets = targets_by_text[repetition_key(c.title)];
      if (targets.size() < same_title_targets)
        targets.insert(c.target);
    }
  for (auto& c : candidates)
    if (c.why == verdict::keep && !c.title.empty() &&
        targets_by_text[repetition_key(c.title)].size() >= same_title_targets)
      c.why = verdict::same_title;

  // Section and index pages, judged against the page's own stories: when most of the links that
  // read most like headlines (a heading, four words or more, on the site's host) have
  // story-shaped addresses, a link to the same host whose address has no slug, id or date is a
  // section front ("World", "Search for Homes for Sale or Rent" -> /section/realestate). Three
  // in five is enough, as section headings are among those links themselves. On a site whose
  // stories have plain addresses the rule stays off. A long sentence keeps its place: a
  // headline that happens to point at a section front is still a headline.
  constexpr std::size_t min_reference_links = 5;
  constexpr std::size_t sentence_words = 8;
  std::size_t reference = 0, story_shaped_references = 0;
  for (const auto& c : candidates)
    if (c.why == verdict::keep && c.own_site && c.strong && c.words >= 4) {
      ++reference;
      story_shaped_references += c.story_url;
    }
  if (reference >= min_reference_links && story_shaped_references * 5 >= reference * 3)
    for (auto& c : candidates)
      if (c.why == verdict::keep && c.own_site && !c.story_url && c.words < sentence_words)
        c.why = verdict::section;

  // Navigation without a <nav>: a list (links sharing one structure) that is mostly labels,
  // sections and widgets is a menu, and its few longer entries ("Sell Your Home") are menu
  // entries too. Story-shaped links in it stay: a "most read" list beside a menu is still news.
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>>
      groups; // furniture, all
  for (const auto& c : candidates) {
    if (c.why == verdict::empty)
      continue; // image links sit beside headlines in story cards as much as in menus
    auto& [furniture, all] = groups[c.signature];
    furniture += c.why != verdict::keep;
    ++all;
  }
  constexpr std::size_t min_menu_links = 4;
  for (auto& c : candidates) {
    const auto& [furniture, all] = groups[c.signature];
    if (c.why == verdict::keep && !c.story_url && all >= min_menu_links && furniture * 3 >= all * 2)
      c.why = verdict::navigation;
  }

  // Story lists repeat one structure many times; navigation and one-off links do not.
  std::unordered_map<std::string_view, std::size_t> signatures;
  for (const auto& c : candidates)
    if (c.why != verdict::empty)
      ++signatures[c.signature];
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> passing; // passed, all
  for (auto& c : candidates) {
    if (c.why != verdict::keep)
      continue;
    const auto repeats = signatures[c.signature];
    c.score += repeats >= 5 ? 2 : repeats >= 3 ? 1 : -1;
    auto& [passed, all] = passing[c.signature];
    passed += c.score >= threshold;
    ++all;
  }
  for (const auto& c : candidates) {
    if (c.why != verdict::keep) {
      leave_out(c.title, c.target, c.why);
      continue;
    }
    // In a long list whose links are nearly all headlines, the rest are too (a short title
    // such as "The Uncage" in a list of stories is a story).
    const auto& [passed, all] = passing[c.signature];
    const bool story_list = all >= 8 && passed * 10 >= all * 7;
    if (c.score >= threshold || (story_list && c.score >= threshold - 4)) {
      if (collector.add(c.title, c.href, time_near(c.link, collector.now_ms()), c.kicker))
        collector.illustrate_last(image_near(c.link));
    } else if (left_out)
      left_out->push_back({std::string(cut_utf8(c.title, max_left_out_title)), c.target,
                           "does not read as a headline (score " + std::to_string(c.score) + ", " +
                               std::to_string(threshold) + " needed)"});
  }
  return collector.take();
}

} // namespace newsdesk::scrapers

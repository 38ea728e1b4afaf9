#include "scrapers/headlines.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/text.hpp"
#include "scrapers/titles.hpp"
#include "scrapers/url.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <utility>

namespace newsdesk::scrapers {
std::string collapse_whitespace(std::string_view text) {
  collapsed_text out;
  out.reserve(text.size());
  out.append(text);
  return std::move(out).take();
}

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

// Unix ms of a UTC calendar time, nullopt for impossible fields.
std::optional<std::int64_t> unix_ms(int y, int mo, int d, int h, int mi, int s, int ms,
                                    int offset_minutes) {
  static constexpr std::array<int, 12> days{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
      d > days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0) || h > 23 || mi > 59 || s > 60 || h < 0 ||
      mi < 0 || s < 0)
    return std::nullopt;
  const auto day = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((day * 24 + h) * 60 + mi - offset_minutes) * 60'000 + std::int64_t{s} * 1000 + ms;
}

// A run of 1-`max` digits at text[at], advancing `at`; -1 when there is none.
int digits(std::string_view text, std::size_t& at, std::size_t min, std::size_t max) {
  std::size_t n = 0;
  int value = 0;
  while (at < text.size() && n < max && std::isdigit(static_cast<unsigned char>(text[at]))) {
    value = value * 10 + (text[at] - '0');
    ++at;
    ++n;
  }
  return n >= min ? value : -1;
}

bool eat(std::string_view text, std::size_t& at, char c) {
  if (at < text.size() && text[at] == c) {
    ++at;
    return true;
  }
  return false;
}

// "Z", "+01:00", "-0500", "GMT", "EST"...: minutes east of UTC; nullopt when unknown.
std::optional<int> zone_offset(std::string_view zone) {
  if (zone.empty())
    return 0;
  if (zone[0] == '+' || zone[0] == '-') {
    std::size_t at = 1;
    const int h = digits(zone, at, 2, 2);
    eat(zone, at, ':');
    int m = at < zone.size() ? digits(zone, at, 2, 2) : 0;
    if (h < 0 || m < 0 || h > 23 || m > 59 || at != zone.size())
      return std::nullopt;
    return (zone[0] == '-' ? -1 : 1) * (h * 60 + m);
  }
  std::string upper;
  for (char c : zone)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static constexpr std::array<std::pair<std::string_view, int>, 13> names{{{"Z", 0},
                                                                           {"UT", 0},
                                                                           {"UTC", 0},
                                                                           {"GMT", 0},
                                                                           {"EST", -300},
                                                                           {"EDT", -240},
                                                                           {"CST", -360},
                                                                           {"CDT", -300},
                                                                           {"MST", -420},
                                                                           {"MDT", -360},
                                                                           {"PST", -480},
                                                                           {"PDT", -420},
                                                                           {"BST", 60}}};
  for (const auto& [name, offset] : names)
    if (upper == name)
      return offset;
  return std::nullopt;
}

std::optional<std::int64_t> parse_iso(std::string_view t) {
  std::size_t at = 0;
  const int y = digits(t, at, 4, 4);
  if (y < 0 || !eat(t, at, '-'))
    return std::nullopt;
  const int mo = digits(t, at, 2, 2);
  if (mo < 0 || !eat(t, at, '-'))
    return std::nullopt;
  const int d = digits(t, at, 2, 2);
  if (d < 0)
    return std::nullopt;
  if (at == t.size())
    return unix_ms(y, mo, d, 0, 0, 0, 0, 0);
  if (!eat(t, at, 'T') && !eat(t, at, 't') && !eat(t, at, ' '))
    return std::nullopt;
  const int h = digits(t, at, 2, 2);
  if (h < 0 || !eat(t, at, ':'))
    return std::nullopt;
  const int mi = digits(t, at, 2, 2);
  int s = 0, ms = 0;
  if (mi < 0)
    return std::nullopt;
  if (eat(t, at, ':') && (s = digits(t, at, 2, 2)) < 0)
    return std::nullopt;
  if (eat(t, at, '.') || eat(t, at, ',')) {
    const auto start = at;
    const int frac = digits(t, at, 1, 3);
    if (frac < 0)
      return std::nullopt;
    ms = frac * (at - start == 1 ? 100 : at - start == 2 ? 10 : 1);
    while (at < t.size() && std::isdigit(static_cast<unsigned char>(t[at])))
      ++at;
  }
  auto zone = trim_ascii_whitespace(t.substr(at));
  auto offset = zone_offset(zone);
  if (!offset)
    return std::nullopt;
  return unix_ms(y, mo, d, h, mi, s, ms, *offset);
}

std::optional<std::int64_t> parse_rfc822(std::string_view t) {
  // Tokens between spaces and commas: [weekday] day month year time [zone].
  std::vector<std::string_view> tokens;
  std::size_t at = 0;
  while (at < t.size()) {
    auto end = t.find_first_of(" \t\r\n,", at);
    if (end == std::string_view::npos)
      end = t.size();
    if (end > at)
      tokens.push_back(t.substr(at, end - at));
    at = end + 1;
  }
  std::size_t i = 0;
  if (!tokens.empty() && std::isalpha(static_cast<unsigned char>(tokens[0][0])))
    ++i; // the weekday, not checked
  if (tokens.size() < i + 4 || tokens.size() > i + 5)
    return std::nullopt;
  std::size_t p = 0;
  const int d = digits(tokens[i], p, 1, 2);
  if (d < 0 || p != tokens[i].size())
    return std::nullopt;
  static constexpr std::array<std::string_view, 12> months{
      "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
  std::string month;
  for (char c : tokens[i + 1].substr(0, 3))
    month += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto m = std::find(months.begin(), months.end(), month);
  if (m == months.end())
    return std::nullopt;
  p = 0;
  int y = digits(tokens[i + 2], p, 2, 4);
  if (y < 0 || p != tokens[i + 2].size() || p == 3)
    return std::nullopt;
  if (p == 2)
    y += y < 50 ? 2000 : 1900;
  const auto time = tokens[i + 3];
  p = 0;
  const int h = digits(time, p, 2, 2);
  int mi = -1, s = 0;
  if (h < 0 || !eat(time, p, ':') || (mi = digits(time, p, 2, 2)) < 0)
    return std::nullopt;
  if (eat(time, p, ':') && (s = digits(time, p, 2, 2)) < 0)
    return std::nullopt;
  if (p != time.size())
    return std::nullopt;
  auto offset = zone_offset(tokens.size() > i + 4 ? tokens[i + 4] : std::string_view());
  if (!offset)
    return std::nullopt;
  return unix_ms(y, static_cast<int>(m - months.begin()) + 1, d, h, mi, s, 0, *offset);
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `names` (class and data-* attributes, lowercased) has a part, between spaces, '-' and
// '_', from `words`.
bool has_part(std::string_view names, std::initializer_list<std::string_view> words) {
  std::size_t at = 0;
  while (at <= names.size()) {
    auto end = names.find_first_of(" -_:", at);
    if (end == std::string_view::npos)
      end = names.size();
    const auto part = names.substr(at, end - at);
    if (!part.empty() && std::find(words.begin(), words.end(), part) != words.end())
      return true;
    at = end + 1;
  }
  return false;
}

enum class part_kind { text, kicker, left_out };

part_kind kind_of(dom::node n) {
  if (n.has_tag("time") || n.has_tag("script") || n.has_tag("style"))
    return part_kind::left_out;
  std::string names(n.attr("class").value_or(""));
  for (const auto& a : n.attributes())
    if (a.name.starts_with("data-"))
      names.append(" ").append(a.name.substr(5)).append(" ").append(a.value);
  if (names.empty())
    return part_kind::text;
  names = lower_ascii(names);
  if (names.find("kicker") != std::string::npos || names.find("eyebrow") != std::string::npos ||
      has_part(names, {"label", "flag", "overline"}))
    return part_kind::kicker;
  if (names.find("byline") != std::string::npos ||
      has_part(names, {"author", "rank", "ranking", "timestamp", "date", "time", "dateline"}))
    return part_kind::left_out;
  return part_kind::text;
}

bool rank_text(std::string_view text) {
  text = trim_ascii_whitespace(text);
  std::size_t at = 0;
  eat(text, at, '#');
  if (digits(text, at, 1, 3) < 0)
    return false;
  eat(text, at, '.') || eat(text, at, ')');
  return at == text.size();
}

bool capitals_only(std::string_view text) {
  std::size_t letters = 0;
  for (unsigned char c : text) {
    if (std::islower(c) || c >= 0x80)
      return false;
    letters += std::isupper(c) ? 1 : 0;
  }
  return letters >= 3;
}

bool has_lower(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::islower(c) != 0; });
}

} // namespace

std::optional<std::int64_t> parse_date(std::string_view text) {
  text = trim_ascii_whitespace(text);
  if (text.empty() || text.size() > 64)
    return std::nullopt;
  if (text.size() >= 10 && std::isdigit(static_cast<unsigned char>(text[0])) && text[4] == '-')
    return parse_iso(text);
  return parse_rfc822(text);
}

std::optional<std::int64_t> plausible_date(std::string_view text, std::int64_t now_ms) {
  constexpr std::int64_t year_1990_ms = 631'152'000'000;
  constexpr std::int64_t day_ms = 86'400'000;
  auto t = parse_date(text);
  if (!t || *t < year_1990_ms || *t > now_ms + day_ms)
    return std::nullopt;
  return t;
}

title_parts split_title(dom::node element) {
  // The element's text runs, each with the element holding it, walked without recursion and
  // skipping the subtrees of parts left out.
  struct run {
    std::string text;
    dom::node holder;
    bool space_before = false; // whitespace (or a part left out) between it and the run before
  };
  std::vector<run> runs;
  std::string kicker;
  bool pending_space = false;
  dom::node n = element.child(0);
  while (n && n != element) {
    bool descend = false;
    if (n.is_text()) {
      const auto raw = n.raw_text();
      auto text = collapse_whitespace(raw);
      if (text.empty()) {
        pending_space = pending_space || !raw.empty();
      } else {
        // "Biden<span>'s</span>" is one word: runs join with a space only where the page had one.
        runs.push_back(
            {std::move(text), n.parent(), pending_space || is_ascii_whitespace(raw.front())});
        pending_space = is_ascii_whitespace(raw.back());
      }
    } else if (n.is_element()) {
      switch (kind_of(n)) {
      case part_kind::kicker:
        kicker += (kicker.empty() ? "" : " ") + n.text();
        pending_space = true;
        break;
      case part_kind::left_out:
        pending_space = true;
        break;
      case part_kind::text:
        descend = n.child_count() > 0;
      }
    }
    if (descend) {
      n = n.child(0);
      continue;
    }
    while (n && n != element && !n.next_sibling())
      n = n.parent();
    if (n && n != element)
      n = n.next_sibling();
  }
  // A leading rank number or all-capitals run in its own element, before ordinary text.
  std::size_t first = 0;
  if (runs.size() >= 2 && rank_text(runs[0].text))
    first = 1;
  // The element of capitals that holds the leading run: the highest ancestor of its holder below
  // `element` whose text is still all capitals ("<strong>FRANCE FIGHTS <em>BACK</em></strong>").
  auto inside = [&](dom::node holder, dom::node ancestor) {
    for (; holder && holder != element; holder = holder.parent())
      if (holder == ancestor)
        return true;
    return false;
  };
  if (runs.size() >= first + 2 && runs[first].holder != element &&
      capitals_only(runs[first].text)) {
    dom::node caps = runs[first].holder;
    while (caps.parent() && caps.parent() != element && capitals_only(caps.parent().text()))
      caps = caps.parent();
    auto rest = first;
    while (rest < runs.size() && inside(runs[rest].holder, caps))
      ++rest;
    if (rest < runs.size() && has_lower(runs[rest].text)) {
      kicker += (kicker.empty() ? "" : " ") + caps.text();
      first = rest;
    }
  }
  // A byline in an element of its own after the title ("<span>By Jane Doe</span>"), whatever
  // its class: the last run that starts one, if the text from there on is a byline.
  std::size_t end = runs.size();
  for (std::size_t i = runs.size(); i-- > first + 1;) {
    const auto& t = runs[i].text;
    if (!(t.starts_with("By ") || t.starts_with("by ") || t.starts_with("BY ")))
      continue;
    if (runs[i].holder != runs[i - 1].holder) {
      std::string rest;
      for (std::size_t k = i; k < runs.size(); ++k)
        rest += (rest.empty() || !runs[k].space_before ? "" : " ") + runs[k].text;
      if (is_byline(collapse_whitespace(rest)))
        end = i;
    }
    break;
  }
  std::string title;
  for (std::size_t i = first; i < end; ++i)
    title += (title.empty() || !runs[i].space_before ? "" : " ") + runs[i].text;
  title = collapse_whitespace(title);
  // "1. Title" written as one text.
  if (auto dot = title.find_first_of(".)"); dot != std::string::npos && dot <= 3 &&
                                            dot + 1 < title.size() && title[dot + 1] == ' ' &&
                                            rank_text(title.substr(0, dot + 1)))
    title.erase(0, dot + 2);
  if (title.empty())
    return {element.text(), {}};
  return {std::move(title), collapse_whitespace(kicker)};
}

headline_collector::headline_collector(std::string site, std::string_view page_url,
                                       const dom::document& page)
    : site_(std::move(site))
    , base_(page_url)
    , now_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count()) {
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

bool headline_collector::add_link(dom::node link, std::string_view href, dom::node title) {
  auto parts = split_title(title ? title : link);
  if (!add(parts.title, href, time_near(link, now_ms_), parts.kicker))
    return false;
  illustrate_last(image_near(link));
  return true;
}

void headline_collector::illustrate_last(std::string_view src) {
  if (headlines_.empty() || src.empty() || src.size() > max_image_url_bytes)
    return;
  if (auto resolved = resolve(src);
      resolved && url::is_http_url(*resolved) && resolved->size() <= max_image_url_bytes)
    headlines_.back().image = std::move(*resolved);
}

bool headline_collector::add(std::string_view raw_title, std::string_view href,
                             std::optional<std::int64_t> published_ms, std::string_view kicker) {
  std::string title = strip_byline(normalise_title_text(raw_title));
  std::optional<std::string> resolved = resolve(href);
  const std::string_view shown_url = resolved ? std::string_view(*resolved) : href;
  if (headlines_.size() >= max_headlines_per_site) {
    leave_out(title, shown_url, refusal::over_limit,
              "over the limit of " + std::to_string(max_headlines_per_site) + " headlines");
    return false;
  }
  if (title.empty()) {
    leave_out(title, shown_url, refusal::bad_title, "bad title: empty");
    return false;
  }
  if (!authored_titles_ && title_words(title) < min_title_words) {
    leave_out(title, shown_url, refusal::bad_title, "bad title: one word");
    return false;
  }
  // A paragraph under a link is a summary or a teaser, not the story's title: a reader scans
  // titles, and a summary matches no other site's title of the same story.
  if (!authored_titles_ && looks_like_summary(title)) {
    leave_out(title, shown_url, refusal::bad_title, "bad title: a summary, not a title");
    return false;
  }
  if (!resolved || !url::is_http_url(*resolved)) {
    leave_out(title, shown_url, refusal::not_http, "not an http(s) link");
    return false;
  }
  if (!seen_urls_.insert(*resolved).second) {
    follow_numbering(title, std::string::npos);
    leave_out(title, shown_url, refusal::duplicate,
              "duplicate: the same URL is already a headline");
    return false;
  }
  headlines_.push_back({std::move(title), std::move(*resolved), site_, published_ms,
                        collapse_whitespace(cut_utf8(kicker, 200))});
  follow_numbering(headlines_.back().title, headlines_.size() - 1);
  return true;
}

void headline_collector::summarise_last(std::string_view text) {
  if (headlines_.empty())
    return;
  auto& h = headlines_.back();
  std::string summary = collapse_whitespace(cut_utf8(text, 4 * max_summary_bytes));
  // Many feeds' descriptions begin with the title again ("Title. Body" or the title alone).
  if (summary.starts_with(h.title)) {
    auto rest = std::string_view(summary).substr(h.title.size());
    while (!rest.empty() && (is_ascii_whitespace(rest.front()) || rest.front() == '.' ||
                             rest.front() == ':' || rest.front() == '-'))
      rest.remove_prefix(1);
    summary = std::string(rest);
  }
  if (summary.size() > max_summary_bytes) {
    constexpr std::string_view ellipsis = "\u2026";
    auto kept = cut_utf8(summary, max_summary_bytes - ellipsis.size());
    if (auto space = kept.rfind(' '); space != std::string_view::npos && space > kept.size() / 2)
      kept = kept.substr(0, space);
    while (!kept.empty() && (kept.back() == ' ' || kept.back() == ',' || kept.back() == ';'))
      kept.remove_suffix(1);
    summary = std::string(kept) + std::string(ellipsis);
  }
  h.summary = std::move(summary);
}

void headline_collector::leave_out(std::string_view title, std::string_view url, refusal why,
                                   std::string reason) {
  last_refusal_ = why;
  if (left_out_)
    left_out_->push_back(
        {std::string(cut_utf8(title, max_left_out_title)), std::string(url), std::move(reason)});
}

void headline_collector::follow_numbering(const std::string& title, std::size_t kept_at) {
  // Three in a row is a list's numbering: two could be chance ("10 things...", "11 dead...").
  constexpr std::size_t run_length = 3;
  std::optional<leading_number> number;
  if (!authored_titles_)
    number = leading_number_of(title);
  if (!number) {
    numbered_run_.clear();
    return;
  }
  if (numbered_run_.empty() || number->value != numbered_run_.back().first + 1)
    numbered_run_.clear();
  numbered_run_.emplace_back(number->value, kept_at);
  if (numbered_run_.size() < run_length)
    return;
  // Each member is stripped once: from the third on, the earlier ones already were.
  const auto from = numbered_run_.size() == run_length ? 0 : numbered_run_.size() - 1;
  for (auto i = from; i < numbered_run_.size(); ++i) {
    const auto at = numbered_run_[i].second;
    if (at == std::string::npos)
      continue;
    auto& kept = headlines_[at].title;
    const auto n = leading_number_of(kept);
    if (n && title_words(std::string_view(kept).substr(n->title_start)) >= min_title_words)
      kept.erase(0, n->title_start);
  }
}

std::vector<headline> headline_collector::take() {
  seen_urls_.clear();
  numbered_run_.clear();
  return std::exchange(headlines_, {});
}

} // namespace newsdesk::scrapers

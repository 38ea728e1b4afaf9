// The card around a headline's link, as read for what it says besides the title: when the story
// was published (time_near) and its picture (image_near). Both are declared in headlines.hpp;
// they climb the same ancestors and stop at the first that holds another headline's link.
#include "scrapers/headlines.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/text.hpp"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers {
namespace {

int word_count(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = is_ascii_whitespace(c);
    words += !space && !in_word;
    in_word = !space;
  }
  return words;
}

// Whether `d`, an element near `link`, is another headline's link: an <a> to elsewhere whose text
// is a title's length (a "More" link or a second link to the same story is not one).
bool other_headline_link(dom::node d, dom::node link, std::string_view own_href) {
  if (!d.has_tag("a") || d == link)
    return false;
  auto href = d.attr("href");
  return href && *href != own_href && word_count(d.text()) >= 3;
}

// A declared size (width="64"): its number, or nullopt when it does not start with digits.
std::optional<int> declared_pixels(std::optional<std::string_view> value) {
  if (!value)
    return std::nullopt;
  int n = 0;
  std::size_t i = 0;
  for (; i < value->size() && i < 6 && std::isdigit(static_cast<unsigned char>((*value)[i])); ++i)
    n = n * 10 + ((*value)[i] - '0');
  return i == 0 ? std::nullopt : std::optional<int>(n);
}

// Whether `url` can be a picture worth fetching: not inline data, not a vector drawing.
bool picture_url(std::string_view url) {
  url = trim_ascii_whitespace(url);
  if (url.empty() || url.size() > max_image_url_bytes || url.starts_with("data:"))
    return false;
  const auto path = url.substr(0, url.find_first_of("?#"));
  if (path.size() < 4)
    return true;
  std::string ending(path.substr(path.size() - 4));
  for (char& c : ending)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ending != ".svg";
}

// From a srcset ("a.jpg 320w, b.jpg 640w, c.jpg 1200w"), read as HTML reads one (a URL up to
// whitespace, then descriptors up to a comma): the smallest candidate at least
// picture_source_width wide, else the widest; a list without widths ("1x, 2x") gives its first.
std::string_view from_srcset(std::string_view set) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; };
  std::string_view best, widest;
  long best_w = 0, widest_w = -1;
  std::size_t i = 0;
  while (i < set.size()) {
    while (i < set.size() && (space(set[i]) || set[i] == ','))
      ++i;
    const auto start = i;
    while (i < set.size() && !space(set[i]))
      ++i;
    auto url = set.substr(start, i - start);
    long w = 0;
    if (url.ends_with(',')) {
      while (url.ends_with(','))
        url.remove_suffix(1);
    } else {
      const auto descriptors = i;
      while (i < set.size() && set[i] != ',')
        ++i;
      auto descriptor = trim_ascii_whitespace(set.substr(descriptors, i - descriptors));
      if (descriptor.ends_with('w'))
        for (char c : descriptor.substr(0, descriptor.size() - 1))
          if (c >= '0' && c <= '9' && w < 100'000)
            w = w * 10 + (c - '0');
    }
    if (!picture_url(url))
      continue;
    if (widest_w < 0 || w > widest_w) {
      widest = url;
      widest_w = w;
    }
    if (w >= picture_source_width && (best.empty() || w < best_w)) {
      best = url;
      best_w = w;
    }
  }
  return best.empty() ? widest : best;
}

// The picture an <img> shows, as image_near chooses; empty when it is no picture.
std::string_view image_source(dom::node img) {
  for (const char* side : {"width", "height"})
    if (auto n = declared_pixels(img.attr(side)); n && *n < 100)
      return {};
  for (const char* lazy : {"data-src", "data-lazy-src", "data-original"})
    if (auto src = img.attr(lazy); src && picture_url(*src))
      return trim_ascii_whitespace(*src);
  for (const char* set : {"data-srcset", "srcset"})
    if (auto list = img.attr(set))
      if (auto url = from_srcset(*list); !url.empty())
        return url;
  if (auto src = img.attr("src"); src && picture_url(*src))
    return trim_ascii_whitespace(*src);
  return {};
}

// The first picture among `scope`'s descendants; empty when none.
std::string_view first_picture(dom::node scope, std::size_t& budget) {
  for (dom::node d : scope.descendant_elements()) {
    if (budget == 0)
      return {};
    --budget;
    if (d.has_tag("img"))
      if (auto src = image_source(d); !src.empty())
        return src;
  }
  return {};
}

} // namespace

std::optional<std::int64_t> time_near(dom::node link, std::int64_t now_ms) {
  constexpr int levels = 6;
  constexpr std::size_t scan_limit = 2'000; // elements read per ancestor
  const auto own_href = link.attr("href").value_or("");
  dom::node below = link;
  for (int level = 0; level < levels; ++level) {
    dom::node a = below.parent();
    if (!a || !a.is_element() || a.has_tag("body"))
      break;
    std::optional<std::string_view> datetime;
    bool other_headline = false;
    std::size_t seen = 0;
    for (dom::node d : a.descendant_elements()) {
      if (++seen > scan_limit)
        return std::nullopt;
      if (other_headline_link(d, link, own_href)) {
        other_headline = true;
        break;
      }
      if (!datetime && d.has_tag("time")) {
        datetime = d.attr("datetime");
      }
    }
    if (other_headline)
      break;
    if (datetime)
      return plausible_date(*datetime, now_ms);
    if (a.has_tag("article") || a.has_tag("li"))
      break;
    below = a;
  }
  return std::nullopt;
}

std::string_view image_near(dom::node link) {
  constexpr int levels = 6;
  std::size_t budget = 2'000; // elements read in all: a card is small, a page's body is not
  if (auto inside = first_picture(link, budget); !inside.empty())
    return inside;
  const auto own_href = link.attr("href").value_or("");
  dom::node below = link;
  for (int level = 0; level < levels; ++level) {
    dom::node a = below.parent();
    if (!a || !a.is_element() || a.has_tag("body"))
      break;
    // An ancestor that holds another headline's link holds another card's picture too.
    for (dom::node d : a.descendant_elements()) {
      if (budget == 0)
        return {};
      --budget;
      if (other_headline_link(d, link, own_href))
        return {};
    }
    if (auto found = first_picture(a, budget); !found.empty())
      return found;
    if (a.has_tag("article") || a.has_tag("li"))
      break;
    below = a;
  }
  return {};
}

} // namespace newsdesk::scrapers

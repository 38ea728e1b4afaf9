#include "server/news/news_query.hpp"

#include "server/http/http_message.hpp"
#include "server/news/search.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace newsdesk::server {

bool news_query::matches(const news_item& item) const {
  if (!sites.empty() && std::find(sites.begin(), sites.end(), item.headline.site) == sites.end())
    return false;
  if (story != 0 && item.story != story)
    return false;
  return words.matches(item.headline.title, item.headline.language);
}

std::variant<news_query, std::string> parse_news_query(std::string_view query,
                                                       const std::vector<site_report>& sites) {
  auto parsed = parse_news_query(query, [&sites](std::string_view name) {
    return std::any_of(sites.begin(), sites.end(),
                       [&](const site_report& s) { return s.name == name; });
  });
  auto* q = std::get_if<news_query>(&parsed);
  if (!q || q->section.empty())
    return parsed;
  if (!q->sites.empty())
    return "section: give site= or section=, not both";
  for (const auto& s : sites)
    if (s.section == q->section)
      q->sites.push_back(s.name);
  if (q->sites.empty())
    return "section: no site is in a section named '" + q->section.substr(0, 40) + "'";
  return parsed;
}

std::variant<news_query, std::string>
parse_news_query(std::string_view query, const std::function<bool(std::string_view)>& is_site) {
  news_query result;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    auto key = form_decode(pair.substr(0, eq));
    auto value = eq == std::string_view::npos ? std::string{} : form_decode(pair.substr(eq + 1));
    if (key == "site") {
      std::string_view rest = value;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        auto name = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (name.empty())
          continue;
        if (!is_site(name))
          return "site: no site named '" + std::string(name.substr(0, 64)) + "'";
        if (std::find(result.sites.begin(), result.sites.end(), name) == result.sites.end())
          result.sites.emplace_back(name);
      }
    } else if (key == "q") {
      if (value.size() > max_q_bytes)
        return "q: longer than " + std::to_string(max_q_bytes) + " bytes";
      result.q = value;
      result.words = search_query(value);
    } else if (key == "before") {
      // TIME_MS.ID (page_time and id), both whole numbers, as cursor_after writes it.
      const auto dot = value.find('.');
      std::int64_t ms = 0, id = 0;
      const char* text = value.data();
      auto first = std::from_chars(text, text + std::min(dot, value.size()), ms);
      bool ok = dot != std::string::npos && first.ec == std::errc{} && first.ptr == text + dot;
      if (ok) {
        auto second = std::from_chars(text + dot + 1, text + value.size(), id);
        ok = second.ec == std::errc{} && second.ptr == text + value.size() && id >= 0;
      }
      if (!ok)
        return "before: expected TIME_MS.ID, as a page's next link gives it";
      result.before_ms = ms;
      result.before_id = id;
    } else if (key == "story") {
      std::int64_t id = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
      if (ec != std::errc{} || end != value.data() + value.size() || id <= 0)
        return "story: expected a story id (a whole number above 0, as a headline's story gives "
               "it)";
      result.story = id;
    } else if (key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || end != value.data() + value.size() || n == 0 || n > max_limit)
        return "limit: expected a whole number from 1 to " + std::to_string(max_limit);
      result.limit = n;
    } else if (key == "section") {
      if (value.empty() || value.size() > 40)
        return "section: expected a section's name (1-40 bytes), as its chip links to it";
      result.section = value;
    } else if (key == "chips") {
      if (value != "all")
        return "chips: expected all (a chip for every site), or no chips= (the most active)";
      result.all_chips = true;
    }
    // Other parameters are ignored, as browsers and feed readers add their own.
  }
  return result;
}

news_snapshot with_coverage(const news_snapshot& snapshot, std::vector<news_item> coverage) {
  news_snapshot out;
  out.sites = snapshot.sites;
  out.generated_at = snapshot.generated_at;
  out.version = snapshot.version;
  out.notice = snapshot.notice;
  out.ready = snapshot.ready;
  out.last_id = snapshot.last_id;
  out.sections = snapshot.sections;
  for (auto& item : coverage)
    if (std::any_of(out.sites.begin(), out.sites.end(),
                    [&](const site_report& s) { return s.name == item.headline.site; }))
      out.headlines.push_back(std::move(item));
  return out;
}

std::string cursor_after(const news_item& item) {
  return std::to_string(page_time(item)) + "." + std::to_string(item.id);
}

news_snapshot apply_query(const news_snapshot& snapshot, const news_query& query) {
  const std::size_t bound = query.limit ? query.limit : (query.one_site() ? max_limit : page_size);
  // The common case, the whole page of every site, needs no filtering: only the cut.
  if (!query.filters_headlines() && snapshot.headlines.size() <= bound)
    return snapshot;
  news_snapshot out;
  out.generated_at = snapshot.generated_at;
  out.version = snapshot.version;
  out.notice = snapshot.notice;
  out.ready = snapshot.ready;
  out.last_id = snapshot.last_id;
  out.sections = snapshot.sections;
  auto wanted = [&](const std::string& site) {
    return query.sites.empty() ||
           std::find(query.sites.begin(), query.sites.end(), site) != query.sites.end();
  };
  for (const auto& s : snapshot.sites)
    if (wanted(s.name))
      out.sites.push_back(s);
  // What comes after the cursor's headline in the page's order (newer_first).
  auto after_cursor = [&](const news_item& item) {
    const auto t = page_time(item);
    return !query.paged() || t < query.before_ms ||
           (t == query.before_ms && item.id > query.before_id);
  };
  // Newest first already: past the page's end nothing more is needed, but one headline to tell
  // that there is a next page. A site's own view is in its site's order: all of it, then sorted.
  out.headlines = snapshot.headlines.select(
      [&](const news_item& item) { return query.matches(item) && after_cursor(item); },
      query.one_site() ? std::numeric_limits<std::size_t>::max() : bound + 1);
  if (query.one_site())
    out.headlines.stable_sort(
        [](const news_item& a, const news_item& b) { return a.rank < b.rank; });
  if (out.headlines.size() > bound) {
    out.headlines.truncate(bound);
    if (!query.one_site())
      out.next = cursor_after(out.headlines.back());
  }
  return out;
}

} // namespace newsdesk::server

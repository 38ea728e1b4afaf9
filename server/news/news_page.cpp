#include "server/news/news_page.hpp"

#include "server/core/read_file.hpp"
#include "server/core/utc_time.hpp"
#include "server/http/http_message.hpp"
#include "server/news/story_view.hpp"
#include "server/render/renderers.hpp"

#include "scrapers/url.hpp"

#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace newsdesk::server {

namespace mustache = kainjow::mustache;
using json = nlohmann::json;

namespace {

bool safe_link(const scrapers::headline& h) {
  return scrapers::url::is_http_url(h.url);
}

// The site's last refresh failed because of its renderer, not the site: the notice for all the
// renderer's sites tells it.
bool renderer_failed(const site_report& s) {
  return !s.ok && !s.error.empty() && s.last_attempt_ms != 0 && info(s.failure).renderer_problem;
}

} // namespace

namespace {

// A "#rgb" or "#rrggbb" colour's channels, 0-255; nullopt for anything else.
std::optional<std::array<int, 3>> channels_of(std::string_view colour) {
  if ((colour.size() != 4 && colour.size() != 7) || colour[0] != '#')
    return std::nullopt;
  std::array<int, 3> out{};
  for (int i = 0; i < 3; ++i) {
    const auto digits = colour.size() == 4 ? std::string(2, colour[1 + i])
                                           : std::string(colour.substr(1 + 2 * i, 2));
    if (!std::isxdigit(static_cast<unsigned char>(digits[0])) ||
        !std::isxdigit(static_cast<unsigned char>(digits[1])))
      return std::nullopt;
    out[i] = std::stoi(digits, nullptr, 16);
  }
  return out;
}

// WCAG relative luminance.
double luminance_of(const std::array<int, 3>& c) {
  auto linear = [](int v) {
    const double x = v / 255.0;
    return x <= 0.03928 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c[0]) + 0.7152 * linear(c[1]) + 0.0722 * linear(c[2]);
}

double contrast_of(double a, double b) {
  return (std::max(a, b) + 0.05) / (std::min(a, b) + 0.05);
}

std::string hex_of(const std::array<int, 3>& c) {
  char out[8];
  std::snprintf(out, sizeof out, "#%02x%02x%02x", c[0], c[1], c[2]);
  return out;
}

} // namespace

std::string text_colour_for(std::string_view bg) {
  const auto c = channels_of(bg);
  if (!c)
    return "#ffffff";
  // WCAG contrast against white (1.05 / (L + 0.05)) vs against near-black: pick the larger.
  // Pure black and white: at the crossover (L = 0.179) both give 4.58:1, so any colour gets at
  // least WCAG AA's 4.5:1 (#111111 instead of black fell to 4.2:1 near it).
  return luminance_of(*c) > 0.179 ? "#000000" : "#ffffff";
}

std::string colour_against(std::string_view colour, std::string_view background) {
  const auto c = channels_of(colour);
  const auto bg = channels_of(background);
  if (!c || !bg)
    return std::string(colour);
  const double bg_luminance = luminance_of(*bg);
  // Towards white on a dark background, towards black on a light one, a step at a time: the
  // nearest colour of the same hue family that stands out 3:1 (WCAG 1.4.11, a control's edge).
  const int towards = bg_luminance < 0.18 ? 255 : 0;
  auto adjusted = *c;
  for (int step = 0; step <= 20; ++step) {
    for (int i = 0; i < 3; ++i)
      adjusted[i] = static_cast<int>(std::lround((*c)[i] + (towards - (*c)[i]) * step / 20.0));
    if (contrast_of(luminance_of(adjusted), bg_luminance) >= 3.0)
      return step == 0 ? std::string(colour) : hex_of(adjusted);
  }
  return hex_of(adjusted);
}

// The templates, parsed once: the page, one headline (templates/headline.html: every kind, in the
// list, a card's lead, a line beneath either) and a story's card (templates/story.html). A
// headline is rendered alone and put into the page as it is: a partial ({{> headline}}) would be
// parsed again at each of the page's 500 uses.
struct news_page::impl {
  mutable std::mutex mutex; // kainjow's render() is not const: one render at a time
  mutable mustache::mustache page;
  mutable mustache::mustache headline;
  mutable mustache::mustache story;
};

news_page::news_page(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
news_page::news_page(news_page&&) noexcept = default;
news_page& news_page::operator=(news_page&&) noexcept = default;
news_page::~news_page() = default;

news_page news_page::load(const std::filesystem::path& dir) {
  auto parse = [&dir](const char* name) {
    const auto path = dir / name;
    auto text = read_whole_file(path);
    if (!text)
      throw std::runtime_error("cannot read template " + path.string() +
                               " (set --templates or NEWSDESK_TEMPLATES_DIR to the folder holding "
                               "news.html, headline.html and story.html)");
    mustache::mustache parsed(*text);
    if (!parsed.is_valid())
      throw std::runtime_error("template " + path.string() +
                               " is not valid Mustache: " + parsed.error_message());
    return parsed;
  };
  return news_page(std::unique_ptr<impl>(
      new impl{{}, parse("news.html"), parse("headline.html"), parse("story.html")}));
}

namespace {

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "19:25 UTC" and "Tue 24 Nov 2026, 19:25 UTC" for unix milliseconds.
std::string clock_time(std::int64_t unix_ms) {
  return format_utc(unix_ms, "%H:%M UTC");
}
std::string full_time(std::int64_t unix_ms) {
  return format_utc(unix_ms, "%a %d %b %Y, %H:%M UTC");
}

std::string renderer_name(std::string_view renderer) {
  const auto* known = find_renderer(renderer);
  return std::string(known ? known->display_name() : renderer);
}

// "CNN", "CNN and BBC", "CNN, BBC and Reuters", "CNN, BBC and 4 more".
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  const std::size_t shown = names.size() > 3 ? 2 : names.size();
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0)
      out += i + 1 == shown && shown == names.size() ? " and " : ", ";
    out += names[i];
  }
  if (shown < names.size())
    out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// The sites that get a chip, in the order shown: every site, in the configuration's order, when
// they fit or the query asks for all. Else the most active, so that the chips point at what the
// page lists: the most headlines in the view, then the most recently updated, then the
// configuration's order. A site the query names keeps its chip whatever its rank (its own view
// marks it current). Failed sites rank by their headlines like any other: the problems section
// names every one of them.
std::vector<const site_report*> chip_sites(const news_snapshot& snapshot, const news_query& query) {
  std::vector<const site_report*> all;
  all.reserve(snapshot.sites.size());
  for (const auto& s : snapshot.sites)
    all.push_back(&s);
  if (query.all_chips || all.size() <= max_site_chips)
    return all;

  std::unordered_map<std::string_view, std::size_t> shown;
  for (const auto& item : snapshot.headlines)
    if (safe_link(item.headline))
      ++shown[item.headline.site];
  struct ranked {
    const site_report* site;
    std::size_t shown;
  };
  std::vector<ranked> ranking;
  ranking.reserve(all.size());
  for (const auto* s : all) {
    auto it = shown.find(s->name);
    ranking.push_back({s, it == shown.end() ? 0 : it->second});
  }
  std::stable_sort(ranking.begin(), ranking.end(), [](const ranked& a, const ranked& b) {
    if (a.shown != b.shown)
      return a.shown > b.shown;
    return a.site->last_success_ms > b.site->last_success_ms;
  });

  auto named = [&query](const site_report* s) {
    return std::find(query.sites.begin(), query.sites.end(), s->name) != query.sites.end();
  };
  const auto named_count = static_cast<std::size_t>(std::count_if(all.begin(), all.end(), named));
  std::size_t room = max_site_chips > named_count ? max_site_chips - named_count : 0;
  std::vector<const site_report*> chosen;
  for (const auto& r : ranking) {
    if (named(r.site)) {
      chosen.push_back(r.site);
    } else if (room > 0) {
      chosen.push_back(r.site);
      --room;
    }
  }
  return chosen;
}

} // namespace

site_status status_of(const site_report& s, std::int64_t now_ms) {
  site_status out;
  const bool failed = !s.ok && !s.stale && s.last_attempt_ms != 0 && !s.error.empty();
  if (renderer_failed(s)) {
    // Quiet: the chip keeps its colours, dashed, and says it to screen readers only.
    out.state = "renderer";
    out.state_text = "not updating";
    out.quiet = true;
  } else if (s.ok && !s.health.empty()) {
    // It refreshes, but not as it used to: the reader may miss stories, the operator should look
    // (the reason is the chip's title, and in the log).
    out.state = "broken";
    out.state_text = "looks broken";
  } else {
    out.state = s.ok ? "ok" : s.stale ? "stale" : failed ? "failed" : "pending";
    out.state_text = s.ok      ? (s.note.empty() ? "" : "found by detection")
                     : s.stale ? "not updating"
                     : failed  ? "failed"
                               : "loading…";
  }
  if (s.ok || s.error.empty() || s.last_attempt_ms == 0)
    return out;
  const auto words = describe_failure(s.failure);
  if (words.renderer_problem) {
    const auto renderer = renderer_name(s.renderer);
    out.problem = "Couldn’t load " + s.display_name + ": " + words.summary + " (" + renderer +
                  "). Check " + renderer + ": " + words.check;
  } else {
    out.problem = s.stale ? s.display_name + " isn’t updating (last updated " +
                                age_text(s.last_success_ms, now_ms) + "): " + words.summary
                          : "Couldn’t load " + s.display_name + ": " + words.summary;
  }
  return out;
}

failure_words describe_failure(failure_kind kind) {
  const auto& f = info(kind);
  // A site's failure recorded by an older version has no kind: words that fit any failure.
  if (kind == failure_kind::none)
    return {"something went wrong loading it", false, {}};
  return {std::string(f.summary), f.renderer_problem, std::string(f.check)};
}

std::string public_detail(std::string_view error, std::string_view site_url) {
  auto host_of = [](std::string_view url) {
    auto parts = scrapers::url::split_http_url(url);
    return parts ? parts->host : std::string();
  };
  const auto site_host = host_of(site_url);
  std::string out;
  std::size_t at = 0;
  while (at < error.size()) {
    auto start = error.find("://", at);
    if (start == std::string_view::npos)
      break;
    // Back to the scheme's first letter, forward to the end of the address.
    auto begin = start;
    while (begin > at && std::isalpha(static_cast<unsigned char>(error[begin - 1])))
      --begin;
    auto end = start + 3;
    while (end < error.size() && !std::isspace(static_cast<unsigned char>(error[end])) &&
           error[end] != ')' && error[end] != '\'' && error[end] != '"')
      ++end;
    auto address = error.substr(begin, end - begin);
    out.append(error.substr(at, begin - at));
    const auto host = host_of(address);
    out += !host.empty() && host == site_host ? std::string(address) : "(an internal address)";
    at = end;
  }
  out.append(error.substr(at));
  return out;
}

std::string news_page::render(const news_snapshot& snapshot, const news_query& query) const {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::map<std::string_view, const site_report*> by_name;
  for (const auto& s : snapshot.sites)
    by_name[s.name] = &s;

  // Every site's colours, light and dark, each standing out from that scheme's backgrounds: a
  // headline of any site may arrive while the page is open.
  mustache::data sites{mustache::data::type::list};
  mustache::data dark_sites{mustache::data::type::list};
  for (const auto& s : snapshot.sites) {
    auto for_scheme = [&](const auto& backgrounds) {
      std::string colour = s.colour;
      for (auto background : backgrounds)
        colour = colour_against(colour, background);
      return colour;
    };
    const auto light = for_scheme(light_backgrounds);
    const auto dark = for_scheme(dark_backgrounds);
    mustache::data site;
    site.set("name", s.name);
    site.set("colour", light);
    site.set("text_colour", text_colour_for(light));
    sites.push_back(site);
    if (dark != light) {
      mustache::data dark_site;
      dark_site.set("name", s.name);
      dark_site.set("colour", dark);
      dark_site.set("text_colour", text_colour_for(dark));
      dark_sites.push_back(dark_site);
    }
  }

  // The site's icon where one is stored, else its initial on its colour (no image at all: the
  // page never asks for an icon that is not there, and never shows a broken one).
  auto set_mark = [](mustache::data& d, std::string_view icon, std::string_view display_name) {
    d.set("has_icon", !icon.empty());
    std::size_t n = display_name.empty() ? 0 : 1;
    while (n < display_name.size() && (static_cast<unsigned char>(display_name[n]) & 0xC0) == 0x80)
      ++n; // the whole first UTF-8 character
    std::string initial(display_name.substr(0, n));
    if (n == 1)
      initial[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(initial[0])));
    d.set("initial", initial);
  };

  // One line of chips: name, count, age.
  const auto chosen = chip_sites(snapshot, query);
  mustache::data chips{mustache::data::type::list};
  for (const auto* chip : chosen) {
    const auto& s = *chip;
    mustache::data site;
    site.set("name", s.name);
    site.set("display_name", s.display_name);
    set_mark(site, s.icon, s.display_name);
    const auto status = status_of(s, now);
    site.set("state", status.state);
    site.set("state_text", status.state_text);
    site.set("quiet_state", status.quiet);
    if (!s.health.empty()) // a section: mustache takes any string, "" too, for true
      site.set("health", s.health);
    site.set("current", query.one_site() && query.sites.front() == s.name);
    site.set("has_headlines", s.headline_count > 0);
    site.set("headline_count", std::to_string(s.headline_count));
    site.set("headline_count_text", plural(s.headline_count, "headline", "headlines"));
    site.set("updated_at", s.last_success_ms ? iso8601_ms(s.last_success_ms) : std::string());
    site.set("updated", s.last_success_ms ? age_text(s.last_success_ms, now) : std::string());
    site.set("updated_title", s.last_success_ms ? full_time(s.last_success_ms) : std::string());
    chips.push_back(site);
  }

  // Problems in plain words, one per site, except that sites failed by the same renderer in the
  // same way share one, listed first (it is the likelier cause to fix) and saying what to check;
  // the raw error (internal addresses removed) is the detail on demand.
  struct renderer_group {
    std::string renderer; // display name
    failure_words words;
    std::vector<const site_report*> sites;
  };
  std::vector<renderer_group> renderer_groups; // a handful at most: one per renderer and kind
  mustache::data site_problems{mustache::data::type::list};
  for (const auto& s : snapshot.sites) {
    if (s.ok || s.error.empty() || s.last_attempt_ms == 0)
      continue;
    auto words = describe_failure(s.failure);
    if (words.renderer_problem) {
      auto renderer = renderer_name(s.renderer);
      auto group = std::find_if(renderer_groups.begin(), renderer_groups.end(), [&](auto& g) {
        return g.renderer == renderer && g.words.summary == words.summary;
      });
      if (group == renderer_groups.end())
        group = renderer_groups.insert(renderer_groups.end(),
                                       {std::move(renderer), std::move(words), {}});
      group->sites.push_back(&s);
      continue;
    }
    mustache::data problem;
    problem.set("summary", status_of(s, now).problem);
    problem.set("sites", s.name);
    mustache::data details{mustache::data::type::list};
    details.push_back(public_detail(s.error, s.url) + " (via " + renderer_name(s.renderer) +
                      ", tried " + clock_time(s.last_attempt_ms) + ")");
    problem.set("details", details);
    site_problems.push_back(problem);
  }
  mustache::data problems{mustache::data::type::list};
  for (const auto& group : renderer_groups) {
    std::vector<std::string> names;
    std::string site_names;
    mustache::data details{mustache::data::type::list};
    for (const auto* s : group.sites) {
      names.push_back(s->display_name);
      site_names += (site_names.empty() ? "" : " ") + s->name;
      details.push_back(s->display_name + ": " + public_detail(s->error, s->url) + " (tried " +
                        clock_time(s->last_attempt_ms) + ")");
    }
    mustache::data problem;
    problem.set("summary", "Couldn’t load " + name_list(names) + ": " + group.words.summary + " (" +
                               group.renderer + "). Check " + group.renderer + ": " +
                               group.words.check);
    problem.set("details", details);
    problem.set("sites", site_names);
    problems.push_back(problem);
  }
  for (const auto& problem : site_problems.list_value())
    problems.push_back(problem);

  // A headline whose story other sites in the view tell too links to the story's whole coverage
  // (not on that coverage's own view).
  // The stories of the headlines shown (as /news.json counts them), once for the links and the
  // cards below.
  const auto linkable =
      snapshot.headlines.select([](const news_item& item) { return safe_link(item.headline); });
  const auto stories = query.story ? std::vector<story_summary>{} : stories_of(linkable);
  std::unordered_map<std::int64_t, std::size_t> sources;
  for (const auto& story : stories)
    if (story.sources >= 2)
      sources[story.id] = story.sources;
  std::vector<std::string> story_sites; // a story's view: its sites' names, in order of appearance

  std::size_t shown = 0;
  auto entry_of = [&](const news_item& item) {
    const auto& h = item.headline;
    auto it = by_name.find(h.site);
    mustache::data entry;
    entry.set("id", std::to_string(item.id));
    entry.set("title", h.title);
    entry.set("url", h.url);
    entry.set("site", h.site);
    entry.set("rank", std::to_string(item.rank));
    entry.set("first_seen", iso8601_ms(item.first_seen_ms));
    entry.set("page_time", iso8601_ms(page_time(item)));
    entry.set("first_seen_title", full_time(item.first_seen_ms));
    entry.set("first_seen_ago", age_text(item.first_seen_ms, now));
    // Its time: when published, if the source said; else when seen, unless its site's first
    // refresh found it (it was there before newsdesk looked: no age is known).
    if (const auto& published = h.published_ms) {
      entry.set("time_at", iso8601_ms(*published));
      entry.set("time_label", "published");
      entry.set("time_title", full_time(*published));
      entry.set("time_text", "published " + published_text(*published, now));
    } else if (!item.first_look) {
      entry.set("time_at", iso8601_ms(item.first_seen_ms));
      entry.set("time_label", "seen");
      entry.set("time_title", full_time(item.first_seen_ms));
      entry.set("time_text", "seen " + age_text(item.first_seen_ms, now));
    } else {
      // Found by its site's first refresh: it was on the page before newsdesk first looked, so
      // all that is known is that it was there by then.
      entry.set("time_at", iso8601_ms(item.first_seen_ms));
      entry.set("time_label", "seen before");
      entry.set("time_title", full_time(item.first_seen_ms));
      entry.set("time_text", "seen before " + clock_time(item.first_seen_ms));
    }
    // Dashed "not updating" boxes tell a site's own failure; a renderer's is its notice's to tell.
    entry.set("stale", it != by_name.end() && it->second->stale && !renderer_failed(*it->second));
    entry.set("site_display_name", it != by_name.end() ? it->second->display_name : h.site);
    set_mark(entry, it != by_name.end() ? std::string_view(it->second->icon) : std::string_view(),
             it != by_name.end() ? std::string_view(it->second->display_name) : h.site);
    entry.set("story", std::to_string(item.story));
    ++shown;
    return entry;
  };

  std::lock_guard lock(impl_->mutex); // every template below is rendered under it
  auto html_of = [this](mustache::data& entry, const char* kind) {
    entry.set("kind", kind);
    return impl_->headline.render(entry);
  };
  // A line beneath a card's lead or a box of the list: each other site's first headline of the
  // story, up to max_card_tellings; the story's other headlines are in its "N sources".
  struct tellings {
    std::vector<std::string_view> sites; // the lead's or box's first
    std::string html;
    bool add(const news_item& item, const std::function<std::string()>& render) {
      if (sites.size() > max_card_tellings ||
          std::find(sites.begin(), sites.end(), item.headline.site) != sites.end())
        return false;
      sites.push_back(item.headline.site);
      html += render();
      return true;
    }
  };

  // Stories first, on the page everybody opens: a card per story that two sites or more tell.
  // The lead is the story's first headline in the page's order (the newest, a site's lead before
  // its others): the one the flat list would have shown first. The story's starter may have left
  // the view or be a site's tenth headline; the first in order is always there and prominent.
  mustache::data top_stories{mustache::data::type::list};
  std::unordered_set<std::int64_t> carded; // the stories with a card: shown there only
  if (!query.filters_headlines()) {
    for (const auto& story : stories) {
      if (story.sources < 2 || top_stories.list_value().size() == max_top_stories)
        break; // most sources first: the rest are one site's, or beyond the bound
      const auto& lead = *story.headlines.front();
      auto lead_entry = entry_of(lead);
      if (!lead.headline.summary.empty())
        lead_entry.set("summary", lead.headline.summary);
      // Its picture, at its own size (the page keeps its room before it loads); the first row of
      // cards loads at once, the rest when scrolled near.
      if (const auto& picture = lead.picture; !picture.name.empty()) {
        lead_entry.set("picture", picture.name);
        lead_entry.set("picture_width", std::to_string(picture.width));
        lead_entry.set("picture_height", std::to_string(picture.height));
        lead_entry.set("picture_loading",
                       top_stories.list_value().size() < eager_pictures ? "eager" : "lazy");
      }
      tellings lines{{lead.headline.site}, html_of(lead_entry, "lead")};
      for (const auto* item : story.headlines)
        lines.add(*item, [&] {
          auto e = entry_of(*item);
          return html_of(e, "telling");
        });
      carded.insert(story.id);
      mustache::data card;
      card.set("story", std::to_string(story.id));
      card.set("lines_html", lines.html);
      card.set("story_sources", std::to_string(story.sources));
      card.set("last_seen", std::to_string(story.last_seen_ms));
      card.set("started_at", iso8601_ms(story.first_seen_ms));
      card.set("started_title", full_time(story.first_seen_ms));
      card.set("started_ago", age_text(story.first_seen_ms, now));
      // "updated" once it grew a minute or more after it started: sites' refreshes of one round
      // land seconds apart, and "started just now · updated just now" says nothing.
      if (story.last_seen_ms - story.first_seen_ms >= 60'000) {
        card.set("grew_at", iso8601_ms(story.last_seen_ms));
        card.set("grew_title", full_time(story.last_seen_ms));
        card.set("grew_ago", age_text(story.last_seen_ms, now));
      }
      mustache::data rendered;
      rendered.set("html", impl_->story.render(card));
      top_stories.push_back(rendered);
    }
  }

  // The latest headlines: every one but the cards' stories'. A story that several of them tell is
  // shown once, as a box of its first headline in the page's order with a line for each other
  // site's first beneath (as in a card); its other headlines, as a card's, are in "N sources".
  struct box {
    mustache::data entry;
    tellings lines;
  };
  std::vector<box> boxes;
  std::unordered_map<std::int64_t, std::size_t> box_of_story;
  for (const auto& item : snapshot.headlines) {
    const auto& h = item.headline;
    if (!safe_link(h) || carded.count(item.story))
      continue;
    const auto told = sources.find(item.story);
    if (told != sources.end()) {
      if (auto at = box_of_story.find(item.story); at != box_of_story.end()) {
        boxes[at->second].lines.add(item, [&] {
          auto e = entry_of(item);
          return html_of(e, "telling");
        });
        continue;
      }
      box_of_story[item.story] = boxes.size();
    }
    auto entry = entry_of(item);
    if (told != sources.end())
      entry.set("sources", std::to_string(told->second));
    auto it = by_name.find(h.site);
    const auto& name = it != by_name.end() ? it->second->display_name : h.site;
    if (query.story && std::find(story_sites.begin(), story_sites.end(), name) == story_sites.end())
      story_sites.push_back(name);
    boxes.push_back({std::move(entry), {{h.site}, {}}});
  }
  mustache::data headlines{mustache::data::type::list};
  for (auto& b : boxes) {
    b.entry.set("has_tellings", !b.lines.html.empty());
    b.entry.set("tellings_html", b.lines.html);
    mustache::data rendered;
    rendered.set("html", html_of(b.entry, "headline"));
    headlines.push_back(rendered);
  }

  // The same filters as a query string: "site=a&site=b&q=..." for /events (a section as its
  // sites: the stream knows no sections), and with section= for the page's own and the feeds'
  // links, plus "&limit=N" for the feed links.
  std::string filters, events;
  auto add_parameter = [](std::string& to, std::string_view name, std::string_view value) {
    to += to.empty() ? "" : "&";
    to.append(name).append("=").append(value);
  };
  mustache::data query_sites{mustache::data::type::list};
  if (!query.section.empty())
    add_parameter(filters, "section", form_encode(query.section));
  for (const auto& site : query.sites) {
    add_parameter(events, "site", site);
    if (query.section.empty()) {
      add_parameter(filters, "site", site);
      query_sites.push_back(site);
    }
  }
  for (auto* to : {&filters, &events}) {
    if (!query.q.empty())
      add_parameter(*to, "q", form_encode(query.q));
    if (query.story)
      add_parameter(*to, "story", std::to_string(query.story));
  }
  std::string feed_query = filters;
  if (query.limit)
    add_parameter(feed_query, "limit", std::to_string(query.limit));
  // The page's own links (the next page, every chip) keep its chips=all; the feeds have no chips.
  std::string page_query = feed_query;
  if (query.all_chips)
    add_parameter(page_query, "chips", "all");

  // What the view is: all sites, one site (in its own order), a search, or several.
  std::string view_name;
  std::string view_heading = "Latest headlines";
  std::string home_href, home_text;
  if (query.one_site()) {
    auto it = by_name.find(query.sites.front());
    view_name = it != by_name.end() ? it->second->display_name : query.sites.front();
    view_heading = view_name + ", in the site's own order";
    // The way to the site itself: its home page (a feed site's file names it beside the feed).
    const auto* home_url = it == by_name.end()        ? nullptr
                           : it->second->home.empty() ? &it->second->url
                                                      : &it->second->home;
    if (home_url)
      if (auto home = scrapers::url::split_http_url(*home_url)) {
        home_href = *home_url;
        home_text = home->host.starts_with("www.") ? home->host.substr(4) : home->host;
      }
  } else if (!query.section.empty()) {
    view_name = query.section;
    view_heading = query.section;
  } else if (!query.sites.empty()) {
    std::vector<std::string> names;
    for (const auto& site : query.sites)
      names.push_back(by_name.count(site) ? by_name.at(site)->display_name : site);
    view_name = name_list(names);
    view_heading = "Latest from " + view_name;
  }
  if (!query.q.empty()) {
    view_heading = (query.sites.empty() ? std::string("Headlines") : view_heading + ",") +
                   " matching “" + query.q + "”";
    if (view_name.empty())
      view_name = "“" + query.q + "”";
  }
  if (query.story) {
    view_heading = "One story, told by " + name_list(story_sites);
    if (view_name.empty())
      view_name = "one story";
  }

  const auto generated_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                snapshot.generated_at.time_since_epoch())
                                .count();
  mustache::data page;
  page.set("page_title", view_name.empty() ? std::string("newsdesk") : "newsdesk: " + view_name);
  page.set("feed_title", query.one_site() ? "newsdesk: " + view_name : std::string("newsdesk"));
  page.set("sites", sites);
  page.set("dark_sites", dark_sites);
  page.set("chips", chips);
  // Chips left out: the last one links to this view with all of them.
  if (chosen.size() < snapshot.sites.size()) {
    std::string all = feed_query;
    if (query.paged())
      add_parameter(all, "before",
                    std::to_string(query.before_ms) + "." + std::to_string(query.before_id));
    add_parameter(all, "chips", "all");
    page.set("all_chips_href", "/news?" + all);
    page.set("all_chips_text", "All " + std::to_string(snapshot.sites.size()) + " sites");
  }
  page.set("problems", problems);
  page.set("has_problems", !problems.is_empty_list());
  page.set("top_stories", top_stories);
  page.set("has_top_stories", !top_stories.is_empty_list());
  page.set("skip_target",
           top_stories.is_empty_list() ? "headlines-heading" : "top-stories-heading");
  page.set("headlines", headlines);
  page.set("has_headlines", shown > 0);
  page.set("has_latest", !headlines.is_empty_list());
  page.set("heading_shown", query.filters_headlines() || !top_stories.is_empty_list());
  page.set("headline_count", std::to_string(shown));
  page.set("headline_count_text", plural(shown, "headline", "headlines"));
  page.set("site_count_text", plural(snapshot.sites.size(), "site", "sites"));
  page.set("site_count", std::to_string(snapshot.sites.size()));
  page.set("generated_at", iso8601_ms(generated_ms));
  page.set("generated_time", clock_time(generated_ms));
  page.set("generated_title", full_time(generated_ms));
  page.set("notice", snapshot.notice);
  page.set("has_notice", !snapshot.notice.empty());
  page.set("q", query.q);
  page.set("query_sites", query_sites);
  page.set("filtered", query.filters_headlines());
  page.set("view_heading", view_heading);
  if (!query.q.empty() && query.sites.size() == 1)
    page.set("search_all_href", "/news?q=" + form_encode(query.q));
  if (!home_href.empty()) {
    page.set("home_href", home_href);
    page.set("home_text", home_text);
  }
  page.set("order", query.one_site() ? "site" : "latest");
  page.set("events_query", events);
  page.set("query_section", query.section);
  page.set("has_section", !query.section.empty());
  // The sections the sites declare, as chips: every headline, or one section's.
  mustache::data section_chips{mustache::data::type::list};
  for (const auto& name : snapshot.sections) {
    mustache::data chip;
    chip.set("name", name);
    chip.set("href", "/news?section=" + form_encode(name));
    chip.set("current", name == query.section);
    section_chips.push_back(chip);
  }
  page.set("section_chips", section_chips);
  page.set("has_sections", !snapshot.sections.empty());
  page.set("all_sections_current", query.empty());
  page.set("feed_query", feed_query.empty() ? std::string() : "?" + feed_query);
  // The stream starts after the newest headline held, not the newest shown: a page cut at 500
  // left newer ids to its next pages, which are not news to this reader.
  page.set("last_id", std::to_string(snapshot.last_id));
  // A page cut at page_size links to the next one, with the same filters.
  if (!snapshot.next.empty()) {
    std::string next = page_query;
    add_parameter(next, "before", snapshot.next);
    page.set("next_href", "/news?" + next);
  }

  // One of each kind, empty, for what arrives live (static/news.js fills them in).
  mustache::data blank;
  blank.set("kind", "headline");
  blank.set("time_at", "");
  blank.set("initial", "");
  page.set("headline_template", impl_->headline.render(blank));
  blank.set("kind", "telling");
  page.set("telling_template", impl_->headline.render(blank));
  if (!query.filters_headlines()) {
    mustache::data card;
    card.set("story_sources", "0");
    page.set("story_template", impl_->story.render(card));
  }
  page.set("cards", !query.filters_headlines());
  return impl_->page.render(page);
}

std::string news_json(const news_snapshot& snapshot) {
  json sites = json::array();
  for (const auto& s : snapshot.sites)
    sites.push_back(
        {{"name", s.name},
         {"display_name", s.display_name},
         {"colour", s.colour},
         {"url", s.url},
         {"home", s.home},
         {"renderer", s.renderer},
         {"ok", s.ok},
         {"stale", s.stale},
         {"error", s.error.empty() ? json(nullptr) : json(s.error)},
         {"failure", s.failure == failure_kind::none ? json(nullptr)
                                                     : json(std::string(to_string(s.failure)))},
         {"note", s.note.empty() ? json(nullptr) : json(s.note)},
         {"health", s.health.empty() ? json(nullptr) : json(s.health)},
         {"headline_count", s.headline_count},
         {"elapsed_ms", s.elapsed.count()},
         {"last_success",
          s.last_success_ms ? json(iso8601_ms(s.last_success_ms)) : json(nullptr)}});
  // The stories the headlines shown tell, over the same headlines (a filtered view's stories are
  // those its headlines touch).
  const auto shown =
      snapshot.headlines.select([](const news_item& item) { return safe_link(item.headline); });
  json out = {{"generated_at", iso8601(snapshot.generated_at)},
              {"sites", std::move(sites)},
              {"headlines", shown},
              {"stories", stories_of(shown)}};
  if (!snapshot.notice.empty())
    out["notice"] = snapshot.notice;
  // A view cut to one page: the before= value of the next page.
  if (!snapshot.next.empty())
    out["next"] = snapshot.next;
  // Scraped text is usually UTF-8 but not always; replace invalid bytes rather than throw.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string age_text(std::int64_t then_ms, std::int64_t now_ms) {
  auto seconds = std::max<std::int64_t>(0, (now_ms - then_ms) / 1000);
  if (seconds < 60)
    return "just now";
  if (seconds < 3600)
    return std::to_string(seconds / 60) + " min ago";
  if (seconds < 2 * 86400)
    return std::to_string(seconds / 3600) + " h ago";
  return std::to_string(seconds / 86400) + " days ago";
}

std::string published_text(std::int64_t then_ms, std::int64_t now_ms) {
  if (now_ms - then_ms < 86'400'000)
    return age_text(then_ms, now_ms);
  return format_utc(then_ms, "%d %b %Y");
}

} // namespace newsdesk::server

#include "server/views/news_page.hpp"

#include "server/core/read_file.hpp"
#include "server/core/utc_time.hpp"
#include "server/http/http_message.hpp"
#include "server/views/page_words.hpp"
#include "server/views/site_colours.hpp"
#include "server/views/site_status.hpp"
#include "server/views/story_view.hpp"

#include "scrapers/url.hpp"

#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace newsdesk::server {

namespace mustache = kainjow::mustache;
using json = nlohmann::json;

namespace {

bool safe_link(const scrapers::headline& h) {
  return scrapers::url::is_http_url(h.url);
}

} // namespace

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

using sites_by_name = std::map<std::string_view, const site_report*>;

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every site's colours, light and dark, each standing out from that scheme's backgrounds: a
// headline of any site may arrive while the page is open. The dark list holds only the sites
// whose colour the dark scheme changes.
std::pair<mustache::data, mustache::data> site_colours(const news_snapshot& snapshot) {
  mustache::data light_sites{mustache::data::type::list};
  mustache::data dark_sites{mustache::data::type::list};
  auto site_of = [](const site_report& s, const std::string& colour) {
    mustache::data site;
    site.set("name", s.name);
    site.set("colour", colour);
    site.set("text_colour", text_colour_for(colour));
    return site;
  };
  for (const auto& s : snapshot.sites) {
    const auto light = colour_for_scheme(s.colour, light_backgrounds);
    const auto dark = colour_for_scheme(s.colour, dark_backgrounds);
    light_sites.push_back(site_of(s, light));
    if (dark != light)
      dark_sites.push_back(site_of(s, dark));
  }
  return {std::move(light_sites), std::move(dark_sites)};
}

// The site's icon where one is stored, else its initial on its colour (no image at all: the
// page never asks for an icon that is not there, and never shows a broken one).
void set_mark(mustache::data& d, std::string_view icon, std::string_view display_name) {
  d.set("has_icon", !icon.empty());
  std::size_t n = display_name.empty() ? 0 : 1;
  while (n < display_name.size() && (static_cast<unsigned char>(display_name[n]) & 0xC0) == 0x80)
    ++n; // the whole first UTF-8 character
  std::string initial(display_name.substr(0, n));
  if (n == 1)
    initial[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(initial[0])));
  d.set("initial", initial);
}

// One line of chips: name, count, age.
mustache::data chips_of(const std::vector<const site_report*>& chosen, const news_query& query,
                        std::int64_t now) {
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
  return chips;
}

// The problems section's notices (site_status.hpp: problems_of).
mustache::data problems_data(const news_snapshot& snapshot, std::int64_t now) {
  mustache::data problems{mustache::data::type::list};
  for (const auto& p : problems_of(snapshot.sites, now)) {
    mustache::data details{mustache::data::type::list};
    for (const auto& detail : p.details)
      details.push_back(detail);
    mustache::data problem;
    problem.set("summary", p.summary);
    problem.set("sites", p.sites);
    problem.set("details", details);
    problems.push_back(problem);
  }
  return problems;
}

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

// The page's headlines as markup: the story cards and the list, each headline from the headline
// template. The templates are the caller's, held under its lock.
class headline_markup {
 public:
  headline_markup(const sites_by_name& by_name, std::int64_t now, mustache::mustache& headline,
                  mustache::mustache& story)
      : by_name_(by_name)
      , now_(now)
      , headline_(headline)
      , story_(story) {}

  // Headlines shown, cards and list together.
  std::size_t shown() const { return shown_; }

  // A card per story that two sites or more tell, most sources first, at most max_top_stories.
  // The lead is the story's first headline in the page's order (the newest, a site's lead before
  // its others): the one the flat list would have shown first. The story's starter may have left
  // the view or be a site's tenth headline; the first in order is always there and prominent.
  // `carded` gets the stories with a card: shown there only.
  mustache::data cards(const std::vector<story_summary>& stories,
                       std::unordered_set<std::int64_t>& carded) {
    mustache::data top_stories{mustache::data::type::list};
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
        lines.add(*item, [&] { return telling_of(*item); });
      carded.insert(story.id);
      mustache::data card;
      card.set("story", std::to_string(story.id));
      card.set("lines_html", lines.html);
      card.set("story_sources", std::to_string(story.sources));
      card.set("last_seen", std::to_string(story.last_seen_ms));
      card.set("started_at", iso8601_ms(story.first_seen_ms));
      card.set("started_title", full_time(story.first_seen_ms));
      card.set("started_ago", age_text(story.first_seen_ms, now_));
      // "updated" once it grew a minute or more after it started: sites' refreshes of one round
      // land seconds apart, and "started just now · updated just now" says nothing.
      if (story.last_seen_ms - story.first_seen_ms >= 60'000) {
        card.set("grew_at", iso8601_ms(story.last_seen_ms));
        card.set("grew_title", full_time(story.last_seen_ms));
        card.set("grew_ago", age_text(story.last_seen_ms, now_));
      }
      mustache::data rendered;
      rendered.set("html", story_.render(card));
      top_stories.push_back(rendered);
    }
    return top_stories;
  }

  // The latest headlines: every one but the cards' stories'. A story that several of them tell
  // (`sources`: story -> sources, for stories of two or more) is shown once, as a box of its
  // first headline in the page's order with a line for each other site's first beneath (as in a
  // card); its other headlines, as a card's, are in "N sources". `story_sites`, when given, gets
  // the display names of the sites listed, in order of appearance (a story's view names them).
  mustache::data list(const headline_list& headlines,
                      const std::unordered_set<std::int64_t>& carded,
                      const std::unordered_map<std::int64_t, std::size_t>& sources,
                      std::vector<std::string>* story_sites) {
    struct box {
      mustache::data entry;
      tellings lines;
    };
    std::vector<box> boxes;
    std::unordered_map<std::int64_t, std::size_t> box_of_story;
    for (const auto& item : headlines) {
      const auto& h = item.headline;
      if (!safe_link(h) || carded.count(item.story))
        continue;
      const auto told = sources.find(item.story);
      if (told != sources.end()) {
        if (auto at = box_of_story.find(item.story); at != box_of_story.end()) {
          boxes[at->second].lines.add(item, [&] { return telling_of(item); });
          continue;
        }
        box_of_story[item.story] = boxes.size();
      }
      auto entry = entry_of(item);
      if (told != sources.end())
        entry.set("sources", std::to_string(told->second));
      if (story_sites) {
        const auto& name = display_name_of(h.site);
        if (std::find(story_sites->begin(), story_sites->end(), name) == story_sites->end())
          story_sites->push_back(name);
      }
      boxes.push_back({std::move(entry), {{h.site}, {}}});
    }
    mustache::data out{mustache::data::type::list};
    for (auto& b : boxes) {
      b.entry.set("has_tellings", !b.lines.html.empty());
      b.entry.set("tellings_html", b.lines.html);
      mustache::data rendered;
      rendered.set("html", html_of(b.entry, "headline"));
      out.push_back(rendered);
    }
    return out;
  }

 private:
  const std::string& display_name_of(const std::string& site) const {
    auto it = by_name_.find(site);
    return it != by_name_.end() ? it->second->display_name : site;
  }

  std::string html_of(mustache::data& entry, const char* kind) {
    entry.set("kind", kind);
    return headline_.render(entry);
  }

  std::string telling_of(const news_item& item) {
    auto entry = entry_of(item);
    return html_of(entry, "telling");
  }

  mustache::data entry_of(const news_item& item) {
    const auto& h = item.headline;
    auto it = by_name_.find(h.site);
    const site_report* site = it != by_name_.end() ? it->second : nullptr;
    mustache::data entry;
    entry.set("id", std::to_string(item.id));
    entry.set("title", h.title);
    entry.set("url", h.url);
    entry.set("site", h.site);
    entry.set("rank", std::to_string(item.rank));
    entry.set("first_seen", iso8601_ms(item.first_seen_ms));
    entry.set("page_time", iso8601_ms(page_time(item)));
    entry.set("first_seen_title", full_time(item.first_seen_ms));
    entry.set("first_seen_ago", age_text(item.first_seen_ms, now_));
    // Its time: when published, if the source said; else when seen, unless its site's first
    // refresh found it (it was on the page before newsdesk first looked: all that is known is
    // that it was there by then).
    if (const auto& published = h.published_ms) {
      entry.set("time_at", iso8601_ms(*published));
      entry.set("time_label", "published");
      entry.set("time_title", full_time(*published));
      entry.set("time_text", "published " + published_text(*published, now_));
    } else {
      entry.set("time_at", iso8601_ms(item.first_seen_ms));
      entry.set("time_label", item.first_look ? "seen before" : "seen");
      entry.set("time_title", full_time(item.first_seen_ms));
      entry.set("time_text", item.first_look ? "seen before " + clock_time(item.first_seen_ms)
                                             : "seen " + age_text(item.first_seen_ms, now_));
    }
    // Dashed "not updating" boxes tell a site's own failure; a renderer's is its notice's to tell.
    entry.set("stale", site && site->stale && !renderer_failed(*site));
    entry.set("site_display_name", site ? site->display_name : h.site);
    set_mark(entry, site ? std::string_view(site->icon) : std::string_view(),
             site ? std::string_view(site->display_name) : std::string_view(h.site));
    entry.set("story", std::to_string(item.story));
    ++shown_;
    return entry;
  }

  const sites_by_name& by_name_;
  const std::int64_t now_;
  mustache::mustache& headline_;
  mustache::mustache& story_;
  std::size_t shown_ = 0;
};

void add_parameter(std::string& to, std::string_view name, std::string_view value) {
  to += to.empty() ? "" : "&";
  to.append(name).append("=").append(value);
}

// The view's filters as query strings.
struct view_queries {
  std::string filters; // "section=..." or "site=a&site=b", then "q=...", "story=..."
  std::string events;  // the same for /events: a section as its sites (the stream knows none)
  std::string feeds;   // filters and "limit=N": the feeds' links
  std::string page;    // feeds and "chips=all": the page's own links (next page, chips)
  mustache::data sites{mustache::data::type::list}; // the sites the search form keeps
};

view_queries queries_of(const news_query& query) {
  view_queries out;
  if (!query.section.empty())
    add_parameter(out.filters, "section", form_encode(query.section));
  for (const auto& site : query.sites) {
    add_parameter(out.events, "site", site);
    if (query.section.empty()) {
      add_parameter(out.filters, "site", site);
      out.sites.push_back(site);
    }
  }
  for (auto* to : {&out.filters, &out.events}) {
    if (!query.q.empty())
      add_parameter(*to, "q", form_encode(query.q));
    if (query.story)
      add_parameter(*to, "story", std::to_string(query.story));
  }
  out.feeds = out.filters;
  if (query.limit)
    add_parameter(out.feeds, "limit", std::to_string(query.limit));
  out.page = out.feeds;
  if (query.all_chips)
    add_parameter(out.page, "chips", "all");
  return out;
}

// What the view is: all sites, one site (in its own order, with the way to the site itself), a
// section, a search, several sites or one story.
struct view_words {
  std::string name; // "" for every site's
  std::string heading = "Latest headlines";
  std::string home_href, home_text;
};

view_words words_of(const news_query& query, const sites_by_name& by_name,
                    const std::vector<std::string>& story_sites) {
  view_words out;
  if (query.one_site()) {
    auto it = by_name.find(query.sites.front());
    out.name = it != by_name.end() ? it->second->display_name : query.sites.front();
    out.heading = out.name + ", in the site's own order";
    // Its home page (a feed site's file names it beside the feed).
    const auto* home_url = it == by_name.end()        ? nullptr
                           : it->second->home.empty() ? &it->second->url
                                                      : &it->second->home;
    if (home_url)
      if (auto home = scrapers::url::split_http_url(*home_url)) {
        out.home_href = *home_url;
        out.home_text = home->host.starts_with("www.") ? home->host.substr(4) : home->host;
      }
  } else if (!query.section.empty()) {
    out.name = query.section;
    out.heading = query.section;
  } else if (!query.sites.empty()) {
    std::vector<std::string> names;
    for (const auto& site : query.sites)
      names.push_back(by_name.count(site) ? by_name.at(site)->display_name : site);
    out.name = name_list(names);
    out.heading = "Latest from " + out.name;
  }
  if (!query.q.empty()) {
    out.heading = (query.sites.empty() ? std::string("Headlines") : out.heading + ",") +
                  " matching “" + query.q + "”";
    if (out.name.empty())
      out.name = "“" + query.q + "”";
  }
  if (query.story) {
    out.heading = "One story, told by " + name_list(story_sites);
    if (out.name.empty())
      out.name = "one story";
  }
  return out;
}

// The sections the sites declare, as chips: every headline, or one section's.
mustache::data section_chips_of(const news_snapshot& snapshot, const news_query& query) {
  mustache::data chips{mustache::data::type::list};
  for (const auto& name : snapshot.sections) {
    mustache::data chip;
    chip.set("name", name);
    chip.set("href", "/news?section=" + form_encode(name));
    chip.set("current", name == query.section);
    chips.push_back(chip);
  }
  return chips;
}

} // namespace

std::string news_page::render(const news_snapshot& snapshot, const news_query& query) const {
  const auto now = unix_ms_now();
  sites_by_name by_name;
  for (const auto& s : snapshot.sites)
    by_name[s.name] = &s;
  const auto chosen = chip_sites(snapshot, query);
  const auto problems = problems_data(snapshot, now);

  // The stories of the headlines shown (as /news.json counts them), once for the cards and for
  // the list's boxes, whose headline links to its story's whole coverage when other sites in the
  // view tell it too (not on that coverage's own view).
  const auto linkable =
      snapshot.headlines.select([](const news_item& item) { return safe_link(item.headline); });
  const auto stories = query.story ? std::vector<story_summary>{} : stories_of(linkable);
  std::unordered_map<std::int64_t, std::size_t> sources;
  for (const auto& story : stories)
    if (story.sources >= 2)
      sources[story.id] = story.sources;

  std::lock_guard lock(impl_->mutex); // every template below is rendered under it
  headline_markup markup(by_name, now, impl_->headline, impl_->story);
  // Stories first, on the page everybody opens.
  std::unordered_set<std::int64_t> carded;
  const auto top_stories = query.filters_headlines() ? mustache::data{mustache::data::type::list}
                                                     : markup.cards(stories, carded);
  std::vector<std::string> story_sites;
  const auto headlines =
      markup.list(snapshot.headlines, carded, sources, query.story ? &story_sites : nullptr);
  const auto queries = queries_of(query);
  const auto view = words_of(query, by_name, story_sites);
  const auto shown = markup.shown();

  const auto generated_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                snapshot.generated_at.time_since_epoch())
                                .count();
  mustache::data page;
  page.set("page_title", view.name.empty() ? std::string("newsdesk") : "newsdesk: " + view.name);
  page.set("feed_title", query.one_site() ? "newsdesk: " + view.name : std::string("newsdesk"));
  auto [sites, dark_sites] = site_colours(snapshot);
  page.set("sites", sites);
  page.set("dark_sites", dark_sites);
  page.set("chips", chips_of(chosen, query, now));
  // Chips left out: the last one links to this view with all of them.
  if (chosen.size() < snapshot.sites.size()) {
    std::string all = queries.feeds;
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
  page.set("query_sites", queries.sites);
  page.set("filtered", query.filters_headlines());
  page.set("view_heading", view.heading);
  if (!query.q.empty() && query.sites.size() == 1)
    page.set("search_all_href", "/news?q=" + form_encode(query.q));
  if (!view.home_href.empty()) {
    page.set("home_href", view.home_href);
    page.set("home_text", view.home_text);
  }
  page.set("order", query.one_site() ? "site" : "latest");
  page.set("events_query", queries.events);
  page.set("query_section", query.section);
  page.set("has_section", !query.section.empty());
  page.set("section_chips", section_chips_of(snapshot, query));
  page.set("has_sections", !snapshot.sections.empty());
  page.set("all_sections_current", query.empty());
  page.set("feed_query", queries.feeds.empty() ? std::string() : "?" + queries.feeds);
  // The stream starts after the newest headline held, not the newest shown: a page cut at 500
  // left newer ids to its next pages, which are not news to this reader.
  page.set("last_id", std::to_string(snapshot.last_id));
  // A page cut at page_size links to the next one, with the same filters.
  if (!snapshot.next.empty()) {
    std::string next = queries.page;
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

} // namespace newsdesk::server

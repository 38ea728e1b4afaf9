#include "server/app/site_commands.hpp"

#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"
#include "scrapers/url.hpp"
#include "server/app/config.hpp"
#include "server/core/read_file.hpp"
#include "server/render/renderers.hpp"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <set>
#include <unordered_map>

namespace newsdesk::server {

namespace {

// The configuration a command runs with: its server options over the environment and the
// config file. Null (and a message on `err`) when they are wrong.
std::optional<config> command_config(const std::vector<std::string>& args, std::ostream& err) {
  try {
    bool help = false;
    return load_config(args, process_environment(), help);
  } catch (const config_error& e) {
    err << "newsdesk: configuration error: " << e.what() << "\n";
    return std::nullopt;
  }
}

} // namespace

int check_scrapers(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  std::optional<std::string> dir;
  if (!args.empty() && !args.front().starts_with("--")) {
    dir = args.front();
    args.erase(args.begin());
  }
  auto loaded = command_config(args, err);
  if (!loaded)
    return 2;
  config cfg = std::move(*loaded);
  if (dir) {
    cfg.site_files_dir = *dir;
    cfg.site_files_dir_given = true;
  }
  const std::string folder = cfg.site_files_dir.string();

  std::vector<std::string> problems;
  std::size_t files = 0;
  try {
    problems = scrapers::check_site_folder(cfg.site_files_dir);
    files = scrapers::site_files_in(cfg.site_files_dir).size();
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
  // Each file is valid on its own; what only the service can check (a timeout above Splash's
  // --max-timeout, a sites list naming a missing site) is checked by resolving them.
  if (problems.empty()) {
    try {
      load_sites(cfg);
    } catch (const std::exception& e) {
      problems.push_back(e.what());
    }
  }
  for (const auto& p : problems)
    err << p << "\n";
  if (!problems.empty()) {
    err << problems.size() << (problems.size() == 1 ? " problem" : " problems") << " in " << folder
        << "\n";
    return 1;
  }
  out << folder << ": " << files << " site files, all valid\n";
  return 0;
}

namespace {

constexpr const char* try_site_usage =
    "usage: newsdesk --try-site FILE|NAME [--html SAVED] [--url URL] [--content-type TYPE]\n"
    "                [--json] [server options]\n"
    "  FILE: a site file; NAME: a built-in scraper or a site in the configured folder.\n"
    "  --html SAVED reads a saved page (a saved feed for a feed site); without it, the page is\n"
    "  rendered live through the renderer the site would use. --url: the page to render, or\n"
    "  the address a saved page's links resolve against. --content-type: the Content-Type a\n"
    "  saved page was served with (a feed's charset: \"text/xml; charset=koi8-r\").\n";

// What a try found, and on what.
struct trial_report {
  std::string source; // the saved file, or "URL via RENDERER in N ms"
  std::string base;   // the address links were resolved against
  scrapers::site_trial trial;
  bool counted = false; // a site file with selectors: the trial's counts mean something
};

// How many links of each reason the text output names; the rest are counted (--json lists all).
constexpr std::size_t left_out_shown_per_reason = 10;

// The left-out links grouped by reason, reasons in the order they first occur. A reason's
// detail in parentheses ("score 2, 4 needed") stays with each link, not in the group's name.
struct left_out_group {
  std::string reason;
  std::vector<const scrapers::left_out_link*> links;
};
std::vector<left_out_group> group_left_out(const std::vector<scrapers::left_out_link>& left_out) {
  std::vector<left_out_group> groups;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& l : left_out) {
    const auto reason = l.reason.substr(0, l.reason.find(" ("));
    auto [it, added] = index.try_emplace(reason, groups.size());
    if (added)
      groups.push_back({reason, {}});
    groups[it->second].links.push_back(&l);
  }
  return groups;
}

void print_left_out(const scrapers::site_trial& t, std::ostream& out) {
  if (t.left_out.empty())
    return;
  out << "\nleft out: " << t.left_out.size() << (t.left_out.size() == 1 ? " link" : " links")
      << "\n";
  for (const auto& g : group_left_out(t.left_out)) {
    out << "\n" << g.links.size() << " " << g.reason << "\n";
    std::size_t n = 0;
    for (const auto* l : g.links) {
      if (++n > left_out_shown_per_reason) {
        out << "   ... and " << g.links.size() - left_out_shown_per_reason
            << " more (--json lists every one)\n";
        break;
      }
      const auto detail =
          l->reason.size() > g.reason.size() ? l->reason.substr(g.reason.size()) : std::string();
      out << " - " << (l->title.empty() ? "(no text)" : "\"" + l->title + "\"") << detail << "\n   "
          << l->url << "\n";
    }
  }
}

void print_text(const trial_report& r, std::ostream& out) {
  const auto& t = r.trial;
  out << t.site.display_name << " (" << t.site.name << ") on " << r.source
      << ", links resolved against " << r.base << "\n";
  out << t.headlines.size() << (t.headlines.size() == 1 ? " headline" : " headlines")
      << ", found by " << t.method;
  if (r.counted)
    out << "; the link selector matched " << t.link_matches << "; left out: " << t.without_url
        << " without a usable URL, " << t.without_title << " without a title, " << t.filtered_out
        << " filtered, " << t.duplicates << " duplicates, " << t.bad_titles << " bad titles";
  out << "\n";
  if (!t.hint.empty())
    out << "hint: " << t.hint << "\n";
  out << "\n";
  std::size_t n = 0;
  for (const auto& h : t.headlines)
    out << ++n << ". " << h.title << "\n   " << h.url << "\n";
  print_left_out(t, out);
}

void print_json(const trial_report& r, std::ostream& out) {
  const auto& t = r.trial;
  nlohmann::json headlines = nlohmann::json::array();
  for (const auto& h : t.headlines)
    headlines.push_back({{"title", h.title}, {"url", h.url}, {"method", t.method}});
  nlohmann::json j = {{"site", t.site.name}, {"display_name", t.site.display_name},
                      {"source", r.source},  {"base", r.base},
                      {"method", t.method},  {"headlines", headlines}};
  if (!t.hint.empty())
    j["hint"] = t.hint;
  if (r.counted)
    j["left_out"] = {{"link_matches", t.link_matches},   {"without_url", t.without_url},
                     {"without_title", t.without_title}, {"filtered", t.filtered_out},
                     {"duplicates", t.duplicates},       {"bad_titles", t.bad_titles}};
  nlohmann::json left_out = nlohmann::json::array();
  for (const auto& l : t.left_out)
    left_out.push_back({{"title", l.title}, {"url", l.url}, {"reason", l.reason}});
  j["left_out_links"] = std::move(left_out);
  // Page text may hold bytes that are not UTF-8: replaced, as JSON allows nothing else.
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Renders `site`'s page live with the renderer it would use in the service.
void render_live(const config& cfg, const site_config& site, std::string& html, std::string& source,
                 std::string& base, std::string& content_type) {
  boost::asio::io_context ioc;
  renderer_set renderers(ioc, renderer_options_of(cfg));
  renderer* r = renderers.find(site.renderer);
  if (!r)
    throw std::runtime_error("renderer " + site.renderer + " is not configured");
  const auto started = std::chrono::steady_clock::now();
  std::optional<render_result> result;
  r->warm_up();
  r->render({site.url, site.wait, site.timeout},
            [&](render_result got) { result = std::move(got); });
  while (!result && ioc.run_one() > 0) {
  }
  renderers.shutdown();
  if (!result)
    throw std::runtime_error("the render of " + site.url + " never finished");
  if (!result->ok())
    throw std::runtime_error("cannot render " + site.url + " with " + site.renderer + ": " +
                             result->message);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  html = std::move(result->html);
  base = result->url.empty() ? site.url : result->url;
  content_type = std::move(result->content_type);
  source = site.url + " via " + site.renderer + " in " + std::to_string(ms) + " ms";
}

} // namespace

namespace {

// A site name for a feed's title: lowercase letters, digits and '_' ("BBC News - World" ->
// "bbc_news_world"), at most 40 characters; "feed" when nothing is left.
std::string site_name_for(std::string_view title) {
  std::string name;
  for (unsigned char c : title) {
    if (std::isalnum(c) && c < 0x80)
      name += static_cast<char>(std::tolower(c));
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_')
    name.pop_back();
  if (name.size() > 40)
    name.resize(40);
  return name.empty() ? "feed" : name;
}

} // namespace

int import_opml(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args.front().starts_with("--")) {
    err << "usage: newsdesk --import-opml FILE [server options]\n";
    return 2;
  }
  const std::string file = args.front();
  args.erase(args.begin());
  auto loaded = command_config(args, err);
  if (!loaded)
    return 2;
  const config cfg = std::move(*loaded);
  auto bytes = read_whole_file(file);
  if (!bytes) {
    err << file << ": cannot read the OPML list\n";
    return 1;
  }
  std::vector<scrapers::opml_outline> outlines;
  try {
    outlines = scrapers::parse_opml(*bytes);
  } catch (const scrapers::feed_error& e) {
    err << file << ": " << e.what() << "\n";
    return 1;
  }

  // Names and feeds already taken: the built-in scrapers and the folder's site files.
  const auto& dir = cfg.site_files_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << dir.string() << ": cannot create the site files folder: " << ec.message() << "\n";
    return 1;
  }
  scrapers::registry taken;
  std::set<std::string> feeds;
  try {
    scrapers::register_builtin_scrapers(taken);
    scrapers::load_site_folder(dir, taken);
  } catch (const std::exception& e) {
    err << e.what() << "\n";
    return 1;
  }
  for (const auto* s : taken.all())
    feeds.insert(s->site().url);

  std::size_t written = 0;
  // The next number to try after each name: many feeds of one title ("News") take _2, _3, ...
  // in one pass, not each one counting up from 2 again.
  std::unordered_map<std::string, int> next_number;
  for (auto& o : outlines) {
    // Titles are the list's words: printed here and shown on the page, so no control characters.
    o.title = scrapers::collapse_whitespace(o.title);
    if (!scrapers::url::is_http_url(o.feed_url)) {
      err << "skipped \"" << o.title
          << "\": its feed is not an http(s) URL: " << scrapers::collapse_whitespace(o.feed_url)
          << "\n";
      continue;
    }
    if (feeds.count(o.feed_url)) {
      out << "skipped \"" << o.title << "\": " << o.feed_url << " is already a site\n";
      continue;
    }
    const std::string base_name = site_name_for(o.title);
    std::string name = base_name;
    for (int& n = next_number.try_emplace(base_name, 2).first->second;
         taken.find(name) || std::filesystem::exists(dir / (name + ".json")); ++n)
      name = base_name.substr(0, 36) + "_" + std::to_string(n);
    nlohmann::json site = {{"name", name}, {"feed", o.feed_url}};
    if (!o.title.empty())
      site["display_name"] = o.title;
    // The list's htmlUrl is the site's home page: the site file keeps it beside the feed.
    if (scrapers::url::is_http_url(o.home_url))
      site["url"] = o.home_url;
    const auto path = dir / (name + ".json");
    const auto text = site.dump(2);
    try {
      // Checked as startup will read it, then written.
      auto scraper = scrapers::parse_site_file(text, path);
      std::ofstream(path, std::ios::binary) << text << "\n";
      taken.add(std::move(scraper));
    } catch (const std::exception& e) {
      err << "skipped \"" << o.title << "\": " << e.what() << "\n";
      continue;
    }
    feeds.insert(o.feed_url);
    out << "wrote " << path.string() << " (" << (o.title.empty() ? name : o.title) << ")\n";
    ++written;
  }
  out << written << (written == 1 ? " site file" : " site files") << " written to " << dir.string()
      << "; send newsdesk SIGHUP (or restart it) to show them\n";
  return 0;
}

int try_site(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string target, saved, url, content_type;
  bool as_json = false;
  std::vector<std::string> server_options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--html" && i + 1 < args.size())
      saved = args[++i];
    else if (args[i] == "--url" && i + 1 < args.size())
      url = args[++i];
    else if (args[i] == "--content-type" && i + 1 < args.size())
      content_type = args[++i];
    else if (args[i] == "--json")
      as_json = true;
    else if (target.empty() && !args[i].starts_with("--"))
      target = args[i];
    else
      server_options.push_back(args[i]);
  }
  if (target.empty()) {
    err << try_site_usage;
    return 2;
  }
  auto loaded = command_config(server_options, err);
  if (!loaded) {
    err << try_site_usage;
    return 2;
  }
  config cfg = std::move(*loaded);

  try {
    // The scraper: a site file named on the command line, else a built-in or folder site.
    auto registry = std::make_shared<scrapers::registry>();
    const bool is_file = target.ends_with(".json") || std::filesystem::is_regular_file(target);
    if (is_file) {
      registry->add(scrapers::load_site_file(target));
    } else {
      scrapers::register_builtin_scrapers(*registry);
      std::error_code ec;
      if (std::filesystem::is_directory(cfg.site_files_dir, ec))
        scrapers::load_site_folder(cfg.site_files_dir, *registry);
    }
    const scrapers::scraper* scraper = is_file ? registry->all().front() : registry->find(target);
    if (!scraper) {
      std::string known;
      for (const auto* s : registry->all())
        known += (known.empty() ? "" : ", ") + s->site().name;
      err << "no site file or site named " << target << " (known: " << known << ")\n";
      return 1;
    }

    trial_report report;
    const auto& site = scraper->site();
    std::string html;
    if (!saved.empty()) {
      auto bytes = read_whole_file(saved);
      if (!bytes) {
        err << saved << ": cannot read the page\n";
        return 1;
      }
      html = std::move(*bytes);
      report.source = saved;
      report.base = url.empty() ? site.url : url;
    } else {
      nlohmann::json entry = {{"scraper", site.name}};
      if (!url.empty())
        entry["url"] = url;
      cfg.sites = std::make_shared<const nlohmann::json>(nlohmann::json::array({entry}));
      auto sites = resolve_sites(cfg, registry);
      render_live(cfg, sites.front(), html, report.source, report.base, content_type);
    }

    report.trial = scrapers::try_scraper(*scraper, html, report.base, content_type);
    report.counted = is_file && site.renderer != "feed";
    if (as_json)
      print_json(report, out);
    else
      print_text(report, out);
    return 0;
  } catch (const std::exception& e) {
    err << e.what() << "\n";
    return 1;
  }
}

} // namespace newsdesk::server

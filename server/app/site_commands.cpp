#include "server/app/site_commands.hpp"

#include "scrapers/site_file.hpp"
#include "server/app/config.hpp"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

namespace newsdesk::server {

int check_scrapers(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  std::optional<std::string> dir;
  if (!args.empty() && !args.front().starts_with("--")) {
    dir = args.front();
    args.erase(args.begin());
  }
  config cfg;
  try {
    bool help = false;
    cfg = load_config(args, process_environment(), help);
  } catch (const config_error& e) {
    err << "newsdesk: configuration error: " << e.what() << "\n";
    return 2;
  }
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

int try_site(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file, page, url;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--html" && i + 1 < args.size())
      page = args[++i];
    else if (args[i] == "--url" && i + 1 < args.size())
      url = args[++i];
    else if (file.empty() && args[i].rfind("--", 0) != 0)
      file = args[i];
    else {
      err << "usage: newsdesk --try-site FILE --html PAGE [--url URL]\n";
      return 2;
    }
  }
  if (file.empty() || page.empty()) {
    err << "usage: newsdesk --try-site FILE --html PAGE [--url URL]\n";
    return 2;
  }
  std::ifstream in(page, std::ios::binary);
  if (!in) {
    err << page << ": cannot read the page\n";
    return 1;
  }
  std::ostringstream html;
  html << in.rdbuf();
  try {
    auto trial = scrapers::try_site_file(file, html.str(), url);
    out << trial.site.display_name << " (" << trial.site.name << ") on " << page
        << ", links resolved against " << (url.empty() ? trial.site.url : url) << "\n";
    out << trial.headlines.size() << " headlines; the link selector matched " << trial.link_matches
        << "; left out: " << trial.without_url << " without a usable URL, " << trial.without_title
        << " without a title, " << trial.filtered_out << " filtered, " << trial.duplicates
        << " duplicates\n\n";
    std::size_t n = 0;
    for (const auto& h : trial.headlines)
      out << ++n << ". " << h.title << "\n   " << h.url << "\n";
    return 0;
  } catch (const std::exception& e) {
    err << e.what() << "\n";
    return 1;
  }
}

} // namespace newsdesk::server

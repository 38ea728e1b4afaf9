// newsdesk: serves /news, the current headlines of the configured sites on one page.
// This file only reads the command line; server/app/application.hpp composes the service.
#include "broker/standalone.hpp"
#include "scrapers/site_file.hpp"
#include "server/app/application.hpp"
#include "server/app/config.hpp"
#include "server/app/site_commands.hpp"
#include "server/stories/story_file.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>

using namespace newsdesk::server;

namespace {

int serve(std::vector<std::string> args) {
  bool help = false;
  auto cfg = load_config(args, process_environment(), help);
  if (help) {
    std::cout << usage();
    return 0;
  }
  if (cfg.print_config) {
    std::cout << effective_config(cfg).dump(2) << "\n";
    return 0;
  }
  set_log_level(cfg.level);
  log_to_stderr(cfg.log_to_stderr);
  application app(std::move(cfg));
  return app.run();
}

} // namespace

int main(int argc, char** argv) {
  // Log lines go to stdout; keep them whole and prompt even when stdout is a pipe.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A client that closes while its response is sent must cost an EPIPE, not the process:
  // sendfile(2), unlike the sends Asio makes, has no MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "broker") // the broker alone: newsdesk broker [options]
    return newsdesk::broker::run_standalone({args.begin() + 1, args.end()}, "newsdesk broker");
  if (!args.empty() && args.front() == "--check-scrapers")
    return check_scrapers({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (!args.empty() && args.front() == "--try-site")
    return try_site({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (!args.empty() && args.front() == "--stories")
    return newsdesk::server::stories::assign_story_file({args.begin() + 1, args.end()}, std::cout,
                                                        std::cerr);
  if (!args.empty() && args.front() == "--import-opml")
    return import_opml({args.begin() + 1, args.end()}, std::cout, std::cerr);
  try {
    return serve(std::move(args));
  } catch (const newsdesk::scrapers::site_file_error& e) {
    std::cerr << "newsdesk: bad site file: " << e.what() << "\n";
    return 2;
  } catch (const config_error& e) {
    std::cerr << "newsdesk: configuration error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "newsdesk: " << e.what() << "\n";
    return 1;
  }
}

// The standalone broker process (see standalone.hpp).
#include "broker/standalone.hpp"

#include <functional>
#include <iostream>
#include <map>
#include <string_view>
#include <thread>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "broker/broker.hpp"
#include "server/core/settings.hpp"

namespace newsdesk::broker {

namespace {

int usage(const std::string& program) {
  std::cerr << "usage: " << program << " [--listen ADDR:PORT] [--config FILE] [--threads N]\n";
  return 1;
}

int help(const std::string& program) {
  std::cout << "usage: " << program << " [--listen ADDR:PORT] [--config FILE] [--threads N]\n\n"
            << "The config FILE (default: $NEWSDESK_CONFIG) is newsdesk's config file, whose\n"
            << "\"broker\" object is read, or a JSON object of these keys alone, each optional.\n"
            << "Each also has an environment variable, applied over the file; --listen comes\n"
            << "last:\n"
            << config_table().help("NEWSDESK_BROKER");
  return 0;
}

// The process's environment, as the embedded broker reads it (newsdesk's load_config).
std::map<std::string, std::string, std::less<>> process_environment() {
  std::map<std::string, std::string, std::less<>> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos)
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

} // namespace

int run_standalone(const std::vector<std::string>& args, const std::string& program) {
  namespace net = boost::asio;
  config cfg;
  std::string listen_spec;
  unsigned threads = 1;
  const auto env = process_environment();
  std::string config_path;
  if (const auto it = env.find("NEWSDESK_CONFIG"); it != env.end())
    config_path = it->second;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if ((arg == "--listen" || arg == "--config" || arg == "--threads") && i + 1 >= args.size())
        return usage(program);
      if (arg == "--listen")
        listen_spec = args[++i];
      else if (arg == "--config")
        config_path = args[++i];
      else if (arg == "--threads")
        threads = static_cast<unsigned>(std::stoul(args[++i]));
      else if (arg == "--help" || arg == "-h")
        return help(program);
      else
        return usage(program);
    }
    // As newsdesk reads its embedded broker's settings: the file, then the environment, then
    // the command line.
    if (!config_path.empty())
      cfg = load_config_file(config_path);
    for (const auto& warning : apply_environment(cfg, env))
      std::cerr << program << ": " << warning << '\n';
    if (!listen_spec.empty())
      apply_listen_spec(cfg, listen_spec);
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << '\n';
    return 1;
  }
  if (threads == 0)
    threads = 1;

  net::io_context ioc(static_cast<int>(threads));
  server srv(ioc, cfg);
  try {
    srv.listen();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << '\n';
    return 2;
  }
  srv.start();

  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec)
      return;
    srv.async_shutdown([&ioc] { ioc.stop(); });
  });

  const auto ep = srv.local_endpoint();
  std::cout << "listening on " << ep.address().to_string() << ':' << ep.port() << std::endl;
  if (srv.mqtt_listening()) {
    const auto mq = srv.mqtt_endpoint();
    std::cout << "mqtt listening on " << mq.address().to_string() << ':' << mq.port() << std::endl;
  }

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool)
    t.join();
  return 0;
}

} // namespace newsdesk::broker

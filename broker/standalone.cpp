// The standalone broker process (see standalone.hpp).
#include "broker/standalone.hpp"

#include <iostream>
#include <thread>

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
            << "The config FILE is a JSON object with these keys, each optional (the same keys\n"
            << "as \"broker\" in newsdesk's config file):\n"
            << config_table().help("");
  return 0;
}

} // namespace

int run_standalone(const std::vector<std::string>& args, const std::string& program) {
  namespace net = boost::asio;
  config cfg;
  std::string listen_spec;
  unsigned threads = 1;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if ((arg == "--listen" || arg == "--config" || arg == "--threads") && i + 1 >= args.size())
        return usage(program);
      if (arg == "--listen")
        listen_spec = args[++i];
      else if (arg == "--config")
        cfg = load_config_file(args[++i]);
      else if (arg == "--threads")
        threads = static_cast<unsigned>(std::stoul(args[++i]));
      else if (arg == "--help" || arg == "-h")
        return help(program);
      else
        return usage(program);
    }
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
  if (cfg.mqtt.enabled) {
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

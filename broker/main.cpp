// newsdesk-broker: the pub/sub broker as a process of its own.
//
//   newsdesk-broker [--listen ADDR:PORT] [--config FILE] [--threads N]
//
// Prints "listening on ADDR:PORT" (flushed) once it accepts connections, so a caller can
// start it on port 0. SIGINT/SIGTERM run the graceful shutdown; exits 0 after it, 1 on a
// usage or configuration error, 2 when it cannot listen.

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "broker/broker.hpp"

namespace {

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0 << " [--listen ADDR:PORT] [--config FILE] [--threads N]\n";
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  namespace net = boost::asio;
  using newsdesk::broker::config;
  config cfg;
  std::string listen_spec;
  unsigned threads = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if ((arg == "--listen" || arg == "--config" || arg == "--threads") && i + 1 >= argc)
        return usage(argv[0]);
      if (arg == "--listen")
        listen_spec = argv[++i];
      else if (arg == "--config")
        cfg = newsdesk::broker::load_config_file(argv[++i]);
      else if (arg == "--threads")
        threads = static_cast<unsigned>(std::stoul(argv[++i]));
      else if (arg == "--help" || arg == "-h")
        return usage(argv[0]), 0;
      else
        return usage(argv[0]);
    }
    if (!listen_spec.empty())
      newsdesk::broker::apply_listen_spec(cfg, listen_spec);
  } catch (const std::exception& e) {
    std::cerr << "newsdesk-broker: " << e.what() << '\n';
    return 1;
  }
  if (threads == 0)
    threads = 1;

  net::io_context ioc(static_cast<int>(threads));
  newsdesk::broker::server srv(ioc, cfg);
  try {
    srv.listen();
  } catch (const std::exception& e) {
    std::cerr << "newsdesk-broker: " << e.what() << '\n';
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

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool)
    t.join();
  return 0;
}

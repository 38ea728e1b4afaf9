// standin-control: the test suite's Splash stand-in plus a small control port, so a test that
// is not C++ (the browser test, in Node) can change what the stand-in renders while newsdesk
// runs. Test-only; never built into newsdesk.
//
//   standin-control [URL=FILE...]
//
// Prints "splash on http://127.0.0.1:P" and "control on http://127.0.0.1:Q", then serves until
// SIGINT/SIGTERM (or stdin closing, so it never outlives the test that started it). Control:
//   POST /control/set?url=URL       body: the HTML a render of URL returns from now on (200)
//   POST /control/error?url=URL[&text_bytes=N]
//                                   body: an HTTP status Splash answers renders of URL with; a
//                                   502's error text runs to N bytes (a Splash quoting a page)
//   POST /control/lua               body: "on" or "off": Splash's /execute exists or not
//   GET  /control/renders?url=URL   how many renders of URL the stand-in has answered
//   POST /control/image?name=N&width=W&height=H
//                                   a real W x H JPEG served at /origin/N from now on
#include "server/http/http_message.hpp"
#include "server/http/http_server.hpp"
#include "tests/support/splash_standin.hpp"
#include "tests/support/test_images.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using newsdesk::server::http_request;
using newsdesk::server::http_response;
using newsdesk::server::responder;
using newsdesk::server::text_response;
using newsdesk::testing::splash_standin;
using newsdesk::testing::standin_page;

// The decoded value of `name=` in `query`, or empty.
std::string query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
        pair[name.size()] == '=')
      return newsdesk::server::form_decode(pair.substr(name.size() + 1));
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }
  return {};
}

void control(splash_standin& standin, const http_request& req, const responder& respond) {
  if (req.path() == "/control/lua" && req.method == "POST") {
    if (req.body != "on" && req.body != "off")
      return respond(text_response(400, "Bad Request: expected on or off"));
    standin.set_lua(req.body == "on");
    return respond(text_response(200));
  }
  // A real JPEG (tests/support/test_images) served at /origin/NAME: a picture for a page to name.
  if (req.path() == "/control/image" && req.method == "POST") {
    const auto name = query_param(req.query(), "name");
    const int width = std::atoi(query_param(req.query(), "width").c_str());
    const int height = std::atoi(query_param(req.query(), "height").c_str());
    if (name.empty() || width < 1 || width > 4000 || height < 1 || height > 4000)
      return respond(text_response(400, "Bad Request: expected ?name=N&width=W&height=H"));
    standin.set_origin(name, newsdesk::testing::test_jpeg(width, height));
    return respond(text_response(200));
  }
  auto url = query_param(req.query(), "url");
  if (url.empty())
    return respond(text_response(400, "Bad Request: expected ?url=URL"));
  if (req.path() == "/control/set" && req.method == "POST") {
    standin.set(url, standin_page::page(req.body));
    return respond(text_response(200));
  }
  if (req.path() == "/control/error" && req.method == "POST") {
    const int status = std::atoi(req.body.c_str());
    if (status < 400 || status > 599)
      return respond(text_response(400, "Bad Request: expected a status from 400 to 599"));
    auto page = standin_page::error(static_cast<unsigned>(status));
    const auto text_bytes =
        std::strtoull(query_param(req.query(), "text_bytes").c_str(), nullptr, 10);
    if (text_bytes > 64 * 1024 * 1024)
      return respond(text_response(400, "Bad Request: text_bytes is at most 64 MiB"));
    page.error_text.assign(text_bytes, 'x');
    standin.set(url, std::move(page));
    return respond(text_response(200));
  }
  if (req.path() == "/control/renders" && req.method == "GET") {
    http_response res;
    res.content_type = "text/plain";
    res.body = std::to_string(standin.renders(url)) + "\n";
    return respond(std::move(res));
  }
  respond(text_response(404));
}

} // namespace

int main(int argc, char** argv) {
  // Block the stop signals before any thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  splash_standin standin;
  if (auto bad = newsdesk::testing::serve_files(standin, argc, argv); !bad.empty()) {
    std::fprintf(stderr, "usage: standin-control [URL=FILE...]  (cannot use '%s')\n", bad.c_str());
    return 2;
  }

  boost::asio::io_context ioc;
  auto work = boost::asio::make_work_guard(ioc);
  newsdesk::server::http_server server(
      ioc, [&](http_request req, responder respond) { control(standin, req, respond); });
  server.listen("127.0.0.1", 0);
  server.start();
  std::thread thread([&] { ioc.run(); });

  std::printf("splash on %s\ncontrol on http://127.0.0.1:%u\n", standin.base_url().c_str(),
              static_cast<unsigned>(server.port()));
  std::fflush(stdout);

  // Stdin closing (the parent died or ended) stops us as a signal does.
  std::thread stdin_watch([] {
    char buf[256];
    while (::read(STDIN_FILENO, buf, sizeof buf) > 0) {
    }
    ::kill(::getpid(), SIGTERM);
  });
  stdin_watch.detach();

  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  work.reset();
  ioc.stop();
  thread.join();
  return 0;
}

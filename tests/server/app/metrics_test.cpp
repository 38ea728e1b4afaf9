#include "server/app/metrics.hpp"
#include "server/news/headline.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace newsdesk::server;

namespace {

http_request get(std::string target) {
  http_request req;
  req.method = "GET";
  req.target = std::move(target);
  return req;
}

// A handler that answers `status` with a body of `bytes` bytes, or keeps the responder for the
// test to answer later (status 0).
struct fake_routes {
  unsigned status = 200;
  std::size_t bytes = 5;
  responder held;
  std::vector<std::string> seen;

  request_handler handler() {
    return [this](http_request req, responder respond) {
      seen.push_back(req.target);
      if (status == 0) {
        held = std::move(respond);
        return;
      }
      http_response res;
      res.status = status;
      res.body = std::string(bytes, 'x');
      respond(std::move(res));
    };
  }
};

} // namespace

TEST_CASE("observe_requests counts each response by route and status, and logs one access line") {
  fake_routes routes;
  metrics counters;
  std::vector<std::string> lines;
  auto handle = observe_requests(routes.handler(), &counters,
                                 [&](std::string_view line) { lines.emplace_back(line); });
  unsigned answered = 0;
  handle(get("/news?site=cnn"), [&](http_response res) { answered = res.status; });
  CHECK(answered == 200);
  routes.status = 404;
  routes.bytes = 9;
  handle(get("/nope"), [&](http_response res) { answered = res.status; });
  CHECK(answered == 404);
  CHECK(routes.seen == std::vector<std::string>{"/news?site=cnn", "/nope"});

  auto text = counters.render({}, nullptr, {}, {}, {});
  CHECK(text.find("newsdesk_http_requests_total{route=\"/news\",status=\"200\"} 1") !=
        std::string::npos);
  CHECK(text.find("newsdesk_http_requests_total{route=\"other\",status=\"404\"} 1") !=
        std::string::npos);
  CHECK(text.find("newsdesk_http_request_duration_seconds_count 2") != std::string::npos);

  REQUIRE(lines.size() == 2);
  CHECK(lines[0].rfind("msg=access method=GET path=\"/news\" status=200 bytes=5 us=", 0) == 0);
  CHECK(lines[1].rfind("msg=access method=GET path=\"/nope\" status=404 bytes=9 us=", 0) == 0);
}

TEST_CASE(
    "an access line escapes a quote or backslash in the path, so the path cannot forge fields") {
  fake_routes routes;
  std::vector<std::string> lines;
  auto handle = observe_requests(routes.handler(), nullptr,
                                 [&](std::string_view line) { lines.emplace_back(line); });
  handle(get(R"(/a"status=200 x\y)"), [](http_response) {});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind(R"(msg=access method=GET path="/a\"status=200 x\\y" status=200 bytes=5 us=)",
                       0) == 0);
}

TEST_CASE("observe_requests records a response only when it is ready, however late") {
  fake_routes routes;
  routes.status = 0; // the test answers
  metrics counters;
  std::vector<std::string> lines;
  auto handle = observe_requests(routes.handler(), &counters,
                                 [&](std::string_view line) { lines.emplace_back(line); });
  bool answered = false;
  handle(get("/news"), [&](http_response) { answered = true; });
  CHECK(lines.empty());
  CHECK_FALSE(answered);

  // The handler itself may be copied or gone by the time the response comes.
  handle = nullptr;
  http_response res;
  res.status = 503;
  routes.held(std::move(res));
  CHECK(answered);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("status=503") != std::string::npos);
}

TEST_CASE("observe_requests with neither metrics nor an access log passes requests straight on") {
  fake_routes routes;
  auto handle = observe_requests(routes.handler(), nullptr, nullptr);
  unsigned answered = 0;
  handle(get("/healthz"), [&](http_response res) { answered = res.status; });
  CHECK(answered == 200);
  CHECK(routes.seen.size() == 1);
}

TEST_CASE("observe_requests cuts a long path in the access line at 200 bytes") {
  fake_routes routes;
  std::vector<std::string> lines;
  auto handle = observe_requests(routes.handler(), nullptr,
                                 [&](std::string_view line) { lines.emplace_back(line); });
  handle(get("/" + std::string(5000, 'a')), [](http_response) {});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("path=\"/" + std::string(199, 'a') + "\" status=") != std::string::npos);
}

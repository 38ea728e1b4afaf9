#include "server/app/route_table.hpp"

#include "server/app/metrics.hpp"
#include "server/news/headline.hpp" // site_report, for metrics::render

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace newsdesk::server;

namespace {

http_request request(std::string method, std::string target) {
  http_request req;
  req.method = std::move(method);
  req.target = std::move(target);
  return req;
}

// A router with every route bound to a handler that answers 200 and notes which route ran.
struct bound_router {
  router r;
  std::vector<route_id> ran;

  bound_router() {
    for (const auto& row : route_table)
      r.bind(row.id, [this, id = row.id](http_request, responder respond) {
        ran.push_back(id);
        respond(http_response{});
      });
  }

  http_response answer(std::string method, std::string target) {
    http_response out;
    out.status = 0;
    r.handle(request(std::move(method), std::move(target)),
             [&](http_response res) { out = std::move(res); });
    return out;
  }
};

} // namespace

TEST_CASE("route table: every row is found by its own path, and paths are declared once") {
  std::set<std::string_view> paths, labels;
  for (const auto& row : route_table) {
    CHECK_MESSAGE(paths.insert(row.path).second, row.path);
    CHECK_MESSAGE(labels.insert(row.label).second, row.label);
    const auto probe =
        std::string(row.path) + (row.path.ends_with('/') && row.path != "/" ? "news.css" : "");
    REQUIRE_MESSAGE(find_route(probe), probe);
    CHECK(find_route(probe)->id == row.id);
  }
  CHECK(find_route("/opml")->id == route_id::opml);
  CHECK(find_route("/static") == nullptr); // the prefix is "/static/"
  CHECK(find_route("/news/") == nullptr);
  CHECK(find_route("/nope") == nullptr);
}

TEST_CASE("router: an unknown path is 404 whatever the method; a route's own method reaches it") {
  bound_router b;
  CHECK(b.answer("GET", "/nope").status == 404);
  CHECK(b.answer("DELETE", "/nope").status == 404);
  CHECK(b.answer("GET", "/static").status == 404);
  CHECK(b.answer("GET", "/news?site=cnn").status == 200);
  CHECK(b.answer("HEAD", "/opml").status == 200);
  CHECK(b.answer("GET", "/static/news.css").status == 200);
  CHECK(b.answer("POST", "/api/refresh?site=cnn").status == 200);
  CHECK(b.ran == std::vector<route_id>{route_id::news, route_id::opml, route_id::static_files,
                                       route_id::refresh});
}

TEST_CASE("router: another method is 405 with the Allow its row declares") {
  bound_router b;
  for (const auto& row : route_table) {
    const auto target = std::string(row.path) + (row.id == route_id::static_files ? "a.css" : "");
    const auto wrong = row.methods == route_methods::post ? "GET" : "POST";
    const auto res = b.answer(wrong, target);
    CHECK_MESSAGE(res.status == 405, target);
    CHECK(res.header("Allow") == allow_of(row.methods));
  }
  CHECK(b.answer("POST", "/news").header("Allow") == "GET, HEAD");
  CHECK(b.answer("GET", "/api/refresh").header("Allow") == "POST");
  CHECK(b.answer("HEAD", "/api/refresh").header("Allow") == "POST");
  CHECK(b.ran.empty());
}

TEST_CASE("router: a route nobody bound (a component turned off) is 404, as an unknown path") {
  router r;
  r.bind(route_id::healthz, [](http_request, responder respond) { respond(http_response{}); });
  unsigned status = 0;
  r.handle(request("GET", "/metrics"), [&](http_response res) { status = res.status; });
  CHECK(status == 404);
  r.handle(request("POST", "/metrics"), [&](http_response res) { status = res.status; });
  CHECK(status == 404);
  r.handle(request("GET", "/healthz"), [&](http_response res) { status = res.status; });
  CHECK(status == 200);
}

TEST_CASE("metrics: the route labels are the table's, then other") {
  std::vector<std::string_view> expected;
  for (const auto& row : route_table)
    expected.push_back(row.label);
  expected.push_back("other");
  CHECK(std::vector<std::string_view>(metrics::route_labels.begin(), metrics::route_labels.end()) ==
        expected);
  CHECK(std::count(expected.begin(), expected.end(), "/opml") == 1);
  CHECK(metrics::route_of("/opml") == "/opml");
  CHECK(metrics::route_of("/static/news.css") == "/static");
  CHECK(metrics::route_of("/static") == "other");
  CHECK(metrics::route_of("/nope") == "other");
}

TEST_CASE("metrics: a 405 from the router is counted under its route's label") {
  bound_router b;
  metrics counters;
  auto handle = observe_requests(
      [&](http_request req, responder respond) { b.r.handle(std::move(req), std::move(respond)); },
      &counters, nullptr);
  handle(request("POST", "/opml"), [](http_response) {});
  handle(request("GET", "/nope"), [](http_response) {});
  const auto text = counters.render({}, nullptr, {}, {}, {});
  CHECK(text.find("newsdesk_http_requests_total{route=\"/opml\",status=\"405\"} 1") !=
        std::string::npos);
  CHECK(text.find("newsdesk_http_requests_total{route=\"other\",status=\"404\"} 1") !=
        std::string::npos);
}

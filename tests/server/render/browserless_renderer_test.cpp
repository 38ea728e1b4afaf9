// The browserless renderer against a stand-in of browserless's /content API (POST with a JSON
// body naming the URL; the rendered HTML back, the target's own status in X-Response-Code).
#include "server/http/http_server.hpp"
#include "server/render/browserless_renderer.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <future>
#include <map>
#include <mutex>
#include <thread>

using namespace newsdesk::server;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// What browserless does for each target URL.
struct target_page {
  unsigned status = 200; // the page's own status (X-Response-Code)
  std::string html;
  bool hang = false;         // never answer
  unsigned api_status = 200; // browserless's own answer (408 on its timeout, 400, ...)
};

struct browserless_standin {
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  http_server http{
      ioc, [this](http_request req, responder res) { handle(std::move(req), std::move(res)); }};
  std::thread thread;
  std::mutex mutex;
  std::map<std::string, target_page> pages;
  std::vector<json> bodies; // every request body received
  std::vector<std::string> targets;
  std::vector<responder> held; // hung requests, released at shutdown

  browserless_standin() {
    http.listen("127.0.0.1", 0);
    http.start();
    thread = std::thread([this] { ioc.run(); });
  }
  ~browserless_standin() {
    http.stop();
    work.reset();
    ioc.stop();
    thread.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(http.port()); }

  void handle(http_request req, responder respond) {
    std::lock_guard lock(mutex);
    targets.push_back(req.target);
    if (req.method != "POST" || req.path() != "/content")
      return respond(text_response(404));
    auto body = json::parse(req.body, nullptr, false);
    bodies.push_back(body);
    if (!body.is_object() || !body.contains("url") || !body["url"].is_string()) {
      http_response res;
      res.status = 400;
      res.content_type = "text/plain";
      res.body = "POST Body validation failed: url is required";
      return respond(std::move(res));
    }
    auto it = pages.find(body["url"].get<std::string>());
    if (it == pages.end()) {
      http_response res;
      res.status = 500;
      res.content_type = "text/plain";
      res.body = "net::ERR_NAME_NOT_RESOLVED at " + body["url"].get<std::string>();
      return respond(std::move(res));
    }
    const auto& page = it->second;
    if (page.hang) {
      held.push_back(std::move(respond));
      return;
    }
    http_response res;
    res.status = page.api_status;
    if (page.api_status != 200) {
      res.content_type = "text/plain";
      res.body = page.api_status == 408 ? "Timed out" : "error";
      return respond(std::move(res));
    }
    res.content_type = "text/html; charset=utf-8";
    res.body = page.html;
    res.with_header("X-Response-Code", std::to_string(page.status));
    res.with_header("X-Response-URL", body["url"].get<std::string>());
    respond(std::move(res));
  }
};

struct rig {
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  browserless_renderer renderer;
  std::thread thread{[this] { ioc.run(); }};
  explicit rig(const std::string& base)
      : renderer(ioc, base) {}
  ~rig() {
    work.reset();
    ioc.stop();
    thread.join();
  }
  render_result render(const std::string& url, std::chrono::milliseconds timeout = 5s) {
    std::promise<render_result> p;
    renderer.render({url, 700ms, timeout}, [&](render_result r) { p.set_value(std::move(r)); });
    auto f = p.get_future();
    REQUIRE(f.wait_for(timeout + 5s) == std::future_status::ready);
    return f.get();
  }
};

} // namespace

TEST_CASE("browserless: the rendered page comes back; the request names the URL and the waits") {
  browserless_standin bl;
  bl.pages["https://news.test/"] = {200, "<html><body><h1>hi</h1></body></html>"};
  rig r(bl.base_url() + "/?token=secret");
  auto result = r.render("https://news.test/", 12s);
  REQUIRE_MESSAGE(result.ok(), result.message);
  CHECK(result.html == "<html><body><h1>hi</h1></body></html>");
  CHECK(result.url == "https://news.test/");
  REQUIRE(bl.bodies.size() == 1);
  CHECK(bl.bodies[0].at("url") == "https://news.test/");
  CHECK(bl.bodies[0].at("waitForTimeout") == 700);
  CHECK(bl.bodies[0].at("gotoOptions").at("waitUntil") == "load");
  CHECK(bl.targets[0] == "/content?timeout=12000&token=secret");
}

TEST_CASE("browserless: the target's 404 and browserless's own errors become notices") {
  browserless_standin bl;
  bl.pages["https://news.test/gone"] = {404, "<html><body><h1>Not Found</h1></body></html>"};
  bl.pages["https://news.test/slow"] = {200, "", false, 408};
  rig r(bl.base_url());
  auto gone = r.render("https://news.test/gone");
  CHECK(gone.failure == failure_kind::not_found);
  CHECK(gone.message == "site answered HTTP 404");
  auto slow = r.render("https://news.test/slow");
  CHECK(slow.failure == failure_kind::timeout);
  CHECK(slow.message == "browserless timed out after 5 s");
  auto unknown = r.render("https://nowhere.test/");
  CHECK(unknown.failure == failure_kind::site_unreachable);
  CHECK(unknown.message ==
        "browserless answered HTTP 500: net::ERR_NAME_NOT_RESOLVED at https://nowhere.test/");
}

TEST_CASE("browserless: a server that never answers hits our deadline; a dead one is unreachable") {
  browserless_standin bl;
  bl.pages["https://news.test/hang"] = {200, "", true};
  rig r(bl.base_url());
  auto started = std::chrono::steady_clock::now();
  auto result = r.render("https://news.test/hang", 500ms);
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(result.failure == failure_kind::timeout);
  CHECK(result.message == "browserless did not answer within 1.55 s");
  CHECK(took < 3s);

  rig dead("http://127.0.0.1:1");
  auto refused = dead.render("https://news.test/");
  CHECK(refused.failure == failure_kind::renderer_down);
  CHECK(refused.message.find("cannot reach browserless at http://127.0.0.1:1") == 0);
}

TEST_CASE("browserless: content URL keeps the token and drops trailing slashes") {
  render_request req{"https://a.test/", 500ms, 30s};
  CHECK(browserless_content_url("http://b:3000", req) == "http://b:3000/content?timeout=30000");
  CHECK(browserless_content_url("http://b:3000/?token=t", req) ==
        "http://b:3000/content?timeout=30000&token=t");
}

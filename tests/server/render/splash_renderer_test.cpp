#include "server/render/splash_renderer.hpp"

#include "server/render/render_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace newsdesk::server;
using namespace std::chrono_literals;

namespace {
render_request request_for(std::string url) {
  return {std::move(url), 500ms, 30'000ms};
}
} // namespace

TEST_CASE("the render URL percent-encodes the target and carries timeout and wait") {
  auto url =
      splash_render_url("http://splash:8050/", request_for("https://example.com/a b?x=1&y=2#top"));
  CHECK(url ==
        "http://splash:8050/render.html?url=https%3A%2F%2Fexample.com%2Fa%20b%3Fx%3D1%26y%3D2%23top"
        "&timeout=30&wait=0.5&images=0");
}

TEST_CASE("percent_encode leaves only unreserved characters") {
  CHECK(percent_encode("aZ09-._~") == "aZ09-._~");
  CHECK(percent_encode("/?#[]@!$&'()*+,;= %") ==
        "%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%20%25");
  CHECK(percent_encode("\xc3\xa9") == "%C3%A9");
}

TEST_CASE("a 200 with a page is a success whose base URL is the target") {
  auto r = interpret_splash_answer(200, "<html><body><a href='/x'>x</a></body></html>",
                                   request_for("http://a.test/"));
  CHECK(r.ok());
  CHECK(r.url == "http://a.test/");
}

TEST_CASE("Splash's empty page for a garbage URL is reported, not shown as success") {
  CHECK(is_empty_page("<html><head></head><body></body></html>"));
  CHECK(is_empty_page("  \n"));
  CHECK(is_empty_page("<HTML><HEAD></HEAD><BODY class=x>\n </BODY></HTML>"));
  CHECK_FALSE(is_empty_page("<html><body><p>hi</p></body></html>"));
  auto r =
      interpret_splash_answer(200, "<html><head></head><body></body></html>", request_for("x"));
  CHECK(r.failure == failure_kind::empty);
}

TEST_CASE("Splash's JSON errors become short notices") {
  auto req = request_for("http://a.test/");
  SUBCASE("400 bad option names the argument") {
    auto r = interpret_splash_answer(
        400,
        R"({"error":400,"type":"BadOption","description":"Incorrect HTTP API arguments","info":{"type":"bad_argument","argument":"wait","description":"wait time is larger than timeout"}})",
        req);
    CHECK(r.failure == failure_kind::renderer_refused);
    CHECK(r.message == "Splash rejected the request: bad value for 'wait'");
  }
  SUBCASE("400 missing url") {
    auto r = interpret_splash_answer(
        400,
        R"({"error":400,"type":"BadOption","info":{"type":"argument_required","argument":"url"}})",
        req);
    CHECK(r.message == "Splash rejected the request: 'url' is missing");
  }
  SUBCASE("502 network errors carry Splash's text") {
    auto r = interpret_splash_answer(
        502,
        R"({"error":502,"type":"RenderError","description":"Error rendering page","info":{"type":"Network","code":1,"text":"Connection refused","url":"http://a.test/"}})",
        req);
    CHECK(r.failure == failure_kind::site_unreachable);
    CHECK(r.message == "Splash could not load the page: Connection refused");
  }
  SUBCASE("502 blocked port") {
    auto r = interpret_splash_answer(
        502,
        R"({"error":502,"type":"RenderError","info":{"type":"WebKit","code":103,"text":"Request blocked"}})",
        req);
    CHECK(r.message == "Splash could not load the page: Request blocked");
  }
  SUBCASE("504 uses Splash's own timeout figure") {
    auto r = interpret_splash_answer(
        504,
        R"({"error":504,"type":"GlobalTimeoutError","info":{"timeout":3.0,"remaining":-0.002}})",
        req);
    CHECK(r.failure == failure_kind::timeout);
    CHECK(r.message == "Splash timed out after 3 s");
  }
  SUBCASE("504 without a body falls back to the request's timeout") {
    auto r = interpret_splash_answer(504, "", req);
    CHECK(r.message == "Splash timed out after 30 s");
  }
  SUBCASE("520 cancelled") {
    CHECK(interpret_splash_answer(520, R"({"error":520,"type":"CancelledError"})", req).message ==
          "Splash cancelled the render");
  }
  SUBCASE("404 HTML page means the URL is not Splash") {
    auto r = interpret_splash_answer(404, "<html><body>No Such Resource</body></html>", req);
    CHECK(r.failure == failure_kind::renderer_down);
    CHECK(r.message.find("SPLASH_URL") != std::string::npos);
  }
  SUBCASE("415's JSON-then-HTML body is not valid JSON and still gives a notice") {
    auto r = interpret_splash_answer(
        415, R"({"error":415,"type":"UnsupportedContentType"}<html>...</html>)", req);
    CHECK(r.message == "Splash answered HTTP 415");
  }
  SUBCASE("garbage bodies never throw") {
    for (auto body : {"", "null", "[]", "{\"info\": 5}", "{\"info\": {\"text\": 7}}", "\xff\xfe"})
      for (unsigned status : {400u, 502u, 503u, 504u, 599u})
        CHECK_FALSE(interpret_splash_answer(status, body, req).ok());
  }
}

TEST_CASE("format_seconds prints whole seconds without decimals") {
  CHECK(format_seconds(30) == "30");
  CHECK(format_seconds(2.5) == "2.5");
  CHECK(format_seconds(0.25) == "0.25");
}

TEST_CASE("a Splash error quoting megabytes of a page keeps 500 bytes of it") {
  nlohmann::json error = {{"error", 502},
                          {"type", "RenderError"},
                          {"info", {{"text", std::string(5 * 1024 * 1024, 'x') + "é"}}}};
  auto r = interpret_splash_answer(502, error.dump(), request_for("https://a.test/"));
  CHECK(r.failure == failure_kind::site_unreachable);
  CHECK(r.message.size() <= max_message_bytes + 3);
  CHECK(r.message.rfind("Splash could not load the page: xxx", 0) == 0);
  CHECK(r.message.substr(r.message.size() - 3) == "…");
}

TEST_CASE("the /execute body carries the render script and the request's arguments") {
  auto body = nlohmann::json::parse(splash_execute_body(request_for("https://a.test/x?y=1")));
  CHECK(body.at("url") == "https://a.test/x?y=1");
  CHECK(body.at("wait") == 0.5);
  CHECK(body.at("timeout") == 30);
  auto script = body.at("lua_source").get<std::string>();
  CHECK(script.find("function main(splash, args)") != std::string::npos);
  CHECK(script.find("splash:go(args.url)") != std::string::npos);
  CHECK(script.find("splash:history()") != std::string::npos);
}

TEST_CASE("/execute answers: the page, the site's own status, and the main document's errors") {
  auto req = request_for("http://a.test/");
  SUBCASE("a page, based at the URL it ended on after redirects") {
    auto r = interpret_splash_execute_answer(
        200,
        R"({"html":"<html><body><a href='/x'>x</a></body></html>","url":"https://www.a.test/","status":200})",
        req);
    REQUIRE(r.ok());
    CHECK(r.url == "https://www.a.test/");
    CHECK(r.html.find("href='/x'") != std::string::npos);
  }
  SUBCASE("a final URL that is not http(s) leaves the request's URL as the base") {
    auto r = interpret_splash_execute_answer(
        200, R"({"html":"<html><body><p>x</p></body></html>","url":"about:blank"})", req);
    REQUIRE(r.ok());
    CHECK(r.url == "http://a.test/");
  }
  SUBCASE("the site's 404 page is a 404, not a page without headlines") {
    auto r = interpret_splash_execute_answer(
        200,
        R"({"html":"<html><body><h1>Not Found</h1></body></html>","url":"http://a.test/","status":404,"error":"http404"})",
        req);
    CHECK(r.failure == failure_kind::not_found);
    CHECK(r.message == "the site answered HTTP 404");
  }
  SUBCASE("a network failure of the main document names it") {
    auto r = interpret_splash_execute_answer(
        200,
        R"({"html":"<html><head></head><body></body></html>","url":"about:blank","error":"network3"})",
        req);
    CHECK(r.failure == failure_kind::site_unreachable);
    CHECK(r.message == "Splash could not load the page: host not found");
  }
  SUBCASE("an empty page without an error is the empty-page notice") {
    auto r = interpret_splash_execute_answer(
        200, R"({"html":"<html><head></head><body></body></html>","url":"http://a.test/"})", req);
    CHECK(r.failure == failure_kind::empty);
  }
  SUBCASE("a script error names Splash's message") {
    auto r = interpret_splash_execute_answer(
        400,
        R"({"error":400,"type":"ScriptError","info":{"type":"LUA_ERROR","message":"[string \"...\"]:3: attempt to call a nil value"}})",
        req);
    CHECK(r.failure == failure_kind::renderer_refused);
    CHECK(r.message.rfind("Splash could not run newsdesk's render script: [string", 0) == 0);
  }
  SUBCASE("Splash's own errors read as they do from render.html") {
    auto r = interpret_splash_execute_answer(
        504, R"({"error":504,"type":"GlobalTimeoutError","info":{"timeout":3.0}})", req);
    CHECK(r.message == "Splash timed out after 3 s");
  }
  SUBCASE("garbage never throws and is never a page") {
    for (auto body : {"", "null", "[]", "{}", R"({"html":5})", R"({"status":"404"})",
                      R"({"html":"","error":7})", R"({"type":"ScriptError","info":3})", "\xff\xfe"})
      for (unsigned status : {200u, 400u, 502u, 504u})
        CHECK_FALSE(interpret_splash_execute_answer(status, body, req).ok());
  }
}

#include "server/render/direct_renderer.hpp"
#include "server/render/http_client.hpp"
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/splash_standin.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <future>
#include <thread>

using namespace newsdesk::server;
using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {
// An io_context on its own thread with a client and a direct renderer.
struct rig {
  explicit rig(const tls_options& tls = {})
      : client(ioc, tls) {}
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  http_client client;
  direct_renderer direct{client};
  direct_renderer feed{client, direct_renderer::mode::feed};
  std::thread thread{[this] { ioc.run(); }};
  ~rig() {
    work.reset();
    thread.join();
  }
  render_result render(const std::string& url, std::chrono::milliseconds timeout = 5s) {
    return render_with(direct, url, timeout);
  }
  render_result render_with(direct_renderer& renderer, const std::string& url,
                            std::chrono::milliseconds timeout = 5s) {
    std::promise<render_result> p;
    renderer.render({url, 0ms, timeout}, [&](render_result r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
};
} // namespace

TEST_CASE("direct: a page is fetched and its final URL is the base for links") {
  splash_standin origin;
  origin.set_origin("page", "<html><body>hello</body></html>");
  origin.set_origin_redirect("step1", origin.base_url() + "/origin/step2", 302);
  origin.set_origin_redirect("step2", "page", 307); // relative Location
  rig r;
  auto result = r.render(origin.base_url() + "/origin/step1");
  REQUIRE(result.ok());
  CHECK(result.html == "<html><body>hello</body></html>");
  CHECK(result.url == origin.base_url() + "/origin/page");
}

TEST_CASE("direct: redirect loops, error statuses and bad targets become notices") {
  splash_standin origin;
  origin.set_origin_redirect("loop", "/origin/loop");
  origin.set_origin_redirect("nowhere", "javascript:alert(1)");
  rig r;
  CHECK(r.render(origin.base_url() + "/origin/loop").message == "too many redirects (more than 5)");
  CHECK(r.render(origin.base_url() + "/origin/nowhere").message ==
        "site redirected to a non-http(s) address");
  CHECK(r.render(origin.base_url() + "/origin/missing").message == "site answered HTTP 404");
  CHECK(r.render("ftp://example.test/").failure == failure_kind::bad_address);
}

TEST_CASE("direct: a page over the 16 MiB limit is refused, naming the limit") {
  splash_standin origin;
  origin.set_origin("huge", std::string(16 * 1024 * 1024 + 1, 'x'));
  origin.set_origin("just-fits", std::string(16 * 1024 * 1024, 'y'));
  rig r;
  auto huge = r.render(origin.base_url() + "/origin/huge", 20s);
  CHECK(huge.failure == failure_kind::too_large);
  CHECK(huge.message.starts_with("page too large: response larger than 16777216 bytes"));
  auto fits = r.render(origin.base_url() + "/origin/just-fits", 20s);
  CHECK(fits.ok());
  CHECK(fits.html.size() == 16 * 1024 * 1024);
  // The client's own result keeps the status that came before the body went past the limit.
  http_fetch_options small;
  small.max_body_bytes = 1024;
  std::promise<http_fetch_result> p;
  r.client.get(origin.base_url() + "/origin/huge", small,
               [&](http_fetch_result result) { p.set_value(std::move(result)); });
  auto cut = p.get_future().get();
  CHECK(cut.failure == fetch_failure::too_large);
  CHECK(cut.status == 200);
}

TEST_CASE("direct: a server that accepts but never answers hits the deadline") {
  splash_standin standin; // render.html of an unknown hang target: use a hang page via Splash path
  standin.set("http://hang.test/", standin_page::hang());
  rig r;
  auto url = standin.base_url() + "/render.html?url=http%3A%2F%2Fhang.test%2F";
  auto started = std::chrono::steady_clock::now();
  auto result = r.render(url, 300ms);
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(result.failure == failure_kind::timeout);
  CHECK(took < 2s);
}

TEST_CASE("direct: connection refused is reported as unreachable") {
  rig r;
  auto result = r.render("http://127.0.0.1:1/");
  CHECK(result.failure == failure_kind::site_unreachable);
  CHECK(result.message.find("Connection refused") != std::string::npos);
}

TEST_CASE("direct: https pages are fetched with the certificate checked") {
  if (std::system("command -v openssl >/dev/null") != 0) {
    MESSAGE("skipped: openssl is not installed");
    return;
  }
  temp_dir dir;
  auto d = dir.path.string();
  // A throwaway certificate for 127.0.0.1, and openssl's own TLS server serving files from `d`.
  REQUIRE(
      std::system(("cd " + d +
                   " && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext "
                   "subjectAltName=IP:127.0.0.1 -days 1 -keyout key.pem -out cert.pem 2>/dev/null")
                      .c_str()) == 0);
  dir.write("page.html", "<html><body>secure hello</body></html>");
  int port = 0;
  {
    // A free port: bind to 0, read it, release it.
    splash_standin probe;
    port = probe.port();
  }
  // s_server -WWW serves files relative to its working directory: start it in `d`.
  child_process server("/bin/sh",
                       {"-c", "cd " + d + " && exec openssl s_server -quiet -WWW -accept " +
                                  std::to_string(port) + " -cert cert.pem -key key.pem"},
                       {}, d + "/server.log");
  // Ready once it accepts (a connection closed before the handshake does not stop it).
  REQUIRE(eventually([&] {
    int fd = connect_loopback(static_cast<unsigned short>(port));
    if (fd >= 0)
      ::close(fd);
    return fd >= 0;
  }));
  auto url = "https://127.0.0.1:" + std::to_string(port) + "/page.html";

  rig trusting(tls_options{true, d + "/cert.pem"});
  auto ok = trusting.render(url);
  CHECK_MESSAGE(ok.ok(), ok.message);
  CHECK(ok.html.find("secure hello") != std::string::npos);

  rig strict; // the system store does not know this certificate
  auto refused = strict.render(url);
  CHECK(refused.failure == failure_kind::site_unreachable);
  CHECK(refused.message.find("TLS handshake failed") != std::string::npos);
}

TEST_CASE("direct and feed: ask with the validators given; a 304 says not modified, no body") {
  splash_standin origin;
  const std::string v1 =
      "<rss version=\"2.0\"><channel><item><title>One</title></item></channel></rss>";
  const std::string v2 =
      "<rss version=\"2.0\"><channel><item><title>Two</title></item></channel></rss>";
  origin.set_origin("feed.xml", v1);
  origin.set_origin_redirect("moved", "feed.xml", 301);
  rig r;
  const auto url = origin.base_url() + "/origin/feed.xml";
  for (auto* renderer : {&r.feed, &r.direct}) {
    CAPTURE(renderer->name());
    origin.set_origin("feed.xml", v1);
    const auto before = origin.origin_not_modified();
    auto first = r.render_with(*renderer, url);
    REQUIRE(first.ok());
    CHECK(first.html == v1);
    CHECK_FALSE(first.not_modified);
    CHECK(first.validators.url == url);
    REQUIRE_FALSE(first.validators.etag.empty());

    // Without validators the whole page comes again.
    CHECK(r.render_with(*renderer, url).html == v1);
    CHECK(origin.origin_not_modified() == before);

    render_result second;
    {
      std::promise<render_result> p;
      renderer->render({url, 0ms, 5s, first.validators},
                       [&](render_result x) { p.set_value(std::move(x)); });
      second = p.get_future().get();
    }
    REQUIRE(second.ok());
    CHECK(second.not_modified);
    CHECK(second.html.empty());
    CHECK(origin.origin_not_modified() == before + 1); // the origin sent no body

    // Through a redirect the validators go to the address they came from, not to the hop.
    {
      std::promise<render_result> p;
      renderer->render({origin.base_url() + "/origin/moved", 0ms, 5s, first.validators},
                       [&](render_result x) { p.set_value(std::move(x)); });
      CHECK(p.get_future().get().not_modified);
    }
    CHECK(origin.origin_not_modified() == before + 2);

    origin.set_origin("feed.xml", v2);
    std::promise<render_result> p;
    renderer->render({url, 0ms, 5s, first.validators},
                     [&](render_result x) { p.set_value(std::move(x)); });
    auto third = p.get_future().get();
    REQUIRE(third.ok());
    CHECK_FALSE(third.not_modified);
    CHECK(third.html == v2);
    CHECK(third.validators.etag != first.validators.etag);
    CHECK(origin.origin_not_modified() == before + 2);
  }
}

TEST_CASE("a site's URL names an internal address only when its host is a non-public IP") {
  for (const char* url : {"http://127.0.0.1:8080/", "http://10.1.2.3/", "http://172.16.0.9/",
                          "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/",
                          "http://100.64.0.1/", "http://0.0.0.0/", "http://[::1]:8050/",
                          "http://[fd00::1]/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/"}) {
    CAPTURE(url);
    CHECK(names_internal_address(url));
  }
  for (const char* url : {"https://www.bbc.com/news", "http://localhost:8080/", "http://8.8.8.8/",
                          "http://172.32.0.1/", "http://[2001:4860:4860::8888]/", "not a url"}) {
    CAPTURE(url);
    CHECK_FALSE(names_internal_address(url));
  }
}

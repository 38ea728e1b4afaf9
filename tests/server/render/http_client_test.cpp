// http_client against real servers: nginx serving saved front pages compressed (gzip_static,
// brotli_static) and compression bombs, over HTTP/1.1 and HTTPS with HTTP/2; Debian's tinyproxy
// as the operator's proxy. Bytes on the wire are counted twice: by the client, and by nginx's
// own access log.
#include "server/render/direct_renderer.hpp"
#include "server/render/http_client.hpp"
#include "tests/support/fetch_servers.hpp"
#include "tests/support/harness.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <future>
#include <optional>
#include <thread>

using namespace newsdesk::server;
using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

// An io_context on its own thread and a client on it.
struct client_rig {
  explicit client_rig(const tls_options& tls = {})
      : client(ioc, tls) {}
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  http_client client;
  std::thread thread{[this] { ioc.run(); }};
  ~client_rig() {
    work.reset();
    thread.join();
  }
  http_fetch_result get(const std::string& url, http_fetch_options options = {}) {
    std::promise<http_fetch_result> p;
    client.get(url, std::move(options), [&](http_fetch_result r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
};

// The site's folder for nginx: saved pages with their .gz and .br companions, as a CDN keeps
// them, and bombs (zeros compressed ~1000x) in both codings.
struct site_files {
  temp_dir dir;
  fs::path root = dir.path / "www";
  site_files() {
    fs::create_directories(root);
    const std::string pages = shared_pages;
    for (const char* page : {"cnn-2025-home-rendered.html", "bbc-2025-news-rendered.html"})
      fs::copy_file(pages + "/" + page, root / page);
    const auto r = root.string();
    // br and gzip for the CNN page; gzip only for the BBC page (nginx then sends gzip to a client
    // that also accepts br).
    run_or_throw("cd " + r +
                 " && brotli -q 9 -k cnn-2025-home-rendered.html && gzip -9 -k "
                 "cnn-2025-home-rendered.html && gzip -9 -k bbc-2025-news-rendered.html");
    // 64 MiB of zeros: about 64 KB gzip'd, a few hundred bytes as br. The .html itself is a
    // placeholder: nginx sends the compressed file to a client that accepts it.
    run_or_throw("cd " + r +
                 " && head -c 67108864 /dev/zero | gzip -9 > gzip-bomb.html.gz && head -c "
                 "67108864 /dev/zero | brotli -q 5 > br-bomb.html.br && echo small > "
                 "gzip-bomb.html && echo small > br-bomb.html");
  }
  std::string read(const std::string& name) const { return read_file((root / name).string()); }
};

// The access log's fields for the answers to `path` (see nginx_server::access_log).
std::vector<std::vector<std::string>> log_lines(const nginx_server& nginx,
                                                const std::string& path) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream log(nginx.access_log());
  for (std::string line; std::getline(log, line);) {
    if (line.find("GET " + path + " ") != 0)
      continue;
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '|');)
      fields.push_back(field);
    lines.push_back(std::move(fields));
  }
  return lines;
}

// Sets environment variables for a scope (nullptr: unset), and restores what was there.
class scoped_env {
 public:
  using values = std::vector<std::pair<std::string, const char*>>;
  explicit scoped_env(const values& set) {
    for (const auto& name : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                             "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name);
    }
    for (const auto& [name, value] : set)
      if (value)
        ::setenv(name.c_str(), value, 1);
  }
  ~scoped_env() {
    for (const auto& [name, value] : saved_)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

} // namespace

TEST_CASE("pages served br and gzip arrive compressed and decoded; bytes on the wire at least 4x "
          "fewer; connections are reused") {
  site_files files;
  nginx_server nginx(files.root, files.dir.path / "nginx");
  client_rig rig;
  const auto before = rig.client.stats();

  auto cnn = rig.get(nginx.base_url() + "/cnn-2025-home-rendered.html");
  REQUIRE_MESSAGE(cnn.ok(), cnn.error);
  CHECK(cnn.status == 200);
  CHECK(cnn.header("Content-Encoding") == "br");
  CHECK((cnn.body == files.read("cnn-2025-home-rendered.html")));
  auto bbc = rig.get(nginx.base_url() + "/bbc-2025-news-rendered.html");
  REQUIRE_MESSAGE(bbc.ok(), bbc.error);
  CHECK(bbc.header("Content-Encoding") == "gzip");
  CHECK((bbc.body == files.read("bbc-2025-news-rendered.html")));

  // nginx's count of what it sent, against the page's size.
  for (const auto& [path, result] : {std::pair{std::string("/cnn-2025-home-rendered.html"), &cnn},
                                     {std::string("/bbc-2025-news-rendered.html"), &bbc}}) {
    CAPTURE(path);
    auto lines = log_lines(nginx, path);
    REQUIRE(lines.size() == 1);
    const auto sent = std::stoul(lines[0].at(2));
    MESSAGE(path << ": " << result->body.size() << " bytes, " << sent << " on the wire");
    CHECK(sent * 4 <= result->body.size());
    // The client counts the same bytes (nginx's figure includes its header; so does the client's).
    CHECK(result->wire_bytes == sent);
  }

  // The second fetch went over the first one's connection, and so does a third.
  auto again = rig.get(nginx.base_url() + "/cnn-2025-home-rendered.html");
  REQUIRE(again.ok());
  CHECK(again.reused);
  const auto after = rig.client.stats();
  CHECK(after.fetches - before.fetches == 3);
  CHECK(after.connections_opened - before.connections_opened == 1);
  CHECK(after.connections_reused - before.connections_reused == 2);
  // nginx saw one connection carry all three answers.
  auto lines = log_lines(nginx, "/cnn-2025-home-rendered.html");
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].at(3) == lines[0].at(3));
  CHECK(lines[1].at(4) == "3");
}

TEST_CASE("a compression bomb is cut at the body cap, naming it, after little wire; other pages "
          "are unaffected") {
  site_files files;
  nginx_server nginx(files.root, files.dir.path / "nginx");
  client_rig rig;
  for (const std::string bomb : {"/gzip-bomb.html", "/br-bomb.html"}) {
    CAPTURE(bomb);
    http_fetch_options small;
    small.max_body_bytes = 10 * 1024 * 1024;
    auto cut = rig.get(nginx.base_url() + bomb, small);
    CHECK(cut.failure == fetch_failure::too_large);
    CHECK(cut.error == "response larger than 10485760 bytes");
    CHECK(cut.status == 200);
    CHECK(cut.body.empty());
    CHECK(cut.wire_bytes < 200 * 1024); // the decoder stopped long before the 64 KB gzip ended
    // The direct renderer's own cap (16 MiB) holds the same way, with the notice users see.
    direct_renderer direct{rig.client};
    std::promise<render_result> p;
    direct.render({nginx.base_url() + bomb, 0ms, 10s},
                  [&](render_result r) { p.set_value(std::move(r)); });
    auto page = p.get_future().get();
    CHECK(page.failure == failure_kind::too_large);
    CHECK(page.message == "page too large: response larger than 16777216 bytes");
    // The same client, the same server: a real page still arrives whole.
    auto bbc = rig.get(nginx.base_url() + "/bbc-2025-news-rendered.html");
    REQUIRE_MESSAGE(bbc.ok(), bbc.error);
    CHECK((bbc.body == files.read("bbc-2025-news-rendered.html")));
  }
}

TEST_CASE("over HTTPS the client speaks HTTP/2 when the server offers it, checking the "
          "certificate") {
  site_files files;
  nginx_server nginx(files.root, files.dir.path / "nginx", true);
  client_rig trusting(tls_options{true, nginx.cert_file()});
  auto page = trusting.get(nginx.base_url() + "/bbc-2025-news-rendered.html");
  REQUIRE_MESSAGE(page.ok(), page.error);
  CHECK(page.http_version == 20);
  CHECK(page.header("Content-Encoding") == "gzip");
  CHECK((page.body == files.read("bbc-2025-news-rendered.html")));
  client_rig strict; // the system store does not know this certificate
  auto refused = strict.get(nginx.base_url() + "/bbc-2025-news-rendered.html");
  CHECK(refused.failure == fetch_failure::tls);
}

TEST_CASE("the public-address rule holds on every connection, new or reused") {
  site_files files;
  nginx_server nginx(files.root, files.dir.path / "nginx");
  client_rig rig;
  const auto port = std::to_string(nginx.port());
  http_fetch_options public_only;
  public_only.public_addresses_only = true;
  // A name that leads to loopback: each of its addresses is refused at the socket.
  auto named = rig.get("http://localhost:" + port + "/bbc-2025-news-rendered.html", public_only);
  CHECK(named.failure == fetch_failure::refused_address);
  CHECK(named.error.starts_with("localhost is "));
  CHECK(named.error.find("an internal address") != std::string::npos);
  // A connection the operator's internal site opened is not lent to a public-only fetch.
  auto allowed = rig.get(nginx.base_url() + "/bbc-2025-news-rendered.html");
  REQUIRE(allowed.ok());
  auto lent = rig.get(nginx.base_url() + "/bbc-2025-news-rendered.html", public_only);
  CHECK(lent.failure == fetch_failure::refused_address);
  CHECK(lent.error == "127.0.0.1 is 127.0.0.1, an internal address: only a site whose own URL "
                      "names an internal address is fetched from one");
  CHECK(log_lines(nginx, "/bbc-2025-news-rendered.html").size() == 1);
}

TEST_CASE("fetches go through the environment's proxy: http_proxy, HTTP_PROXY, HTTPS_PROXY; "
          "NO_PROXY is honoured") {
  site_files files;
  nginx_server plain(files.root, files.dir.path / "nginx");
  nginx_server secure(files.root, files.dir.path / "nginx-tls", true);
  tinyproxy_server proxy(files.dir.path / "tinyproxy");
  const std::string page = "/bbc-2025-news-rendered.html";
  const auto via = [&](const nginx_server& nginx) { return log_lines(nginx, page).back().at(5); };

  for (const std::string name : {"http_proxy", "HTTP_PROXY", "ALL_PROXY"}) {
    CAPTURE(name);
    scoped_env env(scoped_env::values{{name, proxy.url().c_str()}});
    client_rig rig;
    auto through = rig.get(plain.base_url() + page);
    REQUIRE_MESSAGE(through.ok(), through.error);
    CHECK((through.body == files.read(page.substr(1))));
    CHECK(via(plain).find("tinyproxy-test") != std::string::npos);
  }
  {
    scoped_env env(scoped_env::values{{"HTTPS_PROXY", proxy.url().c_str()}});
    client_rig rig(tls_options{true, secure.cert_file()});
    const auto connects = count(proxy.log(), "CONNECT");
    auto through = rig.get(secure.base_url() + page);
    REQUIRE_MESSAGE(through.ok(), through.error);
    CHECK((through.body == files.read(page.substr(1))));
    CHECK(count(proxy.log(), "CONNECT") > connects); // tunnelled: the proxy saw only CONNECT
    // An http:// URL has no proxy named for it: direct.
    auto direct = rig.get(plain.base_url() + page);
    REQUIRE(direct.ok());
    CHECK(via(plain) == "-");
  }
  {
    scoped_env env(scoped_env::values{{"http_proxy", proxy.url().c_str()},
                                      {"HTTPS_PROXY", proxy.url().c_str()},
                                      {"NO_PROXY", "example.org,127.0.0.1"}});
    client_rig rig(tls_options{true, secure.cert_file()});
    const auto connects = count(proxy.log(), "CONNECT");
    auto direct = rig.get(plain.base_url() + page);
    REQUIRE_MESSAGE(direct.ok(), direct.error);
    CHECK(via(plain) == "-");
    auto direct_tls = rig.get(secure.base_url() + page);
    REQUIRE_MESSAGE(direct_tls.ok(), direct_tls.error);
    CHECK(count(proxy.log(), "CONNECT") == connects);
  }
  {
    // Through a proxy the public-address rule judges the name's addresses before the proxy is
    // asked; the proxy's own (internal) address is the operator's choice and allowed.
    scoped_env env(scoped_env::values{{"http_proxy", proxy.url().c_str()}});
    client_rig rig;
    http_fetch_options public_only;
    public_only.public_addresses_only = true;
    auto refused = rig.get("http://localhost:" + std::to_string(plain.port()) + page, public_only);
    CHECK(refused.failure == fetch_failure::refused_address);
    CHECK(refused.error.starts_with("localhost is "));
    // A fetch that says so (Splash's) goes direct whatever the environment says.
    http_fetch_options no_proxy;
    no_proxy.use_proxy = false;
    auto direct = rig.get(plain.base_url() + page, no_proxy);
    REQUIRE(direct.ok());
    CHECK(via(plain) == "-");
  }
}

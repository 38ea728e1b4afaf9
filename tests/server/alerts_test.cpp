// End-to-end tests of alerts and story updates: the real newsdesk binary, the Splash stand-in,
// Mosquitto's own mosquitto_sub and a webhook receiver written here (a socket server thread),
// which checks what a receiver would: the body, the signature, ntfy's headers, retries.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

const std::string sub_bin = "/usr/bin/mosquitto_sub";

// One request as the receiver read it; header names in lower case.
struct received {
  std::string target;
  std::map<std::string, std::string> headers;
  std::string body;
  unsigned answered = 0;
};

// A webhook receiver on 127.0.0.1: reads each request whole, answers with the status `answer`
// picks (200 by default) and an empty body, and keeps what it read.
class webhook_receiver {
 public:
  explicit webhook_receiver(unsigned short port = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~webhook_receiver() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void set_answer(std::function<unsigned(const received&, std::size_t nth)> answer) {
    std::lock_guard lock(mutex_);
    answer_ = std::move(answer);
  }
  std::vector<received> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t count() const { return requests().size(); }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0)
        continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0)
        continue;
      handle(c);
      ::close(c);
    }
  }

  void handle(int c) {
    std::string data;
    char buf[4096];
    auto read_more = [&] {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0)
        return false;
      const auto n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0)
        return false;
      data.append(buf, static_cast<std::size_t>(n));
      return true;
    };
    while (data.find("\r\n\r\n") == std::string::npos)
      if (!read_more())
        return;
    const auto head_end = data.find("\r\n\r\n");
    received r;
    std::size_t line_end = data.find("\r\n");
    const std::string request_line = data.substr(0, line_end);
    r.target = request_line.substr(request_line.find(' ') + 1);
    r.target = r.target.substr(0, r.target.find(' '));
    for (auto at = line_end + 2; at < head_end;) {
      auto end = data.find("\r\n", at);
      auto line = data.substr(at, end - at);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[name] = value;
      at = end + 2;
    }
    const std::size_t length =
        r.headers.contains("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (data.size() < head_end + 4 + length)
      if (!read_more())
        return;
    r.body = data.substr(head_end + 4, length);
    {
      std::lock_guard lock(mutex_);
      r.answered = answer_ ? answer_(r, requests_.size()) : 200;
      requests_.push_back(r);
    }
    const std::string answer = "HTTP/1.1 " + std::to_string(r.answered) +
                               " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
  }

  int fd_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::function<unsigned(const received&, std::size_t)> answer_; // guarded by mutex_
  std::vector<received> requests_;                               // guarded by mutex_
  std::thread thread_;
};

// The receiver's side of the signature check, written from the README's description.
std::string hmac_sha256_hex(const std::string& key, const std::string& message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  std::string hex;
  char two[3];
  for (unsigned i = 0; i < length; ++i) {
    std::snprintf(two, sizeof two, "%02x", digest[i]);
    hex += two;
  }
  return hex;
}

// A sample in /metrics ("name{labels}"), or -1 when absent.
double metric(unsigned short port, const std::string& sample) {
  const auto body = http_get(port, "/metrics").body;
  const auto at = body.find("\n" + sample + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(body.substr(at + sample.size() + 2));
}

json alerts_config(const splash_standin& splash, json alerts) {
  return json{{"splash_url", splash.base_url()},
              {"refresh", {{"manual_min_interval", 0}}},
              {"sites",
               {site("a", "cnn", "https://a.cnn.com/", {{"display_name", "Site A"}}),
                site("b", "cnn", "https://b.cnn.com/")}},
              {"alerts", std::move(alerts)}};
}

// Site a's first page (shown, not announced), then the second, whose new headlines are news.
void first_pages(splash_standin& splash) {
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/old/index.html", "Old storm news"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/b/one/index.html", "Markets rally"}})));
}
void second_page(splash_standin& splash) {
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/calm/index.html", "Calm day at sea"},
                                          {"/a/storm/index.html", "Storm hits the coast"},
                                          {"/a/old/index.html", "Old storm news"}})));
}

} // namespace

TEST_CASE("an alert's matches go out on newsdesk/alerts/<name> and to its webhook, signed; "
          "other headlines do not") {
  INFO("mosquitto_sub is missing: scripts/setup installs mosquitto-clients");
  REQUIRE(::access(sub_bin.c_str(), X_OK) == 0);
  webhook_receiver receiver;
  splash_standin splash;
  first_pages(splash);
  newsdesk_process nd(alerts_config(
      splash, {{{"name", "storms"},
                {"q", "STORM"},
                {"site", "a"},
                {"webhook", {{"url", receiver.url("/hook?x=1")}, {"secret", "s3cret"}}}}}));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  const auto mqtt_port = nd.process->wait_for_log("msg=listening service=mqtt address=127.0.0.1:");
  REQUIRE(mqtt_port);
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));
  CHECK(nd.process->output().find("msg=alerts count=1 alerts=storms(webhook)") !=
        std::string::npos);

  // Subscribed to the alert and to site a's headlines, whose retained one says the subscription
  // is in place.
  child_process sub(sub_bin,
                    {"-h", "127.0.0.1", "-p", *mqtt_port, "-V", "mqttv5", "-t",
                     "newsdesk/alerts/storms", "-t", "newsdesk/headlines/a", "-F", "%r %t %p"});
  REQUIRE(sub.wait_for_line("1 newsdesk/headlines/a ", 20s));

  second_page(splash);
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  const auto line = sub.wait_for_line("0 newsdesk/alerts/storms ", 20s);
  REQUIRE(line);
  const auto match = json::parse(*line);
  CHECK(match.at("title") == "Storm hits the coast");
  CHECK(match.at("alert") == "storms");
  CHECK(match.at("site") == "a");
  CHECK(match.at("url") == "https://a.cnn.com/a/storm/index.html");
  // The calm headline went out on its site's topic, before the match, and matched nothing: the
  // alert's topic carried nothing else.
  const auto output = sub.output();
  CHECK(output.find("0 newsdesk/headlines/a {") != std::string::npos);
  CHECK(output.find("Calm day") < output.find("0 newsdesk/alerts/storms"));
  CHECK(count(output, "newsdesk/alerts/storms") == 1);

  REQUIRE(eventually([&] { return receiver.count() == 1; }));
  const auto got = receiver.requests().front();
  CHECK(got.target == "/hook?x=1");
  CHECK(got.headers.at("content-type") == "application/json");
  CHECK(json::parse(got.body) == match); // the same JSON as on MQTT
  CHECK(got.headers.at("x-newsdesk-alert") == "storms");
  CHECK(got.headers.at("x-newsdesk-delivery") ==
        "storms:" + std::to_string(match.at("id").get<std::int64_t>()));
  const auto timestamp = got.headers.at("x-newsdesk-timestamp");
  CHECK(std::abs(std::stoll(timestamp) - std::chrono::duration_cast<std::chrono::seconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()) < 60);
  CHECK(got.headers.at("x-newsdesk-signature") ==
        "sha256=" + hmac_sha256_hex("s3cret", timestamp + "." + got.body));

  CHECK(eventually(
      [&] { return metric(nd.port, "newsdesk_alert_matches_total{alert=\"storms\"}") == 1; }));
  CHECK(eventually([&] {
    return metric(nd.port,
                  "newsdesk_alert_webhook_deliveries_total{alert=\"storms\",result=\"ok\"}") == 1;
  }));
  CHECK(metric(nd.port, "newsdesk_alert_webhook_queued{alert=\"storms\"}") == 0);
}

TEST_CASE("an ntfy webhook gets the title with Title, Click and Tags; a 503 is tried again, a "
          "404 is given up at once and logged") {
  webhook_receiver receiver;
  receiver.set_answer([](const received& r, std::size_t) {
    static int ntfy_seen = 0;
    if (r.target == "/gone")
      return 404u;
    return ++ntfy_seen == 1 ? 503u : 200u;
  });
  splash_standin splash;
  first_pages(splash);
  newsdesk_process nd(alerts_config(
      splash, {{{"name", "phone"},
                {"q", "storm"},
                {"webhook",
                 {{"url", receiver.url("/newsdesk")}, {"format", "ntfy"}, {"retry_base", 0.05}}}},
               {{"name", "gone"}, {"q", "coast"}, {"webhook", {{"url", receiver.url("/gone")}}}}}));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));
  second_page(splash);
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);

  REQUIRE(eventually([&] { return receiver.count() == 3; }));
  std::vector<received> ntfy;
  for (const auto& r : receiver.requests())
    if (r.target == "/newsdesk")
      ntfy.push_back(r);
  REQUIRE(ntfy.size() == 2);
  CHECK(ntfy[0].answered == 503);
  CHECK(ntfy[1].answered == 200);
  for (const auto& r : ntfy) {
    CHECK(r.body == "Storm hits the coast");
    CHECK(r.headers.at("title") == "Site A");
    CHECK(r.headers.at("click") == "https://a.cnn.com/a/storm/index.html");
    CHECK(r.headers.at("tags") == "phone");
    CHECK(r.headers.at("content-type").starts_with("text/plain"));
    CHECK_FALSE(r.headers.contains("x-newsdesk-signature")); // no secret, no signature
  }
  CHECK(eventually([&] {
    return metric(nd.port,
                  "newsdesk_alert_webhook_deliveries_total{alert=\"phone\",result=\"ok\"}") == 1;
  }));
  CHECK(metric(nd.port, "newsdesk_alert_webhook_retries_total{alert=\"phone\"}") == 1);

  // The 404 is final: one attempt, one log line, counted as failed.
  const auto failed = nd.process->wait_for_log("msg=\"webhook delivery failed\" alert=\"gone\" ");
  REQUIRE(failed);
  CHECK(failed->find("attempts=1 error=\"HTTP 404\"") != std::string::npos);
  CHECK(eventually([&] {
    return metric(nd.port,
                  "newsdesk_alert_webhook_deliveries_total{alert=\"gone\",result=\"failed\"}") == 1;
  }));
  CHECK(metric(nd.port, "newsdesk_alert_webhook_retries_total{alert=\"gone\"}") == 0);
  CHECK(count(nd.process->output(), "msg=\"webhook delivery failed\"") == 1);
}

TEST_CASE("a webhook receiver that is down is tried again until it is up") {
  const auto port = unused_port();
  splash_standin splash;
  first_pages(splash);
  newsdesk_process nd(
      alerts_config(splash, {{{"name", "storms"},
                              {"q", "storm"},
                              {"webhook",
                               {{"url", "http://127.0.0.1:" + std::to_string(port) + "/hook"},
                                {"retry_base", 0.1},
                                {"retry_max", 0.3},
                                {"attempts", 100}}}}}));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));
  second_page(splash);
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  // Refused at least twice, then the receiver starts.
  REQUIRE(eventually(
      [&] {
        return metric(nd.port, "newsdesk_alert_webhook_retries_total{alert=\"storms\"}") >= 2;
      },
      20s));
  CHECK(metric(nd.port, "newsdesk_alert_webhook_queued{alert=\"storms\"}") == 1);
  webhook_receiver receiver(port);
  REQUIRE(eventually([&] { return receiver.count() == 1; }, 10s));
  CHECK(json::parse(receiver.requests().front().body).at("title") == "Storm hits the coast");
  CHECK(eventually([&] {
    return metric(nd.port,
                  "newsdesk_alert_webhook_deliveries_total{alert=\"storms\",result=\"ok\"}") == 1;
  }));
  CHECK(metric(nd.port,
               "newsdesk_alert_webhook_deliveries_total{alert=\"storms\",result=\"failed\"}") == 0);
}

TEST_CASE("a bad alert stops startup with a message naming the entry and what is wrong") {
  splash_standin splash;
  first_pages(splash);
  const std::pair<json, std::string> cases[] = {
      {json{{{"name", "a/b"}, {"q", "x"}}}, "alerts[0].name: 'a/b' cannot be an MQTT topic level"},
      {json{{{"name", "x"}, {"q", "storm"}, {"site", "nowhere"}}},
       "alerts[0].site: no site named 'nowhere' (sites: a, b)"},
      {json{{{"name", "x"}, {"q", "storm"}, {"webhook", {{"url", "ftp://x/"}}}}},
       "alerts[0].webhook.url: expected an http:// or https:// URL, got 'ftp://x/'"},
  };
  for (const auto& [alerts, message] : cases) {
    CAPTURE(message);
    newsdesk_process nd(alerts_config(splash, alerts));
    CHECK(nd.port == 0);
    CHECK(nd.process->wait_exit() == 2);
    CHECK(nd.log().find("newsdesk: configuration error: " + message) != std::string::npos);
  }
}

TEST_CASE("a headline joining a story goes out on newsdesk/stories/<id> with its sources") {
  INFO("mosquitto_sub is missing: scripts/setup installs mosquitto-clients");
  REQUIRE(::access(sub_bin.c_str(), X_OK) == 0);
  splash_standin splash;
  const std::string title = "Volcano erupts near Naples, thousands evacuated";
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/v/index.html", title}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/x/index.html", "Sports results"}})));
  newsdesk_process nd(alerts_config(splash, json::array()));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  const auto mqtt_port = nd.process->wait_for_log("msg=listening service=mqtt address=127.0.0.1:");
  REQUIRE(mqtt_port);
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));
  child_process sub(sub_bin,
                    {"-h", "127.0.0.1", "-p", *mqtt_port, "-V", "mqttv5", "-t",
                     "newsdesk/stories/+", "-t", "newsdesk/headlines/b", "-F", "%r %t %p"});
  REQUIRE(sub.wait_for_line("1 newsdesk/headlines/b ", 20s));

  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/x/index.html", "Sports results"},
                                                                {"/naples/index.html", title}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=b").status == 202);
  const auto line = sub.wait_for_line("0 newsdesk/stories/", 20s);
  REQUIRE(line);
  const auto update = json::parse(line->substr(line->find(' ') + 1));
  CHECK(line->substr(0, line->find(' ')) == std::to_string(update.at("story").get<std::int64_t>()));
  CHECK(update.at("sources") == 2);
  CHECK(update.at("headline").at("title") == title);
  CHECK(update.at("headline").at("site") == "b");
  CHECK(update.at("headline").at("story") == update.at("story"));
}

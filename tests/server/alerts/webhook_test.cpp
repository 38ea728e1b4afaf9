#include "server/alerts/alerts.hpp"
#include "server/alerts/webhook.hpp"
#include "server/news/headline.hpp"
#include "server/render/http_client.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace newsdesk::server;
using namespace newsdesk::server::alerts;
using namespace std::chrono_literals;

namespace {

http_fetch_result answered(unsigned status, header_list headers = {}) {
  http_fetch_result r;
  r.status = status;
  r.headers = std::move(headers);
  return r;
}

http_fetch_result failed(fetch_failure kind, std::string error) {
  http_fetch_result r;
  r.failure = kind;
  r.error = std::move(error);
  return r;
}

} // namespace

TEST_CASE("the signature is HMAC-SHA256 of the timestamp, a dot and the body, in hex") {
  // Python: hmac.new(b'key', b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
  CHECK(sign("key", "1700000000", R"({"a":1})") ==
        "a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");
}

TEST_CASE("2xx is delivered; 429, 5xx and network failures are retried with a doubling wait") {
  webhook_config cfg; // attempts 6, retry_base 1 s, retry_max 60 s
  CHECK(judge(answered(200), 1, cfg).what == verdict::delivered);
  CHECK(judge(answered(204), 3, cfg).what == verdict::delivered);
  for (unsigned status : {429u, 500u, 502u, 503u}) {
    CAPTURE(status);
    const auto v = judge(answered(status), 1, cfg);
    CHECK(v.what == verdict::retry);
    CHECK(v.wait == 1s);
    CHECK(v.why == "HTTP " + std::to_string(status));
  }
  CHECK(judge(failed(fetch_failure::connect, "Connection refused"), 2, cfg).wait == 2s);
  CHECK(judge(failed(fetch_failure::timeout, "timed out"), 3, cfg).wait == 4s);
  CHECK(judge(failed(fetch_failure::resolve, "no such host"), 5, cfg).wait == 16s);
  cfg.attempts = 20;
  CHECK(judge(answered(503), 12, cfg).wait == 60s); // capped at retry_max
}

TEST_CASE("a 2xx whose body is past the size read is delivered: the receiver accepted it") {
  webhook_config cfg;
  auto accepted = failed(fetch_failure::too_large, "response larger than 65536 bytes");
  accepted.status = 200;
  CHECK(judge(accepted, 1, cfg).what == verdict::delivered);
}

TEST_CASE("Retry-After in seconds lengthens the wait, within retry_max; a date is ignored") {
  webhook_config cfg;
  CHECK(judge(answered(429, {{"Retry-After", "7"}}), 1, cfg).wait == 7s);
  CHECK(judge(answered(503, {{"Retry-After", "0"}}), 3, cfg).wait == 4s); // back-off is longer
  CHECK(judge(answered(503, {{"Retry-After", "3600"}}), 1, cfg).wait == 60s);
  CHECK(judge(answered(503, {{"Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"}}), 1, cfg).wait ==
        1s);
}

TEST_CASE("other answers and the last attempt give up, saying why") {
  webhook_config cfg;
  auto gives_up = [&](const http_fetch_result& r, unsigned attempt, const std::string& why) {
    const auto v = judge(r, attempt, cfg);
    CHECK(v.what == verdict::give_up);
    CHECK(v.why == why);
  };
  gives_up(answered(400), 1, "HTTP 400");
  gives_up(answered(404), 1, "HTTP 404");
  gives_up(answered(302), 1, "HTTP 302 (redirects are not followed)");
  gives_up(failed(fetch_failure::bad_url, "bad URL"), 1, "bad URL");
  gives_up(failed(fetch_failure::too_large, "too large"), 1, "too large");
  auto error_too_long = failed(fetch_failure::too_large, "too large");
  error_too_long.status = 500;
  gives_up(error_too_long, 1, "too large");
  gives_up(answered(503), 6, "HTTP 503 (after 6 attempts)");
  gives_up(failed(fetch_failure::connect, "Connection refused"), 6,
           "Connection refused (after 6 attempts)");
}

TEST_CASE("a match is the headline's JSON with the alert's name; ntfy gets the title as text") {
  news_item item{
      {"Storm hits the coast", "https://a.example/storm", "a", {}}, 42, 1'700'000'000'000};
  item.story = 42;
  auto j = nlohmann::json::parse(match_json(item, "storms"));
  CHECK(j.at("alert") == "storms");
  CHECK(j.at("id") == 42);
  j.erase("alert");
  CHECK(j == nlohmann::json::parse(headline_json(item)));

  auto json_message = webhook_message_of(item, "storms", webhook_format::json, "Site A");
  CHECK(json_message.content_type == "application/json");
  CHECK(json_message.body == match_json(item, "storms"));
  CHECK(json_message.headers.empty());
  CHECK(json_message.headline_id == 42);

  auto ntfy = webhook_message_of(item, "storms", webhook_format::ntfy, "Le Monde\r\nX-Evil: 1");
  CHECK(ntfy.body == "Storm hits the coast");
  CHECK(ntfy.content_type == "text/plain; charset=utf-8");
  const header_list expected{
      {"Title", "Le Monde  X-Evil: 1"}, {"Click", "https://a.example/storm"}, {"Tags", "storms"}};
  CHECK(ntfy.headers == expected);
  // Outside ASCII: one RFC 2047 encoded word, as ntfy decodes it.
  CHECK(webhook_message_of(item, "storms", webhook_format::ntfy, "Élysée").headers[0].second ==
        "=?UTF-8?B?w4lseXPDqWU=?=");
}

TEST_CASE("an alert name is one MQTT topic level") {
  CHECK(usable_name("storms"));
  CHECK(usable_name("Storm_alerts-2.0"));
  for (const char* bad : {"", "a/b", "a+", "#", "with space", "é"})
    CHECK_FALSE(usable_name(bad));
  CHECK_FALSE(usable_name(std::string(max_name_bytes + 1, 'a')));
  CHECK(topic_of("storms") == "newsdesk/alerts/storms");
  CHECK(channel_of("storms") == "/topic/newsdesk/alerts/storms");
}

#include "server/http/representation.hpp"

#include "server/core/yield_point.hpp"

#include <brotli/decode.h>
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <thread>

using namespace newsdesk::server;

namespace {

std::string gunzip(std::string_view in) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  std::string out(4 * 1024 * 1024, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

std::string unbrotli(std::string_view in) {
  std::string out(4 * 1024 * 1024, '\0');
  std::size_t size = out.size();
  CHECK(BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &size,
                                reinterpret_cast<std::uint8_t*>(out.data())) ==
        BROTLI_DECODER_RESULT_SUCCESS);
  out.resize(size);
  return out;
}

std::string header(const http_response& res, const std::string& name) {
  return std::string(res.header(name).value_or(""));
}

http_request get(std::vector<std::pair<std::string, std::string>> headers = {}) {
  http_request r;
  r.method = "GET";
  r.target = "/x";
  r.headers = std::move(headers);
  return r;
}

std::string page_text() {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "<li><a href=\"https://example.org/story/" + std::to_string(i) + "\">Headline number " +
            std::to_string(i) + " about something</a></li>\n";
  return text;
}

} // namespace

TEST_CASE("representation: gzip and brotli bodies decompress to the identity bytes") {
  const auto text = page_text();
  auto r = representation::make("text/html; charset=utf-8", text, 1'700'000'000'000);
  REQUIRE(r->body(content_coding::gzip));
  REQUIRE(r->body(content_coding::br));
  CHECK(r->body(content_coding::identity)->bytes() == text);
  CHECK(gunzip(r->body(content_coding::gzip)->bytes()) == text);
  CHECK(unbrotli(r->body(content_coding::br)->bytes()) == text);
  CHECK(r->body(content_coding::br)->size() < r->body(content_coding::gzip)->size());
  CHECK(r->body(content_coding::gzip)->size() < text.size() / 4);
  // One strong tag per encoding, all from the identity bytes.
  CHECK(r->etag().front() == '"');
  CHECK(r->etag(content_coding::gzip) != r->etag());
  CHECK(r->etag(content_coding::br) != r->etag(content_coding::gzip));
  CHECK(representation::make("text/html", text, 1)->etag() == r->etag());
  CHECK(representation::make("text/html", text + " ", 1)->etag() != r->etag());
}

TEST_CASE("representation: quick compression gives the same bytes back under tags of its own, a "
          "brotli body no smaller than the best effort's, and polishes into the best effort's") {
  const auto text = page_text();
  auto best = representation::make("text/html", text, 1);
  auto quick = representation::make("text/html", text, 1, "no-cache", {}, compression::quick);
  REQUIRE(quick->body(content_coding::gzip));
  REQUIRE(quick->body(content_coding::br));
  CHECK(gunzip(quick->body(content_coding::gzip)->bytes()) == text);
  CHECK(unbrotli(quick->body(content_coding::br)->bytes()) == text);
  // The identity's tag is the same; the encoded bodies differ, and so do their tags.
  CHECK(quick->etag() == best->etag());
  const auto& tag = best->etag();
  CHECK(quick->etag(content_coding::br) == tag.substr(0, tag.size() - 1) + "-brq\"");
  CHECK(quick->etag(content_coding::gzip) != best->etag(content_coding::gzip));
  CHECK(quick->body(content_coding::br)->size() >= best->body(content_coding::br)->size());
  CHECK(quick->quick());
  CHECK_FALSE(best->quick());

  auto polished = quick->polished();
  CHECK_FALSE(polished->quick());
  CHECK(polished->etag(content_coding::br) == best->etag(content_coding::br));
  CHECK(polished->body(content_coding::br)->bytes() == best->body(content_coding::br)->bytes());
  CHECK(polished->content_type() == "text/html");
  CHECK(polished->last_modified_ms() == 1);
}

TEST_CASE("representation: a page of many compression steps decodes whole at either effort, "
          "and its build yields the core between steps on a background thread") {
  // 200 KB of varied text: compressed 16 KiB at a time, with yield_point() between steps.
  std::string text;
  for (int i = 0; text.size() < 200'000; ++i)
    text += "<li><a href=\"/story/" + std::to_string(i * 7919 % 100'003) + "\">Headline " +
            std::to_string(i) + " on day " + std::to_string(i % 97) + "</a></li>\n";
  for (auto effort : {compression::quick, compression::best}) {
    CAPTURE(effort == compression::quick);
    std::shared_ptr<const representation> r;
    unsigned long yields = 0;
    std::thread([&] {
      mark_background_thread();
      r = representation::make("text/html", text, 1, "no-cache", {}, effort);
      yields = yields_on_this_thread();
    }).join();
    REQUIRE(r->body(content_coding::gzip));
    REQUIRE(r->body(content_coding::br));
    CHECK(gunzip(r->body(content_coding::gzip)->bytes()) == text);
    CHECK(unbrotli(r->body(content_coding::br)->bytes()) == text);
    CHECK(r->body(content_coding::br)->size() < text.size() / 8);
    CHECK(yields >= 3); // between the encodings, and between gzip's 13 steps
  }
}

TEST_CASE("representation: bodies of exactly whole steps, and ones that do not compress, come "
          "back whole") {
  std::string steps;
  while (steps.size() < 3 * 16 * 1024)
    steps += "headline words ";
  steps.resize(3 * 16 * 1024); // the last step ends the input: no empty step after it
  std::string noise;
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 100'000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    noise += static_cast<char>(x & 0xff);
  }
  for (const auto& text : {steps, noise}) {
    auto r = representation::make("text/plain", text, 1, "no-cache", {}, compression::quick);
    CHECK(r->body(content_coding::identity)->bytes() == text);
    if (auto gz = r->body(content_coding::gzip))
      CHECK(gunzip(gz->bytes()) == text);
    if (auto br = r->body(content_coding::br))
      CHECK(unbrotli(br->bytes()) == text);
  }
  // Noise does not shrink: it is sent as it is, never in a larger encoding.
  auto r = representation::make("text/plain", noise, 1, "no-cache", {}, compression::quick);
  CHECK_FALSE(r->body(content_coding::gzip));
  CHECK_FALSE(r->body(content_coding::br));
  auto s = representation::make("text/plain", steps, 1, "no-cache", {}, compression::quick);
  CHECK(s->body(content_coding::gzip));
  CHECK(s->body(content_coding::br));
}

TEST_CASE("representation: an empty body is sent as it is, whatever encodings are accepted") {
  auto r = representation::make("text/plain", "", 0, "no-cache", {}, compression::quick);
  CHECK_FALSE(r->body(content_coding::gzip));
  CHECK_FALSE(r->body(content_coding::br));
  auto res = r->respond(get({{"Accept-Encoding", "br, gzip"}}));
  CHECK(res.status == 200);
  CHECK(header(res, "Content-Encoding").empty());
  CHECK(res.body_size() == 0);
}

TEST_CASE("representation: a body compression does not shrink is sent as it is") {
  auto r = representation::make("text/plain", "ok", 0);
  CHECK_FALSE(r->body(content_coding::gzip));
  CHECK_FALSE(r->body(content_coding::br));
  auto res = r->respond(get({{"Accept-Encoding", "gzip, br"}}));
  CHECK(res.status == 200);
  CHECK(header(res, "Content-Encoding").empty());
  CHECK(res.file_body->bytes() == "ok");
}

TEST_CASE("negotiation follows Accept-Encoding's q-values; br first among equals") {
  auto pick = [](std::optional<std::string_view> ae) { return negotiate_coding(ae, true, true); };
  CHECK(pick(std::nullopt) == content_coding::identity);
  CHECK(pick("") == content_coding::identity);
  CHECK(pick("gzip, deflate, br") == content_coding::br);
  CHECK(pick("gzip, deflate") == content_coding::gzip);
  CHECK(pick("br;q=0.5, gzip") == content_coding::gzip);
  CHECK(pick("br;q=0, gzip;q=0") == content_coding::identity);
  CHECK(pick("*") == content_coding::br);
  CHECK(pick("*;q=0.5, gzip;q=0.9") == content_coding::gzip);
  CHECK(pick("BR") == content_coding::br);
  CHECK(pick("x-gzip") == content_coding::gzip);
  CHECK(pick("identity;q=0, gzip") == content_coding::gzip);
  CHECK(pick("identity;q=0.9, gzip;q=0.5") == content_coding::identity);
  CHECK(pick("deflate") == content_coding::identity);      // identity unless refused
  CHECK(pick("br;q=bogus, gzip") == content_coding::gzip); // a malformed item is ignored
  // Nothing acceptable: identity refused and no coding offered.
  CHECK_FALSE(pick("identity;q=0"));
  CHECK_FALSE(pick("*;q=0"));
  CHECK_FALSE(pick("deflate, identity;q=0"));
  CHECK(negotiate_coding("br, identity;q=0", false, false) == std::nullopt);
  CHECK(negotiate_coding("br", false, true) == content_coding::br);
  CHECK(negotiate_coding("br", true, false) == content_coding::identity);
}

TEST_CASE("representation: 200 with the chosen encoding, Vary, validators and Cache-Control") {
  const auto text = page_text();
  auto r = representation::make("text/html; charset=utf-8", text, 1'700'000'000'000, "no-cache",
                                {{"X-Extra", "1"}});
  auto res = r->respond(get({{"Accept-Encoding", "gzip, deflate, br"}}));
  CHECK(res.status == 200);
  CHECK(header(res, "Content-Encoding") == "br");
  CHECK(header(res, "Vary") == "Accept-Encoding");
  CHECK(header(res, "Cache-Control") == "no-cache");
  CHECK(header(res, "ETag") == r->etag(content_coding::br));
  CHECK(header(res, "Last-Modified") == "Tue, 14 Nov 2023 22:13:20 GMT");
  CHECK(header(res, "X-Extra") == "1");
  CHECK(res.content_type == "text/html; charset=utf-8");
  CHECK(res.file_body == r->body(content_coding::br));

  auto refused = r->respond(get({{"Accept-Encoding", "identity;q=0, compress"}}));
  CHECK(refused.status == 406);
  CHECK(header(refused, "Vary") == "Accept-Encoding");
}

TEST_CASE("representation: a header that would split the response is left out when made") {
  auto r =
      representation::make("text/plain", "some text", 0, "no-cache\r\nX-Injected: 1",
                           {{"X-Fine", "1"}, {"X-Split", "a\r\nSet-Cookie: x=1"}, {"Bad:", "2"}});
  auto res = r->respond(get());
  CHECK(res.status == 200);
  CHECK(header(res, "X-Fine") == "1");
  CHECK(header(res, "X-Split").empty());
  CHECK(header(res, "Set-Cookie").empty());
  CHECK(header(res, "X-Injected").empty());
  CHECK(header(res, "Cache-Control").empty());
  CHECK(header(res, "ETag") == r->etag());
  // Every line break in the lines is a header's end.
  REQUIRE(res.header_lines);
  const std::string& lines = *res.header_lines;
  for (std::size_t i = lines.find('\n'); i != std::string::npos; i = lines.find('\n', i + 1)) {
    REQUIRE(i > 0);
    CHECK(lines[i - 1] == '\r');
  }
  // A 304 carries what a cache needs, not the extra headers.
  auto not_modified = r->respond(get({{"If-None-Match", r->etag()}}));
  CHECK(not_modified.status == 304);
  CHECK(header(not_modified, "ETag") == r->etag());
  CHECK(header(not_modified, "X-Fine").empty());
}

TEST_CASE("representation: If-None-Match and If-Modified-Since give 304 without a body") {
  auto r = representation::make("application/json", page_text(), 1'700'000'000'000);
  const auto br = r->etag(content_coding::br);
  auto revalidate = [&](std::vector<std::pair<std::string, std::string>> headers) {
    headers.emplace_back("Accept-Encoding", "br");
    return r->respond(get(std::move(headers)));
  };
  auto not_modified = revalidate({{"If-None-Match", br}});
  CHECK(not_modified.status == 304);
  CHECK_FALSE(not_modified.file_body);
  CHECK(not_modified.body.empty());
  CHECK(header(not_modified, "ETag") == br);
  CHECK(header(not_modified, "Vary") == "Accept-Encoding");
  CHECK(revalidate({{"If-None-Match", "\"other\", W/" + br}}).status == 304);
  CHECK(revalidate({{"If-None-Match", "*"}}).status == 304);
  // The gzip body's tag does not validate the brotli body.
  CHECK(revalidate({{"If-None-Match", r->etag(content_coding::gzip)}}).status == 200);
  CHECK(revalidate({{"If-Modified-Since", "Tue, 14 Nov 2023 22:13:20 GMT"}}).status == 304);
  CHECK(revalidate({{"If-Modified-Since", "Tue, 14 Nov 2023 22:13:19 GMT"}}).status == 200);
  CHECK(revalidate({{"If-Modified-Since", "yesterday"}}).status == 200);
  // If-None-Match wins over If-Modified-Since.
  CHECK(revalidate({{"If-None-Match", "\"other\""},
                    {"If-Modified-Since", "Tue, 14 Nov 2023 22:13:20 GMT"}})
            .status == 200);
}

TEST_CASE("HTTP dates go both ways") {
  CHECK(http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777000);
  CHECK(parse_http_date(http_date(1'700'000'000'000)) == 1'700'000'000'000);
  CHECK_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37"));
  CHECK_FALSE(parse_http_date(""));
}

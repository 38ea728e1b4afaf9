// /news, /news.json and the feeds as a browser and a feed reader get them from the real binary:
// precompressed bodies, validators, 304s, HEAD, and ETags that follow the headlines.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"

#include <brotli/decode.h>
#include <doctest/doctest.h>
#include <zlib.h>

#include <sched.h>

#include <algorithm>
#include <set>
#include <sstream>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

std::string gunzip(const std::string& in) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  std::string out(16 * 1024 * 1024, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

std::string unbrotli(const std::string& in) {
  std::string out(16 * 1024 * 1024, '\0');
  std::size_t size = out.size();
  CHECK(BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &size,
                                reinterpret_cast<std::uint8_t*>(out.data())) ==
        BROTLI_DECODER_RESULT_SUCCESS);
  out.resize(size);
  return out;
}

// The tag without its encoding suffix: "\"abc-12-br\"" (or "-brq", compressed quick) ->
// "\"abc-12\"".
std::string base_tag(std::string tag) {
  for (std::string suffix : {"-br\"", "-gz\"", "-brq\"", "-gzq\""})
    if (tag.size() > suffix.size() && tag.ends_with(suffix))
      return tag.substr(0, tag.size() - suffix.size()) + "\"";
  return tag;
}

http_answer fetch(unsigned short port, const std::string& target,
                  std::vector<std::pair<std::string, std::string>> headers = {},
                  const std::string& method = "GET") {
  return send_request(port, method, target, headers);
}

std::uint64_t metric(unsigned short port, const std::string& name) {
  auto body = http_get(port, "/metrics").body;
  auto at = body.find("\n" + name + " ");
  REQUIRE_MESSAGE(at != std::string::npos, name);
  return std::stoull(body.substr(at + name.size() + 2));
}

// The count of representations built, once no build has ended for 400 ms (at most 8 s): views
// are built on the pool after a change, and /news again when a request finds its minute turned.
std::uint64_t settled_builds(unsigned short port) {
  auto builds = metric(port, "newsdesk_representation_builds_total");
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(400ms);
    auto now = metric(port, "newsdesk_representation_builds_total");
    if (now == builds)
      break;
    builds = now;
  }
  return builds;
}

} // namespace

TEST_CASE("every representation comes precompressed, with validators, 304s and HEAD") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/1/index.html", "First story about the election"},
                                          {"/2/index.html", "Second story about the weather"}})));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"manual_min_interval", 0}}},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually(
      [&] { return http_get(nd.port, "/news.json").body.find("Second") != std::string::npos; }));

  for (const std::string path : {"/news", "/news.json", "/news.atom", "/news.feed.json"}) {
    INFO(path);
    // The page's ages tick by the minute: fetch again if a minute turned between the two.
    http_answer plain, br;
    for (int attempt = 0; attempt < 3; ++attempt) {
      plain = fetch(nd.port, path);
      br = fetch(nd.port, path, {{"Accept-Encoding", "gzip, deflate, br"}});
      if (base_tag(br.header("ETag")) == plain.header("ETag"))
        break;
    }
    REQUIRE(plain.status == 200);
    CHECK(plain.header("Content-Encoding").empty());
    CHECK(plain.header("Vary") == "Accept-Encoding");
    CHECK(plain.header("Cache-Control") == "no-cache");
    CHECK_FALSE(plain.header("Last-Modified").empty());
    REQUIRE(br.status == 200);
    CHECK(br.header("Content-Encoding") == "br");
    CHECK(br.body.size() < plain.body.size());
    CHECK(unbrotli(br.body) == plain.body);

    auto gz = fetch(nd.port, path, {{"Accept-Encoding", "gzip"}});
    CHECK(gz.header("Content-Encoding") == "gzip");
    if (base_tag(gz.header("ETag")) == plain.header("ETag"))
      CHECK(gunzip(gz.body) == plain.body);

    auto again =
        fetch(nd.port, path,
              {{"Accept-Encoding", "gzip, deflate, br"}, {"If-None-Match", br.header("ETag")}});
    if (again.status != 304) // the page's minute turned: its new tag validates
      again = fetch(
          nd.port, path,
          {{"Accept-Encoding", "gzip, deflate, br"}, {"If-None-Match", again.header("ETag")}});
    CHECK(again.status == 304);
    CHECK(again.body.empty());
    CHECK(again.header("Vary") == "Accept-Encoding");

    auto since = fetch(nd.port, path, {{"If-Modified-Since", plain.header("Last-Modified")}});
    CHECK(since.status == 304);

    auto head = fetch(nd.port, path, {{"Accept-Encoding", "br"}}, "HEAD");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(head.header("Content-Encoding") == "br");

    CHECK(fetch(nd.port, path, {{"Accept-Encoding", "identity;q=0"}}).status == 406);
  }

  // A refresh that finds the same headlines leaves the feeds' bytes, and so their ETags, alone;
  // a new headline changes every representation's.
  auto atom = fetch(nd.port, "/news.atom").header("ETag");
  auto json_feed = fetch(nd.port, "/news.feed.json").header("ETag");
  auto news_json = fetch(nd.port, "/news.json").header("ETag");
  // The refresh is known to be applied when its "site refreshed" line is logged (after the
  // state took it): then the feeds are asked for again.
  const auto refreshed = [&] { return count(nd.log(), "msg=\"site refreshed\" site=a "); };
  const auto before = refreshed();
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE(eventually([&] { return refreshed() > before; }));
  CHECK(fetch(nd.port, "/news.atom").header("ETag") == atom);
  CHECK(fetch(nd.port, "/news.feed.json").header("ETag") == json_feed);

  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/1/index.html", "First story about the election"},
                                          {"/2/index.html", "Second story about the weather"},
                                          {"/3/index.html", "Third story arrives"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE(eventually(
      [&] { return http_get(nd.port, "/news.json").body.find("Third") != std::string::npos; }));
  // Feeds named after the request's Host are built when first asked for after a change: the
  // previous bytes answer until then.
  CHECK(eventually([&] { return fetch(nd.port, "/news.atom").header("ETag") != atom; }, 5s));
  CHECK(eventually([&] { return fetch(nd.port, "/news.feed.json").header("ETag") != json_feed; },
                   5s));
  CHECK(fetch(nd.port, "/news.json").header("ETag") != news_json);
}

TEST_CASE("views compressed quick while the headlines move are compressed at the best effort "
          "once they are still") {
  splash_standin splash;
  std::vector<std::pair<std::string, std::string>> stories;
  for (int i = 0; i < 200; ++i)
    stories.push_back(
        {"/" + std::to_string(i) + "/index.html",
         "Story number " + std::to_string(i) + " about the election and the weather"});
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page(stories)));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()}, {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] {
    return http_get(nd.port, "/news.json").body.find("number 199") != std::string::npos;
  }));
  // Built as the headlines arrived: quick, and tagged so.
  const std::vector<std::pair<std::string, std::string>> br{{"Accept-Encoding", "br"}};
  auto quick = fetch(nd.port, "/news.json", br);
  REQUIRE(quick.status == 200);
  CHECK(quick.header("ETag").ends_with("-brq\""));
  // Still for 20 s: the same bytes, compressed again at brotli's best, under a tag of their own.
  http_answer best;
  CHECK(eventually(
      [&] {
        best = fetch(nd.port, "/news.json", br);
        return best.header("ETag").ends_with("-br\"");
      },
      40s));
  CHECK(base_tag(best.header("ETag")) == base_tag(quick.header("ETag")));
  CHECK(unbrotli(best.body) == unbrotli(quick.body));
  CHECK(best.body.size() < quick.body.size());
  // A client holding the quick bytes gets the better ones; one holding those, a 304.
  CHECK(fetch(nd.port, "/news.json",
              {{"Accept-Encoding", "br"}, {"If-None-Match", quick.header("ETag")}})
            .status == 200);
  CHECK(fetch(nd.port, "/news.json",
              {{"Accept-Encoding", "br"}, {"If-None-Match", best.header("ETag")}})
            .status == 304);
}

TEST_CASE("a filtered view is built once and then served from the cache") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page(
                 {{"/1/index.html", "Election results"}, {"/2/index.html", "Weather today"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()}, {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually(
      [&] { return http_get(nd.port, "/news.json").body.find("Weather") != std::string::npos; }));
  // Let the views every change builds (prebuilt on the pool, one round at a time, at least
  // 100 ms apart) finish first. A late round (a status, an icon) may still come between the two
  // requests on a loaded machine: then try again with another search, at most three times.
  const char* searches[] = {"weather", "today", "weather+today"};
  std::uint64_t builds = 0, hits = 0, after_first = 0, after_second = 0;
  http_answer first, second;
  for (const char* q : searches) {
    builds = settled_builds(nd.port);
    hits = metric(nd.port, "newsdesk_representation_hits_total");
    const auto rounds = metric(nd.port, "newsdesk_view_build_rounds_total");
    first = http_get(nd.port, std::string("/news.json?q=") + q);
    after_first = metric(nd.port, "newsdesk_representation_builds_total");
    second = http_get(nd.port, std::string("/news.json?q=") + q);
    after_second = metric(nd.port, "newsdesk_representation_builds_total");
    if (metric(nd.port, "newsdesk_view_build_rounds_total") == rounds)
      break;
  }
  REQUIRE(first.status == 200);
  CHECK(first.body.find("Election") == std::string::npos);
  CHECK(first.body.find("Weather") != std::string::npos);
  CHECK(after_first == builds + 1);
  CHECK(second.body == first.body);
  CHECK(second.header("ETag") == first.header("ETag"));
  CHECK(after_second == builds + 1);
  CHECK(metric(nd.port, "newsdesk_representation_hits_total") >= hits + 1);
}

namespace {
// The scheduling policy of each of `pid`'s threads (field 41 of /proc/PID/task/TID/stat).
std::vector<int> thread_policies(int pid) {
  std::vector<int> out;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    auto stat = read_file((task.path() / "stat").string());
    // A thread that ended after the listing leaves nothing to read.
    const auto name_end = stat.rfind(')');
    if (name_end == std::string::npos)
      continue;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    std::istringstream rest(stat.substr(name_end + 1));
    std::string field;
    for (int i = 3; i <= 41 && rest >> field; ++i)
      if (i == 41)
        out.push_back(std::stoi(field));
  }
  return out;
}
} // namespace

TEST_CASE("filtered views are built at the lowest priority; unfiltered ones never wait for them") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/1/index.html", "First story about the election"},
                                          {"/2/index.html", "Second story about the weather"}})));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"threads", 2},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually(
      [&] { return http_get(nd.port, "/news.json").body.find("Second") != std::string::npos; }));
  // Two threads for filtered views under SCHED_IDLE (5); the others under SCHED_OTHER (0).
  const auto policies = thread_policies(nd.process->pid());
  CHECK(std::count(policies.begin(), policies.end(), SCHED_IDLE) == 2);
  CHECK(std::count(policies.begin(), policies.end(), SCHED_OTHER) >= 4);

  // The unfiltered views, once built, are answered again without building anything.
  for (const std::string path : {"/news", "/news.json", "/news.atom", "/news.feed.json"})
    REQUIRE(fetch(nd.port, path).status == 200);
  // /news is keyed by its minute: had one turned since its round, the fetch above was answered
  // with the older page and started the new one's build in the background.
  const auto builds = settled_builds(nd.port);
  const auto hits = metric(nd.port, "newsdesk_representation_hits_total");
  for (const std::string path : {"/news.json", "/news.atom", "/news.feed.json"})
    CHECK(fetch(nd.port, path, {{"Accept-Encoding", "br"}}).status == 200);
  CHECK(metric(nd.port, "newsdesk_representation_builds_total") == builds);
  CHECK(metric(nd.port, "newsdesk_representation_hits_total") == hits + 3);
  // A filtered view is answered too (built on the low-priority threads).
  auto filtered = fetch(nd.port, "/news.atom?q=weather&limit=1");
  CHECK(filtered.status == 200);
  CHECK(filtered.body.find("Second story") != std::string::npos);
  CHECK(filtered.body.find("First story") == std::string::npos);
}

TEST_CASE("work follows the change: a refresh that finds the same page builds nothing, one site's "
          "change leaves another site's view alone") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/1/index.html", "Apples story"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/b/1/index.html", "Pears story"}})));
  // Manual refreshes as often as the test asks (the default allows one per site every 10 s).
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  auto sample = [&](const std::string& series) {
    auto m = http_get(nd.port, "/metrics").body;
    auto at = m.find("\n" + series + " ");
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + series.size() + 2));
  };
  REQUIRE(eventually(
      [&] { return json::parse(http_get(nd.port, "/news.json").body).at("headlines").size() == 2; },
      10s));
  const auto etag = http_get(nd.port, "/news.json").header("ETag");
  const auto b_etag = http_get(nd.port, "/news.json?site=b").header("ETag");
  // Rounds run one at a time, each change's after the last: wait until they settle.
  double rounds = -1;
  REQUIRE(eventually(
      [&] {
        auto now = sample("newsdesk_view_build_rounds_total");
        std::this_thread::sleep_for(300ms);
        bool settled = now >= 1 && now == rounds;
        rounds = now;
        return settled;
      },
      10s));
  const auto builds = sample("newsdesk_representation_builds_total");

  // The same page again: the refresh is recorded, nothing is rebuilt, the bytes stay.
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  REQUIRE(eventually([&] { return count(nd.log(), "msg=\"site refreshed\" site=a ") >= 2; }, 5s));
  CHECK(sample("newsdesk_view_build_rounds_total") == rounds);
  CHECK(sample("newsdesk_representation_builds_total") == builds);
  CHECK(http_get(nd.port, "/news.json").header("ETag") == etag);

  // A new headline on a: the shared views are rebuilt; b's own view is not.
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page(
                 {{"/a/2/index.html", "Plums story"}, {"/a/1/index.html", "Apples story"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  REQUIRE(eventually(
      [&] { return json::parse(http_get(nd.port, "/news.json").body).at("headlines").size() == 3; },
      5s));
  CHECK(eventually([&] { return sample("newsdesk_view_build_rounds_total") > rounds; }, 5s));
  CHECK(http_get(nd.port, "/news.json").header("ETag") != etag);
  const auto b_builds = sample("newsdesk_representation_builds_total");
  CHECK(http_get(nd.port, "/news.json?site=b").header("ETag") == b_etag);
  CHECK(sample("newsdesk_representation_builds_total") == b_builds); // served as built before
}

TEST_CASE("a page stays a page: the newest page_size headlines, then a cursor to the next page") {
  splash_standin splash;
  for (const std::string n : {"a", "b"}) {
    std::vector<std::pair<std::string, std::string>> stories;
    for (int i = 0; i < 300; ++i)
      stories.push_back(
          {"/" + n + "/" + std::to_string(i) + "/index.html", "Story " + n + std::to_string(i)});
    splash.set("https://" + n + ".cnn.com/", standin_page::page(cnn_page(stories)));
  }
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  json first;
  REQUIRE(eventually([&] {
    first = json::parse(http_get(nd.port, "/news.json").body);
    return first.contains("next");
  }));
  REQUIRE(first.at("headlines").size() == 500);
  auto second = json::parse(
      http_get(nd.port, "/news.json?before=" + first.at("next").get<std::string>()).body);
  CHECK(second.at("headlines").size() == 100);
  CHECK_FALSE(second.contains("next"));
  std::set<std::int64_t> ids;
  for (const auto* page : {&first, &second})
    for (const auto& h : page->at("headlines"))
      ids.insert(h.at("id").get<std::int64_t>());
  CHECK(ids.size() == 600); // every headline once, across the two pages

  // The page links to the next one; a site's own view lists what the site lists.
  CHECK(eventually([&] {
    return http_get(nd.port, "/news")
               .body.find("/news?before=" + first.at("next").get<std::string>()) !=
           std::string::npos;
  }));
  CHECK(json::parse(http_get(nd.port, "/news.json?site=a").body).at("headlines").size() == 300);
  CHECK(http_get(nd.port, "/news.json?limit=550").body.find("\"next\"") != std::string::npos);
  CHECK(http_get(nd.port, "/news.json?before=12").status == 400);
  CHECK(http_get(nd.port, "/news.json?before=x.1").status == 400);
}

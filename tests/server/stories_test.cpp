// End-to-end: stories through every output of the real binary (Splash stand-in, real sockets).
// Views are rebuilt in the background after a change, so they are read with eventually().
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <map>
#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

const json* headline_titled(const json& news, const std::string& title) {
  for (const auto& h : news.at("headlines"))
    if (h.at("title") == title)
      return &h;
  return nullptr;
}

} // namespace

TEST_CASE("every headline names its story; story= shows a story's whole coverage, 404 for an "
          "unknown one, 400 for a malformed one") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "Bridge opens"},
                                                                {"/2/index.html", "Rain ahead"}})));
  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/3/index.html", "Vote today"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  json news;
  REQUIRE(eventually([&] {
    news = news_json(nd.port);
    return news.at("headlines").size() == 3;
  }));
  CHECK(news.at("stories").is_array());
  for (const auto& h : news.at("headlines")) {
    REQUIRE(h.contains("story"));
    CHECK(h.at("story").get<std::int64_t>() > 0);
  }
  const auto* bridge = headline_titled(news, "Bridge opens");
  REQUIRE(bridge);
  const auto story = std::to_string(bridge->at("story").get<std::int64_t>());

  auto coverage = news_json(nd.port, "?story=" + story);
  REQUIRE(!coverage.at("headlines").empty());
  CHECK(headline_titled(coverage, "Bridge opens"));
  for (const auto& h : coverage.at("headlines"))
    CHECK(std::to_string(h.at("story").get<std::int64_t>()) == story);
  CHECK(coverage.at("stories").is_array());
  auto page = http_get(nd.port, "/news?story=" + story);
  CHECK(page.status == 200);
  CHECK(page.body.find("Bridge opens") != std::string::npos);
  CHECK(page.body.find("Vote today") == std::string::npos);
  CHECK(page.body.find("One story, told by") != std::string::npos);
  auto atom = http_get(nd.port, "/news.atom?story=" + story);
  CHECK(atom.status == 200);
  CHECK(atom.body.find("Bridge opens") != std::string::npos);
  CHECK(atom.body.find("Vote today") == std::string::npos);

  // The site drops the headline: the page no longer shows it, its story's coverage (read from
  // the store) still does.
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/2/index.html", "Rain ahead"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  REQUIRE(eventually([&] { return !headline_titled(news_json(nd.port), "Bridge opens"); }));
  CHECK(headline_titled(news_json(nd.port, "?story=" + story), "Bridge opens"));

  auto unknown = http_get(nd.port, "/news.json?story=987654321");
  CHECK(unknown.status == 404);
  CHECK(unknown.body.find("no story 987654321") != std::string::npos);
  CHECK(http_get(nd.port, "/news.atom?story=987654321").status == 404);
  for (const char* bad : {"/news.json?story=abc", "/news?story=0", "/news.atom?story=-1"}) {
    auto refused = http_get(nd.port, bad);
    CHECK_MESSAGE(refused.status == 400, bad);
    CHECK(refused.body.find("story:") != std::string::npos);
  }
  CHECK(nd.process->stop(SIGTERM) == 0);
}

// Needs the real story assignment (server/stories/story_assigner.cpp): with the placeholder,
// which starts a story per headline, it fails. Any assignment groups identical titles.
TEST_CASE("two sites with the same headline tell one story: in /news.json, on the page and over "
          "/events") {
  splash_standin splash;
  const std::string title = "Volcano erupts near Naples, thousands evacuated";
  splash.set(
      "https://a.cnn.com/",
      standin_page::page(cnn_page({{"/v/index.html", title}, {"/w/index.html", "Markets rally"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/x/index.html", "Sports results"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 3; }));
  sse_client live(nd.port);
  REQUIRE(live.wait_for("retry: 3000"));

  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/x/index.html", "Sports results"},
                                                                {"/naples/index.html", title}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=b").status == 202);
  REQUIRE(live.wait_for("Naples"));
  CHECK(live.wait_for("event: story", 2s));
  CHECK(live.received.find("\"sources\":2") != std::string::npos);

  json news;
  REQUIRE(eventually([&] {
    news = news_json(nd.port);
    return news.at("headlines").size() == 4;
  }));
  REQUIRE(news.at("stories").size() == 1);
  const auto& story = news.at("stories")[0];
  CHECK(story.at("sources") == 2);
  REQUIRE(story.at("headlines").size() == 2);
  for (const auto& h : story.at("headlines"))
    CHECK(h.at("title") == title);
  const auto id = std::to_string(story.at("id").get<std::int64_t>());
  CHECK(news_json(nd.port, "?story=" + id).at("headlines").size() == 2);
  CHECK(news_json(nd.port, "?site=b").at("stories").empty()); // one site's view: one source
  CHECK(news_json(nd.port, "?q=naples").at("stories").size() == 1);
  CHECK(eventually([&] {
    return http_get(nd.port, "/news").body.find("href=\"/news?story=" + id + "\">2 sources</a>") !=
           std::string::npos;
  }));
}

TEST_CASE("headlines in other languages: pages' <html lang> reach the store; the issue's Japanese "
          "and French pairs are one story each; q=地震 and q=erdbeben find their words") {
  // The CNN markup, in the language a page declares.
  auto in = [](const std::string& lang,
               const std::vector<std::pair<std::string, std::string>>& stories) {
    auto html = cnn_page(stories);
    return html.replace(0, 6, "<html lang=\"" + lang + "\">");
  };
  splash_standin splash;
  splash.set(
      "https://a.cnn.com/",
      standin_page::page(in("ja", {{"/1/index.html", "東京で震度5強の地震　けが人の情報なし"},
                                   {"/2/index.html", "日経平均、一時500円安　米金利上昇を嫌気"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(
                 in("ja", {{"/3/index.html", "東京都で震度5強の地震、けが人の情報なし 気象庁"},
                           {"/4/index.html", "京都で桜が満開に"}})));
  splash.set("https://c.cnn.com/",
             standin_page::page(in(
                 "fr", {{"/5/index.html", "Séisme de magnitude 5 à Tokyo : aucun blessé signalé"},
                        {"/6/index.html", "Ligue 1 : le PSG s'impose à Marseille"}})));
  splash.set(
      "https://d.cnn.com/",
      standin_page::page(
          in("fr-FR",
             {{"/7/index.html", "Tokyo : un séisme de magnitude 5 secoue la capitale japonaise"},
              {"/8/index.html", "Grève à la SNCF : le trafic perturbé ce week-end"}})));
  splash.set("https://e.cnn.com/",
             standin_page::page(
                 in("de", {{"/9/index.html", "Zahl der Opfer des Erdbebens in der Türkei steigt"},
                           {"/10/index.html", "Bundestag beschließt neues Heizungsgesetz"}})));
  json sites = json::array();
  for (const char* name : {"a", "b", "c", "d", "e"})
    sites.push_back(site(name, "cnn", std::string("https://") + name + ".cnn.com/"));
  newsdesk_process nd(json{{"splash_url", splash.base_url()}, {"sites", sites}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  json news;
  REQUIRE(eventually([&] {
    news = news_json(nd.port);
    return news.at("headlines").size() == 10;
  }));
  // By a title's words (the page's whitespace, an ideographic space among it, is collapsed).
  auto story_of = [&](const std::string& start) {
    for (const auto& h : news.at("headlines"))
      if (h.at("title").get<std::string>().rfind(start, 0) == 0)
        return h.at("story").get<std::int64_t>();
    FAIL("no headline begins with " << start);
    return std::int64_t{0};
  };
  CHECK(story_of("東京で震度5強の地震") == story_of("東京都で震度5強の地震"));
  CHECK(story_of("Séisme de magnitude 5 à Tokyo : aucun blessé signalé") ==
        story_of("Tokyo : un séisme de magnitude 5 secoue la capitale japonaise"));
  // One event in two languages is two stories: no translation.
  CHECK(story_of("Séisme de magnitude 5 à Tokyo : aucun blessé signalé") !=
        story_of("東京で震度5強の地震"));

  std::vector<std::string> quake;
  const auto found = news_json(nd.port, "?q=%E5%9C%B0%E9%9C%87"); // 地震
  for (const auto& h : found.at("headlines"))
    quake.push_back(h.at("title"));
  std::sort(quake.begin(), quake.end());
  REQUIRE(quake.size() == 2);
  CHECK(quake[0].rfind("東京で震度5強の地震", 0) == 0);
  CHECK(quake[1].rfind("東京都で震度5強の地震", 0) == 0);
  // By word: 京都 (Kyoto) is its own headline's word, not the middle of 東京都.
  const auto kyoto = news_json(nd.port, "?q=%E4%BA%AC%E9%83%BD").at("headlines"); // 京都
  REQUIRE(kyoto.size() == 1);
  CHECK(kyoto[0].at("title") == "京都で桜が満開に");
  const auto erdbeben = news_json(nd.port, "?q=erdbeben").at("headlines");
  REQUIRE(erdbeben.size() == 1);
  CHECK(erdbeben[0].at("title") == "Zahl der Opfer des Erdbebens in der Türkei steigt");
  CHECK(news_json(nd.port, "?q=Erdbebens").at("headlines").size() == 1);
  CHECK(news_json(nd.port, "?q=seismes").at("headlines").size() == 2); // both French titles
}

namespace {

// Each headline of `sites` (by URL) and the story it is in now, read site by site.
std::map<std::string, std::int64_t> stories_of(unsigned short port,
                                               const std::vector<std::string>& sites) {
  std::map<std::string, std::int64_t> out;
  for (const auto& name : sites) {
    const auto news = news_json(port, "?site=" + name);
    for (const auto& h : news.at("headlines"))
      out[h.at("url").get<std::string>()] = h.at("story").get<std::int64_t>();
  }
  return out;
}

// `stories_of` once it has held still for a couple of seconds (views are rebuilt after changes).
std::map<std::string, std::int64_t> settled_stories(unsigned short port,
                                                    const std::vector<std::string>& sites) {
  auto last = stories_of(port, sites);
  for (int still = 0; still < 4;) {
    std::this_thread::sleep_for(500ms);
    auto now = stories_of(port, sites);
    still = now == last ? still + 1 : 0;
    last = std::move(now);
  }
  return last;
}

} // namespace

TEST_CASE("one hostile feed cannot steer other sites' stories: titles joined in pairs and real "
          "titles repeated change none of them, and its removal leaves nothing merged") {
  // Three real front pages (detected: site files with a name and a URL).
  splash_standin splash;
  const std::vector<std::pair<std::string, std::string>> pages = {
      {"bbcfront", "bbc-2025-news-rendered.html"},
      {"cnnfront", "cnn-2025-home-rendered.html"},
      {"apfront", "apnews-2026-world-rendered.html"}};
  temp_dir sites;
  std::vector<std::string> names;
  for (const auto& [name, file] : pages) {
    bool found = false;
    auto html = fixture(file, found);
    if (!found)
      return; // fixture() fails the test when pages are required (CI)
    const auto url = "https://www." + name + ".example/";
    splash.set(url, standin_page::page(html));
    sites.write(name + ".json", json{{"name", name}, {"url", url}}.dump());
    names.push_back(name);
  }
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"site_files_dir", sites.path.string()},
                           {"refresh", {{"manual_min_interval", 0}}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // A first answer can take long (a cold start waits for every site's first try, the built-in
  // ones' failures included; under TSan on a loaded machine past send_request's deadline): no
  // answer yet is "not yet".
  REQUIRE(eventually(
      [&] {
        for (const auto& name : names) {
          const auto answer = http_get(nd.port, "/news.json?site=" + name);
          if (answer.status != 200 || json::parse(answer.body).at("headlines").size() < 10)
            return false;
        }
        return true;
      },
      60s));
  const auto before = settled_stories(nd.port, names);
  std::map<std::string, std::string> titles; // URL -> title, of the honest headlines
  std::map<std::string, std::string> site_of;
  for (const auto& name : names) {
    const auto news = news_json(nd.port, "?site=" + name);
    for (const auto& h : news.at("headlines")) {
      titles[h.at("url")] = h.at("title");
      site_of[h.at("url")] = name;
    }
  }
  REQUIRE(titles.size() >= 60);

  // The hostile feed: 40 items each joining the titles of two headlines of two other sites in
  // different stories, then each honest title again with a number after it.
  std::vector<std::string> urls;
  for (const auto& [url, title] : titles)
    urls.push_back(url);
  std::string feed = "<rss version=\"2.0\"><channel><title>Bridges</title>";
  int items = 0;
  for (std::size_t i = 0; i < urls.size() && items < 40; ++i)
    for (std::size_t j = urls.size() - 1; j > i && items < 40; --j)
      if (site_of[urls[i]] != site_of[urls[j]] && before.at(urls[i]) != before.at(urls[j])) {
        feed += "<item><title><![CDATA[" + titles[urls[i]] + " " + titles[urls[j]] +
                "]]></title><link>https://bridges.example/b/" + std::to_string(++items) +
                "</link></item>";
        break;
      }
  REQUIRE(items == 40);
  int n = 0;
  for (const auto& url : urls) {
    const auto number = std::to_string(++n);
    feed += "<item><title><![CDATA[" + titles[url] + " " + number +
            "]]></title><link>https://bridges.example/r/" + number + "</link></item>";
  }
  splash.set_origin("bridges.xml", feed + "</channel></rss>");
  sites.write(
      "bridges.json",
      json{{"name", "bridges"}, {"feed", splash.base_url() + "/origin/bridges.xml"}}.dump());
  REQUIRE(::kill(nd.process->pid(), SIGHUP) == 0);
  REQUIRE(eventually(
      [&] {
        // 400 until the reload has read the new site file.
        auto answer = http_get(nd.port, "/news.json?site=bridges");
        return answer.status == 200 && json::parse(answer.body).at("headlines").size() ==
                                           static_cast<std::size_t>(items + n);
      },
      40s));
  // Every other site's headline is in the story it was in: nothing merged, nothing moved.
  auto during = settled_stories(nd.port, names);
  CHECK(during == before);
  std::size_t moved = 0;
  for (const auto& [url, story] : before)
    if (during.count(url) == 0 || during.at(url) != story) {
      ++moved;
      MESSAGE("moved: " << titles[url] << " (" << site_of[url] << ") from story " << story << " to "
                        << (during.count(url) ? during.at(url) : 0));
      for (const auto& [other, s] : before)
        if (s == story || (during.count(url) && s == during.at(url)))
          MESSAGE("  before in " << s << ": " << titles[other]);
    }
  MESSAGE(moved << " of " << before.size() << " other sites' headlines changed story");

  // And with the site gone, the other sites' stories are as they were.
  std::filesystem::remove(sites.path / "bridges.json");
  REQUIRE(::kill(nd.process->pid(), SIGHUP) == 0);
  REQUIRE(
      eventually([&] { return http_get(nd.port, "/news.json?site=bridges").status != 200; }, 20s));
  CHECK(settled_stories(nd.port, names) == before);
}

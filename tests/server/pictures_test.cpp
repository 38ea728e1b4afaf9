// Pictures end to end: two feeds tell the same stories with their items' images; newsdesk fetches
// the cards' leads' images once, makes them small WebP, serves them itself and shows them on the
// card with their size and the title as alt; an image that is HTML, or a bomb, is refused and
// logged by site, and the sites' headlines stay; a setting turns pictures off.
#include "server/pictures/picture_codec.hpp"

#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/page_text.hpp"
#include "tests/support/splash_standin.hpp"
#include "tests/support/sse_client.hpp"
#include "tests/support/test_images.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <regex>

using namespace newsdesk::server;
using namespace newsdesk::testing;

namespace {

const std::string dam = "Dam bursts above Porto, valley evacuated";
const std::string storm = "Storm closes every port on the northern coast";

std::string feed(const std::string& name, const std::string& items) {
  return "<rss version=\"2.0\" xmlns:media=\"http://search.yahoo.com/mrss/\"><channel><title>" +
         name + "</title>" + items + "</channel></rss>";
}

std::string item(const std::string& title, const std::string& link, const std::string& image) {
  return "<item><title>" + title + "</title><link>" + link +
         "</link><media:content medium=\"image\" url=\"" + image + "\"/></item>";
}

// Two feed sites, "one" and "two", telling the dam (one.jpg, two.png) and the storm (html.jpg:
// an error page; bomb.png: a header declaring 60,000 x 60,000 pixels).
struct two_feeds {
  splash_standin origin;
  temp_dir sites;
  std::string jpeg = test_jpeg(1600, 900);

  two_feeds() {
    const auto images = origin.base_url() + "/origin/";
    origin.set_origin("one.jpg", jpeg);
    origin.set_origin("two.png", test_png(600, 400));
    origin.set_origin("html.jpg", "<!DOCTYPE html><html><body>Not found</body></html>");
    origin.set_origin("bomb.png", declared_png(60'000, 60'000));
    origin.set_origin(
        "one.xml", feed("one", item(dam, "https://one.example/dam", images + "one.jpg") +
                                   item(storm, "https://one.example/storm", images + "html.jpg")));
    origin.set_origin(
        "two.xml", feed("two", item(dam, "https://two.example/dam", images + "two.png") +
                                   item(storm, "https://two.example/storm", images + "bomb.png")));
    for (const std::string name : {"one", "two"})
      sites.write(
          name + ".json",
          json{{"name", name}, {"feed", origin.base_url() + "/origin/" + name + ".xml"}}.dump());
  }

  json config(bool pictures) const {
    // The two feeds only, not every scraper newsdesk has: a Chromium site's failed first tries
    // (a cold start's page waits for them) would take most of the test's time.
    return json{{"sites", {"one", "two"}},
                {"site_files_dir", sites.path.string()},
                {"refresh", {{"manual_min_interval", 0}}},
                {"pictures", pictures}};
  }
};

// The lead pictures on the page: each <img class="lead-picture">'s attributes.
struct shown_picture {
  std::string name, width, height, alt, loading;
};
std::vector<shown_picture> lead_pictures(const std::string& page) {
  static const std::regex img(
      "<img class=\"lead-picture\" src=\"/pictures/([0-9a-f]+\\.webp)\" width=\"([0-9]+)\" "
      "height=\"([0-9]+)\" alt=\"([^\"]*)\" loading=\"(eager|lazy)\" decoding=\"async\">");
  std::vector<shown_picture> out;
  for (std::sregex_iterator m(page.begin(), page.end(), img), end; m != end; ++m)
    out.push_back({(*m)[1], (*m)[2], (*m)[3], (*m)[4], (*m)[5]});
  return out;
}

bool refused(const std::string& log, const std::string& site, const std::string& why) {
  for (auto at = log.find("msg=\"picture refused\" site=" + site); at != std::string::npos;
       at = log.find("msg=\"picture refused\" site=" + site, at + 1))
    if (log.substr(at, log.find('\n', at) - at).find(why) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("pictures: a card's lead image is fetched once, made small, served by newsdesk and "
          "shown with its size and alt; HTML and a bomb are refused and the sites stay") {
  two_feeds f;
  newsdesk_process nd(f.config(true));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // An open page: it hears of each picture as it is made (the headlines arrived before it).
  std::optional<sse_client> live(std::in_place, nd.port);

  // The dam's card shows one of its two pictures (its lead's); the storm's shows none.
  std::vector<shown_picture> shown;
  REQUIRE_MESSAGE(eventually([&] {
                    shown = lead_pictures(http_get(nd.port, "/news").body);
                    return !shown.empty();
                  }),
                  nd.log());
  REQUIRE(shown.size() == 1);
  CHECK(shown[0].alt == dam);
  CHECK(shown[0].loading == "eager");
  CHECK_MESSAGE(live->wait_for("\"name\":\"" + shown[0].name + "\""), live->received);
  CHECK(live->received.find("event: picture\ndata: {\"id\":") != std::string::npos);
  // The JSON carries it with its headline (its representation is rebuilt after the page's).
  const auto json_has_picture = [&] {
    const auto news = news_json(nd.port);
    return std::count_if(
               news.at("headlines").begin(), news.at("headlines").end(), [&](const json& h) {
                 return h.contains("picture") && h.at("picture").at("name") == shown[0].name &&
                        h.at("picture").at("width") == std::stoi(shown[0].width);
               }) == 1;
  };
  CHECK(eventually(json_has_picture));
  CHECK(((shown[0].width == "480" && shown[0].height == "270") ||
         (shown[0].width == "480" && shown[0].height == "320")));

  auto served = http_get(nd.port, "/pictures/" + shown[0].name);
  REQUIRE(served.status == 200);
  CHECK(served.header("Content-Type") == "image/webp");
  CHECK(served.body.substr(8, 4) == "WEBP");
  CHECK(served.body.size() < 40 * 1024);
  CHECK(served.header("Cache-Control") == "public, max-age=31536000, immutable");
  CHECK(served.header("X-Content-Type-Options") == "nosniff");
  REQUIRE_FALSE(served.header("ETag").empty());
  CHECK(send_request(nd.port, "GET", "/pictures/" + shown[0].name,
                     {{"If-None-Match", served.header("ETag")}})
            .status == 304);
  CHECK(http_get(nd.port, "/pictures/0123456789abcdef0123456789abcdef.webp").status == 404);
  CHECK(http_get(nd.port, "/pictures/../store.db").status == 404);

  // The other two are refused, each logged with its site and what it was.
  CHECK_MESSAGE(eventually([&] {
                  return refused(nd.log(), "one", "not a JPEG, PNG, GIF or WebP image: HTML");
                }),
                nd.log());
  CHECK_MESSAGE(eventually([&] { return refused(nd.log(), "two", "60000 x 60000 pixels"); }),
                nd.log());
  CHECK(news_json(nd.port).at("headlines").size() == 4);

  // Each image was fetched once: another round of refreshes fetches none again.
  const auto fetched = [&] {
    return f.origin.requests("/origin/one.jpg") + f.origin.requests("/origin/two.png");
  };
  CHECK(eventually([&] { return fetched() == 2; }));
  CHECK(f.origin.requests("/origin/html.jpg") == 1);
  CHECK(f.origin.requests("/origin/bomb.png") == 1);
  const auto feeds_read = f.origin.requests("/origin/one.xml");
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE(eventually([&] { return f.origin.requests("/origin/one.xml") > feeds_read; }));
  CHECK(lead_pictures(http_get(nd.port, "/news").body).size() == 1);
  CHECK(fetched() == 2);
  // The page is closed first: a stream whose client keeps it open holds a shutdown until its
  // deadline.
  live.reset();
  CHECK(nd.process->stop(SIGTERM) == 0);
}

TEST_CASE("pictures: the setting off fetches no image and shows none") {
  two_feeds f;
  newsdesk_process nd(f.config(false));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // The cards are there (both stories told by both sites), each without a picture.
  std::string page;
  REQUIRE(eventually([&] {
    page = http_get(nd.port, "/news").body;
    return count(without_templates(page), "<li class=\"top-story\"") == 2;
  }));
  CHECK(lead_pictures(page).empty());
  CHECK(page.find("/pictures/") == std::string::npos);
  // Pictures are asked for as a change is applied: by the time a refresh's change is shown, any
  // fetch would have been asked for.
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE(eventually([&] { return f.origin.requests("/origin/one.xml") >= 2; }));
  for (auto image : {"one.jpg", "two.png", "html.jpg", "bomb.png"})
    CHECK(f.origin.requests(std::string("/origin/") + image) == 0);
  CHECK(nd.process->stop(SIGTERM) == 0);
}

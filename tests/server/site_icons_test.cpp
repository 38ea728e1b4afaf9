// Sites' icons end to end: found on the page a refresh read (or the origin's /favicon.ico),
// fetched directly, checked, stored, served at /sites/NAME/icon and shown on the page; refused
// icons are logged with the site's name and never cost a headline. Plus the pure parts: where an
// icon is, what its bytes are.
#include "scrapers/site_icon.hpp"
#include "server/http/http_message.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/site_icons.hpp"

#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/page_text.hpp"
#include "tests/support/splash_standin.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;
using namespace newsdesk::testing;
using newsdesk::scrapers::icon_urls;

namespace {

std::string big_endian32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}
std::string little_endian(std::uint32_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>(v >> (8 * i));
  return out;
}

// The leading bytes of a PNG declaring `width` x `height` pixels: signature, then IHDR.
std::string png_of(std::uint32_t width, std::uint32_t height) {
  return std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16) + big_endian32(width) +
         big_endian32(height) + std::string("\x08\x06\0\0\0\0\0\0\0", 9) + std::string(40, 'p');
}

const std::string png = png_of(16, 16);
const std::string ico = std::string("\0\0\1\0\1\0\x10\x10", 8) + std::string(40, 'i');

// CNN's markup (cnn_page) with `head` inside its <head>.
std::string page_with_head(const std::string& head, const std::string& title) {
  auto html = cnn_page({{"https://edition.cnn.com/2015/a/index.html", title}});
  return html.replace(html.find("</head>"), 0, head);
}

} // namespace

TEST_CASE("site icons: a page's icon link, resolved, best first; the origin's favicon after") {
  const std::string base = "https://news.example/world/index.html";
  CHECK(icon_urls("<html><head><link rel=icon href=/i.png></head>", base) ==
        std::vector<std::string>{"https://news.example/i.png", "https://news.example/favicon.ico"});
  CHECK(icon_urls("<html><head><title>x</title></head><body></body>", base) ==
        std::vector<std::string>{"https://news.example/favicon.ico"});
  // A PNG of 32 px or more wins over the first link.
  CHECK(icon_urls(R"(<head><link rel="shortcut icon" href="small.ico">
      <link rel="icon" type="image/png" sizes="16x16" href="16.png">
      <link rel="icon" type="image/png" sizes="192x192" href="192.png"></head>)",
                  base)
            .front() == "https://news.example/world/192.png");
  CHECK(icon_urls(R"(<head><link rel="apple-touch-icon" href="//cdn.example/t.png"></head>)", base)
            .front() == "https://cdn.example/t.png");
  // Links that are not http(s) are not fetched.
  CHECK(icon_urls(R"(<head><link rel=icon href="data:,"></head>)", base) ==
        std::vector<std::string>{"https://news.example/favicon.ico"});
  // Feeds: RSS <image><url>, Atom <icon>.
  CHECK(icon_urls(R"(<?xml version="1.0"?><rss><channel><image><url>https://f.example/logo.png</url>
      </image></channel></rss>)",
                  "https://f.example/rss.xml")
            .front() == "https://f.example/logo.png");
  CHECK(icon_urls(R"(<feed xmlns="http://www.w3.org/2005/Atom"><icon>/a.ico</icon></feed>)",
                  "https://f.example/atom.xml")
            .front() == "https://f.example/a.ico");
  // A feed site's home page gives the fallback icon: the feed's host may be a feed service.
  CHECK(icon_urls("<rss><channel></channel></rss>", "https://feeds.example/site",
                  "https://www.site.example/news") ==
        std::vector<std::string>{"https://www.site.example/favicon.ico"});
  CHECK(icon_urls(R"(<feed xmlns="http://www.w3.org/2005/Atom"><icon>/a.ico</icon></feed>)",
                  "https://feeds.example/site", "https://www.site.example/")
            .front() == "https://feeds.example/a.ico");
  CHECK(icon_urls("<html></html>", "file:///etc/passwd").empty());
}

TEST_CASE("site icons: only real images are kept, told by their bytes") {
  CHECK(check_icon(png).content_type == "image/png");
  CHECK(check_icon(ico).content_type == "image/x-icon");
  CHECK(check_icon(std::string("GIF89a\x10\0\x10\0....", 14)).content_type == "image/gif");
  CHECK(check_icon(std::string("\xff\xd8\xff\xe0\0\x04..\xff\xc0\0\x11\x08\0\x20\0\x20", 17))
            .content_type == "image/jpeg");
  CHECK(check_icon(std::string("RIFF\x10\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0", 24) +
                   little_endian(31, 3) + little_endian(31, 3))
            .content_type == "image/webp");
  auto svg = check_icon("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\">");
  CHECK(svg.content_type.empty());
  CHECK(svg.error.find("SVG") != std::string::npos);
  auto html = check_icon("\n<!DOCTYPE html><html><body>Not found</body></html>");
  CHECK(html.content_type.empty());
  CHECK(html.error.find("HTML") != std::string::npos);
  CHECK(check_icon("").content_type.empty());
  CHECK(check_icon("plain text").content_type.empty());
  CHECK(icon_etag(png) == icon_etag(png));
  CHECK(icon_etag(png) != icon_etag(ico));
}

TEST_CASE("site icons: an image declaring more than 1,024 pixels on a side, or none, or with its "
          "header cut short, is refused") {
  const auto refusal = [](const std::string& body) {
    auto check = check_icon(body);
    return check.content_type.empty() ? check.error : "accepted as " + check.content_type;
  };
  CHECK(refusal(png_of(1024, 1024)) == "accepted as image/png");
  CHECK(refusal(png_of(100'000, 100'000)) ==
        "it declares 100000 x 100000 pixels (at most 1024 on a side)");
  CHECK(refusal(png_of(16, 1025)).find("16 x 1025 pixels") != std::string::npos);
  CHECK(refusal(png_of(0, 16)).find("0 x 16 pixels") != std::string::npos);
  CHECK(refusal(png_of(16, 16).substr(0, 20)) == "its PNG header is missing or cut short");
  // GIF: the logical screen.
  CHECK(refusal(std::string("GIF89a\xff\xff\x10\0rest", 14)).find("65535 x 16 pixels") !=
        std::string::npos);
  CHECK(refusal("GIF89a\x10").find("GIF header") != std::string::npos);
  // JPEG: the frame header after other segments (APP0 here); SOF2 (progressive) counts too.
  const std::string app0 = std::string("\xff\xd8\xff\xe0\0\x06JFIF", 10);
  CHECK(refusal(app0 + std::string("\xff\xc2\0\x11\x08\x27\x10\0\x10", 9)) // 10000 high
            .find("16 x 10000 pixels") != std::string::npos);
  CHECK(refusal(app0 + std::string("\xff\xda\0\x08scan", 8)).find("JPEG header") !=
        std::string::npos);
  // ICO: the largest entry, and a PNG an entry holds says what it really is.
  const std::string ico_head = std::string("\0\0\1\0\1\0\0\0\0\0\1\0\x20\0", 14);
  CHECK(refusal(ico_head + little_endian(40, 4) + little_endian(22, 4) + std::string(40, 'i')) ==
        "accepted as image/x-icon"); // 256 x 256, said by its zero bytes
  CHECK(refusal(ico_head + little_endian(66, 4) + little_endian(22, 4) + png_of(50'000, 16))
            .find("50000 x 16 pixels") != std::string::npos);
  CHECK(refusal(std::string("\0\0\1\0\3\0", 6) + std::string(16, '\x10')).find("ICO header") !=
        std::string::npos); // three entries said, one there
  // WebP: lossy (VP8), lossless (VP8L) and extended (VP8X).
  const std::string riff = std::string("RIFF\x10\0\0\0WEBP", 12);
  CHECK(refusal(riff + "VP8 " + std::string(7, '\0') + "\x9d\x01\x2a" + little_endian(2000, 2) +
                little_endian(16, 2) + "..")
            .find("2000 x 16 pixels") != std::string::npos);
  CHECK(refusal(riff + "VP8L" + std::string(4, '\0') + "\x2f" +
                little_endian((15u) | (4999u << 14), 4) + ".....")
            .find("16 x 5000 pixels") != std::string::npos);
  CHECK(refusal(riff + "VP8X" + std::string(8, '\0') + little_endian(99'999, 3) +
                little_endian(99'999, 3))
            .find("100000 x 100000 pixels") != std::string::npos);
  CHECK(refusal(riff + "VP8 ").find("WebP header") != std::string::npos);
}

TEST_CASE("site icons: the icon route's names and answers") {
  CHECK(icon_path_site("/sites/cnn/icon") == "cnn");
  CHECK(icon_path_site("/sites/al-jazeera_2/icon") == "al-jazeera_2");
  for (auto bad : {"/sites//icon", "/sites/CNN/icon", "/sites/../icon", "/sites/cnn",
                   "/sites/cnn/icon/x", "/sites/a%2fb/icon"})
    CHECK_MESSAGE(icon_path_site(bad).empty(), bad);

  http_request req;
  CHECK(icon_response(nullptr, req).status == 404);
  site_icon icon{"cnn", "image/png", png, icon_etag(png), 1, ""};
  auto ok = icon_response(&icon, req);
  CHECK(ok.status == 200);
  CHECK(ok.content_type == "image/png");
  CHECK(ok.body == png);
  CHECK(ok.header("X-Content-Type-Options") == std::optional<std::string_view>("nosniff"));
  CHECK(ok.header("ETag") == std::optional<std::string_view>(icon.etag));
  CHECK(ok.header("Cache-Control") == std::optional<std::string_view>("public, max-age=86400"));
  req.headers.emplace_back("If-None-Match", icon.etag);
  auto same = icon_response(&icon, req);
  CHECK(same.status == 304);
  CHECK(same.body.empty());
}

TEST_CASE("site icons: fetched from the page's link or /favicon.ico, served, shown, kept") {
  splash_standin origin;
  origin.set_origin("linked", page_with_head("<link rel=\"icon\" href=\"/origin/linked.png\">",
                                             "Linked headline"));
  origin.set_origin("linked.png", png);
  origin.set_origin("plain", page_with_head("", "Plain headline"));
  origin.set_root_file("/favicon.ico", ico);
  temp_dir dir;
  const auto store = (dir.path / "store.db").string();
  const json cfg{{"renderer", "direct"},
                 {"sites",
                  {site("linked", "cnn", origin.base_url() + "/origin/linked"),
                   site("plain", "cnn", origin.base_url() + "/origin/plain")}}};
  {
    newsdesk_process nd(cfg, {"--store", store});
    REQUIRE_MESSAGE(nd.port != 0, nd.log());
    REQUIRE_MESSAGE(
        eventually([&] { return http_get(nd.port, "/sites/plain/icon").status == 200; }), nd.log());
    REQUIRE_MESSAGE(
        eventually([&] { return http_get(nd.port, "/sites/linked/icon").status == 200; }),
        nd.log());
    auto linked = http_get(nd.port, "/sites/linked/icon");
    CHECK(linked.body == png);
    CHECK(linked.header("Content-Type") == "image/png");
    CHECK(linked.header("X-Content-Type-Options") == "nosniff");
    CHECK(linked.header("Cache-Control") == "public, max-age=86400");
    REQUIRE_FALSE(linked.header("ETag").empty());
    CHECK(send_request(nd.port, "GET", "/sites/linked/icon",
                       {{"If-None-Match", linked.header("ETag")}})
              .status == 304);
    auto plain = http_get(nd.port, "/sites/plain/icon");
    CHECK(plain.body == ico);
    CHECK(plain.header("Content-Type") == "image/x-icon");
    CHECK(http_get(nd.port, "/sites/nosuch/icon").status == 404);
    CHECK(http_get(nd.port, "/sites/../icon").status == 404);

    // The page shows both icons, decorative, and nothing as data:,.
    REQUIRE(eventually([&] {
      auto page = http_get(nd.port, "/news").body;
      return page.find("src=\"/sites/plain/icon\"") != std::string::npos &&
             page.find("src=\"/sites/linked/icon\"") != std::string::npos;
    }));
    auto page = http_get(nd.port, "/news").body;
    CHECK(page.find("<img class=\"site-icon\" src=\"/sites/linked/icon\" alt=\"\" width=\"16\" "
                    "height=\"16\">") != std::string::npos);
    CHECK(page.find("data:,") == std::string::npos);
    CHECK(without_templates(page).find("class=\"site-mark\"") == std::string::npos);
    CHECK(nd.process->stop(SIGTERM) == 0);
  }
  CHECK(origin.requests("/origin/linked.png") == 1);
  CHECK(origin.requests("/favicon.ico") == 1);

  // A restart serves the stored icons at once and fetches none again within the day.
  newsdesk_process again(cfg, {"--store", store});
  REQUIRE_MESSAGE(again.port != 0, again.log());
  CHECK(http_get(again.port, "/sites/linked/icon").body == png);
  CHECK(http_get(again.port, "/sites/plain/icon").body == ico);
  REQUIRE(eventually([&] {
    return json::parse(http_get(again.port, "/news.json").body).at("headlines").size() == 2;
  }));
  CHECK(eventually([&] {
    return http_get(again.port, "/news").body.find("src=\"/sites/linked/icon\"") !=
           std::string::npos;
  }));
  CHECK(origin.requests("/origin/linked.png") == 1);
  CHECK(origin.requests("/favicon.ico") == 1);
}

TEST_CASE("site icons: too large, HTML, SVG and oversized-image icons are refused, logged by site; "
          "headlines stay") {
  splash_standin origin; // no /favicon.ico: the fallback answers 404
  origin.set_origin("big", page_with_head("<link rel=icon href=/origin/big.png>", "Big headline"));
  origin.set_origin("big.png", png + std::string(200 * 1024, 'x'));
  origin.set_origin("html",
                    page_with_head("<link rel=icon href=/origin/err.png>", "Html headline"));
  origin.set_origin("err.png", "<!DOCTYPE html><html><body>Error</body></html>");
  origin.set_origin("huge",
                    page_with_head("<link rel=icon href=/origin/huge.png>", "Huge headline"));
  origin.set_origin("huge.png", png_of(100'000, 100'000)); // 73 bytes
  origin.set_origin("svg", page_with_head("<link rel=icon href=/origin/logo.svg>", "Svg headline"));
  origin.set_origin("logo.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)"
                                "</script></svg>");
  newsdesk_process nd(json{{"renderer", "direct"},
                           {"sites",
                            {site("big", "cnn", origin.base_url() + "/origin/big"),
                             site("html", "cnn", origin.base_url() + "/origin/html"),
                             site("huge", "cnn", origin.base_url() + "/origin/huge"),
                             site("svg", "cnn", origin.base_url() + "/origin/svg")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  for (auto [site, why] :
       {std::pair{"big", "larger than 100 KB"}, std::pair{"html", "HTML page, not an image"},
        std::pair{"huge", "it declares 100000 x 100000 pixels (at most 1024 on a side)"},
        std::pair{"svg", "SVG image (refused"}}) {
    CHECK_MESSAGE(
        eventually([&] {
          auto log = nd.log();
          for (auto at = log.find("msg=\"site icon refused\" site=" + std::string(site));
               at != std::string::npos;
               at = log.find("msg=\"site icon refused\" site=" + std::string(site), at + 1))
            if (log.substr(at, log.find('\n', at) - at).find(why) != std::string::npos)
              return true;
          return false;
        }),
        site, "\n", nd.log());
  }
  // The fallback's 404 is logged too, and then the attempt is over: nothing stored.
  CHECK(eventually([&] { return count(nd.log(), "the server answered HTTP 404") >= 4; }));
  // Icons are fetched once a site's refresh is in, while its views are still being rebuilt: the
  // views are waited for.
  CHECK(eventually([&] {
    return json::parse(http_get(nd.port, "/news.json").body).at("headlines").size() == 4;
  }));
  for (auto name : {"big", "html", "huge", "svg"})
    CHECK(http_get(nd.port, "/sites/" + std::string(name) + "/icon").status == 404);
  std::string page;
  CHECK(eventually([&] {
    page = http_get(nd.port, "/news").body;
    return page.find("Big headline") != std::string::npos &&
           page.find("Html headline") != std::string::npos &&
           page.find("Huge headline") != std::string::npos &&
           page.find("Svg headline") != std::string::npos;
  }));
  CHECK(page.find("class=\"site-icon\"") == std::string::npos);
  CHECK(page.find("<span class=\"site-mark\" aria-hidden=\"true\">") != std::string::npos);
  CHECK(page.find("data:,") == std::string::npos);
  CHECK(nd.process->stop(SIGTERM) == 0);
}

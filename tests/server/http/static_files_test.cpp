#include "server/http/static_files.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace newsdesk::server;
namespace fs = std::filesystem;

namespace {
struct static_dir {
  fs::path root = fs::temp_directory_path() / "newsdesk-static-test";
  fs::path outside = fs::temp_directory_path() / "newsdesk-static-secret.txt";
  static_dir() {
    fs::remove_all(root);
    fs::create_directories(root / "css");
    std::ofstream(root / "css" / "site.css") << "body{}";
    std::ofstream(root / "app.js") << "1";
    std::ofstream(root / ".env") << "SECRET";
    std::ofstream(outside) << "SECRET";
    fs::create_symlink(outside, root / "link.txt");
  }
  ~static_dir() {
    fs::remove_all(root);
    fs::remove(outside);
  }
};
} // namespace

TEST_CASE("static files are served with their MIME type, an ETag and Cache-Control") {
  static_dir d;
  static_files files(d.root);
  auto res = files.serve("css/site.css", {});
  CHECK(res.status == 200);
  REQUIRE(res.file_body);
  CHECK(res.file_body->bytes() == "body{}");
  CHECK(res.content_type == "text/css; charset=utf-8");
  CHECK(files.serve("app.js", {}).content_type == "text/javascript; charset=utf-8");
}

TEST_CASE("If-None-Match with the current ETag gives 304 without a body") {
  static_dir d;
  static_files files(d.root);
  auto first = files.serve("css/site.css", {});
  const std::string etag(first.header("ETag").value_or(""));
  REQUIRE(!etag.empty());
  http_request req;
  req.headers.emplace_back("if-none-match", etag);
  auto second = files.serve("css/site.css", req);
  CHECK(second.status == 304);
  CHECK(second.body.empty());
}

TEST_CASE("paths that leave the folder, hide or fake their way are 404") {
  static_dir d;
  static_files files(d.root);
  for (auto bad : {"../newsdesk-static-secret.txt", "%2e%2e/newsdesk-static-secret.txt",
                   "css/../../x", ".env", "css/%2e%2e/%2e%2e/x", "link.txt", "", "css/",
                   "css//site.css", "css\\site.css", "a%00b", "%zz", "%", "missing.css", "css"})
    CHECK_MESSAGE(files.serve(bad, {}).status == 404, bad);
}

TEST_CASE("a missing static folder is an error naming it") {
  CHECK_THROWS_WITH_AS(static_files("/nonexistent/newsdesk"),
                       doctest::Contains("/nonexistent/newsdesk"), std::runtime_error);
}

TEST_CASE("MIME types by extension") {
  CHECK(mime_type_for("a.SVG") == "image/svg+xml");
  CHECK(mime_type_for("noext") == "application/octet-stream");
  CHECK(mime_type_for("x.woff2") == "font/woff2");
}

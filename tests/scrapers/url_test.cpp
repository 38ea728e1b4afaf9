#include "scrapers/url.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

using newsdesk::scrapers::url::host_within;
using newsdesk::scrapers::url::is_http_url;
using newsdesk::scrapers::url::resolve;
using newsdesk::scrapers::url::split_http_url;

namespace {

constexpr const char* rfc_base = "http://a/b/c/d;p?q";

void check_all(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [reference, expected] : cases) {
    CAPTURE(reference);
    auto resolved = resolve(rfc_base, reference);
    REQUIRE(resolved.has_value());
    CHECK(*resolved == expected);
  }
}

} // namespace

TEST_CASE("RFC 3986 5.4.1 normal examples resolve as the RFC says") {
  check_all({
      {"g:h", "g:h"},
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
  });
}

TEST_CASE("RFC 3986 5.4.2 abnormal examples resolve as the RFC says, strictly") {
  check_all({
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"},
  });
}

TEST_CASE("a resolved URL's scheme is lower case, whatever case the href used") {
  // Found by fuzz_extract: an href "httPs://..." kept its case, so the same link could appear
  // twice and checks comparing against "https://" disagreed with is_http_url.
  CHECK(resolve("http://a/b/c", "HtTpS://Example.com/Path") == "https://Example.com/Path");
  CHECK(resolve("HTTP://a/b/c", "d") == "http://a/b/d");
}

TEST_CASE("leading and trailing whitespace around an href is ignored") {
  CHECK(resolve(rfc_base, "  \n\t../g \r\n") == "http://a/b/g");
  CHECK(resolve(" http://a/b/c/d;p?q\n", "g") == "http://a/b/c/g");
}

TEST_CASE("tabs and newlines inside an href are dropped and unsafe bytes percent-encoded") {
  CHECK(resolve("https://x.test/", "/news/2024/\n3/5/a") == "https://x.test/news/2024/3/5/a");
  CHECK(resolve("https://x.test/", "/a b") == "https://x.test/a%20b");
  CHECK(resolve("https://x.test/", "/caf\xc3\xa9") == "https://x.test/caf%C3%A9");
}

TEST_CASE("fragments are kept as they come") {
  CHECK(resolve("https://x.test/a/", "b#Section%20Two") == "https://x.test/a/b#Section%20Two");
}

TEST_CASE("a relative reference needs an absolute base") {
  CHECK_FALSE(resolve("/just/a/path", "g").has_value());
  CHECK_FALSE(resolve("", "g").has_value());
  CHECK(resolve("", "https://x.test/./a/../b") == "https://x.test/b");
}

TEST_CASE("strings that are not URIs do not resolve") {
  CHECK_FALSE(resolve(rfc_base, "http://[::1").has_value());
  CHECK_FALSE(resolve(rfc_base, "%zz").has_value());
}

TEST_CASE("is_http_url accepts http and https with a host, in any case") {
  CHECK(is_http_url("http://a/b"));
  CHECK(is_http_url("https://edition.cnn.com/2025/04/15/x/index.html"));
  CHECK(is_http_url("HTTPS://Example.COM"));
  CHECK_FALSE(is_http_url("http:g"));
  CHECK_FALSE(is_http_url("http:///path"));
  CHECK_FALSE(is_http_url("javascript:alert(1)"));
  CHECK_FALSE(is_http_url("data:text/html,hi"));
  CHECK_FALSE(is_http_url("mailto:a@b.test"));
  CHECK_FALSE(is_http_url("ftp://a/b"));
  CHECK_FALSE(is_http_url("/relative"));
  CHECK_FALSE(is_http_url(""));
}

TEST_CASE("split_http_url gives the lowercase host and the path") {
  auto parts = split_http_url("https://WWW.AlJazeera.com:443/news/2024/3/5/x?a=1#top");
  REQUIRE(parts.has_value());
  CHECK(parts->host == "www.aljazeera.com");
  CHECK(parts->path == "/news/2024/3/5/x");
  auto bare = split_http_url("http://a?q");
  REQUIRE(bare.has_value());
  CHECK(bare->path.empty());
  CHECK_FALSE(split_http_url("mailto:a@b.test").has_value());
}

TEST_CASE("host_within matches a domain and its subdomains only") {
  CHECK(host_within("cnn.com", "cnn.com"));
  CHECK(host_within("edition.cnn.com", "cnn.com"));
  CHECK(host_within("EDITION.CNN.COM", "cnn.com"));
  CHECK_FALSE(host_within("notcnn.com", "cnn.com"));
  CHECK_FALSE(host_within("cnn.com.evil.test", "cnn.com"));
  CHECK_FALSE(host_within("cnn.com", ""));
}

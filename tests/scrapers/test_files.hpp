// Loading saved pages in tests: the shared real pages (which may be absent) and this
// folder's own fixtures (which are always present).
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/support/test_paths.hpp"

namespace newsdesk::scrapers::testing {

// The site files shipped in the checkout (sites/).
inline std::filesystem::path sites_dir() {
  return std::filesystem::path(NEWSDESK_SOURCE_DIR) / "sites";
}

inline std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// A page from the shared fixtures folder, or nullopt when it is not there (tests then skip
// with a MESSAGE: the folder lives outside the repository). With NEWSDESK_REQUIRE_PAGES=1, as
// .ci/run sets, a missing page throws instead, failing the test rather than skipping it.
inline std::optional<std::string> shared_page(const std::string& name) {
  auto path = std::filesystem::path(NEWSDESK_SHARED_PAGES) / name;
  auto bytes = read_file(path);
  const char* required = std::getenv("NEWSDESK_REQUIRE_PAGES");
  if (!bytes && required && std::string_view(required) == "1")
    throw std::runtime_error("saved page " + path.string() +
                             " is missing and NEWSDESK_REQUIRE_PAGES=1");
  return bytes;
}

// A fixture from tests/fixtures/scrapers; throws when missing, as that is a broken checkout.
inline std::string own_fixture(const std::string& name) {
  auto path = std::filesystem::path(NEWSDESK_SOURCE_DIR) / "tests/fixtures/scrapers" / name;
  auto bytes = read_file(path);
  if (!bytes) {
    throw std::runtime_error("missing test fixture " + path.string());
  }
  return *bytes;
}

} // namespace newsdesk::scrapers::testing

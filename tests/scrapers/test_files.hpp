// Loading saved pages in tests: the shared real pages (which may be absent) and this
// folder's own fixtures (which are always present).
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace newsdesk::scrapers::testing {

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
// with a MESSAGE instead of failing: the folder lives outside the repository).
inline std::optional<std::string> shared_page(const std::string& name) {
  return read_file(std::filesystem::path(NEWSDESK_SHARED_PAGES) / name);
}

// A fixture from tests/fixtures/scrapers; throws when missing, as that is a broken checkout.
inline std::string own_fixture(const std::string& name) {
  auto path = std::filesystem::path(NEWSDESK_SCRAPERS_FIXTURES) / name;
  auto bytes = read_file(path);
  if (!bytes) {
    throw std::runtime_error("missing test fixture " + path.string());
  }
  return *bytes;
}

} // namespace newsdesk::scrapers::testing

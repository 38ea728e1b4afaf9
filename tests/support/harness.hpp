// Shared pieces of the end-to-end tests: temporary folders, a running newsdesk binary with its
// own ports and store, and builders for small pages in real sites' markup.
#pragma once

#include "tests/support/child_process.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/splash_standin.hpp"
#include "tests/support/test_paths.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace newsdesk::testing {

using json = nlohmann::json;
namespace fs = std::filesystem;

inline const std::string source_dir = NEWSDESK_SOURCE_DIR;
inline const std::string shared_pages = NEWSDESK_SHARED_PAGES;

// With NEWSDESK_REQUIRE_PAGES=1 (.ci/run) a missing page throws, failing the test, instead of
// returning found = false for the test to skip.
inline std::string fixture(const std::string& name, bool& found) {
  auto bytes = read_file(shared_pages + "/" + name, &found);
  const char* required = std::getenv("NEWSDESK_REQUIRE_PAGES");
  if (!found && required && std::string_view(required) == "1")
    throw std::runtime_error("saved page " + shared_pages + "/" + name +
                             " is missing and NEWSDESK_REQUIRE_PAGES=1");
  return bytes;
}

// CNN's 2015 markup, written here so the test does not depend on a third-party page.
inline std::string cnn_page(const std::vector<std::pair<std::string, std::string>>& stories) {
  std::string html = "<html><head><title>CNN</title></head><body>";
  for (const auto& [href, title] : stories)
    html += "<article><h3 class=\"cd__headline\"><a href=\"" + href +
            "\"><span class=\"cd__headline-text\">" + title + "</span></a></h3></article>";
  return html + "</body></html>";
}

struct temp_dir {
  fs::path path;
  temp_dir() {
    char tmpl[] = "/tmp/newsdesk-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

// A running newsdesk with a config written for the test.
struct newsdesk_process {
  temp_dir dir;
  std::unique_ptr<child_process> process;
  unsigned short port = 0;
  unsigned short broker_port = 0;

  explicit newsdesk_process(const json& config, std::vector<std::string> extra_args = {}) {
    auto config_path = dir.write("config.json", config.dump(2));
    // Every instance gets its own ports and store, so tests never see each other.
    std::vector<std::string> args{"--config",        config_path,
                                  "--port",          "0",
                                  "--templates",     source_dir + "/templates",
                                  "--static",        source_dir + "/static",
                                  "--broker-listen", "127.0.0.1:0",
                                  "--store",         (dir.path / "store.db").string()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    process = std::make_unique<child_process>(NEWSDESK_BINARY, args, settings_cleared(),
                                              (dir.path / "stderr.log").string());
    port = wait_for_port(*process);
    if (port != 0)
      if (auto line = process->wait_for_log("msg=listening service=broker address=127.0.0.1:"))
        broker_port = static_cast<unsigned short>(std::stoi(*line));
  }
  // What it logged (stdout) and any error output.
  std::string log() const {
    return process->output() + read_file((dir.path / "stderr.log").string());
  }

  // Entries that clear every setting the test's own environment could pass on (NEWSDESK_*,
  // SPLASH_URL, BROWSERLESS_URL: newsdesk ignores empty values), so a developer's shell never
  // changes what a test runs.
  static std::vector<std::string> settings_cleared() {
    std::vector<std::string> cleared{"SPLASH_URL=", "BROWSERLESS_URL="};
    for (char** e = environ; *e; ++e) {
      std::string_view entry = *e;
      if (entry.starts_with("NEWSDESK_"))
        cleared.push_back(std::string(entry.substr(0, entry.find('='))) + "=");
    }
    return cleared;
  }
};

// The value of `series` (a metric's name with its labels, as /metrics writes it:
// `newsdesk_degraded` or `newsdesk_http_requests_total{route="events",status="503"}`) in the
// instance's /metrics; none when it is not there.
inline std::optional<double> scrape_metric(unsigned short port, const std::string& series) {
  const auto text = "\n" + http_get(port, "/metrics").body;
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos)
    return std::nullopt;
  return std::stod(text.substr(at + series.size() + 2));
}

inline json site(const std::string& name, const std::string& scraper, const std::string& url,
                 json extra = json::object()) {
  json s = {{"name", name}, {"scraper", scraper}, {"url", url}};
  s.update(extra);
  return s;
}

// A memory figure of process `pid` in KiB, from /proc/PID/status: `field` "VmRSS" (resident now)
// or "VmHWM" (the peak); 0 when it cannot be read.
inline long process_memory_kib(int pid, std::string_view field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(status, line);)
    if (line.rfind(prefix, 0) == 0)
      return std::stol(line.substr(prefix.size()));
  return 0;
}

// GET /news.json (with `query`, "?site=a" for one), parsed; anything but a 200 throws, which fails
// the test with the answer's body.
inline json news_json(unsigned short port, const std::string& query = {}) {
  auto answer = http_get(port, "/news.json" + query);
  if (answer.status != 200)
    throw std::runtime_error("/news.json" + query + " answered " + std::to_string(answer.status) +
                             ": " + answer.body);
  return json::parse(answer.body);
}

// Site `name`'s entry in a /news.json answer, or nullptr.
inline const json* site_of(const json& news, const std::string& name) {
  for (const auto& s : news.at("sites"))
    if (s.at("name") == name)
      return &s;
  return nullptr;
}

inline std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The broker's wire format: 4-byte big-endian length, then the payload.
inline std::string frame(const std::string& payload) {
  std::string out(4, '\0');
  auto n = static_cast<std::uint32_t>(payload.size());
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  return out + payload;
}

} // namespace newsdesk::testing

// Reading a whole (small) file: the config file, the page template, files named on the command
// line. One copy of the open-read-check so every caller reports a missing file the same way.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace newsdesk::server {

// The file's bytes, or nullopt when it cannot be opened.
inline std::optional<std::string> read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

} // namespace newsdesk::server
